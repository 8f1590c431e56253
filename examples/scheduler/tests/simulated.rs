//! The scheduler under the simulator, through avout's harness.

use avout_example_scheduler::SCHEDULER;
use avout_scenarios::harness::Harness;

/// Every job done exactly once and one leader per term, on 20 seeds under every default
/// fault kind (`AVOUT_SEEDS=A..B` for others). With `--features planted` this fails: the
/// harness prints the seed and replay command and shrinks the failure.
#[test]
fn every_job_is_done_exactly_once_under_faults() {
    let passed = Harness::new(SCHEDULER).seeds(0..20).run();
    assert!(passed.seeds > 0);
}

/// One run does the work it claims: every job put, handed out and done, by elected leaders.
#[test]
fn a_run_elects_leaders_that_hand_out_every_job() {
    use avout_scenarios::scenario::{FaultPlan, Registry, Workload};
    let registry = Registry::empty().with(SCHEDULER);
    let w = Workload::new(&SCHEDULER, 1);
    let report = registry.run(&w).faults(&FaultPlan::all()).sim().unwrap();
    assert!(report.verdict.is_valid(), "{}", report.verdict);
    let count = |f: &str| {
        avout_check::history::pairs(&report.history)
            .iter()
            .filter(|p| p.f == f && p.end == avout_check::history::EventType::Ok)
            .count()
    };
    eprintln!(
        "{:?} faults {:?} virtual {:?}",
        report.counts, report.faults, report.virtual_time
    );
    assert_eq!(count("put"), w.ops);
    assert_eq!(count("done"), w.ops);
    assert!(count("assign") >= w.ops && count("lead") >= 1);
}
