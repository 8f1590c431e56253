//! The application under the simulator (`--cfg madsim` only): its processes as madsim nodes,
//! on sessions of the drop-in `zookeeper-client` that every fault kind reaches, each run
//! judged by avout's mutex checker (the counter) or election checker (the epoch), through
//! avout's harness: seeds, determinism, replay, shrinking, kept cases.
//!
//! `RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR=target/madsim cargo test -p avout-example-zk-counter --test simulated`
#![cfg(madsim)]

mod judge;

use avout_scenarios::harness::{Harness, HarnessError};
use judge::{ZK_COUNTER, ZK_COUNTER_TRUSTING, ZK_ELECTION, every_fault};

#[test]
fn the_counter_holds_under_every_fault_kind() {
    let passed = Harness::new(ZK_COUNTER)
        .faults(every_fault())
        .seeds(0..20)
        .run();
    assert!(passed.seeds > 0);
}

#[test]
fn one_leader_per_term_under_every_fault_kind() {
    let passed = Harness::new(ZK_ELECTION)
        .faults(every_fault())
        .seeds(0..20)
        .run();
    assert!(passed.seeds > 0);
}

/// What the simulator found in `zookeeper-client`'s lock, kept shrunk: with timed-out waits
/// retried on the same session, a wait cancelled while its node's create was outstanding
/// leaves that node first in line for good, and every process waits behind it until it
/// gives up. The kept case must still fail: when `zookeeper-client` fixes its lock, this
/// fails, and the finding can be closed.
#[test]
fn the_finding_in_zookeeper_clients_lock_still_reproduces() {
    let found = Harness::new(ZK_COUNTER_TRUSTING)
        .faults(every_fault())
        .regressions("tests/findings/madsim")
        .seeds(0..0)
        .try_run();
    match found {
        Err(HarnessError::Regression { verdict, file, .. }) => {
            assert!(
                verdict
                    .anomalies
                    .iter()
                    .any(|a| a.message.contains("never succeeded")),
                "{file}: {verdict}"
            );
        }
        Err(other) => panic!("the kept finding no longer fails as it did: {other}"),
        Ok(passed) => panic!("the kept finding no longer fails ({passed:?}): close it"),
    }
}
