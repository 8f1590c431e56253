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

use std::collections::BTreeMap;
use std::time::Duration;

use avout::agent::{Action, Agent, AgentError};
use avout::stm::{Abort, StmError};
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::env::{Cluster, Process, Recorder, open_client, retry_open};
use super::error::{BoxError, WorkloadError};
use super::worker::{Caller, Ended, Ends, Invoke, Worker};
use super::{Verdict, Workload, pairs};
use avout_check::history::{EventType, History};

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

/// The restart marker of a failure.
fn marker(failure: &str) -> String {
    format!("R:{failure}")
}

/// One client: an executor in the background, `me.w.ops` operations.
pub(crate) async fn client<K: Cluster>(mut me: Worker<'_, K>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let log = open(&client).await?;
    let names = ["shared".to_owned()];
    let (stm, shared) =
        super::bank::open_refs(me.cluster, &client, me.w, STM_ROOT, &names, 0i64).await?;
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
pub(crate) async fn drain<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    let mut drain = Caller::new(rec, Process::new(w.clients * (w.ops + 1), 1));
    let client = open_client(cluster).await?;
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
        match tokio::time::timeout(super::OP_DEADLINE, settle).await {
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

/// The client and number of an item `c<client>-<n>`.
fn parse_item(item: &str) -> Option<(u64, u64)> {
    let (c, n) = item.strip_prefix('c')?.split_once('-')?;
    Some((c.parse().ok()?, n.parse().ok()?))
}

/// Judges an agents history; see the [module docs](self).
///
/// ```
/// use avout_check::history::{Event, History, F};
/// let f = |s: &str| F::Other(s.into());
/// // An acknowledged send applied twice.
/// let h: History = [
///     Event::invoke(0, f("send"), "c0-0".into()),
///     Event::ok(0, f("send"), "c0-0".into()),
///     Event::invoke(1, f("read"), serde_json::Value::Null),
///     Event::ok(1, f("read"), serde_json::json!(["c0-0", "c0-0"])),
/// ]
/// .into_iter()
/// .collect();
/// let v = avout_scenarios::scenario::agents::check(&h);
/// assert!(!v.valid && v.anomalies[0].contains("2 times"), "{v}");
/// ```
pub fn check(history: &History) -> Verdict {
    let ops = pairs(history);
    let mut anomalies = Vec::new();
    let Some(log) = ops
        .iter()
        .rev()
        .find(|op| op.f == "read" && op.end == EventType::Ok)
        .and_then(|op| op.output.as_array().cloned())
    else {
        return Verdict::new(
            "agents (exactly once, order, stop until restart)",
            vec!["no final read of the log".into()],
        );
    };
    let log: Vec<String> = log
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_owned())
        .collect();
    let mut times: BTreeMap<&str, usize> = BTreeMap::new();
    for entry in &log {
        *times.entry(entry.as_str()).or_default() += 1;
    }
    // Exactly once, at most once, never.
    let mut sends: BTreeMap<String, (EventType, usize)> = BTreeMap::new();
    for op in &ops {
        let Some(item) = op.input.as_str() else {
            continue;
        };
        match op.f.as_str() {
            "send" | "tx-send" => {
                sends.insert(item.to_owned(), (op.end, op.start));
                let n = times.get(item).copied().unwrap_or(0);
                match op.end {
                    EventType::Ok if n != 1 => anomalies.push(format!(
                        "{} {item} was acknowledged and applied {n} times",
                        op.f
                    )),
                    EventType::Info if n > 1 => {
                        anomalies.push(format!("{} {item} (in doubt) was applied {n} times", op.f))
                    }
                    EventType::Fail if n > 0 && op.f == "tx-send" => anomalies.push(format!(
                        "tx-send {item}: a send from an aborted transaction was applied"
                    )),
                    EventType::Fail if n > 0 => {
                        anomalies.push(format!("send {item} failed but was applied"))
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    for entry in log.iter().filter(|e| parse_item(e).is_some()) {
        if !sends.contains_key(entry) {
            anomalies.push(format!("{entry} was applied but never sent"));
        }
    }
    // Order per client.
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    for entry in &log {
        if let Some((c, n)) = parse_item(entry) {
            if let Some(&before) = last.get(&c)
                && n < before
            {
                anomalies.push(format!(
                    "client {c}'s c{c}-{n} was applied after its c{c}-{before}"
                ));
            }
            last.insert(c, n);
        }
    }
    // A failed agent stops until restarted.
    let position: BTreeMap<&str, usize> = log
        .iter()
        .enumerate()
        .map(|(i, e)| (e.as_str(), i))
        .collect();
    for op in ops
        .iter()
        .filter(|op| op.f == "fail-send" && op.end == EventType::Ok)
    {
        let failed = op.input.as_str().unwrap_or_default();
        let failed = failed.strip_prefix("F:").unwrap_or(failed);
        let m = marker(failed);
        let restarted_at = position.get(m.as_str()).copied();
        for (item, (_, invoked)) in &sends {
            let Some(&at) = position.get(item.as_str()) else {
                continue;
            };
            if *invoked > op.stop && restarted_at.is_none_or(|r| at < r) {
                anomalies.push(format!(
                    "{item} was sent after the failing {failed} was queued and applied \
                     before that failure's restart"
                ));
            }
        }
    }
    for (entry, n) in &times {
        if entry.starts_with("R:") && *n > 1 {
            anomalies.push(format!("the failure {entry} was restarted {n} times"));
        }
    }
    Verdict::new(
        "agents (exactly once, order, stop until restart)",
        anomalies,
    )
}

/// The `agents` scenario: sends, sends from transactions, failing actions, restarts, an executor per client.
#[derive(Clone, Copy, Debug, Default)]
pub struct AgentsScenario;

impl super::Scenario for AgentsScenario {
    fn name(&self) -> &'static str {
        "agents"
    }

    fn about(&self) -> &'static str {
        "sends, sends from transactions, failing actions, restarts, an executor per \
         client; checker: exactly once, order per sender, stop until restarted"
    }

    fn defaults(&self) -> (usize, usize) {
        (3, 20)
    }

    fn workload<'a>(
        &'a self,
        cluster: super::AnyCluster<'a>,
        w: &'a super::Workload,
        rec: &'a super::env::Recorder,
    ) -> futures::future::LocalBoxFuture<'a, Result<(), WorkloadError>> {
        Box::pin(async move {
            super::worker::all_workers(&cluster, w, rec, client).await?;
            drain(&cluster, w, rec).await
        })
    }

    fn check(&self, _w: &super::Workload, history: &History) -> super::Verdict {
        check(history)
    }
}

#[cfg(test)]
mod tests {
    use super::check;
    use avout_check::history::{Event, F, History};
    use serde_json::{Value, json};

    fn f(s: &str) -> F {
        F::Other(s.into())
    }

    /// A history of `(process, f, input, end)` operations, one after the other, then a read
    /// of `log`.
    fn history(ops: &[(u64, &str, &str, &str)], log: Value) -> History {
        let mut events = Vec::new();
        for &(p, name, input, end) in ops {
            events.push(Event::invoke(p, f(name), input.into()));
            events.push(match end {
                "ok" => Event::ok(p, f(name), input.into()),
                "fail" => Event::fail(p, f(name), input.into()),
                _ => Event::info(p, f(name), input.into()),
            });
        }
        events.push(Event::invoke(99, f("read"), Value::Null));
        events.push(Event::ok(99, f("read"), log));
        events.into_iter().collect()
    }

    fn anomalies(ops: &[(u64, &str, &str, &str)], log: Value) -> Vec<String> {
        check(&history(ops, log)).anomalies
    }

    #[test]
    fn a_valid_history_passes() {
        let ops = [
            (0, "send", "c0-0", "ok"),
            (1, "tx-send", "c1-0", "ok"),
            (1, "tx-send", "c1-1", "fail"),
            (0, "fail-send", "F:c0-1", "ok"),
            (0, "send", "c0-2", "info"),
            (1, "send", "c1-2", "ok"),
        ];
        let log = json!(["c0-0", "c1-0", "R:c0-1", "c1-2"]);
        assert!(anomalies(&ops, log).is_empty());
    }

    #[test]
    fn each_rule_refuses_its_violation() {
        let lost = anomalies(&[(0, "send", "c0-0", "ok")], json!([]));
        assert!(lost[0].contains("applied 0 times"), "{lost:?}");
        let twice = anomalies(&[(0, "send", "c0-0", "info")], json!(["c0-0", "c0-0"]));
        assert!(twice[0].contains("in doubt"), "{twice:?}");
        let aborted = anomalies(&[(0, "tx-send", "c0-0", "fail")], json!(["c0-0"]));
        assert!(aborted[0].contains("aborted transaction"), "{aborted:?}");
        let invented = anomalies(&[], json!(["c3-3"]));
        assert!(invented[0].contains("never sent"), "{invented:?}");
        let order = anomalies(
            &[(0, "send", "c0-0", "ok"), (0, "send", "c0-1", "ok")],
            json!(["c0-1", "c0-0"]),
        );
        assert!(order[0].contains("after its"), "{order:?}");
        let ran_on = anomalies(
            &[(0, "fail-send", "F:c0-0", "ok"), (1, "send", "c1-0", "ok")],
            json!(["c1-0", "R:c0-0"]),
        );
        assert!(
            ran_on[0].contains("before that failure's restart"),
            "{ran_on:?}"
        );
        let never_restarted = anomalies(
            &[(0, "fail-send", "F:c0-0", "ok"), (1, "send", "c1-0", "ok")],
            json!(["c1-0"]),
        );
        assert!(!never_restarted.is_empty());
        let restarted_twice = anomalies(&[], json!(["R:c0-0", "R:c0-0"]));
        assert!(
            restarted_twice[0].contains("2 times"),
            "{restarted_twice:?}"
        );
    }
}
