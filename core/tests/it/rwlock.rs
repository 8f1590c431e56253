//! The read-write lock and revocation on a real standalone server: readers share and exclude
//! writers across sessions, both sides are reentrant, a write holder may read, revocation is
//! asked and consented to, a release wakes one waiter, and expiry ends a hold.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use avout::lock::{LockError, LockStatus, Mutex, RwLock, revoke_holders};
use avout::zk::{ZkClient, ZkConfig};
use avout::{Client, Coordination, path};
use tokio::sync::Barrier;

use crate::support;
use crate::watch_count::{self, Counting, settle, wait_children};

async fn session(connect: &str) -> Arc<ZkClient> {
    Arc::new(support::connect(&ZkConfig::new(connect)).await)
}

async fn client(connect: &str) -> Client {
    support::client(&ZkConfig::new(connect)).await
}

/// Curator's `_c_<uuid>-__READ__<10 digits>` / `…-__WRIT__…`.
fn curator_name(node: &str, marker: &str) -> bool {
    let name = path::name(node);
    let Some(rest) = name.strip_prefix("_c_") else {
        return false;
    };
    let Some((uuid, seq)) = rest.split_once(&format!("-{marker}")) else {
        return false;
    };
    uuid::Uuid::parse_str(uuid).is_ok()
        && seq.len() == 10
        && seq.bytes().all(|b| b.is_ascii_digit())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_exclude_writers_across_sessions() {
    let server = support::standalone();
    let connect = server.connect_string();
    const READERS: usize = 3;
    const WRITERS: usize = 2;
    const ROUNDS: usize = 6;

    // Readers really share: all of them hold at once.
    let all_in = Arc::new(Barrier::new(READERS));
    let mut tasks = Vec::new();
    for _ in 0..READERS {
        let (connect, all_in) = (connect.clone(), all_in.clone());
        tasks.push(tokio::spawn(async move {
            let rw = RwLock::new(&client(&connect).await, "/rw/shared").expect("handle");
            let guard = rw.read().await.expect("read");
            assert!(curator_name(guard.node(), "__READ__"), "{}", guard.node());
            tokio::time::timeout(Duration::from_secs(10), all_in.wait())
                .await
                .expect("every reader holds the read lock at the same time");
            guard.unlock().await.expect("unlock");
        }));
    }
    for t in tasks {
        t.await.expect("reader");
    }

    // Readers and writers in a loop: a writer is alone; readers overlap only with readers.
    let readers = Arc::new(AtomicUsize::new(0));
    let writing = Arc::new(AtomicBool::new(false));
    let max_readers = Arc::new(AtomicUsize::new(0));
    let writes = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..READERS + WRITERS {
        let connect = connect.clone();
        let (readers, writing, max_readers, writes) = (
            readers.clone(),
            writing.clone(),
            max_readers.clone(),
            writes.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let rw = RwLock::new(&client(&connect).await, "/rw/mixed").expect("handle");
            for _ in 0..ROUNDS {
                if i < READERS {
                    let guard = rw.read().await.expect("read");
                    let now = readers.fetch_add(1, Ordering::SeqCst) + 1;
                    max_readers.fetch_max(now, Ordering::SeqCst);
                    assert!(!writing.load(Ordering::SeqCst), "a reader beside a writer");
                    tokio::time::sleep(Duration::from_millis(15)).await;
                    assert!(!writing.load(Ordering::SeqCst), "a writer came in");
                    readers.fetch_sub(1, Ordering::SeqCst);
                    guard.unlock().await.expect("unlock");
                } else {
                    let guard = rw.write().await.expect("write");
                    assert!(curator_name(guard.node(), "__WRIT__"), "{}", guard.node());
                    assert!(!writing.swap(true, Ordering::SeqCst), "two writers");
                    assert_eq!(readers.load(Ordering::SeqCst), 0, "a writer beside readers");
                    tokio::time::sleep(Duration::from_millis(15)).await;
                    assert_eq!(readers.load(Ordering::SeqCst), 0, "a reader came in");
                    writing.store(false, Ordering::SeqCst);
                    writes.fetch_add(1, Ordering::SeqCst);
                    guard.unlock().await.expect("unlock");
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("no exclusion violated");
    }
    assert_eq!(writes.load(Ordering::SeqCst), WRITERS * ROUNDS);
    eprintln!(
        "max concurrent readers: {}",
        max_readers.load(Ordering::SeqCst)
    );
    let zk = session(&connect).await;
    // The last releases may be deferred for `RELEASE_LINGER` (nobody relocked them).
    support::eventually("every node released", Duration::from_secs(5), || async {
        let (children, _) = zk.get_children("/rw/mixed").await.expect("children");
        children.is_empty().then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentrancy_write_holder_reads_downgrade_and_no_upgrade() {
    let server = support::standalone();
    let connect = server.connect_string();
    let my_session = client(&connect).await;
    let me = RwLock::new(&my_session, "/rw/reenter").expect("handle");
    let other = RwLock::new(&client(&connect).await, "/rw/reenter").expect("handle");

    let w1 = me.write().await.expect("write");
    let w2 = me.write().await.expect("write again: reentrant");
    assert_eq!(w1.node(), w2.node(), "one node for both holds");
    let write_token = w1.fencing_token();
    let write_name = path::name(w1.node()).to_owned();
    // A writer from elsewhere queues behind us; our read must not wait for it.
    let queued = RwLock::new(&client(&connect).await, "/rw/reenter").expect("handle");
    let queued = tokio::spawn(async move { queued.write().await.map(|g| g.fencing_token()) });
    let observer = session(&connect).await;
    crate::watch_count::wait_children(&observer, "/rw/reenter", 2).await;
    let r1 = tokio::time::timeout(Duration::from_secs(5), me.read())
        .await
        .expect("a write holder's read does not wait for itself")
        .expect("read under write");
    assert!(r1.fencing_token() > w1.fencing_token());
    assert!(
        other.try_read().await.expect("try").is_none(),
        "the writer excludes readers"
    );
    assert!(other.try_write().await.expect("try").is_none());

    w2.unlock().await.expect("unlock");
    assert!(
        other.try_write().await.expect("try").is_none(),
        "still held once"
    );
    w1.unlock().await.expect("unlock");
    // Downgraded: we still read, so the queued writer still waits; it goes after our read.
    // It queued between our write and read nodes, so the write node stays until we stop
    // reading (else it would see nothing below it and come in beside our read).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!queued.is_finished(), "the writer waits for our read lock");
    let children = observer.get_children("/rw/reenter").await.expect("ls").0;
    assert!(
        children.contains(&write_name),
        "write node parked: {children:?}"
    );
    r1.unlock().await.expect("unlock");
    let queued_token = tokio::time::timeout(Duration::from_secs(5), queued)
        .await
        .expect("the queued writer gets in once we stop reading")
        .expect("task")
        .expect("write");
    assert!(queued_token > write_token);
    // The writer's guard was dropped at once; reading again waits for its release.
    let r1 = me.read().await.expect("read again");
    let zk = &*session(&connect).await;
    let children = zk.get_children("/rw/reenter").await.expect("children").0;
    assert_eq!(children, [path::name(r1.node())]);
    let shared = other.try_read().await.expect("try").expect("readers share");
    let third = RwLock::new(&client(&connect).await, "/rw/reenter").expect("handle");
    assert!(
        third.try_write().await.expect("try").is_none(),
        "readers exclude writers"
    );

    // Holding only the read lock, the write lock would wait for itself.
    assert_eq!(me.write().await.unwrap_err(), LockError::WouldDeadlock);
    let r2 = me.read().await.expect("read again: reentrant");
    assert_eq!(r2.node(), r1.node());
    r1.unlock().await.expect("unlock");
    r2.unlock().await.expect("unlock");
    shared.unlock().await.expect("unlock");
    let w = other
        .try_write_for(Duration::from_secs(5))
        .await
        .expect("try")
        .expect("free now");
    w.unlock().await.expect("unlock");

    // A true downgrade: with no writer queued in between, releasing the write lock deletes
    // its node at once and other readers share our read lock.
    let w = me.write().await.expect("write");
    let r = me.read().await.expect("read under write");
    w.unlock().await.expect("unlock");
    // `unlock` returns once the delete is ordered on our session: our next request sees it
    // (another session may see it a moment later).
    let children = my_session.get_children("/rw/reenter").await.expect("ls").0;
    assert_eq!(children, [path::name(r.node())]);
    let shared = other
        .try_read()
        .await
        .expect("try")
        .expect("readers share a downgrade");
    shared.unlock().await.expect("unlock");
    r.unlock().await.expect("unlock");

    // Timed out waits leave nothing behind.
    let held = other.write().await.expect("write");
    assert!(
        me.try_read_for(Duration::from_millis(200))
            .await
            .expect("try")
            .is_none()
    );
    assert!(
        me.try_write_for(Duration::from_millis(200))
            .await
            .expect("try")
            .is_none()
    );
    let children = zk.get_children("/rw/reenter").await.expect("children").0;
    assert_eq!(
        children,
        [path::name(held.node())],
        "timed-out nodes removed"
    );
    held.unlock().await.expect("unlock");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_asked_to_release_consents() {
    let server = support::standalone();
    let connect = server.connect_string();
    let holder = RwLock::new(&client(&connect).await, "/rw/revoke").expect("handle");
    let contender_zk = client(&connect).await;
    let contender = RwLock::new(&contender_zk, "/rw/revoke").expect("handle");

    let guard = holder.read().await.expect("read");
    let node = guard.node().to_owned();
    let consented = tokio::spawn(async move {
        guard.revocation_requested().await.expect("asked, not lost");
        // Finish up, then consent.
        guard.unlock().await.expect("unlock");
    });
    assert!(contender.try_write().await.expect("try").is_none());
    let asked = revoke_holders(&contender_zk, contender.path())
        .await
        .expect("revoke");
    assert_eq!(asked, std::slice::from_ref(&node));
    let w = tokio::time::timeout(Duration::from_secs(10), contender.write())
        .await
        .expect("the holder released on request")
        .expect("write");
    consented.await.expect("holder");
    assert!(!w.node().is_empty());

    // Revoking a node that is gone reports it.
    assert!(
        !avout::lock::revoke(&contender_zk, &node)
            .await
            .expect("revoke")
    );
    w.unlock().await.expect("unlock");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_release_wakes_exactly_one_waiter() {
    let server = support::standalone();
    let connect = server.connect_string();
    let observer = session(&connect).await;
    let holder = RwLock::new(&client(&connect).await, "/rw/herd").expect("handle");
    let first = holder.write().await.expect("write");

    // Four writers queue behind it, one after another, each on its own counted session.
    let mut waiters = Vec::new();
    for i in 0..4 {
        let zk = watch_count::connect(&connect).await;
        // Exactly the counted session.
        let rw = RwLock::new(&Client::single(zk.clone()), "/rw/herd").expect("handle");
        let task = tokio::spawn(async move {
            let guard = rw.write().await.expect("write");
            tokio::time::sleep(Duration::from_millis(1000)).await;
            guard.unlock().await.expect("unlock");
        });
        wait_children(&observer, "/rw/herd", i + 2).await;
        waiters.push((zk, task));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(waiters.iter().all(|(zk, _)| zk.intercept().fired() == 0));

    first.unlock().await.expect("unlock");
    let sessions: Vec<&Counting> = waiters.iter().map(|(zk, _)| &**zk).collect();
    let fired = settle(&sessions, &[1, 0, 0, 0]).await;
    assert_eq!(fired, [1, 0, 0, 0], "only the next writer is notified");
    for (_, task) in waiters {
        task.await.expect("waiter");
    }

    // The same for the exclusive mutex.
    let m = Mutex::new(&client(&connect).await, "/mutex/herd").expect("handle");
    let g = m.lock().await.expect("lock");
    let mut waiters = Vec::new();
    for i in 0..3 {
        let zk = watch_count::connect(&connect).await;
        let m = Mutex::new(&Client::single(zk.clone()), "/mutex/herd").expect("handle");
        let task = tokio::spawn(async move {
            let guard = m.lock().await.expect("lock");
            tokio::time::sleep(Duration::from_millis(1000)).await;
            guard.unlock().await.expect("unlock");
        });
        wait_children(&observer, "/mutex/herd", i + 2).await;
        waiters.push((zk, task));
    }
    g.unlock().await.expect("unlock");
    let sessions: Vec<&Counting> = waiters.iter().map(|(zk, _)| &**zk).collect();
    let fired = settle(&sessions, &[1, 0, 0]).await;
    assert_eq!(fired, [1, 0, 0], "only the next in line is notified");
    for (_, task) in waiters {
        task.await.expect("waiter");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_reader_loses_its_hold_and_a_writer_gets_in() {
    let server = support::standalone();
    let connect = server.connect_string();
    let reader_zk = session(&connect).await;
    // A managed client on a session the test keeps, to expire it: the read guard stays on
    // that session and is lost with it.
    let reader = RwLock::new(
        &support::adopt(&ZkConfig::new(&connect), &reader_zk),
        "/rw/expiry",
    )
    .expect("handle");
    let writer = RwLock::new(&client(&connect).await, "/rw/expiry").expect("handle");
    let guard = reader.read().await.expect("read");
    assert_eq!(guard.status(), LockStatus::Held);
    let waiting = tokio::spawn(async move { writer.write().await.map(|g| g.fencing_token()) });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "the writer waits for the reader");

    reader_zk.expire_session().await.expect("expire");
    let lost = tokio::time::timeout(Duration::from_secs(10), guard.lost())
        .await
        .expect("loss noticed");
    assert!(matches!(lost, LockError::SessionLost(_)), "{lost:?}");
    support::eventually("status Lost", Duration::from_secs(10), || async {
        (guard.status() == LockStatus::Lost).then_some(())
    })
    .await;
    let token = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the writer gets in")
        .expect("task")
        .expect("write");
    assert!(token > guard.fencing_token(), "fencing tokens grow");
}
