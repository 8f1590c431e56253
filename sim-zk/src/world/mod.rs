//! The simulated network and scheduler around the kernel.
//!
//! # Time and order
//!
//! The world keeps one queue of pending happenings (a message reaching the service, a
//! message reaching a client, a fault, a timer) ordered by virtual delivery time in
//! nanoseconds, ties broken by insertion order. The driver ([`drive`]) pops them one at a
//! time, after sleeping on tokio's paused clock until their time, so production code that
//! uses `tokio::time` sees the same virtual time; nothing else ever decides an order. Latencies
//! come from the network stream of the seed.
//!
//! Each client has two FIFO links (to the service, and back): a message is delivered no
//! earlier than the previous one on its link, which gives ZooKeeper's guarantees for free:
//! one session's requests are applied in the order they were made, and a watch event queued
//! for a client before a reply reaches it before that reply.
//!
//! # Connections
//!
//! A client's connection is *up* or *down* (disconnected, paused, or in an outage) until a
//! known time. Requests made while it is down leave when it comes back. Each disconnect starts
//! a new *epoch*: messages of an older epoch still in flight are dropped on arrival, and the
//! calls waiting for them fail at once with `ConnectionLoss` (so they may or may not have
//! been applied, exactly as on a real connection). Watch events are never dropped: ZooKeeper
//! re-registers watches on reconnect and reports what changed, so events for a client whose
//! connection is down are held and delivered when it comes back. A paused client keeps its
//! connection (no new epoch) but receives nothing until it wakes.
//!
//! A session that stays silent (down, not counting outages, or closed without an answer)
//! longer than its timeout is expired by the service; the client finds out when its
//! connection comes back, or at once (after a latency) if it was connected.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use avout::{Result, SessionId, SessionInfo, SessionState, SessionStatePublisher};
use tokio::sync::Notify;
use tokio::time::Instant;

mod calls;
#[cfg(madsim)]
mod dropin;
mod ensemble;
mod links;
#[cfg(madsim)]
mod nodes;
mod queue;
mod server;

pub(crate) use calls::Persistent;
use calls::{Call, ClientMsg, Message, WatchSet};
use queue::Queue;

use crate::kernel::Kernel;
use crate::log::{EventLog, LogEvent};
use crate::rng::{Rng, Stream};
use crate::{Choices, Fault, FaultKind, SimConfig, When};

/// The state shared by the driver, the service handle and every client handle.
pub(crate) struct Shared {
    world: Mutex<World>,
    notify: Notify,
}

impl Shared {
    pub(crate) fn new(
        config: SimConfig,
        start: Instant,
        tapes: Option<Choices>,
        record: bool,
    ) -> Arc<Self> {
        Arc::new(Shared {
            world: Mutex::new(World::new(config, start, tapes, record)),
            notify: Notify::new(),
        })
    }

    pub(crate) fn world(&self) -> MutexGuard<'_, World> {
        self.world
            .lock()
            .expect("the simulator panicked while holding its state")
    }

    /// The world, even if a panic poisoned it (to report on a failed run).
    pub(crate) fn world_even_if_poisoned(&self) -> MutexGuard<'_, World> {
        self.world
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The world, unless a panic poisoned it.
    pub(crate) fn try_world(&self) -> Option<MutexGuard<'_, World>> {
        self.world.lock().ok()
    }

    /// The world, if nobody holds it (never blocks, so it is safe from code the simulator
    /// itself may be running).
    pub(crate) fn world_if_free(&self) -> Option<MutexGuard<'_, World>> {
        self.world.try_lock().ok()
    }

    /// Wakes the driver: something was queued.
    pub(crate) fn kick(&self) {
        self.notify.notify_one();
    }
}

/// Why a run's driver stopped before the workload finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    TimeLimit(Duration),
}

/// Runs the world until it is told to stop; returns only on a time-limit overrun (the
/// workload finishing is noticed by the caller, which stops polling this future).
pub(crate) async fn drive(shared: Arc<Shared>) -> Stop {
    // One timer, re-armed for each deadline, rather than a new one per event.
    let sleep = tokio::time::sleep_until(Instant::now());
    tokio::pin!(sleep);
    loop {
        let next = {
            let w = shared.world();
            if let Some(stop) = &w.stopped {
                return stop.clone();
            }
            w.queue
                .next_time()
                .map(|at| w.start + Duration::from_nanos(at))
        };
        match next {
            None => shared.notify.notified().await,
            Some(deadline) => {
                if Instant::now() < deadline {
                    sleep.as_mut().reset(deadline);
                    tokio::select! {
                        biased;
                        () = shared.notify.notified() => continue,
                        () = &mut sleep => {}
                    }
                }
                shared.world().process_next();
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Down {
    Disconnect,
    Pause,
    Outage,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    Up,
    Down { why: Down, since: u64, until: u64 },
}

struct Client {
    session: SessionId,
    timeout: Duration,
    publisher: SessionStatePublisher,
    terminal: Option<SessionState>,
    closing: bool,
    link: Link,
    epoch: u64,
    next_xid: u64,
    to_server_last: u64,
    to_client_last: u64,
    calls: BTreeMap<u64, Call>,
    watches: BTreeMap<String, WatchSet>,
    held: VecDeque<(u64, ClientMsg)>,
    server_expired: bool,
    stale_until: Option<u64>,
    /// The server the client is connected to (always 0 with one server).
    server: u8,
    /// What became of the connections of older epochs that the server may still hear from.
    old_conns: BTreeMap<u64, OldConn>,
    /// Its server is cut off and it sent a write: everything it sends waits (and is lost
    /// when the server notices and drops it), as ZooKeeper keeps a session's order.
    stuck: bool,
    /// A server its next reconnect avoids (one it was partitioned from).
    avoid: Option<u8>,
    /// The process the client runs in, frozen by [`Fault::ClientFreeze`].
    gate: Option<avout::task::Gate>,
    frozen_until: Option<u64>,
    /// Its process was killed: the session is never closed, it expires.
    crashed: bool,
    /// The madsim node that opened it (not the run's supervisor).
    #[cfg(madsim)]
    node: Option<madsim::task::NodeId>,
}

/// An old connection the service may still receive requests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OldConn {
    /// The session moved: the server refuses them with `SessionMoved`.
    Moved,
    /// Only server-to-client was cut: the server applies them, the replies are lost.
    Deaf,
}

enum Pending {
    ToServer {
        client: usize,
        epoch: u64,
        xid: u64,
        message: Message,
    },
    ToClient {
        client: usize,
        epoch: u64,
        msg: ClientMsg,
    },
    Fault(Fault),
    LinkUp {
        client: usize,
        since: u64,
    },
    OutageEnd,
    SessionCheck {
        client: usize,
        since: u64,
    },
    StaleEnd {
        client: usize,
    },
    Follower(u8),
    Notice {
        server: u8,
    },
    Heal {
        server: u8,
    },
    /// The leader without a quorum notices and steps down.
    StepDown,
    Thaw {
        client: usize,
    },
    /// A madsim node paused until now may resume.
    #[cfg(madsim)]
    NodeResume(madsim::task::NodeId),
    /// TTL nodes may be due for deletion.
    TtlCheck,
    TimeLimit,
}

/// Everything the simulation knows; see the [module docs](self).
pub(crate) struct World {
    pub(crate) kernel: Kernel,
    pub(crate) config: SimConfig,
    start: Instant,
    clock: u64,
    queue: Queue,
    seq: u64,
    net: Rng,
    faults: Rng,
    /// Its own stream, so that a recipe drawing GUIDs does not shift latencies or faults.
    guids: Rng,
    /// How long broken connections take to come back (see [`Stream::Reconnects`]).
    reconnects: Rng,
    /// Where new sessions connect (see [`Stream::Placement`]).
    placement: Rng,
    /// Buggify decisions, if the run enables buggify: its own stream and, per point, whether
    /// the point is live in this run.
    buggify: Option<(Rng, BTreeMap<Site, bool>)>,
    pub(crate) buggify_fired: u64,
    clients: Vec<Client>,
    /// The last id given to a persistent watch.
    watch_ids: u64,
    by_session: BTreeMap<SessionId, usize>,
    pub(crate) log: EventLog,
    step: u64,
    armed_request_loss: Vec<Option<usize>>,
    armed_reply_loss: Vec<Option<usize>>,
    step_faults: BTreeMap<u64, Vec<Fault>>,
    outage_until: Option<u64>,
    /// The outage is an election window: a new leader takes over when it ends.
    electing: bool,
    /// The leader has lost its quorum and not noticed yet: it commits nothing (writes and
    /// `sync`s wait), every server still serves reads.
    no_quorum: bool,
    /// When each follower's pending timer fires, if one is pending.
    follower_timers: Vec<Option<u64>>,
    /// When the next TTL check is due (nanoseconds), if one is scheduled.
    ttl_timer: Option<u64>,
    /// How many servers; with more than one, server `s` reads from kernel follower `s`
    /// unless it leads.
    servers: u8,
    leader: u8,
    /// Until when each server is cut off from the others.
    cut_off: Vec<Option<u64>>,
    /// Whether each cut-off server has noticed (and drops its clients' connections).
    noticed: Vec<bool>,
    /// Until when the leader's disk stalls.
    stall_until: Option<u64>,
    stopped: Option<Stop>,
    pub(crate) fault_counts: BTreeMap<FaultKind, u64>,
    pub(crate) requests: u64,
    #[cfg(madsim)]
    nodes: nodes::Nodes,
    #[cfg(madsim)]
    dropin: dropin::DropIn,
}

impl World {
    /// A unique id from the run's GUID stream.
    pub(crate) fn new_guid(&mut self) -> u128 {
        (u128::from(self.guids.next_u64()) << 64) | u128::from(self.guids.next_u64())
    }
}

impl World {
    /// Whether the buggify point at `site` fires now. A point is live in a run with
    /// probability 1/2, decided when the run first reaches it; a live point fires with
    /// probability 1/4 each time it is reached (FoundationDB's scheme: some points never fire,
    /// so a run also explores the paths they would have hidden).
    pub(crate) fn buggify(&mut self, site: &'static std::panic::Location<'static>) -> bool {
        let Some((rng, sites)) = &mut self.buggify else {
            return false;
        };
        let key = (site.file(), site.line(), site.column());
        let live = *sites.entry(key).or_insert_with(|| rng.below(2) == 0);
        let fire = live && rng.below(4) == 0;
        if fire {
            self.buggify_fired += 1;
            let t = self.now();
            self.log.push(
                LogEvent::Buggify {
                    t,
                    site: format!("{}:{}:{}", key.0, key.1, key.2),
                },
                |_| {},
            );
        }
        fire
    }
}

/// A buggify point: file, line, column.
type Site = (&'static str, u32, u32);

const SESSION_CHECK_WHILE_CLOSING: u64 = u64::MAX;

impl World {
    fn new(config: SimConfig, start: Instant, tapes: Option<Choices>, record: bool) -> Self {
        let stream = |tape: Option<Vec<u64>>, s: Stream| match tape {
            Some(tape) => Rng::from_tape(tape, config.seed, s),
            None if record => Rng::recording(config.seed, s),
            None => Rng::new(config.seed, s),
        };
        let (net_tape, fault_tape) = match tapes {
            Some(c) => (Some(c.network), Some(c.faults)),
            None => (None, None),
        };
        let net = stream(net_tape, Stream::Network);
        let faults = stream(fault_tape, Stream::Faults);
        let guids = Rng::new(config.seed, Stream::Guids);
        let reconnects = Rng::new(config.seed, Stream::Reconnects);
        let placement = Rng::new(config.seed, Stream::Placement);
        let servers = config.servers();
        let kernel = if servers > 1 {
            Kernel::with_followers(servers)
        } else if config.needs_follower() {
            Kernel::with_follower()
        } else {
            Kernel::new()
        };
        let mut kernel = kernel;
        kernel.set_features(config.features);
        let slots = usize::from(kernel.followers());
        let mut w = World {
            kernel,
            start,
            clock: 0,
            queue: Queue::default(),
            seq: 0,
            net,
            faults,
            guids,
            reconnects,
            placement,
            buggify: config
                .buggify
                .then(|| (Rng::new(config.seed, Stream::Buggify), BTreeMap::new())),
            buggify_fired: 0,
            clients: Vec::new(),
            by_session: BTreeMap::new(),
            watch_ids: 0,
            ttl_timer: None,
            log: EventLog::new(config.keep_log),
            step: 0,
            armed_request_loss: Vec::new(),
            armed_reply_loss: Vec::new(),
            step_faults: BTreeMap::new(),
            outage_until: None,
            electing: false,
            no_quorum: false,
            follower_timers: vec![None; slots],
            servers,
            leader: 0,
            cut_off: vec![None; usize::from(servers)],
            noticed: vec![false; usize::from(servers)],
            stall_until: None,
            stopped: None,
            fault_counts: BTreeMap::new(),
            requests: 0,
            #[cfg(madsim)]
            nodes: nodes::Nodes::new(),
            #[cfg(madsim)]
            dropin: dropin::DropIn::default(),
            config,
        };
        for (when, fault) in w.config.scheduled.clone() {
            match when {
                When::At(at) => w.schedule(nanos(at), Pending::Fault(fault)),
                When::Step(n) => w.step_faults.entry(n).or_default().push(fault),
            }
        }
        let limit = nanos(w.config.time_limit);
        w.schedule(limit, Pending::TimeLimit);
        w
    }

    /// Whether a replayed run needed more choices than its tapes held.
    pub(crate) fn tapes_exhausted(&self) -> bool {
        self.net.tape_exhausted() || self.faults.tape_exhausted()
    }

    /// Every choice made so far, recorded or not.
    pub(crate) fn choices_so_far(&self) -> Choices {
        Choices {
            network: self.net.drawn_so_far(),
            faults: self.faults.drawn_so_far(),
        }
    }

    /// The choices recorded so far.
    pub(crate) fn take_choices(&mut self) -> Choices {
        Choices {
            network: self.net.take_recording(),
            faults: self.faults.take_recording(),
        }
    }

    /// Virtual time now: the later of the last event processed and tokio's clock (which a
    /// workload may have advanced by sleeping).
    pub(crate) fn now(&self) -> u64 {
        let tokio_now = nanos(Instant::now().saturating_duration_since(self.start));
        self.clock.max(tokio_now)
    }

    fn now_ms(&self) -> i64 {
        self.config.epoch_ms + (self.clock / 1_000_000) as i64
    }

    fn schedule(&mut self, at: u64, what: Pending) {
        self.seq += 1;
        self.queue.push(at, self.seq, what);
    }

    fn latency(&mut self) -> u64 {
        let lo = nanos(self.config.min_latency);
        let hi = nanos(self.config.max_latency).max(lo);
        let base = self.net.between(lo, hi);
        // A slow disk comes with a long tail: one message in a hundred takes 5 to 50 times
        // as long (drawn only when the kind is on, so other runs keep their draws).
        if self.config.rates.slow_disk > 0.0 && self.net.chance(0.01) {
            base * self.net.between(5, 50)
        } else {
            base
        }
    }

    pub(crate) fn publisher(&self, client: usize) -> &SessionStatePublisher {
        &self.clients[client].publisher
    }

    pub(crate) fn session_info(&self, client: usize) -> SessionInfo {
        let c = &self.clients[client];
        SessionInfo {
            id: c.session,
            timeout: c.timeout,
        }
    }

    pub(crate) fn client_of(&self, session: SessionId) -> Option<usize> {
        self.by_session.get(&session).copied()
    }

    /// Opens a session for a new client (of the process under `gate`, if any) and returns
    /// the client's index.
    pub(crate) fn connect(&mut self, timeout: Duration, gate: Option<avout::task::Gate>) -> usize {
        self.clock = self.now();
        let session = self.kernel.create_session(self.now_ms(), timeout);
        let index = self.clients.len();
        self.clients.push(Client {
            session,
            timeout,
            publisher: SessionStatePublisher::new(SessionState::Connected),
            terminal: None,
            closing: false,
            link: Link::Up,
            epoch: 0,
            next_xid: 0,
            to_server_last: 0,
            to_client_last: 0,
            calls: BTreeMap::new(),
            watches: BTreeMap::new(),
            held: VecDeque::new(),
            server_expired: false,
            stale_until: None,
            server: self.leader,
            old_conns: BTreeMap::new(),
            stuck: false,
            avoid: None,
            gate,
            frozen_until: None,
            crashed: false,
            #[cfg(madsim)]
            node: self.nodes.of_caller(),
        });
        self.by_session.insert(session, index);
        let t = self.clock;
        self.log.push(
            LogEvent::Connect {
                t,
                client: index,
                session,
            },
            |_| {},
        );
        if self.is_ensemble() {
            // As a real client does from its connect string: any server, most often a
            // follower, so reads can be stale from the first one (sync exists for that).
            let server = self.place();
            self.attach_to(index, server);
        }
        index
    }

    /// The last handle of a client is gone: close its session unless it already ended.
    pub(crate) fn release(&mut self, client: usize) {
        let c = &self.clients[client];
        if c.terminal.is_none() && !c.closing && !c.crashed {
            drop(self.close(client));
        }
    }

    /// Applies a fault now (for tests and the service handle).
    pub(crate) fn inject(&mut self, fault: Fault) {
        self.clock = self.now();
        self.fire_fault(fault);
    }

    fn process_next(&mut self) {
        let Some((t, what)) = self.queue.pop() else {
            return;
        };
        self.clock = self.clock.max(t);
        match what {
            Pending::ToServer {
                client,
                epoch,
                xid,
                message,
            } => self.at_server(client, epoch, xid, message),
            Pending::ToClient { client, epoch, msg } => self.at_client(client, epoch, msg),
            Pending::Fault(f) => self.fire_fault(f),
            Pending::LinkUp { client, since } => {
                if matches!(self.clients[client].link, Link::Down { since: s, .. } if s == since) {
                    self.timer("link-up");
                    self.link_up(client);
                }
            }
            Pending::OutageEnd => {
                if self.outage_until.is_some_and(|u| u <= self.clock) {
                    self.timer("outage-end");
                    self.outage_until = None;
                    if self.electing {
                        self.elect();
                    }
                    for client in 0..self.clients.len() {
                        if matches!(
                            self.clients[client].link,
                            Link::Down {
                                why: Down::Outage,
                                ..
                            }
                        ) {
                            self.link_up(client);
                        }
                    }
                }
            }
            Pending::SessionCheck { client, since } => self.session_check(client, since),
            Pending::StaleEnd { client } => {
                let c = &mut self.clients[client];
                if c.stale_until.is_some_and(|u| u <= self.clock) {
                    c.stale_until = None;
                    self.timer("stale-end");
                    // A follower cut off from the leader cannot catch up, and the requests it
                    // holds are answered only by the end of its connection when it notices:
                    // moving the session off it now would leave them unanswered for ever.
                    let server = self.clients[client].server;
                    if !self.is_cut_off(server) {
                        let leader = self.leader;
                        self.attach_to(client, leader);
                    }
                }
            }
            Pending::Follower(i) => {
                self.follower_timers[usize::from(i)] = None;
                if self.is_cut_off(i) {
                    // A follower cut off from the leader receives nothing new.
                    return;
                }
                let lag = self.lag_ms(i);
                let events = self.kernel.advance_follower_of(i, self.now_ms() - lag);
                self.route(events);
                self.arm_follower_of(i);
            }
            Pending::Notice { server } => self.notice_cut_off(server),
            Pending::Heal { server } => self.heal(server),
            Pending::StepDown => self.step_down(),
            Pending::Thaw { client } => self.thaw(client),
            #[cfg(madsim)]
            Pending::NodeResume(node) => self.node_resume(node),
            Pending::TtlCheck => {
                if self.ttl_timer.is_some_and(|at| at <= self.clock) {
                    self.ttl_timer = None;
                    self.timer("ttl-check");
                    self.reap_ttls();
                }
            }
            Pending::TimeLimit => {
                self.stopped = Some(Stop::TimeLimit(self.config.time_limit));
            }
        }
    }

    /// Deletes the TTL nodes due now and schedules a check for the next one to fall due.
    /// ZooKeeper checks on a timer (`znode.container.checkIntervalMs`); checking at the very
    /// time a node falls due, and after every write, is one of the schedules it allows.
    fn reap_ttls(&mut self) {
        let reaped = self.kernel.reap_ttls(self.now_ms());
        self.route(reaped);
        if let Some(due_ms) = self.kernel.next_ttl_ms() {
            let since_start = u64::try_from(due_ms - self.config.epoch_ms).unwrap_or(0);
            let at = since_start.saturating_mul(1_000_000).max(self.clock + 1);
            if self.ttl_timer.is_none_or(|t| t > at) {
                self.ttl_timer = Some(at);
                self.schedule(at, Pending::TtlCheck);
            }
        }
    }

    /// Makes sure each follower applies its oldest pending transaction once it is `lag` old.
    fn arm_follower(&mut self) {
        for i in 0..self.kernel.followers() {
            self.arm_follower_of(i);
        }
    }

    /// One timer at a time per follower, for its oldest transaction, rather than one per
    /// write.
    fn arm_follower_of(&mut self, i: u8) {
        if self.follower_timers[usize::from(i)].is_some() || self.is_cut_off(i) {
            return;
        }
        let Some(oldest_ms) = self.kernel.next_ms_of(i) else {
            return;
        };
        let lag_ms = self.lag_ms(i);
        let due_ms = oldest_ms - self.config.epoch_ms + lag_ms + 1;
        let at = (u64::try_from(due_ms).unwrap_or(0) * 1_000_000).max(self.clock);
        self.follower_timers[usize::from(i)] = Some(at);
        self.schedule(at, Pending::Follower(i));
    }

    /// How far follower `i` trails the leader: each one more than the last, so that moving
    /// between followers can go back in time unless the move catches up (it does).
    fn lag_ms(&self, i: u8) -> i64 {
        self.config.follower_lag().as_millis() as i64 * (i64::from(i) + 1)
    }

    fn timer(&mut self, name: &'static str) {
        let t = self.clock;
        self.log.push(
            LogEvent::Timer {
                t,
                timer: name.into(),
            },
            |_| {},
        );
    }
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn outcome<T>(result: &Result<T>) -> Cow<'static, str> {
    match result {
        Ok(_) => "ok".into(),
        Err(e) => e.name().into(),
    }
}
