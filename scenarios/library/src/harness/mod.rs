//! A harness for a user's own `cargo test`: a [`Scenario`] run on the simulator over a seed
//! range, every failure named by its seed, recorded, shrunk and kept as a regression case.
//!
//! ```no_run
//! # use avout_scenarios::builtin::counter::SCENARIO as MyScenario;
//! #[test]
//! fn my_scheduler_survives_the_simulator() {
//!     avout_scenarios::harness::Harness::new(MyScenario).seeds(0..50).run();
//! }
//! ```
//!
//! What [`Harness::run`] does, in order:
//!
//! 1. With `AVOUT_REPLAY=FILE` set, it only replays that case file (from its recorded
//!    choices, confirming its event-log hash) and fails if the checker still finds the
//!    anomaly: the replay command a failure prints.
//! 2. It re-runs the cases kept in the regression directory (default
//!    `tests/avout-regressions/`, files `SCENARIO-SEED.json`; `tests/avout-regressions/madsim/`
//!    under `--cfg madsim`) from their seeds and schedules, before any new seed, as proptest
//!    re-runs its persisted failures.
//! 3. It checks determinism: the first seed runs twice and must give the same event-log hash
//!    (madsim's `MADSIM_TEST_CHECK_DETERMINISM`).
//! 4. It runs the seeds (fixed by [`Harness::seeds`], or `AVOUT_SEEDS=A..B`), stopping at the
//!    lowest failing one. The failure's case file is written under the test binary's target
//!    directory (`target/debug/avout-failures/`), shrunk within the budget
//!    ([`crate::scenario::shrink`]), and the shrunk case is kept in the regression
//!    directory. The test fails with the seed, the replay command, both files and the shrunk
//!    schedule.

mod regressions;
mod seeds;

use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

pub use seeds::{BadSeeds, SEEDS_VAR, parse_seeds};

use crate::scenario::case::{Case, CaseError};
use crate::scenario::explore::explore;
use crate::scenario::shrink::{ShrinkError, Shrunk, shrink};
use crate::scenario::{FaultPlan, Registry, Report, RunError, Scenario, Workload};

/// The environment variable naming a case file to replay instead of exploring.
pub const REPLAY_VAR: &str = "AVOUT_REPLAY";

/// The environment variable that overrides the shrinking budget (candidate runs).
pub const BUDGET_VAR: &str = "AVOUT_SHRINK_BUDGET";

/// The default regression directory, relative to the crate under test.
#[cfg(not(madsim))]
pub const DEFAULT_REGRESSIONS: &str = "tests/avout-regressions";

/// The default regression directory under `--cfg madsim`: madsim orders tasks by its own
/// seeded scheduler, so a case shrunk there replays only there (and one kept by the tokio
/// runtime only there); the tokio runtime's loader does not descend into it.
#[cfg(madsim)]
pub const DEFAULT_REGRESSIONS: &str = "tests/avout-regressions/madsim";

/// How many events of the shrunk run a failure shows.
const SHOWN_EVENTS: usize = 60;

/// A scenario run over seeds on the simulator (see the [module docs](self)).
#[derive(Clone, Debug)]
pub struct Harness {
    /// The scenario, the only one its registry has: its case files name it.
    registry: Registry,
    scenario: &'static str,
    seeds: Range<u64>,
    plan: FaultPlan,
    clients: Option<usize>,
    ops: Option<usize>,
    regressions: PathBuf,
    budget: u64,
    threads: usize,
    determinism: bool,
}

/// What a passing harness ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Passed {
    /// Kept regression cases re-run.
    pub regressions: usize,
    /// Seeds run.
    pub seeds: u64,
}

/// Why a harness failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// A seed's run failed; it was recorded and shrunk.
    #[error("{0}")]
    Failed(Box<Failure>),
    /// A kept regression case fails again.
    #[error(
        "the kept regression case {file} fails again (seed {seed}):\n{verdict}\nreplay: {REPLAY_VAR}={file} cargo test {test}"
    )]
    Regression {
        /// Its file.
        file: String,
        /// Its seed.
        seed: u64,
        /// The checker's verdict.
        verdict: Box<avout_check::Verdict>,
        /// The test to run again.
        test: String,
    },
    /// The same seed gave two different runs: something the workload does is not drawn from
    /// the seed (a wall clock, OS randomness, a `HashMap`'s order, a thread).
    #[error(
        "not deterministic: seed {seed} ran twice with event-log hashes {first:#x} and {second:#x}"
    )]
    Nondeterministic {
        /// The seed.
        seed: u64,
        /// The first run's hash.
        first: u64,
        /// The second's.
        second: u64,
    },
    /// The replayed case file does not replay to its hash, or fails.
    #[error("the replay of {file} {what}")]
    Replay {
        /// The case file.
        file: String,
        /// What went wrong.
        what: String,
    },
    /// `AVOUT_SEEDS` does not parse.
    #[error(transparent)]
    Seeds(#[from] BadSeeds),
    /// A run could not be made.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A case file could not be read or written.
    #[error(transparent)]
    Case(#[from] CaseError),
    /// Shrinking could not run.
    #[error(transparent)]
    Shrink(#[from] ShrinkError),
}

/// A failing seed: where it is kept and how to replay it.
#[derive(Debug)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The failing run's anomalies.
    pub anomalies: Vec<String>,
    /// The failing run's case file.
    pub case_file: PathBuf,
    /// The shrunk case, kept in the regression directory (if shrinking kept the failure).
    pub shrunk_file: Option<PathBuf>,
    /// What shrinking made of it.
    pub shrunk: Option<Shrunk>,
    /// The shrunk run's history (Jepsen's JSON lines), replayed from the shrunk case.
    pub shrunk_history: Vec<String>,
    /// The test to run again with [`REPLAY_VAR`].
    pub test: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "seed {} fails:", self.seed)?;
        for a in self.anomalies.iter().take(5) {
            writeln!(f, "  - {a}")?;
        }
        writeln!(f, "case file   {}", self.case_file.display())?;
        writeln!(
            f,
            "replay      {REPLAY_VAR}={} cargo test {}",
            self.case_file.display(),
            self.test
        )?;
        writeln!(
            f,
            "reseed      {SEEDS_VAR}={} cargo test {}",
            self.seed, self.test
        )?;
        if let (Some(shrunk), Some(file)) = (&self.shrunk, &self.shrunk_file) {
            writeln!(f, "shrunk      {}", schedule(shrunk))?;
            for line in self.shrunk_history.iter().take(SHOWN_EVENTS) {
                writeln!(f, "              {line}")?;
            }
            if self.shrunk_history.len() > SHOWN_EVENTS {
                writeln!(
                    f,
                    "              … {} more events",
                    self.shrunk_history.len() - SHOWN_EVENTS
                )?;
            }
            writeln!(
                f,
                "kept        {} (re-run first from now on)",
                file.display()
            )?;
            writeln!(
                f,
                "replay it   {REPLAY_VAR}={} cargo test {}",
                file.display(),
                self.test
            )?;
        }
        Ok(())
    }
}

/// The shrunk schedule in words: steps, the workload's size, every scheduled fault.
///
/// ```
/// # use avout_scenarios::scenario::{case::Case, shrink::Shrunk, FaultPlan, Registry};
/// let registry = Registry::builtins();
/// let mut w = registry.workload("counter", 1).unwrap();
/// w.ops = 1;
/// let case = Case::record(&registry, &w, &FaultPlan::none(), None).unwrap();
/// let s = Shrunk { case, runs: 3, steps: (200, 4), ops: (200, 4), faults: (7, 0), scheduled: true };
/// assert!(avout_scenarios::harness::schedule(&s).starts_with("200 steps → 4"));
/// ```
pub fn schedule(shrunk: &Shrunk) -> String {
    let w = &shrunk.case.workload;
    let mut out = format!(
        "{} steps → {} (seed {}: {} clients × {} ops + {} scheduled faults; {} faults had fired), in {} runs",
        shrunk.steps.0,
        shrunk.steps.1,
        w.seed,
        w.clients,
        w.ops,
        shrunk.faults.1,
        shrunk.faults.0,
        shrunk.runs
    );
    for (when, fault) in &shrunk.case.plan.scheduled {
        let _ = write!(out, "\n              at {when:?}: {fault:?}");
    }
    for a in shrunk.case.anomalies.iter().take(3) {
        let _ = write!(out, "\n              - {a}");
    }
    out
}

impl Harness {
    /// `scenario`, on seeds `0..20` under every default fault kind ([`FaultPlan::all`]), at
    /// its default size.
    pub fn new(scenario: impl Scenario + 'static) -> Self {
        Harness {
            scenario: scenario.name(),
            registry: Registry::empty().with(scenario),
            seeds: 0..20,
            plan: FaultPlan::all(),
            clients: None,
            ops: None,
            regressions: PathBuf::from(DEFAULT_REGRESSIONS),
            budget: 400,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            determinism: true,
        }
    }

    /// The seeds to run when `AVOUT_SEEDS` is not set.
    pub fn seeds(mut self, seeds: Range<u64>) -> Self {
        self.seeds = seeds;
        self
    }

    /// The faults ([`FaultPlan::none`] for none).
    pub fn faults(mut self, plan: FaultPlan) -> Self {
        self.plan = plan;
        self
    }

    /// Clients per run, instead of the scenario's default.
    pub fn clients(mut self, clients: usize) -> Self {
        self.clients = Some(clients);
        self
    }

    /// Operations per client, instead of the scenario's default.
    pub fn ops(mut self, ops: usize) -> Self {
        self.ops = Some(ops);
        self
    }

    /// Where shrunk failures are kept and read back (relative to the crate under test, as
    /// `cargo test` runs there).
    pub fn regressions(mut self, dir: impl Into<PathBuf>) -> Self {
        self.regressions = dir.into();
        self
    }

    /// How many candidate runs shrinking may make (`AVOUT_SHRINK_BUDGET` overrides it).
    pub fn shrink_budget(mut self, runs: u64) -> Self {
        self.budget = runs;
        self
    }

    /// Threads the seeds run on.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Whether to run the first seed twice and compare the hashes (on by default).
    pub fn check_determinism(mut self, on: bool) -> Self {
        self.determinism = on;
        self
    }

    /// Runs it; panics with the failure (seed, replay command, files, shrunk schedule).
    pub fn run(self) -> Passed {
        match self.try_run() {
            Ok(passed) => passed,
            Err(e) => panic!("{e}"),
        }
    }

    /// Runs it (see the [module docs](self)).
    pub fn try_run(self) -> Result<Passed, HarnessError> {
        let test = current_test();
        if let Ok(file) = std::env::var(REPLAY_VAR) {
            return self.replay(Path::new(&file)).map(|()| Passed {
                regressions: 0,
                seeds: 0,
            });
        }
        let kept = regressions::load(&self.regressions, self.scenario)?;
        for (file, case) in &kept {
            let report = case.rerun(&self.registry, None)?;
            if !report.verdict.is_valid() {
                return Err(HarnessError::Regression {
                    file: file.display().to_string(),
                    seed: case.workload.seed,
                    verdict: Box::new(report.verdict),
                    test,
                });
            }
        }
        let seeds = seeds::seeds_or(self.seeds.clone())?;
        let w = self.workload(seeds.start);
        let run = self.registry.run(&w).faults(&self.plan);
        if self.determinism {
            let first = run.sim()?;
            let second = run.sim()?;
            if first.hash != second.hash {
                return Err(HarnessError::Nondeterministic {
                    seed: w.seed,
                    first: first.hash.unwrap_or_default(),
                    second: second.hash.unwrap_or_default(),
                });
            }
        }
        let found = explore(&run, seeds, self.threads, false, &|_| {})?;
        match found.first_failure() {
            None => Ok(Passed {
                regressions: kept.len(),
                seeds: found.runs,
            }),
            Some(report) => Err(self.failed(report, test)),
        }
    }

    /// The workload of `seed`.
    fn workload(&self, seed: u64) -> Workload {
        let scenario = self.registry.get(self.scenario).expect("its own scenario");
        let mut w = Workload::new(scenario, seed);
        w.clients = self.clients.unwrap_or(w.clients);
        w.ops = self.ops.unwrap_or(w.ops);
        w
    }

    /// Records, shrinks and keeps the failure of `report`.
    fn failed(&self, report: &Report, test: String) -> HarnessError {
        let seed = report.workload.seed;
        let case = match Case::record(&self.registry, &report.workload, &self.plan, None) {
            Ok(case) => case,
            Err(e) => return e.into(),
        };
        let case_file = failures_dir().join(format!("{}-{seed}.json", self.scenario));
        if let Err(e) = save(&case, &case_file) {
            return e.into();
        }
        let budget = std::env::var(BUDGET_VAR)
            .ok()
            .and_then(|b| b.parse().ok())
            .unwrap_or(self.budget);
        let (shrunk, shrunk_file) = match shrink(&self.registry, &case, budget) {
            Ok(shrunk) => {
                let file = regressions::path_for(&self.regressions, &shrunk.case);
                if let Err(e) = save(&shrunk.case, &file) {
                    return e.into();
                }
                (Some(shrunk), Some(file))
            }
            // The failure did not come back when re-run from its seed: the case file still
            // replays it from its recorded choices.
            Err(ShrinkError::NotFailing) => (None, None),
            Err(e) => return e.into(),
        };
        let shrunk_history = shrunk
            .as_ref()
            .and_then(|s| s.case.replay(&self.registry).ok())
            .map(|report| history_lines(&report.history))
            .unwrap_or_default();
        HarnessError::Failed(Box::new(Failure {
            shrunk_history,
            seed,
            anomalies: report.verdict.problems().map(str::to_owned).collect(),
            case_file,
            shrunk_file,
            shrunk,
            test,
        }))
    }

    /// Replays the case at `file`: it must replay to its hash, and fails if it still fails.
    fn replay(&self, file: &Path) -> Result<(), HarnessError> {
        let case = Case::load(file)?;
        let report = case.replay(&self.registry)?;
        let problem = |what: String| HarnessError::Replay {
            file: file.display().to_string(),
            what,
        };
        if report.hash != Some(case.sim.hash) {
            return Err(problem(format!(
                "did not reach its event-log hash {:#x} (got {:?}): the code changed since it was recorded; re-run its seed with {SEEDS_VAR}={}",
                case.sim.hash, report.hash, case.workload.seed
            )));
        }
        eprintln!("{}", history_lines(&report.history).join("\n"));
        if report.verdict.is_valid() {
            Ok(())
        } else {
            Err(problem(format!("fails as recorded:\n{}", report.verdict)))
        }
    }
}

/// `history` as Jepsen's JSON lines.
fn history_lines(history: &avout_check::history::History) -> Vec<String> {
    let mut out = Vec::new();
    match history.write_to(&mut out) {
        Ok(()) => String::from_utf8_lossy(&out)
            .lines()
            .map(str::to_owned)
            .collect(),
        Err(e) => vec![format!("(the history could not be written: {e})")],
    }
}

/// Writes `case` to `path`, making its directory.
fn save(case: &Case, path: &Path) -> Result<(), CaseError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| CaseError::Io {
            path: dir.display().to_string(),
            source,
        })?;
    }
    case.save(path)
}

/// Where failing runs' case files go: beside the test binary's profile directory
/// (`target/debug/avout-failures/`), or the temporary directory.
fn failures_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("avout-failures")))
        .unwrap_or_else(|| std::env::temp_dir().join("avout-failures"))
}

/// The running test's name (libtest names its threads after its tests).
fn current_test() -> String {
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("")
        .to_owned()
}
