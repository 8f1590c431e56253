//! The id queue on a real standalone server: the id in Curator's place in the node name, a
//! removal that counts exactly and whose elements are never taken, refused ids that change
//! nothing, and a removal by the same handle after its session expired.

use std::sync::Arc;
use std::time::Duration;

use avout::recipes::queue::{IdQueue, QueueError};
use avout::zk::{ZkClient, ZkConfig};
use avout::{Coordination, Error};

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elements_are_removed_by_id_and_never_taken_on_a_real_server() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let producer = IdQueue::new(&support::client(&config).await, "/idq/real").expect("queue");
    let consumer = IdQueue::new(&support::client(&config).await, "/idq/real").expect("queue");
    for bad in ["", "a|b", "a/b"] {
        let refused = producer.put(bad, b"x").await;
        assert!(
            matches!(refused, Err(QueueError::Zk(Error::BadArguments(_)))),
            "{bad:?}: {refused:?}"
        );
    }
    for (id, data) in [
        ("o1", "a"),
        ("o2", "b"),
        ("o1", "c"),
        ("o3", "d"),
        ("o1", "e"),
    ] {
        producer.put(id, data.as_bytes()).await.expect("put");
    }
    let observer = support::connect(&config).await;
    let (children, _) = observer.get_children("/idq/real").await.expect("ls");
    assert!(
        children
            .iter()
            .any(|c| c.starts_with("queue-") && c.contains("-|o2|")),
        "the id sits between separators: {children:?}"
    );
    assert_eq!(consumer.remove("o1").await.expect("remove"), 3);
    assert_eq!(consumer.remove("o1").await.expect("remove again"), 0);
    let mut taken = Vec::new();
    while let Some(e) = consumer.try_take().await.expect("take") {
        taken.push((e.id().expect("an id").to_owned(), e.data));
    }
    assert_eq!(
        taken,
        [
            ("o2".to_owned(), b"b".to_vec()),
            ("o3".to_owned(), b"d".to_vec())
        ],
        "the rest, in order"
    );
    assert_eq!(producer.count().await.expect("count"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_queue_carries_on_after_its_session_expires() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let first = Arc::new(ZkClient::connect(&config).await.expect("session"));
    let client = support::adopt(&config, &first);
    let q = IdQueue::new(&client, "/idq/expiry").expect("queue");
    q.put("x", b"1").await.expect("put");
    q.put("x", b"2").await.expect("put");
    q.put("y", b"3").await.expect("put");
    first.expire_session().await.expect("expire");
    let removed = support::eventually(
        "a removal on the next session",
        Duration::from_secs(20),
        || async { q.remove("x").await.ok() },
    )
    .await;
    assert_eq!(removed, 2);
    assert_eq!(
        q.try_take().await.expect("take").map(|e| e.data),
        Some(b"3".to_vec())
    );
    assert_eq!(client.generation(), 2);
}
