//! The semaphore on a real standalone server: never more than N leases across sessions, try
//! and timed acquisitions that leave nothing behind, a lease lost with its session, a
//! cancelled acquisition that removes its nodes, and a release that wakes one waiter.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use avout::lock::{LockError, LockStatus};
use avout::recipes::semaphore::Semaphore;
use avout::zk::{ZkClient, ZkConfig};
use avout::{Client, Coordination, path};

use crate::support;
use crate::watch_count::{self, Counting, settle, wait_children};

async fn session(connect: &str) -> Arc<ZkClient> {
    Arc::new(support::connect(&ZkConfig::new(connect)).await)
}

async fn client(connect: &str) -> Client {
    support::client(&ZkConfig::new(connect)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_more_than_n_leases() {
    let server = support::standalone();
    let connect = server.connect_string();
    const N: usize = 2;
    let held = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..5 {
        let (connect, held, max) = (connect.clone(), held.clone(), max.clone());
        tasks.push(tokio::spawn(async move {
            let sem = Semaphore::new(&client(&connect).await, "/sem/n", N as u32).expect("sem");
            for _ in 0..4 {
                let lease = sem.acquire().await.expect("acquire");
                assert!(
                    path::name(lease.node()).starts_with("_c_")
                        && path::name(lease.node()).contains("-lease-")
                );
                let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(now <= N, "{now} leases held at once");
                max.fetch_max(now, Ordering::SeqCst);
                // Hold the lease until the limit has been reached once (on a loaded machine
                // the tasks could otherwise take turns and never overlap), then briefly.
                let start = tokio::time::Instant::now();
                while max.load(Ordering::SeqCst) < N && start.elapsed() < Duration::from_secs(10) {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                held.fetch_sub(1, Ordering::SeqCst);
                lease.release().await.expect("release");
            }
        }));
    }
    for t in tasks {
        t.await.expect("never more than N");
    }
    assert_eq!(max.load(Ordering::SeqCst), N, "the limit was reached");
    let zk = session(&connect).await;
    assert!(
        zk.get_children("/sem/n/leases")
            .await
            .expect("leases")
            .0
            .is_empty()
    );
    assert!(
        zk.get_children("/sem/n/locks")
            .await
            .expect("locks")
            .0
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_tries_and_cancellations_leave_nothing_behind() {
    let server = support::standalone();
    let connect = server.connect_string();
    let observer = session(&connect).await;
    let a = Semaphore::new(&client(&connect).await, "/sem/try", 1).expect("sem");
    let b = Semaphore::new(&client(&connect).await, "/sem/try", 1).expect("sem");
    assert_eq!(a.path(), "/sem/try", "the path it was made with");
    let lease = a.try_acquire().await.expect("try").expect("free");
    assert!(b.try_acquire().await.expect("try").is_none());
    assert!(
        b.try_acquire_for(Duration::from_millis(300))
            .await
            .expect("try")
            .is_none()
    );
    // A waiter that is dropped removes its mutex and lease nodes.
    let waiting = tokio::spawn({
        let b = b.clone();
        async move { b.acquire().await.map(|l| l.node().to_owned()) }
    });
    wait_children(&observer, "/sem/try/leases", 2).await;
    waiting.abort();
    let _ = waiting.await;
    wait_children(&observer, "/sem/try/leases", 1).await;
    wait_children(&observer, "/sem/try/locks", 0).await;
    assert_eq!(
        observer
            .get_children("/sem/try/leases")
            .await
            .expect("ls")
            .0,
        [path::name(lease.node())]
    );
    lease.release().await.expect("release");
    let again = b.try_acquire().await.expect("try").expect("free again");
    drop(again);
    wait_children(&observer, "/sem/try/leases", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_is_lost_with_its_session() {
    let server = support::standalone();
    let connect = server.connect_string();
    let holder_zk = session(&connect).await;
    // A managed client on a session the test keeps, to expire it.
    let holder = Semaphore::new(
        &support::adopt(&ZkConfig::new(&connect), &holder_zk),
        "/sem/expiry",
        1,
    )
    .expect("sem");
    let other = Semaphore::new(&client(&connect).await, "/sem/expiry", 1).expect("sem");
    let lease = holder.acquire().await.expect("acquire");
    assert_eq!(lease.status(), LockStatus::Held);
    let waiting = tokio::spawn(async move { other.acquire().await.map(|l| l.fencing_token()) });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished());
    holder_zk.expire_session().await.expect("expire");
    let lost = tokio::time::timeout(Duration::from_secs(10), lease.lost())
        .await
        .expect("loss noticed");
    assert!(matches!(lost, LockError::SessionLost(_)), "{lost:?}");
    let token = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the waiter gets the lease")
        .expect("task")
        .expect("acquire");
    assert!(token > lease.fencing_token());
    // The lease stays lost, but the handle is not: its next acquire gets a lease on the
    // client's new session (the waiter's lease was released when its task ended).
    let again = tokio::time::timeout(Duration::from_secs(10), holder.acquire())
        .await
        .expect("the next acquire is not held up")
        .expect("the next acquire works on the new session");
    assert_eq!(again.status(), LockStatus::Held);
    assert_eq!(lease.status(), LockStatus::Lost);
    assert!(again.fencing_token() > token);
    again.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_release_wakes_one_waiter() {
    let server = support::standalone();
    let connect = server.connect_string();
    let observer = session(&connect).await;
    let sem = Semaphore::new(&client(&connect).await, "/sem/herd", 1).expect("sem");
    let lease = sem.acquire().await.expect("acquire");
    let mut waiters = Vec::new();
    for i in 0..3 {
        let zk = watch_count::connect(&connect).await;
        // Exactly the counted session.
        let sem = Semaphore::new(&Client::single(zk.clone()), "/sem/herd", 1).expect("sem");
        let task = tokio::spawn(async move {
            let lease = sem.acquire().await.expect("acquire");
            tokio::time::sleep(Duration::from_millis(1500)).await;
            lease.release().await.expect("release");
        });
        // The first waiter holds the mutex and has a lease node; the rest queue on the mutex.
        wait_children(&observer, "/sem/herd/locks", i + 1).await;
        waiters.push((zk, task));
    }
    wait_children(&observer, "/sem/herd/leases", 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(waiters.iter().all(|(zk, _)| zk.intercept().fired() == 0));

    lease.release().await.expect("release");
    let sessions: Vec<&Counting> = waiters.iter().map(|(zk, _)| &**zk).collect();
    let fired = settle(&sessions, &[1, 1, 0]).await;
    // The mutex holder's lease watch fires; handing the mutex on notifies only the next in
    // line; the last waiter sleeps on.
    assert_eq!(fired, [1, 1, 0], "one waiter per release");
    for (_, task) in waiters {
        task.await.expect("waiter");
    }
}
