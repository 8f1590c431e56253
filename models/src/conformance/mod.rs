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
//!
//! [`Election`]: avout::recipes::election::Election
//! [`Stm`]: avout::stm::Stm
//! [`World`]: crate::world::World
//! [`World::from_kernel`]: crate::world::World::from_kernel

mod compare;
mod record;
mod replay;

pub use record::{Recording, faulty, record, record_planted};

use avout::lock::LockKind;
use avout::stm::{StmConfig, StmError};

use self::replay::{Replay, outcome};
use crate::atom::{AtomAgent, Ended};
use crate::lock::LockAgent;
use crate::stm::StmAgent;
use crate::world::Action;

/// What the recorded clients do.
///
/// ```
/// assert_ne!(avout_models::conformance::Workload::Mutex, avout_models::conformance::Workload::Atom);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Each client takes the production [`Mutex`] at [`LOCK_PATH`], holds it a few virtual
    /// milliseconds and unlocks; the model is [`crate::lock`]'s mutex.
    ///
    /// [`Mutex`]: avout::lock::Mutex
    /// [`LOCK_PATH`]: crate::lock::LOCK_PATH
    Mutex,
    /// Client 0 takes the production [`RwLock`]'s write side, the others its read side,
    /// each holding a few virtual milliseconds; the model is [`crate::lock`]'s rwlock.
    ///
    /// [`RwLock`]: avout::lock::RwLock
    RwLock,
    /// Each client campaigns in the production [`Election`], leads a few virtual
    /// milliseconds and resigns; the model is [`crate::lock`]'s election, whose leaders run
    /// the production [`MonitorMachine`](avout::lock::MonitorMachine) on their node as a
    /// [`Leadership`](avout::recipes::election::Leadership) does.
    ///
    /// [`Election`]: avout::recipes::election::Election
    Election,
    /// Each client increments a production [`Atom`] at [`ATOM_PATH`] once with `swap`; the
    /// model is [`crate::atom`]'s.
    ///
    /// [`Atom`]: avout::atom::Atom
    /// [`ATOM_PATH`]: crate::atom::ATOM_PATH
    Atom,
    /// Each client runs one transaction on its own production [`Stm`] handle (protocol
    /// Optimistic, at [`ROOT`], `retry_limit` as [`StmConfig::retry_limit`]): the even
    /// clients transfer one unit from ref `a` to ref `b`, the odd ones read both (see the
    /// [module docs](self#the-stm)); the model is [`crate::stm`]'s.
    ///
    /// [`Stm`]: avout::stm::Stm
    /// [`ROOT`]: crate::stm::ROOT
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
