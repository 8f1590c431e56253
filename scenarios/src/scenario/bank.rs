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

use avout::planted::Bugs;
use avout::stm::{Abort, Ref, Stm, StmConfig, StmError};
use rand::Rng;
use serde_json::{Map, Value, json};

use super::env::{Cluster, Recorder, retry_open};
use super::session::Session;
use super::worker::{Ended, Invoke, Worker};
use super::{Protocol, Verdict};
use crate::check::bank::BankChecker;
use crate::history::History;

const ROOT: &str = "/bank";
const ACCOUNTS: usize = 5;
const INITIAL: i64 = 20;

/// The STM configuration of a workload's protocol.
pub(crate) fn stm_config(p: Protocol, planted: Bugs) -> StmConfig {
    StmConfig {
        planted,
        ..StmConfig::with_protocol(match p {
            Protocol::Mvcc => avout::stm::Protocol::Mvcc,
            Protocol::Optimistic => avout::stm::Protocol::Optimistic,
        })
    }
}

async fn open<K: Cluster>(
    cluster: &K,
    zk: &mut Arc<K::Client>,
    p: Protocol,
) -> Result<Refs<K::Client, i64>, String> {
    retry_open(cluster, zk, 200, |c| async move {
        let stm = Stm::open(c, ROOT, stm_config(p, cluster.planted())).await?;
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

/// An STM and refs of `T` on one session.
pub(crate) type Refs<C, T> = (Stm<C>, Vec<Ref<T>>);

/// After a failed transaction: if the session is lost (it ended, or the STM says so), counts
/// the old STM's retries and opens a new session with new refs.
pub(crate) async fn recover<K, T, B, E>(
    rec: &Recorder,
    session: &mut Session<'_, K, Refs<K::Client, T>, B>,
    e: &StmError<E>,
) -> Result<(), String>
where
    K: Cluster,
    B: AsyncFn(&K, &mut Arc<K::Client>) -> Result<Refs<K::Client, T>, String>,
{
    if session.has_ended() || matches!(e, StmError::SessionLost(_)) {
        rec.retries(session.handles().0.stats().retries);
        session.renew().await?;
    }
    Ok(())
}

/// One client: `me.w.ops` operations.
pub(crate) async fn client<K: Cluster>(mut me: Worker<'_, K>) -> Result<(), String> {
    let mut session =
        Session::open(me.cluster, async |c, zk| open(c, zk, me.w.protocol).await).await?;
    for _ in 0..me.w.ops {
        let transfer = me.rng.random_bool(0.7);
        let (f, input) = if transfer {
            let from = me.rng.random_range(0..ACCOUNTS);
            let to = (from + me.rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
            let amount = me.rng.random_range(1..=5i64);
            (
                "transfer",
                json!({"from": format!("a{from}"), "to": format!("a{to}"), "amount": amount}),
            )
        } else {
            ("read", Value::Null)
        };
        let (stm, refs) = session.handles();
        let call = || async {
            if transfer {
                let idx = |k: &str| -> usize {
                    input[k].as_str().unwrap_or("a0")[1..].parse().unwrap_or(0)
                };
                let (from, to) = (&refs[idx("from")], &refs[idx("to")]);
                let amount = input["amount"].as_i64().unwrap_or(0);
                stm.dosync(async |tx| {
                    tx.alter(from, |b| b - amount).await?;
                    tx.alter(to, |b| b + amount).await?;
                    Ok::<_, Abort>(input.clone())
                })
                .await
            } else {
                stm.dosync(async |tx| {
                    let mut balances = Map::new();
                    for (i, r) in refs.iter().enumerate() {
                        balances.insert(format!("a{i}"), tx.deref(r).await?.into());
                    }
                    Ok::<_, Abort>(Value::Object(balances))
                })
                .await
            }
        };
        match me
            .caller
            .call(Invoke::new(f, input.clone()), call, Value::clone)
            .await
        {
            Ended::Stuck => break,
            Ended::Ok(_) => {}
            Ended::Err(e) => recover(me.caller.rec, &mut session, &e).await?,
        }
    }
    me.caller.rec.retries(session.handles().0.stats().retries);
    Ok(())
}

/// The bank checker as this scenario configures it: the total and the accounts it starts with.
pub(crate) fn checker() -> BankChecker {
    BankChecker::new()
        .total(INITIAL * ACCOUNTS as i64)
        .accounts((0..ACCOUNTS).map(|i| format!("a{i}")))
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
    match checker().check(history) {
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
