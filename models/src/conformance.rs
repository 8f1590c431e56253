//! Trace conformance: a run of the production recipes on the simulator, replayed through the
//! model's transition relation, so the model and the implementation cannot drift apart.
//!
//! # How
//!
//! [`record`] runs a [`Workload`] — the production [`avout::lock::Mutex`] or
//! [`avout::lock::RwLock`] (lock, hold, unlock), [`Election`] (campaign, lead, resign),
//! [`avout::atom::Atom`] (`swap(|n| n + 1)`) or [`Stm`] (protocol Optimistic, one `dosync`
//! each: a transfer between two refs or a read of both) on `clients` sessions — on
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
//! | `RequestLost` fault | [`Action::LoseRequest`] (the connection breaks with it) |
//! | `State Disconnected` after a lost message | nothing: the model's connection broke with it |
//! | `Dropped` | nothing: a message of a broken connection, whose call the model failed |
//! | `State Connected` | [`Action::Reconnect`]; its notice is read ([`Action::DeliverReconnected`]) before the client's next read of its inbox, or when the client must send |
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
//! what each client's call returned (the lock's fencing token, the atom's new value, the
//! STM transaction's outcome and the values it read). The first disagreement is a
//! [`Divergence`], naming the log entry.
//!
//! # The STM
//!
//! The STM's clients first open their own [`Stm`] handle on their session (binding the root
//! and making sure of `<root>/refs`: requests the model's agents do not send, since the
//! model's world starts with the handle open). The recording keeps the whole log but the
//! replay starts at [`Recording::from`], the first entry after the clients' start, and the
//! model starts from the server as it was then. The transactions are the model's
//! ([`crate::stm`]): client 0, 2, … transfers one unit from ref `a` to ref `b` (reads both,
//! writes `a - 1` and `b + 1`), client 1, 3, … reads both and writes nothing; `a` starts at
//! the number of transfers, `b` at 0, JSON numbers as the model writes them.
//!
//! Every commit `multi` carries a fresh commit id, which the written nodes keep in their
//! header: the simulator draws it from its seeded GUID stream, the model numbers its
//! commits per client. At the end, the refs' nodes are compared byte for byte in meaning —
//! value, history (values and commit points), chain length — and their commit ids are paired
//! as a bijection, as lock GUIDs are. (The ops of a `multi` are not in the simulator's log,
//! only its first path; a different check, write or version shows as another outcome, zxid,
//! version or node.)
//!
//! Deliberate differences, each harmless to the comparison: the clients' handle opening
//! (above) is production's only; the model's cache is keyed by path, production's by ref
//! name (the same map, [`avout::stm::optimistic::RefMap`]); a read served by the cache sends
//! nothing on either side, so it is checked by the requests that follow; production's
//! counters (`StmStats`) have no counterpart; production's `NoRef` handling (a read after a
//! `sync` when a ref is missing) never runs, as refs are never deleted here.
//!
//! ## What it found
//!
//! The model's client failed with the lost session where production reported the retry
//! limit (2 clients, seed 41, retry limit 0; 3 clients, seed 52, retry limit 1, on the simulator of
//! then; seeds 55 and 67 since a lost message takes its connection with it). A reader's
//! commit is refused and the server expires its session. The client library fails every
//! call in flight (here the refresh reads of the refused commit, sent or about to be), and
//! the production driver hands a machine its replies before session events, so the
//! `CommitMachine` sees a failed refresh, reports the conflict with nothing refreshed,
//! `settle` says retry, and `dosync` — at its limit — fails with the retry limit (with a
//! retry left, the next try fails with the lost session). The model's world ends the session
//! with the session event alone, and the model's client failed at once. The model was wrong:
//! its agent now reads those failures first, as the driver does
//! ([`StmAgent`]'s `handle_session`);
//! `a_session_lost_during_the_refresh_settles_as_a_conflict` keeps both witnesses.
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
use avout::stm::{Abort, Protocol, Stm, StmConfig, StmError};
use avout::{Coordination, Error, SessionId, SessionState};
use avout_sim_zk::kernel::{Kernel, Node};
use avout_sim_zk::{FaultKind, FaultRates, LogEvent, Sim, SimClient};

use crate::atom::{ATOM_PATH, AtomAgent, Ended};
use crate::lock::{LOCK_PATH, LockAgent};
use crate::stm::{Body, REF_A, REF_B, ROOT, StmAgent};
use crate::world::{Action, Agent, Faults, Msg, World};

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
    /// Each client runs one transaction on its own production [`Stm`] handle (protocol
    /// Optimistic, at [`ROOT`], `retry_limit` as [`StmConfig::retry_limit`]): the even
    /// clients transfer one unit from ref `a` to ref `b`, the odd ones read both (see the
    /// [module docs](self#the-stm)); the model is [`crate::stm`]'s.
    Stm {
        /// Retries after which a transaction fails (production's and the model's).
        retry_limit: u32,
    },
}

impl Workload {
    /// The STM workload with the default retry limit (10,000: never reached here).
    ///
    /// ```
    /// use avout_models::conformance::Workload;
    /// assert_eq!(Workload::stm(), Workload::Stm { retry_limit: 10_000 });
    /// ```
    pub fn stm() -> Workload {
        Workload::Stm {
            retry_limit: StmConfig::default().retry_limit,
        }
    }
}

/// What a client's call returned, as conformance compares it.
///
/// ```
/// use avout_models::conformance::Returned;
/// assert_ne!(Returned::Value(1), Returned::Failed(None));
/// assert_ne!(Returned::Committed { a: 1, b: 0 }, Returned::Failed(Some("session lost".into())));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Returned {
    /// The lock's fencing token, the election's term or the atom's new value.
    Value(i64),
    /// The STM transaction committed; its last try read `a` and `b`.
    Committed {
        /// Ref `a` as read.
        a: u64,
        /// Ref `b` as read.
        b: u64,
    },
    /// The call failed. For the STM, how ([`StmError`]'s kind: `session lost`,
    /// `indeterminate`, `retry limit`, `zk <error>`); `None` for the other workloads, whose
    /// models do not tell, and for a call that did not finish.
    Failed(Option<String>),
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
/// use avout_models::conformance::{Returned, Workload, record};
/// let run = record(Workload::Atom, 1, 2, Default::default());
/// assert_eq!(run.sessions.len(), 2);
/// assert_eq!(run.results.len(), 2);
/// assert!(run.results.contains(&Returned::Value(2)), "no faults: one swap wrote 2");
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
    /// The first entry of `log` at or after the clients' start (what came before set the
    /// server up, and for the STM opened the clients' handles); the replay starts there.
    pub from: usize,
    /// The server when the clients were done.
    pub end: Kernel,
    /// What each client's call returned.
    pub results: Vec<Returned>,
}

/// Runs `workload` with `clients` clients on the simulator seeded with `seed`, faults drawn
/// at `rates`, and records it. Deterministic: the same arguments give the same recording.
///
/// ```
/// use avout_models::conformance::{Workload, record};
/// let a = record(Workload::Mutex, 3, 2, Default::default());
/// let b = record(Workload::Mutex, 3, 2, Default::default());
/// assert_eq!(a.log, b.log);
/// assert!(a.results.iter().all(|r| matches!(r, avout_models::conformance::Returned::Value(_))), "no faults, both held");
/// ```
pub fn record(workload: Workload, seed: u64, clients: usize, rates: FaultRates) -> Recording {
    let sim = Sim::builder()
        .seed(seed)
        .clients(0)
        .rates(rates)
        .keep_log(true)
        .failure_replay_dir(None)
        .build();
    let ((start, sessions, first, started, results, end), summary) = sim.run(|ctx| async move {
        let origin = tokio::time::Instant::now();
        // The node the clients contend on, made by a separate session (a new one for every
        // try: faults are drawn for its requests too). The sessions stay open to the end: a
        // close is a transaction the model would not know of.
        let mut admins = Vec::new();
        loop {
            let admin = Arc::new(ctx.zk.connect());
            admins.push(admin.clone());
            if set_up(workload, admin, clients).await {
                break;
            }
        }
        // Kept open to the end as well, for the same reason; so are the sessions of a batch
        // of STM clients that could not open their handles, or lost their session doing so
        // (a new batch is connected).
        let mut abandoned = Vec::new();
        let (users, handles) = loop {
            let users: Vec<Arc<SimClient>> =
                (0..clients).map(|_| Arc::new(ctx.zk.connect())).collect();
            let handles = open(workload, &users).await;
            if matches!(workload, Workload::Stm { .. }) {
                // Every reply of the opening is in; nothing of the clients' is in flight.
                // The pause keeps the opening's log entries clear of the workload's, and
                // lets an expiry drawn for its requests take effect.
                tokio::time::sleep(SETTLE).await;
            }
            let ids: Vec<SessionId> = users.iter().map(|u| u.session().id).collect();
            let alive = ctx.zk.with_kernel(|k| ids.iter().all(|s| k.is_alive(*s)));
            match handles {
                Some(handles) if alive => break (users, handles),
                _ => abandoned.push(users),
            }
        };
        let sessions: Vec<SessionId> = users.iter().map(|u| u.session().id).collect();
        let first = users.first().map_or(0, |u| u.index());
        let start = ctx.zk.with_kernel(Kernel::clone);
        let started = u64::try_from(origin.elapsed().as_nanos()).expect("a short run");
        let results = futures::future::join_all(users.iter().zip(handles).enumerate().map(
            |(i, (user, handle))| async move {
                tokio::time::timeout(PATIENCE, run_client(workload, user.clone(), handle, i))
                    .await
                    .unwrap_or(Returned::Failed(None))
            },
        ))
        .await;
        tokio::time::sleep(SETTLE).await;
        let end = ctx.zk.with_kernel(Kernel::clone);
        drop((admins, abandoned, users));
        (start, sessions, first, started, results, end)
    });
    let from = summary
        .log
        .iter()
        .position(|e| e.time() >= started)
        .unwrap_or(summary.log.len());
    Recording {
        workload,
        seed,
        start,
        sessions,
        first,
        log: summary.log,
        from,
        end,
        results,
    }
}

/// The STM configuration of the workload: protocol Optimistic, the defaults otherwise
/// (`max_history` 10, as the model's nodes keep 9 previous values).
fn stm_config(retry_limit: u32) -> StmConfig {
    StmConfig {
        retry_limit,
        ..StmConfig::with_protocol(Protocol::Optimistic)
    }
}

/// How many of `clients` transfer (ref `a`'s first value, as the model's).
fn transfers(clients: usize) -> u64 {
    (0..clients)
        .filter(|&i| Body::for_client(u8::try_from(i).expect("a few clients")) == Body::Transfer)
        .count() as u64
}

/// Creates the workload's node; `false` if this session could not (try another).
async fn set_up(workload: Workload, admin: Arc<SimClient>, clients: usize) -> bool {
    match workload {
        Workload::Mutex | Workload::RwLock | Workload::Election => matches!(
            admin.create(LOCK_PATH, b"", &Default::default()).await,
            Ok(_) | Err(Error::NodeExists { .. })
        ),
        Workload::Atom => Atom::<u64, _>::open(admin, ATOM_PATH, 0).await.is_ok(),
        Workload::Stm { retry_limit } => {
            let Ok(stm) = Stm::open(admin, ROOT, stm_config(retry_limit)).await else {
                return false;
            };
            // JSON numbers: the bytes the model writes (`to_string`).
            stm.make_ref("a", transfers(clients)).await.is_ok()
                && stm.make_ref("b", 0u64).await.is_ok()
        }
    }
}

/// The clients' STM handles, opened on their sessions (one per client, as the model's
/// agents each have their own cache); `None` if one could not be opened (its session was
/// lost). Nothing for the other workloads, whose handles send nothing when made.
async fn open(workload: Workload, users: &[Arc<SimClient>]) -> Option<Vec<Option<Stm<SimClient>>>> {
    let Workload::Stm { retry_limit } = workload else {
        return Some(users.iter().map(|_| None).collect());
    };
    let opened = futures::future::join_all(
        users
            .iter()
            .map(|user| Stm::open(user.clone(), ROOT, stm_config(retry_limit))),
    )
    .await;
    opened.into_iter().map(|o| o.ok().map(Some)).collect()
}

/// One client's part of the workload.
async fn run_client(
    workload: Workload,
    zk: Arc<SimClient>,
    stm: Option<Stm<SimClient>>,
    index: usize,
) -> Returned {
    let value = |v: Option<i64>| v.map_or(Returned::Failed(None), Returned::Value);
    match workload {
        Workload::Mutex => {
            let mutex = Mutex::new(zk, LOCK_PATH).expect("a valid path");
            value(match mutex.lock().await {
                Ok(guard) => hold(guard).await,
                Err(_) => None,
            })
        }
        Workload::RwLock => {
            let lock = RwLock::new(zk, LOCK_PATH).expect("a valid path");
            let guard = match index {
                0 => lock.write().await,
                _ => lock.read().await,
            };
            value(match guard {
                Ok(guard) => hold(guard).await,
                Err(_) => None,
            })
        }
        Workload::Election => {
            let election = Election::new(zk, LOCK_PATH)
                .expect("a valid path")
                .with_id(vec![b'0' + u8::try_from(index).expect("a few clients")]);
            let Ok(leadership) = election.campaign().await else {
                return Returned::Failed(None);
            };
            let term = leadership.term();
            tokio::time::sleep(HOLD).await;
            let _ = leadership.resign().await;
            Returned::Value(term)
        }
        Workload::Atom => {
            let atom = Atom::<u64, _>::builder(zk, ATOM_PATH)
                .connect()
                .expect("a valid path");
            match atom.swap(|n| n + 1).await {
                Ok(v) => Returned::Value(i64::try_from(v).expect("a small counter")),
                Err(_) => Returned::Failed(None),
            }
        }
        Workload::Stm { .. } => {
            let stm = stm.expect("opened for the STM workload");
            let a = stm.get_ref::<u64>("a").expect("a valid name");
            let b = stm.get_ref::<u64>("b").expect("a valid name");
            let transfer =
                Body::for_client(u8::try_from(index).expect("a few clients")) == Body::Transfer;
            // The model's transaction: read `a`, read `b`, and for a transfer write `a - 1`
            // and `b + 1` (wrapping: a broken implementation shows as another value, not as
            // a panic of the run).
            let result = stm
                .dosync(async |tx| {
                    let x = tx.deref(&a).await?;
                    let y = tx.deref(&b).await?;
                    if transfer {
                        tx.ref_set(&a, x.wrapping_sub(1)).await?;
                        tx.ref_set(&b, y.wrapping_add(1)).await?;
                    }
                    Ok::<_, Abort>((x, y))
                })
                .await;
            match result {
                Ok((a, b)) => Returned::Committed { a, b },
                Err(e) => Returned::Failed(Some(stm_failure(&StmError::from(e)))),
            }
        }
    }
}

/// An STM failure's kind, as [`Returned::Failed`] names it.
fn stm_failure(e: &StmError) -> String {
    match e {
        StmError::SessionLost(_) => "session lost".into(),
        StmError::Indeterminate { .. } => "indeterminate".into(),
        StmError::RetryLimit { .. } => "retry limit".into(),
        StmError::Zk(e) => format!("zk {}", outcome::<()>(&Err(e.clone()))),
        other => other.to_string(),
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
/// use avout_models::conformance::{Returned, Workload, conform, faulty, record};
/// let mut run = record(Workload::Mutex, 5, 2, Default::default());
/// assert!(conform(&run).is_ok());
/// run.results[0] = Returned::Value(999); // the model's client 0 did not hold with token 999
/// assert!(conform(&run).is_err());
///
/// let run = record(Workload::stm(), 5, 3, faulty());
/// assert!(conform(&run).is_ok());
/// ```
pub fn conform(run: &Recording) -> Result<Conformance, Divergence> {
    let agents = |i: usize| u8::try_from(i).expect("a few clients");
    let value = |v: Option<i64>| v.map_or(Returned::Failed(None), Returned::Value);
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
            let returned: Vec<Returned> = tokens.into_iter().map(value).collect();
            replayed.compare_results(&returned)?;
            Ok(replayed.done())
        }
        Workload::Atom => {
            let agents = (0..run.sessions.len())
                .map(|i| AtomAgent::new(agents(i)))
                .collect();
            let replayed = Replay::new(run, agents).run(|_| {})?;
            let values: Vec<Returned> = replayed
                .world
                .clients
                .iter()
                .map(|c| {
                    value(match c.agent.ended {
                        Some(Ended::Swapped(v)) => i64::try_from(v).ok(),
                        _ => None,
                    })
                })
                .collect();
            replayed.compare_results(&values)?;
            Ok(replayed.done())
        }
        Workload::Stm { retry_limit } => {
            let agents = (0..run.sessions.len())
                .map(|i| StmAgent::new(agents(i), retry_limit))
                .collect();
            let replayed = Replay::new(run, agents).run(|_| {})?;
            replayed.compare_refs()?;
            let returned: Vec<Returned> = replayed
                .world
                .clients
                .iter()
                .map(|c| stm_returned(c.agent.ended.as_ref()))
                .collect();
            replayed.compare_results(&returned)?;
            Ok(replayed.done())
        }
    }
}

/// What the model's STM client returned: the mirror of the engine's mapping of a settled
/// commit to `dosync`'s result (core's `stm/optimistic/mod.rs`, `Try::commit`; `stm/tx.rs`,
/// `run`), with a coordination error classified by production's [`StmError::from_zk`].
fn stm_returned(ended: Option<&crate::stm::Ended>) -> Returned {
    use crate::stm::Ended;
    match ended {
        Some(Ended::Committed { a, b }) => Returned::Committed { a: *a, b: *b },
        Some(Ended::Failed(e)) => {
            Returned::Failed(Some(stm_failure(&StmError::from_zk(e.clone()))))
        }
        Some(Ended::Indeterminate) => {
            Returned::Failed(Some(stm_failure(&StmError::Indeterminate {
                detail: String::new(),
            })))
        }
        Some(Ended::RetryLimit) => {
            Returned::Failed(Some(stm_failure(&StmError::RetryLimit { retries: 0 })))
        }
        None => Returned::Failed(None),
    }
}

/// An Optimistic ref's node data, decoded by the layout core documents (`stm/optimistic/
/// envelope.rs`: magic `A7 'S' 01`, the count of commit ids, the chain length (u32 BE), the
/// commit ids (u128 BE each, newest first), the count of previous values, each previous value
/// as commit point (u64 BE), length (u32 BE) and bytes, then the value). Decoded here, not by
/// core, whose decoder is private: the comparison also checks that both sides write that
/// layout.
#[derive(Clone, Debug, PartialEq, Eq)]
struct RefNode {
    txns: Vec<u128>,
    chain: u32,
    history: Vec<(u64, Vec<u8>)>,
    value: Vec<u8>,
}

impl RefNode {
    fn parse(data: &[u8]) -> Option<RefNode> {
        let rest = data.strip_prefix(&[0xA7, b'S', 1][..])?;
        let (&n, rest) = rest.split_first()?;
        let (chain, mut rest) = rest.split_at_checked(4)?;
        let chain = u32::from_be_bytes(chain.try_into().ok()?);
        let mut txns = Vec::new();
        for _ in 0..n {
            let (txn, after) = rest.split_at_checked(16)?;
            txns.push(u128::from_be_bytes(txn.try_into().ok()?));
            rest = after;
        }
        let (&h, mut rest) = rest.split_first()?;
        let mut history = Vec::new();
        for _ in 0..h {
            let (point, after) = rest.split_at_checked(8)?;
            let (len, after) = after.split_at_checked(4)?;
            let len = u32::from_be_bytes(len.try_into().ok()?) as usize;
            let (value, after) = after.split_at_checked(len)?;
            history.push((u64::from_be_bytes(point.try_into().ok()?), value.to_vec()));
            rest = after;
        }
        Some(RefNode {
            txns,
            chain,
            history,
            value: rest.to_vec(),
        })
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

/// Commit ids (the STM's), drawn differently on the two sides: paired as they first appear
/// in the same place of a node's header, and held to the pairing.
#[derive(Default)]
struct Txns {
    sim_to_model: BTreeMap<u128, u128>,
    model_to_sim: BTreeMap<u128, u128>,
}

impl Txns {
    fn same(&mut self, sim: u128, model: u128) -> bool {
        match (self.sim_to_model.get(&sim), self.model_to_sim.get(&model)) {
            (None, None) => {
                self.sim_to_model.insert(sim, model);
                self.model_to_sim.insert(model, sim);
                true
            }
            (Some(m), Some(s)) => *m == model && *s == sim,
            _ => false,
        }
    }
}

/// A request as the simulator's log shows it: operation and path.
fn show(request: &Request) -> String {
    format!("{} {}", request.name(), request.path())
}

/// `ok`, or an error's variant name: the simulator log's outcome vocabulary.
fn outcome<T>(result: &avout::Result<T>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(e) => e.name().into(),
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
            | Action::DeliverReconnected(c)
            | Action::Reconnect(c)
            | Action::Timer(c)
            | Action::Expire(c)
            | Action::Script(c) => c,
        };
        let before = self.world.clients[c].outbox.len();
        let kept = match action {
            Action::Apply(_) => before - 1,
            // The connection broke: everything not yet at the server failed with it.
            Action::LoseRequest(_) | Action::LoseReply(_) => 0,
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

    /// Reads client `c`'s reconnection notices if they are next in its inbox: the production
    /// driver hands a machine its session's transitions as they come, before what arrives
    /// on the new connection.
    fn read_reconnection(&mut self, at: usize, c: usize) -> Result<(), Divergence> {
        while matches!(self.world.clients[c].inbox.front(), Some(Msg::Reconnected)) {
            self.take(at, Action::DeliverReconnected(c), false)?;
        }
        Ok(())
    }

    /// The first request client `c` would send if `action` (its own step) were taken now.
    fn first_sent(&self, action: Action, c: usize) -> Option<Request> {
        let mut probe = self.world.clone();
        let before = probe.clients[c].outbox.len();
        probe.step(action, None);
        probe.clients[c]
            .outbox
            .get(before)
            .map(|(_, request)| request.clone())
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

    /// Walks the log from the clients' start; `observe` sees the model after every action.
    fn run(mut self, mut observe: impl FnMut(&World<A>)) -> Result<Self, Divergence> {
        let log = &self.run.log;
        let mut at = self.run.from;
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
                    let own: Vec<Action> = [
                        Action::DeliverReconnected(c),
                        Action::Timer(c),
                        Action::Script(c),
                    ]
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
                // The log gives no path to a request without one (`addAuth`).
                let same = request.name() == op
                    && match path {
                        Some(s) => self.guids.same(s, request.path()),
                        None => request.path().is_empty(),
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
                let applied = probe.apply(0, self.world.clients[c].session, request);
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
                let client = &self.world.clients[c];
                if *kind == FaultKind::RequestLost
                    && client.told_expired
                    && client.outbox.is_empty()
                    && !self.world.kernel.is_alive(client.session)
                {
                    // As for an applied one above: sent before the client learnt of the
                    // expiry, failed by the library with the session (the model's client
                    // dropped it then), and lost on its way to the server, which changes
                    // nothing (STM, 4 clients, seed 128: a commit sent as the expiry
                    // notice arrived).
                    return Ok(1);
                }
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
                self.read_reconnection(at, c)?;
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
                self.read_reconnection(at, c)?;
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
                    self.read_reconnection(at, c)?;
                    self.take(at, Action::DeliverExpiry(c), false)?;
                    Ok(1)
                }
                // A lost request or reply broke the connection: the model broke it then.
                SessionState::Disconnected if !self.world.clients[c].connected => Ok(1),
                SessionState::Connected if finished => Ok(1),
                SessionState::Connected => {
                    self.take(at, Action::Reconnect(c), false)?;
                    Ok(1)
                }
                other => {
                    Err(self.diverge(at, format!("the models have no {other:?} session state")))
                }
            },
            // A message of a connection that broke; the model failed its call at the break.
            LogEvent::Dropped { .. } => Ok(1),
            LogEvent::Timer { .. } | LogEvent::Connect { .. } | LogEvent::Buggify { .. } => Ok(1),
        }
    }

    /// The checks at the end: nothing the model sent is missing from the log, and the two
    /// servers agree.
    fn finish(&mut self) -> Result<(), Divergence> {
        let end = self.run.log.len();
        for (c, sent) in self.sent.iter().enumerate() {
            if let Some(request) = sent.front() {
                let request = show(request);
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

    /// Compares the STM's refs at the end (see [`same_refs`]).
    fn compare_refs(&self) -> Result<(), Divergence> {
        same_refs(&self.world.kernel, &self.run.end)
            .map_err(|why| self.diverge(self.run.log.len(), why))
    }

    /// Compares what each client's call returned.
    fn compare_results(&self, model: &[Returned]) -> Result<(), Divergence> {
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

/// Whether the STM's refs agree on the model's server and the simulator's: value, history
/// (values and commit points) and chain length equal, commit ids paired as a bijection
/// across both refs. `Err` says how they differ.
fn same_refs(model: &Kernel, sim: &Kernel) -> Result<(), String> {
    let mut txns = Txns::default();
    for path in [REF_A, REF_B] {
        let data = |kernel: &Kernel| {
            kernel
                .tree()
                .node(path)
                .and_then(|n| RefNode::parse(&n.data))
        };
        let (Some(model), Some(sim)) = (data(model), data(sim)) else {
            return Err(format!("{path} is missing or not a ref's node"));
        };
        let paired = model.txns.len() == sim.txns.len()
            && sim
                .txns
                .iter()
                .zip(&model.txns)
                .all(|(s, m)| txns.same(*s, *m));
        let rest = |n: &RefNode| (n.chain, n.history.clone(), n.value.clone());
        if !paired || rest(&model) != rest(&sim) {
            return Err(format!(
                "{path} differs: model {model:?}, simulator {sim:?}"
            ));
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use avout::machine::Request;
    use avout::stm::optimistic::{CommitSpec, Node, initial_data};
    use avout_sim_zk::kernel::Kernel;

    use super::{REF_A, REF_B, ROOT, RefNode, same_refs};

    /// A server with the two refs, each written by the commits `txns` (oldest first) from
    /// its initial value, one unit at a time, as production's `CommitSpec` writes them.
    fn server(txns_a: &[u128], txns_b: &[u128]) -> Kernel {
        let mut kernel = Kernel::new();
        let session = kernel.create_session(0, Duration::from_secs(10));
        let apply = |kernel: &mut Kernel, request: Request| {
            assert!(kernel.apply(0, session, &request).result.is_ok());
        };
        for (path, data) in [
            (ROOT, Vec::new()),
            ("/stm/refs", Vec::new()),
            (REF_A, initial_data(b"0")),
            (REF_B, initial_data(b"0")),
        ] {
            let options = Default::default();
            apply(
                &mut kernel,
                Request::Create {
                    path: path.into(),
                    data,
                    options,
                },
            );
        }
        for (path, txns) in [(REF_A, txns_a), (REF_B, txns_b)] {
            for (n, txn) in txns.iter().enumerate() {
                let node = kernel.tree().node(path).unwrap();
                let base = Node {
                    data: node.data.clone(),
                    stat: node.stat,
                };
                let value = (n + 1).to_string().into_bytes();
                let spec = CommitSpec::of(
                    *txn,
                    9,
                    vec![],
                    vec![(path.into(), base, value)],
                    vec![],
                    vec![],
                );
                apply(&mut kernel, Request::Multi(spec.ops));
            }
        }
        kernel
    }

    #[test]
    fn ref_nodes_decode_as_production_writes_them() {
        let kernel = server(&[7, 8], &[]);
        let a = RefNode::parse(&kernel.tree().node(REF_A).unwrap().data).unwrap();
        assert_eq!((a.txns, a.chain, a.value), (vec![8, 7], 3, b"2".to_vec()));
        assert_eq!(a.history.len(), 2);
        assert_eq!(a.history[1].1, b"0");
        let b = RefNode::parse(&initial_data(b"41")).unwrap();
        assert_eq!(
            (b.txns.len(), b.chain, b.history.len(), b.value),
            (0, 1, 0, b"41".to_vec())
        );
        assert_eq!(RefNode::parse(b"41"), None, "not a ref's node");
    }

    #[test]
    fn commit_ids_are_paired_as_a_bijection() {
        // The same commits under other ids: the same.
        assert_eq!(
            same_refs(&server(&[1, 2], &[2]), &server(&[10, 20], &[20])),
            Ok(())
        );
        // One commit on the model's side, two on the simulator's: different.
        assert!(same_refs(&server(&[1, 2], &[2]), &server(&[10, 20], &[10])).is_err());
        // Two commits on the model's side, one on the simulator's.
        assert!(same_refs(&server(&[1, 2], &[3]), &server(&[10, 20], &[20])).is_err());
    }
}
