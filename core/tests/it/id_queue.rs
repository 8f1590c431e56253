//! The id queue, each body on a real standalone ZooKeeper and on the simulator: the id in
//! Curator's place in the node name, a removal that counts exactly and whose elements are
//! never taken, refused ids that change nothing, and a removal by the same handle after its
//! session expired. And (on the simulator under every fault kind, the ensemble kinds
//! included) producers put elements under five ids; `k1`'s are removed before anyone takes,
//! `k3`'s while three consumers take. Checked: no element is taken twice; no `k1` element is
//! ever taken; each `k3` element is either taken or removed, never both (taken + removed =
//! put); every other element is taken exactly once — except those a session expiry left in
//! doubt (a put or a claim, [`QueueError::TakeInDoubt`], counted and allowed for).

use std::collections::BTreeMap;
use std::time::Duration;

use avout::recipes::queue::{IdQueue, QueueError};
use avout::{Coordination, Error};
use avout_sim_zk::FaultKind;
use avout_testkit::backend::Backend;

use crate::support::{
    self, client_of, every_kind_alone, expire, on_both, plain_sim, recipe_sim, session_of, simulate,
};

/// Ids in the node name, refusals, a removal counted exactly and never taken.
async fn removed_by_id(backend: &dyn Backend) {
    let producer = IdQueue::new(&client_of(backend).await, "/idq/real").expect("queue");
    let consumer = IdQueue::new(&client_of(backend).await, "/idq/real").expect("queue");
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
    let observer = session_of(backend).await;
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

    // An error before anything was removed is that error, not an interruption after none.
    let closing = client_of(backend).await;
    let late = IdQueue::new(&closing, "/idq/real").expect("queue");
    closing.close().await.expect("close");
    let refused = late.remove("o2").await;
    assert!(
        matches!(&refused, Err(e) if !matches!(e, QueueError::Interrupted { .. })),
        "{refused:?}"
    );
}

/// A removal by the same handle on the next session after an expiry.
async fn removes_after_expiry(backend: &dyn Backend) {
    let client = client_of(backend).await;
    let q = IdQueue::new(&client, "/idq/expiry").expect("queue");
    q.put("x", b"1").await.expect("put");
    q.put("x", b"2").await.expect("put");
    q.put("y", b"3").await.expect("put");
    expire(backend, &client).await;
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

const IDS: usize = 5;
const EACH: usize = 4;
const PATH: &str = "/idq";

/// Retries an operation until it returns, counting session-expiry doubts.
async fn patiently<T, F, Fut>(what: &str, doubts: &mut usize, mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, QueueError>>,
{
    for _ in 0..200 {
        match op().await {
            Ok(v) => return v,
            Err(QueueError::TakeInDoubt { .. }) => *doubts += 1,
            Err(QueueError::Zk(e)) if e.is_rejected() => panic!("{what} rejected: {e}"),
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} kept failing")
}

/// Removes every element with `id`, carrying on after interruptions; the total removed.
async fn remove(q: &IdQueue, id: &str, doubts: &mut usize) -> usize {
    let mut total = 0;
    for _ in 0..200 {
        let error = match q.remove(id).await {
            Ok(n) => return total + n,
            Err(QueueError::Interrupted { removed, source }) => {
                total += removed;
                *source
            }
            Err(e) => e,
        };
        match error {
            QueueError::TakeInDoubt { .. } => *doubts += 1,
            QueueError::Zk(e) if e.is_rejected() => panic!("remove rejected: {e}"),
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("removing {id} kept failing")
}

/// What one run saw: taken payloads, removals per id, doubts.
struct Seen {
    taken: Vec<String>,
    removed: BTreeMap<String, usize>,
    doubts: usize,
}

/// Puts under five ids, removes `k1`'s, then `k3`'s while three consumers take, then drains.
async fn removals(backend: &dyn Backend) -> Seen {
    let mut doubts = 0;
    let producer = client_of(backend).await;
    let q = IdQueue::new(&producer, PATH).expect("queue");
    for i in 0..EACH {
        for id in 0..IDS {
            let (id, data) = (format!("k{id}"), format!("k{id}-{i}"));
            // Exactly once, unless its session expired with it in doubt: then it
            // is not sent again (it may be enqueued) and is allowed for below.
            match q.put(&id, data.as_bytes()).await {
                Ok(()) => {}
                Err(QueueError::Zk(e)) if e.is_rejected() => panic!("put rejected: {e}"),
                Err(_) => doubts += 1,
            }
        }
    }
    let mut removed = BTreeMap::new();
    removed.insert("k1".to_owned(), remove(&q, "k1", &mut doubts).await);
    let consumers = (0..3).map(|_| async move {
        let client = client_of(backend).await;
        let q = IdQueue::new(&client, PATH).expect("queue");
        let (mut got, mut doubts) = (Vec::new(), 0);
        loop {
            let e = patiently("take", &mut doubts, || q.take_for(Duration::from_secs(3))).await;
            match e {
                Some(e) => got.push(String::from_utf8(e.data).expect("utf-8")),
                None => return (got, doubts),
            }
        }
    });
    let remover = async {
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut doubts = 0;
        let n = remove(&q, "k3", &mut doubts).await;
        (n, doubts)
    };
    let (consumed, (k3, more)) = futures::join!(futures::future::join_all(consumers), remover);
    removed.insert("k3".to_owned(), k3);
    doubts += more;
    let mut taken = Vec::new();
    for (got, d) in consumed {
        taken.extend(got);
        doubts += d;
    }
    // A timed take gives up during an outage: drain until the queue is truly empty.
    loop {
        match patiently("drain", &mut doubts, || q.take_for(Duration::from_secs(2))).await {
            Some(e) => taken.push(String::from_utf8(e.data).expect("utf-8")),
            None if patiently("count", &mut doubts, || q.count()).await == 0 => break,
            None => {}
        }
    }
    Seen {
        taken,
        removed,
        doubts,
    }
}

fn check(seen: &Seen) -> Option<String> {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &seen.taken {
        *count.entry(t.as_str()).or_default() += 1;
    }
    if let Some((t, n)) = count.iter().find(|(_, n)| **n > 1) {
        return Some(format!("{t} taken {n} times"));
    }
    if let Some(t) = seen.taken.iter().find(|t| t.starts_with("k1-")) {
        return Some(format!("{t} taken after its id was removed"));
    }
    let with = |id: &str| seen.taken.iter().filter(|t| t.starts_with(id)).count();
    for id in ["k1", "k3"] {
        let accounted = with(&format!("{id}-")) + seen.removed[id];
        if accounted > EACH || accounted + seen.doubts < EACH {
            return Some(format!(
                "{id}: {} taken + {} removed of {EACH} ({} in doubt)",
                with(&format!("{id}-")),
                seen.removed[id],
                seen.doubts
            ));
        }
    }
    for id in ["k0", "k2", "k4"] {
        let taken = with(&format!("{id}-"));
        if taken + seen.doubts < EACH {
            return Some(format!(
                "{id}: {taken} of {EACH} taken ({} in doubt)",
                seen.doubts
            ));
        }
    }
    None
}

on_both!(
    /// Removed by id, never taken.
    elements_are_removed_by_id_and_never_taken,
    plain_sim(0x1d0),
    |b| removed_by_id(b),
);

on_both!(
    /// A removal on the next session after an expiry.
    an_id_queue_carries_on_after_its_session_expires,
    plain_sim(29),
    |b| removes_after_expiry(b),
);

on_both!(
    /// Removals while consumers take, no fault.
    removed_elements_are_never_taken_and_none_twice,
    plain_sim(0x1d1),
    |b| async { assert_eq!(check(&removals(b).await), None) },
);

#[test]
fn removed_elements_are_never_taken_and_none_twice_under_every_fault_kind() {
    let mut fired = BTreeMap::new();
    every_kind_alone("AVOUT_ID_QUEUE_SEEDS", 2, 9_830_300_000, |seed, kind| {
        let (seen, summary) = simulate(&recipe_sim(seed, kind), async |b| removals(b).await);
        let faults = summary.fault_count(kind);
        *fired.entry(kind).or_insert(0) += faults;
        check(&seen)
    });
    for kind in FaultKind::ALL {
        assert!(fired[&kind] > 0, "{kind:?} was injected");
    }
}
