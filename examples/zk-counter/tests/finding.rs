//! What the simulator found in `zookeeper-client`'s own lock, shown on the real crate and
//! a real ZooKeeper server (a normal build), and on the simulation (`--cfg madsim`).
//!
//! `Client::lock` is documented as cancellation safe: a lock future dropped mid-way leaves
//! no lock node behind. With a Curator prefix (`LockPrefix::new_curator`) that does not hold
//! while the lock node's create is outstanding: the guard that should delete it lists the
//! directory and deletes the child's *name*, not its path, which fails the client's own path
//! check (`BadArguments`) and is ignored. The node stays for as long as its session lives,
//! the first in line: every later contender, the same session's included, waits behind it.
//!
//! A second, minor one, shown on the simulation (it needs a lost reply): with a shared or
//! custom prefix, a lock whose create lost its reply finds its node by its owner, then parses
//! the node's whole path where it meant its name, and fails with `UnexpectedError` (its guard
//! does delete the node: nothing is left behind).

use std::time::Duration;

use zookeeper_client as zk;

/// Drops a Curator lock future right after it sent its create, then counts the lock nodes
/// left once the guard's background cleanup has run.
async fn nodes_left_by_a_cancelled_lock(cluster: &str) -> Vec<String> {
    let client = zk::Client::connect(cluster).await.unwrap();
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    client.mkdir("/finding/lock", &open).await.unwrap();
    let prefix = zk::LockPrefix::new_curator("/finding/lock", "lock-").unwrap();
    let mut lock = Box::pin(client.lock(prefix, b"", zk::Acls::anyone_all()));
    // The first poll sends the create; the future is pending on its reply.
    assert!(futures::poll!(lock.as_mut()).is_pending());
    drop(lock);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let left = client.list_children("/finding/lock").await.unwrap();
    // Another session cannot take the lock while the leaked node stands.
    let other = zk::Client::connect(cluster).await.unwrap();
    let prefix = zk::LockPrefix::new_curator("/finding/lock", "lock-").unwrap();
    let waited = tokio::time::timeout(
        Duration::from_secs(2),
        other.lock(prefix, b"", zk::Acls::anyone_all()),
    )
    .await;
    assert!(
        waited.is_err(),
        "the other session got the lock: no node was left"
    );
    left
}

#[cfg(not(madsim))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_lock_cancelled_during_its_create_leaks_its_node_on_a_real_server() {
    let server = tokio::task::block_in_place(avout_testkit::server::ZkServer::start)
        .unwrap_or_else(|e| panic!("cannot start a ZooKeeper server (tests never skip): {e}"));
    let left = nodes_left_by_a_cancelled_lock(&server.connect_string()).await;
    assert_eq!(left.len(), 1, "the cancelled lock's node: {left:?}");
}

#[cfg(madsim)]
#[madsim::test]
async fn a_curator_lock_cancelled_during_its_create_leaks_its_node_on_the_simulation() {
    let _server = zk::SimServer::builder().start(["zk:2181"]);
    let left = nodes_left_by_a_cancelled_lock("zk:2181").await;
    assert_eq!(left.len(), 1, "the cancelled lock's node: {left:?}");
}

#[cfg(madsim)]
#[madsim::test]
async fn a_shared_prefix_lock_whose_create_lost_its_reply_fails_to_find_its_node() {
    let server = zk::SimServer::builder().start(["zk:2181"]);
    let client = zk::Client::connect("zk:2181").await.unwrap();
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    client.mkdir("/finding/shared", &open).await.unwrap();
    // The lock's create is applied and its reply lost: `ConnectionLoss`, then the search.
    server
        .zk()
        .inject(avout_sim_zk::Fault::ReplyLost { client: None });
    let prefix = zk::LockPrefix::new_shared("/finding/shared/n-").unwrap();
    let failed = client
        .lock(prefix, b"", zk::Acls::anyone_all())
        .await
        .unwrap_err();
    assert_eq!(
        failed,
        zk::Error::UnexpectedError(
            "sequential path /finding/shared/n-0000000000 does not contain prefix path n-".into()
        )
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let left = client.list_children("/finding/shared").await.unwrap();
    assert!(left.is_empty(), "its guard deleted the node: {left:?}");
}
