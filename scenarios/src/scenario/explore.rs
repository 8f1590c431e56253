//! Exploring seeds: the same workload and fault plan under many seeds, on every core.
//!
//! A simulated run lives on one current-thread runtime, so exploration runs one OS thread
//! per core, each taking the next seed from a shared counter and running its own
//! simulations. Seeds are handed out in increasing order; after a failure at seed `s`,
//! no seed above the lowest failure found so far is started (unless every failure is
//! wanted), and the seeds below it that are already running finish. So the failure
//! reported first is the lowest failing seed of the range, whatever the thread timing.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use avout::planted::Bug;

use super::{FaultPlan, Report, RunError, Workload, run_sim};

/// What an exploration found.
#[derive(Debug, Default)]
pub struct Exploration {
    /// Seeds run.
    pub runs: u64,
    /// Failing runs, by seed (lowest first).
    pub failures: Vec<Report>,
    /// Simulated requests over all runs.
    pub requests: u64,
}

impl Exploration {
    /// The lowest failing seed, if any.
    pub fn first_failure(&self) -> Option<&Report> {
        self.failures.first()
    }
}

/// Runs `w` (its seed replaced) under `plan` for every seed in `seeds` on `threads` OS
/// threads, stopping after the lowest failure unless `all`; `progress` is called after each
/// run with the number of runs done.
///
/// ```
/// use avout_scenarios::scenario::{explore::explore, FaultPlan, ScenarioName, Workload};
/// let mut w = Workload::new(ScenarioName::Counter, 0);
/// w.ops = 3;
/// let found = explore(&w, &FaultPlan::none(), None, 0..4, 2, false, &|_| {}).unwrap();
/// assert_eq!(found.runs, 4);
/// assert!(found.failures.is_empty());
/// ```
pub fn explore(
    w: &Workload,
    plan: &FaultPlan,
    planted: Option<Bug>,
    seeds: Range<u64>,
    threads: usize,
    all: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Exploration, RunError> {
    let next = AtomicU64::new(seeds.start);
    let lowest_failure = AtomicU64::new(u64::MAX);
    let found = Arc::new(Mutex::new(Exploration::default()));
    let error: Mutex<Option<RunError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let seed = next.fetch_add(1, Ordering::SeqCst);
                    if seed >= seeds.end
                        || (!all && seed > lowest_failure.load(Ordering::SeqCst))
                        || error.lock().expect("not poisoned").is_some()
                    {
                        break;
                    }
                    let run = Workload { seed, ..w.clone() };
                    match run_sim(&run, plan, planted, false, None) {
                        Ok(report) => {
                            let mut f = found.lock().expect("not poisoned");
                            f.runs += 1;
                            f.requests += report.requests.unwrap_or(0);
                            let done = f.runs;
                            if !report.verdict.valid {
                                lowest_failure.fetch_min(seed, Ordering::SeqCst);
                                f.failures.push(report);
                            }
                            drop(f);
                            progress(done);
                        }
                        Err(e) => {
                            *error.lock().expect("not poisoned") = Some(e);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = error.into_inner().expect("not poisoned") {
        return Err(e);
    }
    let mut found = Arc::try_unwrap(found)
        .expect("the threads are done")
        .into_inner()
        .expect("not poisoned");
    found.failures.sort_by_key(|r| r.workload.seed);
    if !all {
        found.failures.truncate(1);
    }
    Ok(found)
}
