//! `lock-table`: the medical-records example of Azos's lock tables ([`avout::locktable`]).
//!
//! Clients are clerks entering and reviewing one resident's MDS record, and now and then
//! closing the month. Entering is a lock transaction `assert(not(exists(Month-End))),
//! assert(not(exists(MDS-Review))), assert(set_var(MDS-Entry))`; reviewing the same with
//! the roles swapped; a month-end `assert(not(exists(MDS-Entry))), assert(not(exists
//! (MDS-Review))), assert(set_var(Month-End))`. Nobody else may hold an entry of the same kind
//! either (`set_var` without duplicates). So at most one clerk is *inside* (holding an entry
//! of any kind) at a time. Inside, the clerk reads a counter node and writes it plus one
//! (without a version check, but in a `multi` that checks its own entry still exists: a clerk
//! whose session ended cannot write), then leaves with `delete_var`.
//!
//! History, in the mutex checker's format: `acquire` (`ok` value an increasing grant number),
//! `write` (value `{"token", "counter"}`), `release` (`ok` when `delete_var` succeeded,
//! `info` when the entry was lost with the session).
//!
//! The checker: no two clerks inside at once (overlapping holds are allowed only when the
//! earlier ended by losing its session: its entries vanished with it, as designed), and no
//! increment lost between two clean holds.

use std::cell::Cell;
use std::time::Duration;

use avout::locktable::{
    LockTable, LockTableError, Transaction, assert, delete_var, encode_name, exists, not, set_var,
};
use avout::{Coordination, Op};
use rand::Rng;
use serde_json::{Value, json};

use super::env::{Cluster, Process, Recorder, client_rng};
use super::mutex::{check_holds, ensure_counter, read_counter};
use super::{OP_DEADLINE, Verdict, Workload};
use crate::history::{EventType, History};

const NAMESPACE: &str = "/locking/Clinical";
const RESOURCE: &str = "/locking-record";
const RESIDENT: &str = "CGROVE-35";
const KINDS: [&str; 3] = ["MDS-Entry", "MDS-Review", "Month-End"];

fn enter(kind: usize, me: &str) -> Transaction {
    let mut statements: Vec<_> = (0..KINDS.len())
        .filter(|&k| k != kind)
        .map(|k| assert(not(exists(KINDS[k], RESIDENT))))
        .collect();
    statements.push(assert(set_var(KINDS[kind], RESIDENT, me)));
    Transaction::new(format!("{} by {me}", KINDS[kind]), statements)
}

fn leave(kind: usize, me: &str) -> Transaction {
    Transaction::new(
        format!("{me} leaves {}", KINDS[kind]),
        vec![assert(delete_var(KINDS[kind], RESIDENT))],
    )
}

fn end_of(e: &LockTableError) -> EventType {
    match e {
        LockTableError::Indeterminate(_) => EventType::Info,
        LockTableError::Zk(z) if z.is_indeterminate() => EventType::Info,
        _ => EventType::Fail,
    }
}

async fn client<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
    index: usize,
    grants: &Cell<u64>,
) -> Result<(), String> {
    let mut rng = client_rng(w.seed, index);
    let mut process = Process::new(index, w.clients);
    let mut zk = cluster.connect().await.map_err(|e| e.to_string())?;
    ensure_counter(cluster, &mut zk, RESOURCE).await?;
    let me = format!("clerk-{index}");
    let mut table = LockTable::new(zk.clone(), NAMESPACE).map_err(|e| e.to_string())?;
    let mut done = 0;
    let mut tries = 0;
    while done < w.ops && tries < w.ops * 50 {
        tries += 1;
        let kind = if rng.random_bool(0.1) {
            2
        } else {
            rng.random_range(0..2)
        };
        let p = process.id();
        rec.invoke(p, "acquire", Value::Null, None);
        match tokio::time::timeout(OP_DEADLINE, table.execute(&enter(kind, &me))).await {
            Err(_) => {
                rec.complete(EventType::Info, p, "acquire", Value::Null, None);
                rec.stall(format!("process {p}'s {}", KINDS[kind]));
                break;
            }
            Ok(Err(e)) => {
                let end = end_of(&e);
                rec.complete(end, p, "acquire", Value::Null, None);
                if end == EventType::Info {
                    process.retire();
                }
                if zk.session_states().current().is_terminal() {
                    zk = cluster.connect().await.map_err(|e| e.to_string())?;
                    table = LockTable::new(zk.clone(), NAMESPACE).map_err(|e| e.to_string())?;
                }
                // Someone else is inside: come back later.
                tokio::time::sleep(Duration::from_millis(rng.random_range(1..10))).await;
                continue;
            }
            Ok(Ok(_)) => {}
        }
        done += 1;
        let token = grants.get() + 1;
        grants.set(token);
        rec.complete(EventType::Ok, p, "acquire", token.into(), None);
        if let Ok(n) = read_counter(&*zk, RESOURCE).await {
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..5))).await;
            let value = json!({"token": token, "counter": n + 1});
            rec.invoke(p, "write", value.clone(), None);
            // Fenced by the clerk's own entry: a clerk whose session ended (its entry
            // vanished with it) cannot write.
            let entry = format!(
                "{NAMESPACE}/vars/{}/{}/{:016x}",
                encode_name(KINDS[kind]),
                encode_name(RESIDENT),
                zk.session().id.0 as u64
            );
            let ops = [
                Op::check(entry, None),
                Op::set_data(RESOURCE, (n + 1).to_string().into_bytes(), None),
            ];
            match zk.multi(&ops).await {
                Ok(_) => rec.complete(EventType::Ok, p, "write", value, None),
                Err(e) => rec.complete(super::env::outcome_of(&e), p, "write", value, None),
            }
        }
        rec.invoke(p, "release", token.into(), None);
        match tokio::time::timeout(OP_DEADLINE, table.execute(&leave(kind, &me))).await {
            Ok(Ok(_)) => rec.complete(EventType::Ok, p, "release", token.into(), None),
            _ => {
                rec.complete(EventType::Info, p, "release", token.into(), None);
                process.retire();
            }
        }
        if zk.session_states().current().is_terminal() {
            zk = cluster.connect().await.map_err(|e| e.to_string())?;
            table = LockTable::new(zk.clone(), NAMESPACE).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The workload: `w.clients` clerks, `w.ops` visits each.
pub(crate) async fn workload<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), String> {
    let grants = Cell::new(0);
    super::env::all_clients(w.clients, |i| client(cluster, w, rec, i, &grants)).await?;
    Ok(())
}

/// Judges a lock-table history: one clerk inside at a time, no lost increment.
///
/// ```
/// use avout_scenarios::history::{Event, History, F};
/// let f = |s: &str| F::Other(s.into());
/// let h: History = [
///     Event::invoke(0, f("acquire"), serde_json::Value::Null),
///     Event::ok(0, f("acquire"), 1.into()),
///     Event::invoke(1, f("acquire"), serde_json::Value::Null),
///     Event::ok(1, f("acquire"), 2.into()),
///     Event::invoke(0, f("release"), 1.into()),
///     Event::ok(0, f("release"), 1.into()),
/// ]
/// .into_iter()
/// .collect();
/// assert!(!avout_scenarios::scenario::locktable::check(&h).valid);
/// ```
pub fn check(history: &History) -> Verdict {
    check_holds(history, "lock-table (one clerk inside at a time)")
}
