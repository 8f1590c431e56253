//! The delay queue on the simulator, under every fault kind (the ensemble kinds included),
//! on one [`TokioClock`] (virtual time: nothing reads the wall clock). Two producers put
//! elements due up to 1.5 s ahead, in scrambled order; three consumers take. Checked: no
//! element is taken before it is due by the consumer's clock, none twice, and every element
//! is taken except those a session expiry left in doubt. A second test expires the session
//! while a take waits for a due time: the handle takes the element on the next session, once
//! due and not before.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use avout::recipes::queue::{Clock, DelayQueue, QueueError, TokioClock};
use avout::{Client, Coordination};
use avout_sim_zk::{FaultKind, Sim};

use crate::support::{every_kind_alone, recipe_sim};

const EACH: u64 = 10;
const PATH: &str = "/dq";
const EPOCH: u64 = 1_700_000_000_000;

/// What one run saw: (payload, due, taken at) per take; doubts; wrong takes.
struct Seen {
    taken: Vec<(String, u64, u64)>,
    doubts: usize,
}

fn run(seed: u64, kind: FaultKind) -> (u64, Seen) {
    let (seen, summary) = recipe_sim(seed, kind).run(|ctx| async move {
        let clock: Arc<dyn Clock> = Arc::new(TokioClock::new(EPOCH));
        let producing = Rc::new(Cell::new(2));
        let producers = (0..2u64).map(|p| {
            let (zk, clock, producing) = (ctx.zk.clone(), clock.clone(), producing.clone());
            async move {
                let client = Client::connect(zk).await.expect("client");
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
            let (zk, clock, producing) = (ctx.zk.clone(), clock.clone(), producing.clone());
            async move {
                let client = Client::connect(zk).await.expect("client");
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
        let client = Client::connect(ctx.zk.clone()).await.expect("client");
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
    });
    (summary.fault_count(kind), seen)
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

#[test]
fn nothing_is_taken_before_due_nor_twice_under_every_fault_kind() {
    let mut fired = BTreeMap::new();
    every_kind_alone("AVOUT_DELAY_QUEUE_SEEDS", 2, 9_830_400_000, |seed, kind| {
        let (faults, seen) = run(seed, kind);
        *fired.entry(kind).or_insert(0) += faults;
        check(&seen)
    });
    for kind in FaultKind::ALL {
        assert!(fired[&kind] > 0, "{kind:?} was injected");
    }
}

#[test]
fn a_waiting_take_carries_on_after_an_expiry_and_takes_when_due() {
    let sim = Sim::builder()
        .seed(31)
        .clients(1)
        .session_timeout(Duration::from_secs(2))
        .build();
    let ((data, due, at, generation), _) = sim.run(|ctx| async move {
        let first = Arc::new(ctx.clients[0].clone());
        let client = Client::builder(ctx.zk.clone()).adopt(first.clone());
        let clock = Arc::new(TokioClock::new(EPOCH));
        let q = DelayQueue::with_clock(&client, "/dq/expiry", clock.clone()).unwrap();
        q.put_after(Duration::from_secs(5), b"later").await.unwrap();
        assert!(q.try_take().await.unwrap().is_none(), "not due yet");
        let expire = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            ctx.zk.expire_session(first.session().id);
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
        let due = e.due_ms().unwrap();
        (e.data, due, clock.now_ms(), client.generation())
    });
    assert_eq!(data, b"later");
    assert!(at >= due, "taken at {at}, due at {due}");
    assert!(
        at < due + 3_000,
        "taken at {at}, long after due at {due}: a timer, not a poll"
    );
    assert_eq!(generation, 2);
}
