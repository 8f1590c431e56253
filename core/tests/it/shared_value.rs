//! The shared value and count on a real ZooKeeper server: seeded once, set, compare-and-set
//! on the version seen, each change heard by another process, and followed across an expiry
//! of a managed client's session.

use std::sync::Arc;
use std::time::Duration;

use avout::recipes::shared_value::{SharedCount, SharedValue};
use avout::zk::{ZkClient, ZkConfig};

use crate::support;

const WITHIN: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_count_is_set_compared_and_heard_on_a_real_server() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let first = Arc::new(ZkClient::connect(&config).await.expect("session"));
    let a = support::adopt(&config, &first);
    let b = support::client(&config).await;
    let count = SharedCount::start(&a, "/shared/real/n", 5)
        .await
        .expect("a");
    let mut other = SharedCount::start(&b, "/shared/real/n", 99)
        .await
        .expect("b");
    assert_eq!(other.get().expect("seeded").value, 5, "seeded once");

    let seen = count.get().expect("there");
    assert!(count.try_set(&seen, 6).await.expect("cas"));
    assert!(
        !count.try_set(&seen, 7).await.expect("stale cas"),
        "an old version is refused"
    );
    let heard = tokio::time::timeout(WITHIN, other.next_change())
        .await
        .expect("heard in time")
        .expect("running")
        .expect("set");
    assert_eq!((heard.value, heard.version), (6, 1));

    first.expire_session().await.expect("expire");
    support::eventually("set on the next session", WITHIN, || async {
        count.set(42).await.ok()
    })
    .await;
    let heard = tokio::time::timeout(WITHIN, other.next_change())
        .await
        .expect("heard in time")
        .expect("running")
        .expect("set");
    assert_eq!(heard.value, 42);
    support::eventually("the expired side follows too", WITHIN, || async {
        (count.get()?.value == 42).then_some(())
    })
    .await;
    assert_eq!(a.generation(), 2);

    let bytes = SharedValue::start(&b, "/shared/real/v", b"x")
        .await
        .expect("value");
    bytes.set(b"y").await.expect("set");
    support::eventually("value seen", WITHIN, || async {
        (bytes.get()?.value == b"y").then_some(())
    })
    .await;
    bytes.close().await;
    count.close().await;
    other.close().await;
}
