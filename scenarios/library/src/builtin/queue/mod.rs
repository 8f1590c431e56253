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

use std::time::Duration;

use avout::recipes::queue::{Queue, QueueError};
use rand::Rng;
use serde_json::Value;

use avout_check::Options;

use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::Workload;
use crate::scenario::WorkloadError;
use crate::scenario::env::{Env, Process, Recorder};
use crate::scenario::worker::{Caller, Ended, Ends, Invoke, Worker, all_workers};
use avout_check::history::EventType;

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
pub(crate) async fn client(mut me: Worker<'_>) -> Result<(), WorkloadError> {
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

/// The drain of the queue at `path`, after every client is done: takes until it is empty.
pub(crate) async fn drain(
    env: &Env<'_>,
    w: &Workload,
    rec: &Recorder,
    path: &str,
) -> Result<(), WorkloadError> {
    // The drain's process numbers follow one another.
    let mut drain = Caller::new(rec, Process::new(w.clients * (w.ops + 1), 1));
    let client = env.backend.client().await?;
    let queue = Queue::new(&client, path)?;
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

/// The `queue` scenario: put unique items, take, drain.
pub const SCENARIO: Described = Described {
    name: "queue",
    about: "put unique items, take, drain; checker: nothing lost, nothing delivered twice",
    defaults: (4, 40),
    checkers: |_w| Checks::named("queue", &Options::default()),
    workload: |env, w, rec| {
        Box::pin(async move {
            all_workers(env, w, rec, client).await?;
            drain(env, w, rec, PATH).await
        })
    },
};
