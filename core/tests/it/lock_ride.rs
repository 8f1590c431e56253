//! The deferred release: once a handle has locked again promptly after a release, `unlock`
//! sends nothing; the handle's next acquisition carries the delete in its create's `multi` (a
//! warm cycle is one write), or a background task sends it alone when no acquisition comes
//! within `RELEASE_LINGER`.
//!
//! - On real ZooKeeper 3.8 (which answers a create inside a `multi` without its `Stat`): a
//!   warm cycle sends one `multi` and nothing else, and the fencing token is still the new
//!   node's `czxid`, taken from the stamp (the `set_data` of the lock directory that ends the
//!   `multi`, whose `numChildren` also says the new node is alone).
//! - On the simulator: a release with no next acquisition still happens; a lost reply or a
//!   lost request on the riding `multi` neither leaks a node nor lets two holders in; a
//!   dropped acquisition that carried a release leaves nothing behind; a read-write lock
//!   handle's read cycles ride too.

use std::time::Duration;

use avout::lock::{Mutex, RwLock};
use avout::zk::{ZkClient, ZkConfig};
use avout::{Client, Coordination, CoordinationExt};
use avout_sim_zk::{Fault, Sim, SimZk};

use crate::atom_probe::{Probe, probe};
use crate::lock_release::children;
use crate::support::{self, single};

const SESSION: Duration = Duration::from_secs(2);

/// Locks and unlocks `path` `n` times in a row through one handle on `client` (whose session
/// `probe` counts requests); the requests each cycle sent.
async fn cycles(
    probe: &Probe<avout_sim_zk::SimClient>,
    client: &Client,
    path: &str,
    n: usize,
) -> Vec<usize> {
    let mutex = Mutex::new(client, path).expect("handle");
    let mut sent = Vec::new();
    for _ in 0..n {
        let before = probe.intercept().requests();
        let guard = mutex.lock().await.expect("lock");
        guard.unlock().await.expect("unlock");
        sent.push(probe.intercept().requests() - before);
    }
    sent
}

/// A simulation of `clients` sessions from `seed`.
fn sim(seed: u64, clients: usize) -> Sim {
    Sim::builder()
        .seed(seed)
        .clients(clients)
        .session_timeout(SESSION)
        .build()
}

/// Locks `mutex`, unlocks it and locks it again at once: the handle now defers its releases.
async fn warm(mutex: &Mutex) -> avout::lock::MutexGuard {
    let first = mutex.lock().await.expect("lock");
    first.unlock().await.expect("unlock");
    mutex.lock().await.expect("a prompt relock")
}

/// The warm cycles the real-server test waits for, and the most cycles it runs to see them.
const WARM_CYCLES: usize = 10;
const MOST_CYCLES: usize = 200;

/// Whether a relock is warm depends on the clock (within [`avout::lock::RELEASE_LINGER`] of
/// the release), which a loaded machine may miss: the test classifies each cycle by what it
/// sent instead of expecting a fixed sequence, and waits for enough warm ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_cycle_is_one_multi_and_keeps_the_czxid_as_its_token() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let zk: ZkClient = support::connect(&config).await;
    let probe = probe(support::connect(&config).await);
    let mutex = Mutex::new(&Client::single(probe.clone()), "/ride/warm").expect("handle");
    let (mut last_token, mut before) = (0, 0);
    let (mut warm, mut directory_reads) = (0, 0);
    for cycle in 0..MOST_CYCLES {
        if warm == WARM_CYCLES {
            break;
        }
        let guard = mutex.lock().await.expect("lock");
        let sent = probe.intercept().names_from(before);
        before += sent.len();
        let (_, stat) = zk.get_data(guard.node()).await.expect("the node is there");
        assert_eq!(
            guard.fencing_token(),
            stat.czxid,
            "cycle {cycle}: the czxid"
        );
        assert!(guard.fencing_token() > last_token, "tokens grow");
        last_token = guard.fencing_token();
        match sent.as_slice() {
            // The first create finds no lock directory and makes it (and its parent).
            [
                "create",
                "getChildren",
                "create",
                "create",
                "create",
                "getChildren",
            ] if cycle == 0 => {}
            // The previous release rode with this create (one `multi`), whose stamp said it
            // was alone: nothing else to read.
            ["multi"] if cycle > 0 => warm += 1,
            // The previous release went alone; a prompt relock makes the handle defer, and the
            // first that does reads whether the lock directory's data is empty (the stamp
            // overwrites it).
            ["delete", "create", "getChildren"] if cycle > 0 => {}
            ["delete", "getData", "create", "getChildren"] if cycle > 0 => directory_reads += 1,
            other => panic!("cycle {cycle} sent {other:?}"),
        }
        guard.unlock().await.expect("unlock");
    }
    assert_eq!(warm, WARM_CYCLES, "warm cycles in {MOST_CYCLES}");
    assert_eq!(directory_reads, 1, "the directory is read once");
    // No acquisition follows the last release: it is sent alone.
    support::eventually("the last release", Duration::from_secs(5), || async {
        let (children, _) = zk.get_children("/ride/warm").await.ok()?;
        children.is_empty().then_some(())
    })
    .await;
    assert_eq!(probe.intercept().names_from(before), ["delete"]);
}

#[test]
fn a_release_with_no_next_acquisition_happens_at_once() {
    let sim = sim(41, 2);
    let (waited, _) = sim.run(|ctx| async move {
        let (a, b) = (single(&ctx.clients[0]), single(&ctx.clients[1]));
        let mine = Mutex::new(&a, "/ride/alone").expect("handle");
        let theirs = Mutex::new(&b, "/ride/alone").expect("handle");
        let guard = warm(&mine).await;
        let waiting = tokio::spawn(async move {
            let start = tokio::time::Instant::now();
            let guard = theirs.lock().await.expect("the other client gets in");
            let waited = start.elapsed();
            guard.unlock().await.expect("unlock");
            waited
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        guard.unlock().await.expect("unlock");
        let waited = waiting.await.expect("the waiter");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(children(&ctx.zk, "/ride/alone").is_empty(), "nothing left");
        waited
    });
    // It waited for the hold (100 ms), the linger and the release's round trip, not for a
    // session timeout.
    assert!(waited < Duration::from_millis(400), "waited {waited:?}");
}

/// One client locks, unlocks and locks again at once with `fault` injected just before the
/// relock, so that it strikes the riding `multi`; another client then takes the lock.
/// Returns what is left under the lock at the end.
fn fault_on_the_ride(fault: Fault, seed: u64) -> Vec<String> {
    const PATH: &str = "/ride/faulty";
    let sim = sim(seed, 2);
    let (left, summary) = sim.run(|ctx| async move {
        let zk = ctx.zk.clone();
        let (a, b) = (single(&ctx.clients[0]), single(&ctx.clients[1]));
        let mutex = Mutex::new(&a, PATH).expect("handle");
        let first = warm(&mutex).await;
        let old = first.node().to_owned();
        first.unlock().await.expect("unlock defers");
        zk.inject(fault);
        let second = mutex.lock().await.expect("relock, recovered by GUID");
        let names = children(&zk, PATH);
        assert_eq!(
            names.len(),
            1,
            "one node: the ride applied whole ({names:?})"
        );
        assert_ne!(avout::path::join(PATH, &names[0]), old);
        assert_eq!(second.node(), avout::path::join(PATH, &names[0]));
        let other = Mutex::new(&b, PATH).expect("handle");
        assert!(other.try_lock().await.expect("try").is_none(), "excluded");
        second.unlock().await.expect("unlock");
        let third = other.lock().await.expect("the other client gets in");
        third.unlock().await.expect("unlock");
        tokio::time::sleep(Duration::from_millis(500)).await;
        children(&zk, PATH)
    });
    assert_eq!(summary.faults.values().sum::<u64>(), 1, "the fault fired");
    left
}

#[test]
fn a_lost_reply_to_the_riding_multi_is_recovered_by_guid() {
    let left = fault_on_the_ride(Fault::ReplyLost { client: Some(0) }, 43);
    assert!(left.is_empty(), "nodes left behind: {left:?}");
}

#[test]
fn a_lost_riding_multi_is_sent_again_with_its_release() {
    let left = fault_on_the_ride(Fault::RequestLost { client: Some(0) }, 44);
    assert!(left.is_empty(), "nodes left behind: {left:?}");
}

#[test]
fn a_dropped_acquisition_that_carried_a_release_leaves_nothing() {
    const PATH: &str = "/ride/dropped";
    let sim = sim(45, 2);
    let (left, _) = sim.run(|ctx| async move {
        let (a, b) = (single(&ctx.clients[0]), single(&ctx.clients[1]));
        let mine = Mutex::new(&a, PATH).expect("handle");
        let theirs = Mutex::new(&b, PATH).expect("handle");
        let first = warm(&mine).await;
        // The other client queues behind us, so our next acquisition waits.
        let waiting = tokio::spawn(async move {
            let guard = theirs.lock().await.expect("the other client gets in");
            tokio::time::sleep(Duration::from_millis(50)).await;
            guard.unlock().await.expect("unlock");
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        first.unlock().await.expect("unlock defers");
        // Rides with the relock, which then waits behind the other client: give it up.
        let relock = mine
            .try_lock_for(Duration::from_millis(1))
            .await
            .expect("try");
        assert!(relock.is_none(), "the other client holds meanwhile");
        waiting.await.expect("the other client");
        tokio::time::sleep(Duration::from_millis(200)).await;
        children(&ctx.zk, PATH)
    });
    assert!(left.is_empty(), "nodes left behind: {left:?}");
}

/// An acquisition dropped after it took a deferred release to carry but before its `multi`
/// went out (here while the handle's other deferred release is handed to the session) sends
/// that release alone: the node does not stay behind until the session ends.
#[test]
fn an_acquisition_dropped_before_its_ride_went_out_still_releases() {
    const PATH: &str = "/ride/cancelled";
    let sim = sim(50, 1);
    let (left, _) = sim.run(|ctx| async move {
        let rw = RwLock::new(&single(&ctx.clients[0]), PATH).expect("handle");
        // Each side relocks promptly after a release: both defer from then on.
        for _ in 0..2 {
            rw.write()
                .await
                .expect("write")
                .unlock()
                .await
                .expect("unlock");
        }
        for _ in 0..2 {
            rw.read()
                .await
                .expect("read")
                .unlock()
                .await
                .expect("unlock");
        }
        // Both sides' releases deferred at once: the read taken under the write, then the
        // write (no read hold above it any more).
        let write = rw.write().await.expect("write");
        let read = rw.read().await.expect("read under the write");
        let write_node = write.node().to_owned();
        read.unlock().await.expect("unlock defers");
        write.unlock().await.expect("unlock defers");
        let held = children(&ctx.zk, PATH);
        assert_eq!(held.len(), 2, "both releases deferred: {held:?}");
        // The read takes its side's release to ride and hands the write's to the session;
        // dropped while it waits for that.
        let mut relock = Box::pin(rw.read());
        assert!(
            futures::poll!(&mut relock).is_pending(),
            "waits for the hand-over"
        );
        drop(relock);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let left = children(&ctx.zk, PATH);
        assert!(
            !left.iter().any(|n| write_node.ends_with(n.as_str())),
            "the write's release went alone: {left:?}"
        );
        left
    });
    assert!(left.is_empty(), "nodes left behind: {left:?}");
}

/// One client's release is deferred when `between` strikes (the client's lock handle is
/// passed to it, to keep or drop); another client then takes the lock. Returns how long it
/// waited, the first client's relock (if `between` kept the handle) and what is left under
/// the lock at the end.
fn after_a_deferred_release<F, Fut>(
    seed: u64,
    path: &'static str,
    between: F,
) -> (
    Duration,
    Option<Result<(), avout::lock::LockError>>,
    Vec<String>,
)
where
    F: FnOnce(SimZk, Mutex) -> Fut,
    Fut: std::future::Future<Output = Option<Mutex>>,
{
    let sim = sim(seed, 2);
    let (out, _) = sim.run(|ctx| async move {
        let (a, b) = (single(&ctx.clients[0]), single(&ctx.clients[1]));
        let mine = Mutex::new(&a, path).expect("handle");
        let theirs = Mutex::new(&b, path).expect("handle");
        warm(&mine).await.unlock().await.expect("unlock defers");
        let kept = between(ctx.zk.clone(), mine).await;
        let start = tokio::time::Instant::now();
        let guard = theirs.lock().await.expect("the other client gets in");
        let waited = start.elapsed();
        guard.unlock().await.expect("unlock");
        let relocked = match kept {
            Some(mine) => Some(mine.lock().await.map(drop)),
            None => None,
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        (waited, relocked, children(&ctx.zk, path))
    });
    out
}

#[test]
fn an_expiry_while_a_release_is_deferred_takes_the_node_and_fails_the_relock() {
    let (waited, relocked, left) =
        after_a_deferred_release(51, "/ride/expired", |zk, mine| async move {
            zk.inject(Fault::ExpireSession { client: 0 });
            tokio::time::sleep(Duration::from_millis(10)).await;
            Some(mine)
        });
    // The node went with the session (at once, not after a session timeout).
    assert!(waited < Duration::from_millis(100), "waited {waited:?}");
    assert!(
        matches!(relocked, Some(Err(avout::lock::LockError::SessionLost(_)))),
        "{relocked:?}"
    );
    assert!(left.is_empty(), "nodes left behind: {left:?}");
}

#[test]
fn a_disconnection_while_a_release_is_deferred_delays_it_to_the_reconnection() {
    let (waited, relocked, left) =
        after_a_deferred_release(52, "/ride/disconnected", |zk, mine| async move {
            zk.inject(Fault::Disconnect {
                client: 0,
                duration: Duration::from_millis(300),
            });
            Some(mine)
        });
    // The linger's delete went out once the connection was back, well within the session.
    assert!(waited < SESSION, "waited {waited:?}");
    assert!(matches!(relocked, Some(Ok(()))), "{relocked:?}");
    assert!(left.is_empty(), "nodes left behind: {left:?}");
}

#[test]
fn a_handle_dropped_with_its_release_deferred_still_releases() {
    let (waited, _, left) =
        after_a_deferred_release(53, "/ride/handle-dropped", |_, mine| async move {
            drop(mine);
            None
        });
    assert!(waited < Duration::from_millis(100), "waited {waited:?}");
    assert!(left.is_empty(), "nodes left behind: {left:?}");
}

#[test]
fn read_cycles_of_a_read_write_lock_ride_too() {
    let sim = sim(46, 1);
    let (sent, _) = sim.run(|ctx| async move {
        let probe = probe(ctx.clients[0].clone());
        let rw = RwLock::new(&Client::single(probe.clone()), "/ride/rw").expect("handle");
        let (mut sent, mut before) = (Vec::new(), 0);
        let mut note = || {
            sent.push(
                probe.intercept().requests()
                    - std::mem::replace(&mut before, probe.intercept().requests()),
            )
        };
        for _ in 0..4 {
            let guard = rw.read().await.expect("read");
            note();
            guard.unlock().await.expect("unlock");
        }
        // The write side takes the read side's deferred release with it.
        let write = rw.write().await.expect("write");
        note();
        write.unlock().await.expect("unlock");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(children(&ctx.zk, "/ride/rw").is_empty(), "nothing left");
        sent
    });
    // The first two cycles are the warm-up (see the mutex's test above).
    assert_eq!(sent[2..], [1; 3], "one multi each");
}

#[test]
fn a_lock_directory_that_holds_data_keeps_it_and_releases_are_not_deferred() {
    let sim = sim(48, 1);
    let (sent, _) = sim.run(|ctx| async move {
        let probe = probe(ctx.clients[0].clone());
        let client = Client::single(probe.clone());
        client.ensure_path("/ride").await.expect("the parent");
        client
            .create("/ride/data", b"keep", &avout::CreateMode::Persistent.into())
            .await
            .expect("a directory with data");
        let sent = cycles(&probe, &client, "/ride/data", 4).await;
        let (data, _) = client.get_data("/ride/data").await.expect("read");
        assert_eq!(data, b"keep", "the directory's data is untouched");
        sent
    });
    // Create, read and the release sent at once; the second cycle also reads the directory,
    // and finding data there, the handle never defers.
    assert_eq!(sent, [3, 4, 3, 3]);
}

#[test]
fn a_lock_directory_that_may_not_be_written_stops_the_rides() {
    use avout::{Acl, CreateMode, CreateOptions, Perms};
    let sim = sim(49, 1);
    let (sent, _) = sim.run(|ctx| async move {
        let probe = probe(ctx.clients[0].clone());
        let client = Client::single(probe.clone());
        client.ensure_path("/ride").await.expect("the parent");
        // Lock nodes may be created and deleted, the directory's data not written.
        let acl = vec![Acl {
            perms: Perms::READ | Perms::CREATE | Perms::DELETE,
            scheme: "world".into(),
            id: "anyone".into(),
        }];
        let options = CreateOptions {
            acl: Some(acl),
            ..CreateOptions::new(CreateMode::Persistent)
        };
        client
            .create("/ride/locked", b"", &options)
            .await
            .expect("a directory that may not be written");
        let sent = cycles(&probe, &client, "/ride/locked", 5).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(children(&ctx.zk, "/ride/locked").is_empty(), "nothing left");
        sent
    });
    // Create, read and the release sent at once; then the directory (empty), create and read,
    // and the release deferred; then the ride, refused for its stamp, so a create and a read
    // alone, the deferred release alone and this cycle's at once; from then on nothing is
    // deferred.
    assert_eq!(sent, [3, 3, 5, 3, 3]);
}

#[test]
fn an_unlock_after_the_session_ended_says_so() {
    let sim = sim(47, 1);
    let (unlocked, _) = sim.run(|ctx| async move {
        let session = ctx.clients[0].clone();
        let mutex = Mutex::new(&single(&session), "/ride/ended").expect("handle");
        let guard = mutex.lock().await.expect("lock");
        session.close().await.expect("close");
        guard.unlock().await
    });
    assert!(
        matches!(unlocked, Err(avout::lock::LockError::SessionLost(_))),
        "{unlocked:?}"
    );
}
