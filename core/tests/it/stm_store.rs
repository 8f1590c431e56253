//! The STM with a ref store ([`avout::stm::store`]) on the simulator, both protocols: the
//! cases of `stm_store_cases` with the in-process store, and bank transfers under every fault
//! kind with their values in it.

use std::sync::Arc;
use std::time::Duration;

use avout::Client;
use avout::stm::store::{MemoryStore, RefStore};
use avout::stm::{Protocol, Stm, StmConfig};
use avout_sim_zk::{FaultKind, FaultRates};

use crate::stm::{clients, sim};
use crate::stm_cases::{self, protocols};
use crate::stm_store_cases as cases;
use crate::support::one_kind;

#[test]
fn large_values_round_trip_and_garbage_is_collected_on_the_simulator() {
    for p in protocols() {
        sim(0x5707e, 1, FaultRates::default()).run(|ctx| async move {
            let zk = clients(&ctx).remove(0);
            cases::large_values(&zk, "/stm", p, Arc::new(MemoryStore::new()), 2 << 20).await;
        });
    }
}

#[test]
fn a_client_killed_between_put_and_commit_leaves_no_trace_on_the_simulator() {
    for p in protocols() {
        sim(0x5707f, 2, FaultRates::default()).run(|ctx| async move {
            let zks = clients(&ctx);
            let store = Arc::new(MemoryStore::new());
            cases::killed_between_put_and_commit(&zks[0], &zks[1], "/stm", p, store).await;
        });
    }
}

#[test]
fn store_failures_are_typed_on_the_simulator() {
    for p in protocols() {
        sim(0x57080, 1, FaultRates::default()).run(|ctx| async move {
            let zk = clients(&ctx).remove(0);
            cases::store_failures(&zk, "/stm", p).await;
        });
    }
}

/// Opens an Stm on `client` with `store`, retrying failures.
async fn open_retrying(client: &Client, p: Protocol, store: &Arc<MemoryStore>) -> Stm {
    loop {
        let store: Arc<dyn RefStore> = store.clone();
        match Stm::open_with_store(client, "/bank", StmConfig::with_protocol(p), store).await {
            Ok(stm) => return stm,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

#[test]
fn bank_transfers_with_a_store_conserve_money_under_every_fault_kind() {
    const ACCOUNTS: usize = 5;
    const INITIAL: i64 = 100;
    for p in protocols() {
        for (i, kind) in FaultKind::DEFAULT.into_iter().enumerate() {
            let seed = 0x5707_ba4c + i as u64;
            let rates = one_kind(kind, [0.03, 0.03, 0.01, 0.003, 0.003, 0.05, 0.002]);
            let (out, summary) = sim(seed, 4, rates).run(|ctx| async move {
                let store = Arc::new(MemoryStore::new());
                let zks = clients(&ctx);
                let mut stms = Vec::new();
                for c in &zks {
                    stms.push(open_retrying(c, p, &store).await);
                }
                let out = stm_cases::bank(&stms, ACCOUNTS, INITIAL, 30, seed).await;
                let fresh = Client::connect(ctx.zk.clone()).await.expect("connect");
                let auditor = open_retrying(&fresh, p, &store).await;
                let (balances, count) = stm_cases::audit_with_count(&auditor, ACCOUNTS).await;
                let collected = loop {
                    if let Ok(c) = auditor.collect_garbage().await {
                        break c;
                    }
                };
                (out, balances, count, collected)
            });
            let (out, balances, count, collected) = out;
            eprintln!(
                "{p:?} {:>14}: seed {seed}, {} faults, {} committed, failed {:?}, {} retries, balances {balances:?}, {collected:?}",
                kind.name(),
                summary.fault_count(kind),
                out.committed,
                out.failed,
                out.retries,
            );
            let what = format!("{p:?} {kind:?} seed {seed}");
            stm_cases::check_bank_under_faults(&out, &balances, ACCOUNTS as i64 * INITIAL, &what);
            stm_cases::check_count(&out, count);
            assert!(
                collected.removed > 0,
                "{p:?} {kind:?}: superseded values collected"
            );
        }
    }
}
