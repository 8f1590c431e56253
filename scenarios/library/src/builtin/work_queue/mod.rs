//! `work-queue`: every client produces items onto one FIFO [`Queue`] while a consumer of its
//! own waits on the queue for them ([`Queue::take`], no time limit); stop items end the
//! consumers; the queue is drained at the end.
//!
//! Each client puts `ops` unique items (`c<client>-<n>`), a pause of up to 10 ms before each.
//! Its consumer takes for as long as it takes ordinary items, waiting whenever the queue is
//! empty. Once every producer is done, a coordinator puts a stop item (`stop-<k>`) every
//! 100 ms until every consumer has taken one; a fresh client then takes what is left.
//!
//! History: `put` (value the item; producers' and the coordinator's stop items) and `take`
//! (`ok` value the item), as in the `queue` scenario, whose checker judges it: no item taken
//! twice, none taken that was not put, none acknowledged lost. And, as everywhere, no take
//! stuck: a consumer that waits for ever while items arrive (a watch it waits on that was
//! never set) stalls the run.

use std::cell::Cell;
use std::time::Duration;

use avout::recipes::queue::Queue;
use rand::Rng;
use serde_json::Value;

use avout_check::Options;

use crate::builtin::queue::drain;
use crate::scenario::env::{Env, Process, Recorder};
use crate::scenario::worker::{Caller, Ended, Invoke, Worker, all_workers};
use crate::scenario::{Checks, Described, WorkloadError};

const PATH: &str = "/work-queue";

/// Where the consumers' process numbers start (client `i`'s is `CONSUMER_BASE + i`).
pub const CONSUMER_BASE: u64 = 1 << 32;

/// The coordinator's process number.
pub const COORDINATOR: u64 = 1 << 33;

/// What the clients share: producers still putting, consumers still taking.
struct Phase {
    producing: Cell<usize>,
    consuming: Cell<usize>,
}

/// Puts `item`, recorded; false if the put missed its deadline.
async fn put(queue: &Queue, caller: &mut Caller<'_>, item: String) -> bool {
    let value = Value::from(item.clone());
    let call = || async { queue.put(item.as_bytes()).await.map(|()| value.clone()) };
    !matches!(
        caller
            .call(Invoke::new("put", value.clone()), call, Value::clone)
            .await,
        Ended::Stuck
    )
}

/// Takes until a stop item; false if a take missed its deadline.
async fn consume(queue: &Queue, caller: &mut Caller<'_>) -> bool {
    loop {
        let call = || async {
            let element = queue.take().await?;
            Ok::<_, avout::recipes::queue::QueueError>(Value::from(
                String::from_utf8_lossy(&element.data).into_owned(),
            ))
        };
        match caller
            .call(Invoke::new("take", Value::Null), call, Value::clone)
            .await
        {
            Ended::Stuck => return false,
            Ended::Ok(item) if item.as_str().is_some_and(|i| i.starts_with("stop-")) => {
                return true;
            }
            Ended::Ok(_) => {}
            Ended::Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// One client: its producer and its consumer.
async fn client(mut me: Worker<'_>, phase: &Phase) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let queue = Queue::new(&client, PATH)?.planted(me.env.planted);
    let consumer = Process::new(me.index, me.w.clients).shifted(CONSUMER_BASE);
    let mut consumer = Caller::new(me.caller.rec, consumer);
    let consuming = async {
        consume(&queue, &mut consumer).await;
        phase.consuming.set(phase.consuming.get() - 1);
    };
    let producing = async {
        for n in 0..me.w.ops {
            tokio::time::sleep(Duration::from_millis(me.rng.random_range(0..10))).await;
            if !put(&queue, &mut me.caller, format!("c{}-{n}", me.index)).await {
                break;
            }
        }
        phase.producing.set(phase.producing.get() - 1);
    };
    futures::join!(consuming, producing);
    Ok(())
}

/// Once every producer is done: a stop item every 100 ms until every consumer took one.
async fn stop(env: &Env<'_>, rec: &Recorder, phase: &Phase) -> Result<(), WorkloadError> {
    while phase.producing.get() > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let client = env.backend.client().await?;
    let queue = Queue::new(&client, PATH)?;
    let mut caller = Caller::new(rec, Process::new(0, 1).shifted(COORDINATOR));
    let mut k = 0;
    while phase.consuming.get() > 0 {
        if !put(&queue, &mut caller, format!("stop-{k}")).await {
            break;
        }
        k += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// The `work-queue` scenario: producers, consumers waiting on the queue, stop items.
pub const SCENARIO: Described = Described {
    name: "work-queue",
    about: "producers put while consumers wait on the queue (take, no limit); stop items; \
            drain; checker: nothing lost, nothing delivered twice, no consumer stuck",
    defaults: (4, 10),
    checkers: |_w| Checks::named("queue", &Options::default()),
    workload: |env, w, rec| {
        Box::pin(async move {
            let phase = Phase {
                producing: Cell::new(w.clients),
                consuming: Cell::new(w.clients),
            };
            let phase = &phase;
            let workers = all_workers(env, w, rec, |me| client(me, phase));
            let (done, stopped) = futures::join!(workers, stop(env, rec, phase));
            done.and(stopped)?;
            drain(env, w, rec, PATH).await
        })
    },
};
