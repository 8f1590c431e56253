//! `counter`: clients increment one atom (`swap(n + 1)`) and read it (`deref`, linearizable).
//!
//! History: `add` (invoke value 1; an `ok` completion carries the value the increment
//! produced) and `read` (`ok` with the value read); a final read after every client is done.
//!
//! The checker, for a counter that only grows by one: the `ok` adds returned distinct values
//! (two equal ones are a lost update, or an increment applied twice); and every value observed
//! — a read, or the result of an add — lies between the number of adds that surely happened
//! before the observation began (acknowledged before its invocation) and the number that
//! could have happened before it ended (invoked before its completion and not failed).

use avout::Client;
use avout::atom::Atom;
use rand::Rng;
use serde_json::Value;

use avout_check::Options;

use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::WorkloadError;
use crate::scenario::env::{Env, Recorder, retry_open};
use crate::scenario::worker::{Ended, Invoke, Worker, all_workers};
use crate::scenario::{OP_DEADLINE, Workload};
use avout_check::history::EventType;

const PATH: &str = "/counter";

/// Opens the counter's atom at `path` on `client` with `env`'s planted bugs (retried: the
/// open writes the initial value if the node is missing).
pub(crate) async fn open(
    env: &Env<'_>,
    client: &Client,
    path: &str,
) -> Result<Atom<u64>, WorkloadError> {
    let planted = env.planted;
    retry_open(200, || {
        Atom::builder(client, path).planted(planted).open(0u64)
    })
    .await
}

/// One client: `me.w.ops` operations.
pub(crate) async fn client(mut me: Worker<'_>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let atom = open(me.env, &client, PATH).await?;
    for _ in 0..me.w.ops {
        let add = me.rng.random_bool(0.75);
        let (f, value) = if add {
            ("add", Value::from(1))
        } else {
            ("read", Value::Null)
        };
        let call = || async {
            if add {
                atom.swap(|n| n + 1).await
            } else {
                atom.deref().await
            }
        };
        // A failed operation, session lost or not, is recorded as its error says; the atom
        // works on the client's next session.
        if let Ended::Stuck = me
            .caller
            .call(Invoke::new(f, value), call, |v| Value::from(*v))
            .await
        {
            break;
        }
    }
    let stats = atom.stats();
    me.caller.rec.retries(stats.conflicts + stats.recoveries);
    Ok(())
}

/// The final read, after every client is done.
pub(crate) async fn final_read(
    env: &Env<'_>,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    let p = (w.clients * (w.ops + 1)) as u64;
    let client = env.backend.client().await?;
    let atom = open(env, &client, PATH).await?;
    read_until_answered(rec, p, "read", || atom.deref())
        .await
        .map_err(|last| WorkloadError::gave_up("the final read of the counter", Some(last)))
}

/// Records process `p`'s read `f` by `read` until one answers (a read changes nothing, so
/// trying it again, on whichever session is current, is safe); `Err` with the last error if
/// none did in 100 tries.
pub(crate) async fn read_until_answered<T, E, Fut>(
    rec: &Recorder,
    p: u64,
    f: &str,
    mut read: impl FnMut() -> Fut,
) -> Result<(), String>
where
    T: Into<Value>,
    E: std::fmt::Display,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut last = String::new();
    for _ in 0..100 {
        rec.invoke(p, f, Value::Null, None);
        match tokio::time::timeout(OP_DEADLINE, read()).await {
            Ok(Ok(v)) => {
                rec.complete(EventType::Ok, p, f, v.into(), None);
                return Ok(());
            }
            Ok(Err(e)) => {
                rec.complete(EventType::Fail, p, f, Value::Null, None);
                last = e.to_string();
            }
            Err(_) => {
                rec.complete(EventType::Fail, p, f, Value::Null, None);
                last = format!("no answer within {}s", OP_DEADLINE.as_secs());
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(last)
}

/// The `counter` scenario: atom increments and reads.
pub const SCENARIO: Described = Described {
    name: "counter",
    about: "atom increments and reads; checker: distinct increments, reads within bounds",
    defaults: (4, 50),
    checkers: |_w| Checks::named("counter", &Options::default()),
    workload: |env, w, rec| {
        Box::pin(async move {
            all_workers(env, w, rec, client).await?;
            final_read(env, w, rec).await
        })
    },
};
