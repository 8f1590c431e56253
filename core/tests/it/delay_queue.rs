//! The delay queue on a real standalone server, on the system clock: elements come out in
//! due order, none before its due time, a waiting take wakes for the due time without
//! polling (and sooner for an element put due earlier), and a take by the same handle after
//! its session expired.

use std::sync::Arc;
use std::time::Duration;

use avout::recipes::queue::DelayQueue;
use avout::zk::{ZkClient, ZkConfig};

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elements_come_out_when_due_in_due_order_on_a_real_server() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let producer = DelayQueue::new(&support::client(&config).await, "/dq/real").expect("queue");
    let consumer = DelayQueue::new(&support::client(&config).await, "/dq/real").expect("queue");
    let now = producer.now_ms();
    producer.put(now + 1_500, b"third").await.expect("put");
    producer.put(now + 900, b"second").await.expect("put");
    producer
        .put(now.saturating_sub(10), b"first")
        .await
        .expect("put");
    let mut order = Vec::new();
    for _ in 0..3 {
        let e = tokio::time::timeout(Duration::from_secs(10), consumer.take())
            .await
            .expect("in time")
            .expect("take");
        let at = consumer.now_ms();
        let due = e.due_ms().expect("a due time");
        assert!(at >= due, "taken at {at}, due at {due}");
        assert!(
            at < due + 1_000,
            "taken at {at}, due at {due}: woken by the timer"
        );
        order.push(e.data);
    }
    assert_eq!(order, [&b"first"[..], b"second", b"third"]);

    // A take waiting for a far element wakes for an element put due sooner.
    producer
        .put(consumer.now_ms() + 60_000, b"far")
        .await
        .expect("put");
    let waiting = tokio::spawn(async move { consumer.take().await.map(|e| e.data) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished());
    producer
        .put_after(Duration::from_millis(200), b"soon")
        .await
        .expect("put");
    let soon = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("woken by the watch")
        .expect("task")
        .expect("take");
    assert_eq!(soon, b"soon");
    assert!(
        producer.try_take().await.expect("try").is_none(),
        "far is not due"
    );
    assert_eq!(producer.count().await.expect("count"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_queue_carries_on_after_its_session_expires() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let first = Arc::new(ZkClient::connect(&config).await.expect("session"));
    let client = support::adopt(&config, &first);
    let q = DelayQueue::new(&client, "/dq/expiry").expect("queue");
    q.put_after(Duration::from_millis(1_000), b"later")
        .await
        .expect("put");
    first.expire_session().await.expect("expire");
    let e = support::eventually(
        "a take on the next session",
        Duration::from_secs(20),
        || async { q.take_for(Duration::from_secs(5)).await.ok().flatten() },
    )
    .await;
    assert_eq!(e.data, b"later");
    assert!(q.now_ms() >= e.due_ms().expect("due"));
    assert_eq!(client.generation(), 2);
}
