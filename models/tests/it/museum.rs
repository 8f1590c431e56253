//! The museum's bugs that the lock models find (feature `planted-bugs`): kazoo #649 in the
//! read-write lock's decision, kazoo #732 in a `try_lock`'s abandonment. The other museum
//! bugs live in code no model steps (the semaphore, the double barrier, the queue, the cache,
//! and the election's handles around its machine).

use avout_models::{Config, check_named};

#[cfg(feature = "planted-bugs")]
use {avout::planted::Bug, avout_models::check::Verdict, avout_models::world::FaultKind};

#[cfg(feature = "planted-bugs")]
fn trace_of(name: &str, config: Config, property: &str) -> String {
    let report = check_named(name, &config).unwrap();
    match &report.property(property).verdict {
        Verdict::Violated(trace) => trace.clone(),
        other => panic!(
            "{:?} not found by {property:?}: {other:?}\n{report}",
            config.bug
        ),
    }
}

#[cfg(feature = "planted-bugs")]
/// A writer and a reader, no fault: the reader that queued first waits for the writer behind
/// it, which waits for the reader.
#[test]
fn kazoo_649_a_reader_and_a_writer_wait_for_each_other() {
    let config = Config {
        faults: 0,
        bug: Some(Bug::Kazoo649),
        ..Config::default()
    };
    let trace = trace_of("rwlock", config, "every client finishes");
    assert!(trace.contains("acquiring the read lock"), "{trace}");
}

#[cfg(feature = "planted-bugs")]
/// Two clients try the lock; the one that finds it held deletes its node, and that request is
/// lost with its connection: the node stays, held by nobody.
#[test]
fn kazoo_732_a_lost_abandonment_leaves_a_node_behind() {
    let config = Config {
        faults: 1,
        kinds: vec![FaultKind::RequestLost],
        bug: Some(Bug::Kazoo732),
        ..Config::default()
    };
    let trace = trace_of("try-mutex", config, "no lock node outlives its acquisition");
    assert!(trace.contains("delete"), "{trace}");
}

/// Without the bug, two clients and one fault of any kind: every property holds, a try does
/// give up, and the space is pinned (5,021 before the release was deferred: its two steps, the
/// unlock and the linger's end or the next create's ride, add the states between them).
#[test]
fn the_try_mutex_model_passes_and_gives_up_sometimes() {
    let report = check_named("try-mutex", &Config::default()).unwrap();
    assert_eq!(report.unique_states, 6_639, "{report}");
    assert!(report.properties.iter().all(|p| p.ok()), "{report}");
    assert!(report.property("a try gave up").ok(), "{report}");
}
