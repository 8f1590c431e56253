//! [`record`]: a run of a [`Workload`] on the simulator, kept for [`conform`](super::conform).

use std::sync::Arc;
use std::time::Duration;

use avout::atom::Atom;
use avout::lock::{LockGuard, Mutex, RwLock};
use avout::planted::Bugs;
use avout::recipes::election::Election;
use avout::stm::{Abort, Protocol, Stm, StmConfig};
use avout::{Client, Coordination, Error, SessionId};
use avout_sim_zk::kernel::Kernel;
use avout_sim_zk::{FaultRates, LogEvent, Sim, SimClient};

use super::{Returned, Workload, stm_failure};
use crate::atom::ATOM_PATH;
use crate::lock::LOCK_PATH;
use crate::stm::{Body, ROOT};

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

/// A simulator run of a [`Workload`], as [`conform`](super::conform) needs it.
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
    record_planted(workload, seed, clients, rates, Bugs::NONE)
}

/// [`record`] with `planted` bugs in the production handles' machines (the atom's, the
/// mutex's, the STM's), to show that conformance catches an implementation that drifted.
///
/// ```
/// use avout_models::conformance::{Workload, record, record_planted};
/// let none = avout::planted::Bugs::NONE;
/// assert_eq!(record_planted(Workload::Atom, 3, 2, Default::default(), none).log, record(Workload::Atom, 3, 2, Default::default()).log);
/// ```
pub fn record_planted(
    workload: Workload,
    seed: u64,
    clients: usize,
    rates: FaultRates,
    planted: Bugs,
) -> Recording {
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
            if set_up(workload, admin, clients, planted).await {
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
            let handles = open(workload, &users, planted).await;
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
                tokio::time::timeout(
                    PATIENCE,
                    run_client(workload, user.clone(), handle, i, planted),
                )
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
fn stm_config(retry_limit: u32, planted: Bugs) -> StmConfig {
    StmConfig {
        retry_limit,
        planted,
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
async fn set_up(workload: Workload, admin: Arc<SimClient>, clients: usize, planted: Bugs) -> bool {
    match workload {
        Workload::Mutex | Workload::RwLock | Workload::Election => matches!(
            admin.create(LOCK_PATH, b"", &Default::default()).await,
            Ok(_) | Err(Error::NodeExists { .. })
        ),
        Workload::Atom => Atom::<u64>::builder(&single(&admin), ATOM_PATH)
            .planted(planted)
            .open(0)
            .await
            .is_ok(),
        Workload::Stm { retry_limit } => {
            let Ok(stm) = Stm::open(&single(&admin), ROOT, stm_config(retry_limit, planted)).await
            else {
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
async fn open(
    workload: Workload,
    users: &[Arc<SimClient>],
    planted: Bugs,
) -> Option<Vec<Option<Stm>>> {
    let Workload::Stm { retry_limit } = workload else {
        return Some(users.iter().map(|_| None).collect());
    };
    let opened = futures::future::join_all(users.iter().map(|user| async move {
        Stm::open(&single(user), ROOT, stm_config(retry_limit, planted)).await
    }))
    .await;
    opened.into_iter().map(|o| o.ok().map(Some)).collect()
}

/// One client's part of the workload.
async fn run_client(
    workload: Workload,
    zk: Arc<SimClient>,
    stm: Option<Stm>,
    index: usize,
    planted: Bugs,
) -> Returned {
    let value = |v: Option<i64>| v.map_or(Returned::Failed(None), Returned::Value);
    let zk = &single(&zk);
    match workload {
        Workload::Mutex => {
            let mutex = Mutex::new(zk, LOCK_PATH)
                .expect("a valid path")
                .planted(planted);
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
            let atom = Atom::<u64>::builder(zk, ATOM_PATH)
                .planted(planted)
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
                Err(e) => Returned::Failed(Some(stm_failure(&e))),
            }
        }
    }
}

/// Holds a lock a moment and releases it; returns the fencing token.
async fn hold(guard: LockGuard) -> Option<i64> {
    let token = guard.fencing_token();
    tokio::time::sleep(HOLD).await;
    // A holder whose session ended cannot release; the node went with the session.
    let _ = guard.unlock().await;
    Some(token)
}

/// A client of exactly this session (never another): the model pairs requests by session.
fn single(zk: &Arc<SimClient>) -> Client {
    Client::single(zk.clone())
}
