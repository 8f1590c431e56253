//! Barging in protocol Mvcc on the simulated ZooKeeper: an older transaction that writes a ref
//! a younger `RUNNING` one owns kills it once it has run for BARGE-WAIT, the victim retries,
//! and nothing is lost; with BARGE-WAIT out of reach nobody is barged. Replayable from the
//! seed (printed; `AVOUT_SIM_SEED` overrides the default).

use std::time::Duration;

use avout::Client;
use avout::stm::{Abort, Protocol, Ref, Stm, StmConfig, StmStats};

use crate::stm_mvcc::barging_sim;

/// What a contended run did.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) stats: StmStats,
    /// Committed transactions, counted by the clients.
    committed: u64,
    x: i64,
    y: i64,
}

fn sum(stats: impl Iterator<Item = StmStats>) -> StmStats {
    stats.fold(StmStats::default(), |a, b| StmStats {
        commits: a.commits + b.commits,
        retries: a.retries + b.retries,
        barges: a.barges + b.barges,
        killed: a.killed + b.killed,
        ..a
    })
}

/// Client 0 runs long transactions (it moves one unit from `y` to `x`, then works 20 ms before
/// committing); clients 1–3 run the same transfer with 2 ms of work. Every transaction takes
/// both refs' ownership in its body, so an older one finds younger owners still `RUNNING`.
pub(crate) async fn long_and_short(zks: &[Client], barge_wait: Duration) -> Outcome {
    let config = StmConfig {
        barge_wait,
        ..StmConfig::with_protocol(Protocol::Mvcc)
    };
    let mut stms = Vec::new();
    for zk in zks {
        stms.push(Stm::open(zk, "/barge", config.clone()).await.unwrap());
    }
    stms[0].make_ref("x", 0i64).await.unwrap();
    stms[0].make_ref("y", 0i64).await.unwrap();
    let committed = std::sync::atomic::AtomicU64::new(0);
    let clients = stms.iter().enumerate().map(|(c, stm)| {
        let committed = &committed;
        async move {
            let x: Ref<i64> = stm.get_ref("x").unwrap();
            let y: Ref<i64> = stm.get_ref("y").unwrap();
            let (work, n) = if c == 0 {
                (Duration::from_millis(20), 8)
            } else {
                (Duration::from_millis(2), 30)
            };
            for _ in 0..n {
                stm.dosync(async |tx| {
                    tx.alter(&x, |v| v + 1).await?;
                    tx.alter(&y, |v| v - 1).await?;
                    tokio::time::sleep(work).await;
                    Ok::<_, Abort>(())
                })
                .await
                .unwrap();
                committed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    futures::future::join_all(clients).await;
    let x: Ref<i64> = stms[0].get_ref("x").unwrap();
    let y: Ref<i64> = stms[0].get_ref("y").unwrap();
    Outcome {
        stats: sum(stms.iter().map(|s| s.stats())),
        committed: committed.into_inner(),
        x: x.deref().await.unwrap(),
        y: y.deref().await.unwrap(),
    }
}

pub(crate) fn check_nothing_lost(out: &Outcome) {
    assert_eq!(out.committed, 8 + 3 * 30);
    assert_eq!(out.stats.commits, out.committed);
    assert_eq!(out.x, out.committed as i64, "every commit applied once");
    assert_eq!(out.x + out.y, 0, "transfers conserve the total");
    assert!(
        out.stats.killed <= out.stats.barges,
        "a try learns it was killed only from a barge"
    );
}

/// The run of [`long_and_short`] with `barge_wait`, reported and checked for losses.
fn run(barge_wait: Duration) -> Outcome {
    let (out, _) = barging_sim(0xba1, 4, Duration::from_millis(2)).run(|ctx| async move {
        let zks = crate::support::sim_clients(&ctx);
        long_and_short(&zks, barge_wait).await
    });
    eprintln!(
        "Mvcc barging, BARGE-WAIT {barge_wait:?}: {} commits, {} retries, {} barges, {} tries \
         killed",
        out.stats.commits, out.stats.retries, out.stats.barges, out.stats.killed
    );
    check_nothing_lost(&out);
    out
}

/// BARGE-WAIT 1 ms: older transactions barge younger `RUNNING` owners (after their first
/// millisecond), the victims retry, and every transfer applies exactly once.
#[test]
fn mvcc_older_transactions_barge_younger_running_owners() {
    let out = run(Duration::from_millis(1));
    assert!(out.stats.barges > 0, "barging happened: {out:?}");
    assert!(
        out.stats.killed > 0,
        "a victim learnt it was killed: {out:?}"
    );
}

/// The same workload with BARGE-WAIT out of reach: nobody is barged (owners are waited for).
#[test]
fn mvcc_nobody_is_barged_before_barge_wait() {
    let out = run(Duration::from_secs(3600));
    assert_eq!((out.stats.barges, out.stats.killed), (0, 0), "{out:?}");
}
