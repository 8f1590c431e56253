//! The FIFO and priority queues on a real standalone server, with a session per producer and
//! per consumer: every element delivered exactly once, in order per producer.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use avout::Coordination;
use avout::recipes::queue::{PriorityQueue, Queue};
use avout::zk::ZkConfig;

use crate::support;

/// Decodes "p<producer>-<index>".
fn parse(data: &[u8]) -> (usize, usize) {
    let text = std::str::from_utf8(data).expect("utf-8");
    let (p, i) = text[1..].split_once('-').expect("p<n>-<i>");
    (p.parse().expect("producer"), i.parse().expect("index"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producers_and_consumers_deliver_every_element_exactly_once_in_order_per_producer() {
    const PRODUCERS: usize = 3;
    const CONSUMERS: usize = 4;
    const EACH: usize = 40;
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let producers = support::clients(&config, PRODUCERS).await;
    let consumers = support::clients(&config, CONSUMERS).await;

    let produce = producers.iter().enumerate().map(|(p, zk)| {
        let queue = Queue::new(zk, "/it/queue/jobs").expect("queue");
        async move {
            for i in 0..EACH {
                queue
                    .put(format!("p{p}-{i}").as_bytes())
                    .await
                    .expect("put");
            }
        }
    });
    let consume = consumers.iter().map(|zk| {
        let queue = Queue::new(zk, "/it/queue/jobs").expect("queue");
        async move {
            let mut got = Vec::new();
            // Stop once the queue has stayed empty for a while after the producers are done.
            while let Some(element) = queue.take_for(Duration::from_secs(3)).await.expect("take") {
                got.push(parse(&element.data));
            }
            got
        }
    });
    let (_, taken) = tokio::join!(
        futures::future::join_all(produce),
        futures::future::join_all(consume)
    );

    let mut seen: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for (c, got) in taken.iter().enumerate() {
        // Each consumer takes the lowest element each time, so one producer's elements reach
        // it in the order they were put.
        for p in 0..PRODUCERS {
            let mine: Vec<usize> = got
                .iter()
                .filter(|(q, _)| *q == p)
                .map(|(_, i)| *i)
                .collect();
            assert!(
                mine.windows(2).all(|w| w[0] < w[1]),
                "consumer {c} got producer {p}'s elements out of order: {mine:?}"
            );
        }
        for &key in got {
            *seen.entry(key).or_default() += 1;
        }
    }
    let duplicated: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(duplicated.is_empty(), "delivered twice: {duplicated:?}");
    let missing: Vec<_> = (0..PRODUCERS)
        .flat_map(|p| (0..EACH).map(move |i| (p, i)))
        .filter(|k| !seen.contains_key(k))
        .collect();
    assert!(missing.is_empty(), "never delivered: {missing:?}");
    let shares: Vec<usize> = taken.iter().map(Vec::len).collect();
    eprintln!("elements per consumer: {shares:?}");

    // Receipts are deleted once each put and take is settled.
    let observer = &consumers[0];
    support::eventually(
        "receipts are cleaned up",
        Duration::from_secs(5),
        || async {
            let (children, _) = observer
                .get_children("/it/queue/jobs/_receipts")
                .await
                .expect("receipts node");
            children.is_empty().then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_consumer_sees_fifo_order() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let zk = support::clients(&config, 2).await;
    let producer = Queue::new(&zk[0], "/fifo").expect("queue");
    let consumer = Queue::new(&zk[1], "/fifo").expect("queue");
    assert_eq!(
        consumer.try_take().await.expect("try_take"),
        None,
        "missing queue is empty"
    );
    for i in 0..20 {
        producer.put(format!("{i}").as_bytes()).await.expect("put");
    }
    assert_eq!(consumer.count().await.expect("count"), 20);
    let mut last = None;
    for i in 0..20 {
        let element = consumer.take().await.expect("take");
        assert_eq!(element.data, format!("{i}").as_bytes());
        assert!(element.sequence() > last, "sequence numbers grow");
        last = element.sequence();
    }
    assert_eq!(consumer.try_take().await.expect("try_take"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_take_wakes_on_put_and_a_cancelled_one_loses_nothing() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let zk = support::clients(&config, 2).await;
    let producer = Queue::new(&zk[0], "/wake").expect("queue");
    let consumer = Queue::new(&zk[1], "/wake").expect("queue");

    assert_eq!(
        consumer
            .take_for(Duration::from_millis(300))
            .await
            .expect("take_for"),
        None,
        "an empty queue times out"
    );
    // Cancel a few waiting takes mid-wait.
    for _ in 0..3 {
        let _ = tokio::time::timeout(Duration::from_millis(100), consumer.take()).await;
    }
    let waiting = tokio::spawn({
        let consumer = consumer.clone();
        async move { consumer.take().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "waits while the queue is empty");
    producer.put(b"first").await.expect("put");
    producer.put(b"second").await.expect("put");
    let first = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("woken by the put")
        .expect("task")
        .expect("take");
    assert_eq!(first.data, b"first");
    assert_eq!(consumer.take().await.expect("take").data, b"second");
    assert_eq!(consumer.try_take().await.expect("try_take"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_priority_queue_delivers_by_priority_then_fifo() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let zk = support::clients(&config, 2).await;
    let producer = PriorityQueue::new(&zk[0], "/prio").expect("queue");
    let consumer = PriorityQueue::new(&zk[1], "/prio").expect("queue");
    let puts: [(u8, &str); 7] = [
        (5, "e1"),
        (1, "b1"),
        (9, "z1"),
        (1, "b2"),
        (0, "a1"),
        (5, "e2"),
        (0, "a2"),
    ];
    for (priority, data) in puts {
        producer.put(priority, data.as_bytes()).await.expect("put");
    }
    let mut order = Vec::new();
    while let Some(element) = consumer.try_take().await.expect("take") {
        order.push(String::from_utf8(element.data).expect("utf-8"));
    }
    assert_eq!(order, ["a1", "a2", "b1", "b2", "e1", "e2", "z1"]);

    // An urgent element put while others wait is taken next.
    producer.put(7, b"later").await.expect("put");
    producer.put(2, b"urgent").await.expect("put");
    assert_eq!(consumer.take().await.expect("take").data, b"urgent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_on_an_ensemble_that_loses_a_consumers_member() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    const PRODUCERS: usize = 2;
    const CONSUMERS: usize = 2;
    const EACH: usize = 60;
    let ensemble = support::ensemble();
    let config =
        ZkConfig::new(ensemble.connect_string()).with_session_timeout(Duration::from_secs(15));
    let producers = support::clients(&config, PRODUCERS).await;
    let consumers = support::clients(&config, CONSUMERS).await;
    let taken_so_far = Arc::new(AtomicUsize::new(0));

    let produce = producers.iter().enumerate().map(|(p, zk)| {
        let queue = Queue::new(zk, "/it/ensemble-queue").expect("queue");
        async move {
            for i in 0..EACH {
                queue
                    .put(format!("p{p}-{i}").as_bytes())
                    .await
                    .expect("put");
                // Spread the puts over the failover.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    let consume = consumers.iter().map(|zk| {
        let queue = Queue::new(zk, "/it/ensemble-queue").expect("queue");
        let counter = taken_so_far.clone();
        async move {
            let mut got = Vec::new();
            while let Some(element) = queue.take_for(Duration::from_secs(5)).await.expect("take") {
                got.push(parse(&element.data));
                counter.fetch_add(1, Ordering::SeqCst);
            }
            got
        }
    });
    let victim = consumers[0].session().id.0;
    let kill = async {
        support::eventually("a quarter taken", Duration::from_secs(30), || async {
            (taken_so_far.load(Ordering::SeqCst) >= PRODUCERS * EACH / 4).then_some(())
        })
        .await;
        let member = tokio::task::block_in_place(|| ensemble.member_of_session(victim))
            .expect("the consumer's member");
        eprintln!("killing member {member}, serving consumer 0");
        tokio::task::block_in_place(|| ensemble.kill(member));
    };
    let (_, taken, ()) = tokio::join!(
        futures::future::join_all(produce),
        futures::future::join_all(consume),
        kill
    );

    let mut seen: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for &key in taken.iter().flatten() {
        *seen.entry(key).or_default() += 1;
    }
    let duplicated: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(duplicated.is_empty(), "delivered twice: {duplicated:?}");
    let missing: Vec<_> = (0..PRODUCERS)
        .flat_map(|p| (0..EACH).map(move |i| (p, i)))
        .filter(|k| !seen.contains_key(k))
        .collect();
    assert!(missing.is_empty(), "never delivered: {missing:?}");
    eprintln!(
        "elements per consumer: {:?}",
        taken.iter().map(Vec::len).collect::<Vec<_>>()
    );
}
