//! Every public handle operation can run in a spawned task: its future, moved into a task
//! with its handle, is `Send + 'static`. Checked by the compiler: a future that rustc cannot
//! prove `Send` for every lifetime (as with an `AsyncFnMut(&Session)` inside `Barrier::wait`
//! once) fails this file's build, not a run.

use std::time::Duration;

use avout::Client;
use avout::atom::Atom;
use avout::atom::linkv::LinKv;
use avout::atom::record::{Records, Value};
use avout::lock::{Mutex, RwLock};
use avout::locktable::{LockTable, Transaction};
use avout::recipes::barrier::Barrier;
use avout::recipes::double_barrier::DoubleBarrier;
use avout::recipes::election::Election;
use avout::recipes::group::{Group, MembershipWatch};
use avout::recipes::queue::{PriorityQueue, Queue};
use avout::recipes::semaphore::Semaphore;
use avout::recipes::two_phase_commit::{Coordinator, Site, Vote};
use avout::stm::{Stm, StmConfig};

/// Accepts what `tokio::spawn` accepts.
fn spawn<F: Future + Send + 'static>(_: F) {}

/// The handles whose operations are checked.
struct Handles {
    client: Client,
    atom: Atom<u64>,
    records: Records,
    kv: LinKv,
    mutex: Mutex,
    rw: RwLock,
    semaphore: Semaphore,
    election: Election,
    group: Group,
    watch: MembershipWatch,
    barrier: Barrier,
    double: DoubleBarrier,
    queue: Queue,
    priority: PriorityQueue,
    table: LockTable,
    stm: Stm,
}

fn every_operation(h: Handles) {
    let Handles {
        client,
        atom,
        records,
        kv,
        mutex,
        rw,
        semaphore,
        election,
        group,
        mut watch,
        barrier,
        double,
        queue,
        priority,
        table,
        stm,
    } = h;
    let c = client.clone();
    spawn(async move {
        let session = c.current_session().await;
        let atom = Atom::<u64>::open(&c, "/a", 0).await;
        let stm = Stm::open(&c, "/s", StmConfig::default()).await;
        let tx = Coordinator::begin(&c, "/t", &["a"], b"").await;
        let site = Site::join(&c, "/t", "a").await;
        c.close().await.ok();
        (session, atom, stm, tx, site)
    });
    let a = atom.clone();
    spawn(async move {
        a.swap(|n| n + 1).await.ok();
        a.deref().await.ok();
        a.compare_and_set(&1, 2).await.ok();
        a.reset(0).await.ok();
        let mut watcher = a.watch().await.unwrap();
        watcher.changed().await
    });
    spawn(async move { records.set("k", Value::Int(1), 1).await });
    spawn(async move { kv.write("k", serde_json::json!(1)).await });
    spawn(async move {
        let guard = mutex.lock().await.unwrap();
        guard.lost().await;
        guard.unlock().await
    });
    spawn(async move {
        let read = rw.read().await.unwrap();
        read.unlock().await.ok();
        rw.try_write_for(Duration::from_secs(1)).await
    });
    spawn(async move {
        let lease = semaphore.acquire().await.unwrap();
        lease.lost().await;
        lease.release().await
    });
    let e = election.clone();
    spawn(async move {
        let leadership = e.campaign().await.unwrap();
        e.leader().await.ok();
        leadership.lost().await;
        leadership.resign().await
    });
    spawn(async move {
        let latch = election.latch();
        let mut events = latch.events();
        events.next().await;
        latch.leading().await.ok();
        latch.close().await
    });
    spawn(async move {
        let mut me = group.join("m", b"").await.unwrap();
        me.changed().await;
        group.members().await.ok();
        me.leave().await
    });
    spawn(async move { watch.next().await });
    spawn(async move {
        barrier.set().await.ok();
        barrier.wait().await
    });
    spawn(async move { double.enter().await.unwrap().leave().await });
    spawn(async move {
        queue.put(b"x").await.ok();
        queue.take().await
    });
    spawn(async move {
        priority.put(1, b"x").await.ok();
        priority.take_for(Duration::from_secs(1)).await
    });
    spawn(async move { table.execute(&Transaction::new("t", vec![])).await });
    spawn(async move {
        let r = stm.make_ref("r", 0i64).await.unwrap();
        // A body that borrows `r` from the task (`async |tx| tx.alter(&r, ..)`) is not
        // provably `Send` for every lifetime (rustc's limit on async closures' futures); a
        // body that owns its refs is.
        let owned = r.clone();
        stm.dosync(async move |tx| tx.alter(&owned, |v| v + 1).await)
            .await
            .ok();
        r.deref().await
    });
    spawn(async move {
        let tx = Coordinator::begin(&client, "/t", &["a"], b"")
            .await
            .unwrap();
        let site = Site::join(&client, "/t", "a").await.unwrap();
        site.vote(Vote::Commit).await.ok();
        site.outcome().await.ok();
        tx.outcome().await
    });
}

#[test]
fn every_public_handle_future_is_spawnable() {
    // The check is the build of `every_operation`; nothing runs.
    let _ = every_operation;
}
