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

use std::collections::BTreeMap;
use std::time::Duration;

use avout::lock::{LockError, LockGuard, RwLock};
use avout::{Coordination, Op};
use rand::Rng;
use serde_json::{Value, json};

use super::env::{Cluster, Process, Recorder, client_rng};
use super::mutex::{ensure_counter, read_counter};
use super::{OP_DEADLINE, Verdict, Workload, pairs};
use crate::history::{EventType, History};

const LOCK: &str = "/rwlock";
const RESOURCE: &str = "/rwlock-resource";

fn end_of(e: &LockError) -> EventType {
    match e {
        LockError::Zk(z) if z.is_indeterminate() => EventType::Info,
        _ => EventType::Fail,
    }
}

/// Works under a held guard; `Err` when the hold was lost (the release is then `info`).
async fn under<C: avout::Coordination + ?Sized + 'static>(
    zk: &C,
    guard: &LockGuard<C>,
    write: bool,
    token: i64,
    p: u64,
    rec: &Recorder,
    pause: Duration,
) -> Result<(), ()> {
    let first = read_counter(zk, RESOURCE).await.map_err(|_| ())?;
    tokio::time::sleep(pause).await;
    if write {
        let value = json!({"token": token, "counter": first + 1});
        rec.invoke(p, "write", value.clone(), None);
        let op = Op::set_data(RESOURCE, (first + 1).to_string().into_bytes(), None);
        match tokio::time::timeout(OP_DEADLINE, guard.fenced(vec![op])).await {
            Ok(Ok(_)) => rec.complete(EventType::Ok, p, "write", value, None),
            Ok(Err(e)) => {
                rec.complete(end_of(&e), p, "write", value, None);
                return Err(());
            }
            Err(_) => {
                rec.complete(EventType::Info, p, "write", value, None);
                rec.stall(format!("process {p}'s fenced write"));
                return Err(());
            }
        }
    } else {
        rec.invoke(p, "read", Value::Null, None);
        let second = read_counter(zk, RESOURCE).await;
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

async fn client<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
    index: usize,
) -> Result<(), String> {
    let mut rng = client_rng(w.seed, index);
    let mut process = Process::new(index, w.clients);
    let mut zk = cluster.connect().await.map_err(|e| e.to_string())?;
    ensure_counter(cluster, &mut zk, RESOURCE).await?;
    let mut lock = RwLock::new(zk.clone(), LOCK).map_err(|e| e.to_string())?;
    for _ in 0..w.ops {
        let p = process.id();
        let write = rng.random_bool(0.4);
        let f = if write {
            "acquire-write"
        } else {
            "acquire-read"
        };
        rec.invoke(p, f, Value::Null, None);
        let acquired = if write {
            tokio::time::timeout(OP_DEADLINE, lock.write()).await
        } else {
            tokio::time::timeout(OP_DEADLINE, lock.read()).await
        };
        let guard = match acquired {
            Err(_) => {
                rec.complete(EventType::Info, p, f, Value::Null, None);
                rec.stall(format!("process {p}'s {f}"));
                break;
            }
            Ok(Ok(g)) => g,
            Ok(Err(e)) => {
                let end = end_of(&e);
                rec.complete(end, p, f, Value::Null, None);
                if end == EventType::Info {
                    process.retire();
                }
                if zk.session_states().current().is_terminal() {
                    zk = cluster.connect().await.map_err(|e| e.to_string())?;
                    lock = RwLock::new(zk.clone(), LOCK).map_err(|e| e.to_string())?;
                }
                continue;
            }
        };
        let token = guard.fencing_token();
        rec.complete(EventType::Ok, p, f, token.into(), None);
        let pause = Duration::from_millis(rng.random_range(0..5));
        let held = under(&*zk, &guard, write, token, p, rec, pause).await;
        rec.invoke(p, "release", token.into(), None);
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
        if released {
            rec.complete(EventType::Ok, p, "release", token.into(), None);
        } else {
            rec.complete(EventType::Info, p, "release", token.into(), None);
            process.retire();
        }
        if zk.session_states().current().is_terminal() {
            zk = cluster.connect().await.map_err(|e| e.to_string())?;
            lock = RwLock::new(zk.clone(), LOCK).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The workload: `w.clients` clients, `w.ops` read or write holds each.
pub(crate) async fn workload<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), String> {
    super::env::all_clients(w.clients, |i| client(cluster, w, rec, i)).await?;
    Ok(())
}

/// Judges a read-write lock history.
///
/// ```
/// use avout_scenarios::history::{Event, History, F};
/// // A confirmed read hold saw the counter change: a writer was inside.
/// let h: History = [
///     Event::invoke(0, F::Other("read".into()), serde_json::Value::Null),
///     Event::ok(0, F::Other("read".into()), serde_json::json!([3, 4])),
/// ]
/// .into_iter()
/// .collect();
/// assert!(!avout_scenarios::scenario::rwlock::check(&h).valid);
/// ```
pub fn check(history: &History) -> Verdict {
    let mut anomalies = Vec::new();
    let mut written: BTreeMap<u64, u64> = BTreeMap::new();
    for op in pairs(history) {
        if op.end != EventType::Ok {
            continue;
        }
        match op.f.as_str() {
            "write" => {
                if let Some(n) = op.input["counter"].as_u64()
                    && let Some(other) = written.insert(n, op.process)
                {
                    anomalies.push(format!(
                        "processes {other} and {} both wrote {n} under the write lock: two \
                         writers were inside at once",
                        op.process
                    ));
                }
            }
            "read" if op.output[0] != op.output[1] => {
                anomalies.push(format!(
                    "process {} read {} then {} under one confirmed read hold: a writer was \
                     inside",
                    op.process, op.output[0], op.output[1]
                ));
            }
            _ => {}
        }
    }
    Verdict::new("rwlock (exclusion)", anomalies)
}
