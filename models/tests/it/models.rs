//! Every model passes in small configurations, reaches its interesting states, and explores
//! exactly the pinned number of states (a change in a machine or in the model ZooKeeper that
//! changes the state space shows here).

use avout_models::check::Verdict;
use avout_models::{Config, Search, check_named};
use stateright::Expectation;

fn checked(name: &str, clients: u8, faults: u8) -> avout_models::Report {
    let config = Config {
        clients,
        faults,
        ..Config::default()
    };
    let report = check_named(name, &config).expect("a model");
    assert!(
        report.ok(),
        "{name} with {clients} clients, {faults} faults:\n{report}"
    );
    report
}

#[test]
fn mutex_without_faults() {
    let report = checked("mutex", 2, 0);
    assert_eq!(report.unique_states, 224);
    assert_eq!(report.states, 417);
}

#[test]
fn mutex_with_one_fault_recovers_lost_creates_and_is_taken_over_after_expiry() {
    let report = checked("mutex", 2, 1);
    assert_eq!(report.unique_states, 5463);
    for wanted in [
        "taken over from an expired holder",
        "a lost create reply recovered by GUID",
    ] {
        let p = report.property(wanted);
        assert_eq!(p.expectation, Expectation::Sometimes);
        assert!(matches!(p.verdict, Verdict::Found(_)), "{wanted}: {report}");
    }
}

#[test]
fn rwlock_readers_share_and_exclude_the_writer() {
    let report = checked("rwlock", 3, 0);
    assert_eq!(report.unique_states, 11590);
    assert!(matches!(
        report.property("readers share").verdict,
        Verdict::Found(_)
    ));
}

/// Leaders run the production `MonitorMachine` on their node, as `Leadership` does, which
/// more than doubles the states of the lock with the same clients (4,329 for the mutex).
#[test]
fn election_has_one_leader_per_term_and_leaders_learn_of_their_loss() {
    let report = checked("election", 2, 1);
    assert_eq!(report.unique_states, 12951);
    for always in [
        "one leader per term (older leaders expired)",
        "monitor fires only once the leadership is gone",
    ] {
        assert_eq!(report.property(always).verdict, Verdict::Holds, "{always}");
    }
    let Verdict::Found(trace) = &report
        .property("a leader learns its loss (monitor fires)")
        .verdict
    else {
        panic!("no leader learnt: {report}");
    };
    assert!(trace.contains("exists /lock/_c_"), "{trace}");
    assert!(trace.contains("its monitor says: session lost"), "{trace}");
}

#[test]
fn atom_updates_are_neither_lost_nor_doubled() {
    let report = checked("atom", 2, 1);
    assert_eq!(report.unique_states, 1332);
    let report = checked("atom", 3, 0);
    assert_eq!(report.unique_states, 2001);
}

/// The STM under protocol Optimistic: client 0 transfers, client 1 reads both refs
/// (client 2, with three clients, transfers too).
#[test]
fn stm_transfers_are_serializable_and_reads_validated() {
    let report = checked("stm", 2, 0);
    assert_eq!(report.unique_states, 95);
    // Two transfers racing: one is refused and runs again from the refreshed cache.
    let report = checked("stm", 3, 0);
    assert_eq!(report.unique_states, 4719);
    let Verdict::Found(trace) = &report.property("a conflict retried").verdict else {
        panic!("no conflict: {report}");
    };
    assert!(trace.contains("BadVersion"), "{trace}");
}

/// The STM under protocol Mvcc, bounded (its whole state space is far too large for a
/// test): two clients increment `a` through the production `TryMachine`; every schedule of
/// at most 20 steps (a debug build checks it in seconds; the CLI's default bound, 25 steps,
/// also reaches a barge).
#[test]
fn mvcc_bounded_increments_keep_every_safety_property() {
    let config = Config {
        clients: 2,
        faults: 0,
        search: Search {
            max_depth: Some(20),
            ..Search::default()
        },
        ..Config::default()
    };
    let report = check_named("mvcc", &config).expect("a model");
    assert_eq!(report.unique_states, 48377, "{report}");
    for always in [
        "no lost update",
        "applied at most once",
        "acknowledged means applied",
        "a COMMITTING transaction is never killed",
        "only an older transaction barges, after BARGE-WAIT",
        "the newest committed value is never trimmed",
        "retries stay within the limit",
    ] {
        assert_eq!(report.property(always).verdict, Verdict::Holds, "{always}");
    }
    let Verdict::Found(trace) = &report.property("a conflict retried").verdict else {
        panic!("no conflict: {report}");
    };
    assert!(
        trace.contains("BadVersion") || trace.contains("txn"),
        "{trace}"
    );
}

/// Mvcc with a transfer and a reader: the whole state space (no bound is reached), every
/// property as wanted, including the oldest transaction's commit.
#[test]
fn mvcc_bank_whole_space_keeps_snapshots_and_totals() {
    let config = Config {
        clients: 2,
        faults: 0,
        search: Search {
            max_depth: Some(200),
            ..Search::default()
        },
        ..Config::default()
    };
    let report = check_named("mvcc-bank", &config).expect("a model");
    assert!(report.ok(), "{report}");
    assert_eq!(report.unique_states, 70458);
    assert!(report.max_depth < 200, "the bound was reached: {report}");
}

#[test]
fn stm_a_lost_commit_reply_is_decided_by_the_commit_id() {
    let report = checked("stm", 2, 1);
    // 1,371 while a session lost during a refused commit's refresh still counted as a
    // conflict (a retry that could only fail again); trace conformance found it.
    assert_eq!(report.unique_states, 1829);
    for always in [
        "no lost update",
        "applied at most once",
        "acknowledged means applied",
        "validated reads are a snapshot",
        "retries are caused",
    ] {
        assert_eq!(report.property(always).verdict, Verdict::Holds, "{always}");
    }
    let Verdict::Found(trace) = &report.property("a lost commit reply recovered").verdict else {
        panic!("no recovery: {report}");
    };
    assert!(
        trace.contains("multi of 2 ops: multi ok (2 results) — REPLY LOST"),
        "{trace}"
    );
    assert!(trace.contains("sync /stm/refs/a"), "{trace}");
}

#[test]
fn an_example_prints_as_a_numbered_trace() {
    let report = checked("mutex", 2, 1);
    let Verdict::Found(trace) = &report.property("taken over from an expired holder").verdict
    else {
        panic!("no example: {report}");
    };
    assert!(trace.starts_with("initially:\n"), "{trace}");
    assert!(trace.contains("  1. server applies client"), "{trace}");
    assert!(trace.contains("server EXPIRES client"), "{trace}");
    assert!(trace.contains("HOLDS the lock"), "{trace}");
}

#[test]
fn a_depth_bound_stops_the_search_and_leaves_examples_unfound() {
    let config = Config {
        faults: 1,
        search: Search {
            max_depth: Some(4),
            ..Search::default()
        },
        ..Config::default()
    };
    let report = check_named("mutex", &config).unwrap();
    assert!(report.max_depth <= 4, "{report}");
    assert!(report.unique_states < 4329);
    assert_eq!(
        report.property("every client held").verdict,
        Verdict::NotFound
    );
    assert!(!report.ok());
}

#[test]
fn bad_configurations_are_refused() {
    let e = check_named(
        "mutex",
        &Config {
            clients: 9,
            ..Config::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("--clients"), "{e}");
    assert!(check_named("nope", &Config::default()).is_err());
}
