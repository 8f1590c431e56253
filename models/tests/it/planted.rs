//! The models find real bugs: core's planted variants violate the properties, and the
//! counterexample prints as a step-by-step trace.

use avout::planted::Bug;
use avout_models::check::Verdict;
use avout_models::{Config, check_named};

fn counterexample(name: &str, faults: u8, bug: Bug, property: &str) -> String {
    let config = Config {
        faults,
        bug: Some(bug),
        ..Config::default()
    };
    let report = check_named(name, &config).unwrap();
    match &report.property(property).verdict {
        Verdict::Violated(trace) => trace.clone(),
        other => panic!("{bug} not found by {property:?}: {other:?}\n{report}"),
    }
}

#[test]
fn a_lock_without_guid_recovery_leaves_a_second_node() {
    let trace = counterexample("mutex", 1, Bug::LockNoGuidRecovery, "one node per GUID");
    println!("{trace}");
    assert!(trace.contains("REPLY LOST"), "{trace}");
}

#[test]
fn a_lock_without_guid_recovery_deadlocks() {
    let trace = counterexample("mutex", 1, Bug::LockNoGuidRecovery, "every client finishes");
    assert!(trace.contains("REPLY LOST"), "{trace}");
}

#[test]
fn an_atom_write_without_version_check_loses_updates() {
    let trace = counterexample("atom", 0, Bug::AtomUncheckedWrite, "no lost update");
    println!("{trace}");
    assert!(trace.contains("setData /atom version None"), "{trace}");
}
