//! The persistent node on a real ZooKeeper server: created, created again after another
//! session deletes it, created again on the managed client's next session after an expiry,
//! its data set through the handle, deleted on close; a TTL node kept past its TTL.

use std::sync::Arc;
use std::time::Duration;

use avout::recipes::persistent_node::PersistentNode;
use avout::zk::{ZkClient, ZkConfig};
use avout::{Coordination, CreateMode};

use crate::support;

const WITHIN: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_node_comes_back_after_deletion_and_expiry_on_a_real_server() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let first = Arc::new(ZkClient::connect(&config).await.expect("owner"));
    let owner = support::adopt(&config, &first);
    let other = support::connect(&config).await;
    let path = "/pn/real/me";
    let node =
        PersistentNode::start(&owner, path, b"a", CreateMode::Ephemeral, None).expect("start");
    let stat = node.wait_created(WITHIN).await.expect("created");
    assert_eq!(stat.ephemeral_owner, first.session().id.0);

    other.delete(path, None).await.expect("vandal deletes it");
    let again = support::eventually("created again", WITHIN, || async {
        node.stat().filter(|s| s.czxid != stat.czxid)
    })
    .await;
    assert_eq!(other.get_data(path).await.expect("there").0, b"a");

    node.set_data(b"b").await.expect("set");
    assert_eq!(other.get_data(path).await.expect("there").0, b"b");

    first.expire_session().await.expect("expire");
    let (data, after) = support::eventually("back on the next session", WITHIN, || async {
        match other.get_data(path).await {
            Ok((data, stat)) if stat.ephemeral_owner != first.session().id.0 => Some((data, stat)),
            _ => None,
        }
    })
    .await;
    assert_eq!(data, b"b", "created again with the latest data");
    assert_eq!(owner.generation(), 2);
    assert_eq!(after.ephemeral_owner, owner.session().id.0);
    assert!(after.czxid > again.czxid);

    node.close().await.expect("close");
    assert_eq!(
        other.exists(path).await.expect("exists"),
        None,
        "deleted on close"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_node_is_kept_past_its_ttl_and_a_persistent_one_taken_over_on_a_real_server() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let owner = support::client(&config).await;
    let other = support::connect(&config).await;
    let ttl = Duration::from_secs(1);
    let node = PersistentNode::start(
        &owner,
        "/pn/ttl",
        b"t",
        CreateMode::PersistentWithTtl,
        Some(ttl),
    )
    .expect("start");
    node.wait_created(WITHIN).await.expect("created");
    // The test kit's reaper runs every 100 ms: untouched, the node would be gone.
    tokio::time::sleep(ttl * 4).await;
    let (data, stat) = other.get_data("/pn/ttl").await.expect("kept past its TTL");
    assert_eq!(data, b"t");
    assert!(stat.version >= 2, "touched: version {}", stat.version);
    node.close().await.expect("close");

    // A persistent node found there is taken over with the handle's data.
    avout::CoordinationExt::ensure_path(&other, "/pn/taken")
        .await
        .expect("setup");
    let node = PersistentNode::start(&owner, "/pn/taken", b"mine", CreateMode::Persistent, None)
        .expect("start");
    support::eventually("taken over", WITHIN, || async {
        (other.get_data("/pn/taken").await.ok()?.0 == b"mine").then_some(())
    })
    .await;
    node.close().await.expect("close");
    assert_eq!(other.exists("/pn/taken").await.expect("exists"), None);
}
