//! A run of a workload: [`Run`], built from a [`Registry`] and a [`Workload`], made on the
//! simulator ([`Run::sim`]) or on real ZooKeeper ([`Run::zk`]); its [`Report`].
//!
//! A simulated run is a pure function of its seed and fault plan (or of a recorded list of
//! choices): the scenario's workload runs on [`Sim`], every client of it a simulated session,
//! and its history is judged by the checkers the scenario binds. A run on real ZooKeeper
//! runs the same workload on the current runtime.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use avout::planted::{Bug, Bugs};
use avout::stm::store::RefStore;
use avout_check::history::{EventType, History};
use avout_check::{Anomaly, Verdict};
use avout_sim_zk::{LogEvent, ReplayFile, Sim, SimConfig};
use avout_testkit::backend::{Backend, SimBackend};
use serde::{Deserialize, Serialize};

use super::env::{Book, Env, Recorder};
use super::registry::{Registry, Scenario, UnknownScenario};
use super::store::RefStoreKind;
use super::{FaultPlan, Faults, OP_DEADLINE, SIM_SESSION_TIMEOUT, Swarm, Workload, WorkloadError};

/// The event-log hash recorded for a run that panicked (it has none).
pub const PANICKED: u64 = 0;

/// The start of the anomaly that stands for a workload's error (see [`Run::sim`]).
pub const ERROR_PREFIX: &str = "error: ";

/// Testing only: turns chosen runs into workload errors (`Some(message)`), so that tests of
/// the tools (explore, soak, shrink) have an error run that no fix of a scenario takes away.
/// Set it once per process; it sees the workload and the history the run recorded.
#[doc(hidden)]
pub static WORKLOAD_ERROR_HOOK: std::sync::OnceLock<fn(&Workload, &History) -> Option<String>> =
    std::sync::OnceLock::new();

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
    /// The faults it ran under (on the simulator; none on real ZooKeeper).
    pub plan: FaultPlan,
    /// The swarm its plan was drawn from, if it was ([`Run::swarm`]).
    pub swarm: Option<Swarm>,
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
    /// The simulator's replay file, when the run recorded its choices ([`Run::recorded`]).
    pub replay: Option<ReplayFile>,
    /// The simulator's event log, when the run kept it ([`Run::logged`]).
    pub log: Vec<LogEvent>,
    /// The coverage marks the protocol code reached ([`avout::coverage`]; simulator only).
    pub coverage: avout::coverage::Counts,
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The workload names a scenario the registry does not have.
    #[error(transparent)]
    UnknownScenario(#[from] UnknownScenario),
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

/// A run of a workload, built up and then made: its faults, a planted bug, whether it
/// records its choices or replays recorded ones, whether it keeps the simulator's log, and,
/// on real ZooKeeper, the STM's ref store.
///
/// ```
/// use avout_scenarios::scenario::{FaultPlan, Registry};
/// let registry = Registry::builtins();
/// let mut w = registry.workload("counter", 1).unwrap();
/// w.ops = 5;
/// let report = registry.run(&w).faults(&FaultPlan::all()).recorded().sim().unwrap();
/// assert!(report.verdict.is_valid());
/// assert_eq!(report.counts.invoked as usize, 4 * 5 + 1);
/// assert_eq!(report.replay.unwrap().hash, report.hash.unwrap());
/// ```
#[derive(Clone)]
pub struct Run<'a> {
    registry: &'a Registry,
    workload: Workload,
    faults: Faults,
    planted: Option<Bug>,
    record: bool,
    tapes: Option<&'a ReplayFile>,
    keep_log: bool,
    ref_store: Option<Arc<dyn RefStore>>,
}

impl std::fmt::Debug for Run<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("workload", &self.workload)
            .field("faults", &self.faults)
            .field("planted", &self.planted)
            .field("record", &self.record)
            .field("replaying", &self.tapes.is_some())
            .field("keep_log", &self.keep_log)
            .field("ref_store", &self.ref_store.as_ref().map(|s| s.name()))
            .finish_non_exhaustive()
    }
}

impl<'a> Run<'a> {
    /// A run of `workload`, its scenario found in `registry`: no faults, no planted bug,
    /// nothing recorded.
    pub fn new(registry: &'a Registry, workload: &Workload) -> Self {
        Run {
            registry,
            workload: workload.clone(),
            faults: Faults::default(),
            planted: None,
            record: false,
            tapes: None,
            keep_log: false,
            ref_store: None,
        }
    }

    /// The workload it runs.
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// The same, under `plan` on the simulator.
    pub fn faults(mut self, plan: &FaultPlan) -> Self {
        self.faults = Faults::Plan(plan.clone());
        self
    }

    /// The same, under the fault mix its seed draws from `swarm` (swarm testing): each seed
    /// of an exploration or a soak its own.
    ///
    /// ```
    /// use avout_scenarios::scenario::{Registry, Swarm};
    /// let registry = Registry::builtins();
    /// let mut w = registry.workload("counter", 5).unwrap();
    /// w.ops = 3;
    /// let run = registry.run(&w).swarm(&Swarm::default());
    /// assert_eq!(run.plan(), Swarm::default().plan(5));
    /// let report = run.sim().unwrap();
    /// assert_eq!((report.plan, report.swarm), (Swarm::default().plan(5), Some(Swarm::default())));
    /// ```
    pub fn swarm(mut self, swarm: &Swarm) -> Self {
        self.faults = Faults::Swarm(swarm.clone());
        self
    }

    /// The same, under `faults` (a plan, or a swarm).
    pub fn with_faults(mut self, faults: &Faults) -> Self {
        self.faults = faults.clone();
        self
    }

    /// The fault plan of the run: its plan, or the mix its seed draws from its swarm.
    pub fn plan(&self) -> FaultPlan {
        self.faults.plan(self.workload.seed)
    }

    /// The same, with `bug` planted in the handles the workload builds.
    pub fn planted(mut self, bug: Option<Bug>) -> Self {
        self.planted = bug;
        self
    }

    /// The same with the seed `seed`.
    pub fn seed(mut self, seed: u64) -> Self {
        self.workload.seed = seed;
        self
    }

    /// The same, recording the simulator's choices ([`Report::replay`]).
    pub fn recorded(mut self) -> Self {
        self.record = true;
        self
    }

    /// The same, taking the simulator's choices from `tapes` instead of the seed and the
    /// fault plan (the file holds both).
    pub fn replaying(mut self, tapes: &'a ReplayFile) -> Self {
        self.tapes = Some(tapes);
        self
    }

    /// The same, keeping the simulator's event log ([`Report::log`], what a timeline draws).
    pub fn logged(mut self) -> Self {
        self.keep_log = true;
        self
    }

    /// The same, its STM handles keeping their refs' values in `store` on real ZooKeeper
    /// ([`Run::zk`]; `None`: in the nodes). A workload whose `ref_store` is not the nodes
    /// needs one there; on the simulator the run makes its own, in process, from the
    /// workload's kind ([`RefStoreKind::in_process`]), and this one is not used.
    ///
    /// ```
    /// use avout_scenarios::scenario::Registry;
    /// use avout_scenarios::scenario::store::RefStoreKind;
    /// let registry = Registry::builtins();
    /// let w = registry.workload("bank", 1).unwrap();
    /// let run = registry.run(&w).ref_store(RefStoreKind::Memory.in_process());
    /// assert!(format!("{run:?}").contains("memory"));
    /// ```
    pub fn ref_store(mut self, store: Option<Arc<dyn RefStore>>) -> Self {
        self.ref_store = store;
        self
    }

    /// The simulator's configuration for the run.
    ///
    /// ```
    /// use avout_scenarios::scenario::{FaultPlan, Registry};
    /// let registry = Registry::builtins();
    /// let w = registry.workload("counter", 3).unwrap();
    /// assert_eq!(registry.run(&w).faults(&FaultPlan::all()).sim_config().seed, 3);
    /// ```
    pub fn sim_config(&self) -> SimConfig {
        let plan = self.plan();
        let latency = self.workload.latency_ms.map(Duration::from_millis);
        let default = SimConfig::default();
        SimConfig {
            min_latency: latency.unwrap_or(default.min_latency),
            max_latency: latency.unwrap_or(default.max_latency),
            seed: self.workload.seed,
            clients: 0,
            session_timeout: SIM_SESSION_TIMEOUT,
            rates: plan.rates,
            scheduled: plan.scheduled,
            keep_log: self.keep_log,
            ..default
        }
    }

    /// Makes the run on the simulator.
    ///
    /// A workload that gives up is a failed run, not an `Err`: its verdict (checker `run`)
    /// has one anomaly of kind `error`, [`ERROR_PREFIX`] and the error, and the report keeps
    /// the history and the replay file, so the run is named, recorded, replayed and shrunk
    /// like any other failure; a panic likewise (kind `panic`). `Err` is left for what no seed
    /// causes (an unknown scenario, a planted bug not compiled in, a store the simulator does
    /// not have).
    pub fn sim(&self) -> Result<Report, RunError> {
        let scenario = self.registry.get(&self.workload.scenario)?;
        let w = &self.workload;
        let bugs = Bugs::plant(self.planted)?;
        let sim = match self.tapes {
            Some(file) if self.keep_log => Sim::from_replay(&ReplayFile {
                config: SimConfig {
                    keep_log: true,
                    ..file.config.clone()
                },
                ..file.clone()
            }),
            Some(file) => Sim::from_replay(file),
            None => Sim::builder()
                .config(self.sim_config())
                .record_choices(self.record)
                .build(),
        };
        if w.ref_store == RefStoreKind::Postgres {
            return Err(RunError::Setup(
                "the simulator has no PostgreSQL: its ref store is --ref-store memory".into(),
            ));
        }
        let wall = std::time::Instant::now();
        // The run executes on this thread (a current-thread runtime), so this counts its
        // marks alone; counting draws nothing, so the run is the same counted or not.
        let counter = avout::coverage::Counter::start();
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            sim.run(|ctx| async move {
                let backend = SimBackend::new(ctx.zk.clone());
                let env = Env {
                    planted: bugs,
                    ref_store: w.ref_store.in_process(),
                    ..Env::new(&backend)
                };
                let rec = Recorder::new();
                let out = scenario.workload(&env, w, &rec).await;
                (out, rec.finish())
            })
        }));
        let wall_time = wall.elapsed();
        let coverage = counter.finish();
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
                let verdict = failed("panic", format!("the run panicked: {message}"));
                return Ok(Report {
                    replay: self.record.then(|| ReplayFile {
                        format: avout_sim_zk::REPLAY_FORMAT,
                        config: sim.config().clone(),
                        // No tapes: a replay draws from the seeded streams, as the run did.
                        choices: Default::default(),
                        hash: PANICKED,
                    }),
                    coverage,
                    ..self.report(History::default(), 0, verdict, wall_time)
                });
            }
        };
        let (out, book) = result;
        let out = out.and_then(|()| match WORKLOAD_ERROR_HOOK.get() {
            Some(hook) => hook(w, &book.history).map_or(Ok(()), |e| Err(WorkloadError::other(e))),
            None => Ok(()),
        });
        // On the simulator nothing outside the system under test can fail, so a workload that
        // gives up (a final read that never succeeds, a step retried to its limit) fails the
        // run as an anomaly does: its seed is named, its history and replay file are kept.
        let verdict = match out {
            Ok(()) => judge(scenario, w, &book),
            Err(e) => failed("error", format!("{ERROR_PREFIX}{e}")),
        };
        Ok(Report {
            faults: summary
                .faults
                .iter()
                .map(|(k, n)| (k.name().to_owned(), *n))
                .collect(),
            virtual_time: Some(summary.virtual_time),
            hash: Some(summary.hash),
            requests: Some(summary.requests),
            replay: summary.replay,
            log: summary.log,
            coverage,
            ..self.report(book.history, book.retries, verdict, wall_time)
        })
    }

    /// Makes the run against real ZooKeeper through `backend` (a
    /// [`ZkBackend`](avout_testkit::backend::ZkBackend)), on the current runtime (the fault
    /// plan is the simulator's, so it does not apply), with the ref store given to
    /// [`Run::ref_store`].
    pub async fn zk(&self, backend: &dyn Backend) -> Result<Report, RunError> {
        let scenario = self.registry.get(&self.workload.scenario)?;
        let w = &self.workload;
        let wall = std::time::Instant::now();
        let rec = Recorder::new();
        if !w.ref_store.is_default() && self.ref_store.is_none() {
            return Err(RunError::Setup(format!(
                "--ref-store {} needs its store (PostgreSQL: --pg URL)",
                w.ref_store.name()
            )));
        }
        let env = Env {
            planted: Bugs::plant(self.planted)?,
            ref_store: self.ref_store.clone(),
            ..Env::new(backend)
        };
        scenario.workload(&env, w, &rec).await?;
        let book = rec.finish();
        let verdict = judge(scenario, w, &book);
        Ok(Report {
            plan: FaultPlan::none(),
            swarm: None,
            ..self.report(book.history, book.retries, verdict, wall.elapsed())
        })
    }

    /// The report of this run with `history`: what any backend knows of it (no faults, no
    /// virtual time, no hash: the simulator adds those).
    fn report(
        &self,
        history: History,
        retries: u64,
        verdict: Verdict,
        wall_time: Duration,
    ) -> Report {
        Report {
            workload: self.workload.clone(),
            planted: self.planted,
            plan: self.plan(),
            swarm: self.faults.swarm().cloned(),
            counts: Counts::of(&history),
            history,
            retries,
            faults: BTreeMap::new(),
            virtual_time: None,
            wall_time,
            hash: None,
            requests: None,
            verdict,
            replay: None,
            log: Vec::new(),
            coverage: avout::coverage::Counts::default(),
        }
    }
}

/// Judges a history of `w` by the checkers `scenario` binds ([`Scenario::checkers`]);
/// `stalls` are operations that missed the deadline (anomalies of kind `liveness`).
/// The scenario's checkers' verdict on `book`'s history, with the rules on what no history
/// shows: every operation finished (liveness), and a lone client never conflicted.
fn judge(scenario: &dyn Scenario, w: &Workload, book: &Book) -> Verdict {
    let mut verdict = scenario.checkers(w).judge(&book.history);
    verdict.anomalies.extend(book.stalls.iter().map(|s| {
        Anomaly::new(
            "liveness",
            format!(
                "liveness: {s} did not finish within {}s",
                OP_DEADLINE.as_secs()
            ),
        )
    }));
    // A conflict is another transaction's write or lock: with one client there is none, so
    // a conflict is a protocol waiting on itself (its own lock node, a wait that ran out
    // before anyone held the lock), which retries and leaves every history valid.
    if w.clients == 1 && book.conflicts > 0 {
        verdict.anomalies.push(Anomaly::new(
            LONE_CONFLICT,
            format!(
                "{LONE_CONFLICT}: the only client's transactions were retried for {} \
                 conflict(s) with no other transaction",
                book.conflicts
            ),
        ));
    }
    verdict
}

/// The kind of the anomaly of a lone client that conflicted ([`Recorder::stm`]).
pub const LONE_CONFLICT: &str = "lone-conflict";

/// The verdict of a run that did not end well: one anomaly of `kind` (`error`, `panic`),
/// told by `message`.
fn failed(kind: &str, message: String) -> Verdict {
    Verdict::new("run", "", vec![Anomaly::new(kind, message)])
}
