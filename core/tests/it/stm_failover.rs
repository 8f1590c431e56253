//! STM bank transfers on a three-server ensemble that loses, mid-run, the member a client is
//! connected to: commits in flight lose their replies and must be settled (by the commit id
//! in the written nodes) without losing or doubling a transfer — money stays conserved.

use std::time::Duration;

use avout::zk::ZkConfig;
use avout::{Client, Coordination};

use crate::stm_cases::{self, protocols};
use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_conserve_money_when_a_clients_server_dies() {
    const ACCOUNTS: usize = 4;
    const INITIAL: i64 = 100;
    let ensemble = support::ensemble();
    let config =
        ZkConfig::new(ensemble.connect_string()).with_session_timeout(Duration::from_secs(10));
    for p in protocols() {
        let mut clients: Vec<Client> = Vec::new();
        let mut stms = Vec::new();
        let root = format!("/failover-{}", p.name());
        for _ in 0..3 {
            let zk = support::client(&config).await;
            stms.push(stm_cases::open(&zk, &root, p).await);
            clients.push(zk);
        }
        let warm = stm_cases::bank(&stms, ACCOUNTS, INITIAL, 10, 1).await;
        assert!(warm.failed.is_empty(), "{:?}", warm.failed);
        let killer = async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            let session = clients[0].session().id.0;
            let member = tokio::task::block_in_place(|| ensemble.member_of_session(session))
                .expect("the session is on a member");
            tokio::task::block_in_place(|| ensemble.kill(member));
            member
        };
        let (out, member) =
            futures::future::join(stm_cases::bank(&stms, ACCOUNTS, INITIAL, 60, 2), killer).await;
        let (balances, count) = stm_cases::audit_with_count(&stms[1], ACCOUNTS).await;
        let recoveries: u64 = stms.iter().map(|s| s.stats().recoveries).sum();
        eprintln!(
            "{p:?}: killed member {member}; {} committed, {} overdrawn, failed {:?}, {} retries, {recoveries} commits settled after a lost reply, balances {balances:?}",
            out.committed, out.overdrawn, out.failed, out.retries
        );
        assert_eq!(balances.iter().sum::<i64>(), ACCOUNTS as i64 * INITIAL);
        assert!(balances.iter().all(|b| *b >= 0));
        // The count includes the warm-up's transfers.
        stm_cases::check_count(&out, count - warm.committed as i64);
        let unexpected: Vec<_> = out
            .failed
            .keys()
            .filter(|k| **k != "indeterminate")
            .collect();
        assert!(unexpected.is_empty(), "{p:?}: {:?}", out.failed);
        assert!(out.committed > 0);
        // The next protocol's clients need a quorum and the dead member back.
        tokio::task::block_in_place(|| ensemble.restart(member)).expect("restart the member");
    }
}
