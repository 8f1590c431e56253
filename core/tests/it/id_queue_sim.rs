//! The id queue on the simulator, under every fault kind (the ensemble kinds included).
//! Producers put elements under five ids; `k1`'s are removed before anyone takes, `k3`'s while
//! three consumers take. Checked: no element is taken twice; no `k1` element is ever taken;
//! each `k3` element is either taken or removed, never both (taken + removed = put); every
//! other element is taken exactly once — except those a session expiry left in doubt (a put
//! or a claim, [`QueueError::TakeInDoubt`], counted and allowed for). A second test expires the session
//! between puts and a removal: the same handle removes them on the client's next session.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use avout::recipes::queue::{IdQueue, QueueError};
use avout::{Client, Coordination};
use avout_sim_zk::{FaultKind, Sim};

use crate::support::{every_kind_alone, recipe_sim};

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

fn run(seed: u64, kind: FaultKind) -> (u64, Seen) {
    let (seen, summary) = recipe_sim(seed, kind).run(|ctx| async move {
        let mut doubts = 0;
        let producer = Client::connect(ctx.zk.clone()).await.expect("client");
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
        let consumers = (0..3).map(|_| {
            let zk = ctx.zk.clone();
            async move {
                let client = Client::connect(zk).await.expect("client");
                let q = IdQueue::new(&client, PATH).expect("queue");
                let (mut got, mut doubts) = (Vec::new(), 0);
                loop {
                    let e =
                        patiently("take", &mut doubts, || q.take_for(Duration::from_secs(3))).await;
                    match e {
                        Some(e) => got.push(String::from_utf8(e.data).expect("utf-8")),
                        None => return (got, doubts),
                    }
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
    });
    (summary.fault_count(kind), seen)
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

#[test]
fn removed_elements_are_never_taken_and_none_twice_under_every_fault_kind() {
    let mut fired = BTreeMap::new();
    every_kind_alone("AVOUT_ID_QUEUE_SEEDS", 2, 9_830_300_000, |seed, kind| {
        let (faults, seen) = run(seed, kind);
        *fired.entry(kind).or_insert(0) += faults;
        check(&seen)
    });
    for kind in FaultKind::ALL {
        assert!(fired[&kind] > 0, "{kind:?} was injected");
    }
}

#[test]
fn an_id_queue_removes_on_the_next_session_after_an_expiry() {
    let sim = Sim::builder()
        .seed(29)
        .clients(1)
        .session_timeout(Duration::from_secs(2))
        .build();
    let ((removed, left, generation), _) = sim.run(|ctx| async move {
        let first = Arc::new(ctx.clients[0].clone());
        let client = Client::builder(ctx.zk.clone()).adopt(first.clone());
        let q = IdQueue::new(&client, "/idq/expiry").unwrap();
        for data in [&b"a"[..], b"b", b"c"] {
            q.put("x", data).await.unwrap();
        }
        q.put("y", b"d").await.unwrap();
        ctx.zk.expire_session(first.session().id);
        let mut removed = None;
        for _ in 0..100 {
            if let Ok(n) = q.remove("x").await {
                removed = Some(n);
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let left = q.try_take().await.unwrap().map(|e| e.data);
        (removed, left, client.generation())
    });
    assert_eq!(removed, Some(3));
    assert_eq!(left.as_deref(), Some(&b"d"[..]));
    assert_eq!(generation, 2);
}
