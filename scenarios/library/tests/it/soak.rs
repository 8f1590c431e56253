//! `avout soak`, and runs that end in an error: explored, soaked, recorded, replayed and
//! shrunk like runs with an anomaly.
//!
//! A run errs here through the test hook [`WORKLOAD_ERROR_HOOK`]: seeds from [`MARK`] up
//! whose history has an indeterminate (`info`) operation give up, as a workload that stops
//! retrying does. No scenario defect is needed, so fixing one does not take the test away;
//! which seeds err is computed by running them, never written down.

use avout_check::history::{EventType, History};
use avout_scenarios::scenario::case::Case;
use avout_scenarios::scenario::explore::explore;
use avout_scenarios::scenario::shrink::shrink;
use avout_scenarios::scenario::soak::{FaultConfig, Soak, soak};
use avout_scenarios::scenario::{ERROR_PREFIX, FaultPlan, Registry, WORKLOAD_ERROR_HOOK, Workload};

/// Seeds from here up may err (no other test uses them).
pub(crate) const MARK: u64 = 1 << 40;

fn gave_up(w: &Workload, history: &History) -> Option<String> {
    (w.seed >= MARK && history.events().iter().any(|e| e.kind == EventType::Info))
        .then(|| "gave up after an indeterminate operation (test hook)".to_owned())
}

/// Installs the hook (once per process).
pub(crate) fn hook() {
    WORKLOAD_ERROR_HOOK.get_or_init(|| gave_up);
}

fn counter(seed: u64) -> Workload {
    let mut w = Registry::builtins().workload("counter", seed).unwrap();
    w.ops = 4;
    w
}

/// The seeds of `seeds` whose run fails, and those whose run errs, run one by one.
fn failing(seeds: std::ops::Range<u64>, plan: &FaultPlan) -> (Vec<u64>, Vec<u64>) {
    let (mut failed, mut erred) = (Vec::new(), Vec::new());
    for seed in seeds {
        let r = Registry::builtins()
            .run(&counter(seed))
            .faults(plan)
            .sim()
            .unwrap();
        if !r.verdict.is_valid() {
            failed.push(seed);
        }
        if r.verdict.problems().any(|a| a.starts_with(ERROR_PREFIX)) {
            erred.push(seed);
        }
    }
    (failed, erred)
}

#[test]
fn an_erring_run_is_a_failure_named_by_its_seed_recorded_replayed_and_shrunk() {
    hook();
    let plan = FaultPlan::all();
    let seeds = MARK..MARK + 40;
    let (failed, erred) = failing(seeds.clone(), &plan);
    assert!(
        !erred.is_empty(),
        "no seed of {seeds:?} erred: widen the range"
    );

    // Explore stops at the lowest failing seed, errors included, on any number of threads.
    for threads in [1, 2] {
        let found = explore(
            &Registry::builtins().run(&counter(MARK)).faults(&plan),
            seeds.clone(),
            threads,
            false,
            &|_| {},
        )
        .unwrap();
        assert_eq!(found.first_failure().unwrap().workload.seed, failed[0]);
    }
    let all = explore(
        &Registry::builtins().run(&counter(MARK)).faults(&plan),
        seeds.clone(),
        2,
        true,
        &|_| {},
    )
    .unwrap();
    let named: Vec<u64> = all.failures.iter().map(|r| r.workload.seed).collect();
    assert_eq!((all.runs, named), (40, failed));

    // The erring seed's case carries the error, and replays to it.
    let case = Case::record(&Registry::builtins(), &counter(erred[0]), &plan, None).unwrap();
    assert!(
        case.anomalies[0].starts_with(ERROR_PREFIX),
        "{:?}",
        case.anomalies
    );
    let back = Case::from_json(&case.to_json()).unwrap();
    let replayed = back.replay(&Registry::builtins()).unwrap();
    assert_eq!(replayed.hash, Some(case.sim.hash));
    assert_eq!(
        replayed.verdict.problems().collect::<Vec<_>>(),
        case.anomalies
    );

    // And shrinks: one operation with the one fault that made it indeterminate.
    let shrunk = shrink(&Registry::builtins(), &case, 500).unwrap();
    assert!(shrunk.scheduled);
    assert!(shrunk.case.anomalies[0].starts_with(ERROR_PREFIX));
    assert!(shrunk.steps.1 <= 3, "{:?}", shrunk.case);
    assert_eq!(
        shrunk.case.plan.scheduled.len(),
        1,
        "{:?}",
        shrunk.case.plan
    );
    assert!(!shrunk.case.plan.rates.any());
}

#[test]
fn soak_counts_errors_and_anomalies_alike_and_records_the_lowest() {
    hook();
    let plan = FaultConfig::all();
    let (failed, _) = failing(MARK..MARK + 12, &plan.plan());
    let mut s = Soak::new(vec!["counter".into()], vec![plan], MARK, 12);
    s.ops = Some(4);
    let report = soak(&Registry::builtins(), &s, &|_| {}).unwrap();
    assert_eq!(report.runs, 12);
    let row = &report.rows[0];
    assert_eq!(row.failed, failed);
    assert_eq!(report.failed(), !failed.is_empty());
    if let Some(&first) = failed.first() {
        let case = row.first.as_ref().unwrap();
        assert_eq!(case.workload.seed, first);
        assert!(!case.anomalies.is_empty());
    }
}

#[test]
fn a_seed_that_runs_differently_twice_fails_the_soak_as_unrepeatable() {
    let registry = Registry::builtins().with(crate::harness::DRIFTING);
    let mut s = Soak::new(
        vec!["test-drifting".into()],
        vec![FaultConfig::none()],
        11,
        4,
    );
    s.repeat = 2;
    let report = soak(&registry, &s, &|_| {}).unwrap();
    let row = &report.rows[0];
    assert!(row.failed.is_empty(), "every run is valid: {row:?}");
    let seeds: Vec<u64> = row.unrepeatable.iter().map(|u| u.seed).collect();
    assert_eq!(seeds, [11, 12], "the first two seeds ran twice and drifted");
    assert!(row.unrepeatable.iter().all(|u| u.first != u.second));
    assert!(report.failed());
    assert_eq!(
        report.runs, 4,
        "a repeat is not counted as a run of its own"
    );
}

#[test]
fn a_soak_of_deterministic_runs_finds_nothing_unrepeatable() {
    let mut s = Soak::new(vec!["counter".into()], vec![FaultConfig::every()], 21, 3);
    s.ops = Some(4);
    let report = soak(&Registry::builtins(), &s, &|_| {}).unwrap();
    assert!(
        report.rows[0].unrepeatable.is_empty(),
        "{:?}",
        report.rows[0]
    );
    assert!(!report.failed());
}

/// Regression: the session scenario's monitor picked between a state change and a timer with
/// an unbiased `tokio::select!`, whose random branch order (seeded by the OS) made this seed
/// log a different run each time; the election latch, the atom watcher, the tree cache and the
/// persistent node did the same. `.ci/determinism` keeps every `select!` biased.
#[test]
fn the_sessions_seed_that_ran_differently_runs_the_same_every_time() {
    let registry = Registry::builtins();
    let w = registry.workload("sessions", 5).unwrap();
    let plan = FaultConfig::every().plan();
    let hashes: Vec<_> = (0..4)
        .map(|_| {
            let r = registry.run(&w).faults(&plan).sim().unwrap();
            (r.hash, r.requests)
        })
        .collect();
    assert!(hashes.iter().all(|h| *h == hashes[0]), "{hashes:?}");
}

/// A transactional scenario is soaked under both protocols: its extra row runs Optimistic
/// (no Mvcc mark reached there), its own row Mvcc.
#[test]
fn a_transactional_scenario_is_soaked_under_both_protocols() {
    use avout::coverage::Mark;
    let mut s = Soak::new(vec!["bank".into()], vec![FaultConfig::all()], 77, 6);
    s.ref_store_rows.clear();
    s.latency_rows.clear();
    let report = soak(&Registry::builtins(), &s, &|_| {}).unwrap();
    let labels: Vec<String> = report.rows.iter().map(|r| r.label()).collect();
    assert_eq!(labels, ["bank", "bank+optimistic"]);
    assert!(!report.failed(), "{:?}", report.rows);
    let blocked = |row: usize| report.rows[row].coverage.get(Mark::StmMvccBlocked).runs;
    assert!(blocked(0) > 0, "{:?}", report.rows[0].coverage);
    assert_eq!(blocked(1), 0, "{:?}", report.rows[1].coverage);
}
