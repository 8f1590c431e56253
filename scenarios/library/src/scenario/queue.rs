//! `queue`: producers and consumers on one FIFO [`Queue`], drained at the end.
//!
//! Each client puts unique items (`c<client>-<n>`) and takes (waiting up to 50 ms); when all
//! are done a fresh client takes until the queue is empty.
//!
//! History: `put` (value the item; `ok`, `fail`, or `info` when the session was lost with
//! the put in doubt), `take` (`ok` value the item, or `null` for an empty queue; `info` when
//! the session was lost with a claim in doubt).
//!
//! The checker: no item was taken twice; every item taken was put (and not failed); every
//! item whose put was acknowledged was taken by the end, except at most as many as there
//! were takes in doubt (an element claimed by a session that then died is gone).

use std::collections::BTreeMap;
use std::time::Duration;

use avout::recipes::queue::{Queue, QueueError};
use rand::Rng;
use serde_json::Value;

use super::env::{Cluster, Process, Recorder, open_client};
use super::error::WorkloadError;
use super::worker::{Caller, Ended, Ends, Invoke, Worker};
use super::{Verdict, Workload, pairs};
use avout_check::history::{EventType, History};

const PATH: &str = "/queue";

impl Ends for QueueError {
    fn end(&self) -> EventType {
        match self {
            QueueError::Zk(z) if !z.is_indeterminate() => EventType::Fail,
            _ => EventType::Info,
        }
    }
}

async fn take(q: &Queue, wait: Duration) -> Result<Value, QueueError> {
    let element = if wait.is_zero() {
        q.try_take().await?
    } else {
        q.take_for(wait).await?
    };
    Ok(element.map_or(Value::Null, |e| {
        Value::from(String::from_utf8_lossy(&e.data).into_owned())
    }))
}

/// One client: `me.w.ops` operations.
pub(crate) async fn client<K: Cluster>(mut me: Worker<'_, K>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let queue = Queue::new(&client, PATH)?;
    for n in 0..me.w.ops {
        let put = me.rng.random_bool(0.5);
        let (f, input) = if put {
            ("put", Value::from(format!("c{}-{n}", me.index)))
        } else {
            ("take", Value::Null)
        };
        let queue = &queue;
        let call = || async {
            if put {
                let item = input.as_str().unwrap_or_default().as_bytes().to_vec();
                queue.put(&item).await.map(|()| input.clone())
            } else {
                take(queue, Duration::from_millis(50)).await
            }
        };
        if let Ended::Stuck = me
            .caller
            .call(Invoke::new(f, input.clone()), call, Value::clone)
            .await
        {
            break;
        }
    }
    Ok(())
}

/// The drain, after every client is done: takes until the queue is empty.
pub(crate) async fn drain<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    // The drain's process numbers follow one another.
    let mut drain = Caller::new(rec, Process::new(w.clients * (w.ops + 1), 1));
    let client = open_client(cluster).await?;
    let queue = Queue::new(&client, PATH)?;
    let mut failures = 0;
    loop {
        let op = Invoke::new("take", Value::Null).stall("the drain's take".into());
        let call = || take(&queue, Duration::ZERO);
        match drain.call(op, call, Value::clone).await {
            Ended::Ok(Value::Null) | Ended::Stuck => return Ok(()),
            Ended::Ok(_) => {}
            Ended::Err(e) => {
                failures += 1;
                if failures > 100 {
                    return Err(WorkloadError::gave_up("the drain of the queue", Some(e)));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Judges a queue history.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// let f = |s: &str| F::Other(s.into());
/// // One item put once, taken twice.
/// let h: History = [
///     Event::invoke(0, f("put"), "a".into()),
///     Event::ok(0, f("put"), "a".into()),
///     Event::invoke(1, f("take"), serde_json::Value::Null),
///     Event::ok(1, f("take"), "a".into()),
///     Event::invoke(2, f("take"), serde_json::Value::Null),
///     Event::ok(2, f("take"), "a".into()),
/// ]
/// .into_iter()
/// .collect();
/// let v = avout_scenarios::scenario::queue::check(&h);
/// assert!(v.anomalies[0].contains("twice"), "{v}");
/// ```
pub fn check(history: &History) -> Verdict {
    let ops = pairs(history);
    let mut anomalies = Vec::new();
    let mut put: BTreeMap<String, EventType> = BTreeMap::new();
    let mut taken: BTreeMap<String, u64> = BTreeMap::new();
    let mut in_doubt = 0usize;
    for op in &ops {
        match (op.f.as_str(), op.end) {
            ("put", end) => {
                if let Some(item) = op.input.as_str() {
                    put.insert(item.to_owned(), end);
                }
            }
            ("take", EventType::Ok) => {
                if let Some(item) = op.output.as_str()
                    && let Some(first) = taken.insert(item.to_owned(), op.process)
                {
                    anomalies.push(format!(
                        "{item} was delivered twice (to processes {first} and {})",
                        op.process
                    ));
                }
            }
            ("take", EventType::Info) => in_doubt += 1,
            _ => {}
        }
    }
    for item in taken.keys() {
        match put.get(item) {
            None => anomalies.push(format!("{item} was taken but never put")),
            Some(EventType::Fail) => {
                anomalies.push(format!("{item} was taken, but its put failed"))
            }
            _ => {}
        }
    }
    let lost: Vec<&String> = put
        .iter()
        .filter(|(item, end)| **end == EventType::Ok && !taken.contains_key(*item))
        .map(|(item, _)| item)
        .collect();
    if lost.len() > in_doubt {
        anomalies.push(format!(
            "{} acknowledged item(s) never delivered (only {in_doubt} take(s) in doubt could \
             explain it): {}",
            lost.len(),
            lost.iter()
                .take(5)
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Verdict::new("queue (exactly once)", anomalies)
}

/// The `queue` scenario: put unique items, take, drain.
#[derive(Clone, Copy, Debug, Default)]
pub struct QueueScenario;

impl super::Scenario for QueueScenario {
    fn name(&self) -> &'static str {
        "queue"
    }

    fn about(&self) -> &'static str {
        "put unique items, take, drain; checker: nothing lost, nothing delivered twice"
    }

    fn defaults(&self) -> (usize, usize) {
        (4, 40)
    }

    fn workload<'a>(
        &'a self,
        cluster: super::AnyCluster<'a>,
        w: &'a super::Workload,
        rec: &'a super::env::Recorder,
    ) -> futures::future::LocalBoxFuture<'a, Result<(), WorkloadError>> {
        Box::pin(async move {
            super::worker::all_workers(&cluster, w, rec, client).await?;
            drain(&cluster, w, rec).await
        })
    }

    fn check(&self, _w: &super::Workload, history: &History) -> super::Verdict {
        check(history)
    }
}
