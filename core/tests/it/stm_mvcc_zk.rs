//! Protocol Mvcc on real ZooKeeper (servers started by the test kit): the generic STM cases,
//! history and revert, bank transfers with barging on a standalone server, and bank transfers
//! on a three-server ensemble that loses the member a client is connected to.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use avout::Coordination;
use avout::stm::{Abort, Protocol, Ref, Stm, StmConfig};
use avout::zk::ZkConfig;

use crate::stm_cases;
use crate::support;

const MVCC: Protocol = Protocol::Mvcc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mvcc_cases_history_and_revert_on_a_real_server() {
    let server = support::standalone();
    let zks = support::clients(&ZkConfig::new(server.connect_string()), 3).await;
    stm_cases::semantics(&zks[0], "/mvcc/semantics", MVCC).await;
    stm_cases::history_and_revert(&zks[1], "/mvcc/history", MVCC).await;
    stm_cases::retry_limit(&zks[0], &zks[1], "/mvcc/limit", MVCC).await;
    let (a, b) = (
        stm_cases::open(&zks[0], "/mvcc/skew", MVCC).await,
        stm_cases::open(&zks[1], "/mvcc/skew", MVCC).await,
    );
    assert_eq!(stm_cases::on_call([&a, &b], "ensured", true).await, 1);
    assert_eq!(stm_cases::on_call([&a, &b], "plain", false).await, 0);
    stm_cases::refused_lock_is_the_refusal(&zks[1], "/mvcc/refused").await;
    // Closes zks[2]'s current session (its client opens the next).
    stm_cases::session_loss(
        &zks[2],
        &zks[0],
        "/mvcc/loss",
        StmConfig::with_protocol(MVCC),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mvcc_bank_and_barging_on_a_real_server() {
    const ACCOUNTS: usize = 4;
    const INITIAL: i64 = 100;
    let server = support::standalone();
    let zks = support::clients(&ZkConfig::new(server.connect_string()), 4).await;
    let config = StmConfig {
        barge_wait: Duration::ZERO,
        ..StmConfig::with_protocol(MVCC)
    };
    let mut bank = Vec::new();
    for zk in &zks {
        bank.push(Stm::open(zk, "/mvcc/bank", config.clone()).await.unwrap());
    }
    let barges_before = avout::stm::mvcc::barges();
    let out = stm_cases::bank(&bank, ACCOUNTS, INITIAL, 50, 7).await;
    let barges = avout::stm::mvcc::barges() - barges_before;
    let balances = stm_cases::audit(&bank[0], ACCOUNTS).await;
    eprintln!(
        "Mvcc: {} committed, {} overdrawn, {} retries, {barges} barges, balances {balances:?}",
        out.committed, out.overdrawn, out.retries
    );
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    assert_eq!(out.committed + out.overdrawn, 200);
    assert_eq!(balances.iter().sum::<i64>(), ACCOUNTS as i64 * INITIAL);
    assert!(balances.iter().all(|b| *b >= 0));

    // One hot counter: barges are counted (reported), nothing is lost.
    let before = avout::stm::mvcc::barges();
    let n: Ref<i64> = bank[0].make_ref("n", 0).await.unwrap();
    let workers = bank.iter().map(|stm| async move {
        let n: Ref<i64> = stm.get_ref("n").unwrap();
        for _ in 0..40 {
            stm.dosync(async |tx| tx.alter(&n, |v| v + 1).await)
                .await
                .unwrap();
        }
    });
    futures::future::join_all(workers).await;
    let barges = avout::stm::mvcc::barges() - before;
    eprintln!("Mvcc hot counter: {barges} barges");
    assert_eq!(n.deref().await.unwrap(), 160, "no increment lost");
}

/// The simulator's barging workload (`stm_mvcc_barge`) on a real server: an older client's
/// long transfers against younger short ones, BARGE-WAIT 1 ms: barging happens there too,
/// and nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mvcc_barging_on_a_real_server() {
    let server = support::standalone();
    let zks = support::clients(&ZkConfig::new(server.connect_string()), 4).await;
    let out = crate::stm_mvcc_barge::long_and_short(&zks, Duration::from_millis(1)).await;
    eprintln!(
        "Mvcc barging on ZooKeeper, BARGE-WAIT 1 ms: {} commits, {} retries, {} barges, {} \
         tries killed",
        out.stats.commits, out.stats.retries, out.stats.barges, out.stats.killed
    );
    crate::stm_mvcc_barge::check_nothing_lost(&out);
    assert!(out.stats.barges > 0, "barging happened: {out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mvcc_bank_survives_losing_a_clients_member_of_an_ensemble() {
    const ACCOUNTS: usize = 4;
    const INITIAL: i64 = 100;
    let ensemble = support::ensemble();
    let config =
        ZkConfig::new(ensemble.connect_string()).with_session_timeout(Duration::from_secs(10));
    let zks = support::clients(&config, 3).await;
    let mut stms = Vec::new();
    for zk in &zks {
        stms.push(stm_cases::open(zk, "/mvcc/failover", MVCC).await);
    }
    let accounts: Vec<Ref<i64>> = {
        let mut v = Vec::new();
        for i in 0..ACCOUNTS {
            v.push(
                stms[0]
                    .make_ref(&format!("acct{i}"), INITIAL)
                    .await
                    .unwrap(),
            );
        }
        v
    };
    let killed = AtomicBool::new(false);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let mut started_tx = Some(started_tx);
    let runs = stms.iter().enumerate().map(|(w, stm)| {
        let mut tx = if w == 0 { started_tx.take() } else { None };
        let killed = &killed;
        async move {
            let refs: Vec<Ref<i64>> = (0..ACCOUNTS)
                .map(|i| stm.get_ref(&format!("acct{i}")).unwrap())
                .collect();
            let (mut ok, mut failed, mut after, mut k) = (0u64, Vec::new(), 0, 0usize);
            while after < 30 {
                if killed.load(Ordering::SeqCst) {
                    after += 1;
                }
                if ok == 10
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(());
                }
                k += 1;
                let (from, to) = (&refs[(w + k) % ACCOUNTS], &refs[(w + 2 * k + 1) % ACCOUNTS]);
                if std::ptr::eq(from, to) {
                    continue;
                }
                let r = stm
                    .dosync(async |tx| {
                        tx.alter(from, |v| v - 1).await?;
                        tx.alter(to, |v| v + 1).await?;
                        Ok::<_, Abort>(())
                    })
                    .await;
                match r {
                    Ok(()) => ok += 1,
                    Err(e) => failed.push(e.to_string()),
                }
            }
            (ok, failed)
        }
    });
    let killer = async {
        started_rx.await.expect("client 0 started");
        let session = zks[0].session().id.0;
        let member = tokio::task::block_in_place(|| ensemble.member_of_session(session))
            .expect("the session is on a member");
        tokio::task::block_in_place(|| ensemble.kill(member));
        killed.store(true, Ordering::SeqCst);
        member
    };
    let (results, member) = futures::future::join(futures::future::join_all(runs), killer).await;
    let ok: u64 = results.iter().map(|r| r.0).sum();
    let failed: Vec<String> = results.iter().flat_map(|r| r.1.clone()).collect();
    let mut total = 0;
    for a in &accounts {
        total += a.deref().await.unwrap();
    }
    let stats: Vec<_> = stms.iter().map(Stm::stats).collect();
    eprintln!(
        "killed member {member}; {ok} transfers, failed {failed:?}, total {total}, stats {stats:?}"
    );
    assert_eq!(total, ACCOUNTS as i64 * INITIAL, "money conserved");
    assert!(ok > 0);
    // A commit whose reply was lost is settled by reading, never guessed; only an
    // unresolvable one may be reported.
    assert!(
        failed.iter().all(|f| f.contains("cannot tell")),
        "{failed:?}"
    );
}
