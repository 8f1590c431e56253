//! The STM with a ref store on a real standalone ZooKeeper, both protocols: the in-process
//! store, and (feature `postgres`) a real PostgreSQL started by the test kit. Values of 2 MiB,
//! twice what a ZooKeeper node holds, round-trip in transactions.

use std::sync::Arc;

use avout::stm::store::{MemoryStore, RefStore};
use avout::zk::ZkConfig;

use crate::stm_cases::protocols;
use crate::stm_store_cases as cases;
use crate::support;

const TWO_MIB: usize = 2 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_store_on_a_real_server() {
    let server = support::standalone();
    for p in protocols() {
        let zks = support::clients(&ZkConfig::new(server.connect_string()), 2).await;
        let root = format!("/mem-{}", p.name());
        let store: Arc<dyn RefStore> = Arc::new(MemoryStore::new());
        cases::large_values(&zks[0], &format!("{root}/large"), p, store.clone(), TWO_MIB).await;
        cases::killed_between_put_and_commit(&zks[0], &zks[1], &format!("{root}/killed"), p, store)
            .await;
        cases::store_failures(&zks[1], &format!("{root}/failures"), p).await;
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use avout::Client;
    use avout::stm::store::PostgresStore;
    use avout::stm::{Protocol, Stm, StmConfig};

    use crate::stm_cases;

    async fn store(pg: &avout_testkit::postgres::PgServer) -> Arc<dyn RefStore> {
        Arc::new(
            PostgresStore::connect(&pg.connect_string())
                .await
                .unwrap_or_else(|e| panic!("cannot connect to PostgreSQL: {e}")),
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_mib_values_and_a_killed_client_with_postgres_on_a_real_server() {
        let server = support::standalone();
        let pg = support::postgres();
        for p in protocols() {
            let zks = support::clients(&ZkConfig::new(server.connect_string()), 2).await;
            let root = format!("/pg-{}", p.name());
            cases::large_values(
                &zks[0],
                &format!("{root}/large"),
                p,
                store(&pg).await,
                TWO_MIB,
            )
            .await;
            cases::killed_between_put_and_commit(
                &zks[0],
                &zks[1],
                &format!("{root}/killed"),
                p,
                store(&pg).await,
            )
            .await;
        }
    }

    async fn open(zk: &Client, root: &str, p: Protocol, store: &Arc<dyn RefStore>) -> Stm {
        Stm::open_with_store(zk, root, StmConfig::with_protocol(p), store.clone())
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bank_with_postgres_on_a_real_server() {
        const ACCOUNTS: usize = 4;
        const INITIAL: i64 = 100;
        let server = support::standalone();
        let pg = support::postgres();
        for p in protocols() {
            let zks = support::clients(&ZkConfig::new(server.connect_string()), 3).await;
            let root = format!("/pg-bank-{}", p.name());
            let store = store(&pg).await;
            let mut bank = Vec::new();
            for zk in &zks {
                bank.push(open(zk, &root, p, &store).await);
            }
            let out = stm_cases::bank(&bank, ACCOUNTS, INITIAL, 30, 11).await;
            let (balances, count) = stm_cases::audit_with_count(&bank[0], ACCOUNTS).await;
            eprintln!(
                "{p:?}: {} committed, {} overdrawn, {} retries, balances {balances:?}",
                out.committed, out.overdrawn, out.retries
            );
            assert!(out.failed.is_empty(), "{:?}", out.failed);
            assert_eq!(out.committed + out.overdrawn, 90);
            assert_eq!(balances.iter().sum::<i64>(), ACCOUNTS as i64 * INITIAL);
            stm_cases::check_count(&out, count);
            let collected = bank[1].collect_garbage().await.unwrap();
            assert!(collected.removed > 0, "{p:?}: {collected:?}");
            // Nothing in flight: what is left is what the refs hold.
            let mut held = 0;
            for i in 0..ACCOUNTS {
                let r = bank[0].get_ref::<i64>(&format!("acct{i}")).unwrap();
                held += r.history().await.unwrap().len();
            }
            let transfers = bank[0].get_ref::<i64>("transfers").unwrap();
            held += transfers.history().await.unwrap().len();
            cases::assert_no_leak(&bank[0], &*store, held).await;
        }
    }
}
