//! Atom increments on a three-server ensemble that loses, mid-run, the member a writer is
//! connected to: writes in flight when the member dies have unknown outcomes, which the atom
//! must settle (by its writer's entry in the node) without losing or doubling an increment.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use avout::atom::Atom;
use avout::zk::ZkConfig;
use avout::{Client, Coordination};

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn increments_survive_losing_a_writers_server_exactly_once() {
    const AFTER: u64 = 60;
    let ensemble = support::ensemble();
    let config =
        ZkConfig::new(ensemble.connect_string()).with_session_timeout(Duration::from_secs(10));
    let mut clients: Vec<Client> = Vec::new();
    let mut atoms: Vec<Atom<u64>> = Vec::new();
    for _ in 0..3 {
        let client = support::client(&config).await;
        atoms.push(
            Atom::open(&client, "/failover/counter", 0)
                .await
                .expect("open"),
        );
        clients.push(client);
    }

    // Writers run until the member is dead and then some more; writer 0 signals when it is
    // well under way.
    let killed = AtomicBool::new(false);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let mut started_tx = Some(started_tx);
    let runs = atoms.iter().enumerate().map(|(i, atom)| {
        let mut tx = if i == 0 { started_tx.take() } else { None };
        let killed = &killed;
        async move {
            let mut ok = Vec::new();
            let mut failed = Vec::new();
            let mut after = 0;
            while after < AFTER {
                if killed.load(Ordering::SeqCst) {
                    after += 1;
                }
                if ok.len() == 30
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(());
                }
                match atom.swap(|v| v + 1).await {
                    Ok(v) => ok.push(v),
                    Err(e) => failed.push(e.to_string()),
                }
            }
            (ok, failed)
        }
    });
    let killer = async {
        started_rx.await.expect("writer 0 started");
        // The member writer 0's session is on: its in-flight write loses its reply.
        let session = clients[0].session().id.0;
        let member = tokio::task::block_in_place(|| ensemble.member_of_session(session))
            .expect("the session is on a member");
        tokio::task::block_in_place(|| ensemble.kill(member));
        killed.store(true, Ordering::SeqCst);
        member
    };
    let (results, killed) = futures::future::join(futures::future::join_all(runs), killer).await;
    let mut ok: Vec<u64> = results.iter().flat_map(|(ok, _)| ok.clone()).collect();
    let failed: Vec<String> = results.iter().flat_map(|(_, f)| f.clone()).collect();
    ok.sort_unstable();
    let final_value = atoms[1].deref().await.expect("read after failover");
    let stats: Vec<_> = atoms.iter().map(Atom::stats).collect();
    eprintln!(
        "killed member {killed}; {} ok, failed {failed:?}, counter {final_value}, stats {stats:?}",
        ok.len()
    );
    assert!(
        ok.windows(2).all(|w| w[0] < w[1]),
        "two increments saw the same value"
    );
    assert!(failed.is_empty(), "sessions survive a member's death");
    assert_eq!(
        final_value,
        ok.len() as u64,
        "every increment applied exactly once"
    );
}
