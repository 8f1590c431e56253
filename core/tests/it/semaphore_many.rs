//! Quantity acquisitions of the semaphore on a real standalone server: n leases all or
//! nothing, refused quantities that change nothing, tries that leave no node behind, a waiter
//! served once enough leases are free, and leases lost with their session and taken again by
//! the same handle on the managed client's next session.

use std::sync::Arc;
use std::time::Duration;

use avout::lock::{LockError, LockStatus};
use avout::recipes::semaphore::Semaphore;
use avout::zk::{ZkClient, ZkConfig};
use avout::{Client, Coordination, Error};

use crate::support;
use crate::watch_count::wait_children;

async fn client(connect: &str) -> Client {
    support::client(&ZkConfig::new(connect)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_leases_all_or_nothing_on_a_real_server() {
    let server = support::standalone();
    let connect = server.connect_string();
    let observer = Arc::new(support::connect(&ZkConfig::new(&connect)).await);
    let a = Semaphore::new(&client(&connect).await, "/semq", 3).expect("a");
    let b = Semaphore::new(&client(&connect).await, "/semq", 3).expect("b");

    for n in [0, 4] {
        let refused = a.acquire_many(n).await;
        assert!(
            matches!(refused, Err(LockError::Zk(Error::BadArguments(_)))),
            "{n}: {refused:?}"
        );
    }
    assert!(
        observer.exists("/semq").await.expect("exists").is_none(),
        "nothing created"
    );

    let mut held = a.acquire_many(2).await.expect("two");
    assert_eq!(held.len(), 2);
    assert!(held.iter().all(|l| l.status() == LockStatus::Held));
    assert!(b.try_acquire_many(2).await.expect("try").is_none());
    assert!(
        b.try_acquire_many_for(2, Duration::from_millis(300))
            .await
            .expect("timed try")
            .is_none()
    );
    // The failed tries returned the lease they had taken and the mutex.
    wait_children(&observer, "/semq/leases", 2).await;
    wait_children(&observer, "/semq/locks", 0).await;
    let one = b
        .try_acquire_many(1)
        .await
        .expect("try")
        .expect("one is free");
    drop(one);
    wait_children(&observer, "/semq/leases", 2).await;

    // A waiter for two is served once two are free, not before.
    let waiting = tokio::spawn(async move { b.acquire_many(2).await.map(|l| l.len()) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "one lease is free, two are wanted");
    held.pop()
        .expect("two held")
        .release()
        .await
        .expect("release");
    let got = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("served")
        .expect("task")
        .expect("acquire");
    assert_eq!(got, 2);
    // The waiter's task dropped its leases; ours is the one left.
    wait_children(&observer, "/semq/leases", 1).await;
    for lease in held {
        lease.release().await.expect("release");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_carry_on_after_their_session_expires() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let first = Arc::new(ZkClient::connect(&config).await.expect("session"));
    let client = support::adopt(&config, &first);
    let sem = Semaphore::new(&client, "/semqe", 2).expect("handle");
    let held = sem.acquire_many(2).await.expect("two");
    first.expire_session().await.expect("expire");
    let lost = tokio::time::timeout(Duration::from_secs(10), held[0].lost())
        .await
        .expect("loss noticed");
    assert!(matches!(lost, LockError::SessionLost(_)), "{lost:?}");
    assert!(held.iter().all(|l| l.status() == LockStatus::Lost));
    let again = tokio::time::timeout(Duration::from_secs(20), sem.acquire_many(2))
        .await
        .expect("in time")
        .expect("acquired on the next session");
    assert_eq!(again.len(), 2);
    assert_eq!(client.generation(), 2);
    assert!(again.iter().all(|l| l.status() == LockStatus::Held));
    assert!(again[0].fencing_token() > held[1].fencing_token());
}
