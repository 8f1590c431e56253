//! Exploring seeds: the same workload and fault plan under many seeds, on every core.
//!
//! A simulated run lives on one current-thread runtime, so exploration runs one OS thread
//! per core, each taking the next run from a shared counter and running its own
//! simulations. Runs are handed out in increasing order; after a failure at run `i`, no run
//! above the lowest failure found so far is started (unless every failure is wanted), and
//! the runs below it that are already going finish. So the failure reported first is the
//! lowest failing seed of the range, whatever the thread timing.
//!
//! A failure is a run whose verdict is not valid: an anomaly the checker found, a missed
//! deadline, a panic, or an error the workload gave up with (see [`Run::sim`]). All
//! are counted and named by their seed alike. Only what no seed causes (a planted bug that
//! is not compiled in) stops exploration with `Err`.
//!
//! [`explore`] runs one workload over a range of seeds; [`super::soak`] runs many
//! (scenario, fault configuration) pairs through the same machinery (`explore_runs`).

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Report, Run, RunError};

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

/// What [`explore_runs`] found: failing runs by their index.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    /// Runs made.
    pub(crate) runs: u64,
    /// Failing runs, by index (lowest first).
    pub(crate) failures: Vec<(u64, Report)>,
    /// Simulated requests over all runs.
    pub(crate) requests: u64,
}

/// Runs `run(i)` for every `i` in `0..count` on `threads` OS threads, handing the indices
/// out in increasing order; unless `all`, stops after the lowest failing index (see the
/// module docs). `progress` is called after each run with the number of runs done.
pub(crate) fn explore_runs(
    count: u64,
    threads: usize,
    all: bool,
    progress: &(dyn Fn(u64) + Sync),
    run: &(dyn Fn(u64) -> Result<Report, RunError> + Sync),
) -> Result<Runs, RunError> {
    let next = AtomicU64::new(0);
    let lowest_failure = AtomicU64::new(u64::MAX);
    let found = Mutex::new(Runs::default());
    let error: Mutex<Option<RunError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= count
                        || (!all && i > lowest_failure.load(Ordering::SeqCst))
                        || error.lock().expect("not poisoned").is_some()
                    {
                        break;
                    }
                    match run(i) {
                        Ok(report) => {
                            let mut f = found.lock().expect("not poisoned");
                            f.runs += 1;
                            f.requests += report.requests.unwrap_or(0);
                            let done = f.runs;
                            if !report.verdict.is_valid() {
                                lowest_failure.fetch_min(i, Ordering::SeqCst);
                                f.failures.push((i, report));
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
    let mut found = found.into_inner().expect("not poisoned");
    found.failures.sort_by_key(|(i, _)| *i);
    if !all {
        found.failures.truncate(1);
    }
    Ok(found)
}

/// Makes `run` (its seed replaced) for every seed in `seeds` on `threads` OS threads,
/// stopping after the lowest failure unless `all`; `progress` is called after each run with
/// the number of runs done.
///
/// ```
/// use avout_scenarios::scenario::{explore::explore, FaultPlan, Registry};
/// let registry = Registry::builtins();
/// let mut w = registry.workload("counter", 0).unwrap();
/// w.ops = 3;
/// let found = explore(&registry.run(&w), 0..4, 2, false, &|_| {}).unwrap();
/// assert_eq!(found.runs, 4);
/// assert!(found.failures.is_empty());
/// ```
pub fn explore(
    run: &Run<'_>,
    seeds: Range<u64>,
    threads: usize,
    all: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Exploration, RunError> {
    let count = seeds.end.saturating_sub(seeds.start);
    let found = explore_runs(count, threads, all, progress, &|i| {
        run.clone().seed(seeds.start + i).sim()
    })?;
    Ok(Exploration {
        runs: found.runs,
        failures: found.failures.into_iter().map(|(_, r)| r).collect(),
        requests: found.requests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use avout_check::{Anomaly, Verdict};

    fn report(valid: bool) -> Report {
        let w = crate::scenario::Registry::builtins()
            .workload("counter", 0)
            .expect("a built-in");
        Report {
            workload: w,
            planted: None,
            plan: Default::default(),
            swarm: None,
            coverage: Default::default(),
            history: Default::default(),
            counts: Default::default(),
            retries: 0,
            faults: Default::default(),
            virtual_time: None,
            wall_time: Default::default(),
            hash: None,
            requests: Some(1),
            log: Vec::new(),
            verdict: Verdict::new(
                "test",
                "",
                if valid {
                    vec![]
                } else {
                    vec![Anomaly::new("bad", "bad")]
                },
            ),
            replay: None,
        }
    }

    #[test]
    fn the_lowest_failing_index_is_reported_whatever_the_threads() {
        // Indices 7 and 3 fail; 7 is made fast and 3 slow, so a racing thread finds 7 first.
        for threads in [1, 2, 4] {
            let found = explore_runs(20, threads, false, &|_| {}, &|i| {
                if i == 3 {
                    std::thread::sleep(std::time::Duration::from_millis(30));
                }
                Ok(report(i != 3 && i != 7))
            })
            .unwrap();
            assert_eq!(found.failures.len(), 1);
            assert_eq!(found.failures[0].0, 3, "{threads} threads");
            assert!(found.runs >= 4);
        }
        let all = explore_runs(20, 2, true, &|_| {}, &|i| Ok(report(i != 3 && i != 7))).unwrap();
        let failed: Vec<u64> = all.failures.iter().map(|(i, _)| *i).collect();
        assert_eq!((all.runs, failed), (20, vec![3, 7]));
    }
}
