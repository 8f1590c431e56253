//! The `sessions` workload on the simulator: clients go on across their own expiries.

use avout_check::history::{EventType, pairs};
use avout_check::recipes::sessions::LEADER_BASE;

use crate::scenario::Registry;

#[test]
fn clients_go_on_across_their_own_expiries_on_the_simulator() {
    let w = Registry::builtins().workload("sessions", 11).unwrap();
    let report = Registry::builtins().run(&w).sim().unwrap();
    assert!(report.verdict.is_valid(), "{}", report.verdict);
    let ops = pairs(&report.history);
    let expiries = ops
        .iter()
        .filter(|o| o.f == "expire" && o.end == EventType::Ok)
        .count();
    assert!(expiries >= 2 * w.clients, "{expiries} expiries");
    // Something of every kind succeeded, leadership and fenced writes included.
    for f in [
        "add", "read", "transfer", "balances", "acquire", "write", "release",
    ] {
        assert!(
            ops.iter().any(|o| o.f == f && o.end == EventType::Ok),
            "no ok {f}"
        );
    }
    assert!(
        ops.iter()
            .any(|o| o.process >= LEADER_BASE && o.f == "write" && o.end == EventType::Ok),
        "no leader wrote"
    );
    // Terms ended by an expiry, and new ones won after.
    assert!(
        ops.iter()
            .any(|o| o.process >= LEADER_BASE && o.f == "release" && o.end == EventType::Info),
        "no leadership was lost"
    );
}
