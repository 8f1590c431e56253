//! The delay queue, each body on a real standalone ZooKeeper (on the system clock) and on
//! the simulator (on one [`TokioClock`], virtual time: nothing reads the wall clock):
//! elements come out in due order, none before its due time, a waiting take wakes for the due
//! time without polling (and sooner for an element put due earlier), and a take waiting for
//! a due time across an expiry of its session takes the element on the next session, once
//! due and not before. And two producers putting elements due up to 1.5 s ahead, in
//! scrambled order, while three consumers take (on the simulator under every fault kind, the
//! ensemble kinds included): no element is taken before it is due by the consumer's clock,
//! none twice, and every element is taken except those a session expiry left in doubt.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use avout::recipes::queue::{Clock, DelayQueue, QueueError, SystemClock, TokioClock};
use avout_sim_zk::FaultKind;
use avout_testkit::backend::Backend;

use crate::support::{
    client_of, every_kind_alone, expire, on_both, plain_sim, recipe_sim, simulate,
};

const EACH: u64 = 10;
const PATH: &str = "/dq";
const EPOCH: u64 = 1_700_000_000_000;

/// The system clock on real ZooKeeper; virtual time from [`EPOCH`] on the simulator.
fn clock_of(backend: &dyn Backend) -> Arc<dyn Clock> {
    if backend.is_simulated() {
        Arc::new(TokioClock::new(EPOCH))
    } else {
        Arc::new(SystemClock)
    }
}

/// Due order, none before due, a waiting take woken by the timer or a sooner put.
async fn due_order(backend: &dyn Backend) {
    let clock = clock_of(backend);
    let producer = DelayQueue::with_clock(&client_of(backend).await, "/dq/real", clock.clone())
        .expect("queue");
    let consumer =
        DelayQueue::with_clock(&client_of(backend).await, "/dq/real", clock).expect("queue");
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

/// A take waiting for a due time across an expiry of its session.
async fn waiting_take_across_expiry(backend: &dyn Backend) {
    let client = client_of(backend).await;
    let clock = clock_of(backend);
    let q = DelayQueue::with_clock(&client, "/dq/expiry", clock.clone()).unwrap();
    q.put_after(Duration::from_secs(5), b"later").await.unwrap();
    assert!(q.try_take().await.unwrap().is_none(), "not due yet");
    let expire = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        expire(backend, &client).await;
    };
    let take = async {
        loop {
            match q.take().await {
                Ok(e) => return e,
                // The waiting take ends with its session; the handle carries on.
                Err(QueueError::SessionLost(_)) => continue,
                Err(e) => panic!("{e}"),
            }
        }
    };
    let (e, ()) = futures::join!(take, expire);
    let (due, at) = (e.due_ms().unwrap(), clock.now_ms());
    assert_eq!(e.data, b"later");
    assert!(at >= due, "taken at {at}, due at {due}");
    assert!(
        at < due + 3_000,
        "taken at {at}, long after due at {due}: a timer, not a poll"
    );
    assert_eq!(client.generation(), 2);
}

/// What one run saw: (payload, due, taken at) per take; doubts; wrong takes.
struct Seen {
    taken: Vec<(String, u64, u64)>,
    doubts: usize,
}

/// Two producers put [`EACH`] elements each at scrambled delays while three consumers take;
/// then a fresh consumer drains the queue.
async fn takes(backend: &dyn Backend) -> Seen {
    let clock = clock_of(backend);
    let producing = Rc::new(Cell::new(2));
    let producers = (0..2u64).map(|p| {
        let (clock, producing) = (clock.clone(), producing.clone());
        async move {
            let client = client_of(backend).await;
            let q = DelayQueue::with_clock(&client, PATH, clock).expect("queue");
            let mut doubts = 0;
            for i in 0..EACH {
                let delay = (i * 7 + p * 3) % 10 * 150;
                let data = format!("p{p}-{i}");
                match q
                    .put_after(Duration::from_millis(delay), data.as_bytes())
                    .await
                {
                    Ok(()) => {}
                    Err(QueueError::Zk(e)) if e.is_rejected() => panic!("put: {e}"),
                    Err(_) => doubts += 1,
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            producing.set(producing.get() - 1);
            doubts
        }
    });
    let consumers = (0..3).map(|_| {
        let (clock, producing) = (clock.clone(), producing.clone());
        async move {
            let client = client_of(backend).await;
            let q = DelayQueue::with_clock(&client, PATH, clock.clone()).expect("queue");
            let (mut got, mut doubts, mut errors) = (Vec::new(), 0, 0);
            loop {
                match q.take_for(Duration::from_secs(4)).await {
                    Ok(Some(e)) => {
                        let due = e.due_ms().expect("a delay element");
                        let data = String::from_utf8(e.data).expect("utf-8");
                        got.push((data, due, clock.now_ms()));
                    }
                    // Quiet, and nothing more to come (a paused producer may put late).
                    Ok(None) if producing.get() == 0 => return (got, doubts),
                    Ok(None) => {}
                    Err(QueueError::TakeInDoubt { .. }) => doubts += 1,
                    Err(QueueError::Zk(e)) if e.is_rejected() => panic!("take: {e}"),
                    Err(e) => {
                        errors += 1;
                        assert!(errors < 200, "take keeps failing: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        }
    });
    let (put_doubts, consumed) = futures::join!(
        futures::future::join_all(producers),
        futures::future::join_all(consumers)
    );
    let mut seen = Seen {
        taken: Vec::new(),
        doubts: put_doubts.into_iter().sum(),
    };
    for (got, d) in consumed {
        seen.taken.extend(got);
        seen.doubts += d;
    }
    // A timed take gives up during an outage: drain until the queue is truly empty.
    let client = client_of(backend).await;
    let q = DelayQueue::with_clock(&client, PATH, clock.clone()).expect("queue");
    let mut errors = 0;
    loop {
        match q.take_for(Duration::from_secs(2)).await {
            Ok(Some(e)) => {
                let due = e.due_ms().expect("a delay element");
                let data = String::from_utf8(e.data).expect("utf-8");
                seen.taken.push((data, due, clock.now_ms()));
            }
            Ok(None) if q.count().await.is_ok_and(|n| n == 0) => break,
            Ok(None) => {}
            Err(QueueError::TakeInDoubt { .. }) => seen.doubts += 1,
            Err(e) => {
                errors += 1;
                assert!(errors < 200, "drain keeps failing: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    seen
}

fn check(seen: &Seen) -> Option<String> {
    let mut names = BTreeSet::new();
    for (data, due, at) in &seen.taken {
        if at < due {
            return Some(format!("{data} taken at {at}, due at {due}"));
        }
        if !names.insert(data) {
            return Some(format!("{data} taken twice"));
        }
    }
    let all = 2 * EACH as usize;
    if names.len() + seen.doubts < all {
        return Some(format!(
            "{} of {all} taken ({} in doubt)",
            names.len(),
            seen.doubts
        ));
    }
    None
}

on_both!(
    /// Due order, none before due, woken by the timer.
    elements_come_out_when_due_in_due_order,
    plain_sim(0xde1),
    |b| due_order(b),
);

on_both!(
    /// A waiting take across an expiry, taking when due.
    a_waiting_take_carries_on_after_an_expiry_and_takes_when_due,
    plain_sim(31),
    |b| waiting_take_across_expiry(b),
);

on_both!(
    /// Producers and consumers, no fault.
    nothing_is_taken_before_due_nor_twice,
    plain_sim(0xde2),
    |b| async { assert_eq!(check(&takes(b).await), None) },
);

#[test]
fn nothing_is_taken_before_due_nor_twice_under_every_fault_kind() {
    let mut fired = BTreeMap::new();
    every_kind_alone("AVOUT_DELAY_QUEUE_SEEDS", 2, 9_830_400_000, |seed, kind| {
        let (seen, summary) = simulate(&recipe_sim(seed, kind), async |b| takes(b).await);
        let faults = summary.fault_count(kind);
        *fired.entry(kind).or_insert(0) += faults;
        check(&seen)
    });
    for kind in FaultKind::ALL {
        assert!(fired[&kind] > 0, "{kind:?} was injected");
    }
}
