//! A refusal is not a race: the recipes whose writes are compare-and-set loops (they try
//! again on `BadVersion` or `NoNode`, which another writer causes) must fail at once, with the
//! server's refusal, when the write is refused for a reason no retry changes.
//!
//! Every other recipe that writes (locks, semaphores, elections, queues, barriers, groups,
//! agents' sends, shared counts, two-phase commit) is held to the same: a refused create,
//! delete or set is an error, never a wait.
//!
//! The mutation run found this shape twice (`agent/restart.rs:157`, `atom/watcher.rs:168`):
//! a guard widened to "every error" made the loop try a refused write forever, and nothing
//! noticed. Here each loop meets a subtree made read-only after the recipe has written once,
//! and must answer `NoAuth` within [`AT_ONCE`] on both backends.

use std::future::Future;
use std::time::Duration;

use avout::agent::Agent;
use avout::atom::{Atom, AtomError};
use avout::lock::{MultiLock, Mutex, RwLock};
use avout::locktable::{LockTable, LockTableError, Transaction, assert, set_var};
use avout::recipes::barrier::Barrier;
use avout::recipes::double_barrier::DoubleBarrier;
use avout::recipes::election::Election;
use avout::recipes::group::Group;
use avout::recipes::queue::{DelayQueue, IdQueue, PriorityQueue, Queue};
use avout::recipes::semaphore::Semaphore;
use avout::recipes::shared_value::{SharedCount, SharedValue};
use avout::recipes::two_phase_commit::Coordinator;
use avout::stm::{Protocol, Stm, StmConfig, StmError};
use avout::{Acl, Client, Coordination, Error};
use avout_testkit::backend::Backend;

use crate::acl::Add;
use crate::support::{self, on_both};

/// How long a refused write may take to fail: long enough for a loaded machine, far shorter
/// than a loop that never ends.
const AT_ONCE: Duration = Duration::from_secs(10);

/// `op`'s result, or a failed test if it runs past [`AT_ONCE`].
async fn at_once<T>(what: &str, op: impl Future<Output = T>) -> T {
    tokio::time::timeout(AT_ONCE, op)
        .await
        .unwrap_or_else(|_| panic!("{what}: a refused write was tried again and again"))
}

/// Asserts that `what` failed with `NoAuth` (inside a `multi` or not).
fn refused(what: &str, error: Option<&Error>) {
    assert!(
        matches!(error.map(Error::root), Some(Error::NoAuth { .. })),
        "{what}: {error:?}"
    );
}

/// Makes `root` and every node below it readable and nothing else, for anyone (a node that
/// goes meanwhile, such as a lock node whose release was deferred, is passed over).
async fn read_only(client: &Client, root: &str) {
    let mut stack = vec![root.to_owned()];
    while let Some(path) = stack.pop() {
        let children = match client.get_children(&path).await {
            Ok((children, _)) => children,
            Err(Error::NoNode { .. }) => continue,
            Err(e) => panic!("getChildren {path}: {e}"),
        };
        stack.extend(children.iter().map(|c| format!("{path}/{c}")));
        match client.set_acl(&path, &Acl::read_unsafe(), None).await {
            Ok(_) | Err(Error::NoNode { .. }) => {}
            Err(e) => panic!("setAcl {path}: {e}"),
        }
    }
}

/// The ZooKeeper error an atom operation failed with, if that is how it failed.
fn zk<T>(result: Result<T, AtomError>) -> Option<Error> {
    match result {
        Err(AtomError::Zk(e)) => Some(e),
        _ => None,
    }
}

async fn atoms(client: &Client) {
    let atom: Atom<u64> = Atom::open(client, "/refused/atom", 0).await.expect("open");
    atom.swap(|n| n + 1).await.expect("a first swap");
    read_only(client, "/refused/atom").await;
    refused(
        "swap",
        zk(at_once("swap", atom.swap(|n| n + 1)).await).as_ref(),
    );
    refused("reset", zk(at_once("reset", atom.reset(7)).await).as_ref());
    let cas = at_once("compare_and_set", atom.compare_and_set(&1, 2)).await;
    refused("compare_and_set", zk(cas).as_ref());
    assert_eq!(atom.deref().await.expect("still readable"), 1);
}

async fn shared_values(client: &Client) {
    let value = SharedValue::start(client, "/refused/value", b"seed")
        .await
        .expect("start");
    let seen = value.set(b"first").await.expect("a first set");
    read_only(client, "/refused/value").await;
    refused("set", at_once("set", value.set(b"x")).await.err().as_ref());
    // A refusal is not "someone else wrote first" (`Ok(false)`).
    let tried = at_once("try_set", value.try_set(&seen, b"x")).await;
    refused("try_set", tried.err().as_ref());
    value.close().await;
}

async fn transactions(client: &Client, protocol: Protocol, root: &str) {
    let stm = Stm::open(client, root, StmConfig::with_protocol(protocol))
        .await
        .expect("open");
    let a = stm.make_ref("a", 10i64).await.expect("ref");
    let b = stm.make_ref("b", 0i64).await.expect("ref");
    let transfer = || {
        stm.dosync(async |tx| {
            tx.alter(&a, |n| n - 1).await?;
            tx.alter(&b, |n| n + 1).await?;
            Ok(())
        })
    };
    transfer().await.expect("a first transfer");
    read_only(client, root).await;
    let what = format!("{protocol:?} dosync");
    match at_once(&what, transfer()).await {
        Err(StmError::Zk(e)) => refused(&what, Some(&e)),
        other => panic!("{what}: {other:?}"),
    }
}

async fn lock_tables(client: &Client) {
    let table = LockTable::new(client, "/refused/table").expect("table");
    let enter = |patient: &str| {
        Transaction::new(
            "enter",
            vec![assert(set_var("MDS-Entry", "CGROVE-35", patient))],
        )
    };
    table.execute(&enter("R-1")).await.expect("a first entry");
    read_only(client, "/refused/table").await;
    match at_once("execute", table.execute(&enter("R-2"))).await {
        Err(LockTableError::Zk(e)) => refused("execute", Some(&e)),
        other => panic!("execute: {other:?}"),
    }
}

async fn compare_and_set_loops(backend: &dyn Backend) {
    let client = &support::client_of(backend).await;
    atoms(client).await;
    shared_values(client).await;
    transactions(client, Protocol::Optimistic, "/refused/optimistic").await;
    transactions(client, Protocol::Mvcc, "/refused/mvcc").await;
    lock_tables(client).await;
}

on_both!(
    /// Atoms, shared values, both STM protocols and lock tables fail at once on a refusal.
    compare_and_set_loops_fail_at_once_on_a_refusal,
    support::plain_sim(0x7ef0),
    |b| compare_and_set_loops(b),
);

/// Asserts that `what` failed, and with `NoAuth` somewhere in its error (the recipes wrap
/// ZooKeeper's errors in types of their own).
fn refused_debug<T: std::fmt::Debug, E: std::fmt::Debug>(what: &str, result: Result<T, E>) {
    match result {
        Err(e) => assert!(format!("{e:?}").contains("NoAuth"), "{what}: {e:?}"),
        Ok(v) => panic!("{what} was not refused: {v:?}"),
    }
}

async fn creating_recipes(backend: &dyn Backend) {
    let client = &support::client_of(backend).await;
    let mutex = Mutex::new(client, "/refused/mutex").expect("handle");
    let first = mutex.lock().await.expect("a first lock");
    first.unlock().await.expect("unlock");
    let rw = RwLock::new(client, "/refused/rw").expect("handle");
    drop(rw.write().await.expect("a first write lock"));
    let semaphore = Semaphore::new(client, "/refused/semaphore", 2).expect("handle");
    let lease = semaphore.acquire().await.expect("a first lease");
    lease.release().await.expect("release");
    let election = Election::new(client, "/refused/election").expect("handle");
    drop(election.campaign().await.expect("a first campaign"));
    let queue = Queue::new(client, "/refused/queue").expect("handle");
    queue.put(b"a").await.expect("a first put");
    let round = DoubleBarrier::new(client, "/refused/round", 1).expect("handle");
    round
        .enter()
        .await
        .expect("a first entry")
        .leave()
        .await
        .expect("leave");
    read_only(client, "/refused").await;
    refused_debug("lock", at_once("lock", mutex.lock()).await);
    refused_debug("write lock", at_once("write lock", rw.write()).await);
    refused_debug("acquire", at_once("acquire", semaphore.acquire()).await);
    refused_debug("campaign", at_once("campaign", election.campaign()).await);
    refused_debug("put", at_once("put", queue.put(b"b")).await);
    refused_debug("take", at_once("take", queue.take()).await);
    refused_debug("enter", at_once("enter", round.enter()).await);
}

on_both!(
    /// Locks, semaphores, elections, queues and double barriers fail at once on a refusal.
    creating_recipes_fail_at_once_on_a_refusal,
    support::plain_sim(0x7ef1),
    |b| creating_recipes(b),
);

async fn other_recipes(backend: &dyn Backend) {
    let client = &support::client_of(backend).await;
    let multi = MultiLock::new(client, ["/refusing/a", "/refusing/b"]).expect("handle");
    let first = multi.lock().await.expect("a first lock");
    first.unlock().await.expect("unlock");
    let priority = PriorityQueue::new(client, "/refusing/priority").expect("handle");
    priority.put(3, b"a").await.expect("a first put");
    let ids = IdQueue::new(client, "/refusing/ids").expect("handle");
    ids.put("job-1", b"a").await.expect("a first put");
    let delayed = DelayQueue::new(client, "/refusing/delayed").expect("handle");
    let later = Duration::from_secs(60);
    delayed.put_after(later, b"a").await.expect("a first put");
    let barrier = Barrier::new(client, "/refusing/gate").expect("handle");
    barrier.set().await.expect("a first set");
    barrier.remove().await.expect("remove");
    let group = Group::new(client, "/refusing/group").expect("handle");
    drop(group.join("alice", b"up").await.expect("a first join"));
    let agent: Agent<i64, Add> = Agent::open(client, "/refusing/agent", 0)
        .await
        .expect("open");
    agent.send(Add(1)).await.expect("a first send");
    let count = SharedCount::start(client, "/refusing/count", 7)
        .await
        .expect("start");
    read_only(client, "/refusing").await;
    refused_debug("multi-lock", at_once("multi-lock", multi.lock()).await);
    refused_debug("priority put", at_once("put", priority.put(3, b"b")).await);
    refused_debug("id put", at_once("put", ids.put("job-2", b"b")).await);
    refused_debug(
        "delay put",
        at_once("put", delayed.put_after(later, b"b")).await,
    );
    refused_debug("barrier set", at_once("set", barrier.set()).await);
    refused_debug("join", at_once("join", group.join("bob", b"up")).await);
    refused_debug("send", at_once("send", agent.send(Add(1))).await);
    refused_debug("count set", at_once("set", count.set(8)).await);
    let begun = Coordinator::begin(client, "/refusing/tx", &["a"], b"payload");
    refused_debug("begin", at_once("begin", begun).await);
}

on_both!(
    /// Multi-locks, the other queues, barriers, groups, agents' sends, shared counts and
    /// two-phase commit fail at once on a refusal.
    the_other_recipes_fail_at_once_on_a_refusal,
    support::plain_sim(0x7ef2),
    |b| other_recipes(b),
);
