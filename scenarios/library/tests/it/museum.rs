//! The museum (`reports/museum.md`, `--features planted-bugs`): every historical recipe bug
//! re-created in core is still found. For each: its kept case (`scenarios/regressions/BUG.json`,
//! the shrunk first failure) fails with the bug, passes without it and is at most
//! [`MAX_STEPS`] steps with its faults scheduled, and `explore` finds the bug again in its
//! finding scenario within a few seeds of the default fault mix.
//!
//! The seed budgets are each bug's seeds to its first failure (reports/museum.md) with a
//! margin: a change that moves a bug beyond its budget shows as a failure here, and the table
//! says whether it is still found within 1,000 seeds. `explore` stops at the first failure, so
//! a test costs its bug's seeds to find, not its budget.

use avout::planted::Bug;
use avout_scenarios::scenario::explore::explore;
use avout_scenarios::scenario::{FaultPlan, Registry};

use crate::scenarios_planted::regression;

/// The museum's goal for a shrunk case (issue 37): at most this many steps (clients ×
/// operations + scheduled faults).
const MAX_STEPS: usize = 10;

/// `bug`'s kept case fails with it, passes without it and is at most [`MAX_STEPS`] steps with
/// its faults scheduled; `explore` finds it in `scenario` within `seeds` seeds.
fn still_found(bug: Bug, scenario: &str, seeds: u64) {
    let registry = Registry::builtins();
    let case = regression(bug);
    assert_eq!(case.planted, Some(bug));
    assert_eq!(case.workload.scenario, scenario);
    let steps = case.workload.clients * case.workload.ops + case.scheduled_faults();
    let rates = case.plan.rates.any();
    assert!(
        steps <= MAX_STEPS && !rates,
        "{bug}: its kept case is {steps} steps, faults at rates: {rates}"
    );
    let with = case.rerun(&registry, Some(bug)).unwrap();
    assert!(!with.verdict.is_valid(), "{bug}: its kept case passes");
    let without = case.rerun(&registry, None).unwrap();
    assert!(
        without.verdict.is_valid(),
        "{bug}: its kept case fails without the bug: {:?}",
        without.verdict
    );
    let w = registry.workload(scenario, 0).unwrap();
    let run = registry
        .run(&w)
        .faults(&FaultPlan::all())
        .planted(Some(bug));
    let found = explore(&run, 0..seeds, 1, false, &|_| {}).unwrap();
    let failure = found
        .first_failure()
        .unwrap_or_else(|| panic!("{bug}: not found by {scenario} in {seeds} seeds"));
    eprintln!(
        "museum {bug}: found by {scenario} at seed {} of {seeds}",
        failure.workload.seed
    );
}

macro_rules! museum {
    ($($test:ident: $bug:ident in $scenario:literal within $seeds:literal;)*) => {
        $(
            #[test]
            fn $test() {
                still_found(Bug::$bug, $scenario, $seeds);
            }
        )*

        /// Every museum bug has its test above.
        #[test]
        fn every_museum_bug_is_kept() {
            let tested = [$(Bug::$bug),*];
            for bug in Bug::museum() {
                assert!(tested.contains(&bug), "{bug} has no museum test");
            }
        }
    };
}

museum! {
    kazoo_649: Kazoo649 in "rwlock" within 10;
    // 38 since a released node rides with the next acquisition (branch `speed`); 9 before.
    curator_621: Curator621 in "rwlock" within 80;
    kazoo_732: Kazoo732 in "rwlock" within 10;
    curator_335: Curator335 in "semaphore" within 10;
    curator_462: Curator462 in "semaphore" within 10;
    curator_gh_1290: CuratorGh1290 in "double-barrier" within 100;
    zookeeper_1011: Zookeeper1011 in "double-barrier" within 10;
    curator_358: Curator358 in "latch" within 10;
    curator_16: Curator16 in "latch" within 60;
    curator_202: Curator202 in "latch" within 10;
    curator_623: Curator623 in "work-queue" within 10;
    curator_476: Curator476 in "cache" within 400;
    curator_311: Curator311 in "cache" within 10;
}
