//! The multi-lock on a real standalone server: all or nothing against another process
//! holding one member, a timed try that leaves no node behind, growing fencing tokens, no
//! deadlock between sets given in opposite orders, and a hold lost with its session and taken
//! again by the same handle on the managed client's next session.

use std::sync::Arc;
use std::time::Duration;

use avout::lock::{LockError, LockStatus, MultiLock, Mutex};
use avout::zk::{ZkClient, ZkConfig};
use avout::{Client, Coordination};

use crate::support;
use crate::watch_count::wait_children;

async fn client(connect: &str) -> Client {
    support::client(&ZkConfig::new(connect)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_or_nothing_with_growing_tokens_on_a_real_server() {
    let server = support::standalone();
    let connect = server.connect_string();
    let observer = Arc::new(support::connect(&ZkConfig::new(&connect)).await);
    let a = MultiLock::new(&client(&connect).await, ["/ml/a", "/ml/b"]).expect("a");
    let b = MultiLock::new(&client(&connect).await, ["/ml/b", "/ml/a"]).expect("b");
    assert_eq!(b.paths(), ["/ml/a", "/ml/b"], "one canonical order");

    let held = a.lock().await.expect("lock");
    let first: Vec<(String, i64)> = held.fencing_tokens();
    assert_eq!(
        first.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        ["/ml/a", "/ml/b"]
    );
    assert!(b.try_lock().await.expect("try").is_none());
    assert!(
        b.try_lock_for(Duration::from_millis(300))
            .await
            .expect("timed try")
            .is_none()
    );
    for lock in ["/ml/a", "/ml/b"] {
        wait_children(&observer, lock, 1).await;
    }
    held.unlock().await.expect("unlock");

    // Another process holds one member: the multi-lock takes the other, waits, gives up and
    // releases what it took.
    let single = Mutex::new(&client(&connect).await, "/ml/b").expect("mutex");
    let guard = single.lock().await.expect("lock b");
    assert!(
        b.try_lock_for(Duration::from_millis(300))
            .await
            .expect("timed try")
            .is_none()
    );
    wait_children(&observer, "/ml/a", 0).await;
    wait_children(&observer, "/ml/b", 1).await;
    guard.unlock().await.expect("unlock b");

    let again = b.lock().await.expect("lock");
    for ((path, old), (_, new)) in first.iter().zip(again.fencing_tokens()) {
        assert!(new > *old, "{path}: token {new} after {old}");
    }
    assert_eq!(again.status(), LockStatus::Held);
    again.unlock().await.expect("unlock");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sets_given_in_opposite_orders_do_not_deadlock() {
    let server = support::standalone();
    let connect = server.connect_string();
    let mut tasks = Vec::new();
    for order in [["/mld/x", "/mld/y"], ["/mld/y", "/mld/x"]] {
        let multi = MultiLock::new(&client(&connect).await, order).expect("handle");
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                let guard = multi.lock().await.expect("lock");
                tokio::time::sleep(Duration::from_millis(5)).await;
                guard.unlock().await.expect("unlock");
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("no deadlock")
            .expect("task");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_carries_on_after_its_session_expires() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let first = Arc::new(ZkClient::connect(&config).await.expect("session"));
    let client = support::adopt(&config, &first);
    let multi = MultiLock::new(&client, ["/mle/a", "/mle/b"]).expect("handle");
    let held = multi.lock().await.expect("lock");
    first.expire_session().await.expect("expire");
    let lost = tokio::time::timeout(Duration::from_secs(10), held.lost())
        .await
        .expect("loss noticed");
    assert!(matches!(lost, LockError::SessionLost(_)), "{lost:?}");
    assert_eq!(held.status(), LockStatus::Lost);
    let again = tokio::time::timeout(Duration::from_secs(20), multi.lock())
        .await
        .expect("in time")
        .expect("locked on the next session");
    assert_eq!(again.status(), LockStatus::Held);
    assert_eq!(client.generation(), 2);
    let session = client.session().id;
    assert!(
        again
            .members()
            .iter()
            .all(|g| g.status() == LockStatus::Held),
        "every member on session {session:?}"
    );
    drop(held);
    again.unlock().await.expect("unlock");
}
