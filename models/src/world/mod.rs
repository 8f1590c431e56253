//! The model ZooKeeper: the simulator's pure kernel, per-session FIFO links, and the clients
//! whose production machines talk to it.
//!
//! A [`World`] is one state of the checked system: the kernel (data tree, sessions, zxids),
//! and for each client its [`Agent`] (the production machine it is running plus the few lines
//! of script around it), the requests it sent that the server has not processed yet
//! (`outbox`, in order: ZooKeeper applies one session's requests in order), and what the
//! server sent back that the client has not read yet (`inbox`: replies, watch events and the
//! expiry notice, in the order the server produced them, so an event precedes any reply that
//! reflects its change).
//!
//! The environment's moves are [`Action`]s, the scheduler's choices: process a client's next
//! request, lose it, process it but lose its reply, deliver the next reply / watch event /
//! session notice to a client, fire a client's timer, expire a session, or let the client's
//! script take its next step. Faults draw on a budget, so the state space stays finite.
//!
//! Time does not flow in the model: every handler is called at instant 0, and a timer fires
//! at its own deadline whenever the checker chooses to — "long enough passed". That is
//! exactly the freedom a real scheduler has, and it keeps timestamps out of the states.
//!
//! A client *paused* past its session timeout (the GC-pause hazard) needs no action of its
//! own: [`Action::Expire`] expires the session at the server and queues the notice behind
//! whatever the client has not read yet, and the checker explores every schedule in which
//! the client takes no step meanwhile — which is what a pause is.

mod agent;
mod client;
mod faults;
mod read_ahead;
mod show;
mod space;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::{self, Debug};
use std::time::Duration;

use avout::SessionId;
use avout::machine::{Millis, Request};
use avout_sim_zk::kernel::{Applied, Fired, Kernel, Server};

pub use agent::{Agent, Run};
pub use client::{Client, Msg};
pub(crate) use faults::examples as fault_examples;
pub use faults::{FaultKind, Faults};
pub use read_ahead::ReadAhead;
use space::ServedClient;
pub use space::Space;
pub(crate) use space::world_moves;

use crate::shared::Shared;
pub(crate) use show::{shorten, show_request, show_result};

/// The instant every handler runs at (see the [module docs](self)).
///
/// ```
/// assert_eq!(avout_models::world::NOW, avout::machine::Millis(0));
/// ```
pub const NOW: Millis = Millis(0);

/// What the server did with a request: the kernel after it, the reply and the events.
#[derive(Clone, Debug)]
struct Served {
    kernel: Shared<Kernel>,
    applied: Applied,
    /// Whether a follower that lagged behind the leader served it (a read).
    stale: bool,
}

impl Served {
    /// The server applies `request` of `session` to `kernel`.
    fn new(kernel: &Shared<Kernel>, session: SessionId, request: &Request) -> Self {
        let mut kernel = kernel.clone();
        let stale = kernel.server_of(session) == Some(Server::Follower(0))
            && kernel.follower_backlog() > 0
            && !request.is_write();
        let k = kernel.make_mut();
        // A write, refused or not, catches the client's follower up (the kernel does it).
        let applied = k.apply(0, session, request);
        kernel.rehash();
        Served {
            kernel,
            applied,
            stale,
        }
    }
}

/// Where a step says what happens (nowhere unless a trace is wanted).
type Say<'a> = dyn FnMut(&dyn Fn() -> String) + 'a;

/// A move of the environment or of a client's script; see the [module docs](self).
///
/// ```
/// assert_eq!(avout_models::world::Action::Apply(1).to_string(), "Apply(1)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The server processes the client's next request and replies.
    Apply(usize),
    /// The client's next request is lost before the server sees it, with its connection, as
    /// on TCP: it, every request sent behind it and every reply still on its way fail with
    /// `ConnectionLoss`, and the client waits for [`Action::Reconnect`].
    LoseRequest(usize),
    /// The server processes the client's next request, then the connection breaks before the
    /// reply leaves: as [`Action::LoseRequest`], but the request was applied.
    LoseReply(usize),
    /// The client library reconnects after its connection broke (same session).
    Reconnect(usize),
    /// The client reads the reconnection notice at the head of its inbox.
    DeliverReconnected(usize),
    /// The client reads the reply at the head of its inbox.
    DeliverReply(usize),
    /// The client reads the watch event at the head of its inbox.
    DeliverWatch(usize),
    /// The client reads the expiry notice at the head of its inbox.
    DeliverExpiry(usize),
    /// The client's timer fires.
    Timer(usize),
    /// The server expires the client's session.
    Expire(usize),
    /// The client's script takes its next step.
    Script(usize),
    /// The client's connection breaks with no request on its way to the server (a fault):
    /// the replies on their way back fail with `ConnectionLoss`, and the client waits for
    /// [`Action::Reconnect`].
    Disconnect(usize),
    /// Every client's connection breaks at once (a fault), as [`Action::Disconnect`] and
    /// [`Action::LoseRequest`] do to one.
    Outage,
    /// The client's session moves to a follower (a fault), which from then on lags behind
    /// the leader until [`Action::CatchUp`]: the client's reads may be stale, never older
    /// than what it saw, and always after its own writes (the kernel's follower).
    Lag(usize),
    /// The follower applies what the leader committed meanwhile, firing the watches set on
    /// it.
    CatchUp,
}

/// The state of the checked system.
///
/// ```
/// use avout_models::world::{Action, Faults, World};
/// use avout_models::lock::LockAgent;
/// let mut w = World::new(vec![LockAgent::new(0, avout::lock::LockKind::Exclusive, 1)], Faults::NONE, &[]);
/// let mut actions = Vec::new();
/// w.actions(&Faults::NONE, &mut actions);
/// assert_eq!(actions, [Action::Apply(0)]);
/// let mut log = Vec::new();
/// w.step(Action::Apply(0), Some(&mut log));
/// assert!(log[0].contains("NoNode"), "no lock directory: {log:?}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World<A> {
    /// ZooKeeper, shared with the other states that have the same (see [`Shared`]).
    pub kernel: Shared<Kernel>,
    /// The clients, each shared with the other states where it is the same.
    pub clients: Vec<Shared<Client<A>>>,
    /// Faults still allowed.
    pub faults_left: u8,
    /// Whether a client reads every reply at the head of its inbox in one step (see
    /// [`World::batching_replies`]).
    pub batch_replies: bool,
    /// Whether clients read what they must read next without the checker choosing when
    /// (see [`World::reading_ahead`]).
    pub read_ahead: Option<ReadAhead>,
}

impl<A: Agent> World<A> {
    /// A world with one session per agent, after `setup` (requests applied on a separate,
    /// live session before the clients start: say, creating an atom's node). See [`World`].
    pub fn new(agents: Vec<A>, faults: Faults, setup: &[Request]) -> Self {
        let mut kernel = if faults.stale_read {
            Kernel::with_follower()
        } else {
            Kernel::new()
        };
        let admin = kernel.create_session(0, Duration::from_secs(30));
        for request in setup {
            let applied = kernel.apply(0, admin, request);
            assert!(applied.result.is_ok(), "setup {request:?}: {applied:?}");
        }
        let agents = agents
            .into_iter()
            .map(|agent| (agent, kernel.create_session(0, Duration::from_secs(10))))
            .collect();
        kernel.sync_follower();
        World::from_kernel(kernel, agents, faults.budget)
    }

    /// A world that starts from a server state taken elsewhere — `kernel`, with each agent
    /// on the live session paired with it — allowing `faults` faults. Trace conformance
    /// ([`crate::conformance`]) starts the model from the simulator's server as the
    /// simulated clients start.
    ///
    /// ```
    /// use std::time::Duration;
    /// use avout_models::{lock::LockAgent, world::{Faults, World}};
    /// let mut kernel = avout_sim_zk::kernel::Kernel::new();
    /// let session = kernel.create_session(0, Duration::from_secs(10));
    /// let agent = LockAgent::new(0, avout::lock::LockKind::Exclusive, 1);
    /// let w = World::from_kernel(kernel, vec![(agent, session)], 3);
    /// assert_eq!((w.clients[0].session, w.faults_left), (session, 3));
    /// ```
    ///
    /// # Panics
    ///
    /// If a session is not alive in `kernel`.
    pub fn from_kernel(kernel: Kernel, agents: Vec<(A, SessionId)>, faults: u8) -> Self {
        let clients = agents
            .into_iter()
            .map(|(mut agent, session)| {
                assert!(kernel.is_alive(session), "session {session} is not alive");
                agent.start(session.0);
                let mut client = Client {
                    agent,
                    session,
                    outbox: VecDeque::new(),
                    inbox: VecDeque::new(),
                    watches: BTreeMap::new(),
                    told_expired: false,
                    connected: true,
                    read_stale: false,
                    cut: false,
                    syncs: BTreeSet::new(),
                };
                client.flush();
                Shared::new(client)
            })
            .collect();
        World {
            kernel: Shared::new(kernel),
            clients,
            faults_left: faults,
            batch_replies: false,
            read_ahead: None,
        }
    }

    /// This world, with each client reading all the replies at the head of its inbox in one
    /// step: a reduction of the state space for models whose machines pipeline many requests.
    /// A client's reading is local, so it commutes with every other client's step; what is
    /// given up is the client's own timer, script or expiry notice coming *between* two
    /// replies that arrived together (they still come before or after them). The requests the
    /// replies make the client send are sent in the same order.
    ///
    /// ```
    /// use avout_models::{lock::LockAgent, world::{Faults, World}};
    /// let w = World::new(vec![LockAgent::new(0, avout::lock::LockKind::Exclusive, 1)], Faults::NONE, &[]);
    /// assert!(w.batching_replies().batch_replies);
    /// ```
    pub fn batching_replies(mut self) -> Self {
        self.batch_replies = true;
        self
    }

    /// Every move possible in this state, in a fixed order. See [`World`].
    pub fn actions(&self, faults: &Faults, actions: &mut Vec<Action>) {
        let fault = self.faults_left > 0;
        for (i, c) in self.clients.iter().enumerate() {
            if c.connected && !c.outbox.is_empty() {
                actions.push(Action::Apply(i));
                if fault && faults.request_lost {
                    actions.push(Action::LoseRequest(i));
                }
                if fault && faults.reply_lost {
                    actions.push(Action::LoseReply(i));
                }
            }
            // Watch events that reach a disconnected client wait in its library, which
            // drops them if the session turns out to have expired when it reconnects.
            if !c.connected
                && !matches!(c.inbox.front(), Some(Msg::Expired))
                && c.inbox
                    .iter()
                    .find(|m| !matches!(m, Msg::Watch { .. }))
                    .is_some_and(|m| matches!(m, Msg::Expired))
            {
                actions.push(Action::DeliverExpiry(i));
            }
            match c.inbox.front() {
                Some(Msg::Reply { .. }) => actions.push(Action::DeliverReply(i)),
                Some(Msg::Watch { .. }) => actions.push(Action::DeliverWatch(i)),
                Some(Msg::Expired) => actions.push(Action::DeliverExpiry(i)),
                Some(Msg::Reconnected) => actions.push(Action::DeliverReconnected(i)),
                None => {}
            }
            // The failures of a broken connection reach the client at once, long before it
            // can be connected again: it reads them first.
            if !c.connected
                && !c.told_expired
                && self.kernel.is_alive(c.session)
                && !c.inbox.iter().any(|m| matches!(m, Msg::Reply { .. }))
            {
                actions.push(Action::Reconnect(i));
            }
            if c.agent.poll_timer().is_some() {
                actions.push(Action::Timer(i));
            }
            if c.agent.script_step().is_some() {
                actions.push(Action::Script(i));
            }
            let live = self.kernel.is_alive(c.session) && !c.agent.finished();
            if fault && faults.expiry && live {
                actions.push(Action::Expire(i));
            }
            // With requests on their way, a disconnect is a lost request (above).
            if fault && faults.disconnect && live && c.connected && c.outbox.is_empty() {
                actions.push(Action::Disconnect(i));
            }
            if fault
                && faults.stale_read
                && live
                && self.kernel.server_of(c.session) == Some(Server::Leader)
            {
                actions.push(Action::Lag(i));
            }
        }
        if fault && faults.outage && self.clients.iter().any(|c| self.breakable(c)) {
            actions.push(Action::Outage);
        }
        if self.kernel.follower_backlog() > 0 {
            actions.push(Action::CatchUp);
        }
    }

    /// Whether an outage breaks `c`'s connection: it is up, on a live session whose client
    /// has not finished.
    fn breakable(&self, c: &Client<A>) -> bool {
        c.connected && self.kernel.is_alive(c.session) && !c.agent.finished()
    }

    /// Takes `action`; with `log`, describes what happened. See [`World`].
    pub fn step(&mut self, action: Action, log: Option<&mut Vec<String>>) {
        self.step_in(action, log, None);
    }

    /// [`World::step`], taking the moves `space` remembers from it (see [`Space`]) unless a
    /// log is wanted (a remembered move says nothing).
    fn step_in(
        &mut self,
        action: Action,
        mut log: Option<&mut Vec<String>>,
        space: Option<&Space<A>>,
    ) {
        let space = space.filter(|_| log.is_none());
        let before: Vec<String> = match log {
            Some(_) => self.clients.iter().map(|c| c.agent.summary()).collect(),
            None => Vec::new(),
        };
        // Lines are only written when asked for: formatting them is most of a step's cost.
        let mut say = |line: &dyn Fn() -> String| {
            if let Some(log) = log.as_deref_mut() {
                log.push(shorten(&line()));
            }
        };
        match action {
            Action::Apply(i) | Action::LoseReply(i) => {
                let lost = matches!(action, Action::LoseReply(_));
                if lost {
                    self.faults_left -= 1;
                }
                // The kernel and client `i` after it depend on nothing else: taken once per
                // pair of them (see `Space::applied`), and the kernel after it on the kernel
                // and the request only (see `Space::served`).
                self.take_served(i, action, space, &mut say, |w, say| {
                    let mut client = w.clients[i].clone();
                    let c = client.make_mut();
                    let sent = c.outbox.pop_front().expect("a request");
                    let serve = || Served::new(&w.kernel, c.session, &sent.1);
                    let served = match space {
                        Some(space) => space.served(&w.kernel, c.session, &sent.1, serve),
                        None => serve(),
                    };
                    let kernel = served.kernel.clone();
                    let events = c.take_applied(i, sent, served, lost, say);
                    client.rehash();
                    (kernel, client, events)
                });
            }
            Action::LoseRequest(i) => {
                self.faults_left -= 1;
                let (token, request) = self.clients[i]
                    .make_mut()
                    .outbox
                    .pop_front()
                    .expect("a request");
                say(&|| {
                    format!(
                        "client {i}'s {} is LOST before the server sees it",
                        show_request(&request)
                    )
                });
                self.clients[i]
                    .make_mut()
                    .break_connection(i, Some(token), &mut say);
            }
            Action::Disconnect(i) => {
                self.faults_left -= 1;
                say(&|| format!("client {i}'s connection is CUT"));
                self.clients[i].make_mut().cut = true;
                self.clients[i]
                    .make_mut()
                    .break_connection(i, None, &mut say);
            }
            Action::Outage => {
                self.faults_left -= 1;
                say(&|| "OUTAGE: the service is unreachable".into());
                for i in 0..self.clients.len() {
                    if self.breakable(&self.clients[i]) {
                        self.clients[i].make_mut().cut = true;
                        self.clients[i]
                            .make_mut()
                            .break_connection(i, None, &mut say);
                    }
                }
            }
            Action::Lag(i) => {
                self.faults_left -= 1;
                say(&|| format!("client {i}'s session MOVES to a lagging follower"));
                let session = self.clients[i].session;
                let events = self.kernel.make_mut().attach(session, Server::Follower(0));
                self.route(events, None, &mut say);
            }
            Action::CatchUp => {
                say(&|| "the follower catches up with the leader".into());
                let events = self.kernel.make_mut().sync_follower();
                self.route(events, None, &mut say);
            }
            Action::Reconnect(i) => {
                say(&|| format!("client {i} is CONNECTED again"));
                let c = self.clients[i].make_mut();
                c.connected = true;
                c.inbox.push_back(Msg::Reconnected);
            }
            Action::DeliverReply(i)
            | Action::DeliverWatch(i)
            | Action::DeliverExpiry(i)
            | Action::DeliverReconnected(i)
            | Action::Timer(i)
            | Action::Script(i) => {
                // Client `i` after it depends on nothing else: taken once per client (see
                // `Space::moved`).
                let batch = self.batch_replies;
                let take = |say: &mut dyn FnMut(&dyn Fn() -> String)| {
                    let mut client = self.clients[i].clone();
                    client.make_mut().take(i, action, batch, say);
                    client.rehash();
                    client
                };
                self.clients[i] = match space {
                    Some(space) => {
                        space.moved(&self.clients[i], action, batch, || take(&mut |_| {}))
                    }
                    None => take(&mut say),
                };
            }
            Action::Expire(i) => {
                self.faults_left -= 1;
                say(&|| format!("server EXPIRES client {i}'s session"));
                // As for `Apply`: the kernel after it depends on the kernel and the session,
                // client `i` after it on them and the client.
                self.take_served(i, action, space, &mut say, |w, say| {
                    let mut client = w.clients[i].clone();
                    let c = client.make_mut();
                    let session = c.session;
                    let expire = || {
                        let mut kernel = w.kernel.clone();
                        let events = kernel.make_mut().expire_session(0, session);
                        kernel.rehash();
                        (kernel, events)
                    };
                    let (kernel, events) = match space {
                        Some(space) => space.expired(&w.kernel, session, expire),
                        None => expire(),
                    };
                    for fired in &events {
                        if fired.session == session {
                            c.fire(fired);
                        }
                        say(&|| format!("    fires {}", fired.event));
                    }
                    c.inbox.push_back(Msg::Expired);
                    c.flush();
                    client.rehash();
                    (kernel, client, events)
                });
            }
        }
        // Only the acting client's agent can have changed, so only it has requests to send
        // or may have finished (the moves above flushed it already).
        if let Some(i) = action.client()
            && !action.is_local()
            && !matches!(
                action,
                Action::Apply(_) | Action::LoseReply(_) | Action::Expire(_)
            )
        {
            self.clients[i].make_mut().flush();
        }
        self.read_ahead_all(space, &mut say);
        // A follower nobody reads from has nothing to show late: keep it caught up, so its
        // backlog does not tell states apart.
        if self.kernel.follower_backlog() > 0
            && !self
                .clients
                .iter()
                .any(|c| self.kernel.server_of(c.session) == Some(Server::Follower(0)))
        {
            self.kernel.make_mut().sync_follower();
        }
        self.kernel.rehash();
        for c in &mut self.clients {
            c.rehash();
        }
        if let Some(log) = log {
            for (i, (c, before)) in self.clients.iter().zip(before).enumerate() {
                let now = c.agent.summary();
                if now != before {
                    log.push(format!("    => client {i} {now}"));
                }
            }
        }
    }

    /// Fans watch events out to the watches the clients' libraries hold, but for client
    /// `except`'s (which took its own).
    /// Takes a move of client `i` that changes the kernel too (`Apply`, `LoseReply`,
    /// `Expire`): from `space` when it remembers it (a remembered move says nothing), else by
    /// `take`; then routes the events to the other clients (client `i` took its share inside
    /// `take`, and said them all).
    fn take_served(
        &mut self,
        i: usize,
        action: Action,
        space: Option<&Space<A>>,
        say: &mut Say<'_>,
        take: impl FnOnce(&Self, &mut Say<'_>) -> ServedClient<A>,
    ) {
        let (kernel, client, events) = match space {
            Some(space) => space.served_client(&self.kernel, &self.clients[i], action, || {
                take(self, &mut |_| {})
            }),
            None => take(self, say),
        };
        self.kernel = kernel;
        self.clients[i] = client;
        self.route(events, Some(i), &mut |_| {});
    }

    fn route(&mut self, events: Vec<Fired>, except: Option<usize>, say: &mut Say<'_>) {
        for fired in events {
            if let Some((i, c)) = self
                .clients
                .iter_mut()
                .enumerate()
                .find(|(_, c)| c.session == fired.session)
                && Some(i) != except
                && c.watching(&fired)
            {
                c.make_mut().fire(&fired);
            }
            say(&|| format!("    fires {}", fired.event));
        }
    }
}

impl Action {
    /// Whether the action is a move of its client's own, which changes nothing but that
    /// client: a delivery, its timer or its script step.
    ///
    /// ```
    /// use avout_models::world::Action;
    /// assert!(Action::Timer(0).is_local());
    /// assert!(!Action::Apply(0).is_local());
    /// ```
    pub fn is_local(self) -> bool {
        matches!(
            self,
            Action::DeliverReply(_)
                | Action::DeliverWatch(_)
                | Action::DeliverExpiry(_)
                | Action::DeliverReconnected(_)
                | Action::Timer(_)
                | Action::Script(_)
        )
    }

    /// The client the action is about, if one.
    ///
    /// ```
    /// assert_eq!(avout_models::world::Action::Timer(3).client(), Some(3));
    /// assert_eq!(avout_models::world::Action::Outage.client(), None);
    /// ```
    pub fn client(self) -> Option<usize> {
        Some(match self {
            Action::Apply(i)
            | Action::LoseRequest(i)
            | Action::LoseReply(i)
            | Action::Reconnect(i)
            | Action::DeliverReconnected(i)
            | Action::DeliverReply(i)
            | Action::DeliverWatch(i)
            | Action::DeliverExpiry(i)
            | Action::Timer(i)
            | Action::Expire(i)
            | Action::Disconnect(i)
            | Action::Lag(i)
            | Action::Script(i) => i,
            Action::Outage | Action::CatchUp => return None,
        })
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Debug::fmt(self, f)
    }
}
