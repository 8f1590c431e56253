//! The barrier and the double barrier on a real standalone server, one session per process.

use std::time::Duration;

use avout::Coordination;
use avout::recipes::barrier::{Barrier, BarrierError};
use avout::recipes::double_barrier::DoubleBarrier;
use avout::zk::ZkConfig;

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_are_held_while_the_barrier_stands_and_released_together() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let zk = support::clients(&config, 4).await;
    let gate = Barrier::new(&zk[0], "/it/gate").expect("barrier");
    gate.wait().await.expect("no barrier: no wait");
    gate.set().await.expect("set");
    gate.set().await.expect("setting twice is fine");
    assert!(gate.is_set().await.expect("is_set"));

    let waiters: Vec<_> = zk[1..]
        .iter()
        .map(|zk| {
            let b = Barrier::new(zk, "/it/gate").expect("barrier");
            tokio::spawn(async move { b.wait().await })
        })
        .collect();
    assert_eq!(
        Barrier::new(&zk[1], "/it/gate")
            .expect("barrier")
            .wait_for(Duration::from_millis(300))
            .await,
        Err(BarrierError::TimedOut)
    );
    assert!(
        waiters.iter().all(|w| !w.is_finished()),
        "held by the barrier"
    );
    gate.remove().await.expect("remove");
    for w in waiters {
        tokio::time::timeout(Duration::from_secs(5), w)
            .await
            .expect("released")
            .expect("task")
            .expect("wait");
    }
    gate.remove().await.expect("removing twice is fine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_barrier_enters_when_all_arrive_and_leaves_when_all_leave() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let zk = support::clients(&config, 3).await;
    let handles: Vec<_> = zk
        .iter()
        .map(|zk| DoubleBarrier::new(zk, "/it/round", 3).expect("double barrier"))
        .collect();

    let early: Vec<_> = handles[..2]
        .iter()
        .map(|b| {
            let b = b.clone();
            tokio::spawn(async move { b.enter().await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        early.iter().all(|e| !e.is_finished()),
        "two of three cannot enter"
    );
    let last = handles[2].enter().await.expect("the third enters");
    let mut inside = vec![last];
    for e in early {
        inside.push(
            tokio::time::timeout(Duration::from_secs(5), e)
                .await
                .expect("the first two enter too")
                .expect("task")
                .expect("enter"),
        );
    }
    // Each guard names its own participant node, one of the barrier's children.
    let (children, _) = zk[0].get_children("/it/round").await.expect("children");
    let mut ours: Vec<&str> = inside.iter().map(|g| g.node()).collect();
    ours.sort_unstable();
    ours.dedup();
    assert_eq!(ours.len(), 3, "three distinct nodes: {ours:?}");
    for node in &ours {
        let name = node.strip_prefix("/it/round/").expect("under the barrier");
        assert!(children.iter().any(|c| c == name), "{node} in {children:?}");
    }

    let straggler = inside.remove(0);
    let leaving: Vec<_> = inside
        .into_iter()
        .map(|g| tokio::spawn(async move { g.leave().await }))
        .collect();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        leaving.iter().all(|l| !l.is_finished()),
        "nobody leaves before the last participant does"
    );
    straggler.leave().await.expect("the last leaves");
    for l in leaving {
        tokio::time::timeout(Duration::from_secs(5), l)
            .await
            .expect("the others leave too")
            .expect("task")
            .expect("leave");
    }
    let (children, _) = zk[0].get_children("/it/round").await.expect("children");
    assert!(
        children.is_empty(),
        "participants and ready are gone: {children:?}"
    );

    // The path is ready for another round.
    let again: Vec<_> = handles
        .iter()
        .map(|b| {
            let b = b.clone();
            tokio::spawn(async move { b.enter().await?.leave().await })
        })
        .collect();
    for r in again {
        tokio::time::timeout(Duration::from_secs(10), r)
            .await
            .expect("a second round completes")
            .expect("task")
            .expect("round");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_participant_whose_session_expires_does_not_block_leaving() {
    let server = support::standalone();
    let config =
        ZkConfig::new(server.connect_string()).with_session_timeout(Duration::from_secs(4));
    let zk = support::sessions(&config, 3).await;
    // Managed clients on these sessions: a double-barrier guard stays on the session it
    // entered on, so the expired participant's guard is lost even though its client has
    // opened a new session.
    let entering: Vec<_> = zk
        .iter()
        .map(|zk| {
            let client = support::adopt(&config, zk);
            let b = DoubleBarrier::new(&client, "/it/doomed", 3).expect("double barrier");
            tokio::spawn(async move { b.enter().await })
        })
        .collect();
    let mut inside = Vec::new();
    for e in entering {
        inside.push(
            tokio::time::timeout(Duration::from_secs(10), e)
                .await
                .expect("all enter")
                .expect("task")
                .expect("enter"),
        );
    }
    let doomed = inside.pop().expect("three inside");
    let leaving: Vec<_> = inside
        .into_iter()
        .map(|g| tokio::spawn(async move { g.leave().await }))
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        leaving.iter().all(|l| !l.is_finished()),
        "waiting for the third"
    );
    zk[2].expire_session().await.expect("expire");
    for l in leaving {
        tokio::time::timeout(Duration::from_secs(10), l)
            .await
            .expect("the survivors leave")
            .expect("task")
            .expect("leave");
    }
    assert!(matches!(
        doomed.leave().await,
        Err(BarrierError::SessionLost(_))
    ));
}
