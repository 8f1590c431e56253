//! `agents`: clients send actions to one [`Agent`] whose value is the log of what was
//! applied, while each runs an executor; drained and read at the end.
//!
//! Each client, at random: sends `c<client>-<n>` plainly (`send`); sends it from a
//! transaction that also alters a shared ref (`tx-send`, under the workload's protocol; one
//! body in four refuses, so the transaction aborts: `fail`); sends a failing action
//! (`fail-send`, input `F:c<client>-<n>`), which stops the agent; restarts a failed agent
//! (`restart`), appending `R:<failed action>` to the log inside the compare-and-set. At the
//! end a fresh client applies what is left, restarting any failure (`R:…` too), and reads
//! the log (`read`).
//!
//! The checker, on the final log:
//! - every acknowledged send is applied exactly once, one in doubt at most once, one that
//!   failed never (for `tx-send`: a send from an aborted try is never applied);
//! - each client's actions are applied in the order it sent them;
//! - a failed agent stops until restarted: an action whose send began after a failing
//!   action was acknowledged is applied only after that failure's `R:` marker, and each
//!   failure is restarted at most once.

use std::time::Duration;

use avout::agent::{Action, Agent, AgentError};
use avout::atom::Json;
use avout::stm::{Abort, StmError};
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use avout_check::Options;
use avout_check::recipes::agents::marker;

use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::Workload;
use crate::scenario::env::{Env, Process, Recorder, retry_open};
use crate::scenario::worker::{Caller, Ended, Ends, Invoke, Worker, all_workers};
use crate::scenario::{BoxError, WorkloadError};
use avout_check::history::EventType;

const PATH: &str = "/agent";
const STM_ROOT: &str = "/agent-stm";

/// The log's actions.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum Act {
    /// Appends the item.
    Append(String),
    /// Fails, with the item as its error.
    Fail(String),
}

impl Action<Vec<String>> for Act {
    type Error = String;
    fn apply(&self, log: &Vec<String>) -> Result<Vec<String>, String> {
        match self {
            Act::Append(item) => {
                let mut log = log.clone();
                log.push(item.clone());
                Ok(log)
            }
            Act::Fail(item) => Err(item.clone()),
        }
    }
}

type Log = Agent<Vec<String>, Act>;

impl Ends for AgentError {
    fn end(&self) -> EventType {
        if self.is_definite() {
            EventType::Fail
        } else {
            EventType::Info
        }
    }
}

/// Why a `tx-send` ended.
#[derive(Debug)]
enum TxEnd {
    Stm(StmError<Refused>),
    /// The body refused: nothing was sent.
    Refused,
}

impl Ends for TxEnd {
    fn end(&self) -> EventType {
        match self {
            TxEnd::Refused => EventType::Fail,
            TxEnd::Stm(e) => e.end(),
        }
    }
}

#[derive(Debug)]
enum Refused {
    Stm(#[allow(dead_code)] Abort),
    No,
}

impl From<Abort> for Refused {
    fn from(a: Abort) -> Self {
        Refused::Stm(a)
    }
}

/// Opens the log (retried: the first opens race to create it, and faults interrupt them).
async fn open(client: &avout::Client) -> Result<Log, WorkloadError> {
    retry_open(200, || Agent::open(client, PATH, Vec::new())).await
}

/// One client: an executor in the background, `me.w.ops` operations.
pub(crate) async fn client(mut me: Worker<'_>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let log = open(&client).await?;
    let names = ["shared".to_owned()];
    let (stm, shared) =
        crate::builtin::bank::open_refs_with(me.env, &client, me.w, STM_ROOT, &names, 0i64, Json)
            .await?;
    let shared = shared.into_iter().next().expect("one ref");
    let executor = tokio::spawn({
        let log = log.clone();
        async move { log.run_executor().await }
    });
    for n in 0..me.w.ops {
        let item = format!("c{}-{n}", me.index);
        let roll: f64 = me.rng.random();
        let refuse = me.rng.random_bool(0.25);
        let ended = if roll < 0.5 {
            let call = || async { log.send(Act::Append(item.clone())).await };
            stuck(
                me.caller
                    .call(Invoke::new("send", item.clone().into()), call, |_| {
                        item.clone().into()
                    })
                    .await,
            )
        } else if roll < 0.75 {
            let call = || async {
                let (log, shared, item) = (log.clone(), shared.clone(), item.clone());
                stm.dosync_with(async move |tx| {
                    tx.alter(&shared, |n| n + 1).await?;
                    tx.send(&log, Act::Append(item.clone()))?;
                    if refuse {
                        return Err(Refused::No);
                    }
                    Ok(())
                })
                .await
                .map_err(|e| match e {
                    StmError::Body(Refused::No) => TxEnd::Refused,
                    e => TxEnd::Stm(e),
                })
            };
            stuck(
                me.caller
                    .call(Invoke::new("tx-send", item.clone().into()), call, |_| {
                        item.clone().into()
                    })
                    .await,
            )
        } else if roll < 0.88 {
            let input = format!("F:{item}");
            let call = || async { log.send(Act::Fail(item.clone())).await };
            stuck(
                me.caller
                    .call(Invoke::new("fail-send", input.clone().into()), call, |_| {
                        input.clone().into()
                    })
                    .await,
            )
        } else {
            let call = || async {
                match log
                    .restart_with(|old, f| with(old, marker(&f.error)), false)
                    .await
                {
                    Ok(f) => Ok(Value::from(marker(&f.error))),
                    Err(AgentError::NotFailed { .. }) => Ok(Value::Null),
                    Err(e) => Err(e),
                }
            };
            stuck(
                me.caller
                    .call(Invoke::new("restart", Value::Null), call, Value::clone)
                    .await,
            )
        };
        if ended {
            break;
        }
    }
    executor.abort();
    Ok(())
}

fn stuck<T, E>(ended: Ended<T, E>) -> bool {
    matches!(ended, Ended::Stuck)
}

fn with(log: &[String], item: String) -> Vec<String> {
    let mut log = log.to_vec();
    log.push(item);
    log
}

/// After every client is done: applies what is left (restarting failures) and reads the
/// log.
pub(crate) async fn drain(
    env: &Env<'_>,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    let mut drain = Caller::new(rec, Process::new(w.clients * (w.ops + 1), 1));
    let client = env.backend.client().await?;
    let log = open(&client).await?;
    let mut failures = 0;
    loop {
        // Done when a pass applies nothing and finds the agent running. (A restart whose
        // reply was lost reports its own restart, so `NotFailed` means nobody restarted
        // anything since this pass applied what it could.)
        let settle = async {
            let applied = log.apply_pending().await?;
            match log
                .restart_with(|old, f| with(old, marker(&f.error)), false)
                .await
            {
                Ok(f) => Ok((applied, Some(marker(&f.error)))),
                Err(AgentError::NotFailed { .. }) => Ok((applied, None)),
                Err(e) => Err(e),
            }
        };
        match tokio::time::timeout(crate::scenario::OP_DEADLINE, settle).await {
            Ok(Ok((0, None))) => break,
            Ok(Ok((_, None))) => {}
            Ok(Ok((_, Some(m)))) => {
                // The drain's restart is an operation like the clients'.
                rec.invoke(drain.p(), "restart", Value::Null, None);
                rec.complete(EventType::Ok, drain.p(), "restart", m.into(), None);
            }
            Ok(Err(e)) => {
                failures += 1;
                if failures > 100 {
                    return Err(WorkloadError::gave_up("the drain of the agent", Some(e)));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(_) => {
                return Err(WorkloadError::gave_up(
                    "the drain of the agent (stuck)",
                    None::<BoxError>,
                ));
            }
        }
    }
    loop {
        let call = || async { log.deref().await };
        match drain
            .call(Invoke::new("read", Value::Null), call, |l| {
                Value::from(l.clone())
            })
            .await
        {
            Ended::Ok(_) => return Ok(()),
            Ended::Stuck => {
                return Err(WorkloadError::gave_up(
                    "the final read of the agent (stuck)",
                    None::<BoxError>,
                ));
            }
            Ended::Err(_) => {
                failures += 1;
                if failures > 100 {
                    return Err(WorkloadError::gave_up(
                        "the final read of the agent (100 tries)",
                        None::<BoxError>,
                    ));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The `agents` scenario: sends, sends from transactions, failing actions, restarts, an executor per client.
pub const SCENARIO: Described = Described {
    name: "agents",
    about: "sends, sends from transactions, failing actions, restarts, an executor per \
        client; checker: exactly once, order per sender, stop until restarted",
    defaults: (3, 20),
    checkers: |_w| Checks::named("agents", &Options::default()),
    workload: |env, w, rec| {
        Box::pin(async move {
            all_workers(env, w, rec, client).await?;
            drain(env, w, rec).await
        })
    },
};
