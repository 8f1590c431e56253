//! The STM on a real standalone ZooKeeper: the generic cases of `stm_cases`, for every
//! protocol of `stm_cases::protocols`.

use avout::stm::StmConfig;
use avout::zk::ZkConfig;

use crate::stm_cases::{self, protocols};
use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semantics_history_retry_limit_and_session_loss_on_a_real_server() {
    let server = support::standalone();
    for p in protocols() {
        let zks = support::clients(&ZkConfig::new(server.connect_string()), 3).await;
        let root = format!("/stm-{}", p.name());
        stm_cases::semantics(&zks[0], &format!("{root}/semantics"), p).await;
        stm_cases::history_and_revert(&zks[1], &format!("{root}/history"), p).await;
        stm_cases::retry_limit(&zks[0], &zks[1], &format!("{root}/limit"), p).await;
        // Closes zks[2]'s current session (its client opens the next).
        stm_cases::session_loss(
            &zks[2],
            &zks[0],
            &format!("{root}/loss"),
            StmConfig::with_protocol(p),
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bank_write_skew_and_commutes_on_a_real_server() {
    const ACCOUNTS: usize = 4;
    const INITIAL: i64 = 100;
    let server = support::standalone();
    for p in protocols() {
        let zks = support::clients(&ZkConfig::new(server.connect_string()), 4).await;
        let root = format!("/stm-{}", p.name());

        let mut bank = Vec::new();
        for zk in &zks {
            bank.push(stm_cases::open(zk, &format!("{root}/bank"), p).await);
        }
        let out = stm_cases::bank(&bank, ACCOUNTS, INITIAL, 50, 7).await;
        let (balances, count) = stm_cases::audit_with_count(&bank[0], ACCOUNTS).await;
        eprintln!(
            "{p:?}: {} committed, {} overdrawn, {} retries, balances {balances:?}",
            out.committed, out.overdrawn, out.retries
        );
        assert!(out.failed.is_empty(), "{:?}", out.failed);
        assert_eq!(out.committed + out.overdrawn, 200);
        assert_eq!(balances.iter().sum::<i64>(), ACCOUNTS as i64 * INITIAL);
        assert!(balances.iter().all(|b| *b >= 0));
        stm_cases::check_count(&out, count);

        let (a, b) = (
            stm_cases::open(&zks[0], &format!("{root}/skew"), p).await,
            stm_cases::open(&zks[1], &format!("{root}/skew"), p).await,
        );
        assert_eq!(stm_cases::on_call([&a, &b], "ensured", true).await, 1);
        let plain = stm_cases::on_call([&a, &b], "plain", false).await;
        assert_eq!(plain, if stm_cases::validates_reads(p) { 1 } else { 0 });

        let mut counters = Vec::new();
        for zk in &zks {
            counters.push(stm_cases::open(zk, &format!("{root}/commute"), p).await);
        }
        let redos = stm_cases::commutes_never_retry(&counters, 30).await;
        eprintln!("{p:?}: {redos} commit phases redone, no body retried");
    }
}
