//! The lock family — mutex, read-write lock, leader election — as one model: each client runs
//! the production [`AcquireMachine`] (the election is the same machine with
//! [`LockKind::Latch`]), holds, and releases. A lock's release, as `LockGuard::unlock` makes
//! it, is *deferred*: it either rides with the client's next acquisition (the script locks
//! again at once: the production machine `with_riding` the old node, one `multi` deleting it
//! and creating the new one with the stamp on the directory), or goes alone when the linger
//! ends (the client's timer, which may fire at once: the release `unlock` sends at once when
//! the handle does not defer) with the production [`ReleaseMachine`] (`delete` of its node,
//! repeated after a connection loss, `NoNode` meaning done, a session's end ending it). A
//! leader resigns with the release machine at once. A leader, like the
//! production `Leadership`, runs the production [`MonitorMachine`] on its node from the moment
//! it is elected until it resigns (which stops the monitor, as `Leadership::resign` aborts its
//! task); what the monitor reports is what `Leadership::lost` would return.
//!
//! # Properties
//!
//! - `always` **exclusion with fencing**: whenever two clients believe they hold conflicting
//!   sides (anything but two readers), the one with the smaller fencing token (its node's
//!   czxid, the election's term) has a session the server has expired. A resource that
//!   refuses tokens older than the newest it saw is then safe.
//! - `always` **one node per GUID**: the lock directory never holds two nodes named with one
//!   acquisition's GUID (a second node would sit in the queue forever: the recovery after a
//!   lost create reply must adopt the first).
//! - `sometimes` **taken over from an expired holder**: a client holds while an older holder
//!   whose session expired still believes it holds (the GC-pause hazard, fenced by tokens).
//! - `sometimes` **a lost create reply recovered**: a client holds after the reply to its
//!   create was lost (the GUID recovery ran).
//! - `sometimes` **every client held**: each client acquired at least once.
//! - `sometimes` **a release rode with the next acquisition** (mutex and read-write lock,
//!   two cycles or more): a client's riding `multi` was applied; and **a deferred release
//!   went alone** (its linger ended first).
//! - `eventually` **no node left behind**: once every client has finished, no live session
//!   owns a node in the lock directory (every release, deferred or not, happened).
//! - `sometimes` **readers share** (read-write lock only): two readers hold at once.
//! - `eventually` **every client finishes**: all scripts end (done, or lost with the
//!   session). Holds with the faults of the model too: every fault is bounded.
//! - Election only: `always` **monitor fires only once the leadership is gone** (the
//!   leader's node is deleted or its session expired), and `sometimes` **a leader learns its
//!   loss** (its monitor fires; with expiry faults).

use avout::lock::{
    AcquireMachine, Acquired, LockError, LockKind, MonitorMachine, Patience, ReleaseMachine,
};
use avout::machine::{Machine, Millis, Reply, Request, Token};
use avout::planted::{Bug, Bugs};
use avout::{CreateMode, Op, SessionState, WatchedEvent, path};
use stateright::{Model, Property};

use crate::world::{Action, Agent, Faults, Run, Space, World, shorten};

/// The lock directory every client contends on.
///
/// ```
/// assert_eq!(avout_models::lock::LOCK_PATH, "/lock");
/// ```
pub const LOCK_PATH: &str = "/lock";

/// Where a lock client's script is.
///
/// ```
/// use avout_models::lock::{LockAgent, Phase};
/// let a = LockAgent::new(1, avout::lock::LockKind::Read, 2);
/// assert_eq!(a.phase, Phase::Idle);
/// assert_eq!(a.holding(), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Not started.
    Idle,
    /// Running the acquisition machine.
    Acquiring(Box<Run<AcquireMachine>>),
    /// Holds the lock (believes it does).
    Holding(Acquired),
    /// Unlocked, the release deferred: its node is still there, to be deleted by the next
    /// acquisition's `multi` or alone when the linger ends (the timer).
    Deferred(Acquired),
    /// Running the release machine on its node.
    Releasing(Box<Run<ReleaseMachine>>),
    /// Was told its session ended while holding: no longer believes it holds.
    Lost(Acquired),
    /// The acquisition failed.
    Failed(LockError),
    /// All cycles done.
    Done,
}

/// A client that acquires, holds and releases a lock `cycles` times.
///
/// ```
/// use avout_models::lock::{LockAgent, Phase};
/// let a = LockAgent::new(1, avout::lock::LockKind::Read, 2);
/// assert_eq!(a.phase, Phase::Idle);
/// assert_eq!(a.holding(), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockAgent {
    /// The client's index.
    pub index: u8,
    /// The side it takes.
    pub kind: LockKind,
    cycles_left: u8,
    generation: u32,
    session: i64,
    /// Where the script is.
    pub phase: Phase,
    /// Ghost: acquisitions completed.
    pub held: u8,
    /// Ghost: a create of this client's lock node was applied and its reply lost.
    pub create_reply_lost: bool,
    /// Ghost: a riding `multi` of this client (its release and its next create) was applied.
    pub rode: bool,
    /// Ghost: a deferred release of this client went alone.
    pub went_alone: bool,
    /// A leader's monitor of its node, while it runs.
    monitor: Option<Box<Run<MonitorMachine>>>,
    /// What a leader's monitor reported (why the leadership was lost), once it fired.
    pub learnt: Option<LockError>,
    /// The bugs planted in its machines.
    planted: Bugs,
    /// How long its acquisitions wait.
    patience: Patience,
}

impl LockAgent {
    /// A client taking `kind`, `cycles` times. See [`LockAgent`] for an example.
    pub fn new(index: u8, kind: LockKind, cycles: u8) -> Self {
        LockAgent {
            index,
            kind,
            cycles_left: cycles,
            generation: 0,
            session: 0,
            phase: Phase::Idle,
            held: 0,
            create_reply_lost: false,
            rode: false,
            went_alone: false,
            monitor: None,
            learnt: None,
            planted: Bugs::NONE,
            patience: Patience::Forever,
        }
    }

    /// The same client, acquiring with `patience` (`Patience::None`: `try_lock`).
    ///
    /// ```
    /// use avout::lock::{LockKind, Patience};
    /// let a = avout_models::lock::LockAgent::new(0, LockKind::Exclusive, 1).patience(Patience::None);
    /// assert_eq!(a.holding(), None);
    /// ```
    pub fn patience(mut self, patience: Patience) -> Self {
        self.patience = patience;
        self
    }

    /// The same client with `planted` bugs in its machines.
    ///
    /// ```
    /// use avout::lock::LockKind;
    /// let a = avout_models::lock::LockAgent::new(0, LockKind::Exclusive, 1).planted(avout::planted::Bugs::NONE);
    /// assert_eq!(a.holding(), None);
    /// ```
    pub fn planted(mut self, planted: Bugs) -> Self {
        self.planted = planted;
        self
    }

    /// The GUID of this client's `generation`-th acquisition: readable in traces
    /// (`00000000-0000-000C-…` for client C).
    fn guid(&self) -> u128 {
        (u128::from(self.index) + 1) << 80 | u128::from(self.generation)
    }

    /// Starts the next acquisition (with `riding`, the node whose deferred release rides with
    /// its create), or finishes.
    fn next_cycle(&mut self, riding: Option<String>) {
        if self.cycles_left == 0 {
            self.phase = Phase::Done;
            return;
        }
        self.cycles_left -= 1;
        self.generation += 1;
        let mut machine = AcquireMachine::new(
            LOCK_PATH,
            self.kind,
            self.guid(),
            self.session,
            self.patience,
            Vec::new(),
        )
        .with_data(vec![b'0' + self.index])
        .planted(self.planted);
        if let Some(node) = riding {
            machine = machine.with_riding(node);
        }
        self.phase = Phase::Acquiring(Box::new(Run::start(self.generation, machine)));
        self.settle();
    }

    /// Takes the acquisition's output, if it finished.
    fn settle(&mut self) {
        let Phase::Acquiring(run) = &mut self.phase else {
            return;
        };
        let output = run.machine.poll_output();
        // No ride is refused in the model (no ACLs, and the old node goes only with the
        // session, which fails the whole acquisition): nothing is left for `Side` to release.
        assert!(
            output.is_none() || run.machine.unreleased().is_none(),
            "an acquisition left its ride unreleased"
        );
        match output {
            None => {}
            Some(Ok(acquired)) => {
                self.held += 1;
                if self.kind == LockKind::Latch {
                    // `Leadership::start` spawns the monitor as the campaign returns.
                    self.generation += 1;
                    let monitor = MonitorMachine::new(&acquired.node);
                    self.monitor = Some(Box::new(Run::start(self.generation, monitor)));
                    self.learnt = None;
                }
                self.phase = Phase::Holding(acquired);
            }
            Some(Err(e)) => self.phase = Phase::Failed(e),
        }
    }

    /// Takes the release's outcome, if it finished: the next cycle, or the failure (a
    /// session's end included: the guard's task forgets such a release, and the script has
    /// nothing left to do).
    fn settle_release(&mut self) {
        let Phase::Releasing(run) = &mut self.phase else {
            return;
        };
        match run.machine.poll_output() {
            None => {}
            Some(Ok(())) => self.next_cycle(None),
            Some(Err(e)) => self.phase = Phase::Failed(e.into()),
        }
    }

    /// Takes the monitor's report, if it fired; its task then ends.
    fn settle_monitor(&mut self) {
        if let Some(run) = &mut self.monitor
            && let Some(reason) = run.machine.poll_output()
        {
            self.learnt = Some(reason);
            self.monitor = None;
        }
    }

    /// Runs the release machine on `node`.
    fn release(&mut self, node: String) {
        self.generation += 1;
        let release = ReleaseMachine::new(node);
        self.phase = Phase::Releasing(Box::new(Run::start(self.generation, release)));
    }

    /// The fencing token held, if the client believes it holds the lock. See [`LockAgent`].
    pub fn holding(&self) -> Option<i64> {
        match &self.phase {
            Phase::Holding(a) => Some(a.fencing_token),
            _ => None,
        }
    }
}

impl Agent for LockAgent {
    fn start(&mut self, session: i64) {
        self.session = session;
        self.next_cycle(None);
    }

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        match &mut self.phase {
            Phase::Acquiring(run) => run.poll_request(),
            Phase::Holding(_) => self.monitor.as_mut()?.poll_request(),
            Phase::Releasing(run) => run.poll_request(),
            _ => None,
        }
    }

    fn handle_reply(&mut self, token: Token, reply: avout::Result<Reply>) {
        match &mut self.phase {
            Phase::Acquiring(run) => {
                run.handle_reply(token, reply);
                self.settle();
            }
            Phase::Holding(_) => {
                if let Some(run) = &mut self.monitor {
                    run.handle_reply(token, reply);
                    self.settle_monitor();
                }
            }
            Phase::Releasing(run) => {
                run.handle_reply(token, reply);
                self.settle_release();
            }
            _ => {}
        }
    }

    fn handle_watch(&mut self, token: Token, event: WatchedEvent) {
        match &mut self.phase {
            Phase::Acquiring(run) => {
                run.handle_watch(token, event);
                self.settle();
            }
            Phase::Holding(_) => {
                if let Some(run) = &mut self.monitor {
                    run.handle_watch(token, event);
                    self.settle_monitor();
                }
            }
            _ => {}
        }
    }

    fn handle_session(&mut self, state: SessionState) {
        if let (Phase::Holding(_), Some(run)) = (&self.phase, &mut self.monitor) {
            run.machine.handle_session(crate::world::NOW, state);
            self.settle_monitor();
        }
        match &mut self.phase {
            Phase::Acquiring(run) => {
                run.machine.handle_session(crate::world::NOW, state);
                self.settle();
            }
            // `LockGuard::status` turns `Lost` once the session is terminal.
            Phase::Holding(acquired) if state.is_terminal() => {
                self.phase = Phase::Lost(acquired.clone())
            }
            Phase::Releasing(run) => {
                run.machine.handle_session(crate::world::NOW, state);
                self.settle_release();
            }
            // The node went with the session; the next acquisition, if any, would fail.
            Phase::Deferred(_) => {
                if let Some(e) = state.terminal_error() {
                    self.phase = match self.cycles_left {
                        0 => Phase::Done,
                        _ => Phase::Failed(LockError::SessionLost(e)),
                    };
                }
            }
            _ => {}
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        match &self.phase {
            Phase::Acquiring(run) => run.machine.poll_timer(),
            Phase::Holding(_) => self.monitor.as_ref()?.machine.poll_timer(),
            // The linger: whenever the checker chooses, at once included.
            Phase::Deferred(_) => Some(crate::world::NOW),
            _ => None,
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        match &mut self.phase {
            Phase::Acquiring(run) => {
                run.machine.handle_timer(now);
                self.settle();
            }
            Phase::Holding(_) => {
                if let Some(run) = &mut self.monitor {
                    run.machine.handle_timer(now);
                    self.settle_monitor();
                }
            }
            Phase::Deferred(acquired) => {
                // The linger ended before any acquisition: the release goes alone.
                self.went_alone = true;
                let node = acquired.node.clone();
                self.release(node);
            }
            _ => {}
        }
    }

    fn script_step(&self) -> Option<&'static str> {
        match (&self.phase, self.kind) {
            (Phase::Holding(_), LockKind::Latch) => Some("resigns the leadership (resign)"),
            (Phase::Holding(_), _) => Some("releases the lock (unlock, deferred)"),
            (Phase::Deferred(_), _) if self.cycles_left > 0 => {
                Some("locks again (the release rides with the create)")
            }
            _ => None,
        }
    }

    fn take_script_step(&mut self) {
        match &self.phase {
            Phase::Holding(acquired) if self.kind == LockKind::Latch => {
                // `Leadership::resign` aborts the monitor's task: what it sent still arrives,
                // what comes back for it is dropped (another run's tokens).
                self.monitor = None;
                let node = acquired.node.clone();
                self.release(node);
            }
            Phase::Holding(acquired) => self.phase = Phase::Deferred(acquired.clone()),
            Phase::Deferred(acquired) => {
                let node = acquired.node.clone();
                self.next_cycle(Some(node));
            }
            _ => {}
        }
    }

    fn observe_applied(&mut self, request: &Request, result: &avout::Result<Reply>, lost: bool) {
        let creates = |ops: &[Op]| {
            ops.iter().any(|op| {
                matches!(op, Op::Create { options, .. } if options.mode == CreateMode::EphemeralSequential)
            })
        };
        let riding = matches!(request, Request::Multi(ops) if creates(ops));
        if riding && result.is_ok() {
            self.rode = true;
        }
        let creating = riding
            || matches!(request, Request::Create { options, .. }
                if options.mode == CreateMode::EphemeralSequential);
        if lost && result.is_ok() && creating {
            self.create_reply_lost = true;
        }
    }

    fn finished(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Failed(_) | Phase::Lost(_))
    }

    fn summary(&self) -> String {
        let what = match self.kind {
            LockKind::Read => "read lock",
            LockKind::Write => "write lock",
            LockKind::Exclusive => "lock",
            LockKind::Latch => "leadership",
        };
        match &self.phase {
            Phase::Idle => "idle".into(),
            Phase::Acquiring(_) => format!("acquiring the {what}"),
            Phase::Holding(a) => shorten(&format!(
                "HOLDS the {what} with {} (token {}){}",
                path::name(&a.node),
                a.fencing_token,
                self.learnt
                    .as_ref()
                    .map_or(String::new(), |e| format!(", its monitor says: {e}"))
            )),
            Phase::Deferred(a) => shorten(&format!(
                "unlocked, the release of {} deferred",
                path::name(&a.node)
            )),
            Phase::Releasing(run) => {
                shorten(&format!("releasing {}", path::name(run.machine.node())))
            }
            Phase::Lost(a) => format!(
                "lost the {what} (token {}){}",
                a.fencing_token,
                self.learnt
                    .as_ref()
                    .map_or(String::new(), |e| format!(", its monitor says: {e}"))
            ),
            Phase::Failed(e) => format!("failed: {e}"),
            Phase::Done => "done".into(),
        }
    }
}

/// Which lock a [`LockModel`] checks.
///
/// ```
/// let m = avout_models::lock::LockModel::new(avout_models::lock::Flavor::RwLock, 3);
/// assert_eq!(m.flavor, avout_models::lock::Flavor::RwLock);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// The exclusive lock.
    Mutex,
    /// The read-write lock: client 0 writes, the others read.
    RwLock,
    /// Leader election.
    Election,
    /// The exclusive lock taken with `try_lock`: a client that finds it held gives up (and
    /// removes its node).
    TryMutex,
}

/// The lock family's model; see the [module docs](self).
///
/// ```
/// use avout_models::lock::{Flavor, LockModel};
/// use avout_models::world::Faults;
/// let model = LockModel { faults: Faults::NONE, ..LockModel::new(Flavor::Mutex, 2) };
/// let report = avout_models::check(model, Default::default());
/// assert_eq!(report.unique_states, 252);
/// ```
#[derive(Clone, Debug)]
pub struct LockModel {
    /// Which lock.
    pub flavor: Flavor,
    /// How many clients.
    pub clients: u8,
    /// Acquire-hold-release cycles per client.
    pub cycles: u8,
    /// The faults the environment may inject.
    pub faults: Faults,
    /// A planted bug, in the configuration of the clients' machines (feature `planted-bugs`).
    pub bug: Option<Bug>,
    /// What the model's states share (see [`Space`]); [`crate::check()`] gives each check a
    /// fresh one.
    pub space: Space<LockAgent>,
}

impl LockModel {
    /// `clients` clients of `flavor`, one cycle each, at most one fault of any kind. See
    /// [`LockModel`] for an example.
    pub fn new(flavor: Flavor, clients: u8) -> Self {
        LockModel {
            flavor,
            clients,
            cycles: 1,
            faults: Faults::classic(1),
            bug: None,
            space: Space::default(),
        }
    }

    fn kind(&self, index: u8) -> LockKind {
        match self.flavor {
            Flavor::Mutex | Flavor::TryMutex => LockKind::Exclusive,
            Flavor::Election => LockKind::Latch,
            Flavor::RwLock if index == 0 => LockKind::Write,
            Flavor::RwLock => LockKind::Read,
        }
    }
}

fn holders(state: &World<LockAgent>) -> impl Iterator<Item = (usize, LockKind, i64)> + '_ {
    state
        .clients
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.agent.holding().map(|t| (i, c.agent.kind, t)))
}

/// Exclusion with fencing: of two conflicting holders, the older one's session is expired.
pub(crate) fn fenced_exclusion(state: &World<LockAgent>) -> bool {
    holders(state).all(|(i, ki, ti)| {
        holders(state).all(|(j, kj, tj)| {
            let shared = ki == LockKind::Read && kj == LockKind::Read;
            i == j || shared || ti > tj || !state.kernel.is_alive(state.clients[i].session)
        })
    })
}

/// No two nodes in the lock directory carry one acquisition's GUID.
pub(crate) fn one_node_per_guid(state: &World<LockAgent>) -> bool {
    let Some(dir) = state.kernel.tree().node(LOCK_PATH) else {
        return true;
    };
    let mut guids: Vec<&str> = dir
        .children
        .iter()
        .filter_map(|c| c.strip_prefix("_c_").and_then(|c| c.get(..36)))
        .collect();
    let n = guids.len();
    guids.sort_unstable();
    guids.dedup();
    guids.len() == n
}

fn taken_over(state: &World<LockAgent>) -> bool {
    holders(state).any(|(i, ki, ti)| {
        holders(state).any(|(j, kj, tj)| {
            i != j
                && !(ki == LockKind::Read && kj == LockKind::Read)
                && ti < tj
                && !state.kernel.is_alive(state.clients[i].session)
        })
    })
}

fn recovered(state: &World<LockAgent>) -> bool {
    state
        .clients
        .iter()
        .any(|c| c.agent.create_reply_lost && c.agent.holding().is_some())
}

fn all_held(state: &World<LockAgent>) -> bool {
    state.clients.iter().all(|c| c.agent.held > 0)
}

fn readers_share(state: &World<LockAgent>) -> bool {
    holders(state)
        .filter(|(_, k, _)| *k == LockKind::Read)
        .count()
        >= 2
}

/// A leader's monitor fired only once its leadership was gone: its node deleted or its
/// session expired at the server.
fn monitor_truthful(state: &World<LockAgent>) -> bool {
    state
        .clients
        .iter()
        .all(|c| match (&c.agent.learnt, &c.agent.phase) {
            (Some(_), Phase::Holding(a) | Phase::Lost(a)) => {
                state.kernel.tree().node(&a.node).is_none() || !state.kernel.is_alive(c.session)
            }
            _ => true,
        })
}

fn leader_learnt(state: &World<LockAgent>) -> bool {
    state.clients.iter().any(|c| c.agent.learnt.is_some())
}

/// Every node in the lock directory belongs to a client's acquisition, hold or (deferred) release: none
/// is left behind, held by nobody, blocking every later contender.
fn no_orphan_node(state: &World<LockAgent>) -> bool {
    let Some(dir) = state.kernel.tree().node(LOCK_PATH) else {
        return true;
    };
    dir.children.iter().all(|child| {
        state.clients.iter().any(|c| match &c.agent.phase {
            // A riding acquisition's old node is the client's until the ride applies.
            Phase::Acquiring(run) => {
                child.starts_with(run.machine.prefix())
                    || run.machine.unreleased().map(path::name) == Some(child)
            }
            Phase::Holding(a) | Phase::Lost(a) | Phase::Deferred(a) => path::name(&a.node) == child,
            Phase::Releasing(run) => path::name(run.machine.node()) == child,
            Phase::Idle | Phase::Failed(_) | Phase::Done => false,
        })
    })
}

fn gave_up(state: &World<LockAgent>) -> bool {
    state
        .clients
        .iter()
        .any(|c| c.agent.phase == Phase::Failed(LockError::WouldBlock))
}

fn all_finished(state: &World<LockAgent>) -> bool {
    state.clients.iter().all(|c| c.agent.finished())
}

fn went_alone(state: &World<LockAgent>) -> bool {
    state.clients.iter().any(|c| c.agent.went_alone)
}

fn rode(state: &World<LockAgent>) -> bool {
    state.clients.iter().any(|c| c.agent.rode)
}

/// Every client finished, and no live session owns a node in the lock directory: every
/// release happened, deferred or not.
fn nothing_left(state: &World<LockAgent>) -> bool {
    let live_nodes = state.kernel.tree().node(LOCK_PATH).is_some_and(|dir| {
        dir.children.iter().any(|c| {
            let owner = state
                .kernel
                .tree()
                .node(&path::join(LOCK_PATH, c))
                .map(|n| n.stat.ephemeral_owner);
            state.clients.iter().any(|client| {
                Some(client.session.0) == owner && state.kernel.is_alive(client.session)
            })
        })
    });
    all_finished(state) && !live_nodes
}

impl Model for LockModel {
    type State = World<LockAgent>;
    type Action = Action;

    fn init_states(&self) -> Vec<Self::State> {
        let planted = crate::plant(self.bug);
        let patience = match self.flavor {
            Flavor::TryMutex => Patience::None,
            Flavor::Mutex | Flavor::RwLock | Flavor::Election => Patience::Forever,
        };
        let agents = (0..self.clients)
            .map(|i| {
                LockAgent::new(i, self.kind(i), self.cycles)
                    .planted(planted)
                    .patience(patience)
            })
            .collect();
        let setup = [Request::Create {
            path: LOCK_PATH.into(),
            data: Vec::new(),
            options: Default::default(),
        }];
        vec![World::new(agents, self.faults, &setup)]
    }

    crate::world::world_moves!();

    fn properties(&self) -> Vec<Property<Self>> {
        let exclusion = match self.flavor {
            Flavor::Mutex | Flavor::TryMutex => "mutual exclusion with fencing",
            Flavor::RwLock => "reader/writer exclusion with fencing",
            Flavor::Election => "one leader per term (older leaders expired)",
        };
        let mut properties = vec![
            Property::always(exclusion, |_, s| fenced_exclusion(s)),
            Property::always("one node per GUID", |_, s| one_node_per_guid(s)),
            Property::eventually("every client finishes", |_, s| all_finished(s)),
            Property::eventually("no node left behind", |_, s| nothing_left(s)),
            Property::sometimes("every client held", |_, s| all_held(s)),
        ];
        if self.flavor != Flavor::Election {
            properties.push(Property::sometimes(
                "a deferred release went alone",
                |_, s| went_alone(s),
            ));
            if self.cycles > 1 {
                properties.push(Property::sometimes(
                    "a release rode with the next acquisition",
                    |_, s| rode(s),
                ));
            }
        }
        if self.faults.budget > 0 && self.faults.expiry && self.clients > 1 {
            properties.push(Property::sometimes(
                "taken over from an expired holder",
                |_, s| taken_over(s),
            ));
        }
        if self.faults.budget > 0 && self.faults.reply_lost {
            properties.push(Property::sometimes(
                "a lost create reply recovered by GUID",
                |_, s| recovered(s),
            ));
        }
        if self.flavor == Flavor::Election {
            properties.push(Property::always(
                "monitor fires only once the leadership is gone",
                |_, s| monitor_truthful(s),
            ));
            if self.faults.budget > 0 && self.faults.expiry {
                properties.push(Property::sometimes(
                    "a leader learns its loss (monitor fires)",
                    |_, s| leader_learnt(s),
                ));
            }
        }
        if self.flavor == Flavor::TryMutex {
            properties.push(Property::always(
                "no lock node outlives its acquisition",
                |_, s| no_orphan_node(s),
            ));
            if self.clients > 1 {
                properties.push(Property::sometimes("a try gave up", |_, s| gave_up(s)));
            }
        }
        if self.flavor == Flavor::RwLock && self.clients > 2 {
            properties.push(Property::sometimes("readers share", |_, s| {
                readers_share(s)
            }));
        }
        properties.extend(crate::world::fault_examples(&self.faults));
        properties
    }
}
