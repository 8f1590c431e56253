//! `bank`: transfers between accounts held in STM refs ([`avout::stm`]), and reads of every
//! balance in one transaction.
//!
//! Five accounts `a0`…`a4` start with 20 each (total 100), under a validator that forbids a
//! negative balance. A transfer moves 1–5 from one random account to another in one
//! `dosync` (`alter` both); a validator rejection is a `fail`. A read `deref`s every account
//! in one `dosync`. The protocol is the workload's (`--protocol mvcc|optimistic`).
//!
//! Each client ends with an `audit`: account `a0`'s values at the past commit points the
//! protocol keeps ([`Ref::history`]), none of which may be negative.
//!
//! Failed operations carry Maelstrom's code (`error`, see [`crate::scenario::codes`]): 30 for a
//! transfer that gave up after the retry limit of conflicts (the workload's `retry_limit`, else
//! the protocol's), 14 for one a validator refused, 13 for an unknown commit outcome, 11 for
//! an operation refused unsent because the client's connection was down (10, not-supported,
//! would be an audit under a protocol that keeps no history; both protocols keep some).
//!
//! The checker is the bank checker ([`avout_check::bank`]): every `ok` read shows all five
//! accounts, sums to 100, and has no negative balance; no `ok` audit shows a negative
//! balance.

use avout::Client;
use avout::atom::Codec;
use avout::planted::Bugs;
use avout::stm::{Ref, Stm, StmConfig, StmError};
use rand::Rng;
use serde_json::{Map, Value, json};

use avout_check::Options;

use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::REFUSED_PAUSE;
use crate::scenario::WorkloadError;
use crate::scenario::env::{Env, retry_open};
use crate::scenario::store::Padded;
use crate::scenario::worker::{Ended, Invoke, Worker, all_workers};
use crate::scenario::{Protocol, Workload};

pub mod handoff;

const ROOT: &str = "/bank";
const ACCOUNTS: usize = 5;
const INITIAL: i64 = 20;

/// The STM configuration of a workload's protocol, with its retry limit if it sets one.
pub(crate) fn stm_config(p: Protocol, planted: Bugs, retry_limit: Option<u32>) -> StmConfig {
    let base = StmConfig::with_protocol(match p {
        Protocol::Mvcc => avout::stm::Protocol::Mvcc,
        Protocol::Optimistic => avout::stm::Protocol::Optimistic,
    });
    StmConfig {
        planted,
        retry_limit: retry_limit.unwrap_or(base.retry_limit),
        ..base
    }
}

/// Opens an STM at `root` on `client` (the workload's protocol, the run's planted bugs)
/// and makes a ref per name with `initial` (retried: both write when the nodes are missing),
/// its values in `codec`. The STM keeps its values where the run says
/// ([`Env::ref_store`]), under the workload's protocol and retry limit.
pub(crate) async fn open_refs_with<T, C: Codec>(
    env: &Env<'_>,
    client: &Client,
    w: &Workload,
    root: &str,
    names: &[String],
    initial: T,
    codec: C,
) -> Result<(Stm, Vec<Ref<T, C>>), WorkloadError>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
{
    retry_open(200, || async {
        let stm = open_stm(env, client, w, root).await?;
        let mut refs = Vec::new();
        for name in names {
            refs.push(
                stm.make_ref_with(name, initial.clone(), codec.clone())
                    .await?,
            );
        }
        Ok::<_, StmError>((stm, refs))
    })
    .await
}

/// The workload's STM at `root` on `client`: its protocol, planted bugs, retry limit and ref
/// store.
pub(crate) async fn open_stm(
    env: &Env<'_>,
    client: &Client,
    w: &Workload,
    root: &str,
) -> Result<Stm, StmError> {
    let config = stm_config(w.protocol, env.planted, w.retry_limit);
    match env.ref_store.clone() {
        None => Stm::open(client, root, config).await,
        Some(store) => Stm::open_with_store(client, root, config, store).await,
    }
}

/// The accounts `a0`…: their names.
pub(crate) fn account_names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("a{i}")).collect()
}

/// A bank account: a balance, padded to the workload's value size.
pub(crate) type Account = Ref<i64, Padded>;

/// Moves `amount` from `from` to `to` in one transaction; the input goes back as the
/// output.
pub(crate) async fn transfer(
    stm: &Stm,
    from: &Account,
    to: &Account,
    amount: i64,
    input: &Value,
) -> Result<Value, StmError> {
    stm.dosync(async |tx| {
        tx.alter(from, |b| b - amount).await?;
        tx.alter(to, |b| b + amount).await?;
        Ok(input.clone())
    })
    .await
}

/// Reads every account in one transaction, as `{"a0": balance, …}`.
pub(crate) async fn balances(stm: &Stm, refs: &[Account]) -> Result<Value, StmError> {
    stm.dosync(async |tx| {
        let mut balances = Map::new();
        for (i, r) in refs.iter().enumerate() {
            balances.insert(format!("a{i}"), tx.deref(r).await?.into());
        }
        Ok(Value::Object(balances))
    })
    .await
}

/// A transfer between two distinct accounts of `n`, of 1–5, as the history's input.
pub(crate) fn draw_transfer(rng: &mut impl Rng, n: usize) -> Value {
    let from = rng.random_range(0..n);
    let to = (from + rng.random_range(1..n)) % n;
    let amount = rng.random_range(1..=5i64);
    json!({"from": format!("a{from}"), "to": format!("a{to}"), "amount": amount})
}

/// The transfer `input` ([`draw_transfer`]) on `refs`.
pub(crate) async fn transfer_of(
    stm: &Stm,
    refs: &[Account],
    input: &Value,
) -> Result<Value, StmError> {
    let idx = |k: &str| -> usize { input[k].as_str().unwrap_or("a0")[1..].parse().unwrap_or(0) };
    let (from, to) = (&refs[idx("from")], &refs[idx("to")]);
    transfer(stm, from, to, input["amount"].as_i64().unwrap_or(0), input).await
}

/// The bank's accounts on `client`, each under a validator forbidding a negative balance,
/// their values padded to the workload's `value_size` bytes.
pub(crate) async fn open_accounts(
    env: &Env<'_>,
    client: &Client,
    w: &Workload,
    root: &str,
) -> Result<(Stm, Vec<Account>), WorkloadError> {
    let names = account_names(ACCOUNTS);
    let codec = Padded { size: w.value_size };
    let (stm, refs) = open_refs_with(env, client, w, root, &names, INITIAL, codec).await?;
    for r in &refs {
        r.set_validator(|b| *b >= 0);
    }
    Ok((stm, refs))
}

/// One client: `me.w.ops` operations.
pub(crate) async fn client(me: Worker<'_>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let (stm, refs) = open_accounts(me.env, &client, me.w, ROOT).await?;
    operate(me, &client, &stm, &refs).await
}

/// A client's `me.w.ops` transfers and reads on the accounts `refs`, then its audit.
pub(crate) async fn operate(
    mut me: Worker<'_>,
    client: &Client,
    stm: &Stm,
    refs: &[Account],
) -> Result<(), WorkloadError> {
    let mut done = 0;
    for _ in 0..me.w.ops {
        let transfer = me.rng.random_bool(0.7);
        let (f, input) = if transfer {
            ("transfer", draw_transfer(&mut me.rng, ACCOUNTS))
        } else {
            ("read", Value::Null)
        };
        let call = || async {
            if transfer {
                transfer_of(stm, refs, &input).await
            } else {
                balances(stm, refs).await
            }
        };
        let op = Invoke::new(f, input.clone());
        if me.caller.unavailable(client, &op) {
            tokio::time::sleep(REFUSED_PAUSE).await;
            continue;
        }
        match me.caller.call(op, call, Value::clone).await {
            Ended::Stuck => {
                me.caller.rec.stm(stm.stats());
                return Ok(());
            }
            // The in-process store never fails, and a database that does makes the run
            // meaningless: either way the run stops and says so.
            Ended::Err(e @ StmError::Store { .. }) => return Err(WorkloadError::other(e)),
            // Every account exists before any client's first operation and none is ever
            // deleted: a missing one is a wrong answer, which no checker of the history
            // sees (it is a definite failure), so the run stops and says so.
            Ended::Err(e @ StmError::NoRef { .. }) => return Err(WorkloadError::other(e)),
            Ended::Ok(_) | Ended::Err(_) => {}
        }
        done += 1;
        if done % COLLECT_EVERY == 0 {
            collect(stm).await?;
        }
    }
    // Last, the audit: a0's balances at the past commit points the protocol keeps.
    let audit = || async {
        let past = refs[0].history().await?;
        let past: Vec<Value> = past.iter().map(|(point, b)| json!([point, b])).collect();
        Ok::<_, StmError>(json!({ "a0": past }))
    };
    me.caller
        .call(Invoke::new(AUDIT, Value::Null), audit, Value::clone)
        .await;
    me.caller.rec.stm(stm.stats());
    Ok(())
}

/// The audit operation's name: `ok` with `{"a0": [[point, balance], …]}`.
pub(crate) const AUDIT: &str = "audit";

/// With a ref store, each client collects the store's garbage after this many operations,
/// concurrently with the others' transactions: a collection that removed a value still held
/// would fail a later read with a store error, which stops the run.
const COLLECT_EVERY: usize = 10;

/// Collects the ref store's garbage (nothing without a store). A store failure stops the
/// run; a ZooKeeper failure (a lost session under the fault plan) only skips this round.
async fn collect(stm: &Stm) -> Result<(), WorkloadError> {
    match stm.collect_garbage().await {
        Err(e @ StmError::Store { .. }) => Err(WorkloadError::other(e)),
        Ok(_) | Err(_) => Ok(()),
    }
}

/// The bank checker's options for this scenario's history: the total and the accounts it
/// starts with.
pub(crate) fn checker_options() -> Options {
    Options {
        total: Some(INITIAL * ACCOUNTS as i64),
        accounts: Some(account_names(ACCOUNTS)),
        ..Options::default()
    }
}

/// The `bank` scenario: STM transfers and whole-bank reads.
pub const SCENARIO: Described = Described {
    name: "bank",
    about: "STM transfers and whole-bank reads; checker: totals kept, no negative balance",
    defaults: (4, 25),
    checkers: |_w| Checks::named("bank", &checker_options()),
    workload: |env, w, rec| Box::pin(async move { all_workers(env, w, rec, client).await }),
};
