//! `avout soak`, and runs that end in an error: explored, soaked, recorded, replayed and
//! shrunk like runs with an anomaly.
//!
//! A run errs here through the test hook [`WORKLOAD_ERROR_HOOK`]: seeds from [`MARK`] up
//! whose history has an indeterminate (`info`) operation give up, as a workload that stops
//! retrying does. No scenario defect is needed, so fixing one does not take the test away;
//! which seeds err is computed by running them, never written down.

use std::process::{Command, Output};

use avout_scenarios::history::{EventType, History};
use avout_scenarios::scenario::case::Case;
use avout_scenarios::scenario::explore::explore;
use avout_scenarios::scenario::shrink::shrink;
use avout_scenarios::scenario::soak::{FaultConfig, Soak, soak};
use avout_scenarios::scenario::{
    ERROR_PREFIX, FaultPlan, ScenarioName, WORKLOAD_ERROR_HOOK, Workload, run_sim,
};

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
    let mut w = Workload::new(ScenarioName::Counter, seed);
    w.ops = 4;
    w
}

/// The seeds of `seeds` whose run fails, and those whose run errs, run one by one.
fn failing(seeds: std::ops::Range<u64>, plan: &FaultPlan) -> (Vec<u64>, Vec<u64>) {
    let (mut failed, mut erred) = (Vec::new(), Vec::new());
    for seed in seeds {
        let r = run_sim(&counter(seed), plan, None, false, None).unwrap();
        if !r.verdict.valid {
            failed.push(seed);
        }
        if r.verdict
            .anomalies
            .iter()
            .any(|a| a.starts_with(ERROR_PREFIX))
        {
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
            &counter(MARK),
            &plan,
            None,
            seeds.clone(),
            threads,
            false,
            &|_| {},
        )
        .unwrap();
        assert_eq!(found.first_failure().unwrap().workload.seed, failed[0]);
    }
    let all = explore(&counter(MARK), &plan, None, seeds.clone(), 2, true, &|_| {}).unwrap();
    let named: Vec<u64> = all.failures.iter().map(|r| r.workload.seed).collect();
    assert_eq!((all.runs, named), (40, failed));

    // The erring seed's case carries the error, and replays to it.
    let case = Case::record(&counter(erred[0]), &plan, None).unwrap();
    assert!(
        case.anomalies[0].starts_with(ERROR_PREFIX),
        "{:?}",
        case.anomalies
    );
    let back = Case::from_json(&case.to_json()).unwrap();
    let replayed = back.replay().unwrap();
    assert_eq!(replayed.hash, Some(case.sim.hash));
    assert_eq!(replayed.verdict.anomalies, case.anomalies);

    // And shrinks: one operation with the one fault that made it indeterminate.
    let shrunk = shrink(&case, 500).unwrap();
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
    let mut s = Soak::new(vec![ScenarioName::Counter], vec![plan], MARK, 12);
    s.ops = Some(4);
    let report = soak(&s, &|_| {}).unwrap();
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

fn avout(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_avout"))
        .args(args)
        .output()
        .expect("the avout binary runs")
}

#[test]
fn avout_soak_prints_its_base_and_a_table_and_exits_zero_when_every_run_passes() {
    let dir = tempfile::tempdir().unwrap();
    let out = avout(&[
        "soak",
        "--seeds",
        "3",
        "--base",
        "5",
        "--scenarios",
        "counter,mutex",
        "--ops",
        "2",
        "--faults",
        "none",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(stdout.contains("base seed 5 (seeds 5..8)"), "{stdout}");
    for row in ["counter none 3 0 -", "mutex none 3 0 -"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().eq(row.split_whitespace())),
            "no row {row:?} in {stdout}"
        );
    }
    assert!(stdout.contains("every run valid"), "{stdout}");
}

#[test]
fn avout_soak_per_kind_and_pairs_make_one_row_per_configuration() {
    let out = avout(&[
        "soak",
        "--seeds",
        "1",
        "--base",
        "0",
        "--scenarios",
        "counter",
        "--ops",
        "1",
        "--per-kind",
        "--pairs",
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["rows"].as_array().unwrap();
    // The 12 kinds (the one-server 7 and the ensemble's 5) alone, then their 66 pairs.
    assert_eq!(rows.len(), 12 + 66, "{report}");
    assert_eq!(rows[0]["faults"], "request-lost");
    assert_eq!(rows[11]["faults"], "slow-disk");
    assert_eq!(rows[12]["faults"], "request-lost+reply-lost");
    assert_eq!(report["base"], 0);
    assert_eq!(
        out.status.code(),
        Some(if report["failed"] == true { 1 } else { 0 })
    );
}

#[cfg(feature = "planted-bugs")]
#[test]
fn avout_soak_names_the_first_failing_seed_writes_its_case_and_exits_one() {
    use avout::planted::Bug;
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "soak",
        "--planted",
        "atom-unchecked-write",
        "--scenarios",
        "counter",
        "--faults",
        "none",
        "--seeds",
        "6",
        "--base",
        "0",
        "--ops",
        "3",
        "--out",
        dir.path().to_str().unwrap(),
    ];
    let out = avout(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let mut w = Workload::new(ScenarioName::Counter, 0);
    w.ops = 3;
    let found = explore(
        &w,
        &FaultPlan::none(),
        Some(Bug::AtomUncheckedWrite),
        0..6,
        2,
        false,
        &|_| {},
    )
    .unwrap();
    let seed = found.first_failure().unwrap().workload.seed;
    let path = dir
        .path()
        .join(format!("counter-none-seed{seed}.case.json"));
    let replay = format!("seed {seed}: avout replay {}", path.display());
    assert!(stdout.contains(&replay), "{replay:?} not in {stdout}");
    assert!(stdout.contains("FAILED      counter (none)"), "{stdout}");
    let replayed = avout(&["replay", path.to_str().unwrap()]);
    assert_eq!(replayed.status.code(), Some(1), "{replayed:?}");
    assert!(String::from_utf8_lossy(&replayed.stdout).contains("same event-log hash"));
}
