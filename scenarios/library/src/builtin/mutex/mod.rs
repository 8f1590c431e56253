//! `mutex`: clients take an exclusive lock ([`avout::lock::Mutex`]), increment a shared
//! counter inside it by a fenced read–modify–write, and unlock.
//!
//! Inside the hold a client `sync`s and reads the counter node, then writes the value plus
//! one with [`LockGuard::fenced`](avout::lock::LockGuard::fenced) — a `multi` that also
//! checks its lock node still exists, so a holder whose session ended cannot write — and with
//! *no* version check: only mutual exclusion keeps two increments apart.
//!
//! History (the mutex checker's format, [`avout_check::mutex`]): `acquire` (`ok` value the
//! fencing token), `write` (value `{"token": t, "counter": n}`, `n` the value written) and
//! `release` (`ok` clean: the lock node was confirmed to still stand when the release began,
//! by an empty fenced `multi`; `info` when the hold was lost, or could not be confirmed).
//!
//! The checker: the `ok` writes wrote distinct counter values (two equal ones mean two
//! holders were inside at once), and the fencing rule over holds: two holds whose sure
//! intervals (acquire completion to release invocation) overlap are a violation unless the
//! earlier one has the smaller token and ended by losing its lock.

use std::future::Future;
use std::time::Duration;

use avout::lock::{LockError, Mutex};
use avout::{Client, Coordination, Op};
use rand::Rng;
use serde_json::{Value, json};

use avout_check::Options;

use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::OP_DEADLINE;
use crate::scenario::WorkloadError;
use crate::scenario::env::retry_open;
use crate::scenario::worker::{Caller, Ended, Ends, Invoke, Worker, all_workers};
use avout_check::history::EventType;

const LOCK: &str = "/mutex";
const RESOURCE: &str = "/mutex-resource";

/// Creates the counter node at `path` if it is missing (idempotent, retried).
pub(crate) async fn counter_node(client: &Client, path: &str) -> Result<(), WorkloadError> {
    retry_open(200, || async move {
        match client.create(path, b"0", &Default::default()).await {
            Ok(_) | Err(avout::Error::NodeExists { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    })
    .await
}

/// Reads the counter at `path` linearizably: a `sync` and the read, pipelined on one
/// session (the client's current one).
pub(crate) async fn read_counter(client: &Client, path: &str) -> Result<u64, avout::Error> {
    let session = client.current_session().await?;
    let sync = session.sync(path);
    let read = session.get_data(path);
    sync.await?;
    let (data, _) = read.await?;
    Ok(std::str::from_utf8(&data)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0))
}

/// The write of `n` to the counter at `path`.
pub(crate) fn set_counter(path: &str, n: u64) -> Op {
    Op::set_data(path, n.to_string().into_bytes(), None)
}

/// Records `process`'s fenced write of `counter` under the hold given `token`, sent by
/// `write`; its output is its input.
pub(crate) async fn fenced_write<T, E: Ends, Fut>(
    caller: &mut Caller<'_>,
    token: i64,
    counter: u64,
    write: impl FnOnce() -> Fut,
) -> Ended<T, E>
where
    Fut: Future<Output = Result<T, E>>,
{
    let value = json!({"token": token, "counter": counter});
    let op = Invoke::new("write", value.clone())
        .stall(format!("process {}'s fenced write", caller.p()))
        .in_hold();
    caller.call(op, write, |_| value).await
}

impl Ends for LockError {
    fn end(&self) -> EventType {
        match self {
            LockError::Zk(z) if z.is_indeterminate() => EventType::Info,
            _ => EventType::Fail,
        }
    }
}

/// One client: `me.w.ops` operations.
pub(crate) async fn client(mut me: Worker<'_>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    counter_node(&client, RESOURCE).await?;
    let mutex = Mutex::new(&client, LOCK)?.planted(me.env.planted);
    for _ in 0..me.w.ops {
        let nothing = async |_: &mut Worker<'_>| Ended::Ok(());
        if let Ended::Stuck = fenced_increment(&mut me, &client, &mutex, RESOURCE, nothing).await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(me.rng.random_range(0..3))).await;
    }
    Ok(())
}

/// One hold of `mutex`: acquire, `inside` (what else the holder does, before its write), a
/// fenced increment of the counter at `resource`, and the release, each recorded. A failed
/// acquire (its session lost or not) ends the turn; the mutex acquires on the client's next
/// session next time. `Stuck` if an operation missed its deadline.
pub(crate) async fn fenced_increment<'a>(
    me: &mut Worker<'a>,
    client: &Client,
    mutex: &Mutex,
    resource: &str,
    inside: impl AsyncFnOnce(&mut Worker<'a>) -> Ended<(), ()>,
) -> Ended<(), ()> {
    let p = me.caller.p();
    let acquire = Invoke::new("acquire", Value::Null);
    let guard = match me
        .caller
        .call(acquire, || mutex.lock(), |g| g.fencing_token().into())
        .await
    {
        Ended::Stuck => return Ended::Stuck,
        Ended::Ok(guard) => guard,
        Ended::Err(_) => return Ended::Err(()),
    };
    let token = guard.fencing_token();
    if let Ended::Stuck = inside(me).await {
        return Ended::Stuck;
    }
    let mut lost = false;
    match read_counter(client, resource).await {
        Ok(n) => {
            tokio::time::sleep(Duration::from_millis(me.rng.random_range(0..5))).await;
            let write = || guard.fenced(vec![set_counter(resource, n + 1)]);
            match fenced_write(&mut me.caller, token, n + 1, write).await {
                Ended::Stuck => return Ended::Stuck,
                Ended::Ok(_) => {}
                Ended::Err(e) => lost = e.end() == EventType::Fail,
            }
        }
        Err(e) => lost = e.is_session_lost(),
    }
    me.caller.rec.invoke(p, "release", token.into(), None);
    let released = if lost {
        drop(guard);
        false
    } else {
        // `unlock` returns once the delete is ordered on the session, so its `Ok` says
        // nothing of a session that ended unnoticed (a client paused past its session
        // that wakes into an outage sees only connection loss). The hold is known to have
        // lasted to the release only if the lock node still stands now.
        let intact = matches!(
            tokio::time::timeout(OP_DEADLINE, guard.fenced(Vec::new())).await,
            Ok(Ok(_))
        );
        let unlocked = matches!(
            tokio::time::timeout(OP_DEADLINE, guard.unlock()).await,
            Ok(Ok(()))
        );
        intact && unlocked
    };
    me.caller.released(token.into(), released);
    Ended::Ok(())
}

/// The `mutex` scenario: lock, fenced increment, unlock.
pub const SCENARIO: Described = Described {
    name: "mutex",
    about: "lock, fenced increment, unlock; checker: no lost increment, fencing rule",
    defaults: (4, 20),
    checkers: |_w| {
        Checks::named("holds", &Options::default())
            .and("mutex", &Options::default())
            .labelled("mutex (fencing) and the mutex checker")
    },
    workload: |env, w, rec| Box::pin(async move { all_workers(env, w, rec, client).await }),
};
