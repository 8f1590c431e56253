//! The scenario registry: workloads over avout's recipes, each with the checker that judges
//! its history, run on the embedded simulator or on real ZooKeeper.
//!
//! A scenario is a workload written once against [`env::Cluster`] (so the simulator and a
//! real ensemble run the same code), a checker for the history it records (Jepsen's JSON
//! lines, [`avout_check::history`]) and defaults. [`run_sim`] runs one on the simulator from a
//! seed and a [`FaultPlan`]; [`run_zk`] on a real server. Both return a [`Report`]: the
//! history, counts, faults and the [`Verdict`].
//!
//! | scenario | workload | checker |
//! |---|---|---|
//! | `counter` | atom increments (`swap`) and linearizable reads | every acknowledged increment returned a distinct value; every read lies between the increments surely done and those possibly done |
//! | `lin-kv` | Maelstrom's lin-kv: read, write, cas on a few keys | linearizability, per key (cas-register) |
//! | `mutex` | lock, fenced read-increment-write of a shared counter, unlock | fenced writes never lose an increment; two holders never overlap (fencing rule) |
//! | `rwlock` | readers read a value twice under the read lock; writers increment it under the write lock | no writer inside a confirmed read hold; no lost increment |
//! | `election` | campaign, fenced write as leader, resign | one leader per term; terms grow; no two live leaders |
//! | `queue` | put unique items, take, drain at the end | nothing delivered twice; nothing put is lost; nothing taken that was not put |
//! | `barrier` | one client sets, others wait, the setter removes | no waiter passes a set barrier |
//! | `bank` | STM transfers between five accounts, reads of all of them (`--protocol mvcc\|optimistic`) | every read sums to the total, no negative balance ([`avout_check::bank`]) |
//! | `list-append` | Maelstrom's txn-list-append on STM refs | Elle: G0, G1a–c, G-single, G-nonadjacent, G2-item (allowed under Mvcc: snapshot isolation, adjacent rw edges only), lost update, internal and future reads ([`avout_check::list_append`]) |
//! | `lock-table` | the medical-records example: entry, review, month-end lock transactions, fenced work inside | one clerk inside at a time; no lost increment |
//! | `two-phase-commit` | rounds of transactions: a rotating coordinator, every client a site voting commit, abort, or leaving before voting | atomic commitment: everyone learns the coordinator's outcome, commit only on all-commit votes, nobody told two outcomes ([`avout_check::two_phase_commit`]) |
//! | `sessions` | one managed client per worker, its handles built once, across 2–4 expiries of its own session (and every drawn fault): atom increments and reads, STM transfers and reads, fenced increments under a mutex (expiries inside holds too), leadership through a `LeaderLatch` | each part by its scenario's checker (counter, bank, mutex, election), and every client makes progress after each of its expiries ([`sessions`]) |
//!
//! | `cache` | writers change a subtree under `/cache`; every client follows it with a cache (subtree, children or node scope) and records each event; once writes stop, each view is recorded beside the tree | every event for a real change (a write of that path and data, invoked before it); no change reported twice by a cache; each client's last cache converged to the tree ([`cache`]) |
//! | `agents` | plain sends and sends from transactions (`--protocol`) to one agent whose value logs what was applied, failing actions, restarts, an executor per client; drained at the end | every acknowledged send applied exactly once, none from an aborted try; order per sender; a failed agent applies nothing until restarted ([`agents`]) |
//!
//! Every scenario also fails a run in which an operation did not finish within
//! [`OP_DEADLINE`] (a deadlock): liveness, under faults that all end.

pub mod agents;
mod any_cluster;
pub mod bank;
pub mod barrier;
pub mod cache;
pub mod case;
mod checks;
pub mod codes;
pub mod counter;
pub mod election;
pub mod env;
mod error;
pub mod explore;
pub mod linkv;
pub mod list_append;
pub mod locktable;
pub mod mutex;
mod name;
pub mod queue;
pub mod registry;
pub mod rwlock;
pub mod sessions;
pub mod shrink;
pub mod soak;
pub mod store;
pub mod two_phase_commit;
mod worker;

use std::collections::BTreeMap;
use std::time::Duration;

use avout::planted::{Bug, Bugs};
use avout_sim_zk::{Fault, FaultKind, FaultRates, ReplayFile, Sim, SimConfig, When};
use serde::{Deserialize, Serialize};

pub use any_cluster::AnyCluster;
use avout_check::history::{EventType, History};
use avout_check::{Anomaly, Verdict};
pub use checks::Checks;
use env::{Cluster, Planted, Recorder, SimCluster};
pub use error::{BoxError, WorkloadError};
pub use name::{Protocol, ScenarioName, UnknownScenario};
pub use registry::{Registry, Scenario};

/// How long one operation may take before the run is failed as stuck (virtual time on the
/// simulator). Every fault the simulator injects ends well within it.
pub const OP_DEADLINE: Duration = Duration::from_secs(60);

/// How long a Maelstrom workload's client waits after an operation it refused with 11
/// (temporarily unavailable) because its connection was down, before its next: without it a
/// client would refuse its whole budget in an instant of a disconnection.
pub const REFUSED_PAUSE: Duration = Duration::from_millis(50);

/// The event-log hash recorded for a run that panicked (it has none).
pub const PANICKED: u64 = 0;

/// The session timeout of simulated runs.
pub const SIM_SESSION_TIMEOUT: Duration = Duration::from_secs(4);

/// What a run does, besides its faults: the scenario, its size and the seed its clients
/// draw their choices from.
///
/// ```
/// use avout_scenarios::scenario::{ScenarioName, Workload};
/// let w = Workload::new(ScenarioName::Counter, 7);
/// assert_eq!((w.clients, w.ops), ScenarioName::Counter.defaults());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    /// The scenario.
    pub scenario: ScenarioName,
    /// Concurrent clients (each its own managed client, one session at a time).
    pub clients: usize,
    /// Operations per client.
    pub ops: usize,
    /// The STM protocol (transactional scenarios only).
    #[serde(default)]
    pub protocol: Protocol,
    /// Where the refs' values live (transactional scenarios only; left out of files when
    /// they are in the nodes).
    #[serde(default, skip_serializing_if = "store::RefStoreKind::is_default")]
    pub ref_store: store::RefStoreKind,
    /// The smallest encoding of a bank account's value, in bytes (padded JSON; 0: plain).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub value_size: usize,
    /// The seed of the clients' choices (and, on the simulator, of everything else).
    pub seed: u64,
    /// The STM's retry limit (transactional scenarios only; `None`: the protocol's default).
    /// A transaction that reaches it fails with Maelstrom's 30 (txn-conflict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_limit: Option<u32>,
}

impl Workload {
    /// The scenario's defaults with `seed`.
    pub fn new(scenario: ScenarioName, seed: u64) -> Self {
        let (clients, ops) = scenario.defaults();
        Workload {
            scenario,
            clients,
            ops,
            protocol: Protocol::default(),
            ref_store: store::RefStoreKind::default(),
            value_size: 0,
            seed,
            retry_limit: None,
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The faults of a simulated run: rates drawn per request, and scheduled faults.
///
/// ```
/// use avout_scenarios::scenario::FaultPlan;
/// use avout_sim_zk::FaultKind;
/// let plan = FaultPlan::kinds(&[FaultKind::ReplyLost], None);
/// assert!(plan.rates.reply_lost > 0.0 && plan.rates.request_lost == 0.0);
/// assert!(!FaultPlan::none().rates.any());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultPlan {
    /// Per-request rates.
    pub rates: FaultRates,
    /// Faults at given steps or times.
    pub scheduled: Vec<(When, Fault)>,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> Self {
        FaultPlan::default()
    }

    /// The default kinds ([`FaultKind::DEFAULT`]), at the simulator's chaos mix.
    pub fn all() -> Self {
        FaultPlan::kinds(&FaultKind::DEFAULT, None)
    }

    /// The given kinds, at the chaos mix's rates, or scaled so that the rates add up to
    /// `total` (the chance that a request draws some fault).
    pub fn kinds(kinds: &[FaultKind], total: Option<f64>) -> Self {
        let chaos = FaultRates::chaos_all();
        let mut rates = FaultRates::default();
        for &kind in kinds {
            *rates.rate_mut(kind) = chaos.rate(kind);
        }
        if let Some(total) = total {
            let sum: f64 = FaultKind::ALL.iter().map(|&k| rates.rate(k)).sum();
            if sum > 0.0 {
                let k = total / sum;
                for kind in FaultKind::ALL {
                    *rates.rate_mut(kind) *= k;
                }
            }
        }
        FaultPlan {
            rates,
            scheduled: Vec::new(),
        }
    }

    /// How many faults the plan can fire (scheduled ones; rates count as unbounded).
    pub fn is_empty(&self) -> bool {
        !self.rates.any() && self.scheduled.is_empty()
    }
}

/// Counts of a history's operations by how they ended.
///
/// ```
/// let c = avout_scenarios::scenario::Counts::of(&Default::default());
/// assert_eq!(c.invoked, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Operations started.
    pub invoked: u64,
    /// Completed `ok`.
    pub ok: u64,
    /// Completed `fail`.
    pub fail: u64,
    /// Completed `info`, or never completed.
    pub info: u64,
}

impl Counts {
    /// Counts the events of `history`.
    pub fn of(history: &History) -> Self {
        let mut c = Counts::default();
        for e in history.events() {
            match e.kind {
                EventType::Invoke => c.invoked += 1,
                EventType::Ok => c.ok += 1,
                EventType::Fail => c.fail += 1,
                EventType::Info => c.info += 1,
            }
        }
        c.info += c.invoked.saturating_sub(c.ok + c.fail + c.info);
        c
    }
}

/// The outcome of one run.
#[derive(Clone, Debug)]
pub struct Report {
    /// What ran.
    pub workload: Workload,
    /// The planted bug switched on, if any.
    pub planted: Option<Bug>,
    /// The history.
    pub history: History,
    /// Its operations by outcome.
    pub counts: Counts,
    /// Retries made inside operations (conflicts, recoveries, reconnects).
    pub retries: u64,
    /// Faults that fired, by kind name.
    pub faults: BTreeMap<String, u64>,
    /// Virtual time (simulator only).
    pub virtual_time: Option<Duration>,
    /// Wall-clock time.
    pub wall_time: Duration,
    /// The event-log hash (simulator only).
    pub hash: Option<u64>,
    /// Requests the service processed (simulator only).
    pub requests: Option<u64>,
    /// The verdict.
    pub verdict: Verdict,
    /// The simulator's replay file, when the run recorded its choices.
    pub replay: Option<ReplayFile>,
}

/// Runs the workload's clients and records the history, through the registry: the
/// scenario named by `w` runs its [`Scenario::workload`] on `cluster`.
pub async fn drive<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    let scenario = w.scenario.scenario();
    scenario.workload(AnyCluster::new(cluster), w, rec).await
}

/// Judges a history of `w`'s scenario by the checkers it binds ([`Scenario::checkers`]);
/// `stalls` are operations that missed the deadline (anomalies of kind `liveness`).
pub fn judge(w: &Workload, history: &History, stalls: &[String]) -> Verdict {
    let mut verdict = w.scenario.scenario().checkers(w).judge(history);
    verdict.anomalies.extend(stalls.iter().map(|s| {
        Anomaly::new(
            "liveness",
            format!(
                "liveness: {s} did not finish within {}s",
                OP_DEADLINE.as_secs()
            ),
        )
    }));
    verdict
}

/// The verdict of a run that did not end well: one anomaly of `kind` (`error`, `panic`),
/// told by `message`.
fn failed_run(kind: &str, message: String) -> Verdict {
    Verdict::new("run", "", vec![Anomaly::new(kind, message)])
}

/// The simulator configuration of a run of `w` under `plan`.
///
/// ```
/// use avout_scenarios::scenario::{sim_config, FaultPlan, ScenarioName, Workload};
/// let c = sim_config(&Workload::new(ScenarioName::Counter, 3), &FaultPlan::all());
/// assert_eq!(c.seed, 3);
/// ```
pub fn sim_config(w: &Workload, plan: &FaultPlan) -> SimConfig {
    SimConfig {
        seed: w.seed,
        clients: 0,
        session_timeout: SIM_SESSION_TIMEOUT,
        rates: plan.rates,
        scheduled: plan.scheduled.clone(),
        keep_log: false,
        ..SimConfig::default()
    }
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The planted bug is not compiled in.
    #[error(transparent)]
    Planted(#[from] avout::planted::PlantedError),
    /// The workload could not be set up (an unreachable server, …).
    #[error("{0}")]
    Setup(String),
    /// The workload gave up on a real server (on the simulator that fails the run instead).
    #[error("the workload gave up: {0}")]
    Workload(#[from] WorkloadError),
    /// A replay file's scenario section does not match its simulator section.
    #[error("invalid case file: {0}")]
    Case(String),
}

/// The start of the anomaly that stands for a workload's error (see [`run_sim`]).
pub const ERROR_PREFIX: &str = "error: ";

/// Testing only: turns chosen runs into workload errors (`Some(message)`), so that tests of
/// the tools (explore, soak, shrink) have an error run that no fix of a scenario takes away.
/// Set it once per process; it sees the workload and the history the run recorded.
#[doc(hidden)]
pub static WORKLOAD_ERROR_HOOK: std::sync::OnceLock<fn(&Workload, &History) -> Option<String>> =
    std::sync::OnceLock::new();

/// Runs `w` on the simulator under `plan`. With `record`, the report carries the replay
/// file; with `tapes`, the run takes its choices from a recorded one instead (and `plan` is
/// ignored: the file holds it).
///
/// A workload that gives up is a failed run, not an `Err`: its verdict (checker `run`) has
/// one anomaly, [`ERROR_PREFIX`] and the error, and the report keeps the history and the
/// replay file, so the run is named, recorded, replayed and shrunk like any other failure.
/// `Err` is left for what no seed causes (a planted bug not compiled in, a bad case file).
///
/// ```
/// use avout_scenarios::scenario::{run_sim, FaultPlan, ScenarioName, Workload};
/// let mut w = Workload::new(ScenarioName::Counter, 1);
/// w.ops = 5;
/// let report = run_sim(&w, &FaultPlan::none(), None, false, None).unwrap();
/// assert!(report.verdict.is_valid());
/// assert_eq!(report.counts.invoked as usize, 4 * 5 + 1);
/// ```
pub fn run_sim(
    w: &Workload,
    plan: &FaultPlan,
    planted: Option<Bug>,
    record: bool,
    tapes: Option<&ReplayFile>,
) -> Result<Report, RunError> {
    run_sim_inner(w, plan, planted, record, tapes, false).map(|(report, _)| report)
}

/// [`run_sim`], keeping the simulator's event log when `keep_log` (what a timeline draws).
pub fn run_sim_inner(
    w: &Workload,
    plan: &FaultPlan,
    planted: Option<Bug>,
    record: bool,
    tapes: Option<&ReplayFile>,
    keep_log: bool,
) -> Result<(Report, Vec<avout_sim_zk::LogEvent>), RunError> {
    let bugs = Bugs::plant(planted)?;
    let sim = match tapes {
        Some(file) if keep_log => Sim::from_replay(&ReplayFile {
            config: SimConfig {
                keep_log,
                ..file.config.clone()
            },
            ..file.clone()
        }),
        Some(file) => Sim::from_replay(file),
        None => Sim::builder()
            .config(SimConfig {
                keep_log,
                ..sim_config(w, plan)
            })
            .record_choices(record)
            .build(),
    };
    if w.ref_store == store::RefStoreKind::Postgres {
        return Err(RunError::Setup(
            "the simulator has no PostgreSQL: its ref store is --ref-store memory".into(),
        ));
    }
    let wall = std::time::Instant::now();
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sim.run(|ctx| async move {
            let cluster = SimCluster::new(ctx.zk.clone()).with_ref_store(w.ref_store.in_process());
            let rec = Recorder::new();
            let out = drive(&Planted::new(&cluster, bugs), w, &rec).await;
            (out, rec.finish())
        })
    }));
    let wall_time = wall.elapsed();
    let (result, summary) = match run {
        Ok(done) => done,
        // A broken invariant inside the protocol (or the simulator's time limit): the run
        // fails. Its history is lost with the panic; the seed and plan reproduce it.
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic without a message");
            let report = Report {
                workload: w.clone(),
                planted,
                history: History::default(),
                counts: Counts::default(),
                retries: 0,
                faults: BTreeMap::new(),
                virtual_time: None,
                wall_time,
                hash: None,
                requests: None,
                verdict: failed_run("panic", format!("the run panicked: {message}")),
                replay: record.then(|| ReplayFile {
                    format: avout_sim_zk::REPLAY_FORMAT,
                    config: sim.config().clone(),
                    // No tapes: a replay draws from the seeded streams, as the run did.
                    choices: Default::default(),
                    hash: PANICKED,
                }),
            };
            return Ok((report, Vec::new()));
        }
    };
    let (out, (history, retries, stalls)) = result;
    let out = out.and_then(|()| match WORKLOAD_ERROR_HOOK.get() {
        Some(hook) => hook(w, &history).map_or(Ok(()), |e| Err(WorkloadError::other(e))),
        None => Ok(()),
    });
    // On the simulator nothing outside the system under test can fail, so a workload that
    // gives up (a final read that never succeeds, a step retried to its limit) fails the run
    // as an anomaly does: its seed is named, its history and replay file are kept.
    let verdict = match out {
        Ok(()) => judge(w, &history, &stalls),
        Err(e) => failed_run("error", format!("{ERROR_PREFIX}{e}")),
    };
    let report = Report {
        workload: w.clone(),
        planted,
        counts: Counts::of(&history),
        history,
        retries,
        faults: summary
            .faults
            .iter()
            .map(|(k, n)| (k.name().to_owned(), *n))
            .collect(),
        virtual_time: Some(summary.virtual_time),
        wall_time,
        hash: Some(summary.hash),
        requests: Some(summary.requests),
        verdict,
        replay: summary.replay,
    };
    Ok((report, summary.log))
}

/// Runs `w` against a real ZooKeeper at `cluster` on the current runtime.
pub async fn run_zk<K: Cluster>(
    cluster: &K,
    w: &Workload,
    planted: Option<Bug>,
) -> Result<Report, RunError> {
    let wall = std::time::Instant::now();
    let rec = Recorder::new();
    if !w.ref_store.is_default() && cluster.ref_store().is_none() {
        return Err(RunError::Setup(format!(
            "--ref-store {} needs its store (PostgreSQL: --pg URL)",
            w.ref_store.name()
        )));
    }
    let cluster = Planted::new(cluster, Bugs::plant(planted)?);
    drive(&cluster, w, &rec).await?;
    let (history, retries, stalls) = rec.finish();
    let verdict = judge(w, &history, &stalls);
    Ok(Report {
        workload: w.clone(),
        planted,
        counts: Counts::of(&history),
        history,
        retries,
        faults: BTreeMap::new(),
        virtual_time: None,
        wall_time: wall.elapsed(),
        hash: None,
        requests: None,
        verdict,
        replay: None,
    })
}
