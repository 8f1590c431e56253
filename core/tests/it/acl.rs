//! ACLs across the recipes, on a real server: a recipe opened on a client view with an ACL
//! ([`Client::with_acl`]) creates every node it makes with that ACL. One test per family
//! reads back the ACL of every node under the recipe's root (its root and parents included)
//! while the recipe holds what it holds, and checks that a stranger is kept out.
//!
//! The ACL is `auth` for the creator (`Acl::creator_all`): ZooKeeper stores it as the
//! session's own identity, `digest:app:…`, with every permission.

use std::time::Duration;

use avout::agent::{Action, Agent};
use avout::atom::Atom;
use avout::lock::{MultiLock, Mutex, RwLock};
use avout::locktable::{LockTable, Transaction, assert, set_var};
use avout::recipes::barrier::Barrier;
use avout::recipes::double_barrier::DoubleBarrier;
use avout::recipes::election::Election;
use avout::recipes::group::Group;
use avout::recipes::persistent_node::PersistentNode;
use avout::recipes::queue::{DelayQueue, IdQueue, PriorityQueue, Queue};
use avout::recipes::semaphore::Semaphore;
use avout::recipes::shared_value::{SharedCount, SharedValue};
use avout::recipes::two_phase_commit::{Coordinator, Site};
use avout::stm::{Protocol, Stm, StmConfig};
use avout::zk::ZkConfig;
use avout::{Acl, Client, Coordination, CreateMode, Error, Perms};
use avout_testkit::server::ZkServer;

use crate::support;

/// A server, a client authenticated as `app` whose view creates with `creator_all`, and an
/// unauthenticated stranger.
struct Fixture {
    _server: ZkServer,
    /// The view every recipe is opened on.
    client: Client,
    stranger: Client,
    expected: Vec<Acl>,
}

impl Fixture {
    async fn start() -> Fixture {
        let server = support::standalone();
        let config = ZkConfig::new(server.connect_string()).with_digest("app", "secret");
        let client = support::client(&config).await;
        let stranger = support::client(&ZkConfig::new(server.connect_string())).await;
        Fixture {
            _server: server,
            client: client
                .with_acl(Acl::creator_all())
                .expect("a non-empty ACL"),
            stranger,
            expected: vec![Acl::digest("app", "secret", Perms::ALL)],
        }
    }

    /// Checks the ACL of `root` and of every node below it (nodes that go while it walks are
    /// passed over) and that the stranger cannot read `root`; returns how many it checked.
    async fn check(&self, root: &str) -> usize {
        let mut checked = 0;
        let mut stack = vec![root.to_owned()];
        while let Some(path) = stack.pop() {
            match self.client.get_acl(&path).await {
                Ok((acl, _)) => assert_eq!(acl, self.expected, "the ACL of {path}"),
                Err(Error::NoNode { .. }) => continue,
                Err(e) => panic!("getAcl {path}: {e}"),
            }
            checked += 1;
            match self.client.get_children(&path).await {
                Ok((children, _)) => {
                    stack.extend(children.iter().map(|c| format!("{path}/{c}")));
                }
                Err(Error::NoNode { .. }) => {}
                Err(e) => panic!("getChildren {path}: {e}"),
            }
        }
        assert!(
            matches!(
                self.stranger.get_data(root).await,
                Err(Error::NoAuth { .. })
            ),
            "a stranger reads {root}"
        );
        checked
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_read_write_locks_and_multi_locks() {
    let f = Fixture::start().await;
    let mutex = Mutex::new(&f.client, "/locks/mutex").unwrap();
    let held = mutex.lock().await.unwrap();
    let rw = RwLock::new(&f.client, "/locks/rw").unwrap();
    let read = rw.read().await.unwrap();
    let multi = MultiLock::new(&f.client, ["/locks/a", "/locks/b"]).unwrap();
    let both = multi.lock().await.unwrap();
    // /locks, and each of the four locks with its node.
    assert!(f.check("/locks").await >= 9);
    both.unlock().await.unwrap();
    drop(read);
    held.unlock().await.unwrap();
    let write = rw.write().await.unwrap();
    assert!(f.check("/locks/rw").await >= 2);
    drop(write);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphores() {
    let f = Fixture::start().await;
    let semaphore = Semaphore::new(&f.client, "/semaphore", 2).unwrap();
    let one = semaphore.acquire().await.unwrap();
    let two = semaphore.acquire().await.unwrap();
    assert!(f.check("/semaphore").await >= 3);
    one.release().await.unwrap();
    two.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elections_and_leader_latches() {
    let f = Fixture::start().await;
    let election = Election::new(&f.client, "/leaders/campaign").unwrap();
    let leadership = election.campaign().await.unwrap();
    assert!(leadership.is_leader());
    let latch = Election::new(&f.client, "/leaders/latch").unwrap().latch();
    latch.leading().await.unwrap();
    assert!(f.check("/leaders").await >= 5);
    latch.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups() {
    let f = Fixture::start().await;
    let group = Group::new(&f.client, "/group").unwrap();
    let _alice = group.join("alice", b"up").await.unwrap();
    let _bob = group.join("bob", b"up").await.unwrap();
    assert!(f.check("/group").await >= 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barriers_and_double_barriers() {
    let f = Fixture::start().await;
    let barrier = Barrier::new(&f.client, "/barriers/gate").unwrap();
    barrier.set().await.unwrap();
    let round = DoubleBarrier::new(&f.client, "/barriers/round", 1).unwrap();
    let inside = round.enter().await.unwrap();
    assert!(f.check("/barriers").await >= 4);
    inside.leave().await.unwrap();
    barrier.remove().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_of_every_kind() {
    let f = Fixture::start().await;
    Queue::new(&f.client, "/queues/fifo")
        .unwrap()
        .put(b"a")
        .await
        .unwrap();
    PriorityQueue::new(&f.client, "/queues/priority")
        .unwrap()
        .put(3, b"b")
        .await
        .unwrap();
    IdQueue::new(&f.client, "/queues/id")
        .unwrap()
        .put("job-1", b"c")
        .await
        .unwrap();
    DelayQueue::new(&f.client, "/queues/delay")
        .unwrap()
        .put_after(Duration::from_secs(60), b"d")
        .await
        .unwrap();
    // /queues, four queues, an element in each.
    assert!(f.check("/queues").await >= 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atoms() {
    let f = Fixture::start().await;
    let atom: Atom<u64> = Atom::open(&f.client, "/atoms/hits", 0).await.unwrap();
    assert_eq!(atom.swap(|n| n + 1).await.unwrap(), 1);
    assert!(f.check("/atoms").await >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_stm_protocols() {
    let f = Fixture::start().await;
    for (protocol, root) in [
        (Protocol::Optimistic, "/stm/optimistic"),
        (Protocol::Mvcc, "/stm/mvcc"),
    ] {
        let stm = Stm::open(&f.client, root, StmConfig::with_protocol(protocol))
            .await
            .unwrap();
        let a = stm.make_ref("a", 10i64).await.unwrap();
        let b = stm.make_ref("b", 0i64).await.unwrap();
        stm.dosync(async |tx| {
            tx.alter(&a, |n| n - 1).await?;
            tx.alter(&b, |n| n + 1).await?;
            Ok(())
        })
        .await
        .unwrap();
        // The root and the two refs at least; Mvcc adds its history and per-ref nodes.
        assert!(f.check(root).await >= 3, "{protocol:?}");
    }
}

/// Adds to a counter (the refusal tests send it too).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Add(pub(crate) i64);

impl Action<i64> for Add {
    type Error = String;
    fn apply(&self, n: &i64) -> Result<i64, String> {
        Ok(n + self.0)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents() {
    let f = Fixture::start().await;
    let agent: Agent<i64, Add> = Agent::open(&f.client, "/agents/total", 0).await.unwrap();
    // The executor makes nodes of its own (its lock), on the same view.
    let executor = tokio::spawn({
        let agent = agent.clone();
        async move { agent.run_executor().await }
    });
    agent.send(Add(2)).await.unwrap();
    agent.await_applied().await.unwrap();
    assert_eq!(agent.deref().await.unwrap(), 2);
    assert!(f.check("/agents").await >= 3);
    executor.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_tables() {
    let f = Fixture::start().await;
    let table = LockTable::new(&f.client, "/locking/clinic").unwrap();
    table
        .execute(&Transaction::new(
            "enter",
            vec![assert(set_var("MDS-Entry", "CGROVE-35", "R-1"))],
        ))
        .await
        .unwrap();
    assert!(f.check("/locking").await >= 3);
}

/// Kept nodes, shared values and counts, and two-phase commit (caches create nothing: they
/// only read what they follow).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_nodes_shared_values_and_two_phase_commit() {
    let f = Fixture::start().await;
    let kept = PersistentNode::start(&f.client, "/misc/kept/me", b"", CreateMode::Ephemeral, None)
        .unwrap();
    kept.wait_created(Duration::from_secs(10)).await.unwrap();
    let value = SharedValue::start(&f.client, "/misc/value", b"seed")
        .await
        .unwrap();
    let count = SharedCount::start(&f.client, "/misc/count", 7)
        .await
        .unwrap();
    let tx = Coordinator::begin(&f.client, "/misc/tx", &["a"], b"payload")
        .await
        .unwrap();
    let site = Site::join(&f.client, "/misc/tx", "a").await.unwrap();
    assert!(f.check("/misc").await >= 6);
    drop((site, tx));
    value.close().await;
    drop(count);
    kept.close().await.unwrap();
}

/// The view's ACL is checked, and the same client without a view keeps the backend's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_acl_is_refused_and_other_views_keep_the_default() {
    let f = Fixture::start().await;
    assert!(matches!(
        f.client.with_acl(Vec::new()),
        Err(Error::BadArguments(_))
    ));
    let open = Client::clone(&f.stranger);
    let atom: Atom<u64> = Atom::open(&open, "/open/hits", 0).await.unwrap();
    atom.swap(|n| n + 1).await.unwrap();
    let (acl, _) = open.get_acl("/open/hits").await.unwrap();
    assert_eq!(acl, Acl::open_unsafe());
}
