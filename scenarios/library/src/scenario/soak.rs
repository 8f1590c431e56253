//! Soaking: every scenario on many seeds under each fault configuration, as a gate.
//!
//! A soak is a grid: scenarios × fault configurations (all kinds together, each kind alone,
//! every pair of kinds, or a list) × the seeds `base..base + seeds`. Every cell of the grid
//! is one simulated run; all of them go through exploration's machinery
//! ([`super::explore`]) as one list, so both cores stay busy across scenarios, and every run
//! is made (a soak counts failures; it does not stop at the first). A failure is any run
//! whose verdict is not valid, an error the workload gave up with included.
//!
//! Each (scenario, configuration) row reports its seeds, its failures and the lowest failing
//! seed, recorded as a [`Case`] (re-run with its choices taped) to be written, replayed and
//! shrunk. The seeds are a function of `base` alone: the same base soaks the same runs.
//!
//! A run is a function of its seed only if nothing in it draws from outside the seed (an
//! unbiased `select!`, a `HashMap`'s order, the clock). So the first [`Soak::repeat`] seeds
//! of every row are run twice, and a seed whose two event logs differ fails the soak as
//! [`Row::unrepeatable`]: a replay that cannot reproduce its run is a failure of the test bed.
//!
//! ```
//! use avout_scenarios::scenario::soak::{FaultConfig, Soak, soak};
//! use avout_scenarios::scenario::Registry;
//! let mut s = Soak::new(vec!["counter".into()], vec![FaultConfig::none()], 7, 3);
//! s.ops = Some(3);
//! let report = soak(&Registry::builtins(), &s, &|_| {}).unwrap();
//! assert_eq!((report.runs, report.rows[0].seeds, report.failed()), (3, 3, false));
//! ```

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use avout::planted::Bug;
use avout_sim_zk::FaultKind;

use super::case::{Case, CaseError};
use super::coverage::Coverage;
use super::explore::explore_runs;
use super::store::RefStoreKind;
use super::{FaultPlan, Faults, Protocol, Registry, Report, RunError, Swarm, Workload};

/// A set of fault kinds, drawn at the simulator's chaos rates, under a short name.
///
/// ```
/// use avout_scenarios::scenario::soak::FaultConfig;
/// assert_eq!(FaultConfig::all().name, "all");
/// assert_eq!(FaultConfig::per_kind().len(), 13);
/// assert_eq!(FaultConfig::pairs().len(), 78);
/// assert_eq!(FaultConfig::every().kinds.len(), 13);
/// assert_eq!(FaultConfig::pairs()[0].name, "request-lost+reply-lost");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultConfig {
    /// `all`, `none`, a kind's name, or kinds joined by `+`.
    pub name: String,
    /// The kinds.
    pub kinds: Vec<FaultKind>,
    /// Whether each seed draws its own mix of the kinds (swarm testing; see [`Swarm`]).
    pub swarm: bool,
}

impl FaultConfig {
    /// The given kinds.
    pub fn of(kinds: &[FaultKind]) -> Self {
        let name = if kinds.is_empty() {
            "none".to_owned()
        } else if FaultKind::ALL.iter().all(|k| kinds.contains(k)) {
            "every".to_owned()
        } else if kinds.len() == FaultKind::DEFAULT.len()
            && FaultKind::DEFAULT.iter().all(|k| kinds.contains(k))
        {
            "all".to_owned()
        } else {
            kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join("+")
        };
        FaultConfig {
            name,
            kinds: kinds.to_vec(),
            swarm: false,
        }
    }

    /// The same kinds under swarm testing: each seed draws which are on and their rates.
    /// Its name is the fixed configuration's with `swarm:` before it.
    ///
    /// ```
    /// use avout_scenarios::scenario::soak::FaultConfig;
    /// let s = FaultConfig::all().swarm();
    /// assert_eq!(s.name, "swarm:all");
    /// assert_ne!(s.faults().plan(1), s.faults().plan(2));
    /// ```
    pub fn swarm(self) -> Self {
        if self.swarm {
            return self;
        }
        FaultConfig {
            name: format!("swarm:{}", self.name),
            swarm: true,
            ..self
        }
    }

    /// Every kind together.
    pub fn all() -> Self {
        FaultConfig::of(&FaultKind::DEFAULT)
    }

    /// Every kind together, the ensemble kinds too.
    pub fn every() -> Self {
        FaultConfig::of(&FaultKind::ALL)
    }

    /// No faults.
    pub fn none() -> Self {
        FaultConfig::of(&[])
    }

    /// Each kind alone.
    pub fn per_kind() -> Vec<Self> {
        FaultKind::ALL
            .iter()
            .map(|k| FaultConfig::of(&[*k]))
            .collect()
    }

    /// Every pair of kinds.
    pub fn pairs() -> Vec<Self> {
        let all = FaultKind::ALL;
        (0..all.len())
            .flat_map(|i| (i + 1..all.len()).map(move |j| FaultConfig::of(&[all[i], all[j]])))
            .collect()
    }

    /// The fault plan of the fixed configuration: these kinds at the chaos mix's rates.
    pub fn plan(&self) -> FaultPlan {
        FaultPlan::kinds(&self.kinds, None)
    }

    /// The faults of its runs: the fixed plan, or a swarm of the kinds.
    pub fn faults(&self) -> Faults {
        if self.swarm {
            Faults::Swarm(Swarm::of(&self.kinds))
        } else {
            Faults::Plan(self.plan())
        }
    }
}

/// What to soak.
#[derive(Clone, Debug)]
pub struct Soak {
    /// The scenarios, by name.
    pub scenarios: Vec<String>,
    /// The fault configurations.
    pub faults: Vec<FaultConfig>,
    /// The first seed.
    pub base: u64,
    /// Seeds per (scenario, configuration).
    pub seeds: u64,
    /// The STM protocol of the transactional scenarios.
    pub protocol: Protocol,
    /// Operations per client (default: each scenario's).
    pub ops: Option<usize>,
    /// A planted bug to switch on.
    pub planted: Option<Bug>,
    /// OS threads.
    pub threads: usize,
    /// Extra rows: a scenario run again with its refs' values in a store, under each fault
    /// configuration. By default bank with the in-process store, when bank is soaked (one
    /// row per configuration more: the soak grows by one scenario's share, about 1/13).
    pub ref_store_rows: Vec<(String, RefStoreKind)>,
    /// How many seeds of each row (the first ones) run twice, their event logs compared.
    pub repeat: u64,
}

/// Seeds of each row run twice by default: a few per row finds a run that draws from outside
/// its seed (such draws are usually in code every run passes through) for under 0.1% more
/// runs on a 10,000-seed soak.
pub const REPEAT: u64 = 8;

impl Soak {
    /// `scenarios` × `faults` on seeds `base..base + seeds`, on every core.
    pub fn new(scenarios: Vec<String>, faults: Vec<FaultConfig>, base: u64, seeds: u64) -> Self {
        Soak {
            faults,
            base,
            seeds,
            protocol: Protocol::default(),
            ops: None,
            planted: None,
            threads: std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            ref_store_rows: if scenarios.iter().any(|s| s == "bank") {
                vec![("bank".to_owned(), RefStoreKind::Memory)]
            } else {
                Vec::new()
            },
            scenarios,
            repeat: REPEAT,
        }
    }

    /// How many rows the soak has.
    ///
    /// ```
    /// use avout_scenarios::scenario::soak::{FaultConfig, Soak};
    /// let s = Soak::new(vec!["bank".into(), "counter".into()], FaultConfig::per_kind(), 1, 1);
    /// assert_eq!(s.rows(), (2 + 1) * 13); // bank again with the memory store
    /// ```
    pub fn rows(&self) -> usize {
        (self.scenarios.len() + self.ref_store_rows.len()) * self.faults.len()
    }

    /// The rows of the grid, in order.
    fn jobs(&self) -> Vec<(&str, RefStoreKind, &FaultConfig)> {
        self.scenarios
            .iter()
            .map(|s| (s.as_str(), RefStoreKind::default()))
            .chain(self.ref_store_rows.iter().map(|(s, k)| (s.as_str(), *k)))
            .flat_map(|(s, k)| self.faults.iter().map(move |f| (s, k, f)))
            .collect()
    }

    /// The workload of a row's `scenario` (found in `registry`) with `seed`.
    fn workload(
        &self,
        registry: &Registry,
        scenario: &str,
        ref_store: RefStoreKind,
        seed: u64,
    ) -> Result<Workload, RunError> {
        let mut w = registry.workload(scenario, seed)?;
        w.ref_store = ref_store;
        w.protocol = self.protocol;
        if let Some(ops) = self.ops {
            w.ops = ops;
        }
        Ok(w)
    }
}

/// One (scenario, fault configuration) row of a soak.
#[derive(Clone, Debug)]
pub struct Row {
    /// The scenario.
    pub scenario: String,
    /// Where its refs' values lived.
    pub ref_store: RefStoreKind,
    /// The fault configuration.
    pub faults: FaultConfig,
    /// Seeds run.
    pub seeds: u64,
    /// Failing seeds, lowest first.
    pub failed: Vec<u64>,
    /// The lowest failing seed's run, recorded.
    pub first: Option<Case>,
    /// The coverage marks its runs reached.
    pub coverage: Coverage,
    /// Seeds whose two runs logged different events, lowest first, with both logs' hashes:
    /// the run drew from something other than its seed, so it cannot be replayed.
    pub unrepeatable: Vec<Unrepeatable>,
}

/// A seed whose two runs differed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unrepeatable {
    /// The seed.
    pub seed: u64,
    /// The first run's event-log hash and simulated requests.
    pub first: (Option<u64>, Option<u64>),
    /// The second run's.
    pub second: (Option<u64>, Option<u64>),
}

impl Row {
    /// The row's scenario as the soak shows it: its name, with the store when its values
    /// were not in the nodes (`bank+memory`).
    ///
    /// ```
    /// use avout_scenarios::scenario::soak::{FaultConfig, Row};
    /// use avout_scenarios::scenario::store::RefStoreKind;
    /// let row = Row { scenario: "bank".into(), ref_store: RefStoreKind::Memory, faults: FaultConfig::none(), seeds: 1, failed: vec![], first: None, coverage: Default::default(), unrepeatable: vec![] };
    /// assert_eq!(row.label(), "bank+memory");
    /// ```
    pub fn label(&self) -> String {
        if self.ref_store.is_default() {
            self.scenario.clone()
        } else {
            format!("{}+{}", self.scenario, self.ref_store.name())
        }
    }
}

/// What a soak found.
#[derive(Clone, Debug)]
pub struct SoakReport {
    /// One row per (scenario, configuration), in the soak's order.
    pub rows: Vec<Row>,
    /// Runs made.
    pub runs: u64,
    /// Simulated requests over all runs.
    pub requests: u64,
    /// Wall-clock time.
    pub wall_time: Duration,
}

impl SoakReport {
    /// Whether any run failed.
    pub fn failed(&self) -> bool {
        self.rows
            .iter()
            .any(|r| !r.failed.is_empty() || !r.unrepeatable.is_empty())
    }

    /// The coverage marks of every row's runs together.
    pub fn coverage(&self) -> Coverage {
        let mut all = Coverage::default();
        for row in &self.rows {
            all.merge(&row.coverage);
        }
        all
    }
}

/// Runs the soak; `progress` is called after each run with the number of runs done.
/// `Err` only for what no seed causes (a planted bug that is not compiled in).
///
/// # Panics
///
/// If `base + seeds` overflows a `u64`.
pub fn soak(
    registry: &Registry,
    s: &Soak,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<SoakReport, RunError> {
    assert!(
        s.base.checked_add(s.seeds).is_some(),
        "seeds {}..{}+{} overflow",
        s.base,
        s.base,
        s.seeds
    );
    let wall = Instant::now();
    let jobs = s.jobs();
    // Every row's scenario is known before any run is made.
    let workloads = jobs
        .iter()
        .map(|(scenario, ref_store, _)| s.workload(registry, scenario, *ref_store, s.base))
        .collect::<Result<Vec<Workload>, RunError>>()?;
    let faults: Vec<Faults> = jobs.iter().map(|(_, _, f)| f.faults()).collect();
    let per_job = s.seeds.max(1);
    let coverage: Vec<Mutex<Coverage>> = jobs.iter().map(|_| Mutex::default()).collect();
    let unrepeatable = std::sync::Mutex::new(Vec::new());
    let found = explore_runs(
        jobs.len() as u64 * s.seeds,
        s.threads,
        true,
        progress,
        &|i| {
            let job = (i / per_job) as usize;
            let seed = s.base + i % per_job;
            let run = || {
                registry
                    .run(&workloads[job])
                    .seed(seed)
                    .with_faults(&faults[job])
                    .planted(s.planted)
                    .sim()
            };
            let mut report = run()?;
            if i % per_job < s.repeat {
                let again = run()?;
                let logged = |r: &Report| (r.hash, r.requests);
                if logged(&report) != logged(&again) {
                    unrepeatable.lock().expect("not poisoned").push((
                        job,
                        Unrepeatable {
                            seed,
                            first: logged(&report),
                            second: logged(&again),
                        },
                    ));
                }
            }
            // Only the count and the seeds of failures are kept; the lowest is re-run below.
            coverage[job]
                .lock()
                .expect("not poisoned")
                .add_run(&report.coverage);
            report.history = Default::default();
            Ok(report)
        },
    )?;
    let mut rows: Vec<Row> = jobs
        .iter()
        .zip(coverage)
        .map(|((scenario, ref_store, faults), coverage)| Row {
            scenario: (*scenario).to_owned(),
            ref_store: *ref_store,
            faults: (*faults).clone(),
            seeds: s.seeds,
            failed: Vec::new(),
            first: None,
            coverage: coverage.into_inner().expect("not poisoned"),
            unrepeatable: Vec::new(),
        })
        .collect();
    let mut unrepeatable = unrepeatable.into_inner().expect("not poisoned");
    unrepeatable.sort_by_key(|(job, u)| (*job, u.seed));
    for (job, u) in unrepeatable {
        rows[job].unrepeatable.push(u);
    }
    for (i, _) in &found.failures {
        rows[(i / per_job) as usize]
            .failed
            .push(s.base + i % per_job);
    }
    for ((row, faults), w) in rows.iter_mut().zip(&faults).zip(&workloads) {
        if let Some(&seed) = row.failed.first() {
            // The same run (a function of its seed), its choices taped for the case file.
            let w = Workload { seed, ..w.clone() };
            row.first = Some(Case::record_faults(registry, &w, faults, s.planted)?);
        }
    }
    Ok(SoakReport {
        rows,
        runs: found.runs,
        requests: found.requests,
        wall_time: wall.elapsed(),
    })
}

/// A kept regression case, run again.
#[derive(Clone, Debug)]
pub struct Kept {
    /// Its file.
    pub path: PathBuf,
    /// The failure it was kept for.
    pub anomaly: String,
    /// The planted bug the case was kept with, if any: the rerun leaves it out.
    pub planted: Option<Bug>,
    /// The run now.
    pub report: Report,
}

/// Runs every kept case (`*.json` in `dir`, in name order) again from its seed and fault
/// plan, without its planted bug: a failure found once is run first, every time, and the
/// correct code must pass it. (A case kept with a planted bug, the museum's among them, is
/// the bug's shrunk failure: that it still fails *with* the bug is its test's to check, in a
/// build with the feature; here it guards the correct code, in any build.)
///
/// ```
/// let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../regressions");
/// let registry = avout_scenarios::scenario::Registry::builtins();
/// let kept = avout_scenarios::scenario::soak::rerun_kept(&registry, &dir).unwrap();
/// assert!(!kept.is_empty());
/// assert!(kept.iter().all(|k| k.report.verdict.is_valid()), "{kept:?}");
/// ```
pub fn rerun_kept(registry: &Registry, dir: &Path) -> Result<Vec<Kept>, CaseError> {
    let io = |source| CaseError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let case = Case::load(&path)?;
            let report = case.rerun(registry, None)?;
            let anomaly = case.anomalies.first().cloned().unwrap_or_default();
            Ok(Kept {
                path,
                anomaly,
                planted: case.planted,
                report,
            })
        })
        .collect()
}
