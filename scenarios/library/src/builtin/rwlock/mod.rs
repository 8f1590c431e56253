//! `rwlock`: readers and writers on one [`avout::lock::RwLock`].
//!
//! A writer takes the write lock, reads a counter node and writes it plus one with a fenced
//! `multi` (no version check: only exclusion keeps increments apart). A reader takes the read
//! lock, reads the counter twice with a pause between, then confirms its hold with an empty
//! fenced `multi` (its lock node still exists, so no writer can have been let in).
//!
//! History: `acquire-write` / `acquire-read` (`ok` value the token), `write` (value
//! `{"token", "counter"}`), `read` (`ok` value `[first, second]` for a confirmed hold,
//! `fail` when the hold could not be confirmed) and `release`.
//!
//! The checker: the `ok` writes wrote distinct values, and every confirmed read saw the same
//! value twice (no writer inside a read hold).

use std::time::Duration;

use avout::Client;
use avout::lock::{LockGuard, RwLock};
use rand::Rng;
use serde_json::{Value, json};

use avout_check::Options;

use crate::builtin::mutex::{counter_node, fenced_write, read_counter, set_counter};
use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::OP_DEADLINE;
use crate::scenario::WorkloadError;
use crate::scenario::env::Cluster;
use crate::scenario::worker::{Caller, Ended, Invoke, Worker, all_workers};
use avout_check::history::EventType;

const LOCK: &str = "/rwlock";
const RESOURCE: &str = "/rwlock-resource";

/// Works under a held guard; `Err` when the hold was lost (the release is then `info`).
async fn under(
    client: &Client,
    guard: &LockGuard,
    write: bool,
    token: i64,
    caller: &mut Caller<'_>,
    pause: Duration,
) -> Result<(), ()> {
    let (p, rec) = (caller.p(), caller.rec);
    let first = read_counter(client, RESOURCE).await.map_err(|_| ())?;
    tokio::time::sleep(pause).await;
    if write {
        let write = || guard.fenced(vec![set_counter(RESOURCE, first + 1)]);
        if !matches!(
            fenced_write(caller, token, first + 1, write).await,
            Ended::Ok(_)
        ) {
            return Err(());
        }
    } else {
        rec.invoke(p, "read", Value::Null, None);
        let second = read_counter(client, RESOURCE).await;
        let confirmed = tokio::time::timeout(OP_DEADLINE, guard.fenced(Vec::new())).await;
        match (second, confirmed) {
            (Ok(second), Ok(Ok(_))) => {
                rec.complete(EventType::Ok, p, "read", json!([first, second]), None)
            }
            _ => {
                rec.complete(EventType::Fail, p, "read", Value::Null, None);
                return Err(());
            }
        }
    }
    Ok(())
}

/// One client: `me.w.ops` operations.
pub(crate) async fn client<K: Cluster>(mut me: Worker<'_, K>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    counter_node(&client, RESOURCE).await?;
    let lock = RwLock::new(&client, LOCK)?;
    for _ in 0..me.w.ops {
        let p = me.caller.p();
        let write = me.rng.random_bool(0.4);
        let f = if write {
            "acquire-write"
        } else {
            "acquire-read"
        };
        let acquire = || async {
            if write {
                lock.write().await
            } else {
                lock.read().await
            }
        };
        let guard = match me
            .caller
            .call(Invoke::new(f, Value::Null), acquire, |g| {
                g.fencing_token().into()
            })
            .await
        {
            Ended::Stuck => break,
            Ended::Ok(g) => g,
            Ended::Err(_) => continue,
        };
        let token = guard.fencing_token();
        let pause = Duration::from_millis(me.rng.random_range(0..5));
        let held = under(&client, &guard, write, token, &mut me.caller, pause).await;
        me.caller.rec.invoke(p, "release", token.into(), None);
        let released = match held {
            Ok(()) => matches!(
                tokio::time::timeout(OP_DEADLINE, guard.unlock()).await,
                Ok(Ok(()))
            ),
            Err(()) => {
                drop(guard);
                false
            }
        };
        me.caller.released(token.into(), released);
    }
    Ok(())
}

/// The `rwlock` scenario: readers read twice, writers increment.
pub const SCENARIO: Described = Described {
    name: "rwlock",
    about: "readers read twice, writers increment; checker: no writer inside a read hold",
    defaults: (4, 20),
    checkers: |_w| Checks::named("rwlock", &Options::default()),
    workload: |cluster, w, rec| {
        Box::pin(async move { all_workers(&cluster, w, rec, client).await })
    },
};
