//! `rwlock`: readers and writers on one [`avout::lock::RwLock`].
//!
//! A writer takes the write lock, reads a counter node and writes it plus one with a fenced
//! `multi` (no version check: only exclusion keeps increments apart). A reader takes the read
//! lock, reads the counter twice with a pause between, then confirms its hold with an empty
//! fenced `multi` (its lock node still exists, so no writer can have been let in). Seven
//! acquisitions in ten wait for ever, one is a `try_read`/`try_write`, two wait a few
//! milliseconds (`try_*_for`). A third of the writers, their write done, downgrade: they take
//! the read lock under the write lock, release the write lock, and go on as a reader.
//!
//! History: `acquire-write` / `acquire-read` (`ok` value the token; the input says how long
//! it waited, `{"wait": ms}`, 0 for a try; `fail` when a try found the lock held), `write`
//! (value `{"token", "counter"}`), `downgrade` (`ok` value the read hold's token), `read`
//! (`ok` value `[first, second]` for a confirmed hold, `fail` when the hold could not be
//! confirmed) and `release`.
//!
//! The checker: the `ok` writes wrote distinct values, and every confirmed read saw the same
//! value twice (no writer inside a read hold).

use std::time::Duration;

use avout::Client;
use avout::lock::{LockError, LockGuard, RwLock};
use rand::Rng;
use serde_json::{Value, json};

use avout_check::Options;

use crate::builtin::mutex::{counter_node, fenced_write, read_counter, set_counter};
use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::OP_DEADLINE;
use crate::scenario::WorkloadError;
use crate::scenario::worker::{Caller, Ended, Ends, Invoke, Worker, all_workers};
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

/// How long an acquisition waits: for ever, not at all (`try_read`, `try_write`), or a few
/// milliseconds (`try_read_for`, `try_write_for`).
#[derive(Clone, Copy, Debug)]
enum Wait {
    Forever,
    Not,
    Millis(u64),
}

impl Wait {
    fn draw(rng: &mut impl Rng) -> Wait {
        match rng.random_range(0..10) {
            0..7 => Wait::Forever,
            7 => Wait::Not,
            _ => Wait::Millis(rng.random_range(1..20)),
        }
    }

    fn input(self) -> Value {
        match self {
            Wait::Forever => Value::Null,
            Wait::Not => json!({"wait": 0}),
            Wait::Millis(ms) => json!({"wait": ms}),
        }
    }
}

/// A try that found the lock held (`fail`), or the lock's error.
enum Tried {
    Busy,
    Lock(LockError),
}

impl Ends for Tried {
    fn end(&self) -> EventType {
        match self {
            Tried::Busy => EventType::Fail,
            Tried::Lock(e) => e.end(),
        }
    }
}

async fn acquire(lock: &RwLock, write: bool, wait: Wait) -> Result<LockGuard, Tried> {
    let got = match (write, wait) {
        (true, Wait::Forever) => lock.write().await.map(Some),
        (false, Wait::Forever) => lock.read().await.map(Some),
        (true, Wait::Not) => lock.try_write().await,
        (false, Wait::Not) => lock.try_read().await,
        (true, Wait::Millis(ms)) => lock.try_write_for(Duration::from_millis(ms)).await,
        (false, Wait::Millis(ms)) => lock.try_read_for(Duration::from_millis(ms)).await,
    };
    got.map_err(Tried::Lock)?.ok_or(Tried::Busy)
}

/// Releases `guard` after the hold's work `held`: `ok` only for a clean unlock of a hold that
/// was not lost.
async fn release(caller: &mut Caller<'_>, guard: LockGuard, held: Result<(), ()>) {
    let token = guard.fencing_token();
    caller.rec.invoke(caller.p(), "release", token.into(), None);
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
    caller.released(token.into(), released);
}

/// Downgrades the write hold `write`: takes the read lock under it (at once: nobody else can
/// be inside) and releases the write lock, recorded as `downgrade` (`ok` with the read hold's
/// token). The read hold is then the write hold's successor.
async fn downgrade(
    lock: &RwLock,
    caller: &mut Caller<'_>,
    write: LockGuard,
) -> Result<LockGuard, ()> {
    let token = write.fencing_token();
    let op = Invoke::new("downgrade", token.into()).in_hold();
    let step = || async {
        let read = lock.read().await?;
        write.unlock().await?;
        Ok::<_, LockError>(read)
    };
    match caller.call(op, step, |r| r.fencing_token().into()).await {
        Ended::Ok(read) => Ok(read),
        Ended::Err(_) | Ended::Stuck => Err(()),
    }
}

/// One client: `me.w.ops` operations.
pub(crate) async fn client(mut me: Worker<'_>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    counter_node(&client, RESOURCE).await?;
    let lock = RwLock::new(&client, LOCK)?.planted(me.env.planted);
    for _ in 0..me.w.ops {
        let write = me.rng.random_bool(0.4);
        let wait = Wait::draw(&mut me.rng);
        let f = if write {
            "acquire-write"
        } else {
            "acquire-read"
        };
        let op = Invoke::new(f, wait.input());
        let guard = match me
            .caller
            .call(
                op,
                || acquire(&lock, write, wait),
                |g| g.fencing_token().into(),
            )
            .await
        {
            Ended::Stuck => break,
            Ended::Ok(g) => g,
            Ended::Err(_) => continue,
        };
        let token = guard.fencing_token();
        let pause = Duration::from_millis(me.rng.random_range(0..5));
        let held = under(&client, &guard, write, token, &mut me.caller, pause).await;
        // A third of the write holds that went well go on reading, downgraded.
        let (guard, held) = match held {
            Ok(()) if write && me.rng.random_bool(0.3) => {
                match downgrade(&lock, &mut me.caller, guard).await {
                    Ok(read) => {
                        let token = read.fencing_token();
                        let pause = Duration::from_millis(me.rng.random_range(0..5));
                        let held = under(&client, &read, false, token, &mut me.caller, pause).await;
                        (read, held)
                    }
                    Err(()) => {
                        // The write guard went with the failed step (its drop releases it).
                        let p = me.caller.p();
                        me.caller.rec.invoke(p, "release", token.into(), None);
                        me.caller.released(token.into(), false);
                        continue;
                    }
                }
            }
            held => (guard, held),
        };
        release(&mut me.caller, guard, held).await;
    }
    Ok(())
}

/// The `rwlock` scenario: readers read twice, writers increment.
pub const SCENARIO: Described = Described {
    name: "rwlock",
    about: "readers read twice, writers increment; checker: no writer inside a read hold",
    defaults: (4, 20),
    checkers: |_w| Checks::named("rwlock", &Options::default()),
    workload: |env, w, rec| Box::pin(async move { all_workers(env, w, rec, client).await }),
};
