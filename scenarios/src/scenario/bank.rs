//! `bank`: transfers between accounts held in STM refs ([`avout::stm`]), and reads of every
//! balance in one transaction.
//!
//! Five accounts `a0`…`a4` start with 20 each (total 100), under a validator that forbids a
//! negative balance. A transfer moves 1–5 from one random account to another in one
//! `dosync` (`alter` both); a validator rejection is a `fail`. A read `deref`s every account
//! in one `dosync`. The protocol is the workload's (`--protocol mvcc|optimistic`).
//!
//! The checker is the bank checker ([`crate::check::bank`]): every `ok` read shows all five
//! accounts, sums to 100, and has no negative balance.

use std::sync::Arc;

use avout::Coordination;
use avout::stm::{Abort, Ref, Stm, StmConfig, StmError};
use rand::Rng;
use serde_json::{Map, Value, json};

use super::env::{Cluster, Process, Recorder, client_rng, retry_open};
use super::{OP_DEADLINE, Protocol, Verdict, Workload};
use crate::check::bank::BankChecker;
use crate::history::{EventType, History};

const ROOT: &str = "/bank";
const ACCOUNTS: usize = 5;
const INITIAL: i64 = 20;

/// The STM configuration of a workload's protocol.
pub(crate) fn stm_config(p: Protocol) -> StmConfig {
    StmConfig::with_protocol(match p {
        Protocol::Mvcc => avout::stm::Protocol::Mvcc,
        Protocol::Optimistic => avout::stm::Protocol::Optimistic,
    })
}

type Accounts<C> = (Stm<C>, Vec<Ref<i64>>);

async fn open<K: Cluster>(
    cluster: &K,
    zk: &mut Arc<K::Client>,
    p: Protocol,
) -> Result<Accounts<K::Client>, String> {
    retry_open(cluster, zk, 200, |c| async move {
        let stm = Stm::open(c, ROOT, stm_config(p)).await?;
        let mut refs = Vec::new();
        for i in 0..ACCOUNTS {
            let r = stm.make_ref(&format!("a{i}"), INITIAL).await?;
            r.set_validator(|b| *b >= 0);
            refs.push(r);
        }
        Ok::<_, StmError>((stm, refs))
    })
    .await
}

fn end_of<E>(e: &StmError<E>) -> EventType {
    if e.is_definite() {
        EventType::Fail
    } else {
        EventType::Info
    }
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
    let (mut stm, mut refs) = open(cluster, &mut zk, w.protocol).await?;
    for _ in 0..w.ops {
        let p = process.id();
        let transfer = rng.random_bool(0.7);
        let (f, input) = if transfer {
            let from = rng.random_range(0..ACCOUNTS);
            let to = (from + rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
            let amount = rng.random_range(1..=5i64);
            (
                "transfer",
                json!({"from": format!("a{from}"), "to": format!("a{to}"), "amount": amount}),
            )
        } else {
            ("read", Value::Null)
        };
        rec.invoke(p, f, input.clone(), None);
        let result = if transfer {
            let idx =
                |k: &str| -> usize { input[k].as_str().unwrap_or("a0")[1..].parse().unwrap_or(0) };
            let (from, to) = (&refs[idx("from")], &refs[idx("to")]);
            let amount = input["amount"].as_i64().unwrap_or(0);
            let body = stm.dosync(async |tx| {
                tx.alter(from, |b| b - amount).await?;
                tx.alter(to, |b| b + amount).await?;
                Ok::<_, Abort>(input.clone())
            });
            tokio::time::timeout(OP_DEADLINE, body).await
        } else {
            let refs = &refs;
            let body = stm.dosync(async |tx| {
                let mut balances = Map::new();
                for (i, r) in refs.iter().enumerate() {
                    balances.insert(format!("a{i}"), tx.deref(r).await?.into());
                }
                Ok::<_, Abort>(Value::Object(balances))
            });
            tokio::time::timeout(OP_DEADLINE, body).await
        };
        match result {
            Err(_) => {
                rec.complete(EventType::Info, p, f, input, None);
                rec.stall(format!("process {p}'s {f}"));
                break;
            }
            Ok(Ok(v)) => rec.complete(EventType::Ok, p, f, v, None),
            Ok(Err(e)) => {
                let end = end_of(&e);
                rec.complete(end, p, f, input, None);
                if end == EventType::Info {
                    process.retire();
                }
                if zk.session_states().current().is_terminal()
                    || matches!(e, StmError::SessionLost(_))
                {
                    rec.retries(stm.stats().retries);
                    zk = cluster.connect().await.map_err(|e| e.to_string())?;
                    (stm, refs) = open(cluster, &mut zk, w.protocol).await?;
                }
            }
        }
    }
    rec.retries(stm.stats().retries);
    Ok(())
}

/// The workload: `w.clients` clients, `w.ops` transfers or reads each.
pub(crate) async fn workload<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), String> {
    super::env::all_clients(w.clients, |i| client(cluster, w, rec, i)).await?;
    Ok(())
}

/// Judges a bank history with the bank checker (total 100 over `a0`…`a4`).
///
/// ```
/// use avout_scenarios::history::{Event, History, F};
/// let read = serde_json::json!({"a0": 20, "a1": 20, "a2": 20, "a3": 20, "a4": 15});
/// let h: History = [Event::invoke(0, F::Read, serde_json::Value::Null), Event::ok(0, F::Read, read)]
///     .into_iter()
///     .collect();
/// assert!(!avout_scenarios::scenario::bank::check(&h).valid);
/// ```
pub fn check(history: &History) -> Verdict {
    let checker = BankChecker::new()
        .total(INITIAL * ACCOUNTS as i64)
        .accounts((0..ACCOUNTS).map(|i| format!("a{i}")));
    match checker.check(history) {
        Ok(v) if v.is_valid() => Verdict::new("bank (total 100, no negative balance)", vec![]),
        Ok(v) => Verdict::new(
            "bank (total 100, no negative balance)",
            v.violations.iter().map(ToString::to_string).collect(),
        ),
        Err(e) => Verdict::new(
            "bank (total 100, no negative balance)",
            vec![format!("the checker could not judge the history: {e}")],
        ),
    }
}
