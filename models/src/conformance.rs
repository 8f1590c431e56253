//! Trace conformance: a run of the production recipes on the simulator, replayed through the
//! model's transition relation, so the model and the implementation cannot drift apart.
//!
//! # How
//!
//! [`record`] runs a [`Workload`] — the production [`avout::lock::Mutex`] or
//! [`avout::lock::RwLock`] (lock, hold, unlock), [`Election`] (campaign, lead, resign) or
//! [`avout::atom::Atom`] (`swap(|n| n + 1)`) on `clients` sessions — on
//! sim-zk with the faults the models have (request lost, reply lost after apply, session
//! expiry) drawn at rates from a seed, and keeps the simulator's event log, the server state
//! as the clients start and when they are done, and what each client's call returned.
//!
//! [`conform`] builds the model's [`World`] from that starting server state (the same
//! kernel, the same sessions; [`World::from_kernel`]) with the model's agents, and walks the
//! log, turning each entry of a workload client into the model [`Action`] it stands for:
//!
//! | simulator log | model |
//! |---|---|
//! | `Applied` (followed by a `ReplyLost` fault) | [`Action::Apply`] ([`Action::LoseReply`]) |
//! | `RequestLost` fault | [`Action::LoseRequest`] |
//! | `SessionExpiry` fault | [`Action::Expire`] |
//! | `Reply` | [`Action::DeliverReply`] |
//! | `Watch` | [`Action::DeliverWatch`], once per watch the client's library holds |
//! | `State Expired` | [`Action::DeliverExpiry`] |
//! | `Request` | compared with the next request the model's client sent; if it sent none, the step that makes it send one: its machine's [`Action::Timer`] or its script's [`Action::Script`] (neither is logged: they are the client's own time) |
//!
//! Every action must be enabled in the model's state when it is taken, and after it the
//! model must agree with what the simulator logged: a request's operation and path (lock
//! GUIDs are drawn differently on the two sides, so they are matched as a bijection), an
//! applied request's outcome and the zxid after it, a reply's outcome, a watch event's kind
//! and path. At the end, the two servers' trees must agree (every path, version, child
//! version, zxid and ephemeral owner; data and times are the two sides' own), and so must
//! what each client's call returned (the lock's fencing token, the atom's new value).
//! The first disagreement is a [`Divergence`], naming the log entry.
//!
//! Entries the models do not have — disconnects, pauses, stale reads, outages — are refused
//! as [`Divergence`]s too, so the fault plans of a conformance run keep to the three faults
//! above.
//!
//! ```
//! use avout_models::conformance::{Workload, conform, faulty, record};
//! let run = record(Workload::Mutex, 7, 2, faulty());
//! let checked = conform(&run).unwrap();
//! assert!(checked.actions.len() > 10);
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use avout::atom::Atom;
use avout::lock::{LockGuard, LockKind, Mutex, RwLock};
use avout::machine::Request;
use avout::recipes::election::Election;
use avout::{Coordination, Error, SessionId, SessionState};
use avout_sim_zk::kernel::{Kernel, Node};
use avout_sim_zk::{FaultKind, FaultRates, LogEvent, Sim, SimClient};

use crate::atom::{ATOM_PATH, AtomAgent, Ended};
use crate::lock::{LOCK_PATH, LockAgent};
use crate::world::{Action, Agent, Faults, Msg, World, to_kernel};

/// What the recorded clients do.
///
/// ```
/// assert_ne!(avout_models::conformance::Workload::Mutex, avout_models::conformance::Workload::Atom);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Each client takes the production [`Mutex`] at [`LOCK_PATH`], holds it a few virtual
    /// milliseconds and unlocks; the model is [`crate::lock`]'s mutex.
    Mutex,
    /// Client 0 takes the production [`RwLock`]'s write side, the others its read side,
    /// each holding a few virtual milliseconds; the model is [`crate::lock`]'s rwlock.
    RwLock,
    /// Each client campaigns in the production [`Election`], leads a few virtual
    /// milliseconds and resigns; the model is [`crate::lock`]'s election, whose leaders run
    /// the production [`MonitorMachine`](avout::lock::MonitorMachine) on their node as a
    /// [`Leadership`](avout::recipes::election::Leadership) does.
    Election,
    /// Each client increments a production [`Atom`] at [`ATOM_PATH`] once with `swap`; the
    /// model is [`crate::atom`]'s.
    Atom,
}

/// How long a client holds the lock (virtual time).
const HOLD: Duration = Duration::from_millis(3);

/// How long a client may take (virtual time): far longer than any run of the recipes as
/// they are, it bounds a run of a broken one (a planted deadlock) instead of the simulator's
/// time limit failing it. A client cut off returns `None`.
const PATIENCE: Duration = Duration::from_secs(60);

/// How long the workload waits after its clients are done, so that background work (the
/// lock's release check) has finished before the server state is taken.
const SETTLE: Duration = Duration::from_secs(1);

/// The fault rates of a conformance run: every fault the models have, at rates that give a
/// few faults per run of two or three clients.
///
/// ```
/// let r = avout_models::conformance::faulty();
/// assert!(r.reply_lost > 0.0 && r.disconnect == 0.0);
/// ```
pub fn faulty() -> FaultRates {
    FaultRates {
        request_lost: 0.05,
        reply_lost: 0.08,
        expire: 0.03,
        ..FaultRates::default()
    }
}

/// A simulator run of a [`Workload`], as [`conform`] needs it.
///
/// ```
/// let run = avout_models::conformance::record(avout_models::conformance::Workload::Atom, 1, 2, Default::default());
/// assert_eq!(run.sessions.len(), 2);
/// assert_eq!(run.results.len(), 2);
/// assert!(run.results.contains(&Some(2)), "no faults: one swap wrote 2");
/// ```
#[derive(Clone, Debug)]
pub struct Recording {
    /// What ran.
    pub workload: Workload,
    /// The seed.
    pub seed: u64,
    /// The server as the workload's clients started.
    pub start: Kernel,
    /// The clients' sessions, in client order.
    pub sessions: Vec<SessionId>,
    /// The simulator's index of the first client (the clients' indices follow it).
    pub first: usize,
    /// The simulator's event log.
    pub log: Vec<LogEvent>,
    /// The server when the clients were done.
    pub end: Kernel,
    /// What each client's call returned: the lock's fencing token or the atom's new value;
    /// `None` if the call failed.
    pub results: Vec<Option<i64>>,
}

/// Runs `workload` with `clients` clients on the simulator seeded with `seed`, faults drawn
/// at `rates`, and records it. Deterministic: the same arguments give the same recording.
///
/// ```
/// use avout_models::conformance::{Workload, record};
/// let a = record(Workload::Mutex, 3, 2, Default::default());
/// let b = record(Workload::Mutex, 3, 2, Default::default());
/// assert_eq!(a.log, b.log);
/// assert!(a.results.iter().all(Option::is_some), "no faults, both held");
/// ```
pub fn record(workload: Workload, seed: u64, clients: usize, rates: FaultRates) -> Recording {
    let sim = Sim::builder()
        .seed(seed)
        .clients(0)
        .rates(rates)
        .keep_log(true)
        .failure_replay_dir(None)
        .build();
    let ((start, sessions, first, results, end), summary) = sim.run(|ctx| async move {
        // The node the clients contend on, made by a separate session (a new one for every
        // try: faults are drawn for its requests too). The sessions stay open to the end: a
        // close is a transaction the model would not know of.
        let mut admins = Vec::new();
        loop {
            let admin = Arc::new(ctx.zk.connect());
            admins.push(admin.clone());
            if set_up(workload, admin).await {
                break;
            }
        }
        // Kept open to the end as well, for the same reason.
        let users: Vec<Arc<SimClient>> = (0..clients).map(|_| Arc::new(ctx.zk.connect())).collect();
        let sessions: Vec<SessionId> = users.iter().map(|u| u.session().id).collect();
        let first = users.first().map_or(0, |u| u.index());
        let start = ctx.zk.with_kernel(Kernel::clone);
        let results =
            futures::future::join_all(users.iter().enumerate().map(|(i, user)| async move {
                tokio::time::timeout(PATIENCE, run_client(workload, user.clone(), i))
                    .await
                    .ok()
                    .flatten()
            }))
            .await;
        tokio::time::sleep(SETTLE).await;
        let end = ctx.zk.with_kernel(Kernel::clone);
        drop((admins, users));
        (start, sessions, first, results, end)
    });
    Recording {
        workload,
        seed,
        start,
        sessions,
        first,
        log: summary.log,
        end,
        results,
    }
}

/// Creates the workload's node; `false` if this session could not (try another).
async fn set_up(workload: Workload, admin: Arc<SimClient>) -> bool {
    match workload {
        Workload::Mutex | Workload::RwLock | Workload::Election => matches!(
            admin.create(LOCK_PATH, b"", &Default::default()).await,
            Ok(_) | Err(Error::NodeExists { .. })
        ),
        Workload::Atom => Atom::<u64, _>::open(admin, ATOM_PATH, 0).await.is_ok(),
    }
}

/// One client's part of the workload.
async fn run_client(workload: Workload, zk: Arc<SimClient>, index: usize) -> Option<i64> {
    match workload {
        Workload::Mutex => {
            let mutex = Mutex::new(zk, LOCK_PATH).expect("a valid path");
            hold(mutex.lock().await.ok()?).await
        }
        Workload::RwLock => {
            let lock = RwLock::new(zk, LOCK_PATH).expect("a valid path");
            let guard = match index {
                0 => lock.write().await,
                _ => lock.read().await,
            };
            hold(guard.ok()?).await
        }
        Workload::Election => {
            let election = Election::new(zk, LOCK_PATH)
                .expect("a valid path")
                .with_id(vec![b'0' + u8::try_from(index).expect("a few clients")]);
            let leadership = election.campaign().await.ok()?;
            let term = leadership.term();
            tokio::time::sleep(HOLD).await;
            let _ = leadership.resign().await;
            Some(term)
        }
        Workload::Atom => {
            let atom = Atom::<u64, _>::builder(zk, ATOM_PATH)
                .connect()
                .expect("a valid path");
            let value = atom.swap(|n| n + 1).await.ok()?;
            Some(i64::try_from(value).expect("a small counter"))
        }
    }
}

/// Holds a lock a moment and releases it; returns the fencing token.
async fn hold(guard: LockGuard<SimClient>) -> Option<i64> {
    let token = guard.fencing_token();
    tokio::time::sleep(HOLD).await;
    // A holder whose session ended cannot release; the node went with the session.
    let _ = guard.unlock().await;
    Some(token)
}

/// Where and why the model disagreed with a recorded run.
///
/// ```
/// let d = avout_models::conformance::Divergence { entry: 3, event: "c1 #2 <- ok".into(), why: "no reply".into() };
/// assert!(d.to_string().contains("entry 3"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the model diverges at entry {entry} of the simulator's log ({event}): {why}")]
pub struct Divergence {
    /// The log entry (the log's length for the checks at the end).
    pub entry: usize,
    /// The entry, as the log prints it.
    pub event: String,
    /// What the model did or could not do.
    pub why: String,
}

/// A recording the model followed to the end.
///
/// ```
/// use avout_models::conformance::{Workload, conform, record};
/// let c = conform(&record(Workload::Atom, 2, 2, Default::default())).unwrap();
/// assert!(c.actions.iter().any(|(_, a)| matches!(a, avout_models::world::Action::Apply(_))));
/// ```
#[derive(Clone, Debug)]
pub struct Conformance {
    /// The model actions taken, each with the log entry it stands for.
    pub actions: Vec<(usize, Action)>,
    /// Log entries of the workload's clients the replay read.
    pub entries: usize,
}

/// Replays `run` through the model of its workload; see the [module docs](self).
///
/// ```
/// use avout_models::conformance::{Workload, conform, record};
/// let mut run = record(Workload::Mutex, 5, 2, Default::default());
/// assert!(conform(&run).is_ok());
/// run.results[0] = Some(999); // the model's client 0 did not hold with token 999
/// assert!(conform(&run).is_err());
/// ```
pub fn conform(run: &Recording) -> Result<Conformance, Divergence> {
    let agents = |i: usize| u8::try_from(i).expect("a few clients");
    match run.workload {
        Workload::Mutex | Workload::RwLock | Workload::Election => {
            let kind = |i| match (run.workload, i) {
                (Workload::Election, _) => LockKind::Latch,
                (Workload::RwLock, 0) => LockKind::Write,
                (Workload::RwLock, _) => LockKind::Read,
                _ => LockKind::Exclusive,
            };
            let agents = (0..run.sessions.len())
                .map(|i| LockAgent::new(agents(i), kind(i), 1))
                .collect();
            let mut tokens = vec![None; run.sessions.len()];
            let replayed = Replay::new(run, agents).run(|world| {
                for (i, c) in world.clients.iter().enumerate() {
                    if let Some(t) = c.agent.holding() {
                        tokens[i] = Some(t);
                    }
                }
            })?;
            replayed.compare_results(&tokens)?;
            Ok(replayed.done())
        }
        Workload::Atom => {
            let agents = (0..run.sessions.len())
                .map(|i| AtomAgent::new(agents(i)))
                .collect();
            let replayed = Replay::new(run, agents).run(|_| {})?;
            let values: Vec<Option<i64>> = replayed
                .world
                .clients
                .iter()
                .map(|c| match c.agent.ended {
                    Some(Ended::Swapped(v)) => i64::try_from(v).ok(),
                    _ => None,
                })
                .collect();
            replayed.compare_results(&values)?;
            Ok(replayed.done())
        }
    }
}

/// Lock node names carry a GUID (`_c_<36 characters>-…`) that the two sides draw
/// differently: the replay pairs them as they first appear and holds the pairing to them.
#[derive(Default)]
struct Guids {
    sim_to_model: BTreeMap<String, String>,
    model_to_sim: BTreeMap<String, String>,
}

fn guid(path: &str) -> Option<&str> {
    let at = path.find("_c_")? + 3;
    path.get(at..at + 36)
}

impl Guids {
    /// Whether the simulator's `sim` path and the model's `model` path name the same node,
    /// pairing their GUIDs if neither is paired yet.
    fn same(&mut self, sim: &str, model: &str) -> bool {
        match (guid(sim), guid(model)) {
            (Some(s), Some(m)) => {
                let paired = match (self.sim_to_model.get(s), self.model_to_sim.get(m)) {
                    (None, None) => {
                        self.sim_to_model.insert(s.to_owned(), m.to_owned());
                        self.model_to_sim.insert(m.to_owned(), s.to_owned());
                        true
                    }
                    (Some(m2), Some(s2)) => m2 == m && s2 == s,
                    _ => false,
                };
                paired && sim.replacen(s, m, 1) == model
            }
            (None, None) => sim == model,
            _ => false,
        }
    }

    /// The simulator's path in the model's GUIDs.
    fn to_model(&self, sim: &str) -> String {
        match guid(sim).and_then(|s| self.sim_to_model.get(s).map(|m| (s, m))) {
            Some((s, m)) => sim.replacen(s, m, 1),
            None => sim.to_owned(),
        }
    }
}

/// A request as the simulator's log shows it: operation and path.
fn show(request: &avout_sim_zk::kernel::Request) -> String {
    format!("{} {}", request.name(), request.path().unwrap_or(""))
}

/// `ok`, or an error's variant name: the simulator log's outcome vocabulary.
fn outcome<T>(result: &avout::Result<T>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(e) => {
            let debug = format!("{e:?}");
            let end = debug
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(debug.len());
            debug[..end].to_owned()
        }
    }
}

/// A replay in progress.
struct Replay<'r, A> {
    run: &'r Recording,
    world: World<A>,
    guids: Guids,
    /// Per client: requests the model's client sent that the simulator has not logged yet.
    sent: Vec<VecDeque<Request>>,
    actions: Vec<(usize, Action)>,
    entries: usize,
}

impl<'r, A: Agent> Replay<'r, A> {
    fn new(run: &'r Recording, agents: Vec<A>) -> Self {
        let agents = agents
            .into_iter()
            .zip(run.sessions.iter().copied())
            .collect();
        let world = World::from_kernel(run.start.clone(), agents, u8::MAX);
        let sent = world
            .clients
            .iter()
            .map(|c| c.outbox.iter().map(|(_, r)| r.clone()).collect())
            .collect();
        Replay {
            run,
            world,
            guids: Guids::default(),
            sent,
            actions: Vec::new(),
            entries: 0,
        }
    }

    fn client(&self, sim: usize) -> Option<usize> {
        sim.checked_sub(self.run.first)
            .filter(|c| *c < self.world.clients.len())
    }

    fn enabled(&self, action: Action) -> bool {
        let mut actions = Vec::new();
        self.world.actions(&Faults::all(u8::MAX), &mut actions);
        actions.contains(&action)
    }

    /// Takes `action` for log entry `at`, which must be enabled unless `forced`.
    fn take(&mut self, at: usize, action: Action, forced: bool) -> Result<(), Divergence> {
        if !forced && !self.enabled(action) {
            return Err(self.diverge(at, format!("{action} is not enabled in the model")));
        }
        let c = match action {
            Action::Apply(c)
            | Action::LoseRequest(c)
            | Action::LoseReply(c)
            | Action::DeliverReply(c)
            | Action::DeliverWatch(c)
            | Action::DeliverExpiry(c)
            | Action::Timer(c)
            | Action::Expire(c)
            | Action::Script(c) => c,
        };
        let before = self.world.clients[c].outbox.len();
        let kept = match action {
            Action::Apply(_) | Action::LoseRequest(_) | Action::LoseReply(_) => before - 1,
            _ => before,
        };
        self.world.step(action, None);
        let outbox = &self.world.clients[c].outbox;
        if matches!(action, Action::DeliverExpiry(_)) {
            self.sent[c].clear();
        } else {
            self.sent[c].extend(outbox.iter().skip(kept).map(|(_, r)| r.clone()));
        }
        self.actions.push((at, action));
        Ok(())
    }

    /// The first request client `c` would send if `action` (its own step) were taken now.
    fn first_sent(&self, action: Action, c: usize) -> Option<avout_sim_zk::kernel::Request> {
        let mut probe = self.world.clone();
        let before = probe.clients[c].outbox.len();
        probe.step(action, None);
        probe.clients[c]
            .outbox
            .get(before)
            .map(|(_, request)| to_kernel(request))
    }

    fn diverge(&self, at: usize, why: String) -> Divergence {
        let event = self
            .run
            .log
            .get(at)
            .map_or_else(|| "end of the run".to_owned(), ToString::to_string);
        Divergence {
            entry: at,
            event,
            why,
        }
    }

    /// Walks the log; `observe` sees the model after every action.
    fn run(mut self, mut observe: impl FnMut(&World<A>)) -> Result<Self, Divergence> {
        let log = &self.run.log;
        let mut at = 0;
        while at < log.len() {
            let taken = self.actions.len();
            let consumed = self.entry(at)?;
            for _ in taken..self.actions.len() {
                observe(&self.world);
            }
            at += consumed;
        }
        self.finish()?;
        Ok(self)
    }

    /// Replays log entry `at`; returns how many entries it consumed.
    fn entry(&mut self, at: usize) -> Result<usize, Divergence> {
        let log = &self.run.log;
        let event = &log[at];
        let sim_client = match event {
            LogEvent::Request { client, .. }
            | LogEvent::Applied { client, .. }
            | LogEvent::Reply { client, .. }
            | LogEvent::Watch { client, .. }
            | LogEvent::State { client, .. }
            | LogEvent::Dropped { client, .. } => Some(*client),
            LogEvent::Fault { client, .. } => *client,
            // Timers are the simulator's own (a closing session's check); connections and
            // buggify points are nothing the models have.
            LogEvent::Timer { .. } | LogEvent::Connect { .. } | LogEvent::Buggify { .. } => None,
        };
        let Some(c) = sim_client.and_then(|s| self.client(s)) else {
            if let LogEvent::Fault {
                client: None, kind, ..
            } = event
            {
                return Err(self.diverge(at, format!("the models have no {} fault", kind.name())));
            }
            return Ok(1);
        };
        self.entries += 1;
        let finished = self.world.clients[c].agent.finished();
        match event {
            LogEvent::Request { op, path, .. } => {
                if op == "close" {
                    // The workload dropping its handle, after the run.
                    return Ok(1);
                }
                if self.sent[c].is_empty() {
                    // The client sends on its own time: a retry timer, or its script. When
                    // both could, the one that sends what was logged (a leader resigns while
                    // its monitor waits to ask again: the script's delete, not the timer's
                    // exists).
                    let own: Vec<Action> = [Action::Timer(c), Action::Script(c)]
                        .into_iter()
                        .filter(|a| self.enabled(*a))
                        .collect();
                    let chosen = own
                        .iter()
                        .copied()
                        .find(|a| self.first_sent(*a, c).is_some_and(|r| r.name() == op))
                        .or(own.first().copied());
                    if let Some(action) = chosen {
                        self.take(at, action, false)?;
                    }
                }
                let Some(request) = self.sent[c].pop_front() else {
                    return Err(
                        self.diverge(at, format!("the model's client {c} sends nothing here"))
                    );
                };
                let request = to_kernel(&request);
                let same = request.name() == op
                    && match (path, request.path()) {
                        (Some(s), Some(m)) => self.guids.same(s, m),
                        (None, None) => true,
                        _ => false,
                    };
                if !same {
                    return Err(self.diverge(
                        at,
                        format!("the model's client {c} sent {} instead", show(&request)),
                    ));
                }
                Ok(1)
            }
            LogEvent::Applied {
                zxid, outcome: o, ..
            } => {
                let lost = matches!(
                    log.get(at + 1),
                    Some(LogEvent::Fault { kind: FaultKind::ReplyLost, client: Some(s), .. })
                        if self.client(*s) == Some(c)
                );
                let client = &self.world.clients[c];
                if client.told_expired
                    && client.outbox.is_empty()
                    && o == "SessionExpired"
                    && !self.world.kernel.is_alive(client.session)
                {
                    // Sent before the client learnt of the expiry: the model's client drops
                    // it with the session, the server refuses it without an effect.
                    return Ok(if lost { 2 } else { 1 });
                }
                let Some((_, request)) = self.world.clients[c].outbox.front() else {
                    return Err(self.diverge(
                        at,
                        format!("the model's client {c} has no request at the server"),
                    ));
                };
                let mut probe = self.world.kernel.clone();
                let applied = probe.apply(0, self.world.clients[c].session, &to_kernel(request));
                let model_outcome = outcome(&applied.result);
                let action = if lost {
                    Action::LoseReply(c)
                } else {
                    Action::Apply(c)
                };
                self.take(at, action, false)?;
                if model_outcome != *o {
                    return Err(
                        self.diverge(at, format!("the model's server answers {model_outcome}"))
                    );
                }
                let model_zxid = self.world.kernel.last_zxid();
                if model_zxid != *zxid {
                    return Err(
                        self.diverge(at, format!("the model's server is at zxid {model_zxid:#x}"))
                    );
                }
                Ok(if lost { 2 } else { 1 })
            }
            LogEvent::Fault { kind, .. } => {
                let action = match kind {
                    FaultKind::RequestLost => Action::LoseRequest(c),
                    FaultKind::SessionExpiry => Action::Expire(c),
                    FaultKind::ReplyLost => {
                        return Err(self.diverge(at, "a reply lost with no request applied".into()));
                    }
                    other => {
                        return Err(
                            self.diverge(at, format!("the models have no {} fault", other.name()))
                        );
                    }
                };
                // The model does not expire a finished client (nothing it does afterwards
                // matters), but the server's state must follow.
                let forced = finished && *kind == FaultKind::SessionExpiry;
                self.take(at, action, forced)?;
                Ok(1)
            }
            LogEvent::Reply { outcome: o, .. } => {
                // A finished client reads nothing; after its session ended, the library
                // fails what was in flight (the model's client dropped it with the session).
                if finished || self.world.clients[c].told_expired {
                    return Ok(1);
                }
                let Some(Msg::Reply { result, .. }) = self.world.clients[c].inbox.front() else {
                    return Err(self.diverge(
                        at,
                        format!("the model's client {c} has no reply to read next"),
                    ));
                };
                let model_outcome = outcome(result);
                if model_outcome != *o {
                    return Err(self.diverge(at, format!("the model's reply is {model_outcome}")));
                }
                self.take(at, Action::DeliverReply(c), false)?;
                Ok(1)
            }
            LogEvent::Watch { kind, path, .. } => {
                if finished {
                    return Ok(1);
                }
                // One event, read by every watch the library holds for it (none: nothing).
                let path = self.guids.to_model(path);
                while let Some(Msg::Watch { event, .. }) = self.world.clients[c].inbox.front() {
                    if event.kind != *kind || event.path != path {
                        return Err(
                            self.diverge(at, format!("the model's client {c} reads {event} first"))
                        );
                    }
                    self.take(at, Action::DeliverWatch(c), false)?;
                    if self.world.clients[c].agent.finished() {
                        break;
                    }
                }
                Ok(1)
            }
            LogEvent::State { state, .. } => match state {
                // Logged just before `Expired` by the library; the model delivers both.
                SessionState::Disconnected
                    if matches!(
                        log.get(at + 1),
                        Some(LogEvent::State {
                            state: SessionState::Expired,
                            ..
                        })
                    ) =>
                {
                    Ok(1)
                }
                SessionState::Expired if finished => Ok(1),
                SessionState::Expired => {
                    self.take(at, Action::DeliverExpiry(c), false)?;
                    Ok(1)
                }
                other => {
                    Err(self.diverge(at, format!("the models have no {other:?} session state")))
                }
            },
            LogEvent::Dropped { .. } => {
                Err(self.diverge(at, "the models drop no messages (no reconnections)".into()))
            }
            LogEvent::Timer { .. } | LogEvent::Connect { .. } | LogEvent::Buggify { .. } => Ok(1),
        }
    }

    /// The checks at the end: nothing the model sent is missing from the log, and the two
    /// servers agree.
    fn finish(&mut self) -> Result<(), Divergence> {
        let end = self.run.log.len();
        for (c, sent) in self.sent.iter().enumerate() {
            if let Some(request) = sent.front() {
                let request = show(&to_kernel(request));
                return Err(self.diverge(
                    end,
                    format!(
                        "the model's client {c} sent {request}, which the implementation never did"
                    ),
                ));
            }
        }
        let model = tree(&self.world.kernel, |p| p.to_owned());
        let sim = tree(&self.run.end, |p| self.guids.to_model(p));
        if model != sim {
            let differ = model
                .iter()
                .zip(&sim)
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("model {a:?}, simulator {b:?}"))
                .unwrap_or_else(|| {
                    format!(
                        "{} nodes in the model, {} in the simulator",
                        model.len(),
                        sim.len()
                    )
                });
            return Err(self.diverge(end, format!("the servers' trees differ: {differ}")));
        }
        Ok(())
    }

    /// Compares what each client's call returned.
    fn compare_results(&self, model: &[Option<i64>]) -> Result<(), Divergence> {
        if model != self.run.results {
            return Err(self.diverge(
                self.run.log.len(),
                format!(
                    "the clients' calls returned {:?}, the model's clients {model:?}",
                    self.run.results
                ),
            ));
        }
        Ok(())
    }

    fn done(self) -> Conformance {
        Conformance {
            actions: self.actions,
            entries: self.entries,
        }
    }
}

/// What the comparison of two servers looks at, per node.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Shape {
    path: String,
    czxid: i64,
    mzxid: i64,
    pzxid: i64,
    version: i32,
    cversion: i32,
    ephemeral_owner: i64,
    children: i32,
}

/// Every node of `kernel`'s tree, its path renamed by `rename`, in path order.
fn tree(kernel: &Kernel, rename: impl Fn(&str) -> String) -> Vec<Shape> {
    let mut out = Vec::new();
    let mut stack = vec!["/".to_owned()];
    while let Some(path) = stack.pop() {
        let node: &Node = kernel.tree().node(&path).expect("a listed child exists");
        let s = &node.stat;
        out.push(Shape {
            path: rename(&path),
            czxid: s.czxid,
            mzxid: s.mzxid,
            pzxid: s.pzxid,
            version: s.version,
            cversion: s.cversion,
            ephemeral_owner: s.ephemeral_owner,
            children: s.num_children,
        });
        for child in &node.children {
            stack.push(avout::path::join(&path, child));
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}
