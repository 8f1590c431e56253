//! The `agents` checker: actions sent to one agent whose value is the log of what it
//! applied.
//!
//! History: `send` and `tx-send` (a send from a transaction; `fail` when its transaction
//! aborted), value the item `c<client>-<n>`; `fail-send` (input `F:c<client>-<n>`), a failing
//! action, which stops the agent; `restart`, which appends the failure's marker `R:<failed
//! action>` ([`marker`]) to the log; and a final `read` of the log (`ok` value the list of
//! entries).
//!
//! On the final log:
//! - every acknowledged send is applied exactly once, one in doubt at most once, one that
//!   failed never (for `tx-send`: a send from an aborted try is never applied);
//! - each client's actions are applied in the order it sent them;
//! - a failed agent stops until restarted: an action whose send began after a failing
//!   action was acknowledged is applied only after that failure's `R:` marker, and each
//!   failure is restarted at most once.
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::history::{Event, History, F};
//! let f = |s: &str| F::Other(s.into());
//! // An acknowledged send applied twice.
//! let h: History = [
//!     Event::invoke(0, f("send"), "c0-0".into()),
//!     Event::ok(0, f("send"), "c0-0".into()),
//!     Event::invoke(1, f("read"), serde_json::Value::Null),
//!     Event::ok(1, f("read"), serde_json::json!(["c0-0", "c0-0"])),
//! ]
//! .into_iter()
//! .collect();
//! let v = avout_check::recipes::agents::CHECKER.check(&h).unwrap();
//! assert!(!v.is_valid() && v.anomalies[0].message.contains("2 times"), "{v}");
//! ```

use std::collections::BTreeMap;

use crate::Rule;
use crate::history::{EventType, History, pairs};
use crate::verdict::{Anomaly, Role};

/// The checker.
pub const CHECKER: Rule = Rule::new("agents (exactly once, order, stop until restart)", judge);

/// The restart marker of a failure, as the log records it: `R:<failure>`.
///
/// ```
/// assert_eq!(avout_check::recipes::agents::marker("c0-1"), "R:c0-1");
/// ```
pub fn marker(failure: &str) -> String {
    format!("R:{failure}")
}

/// The client and number of an item `c<client>-<n>`.
fn parse_item(item: &str) -> Option<(u64, u64)> {
    let (c, n) = item.strip_prefix('c')?.split_once('-')?;
    Some((c.parse().ok()?, n.parse().ok()?))
}

/// An anomaly of the send invoked at event `at`.
fn sent(at: usize, kind: &str, message: String) -> Anomaly {
    Anomaly::new(kind, message).op(at, Role::Culprit, "send")
}

fn judge(history: &History) -> Vec<Anomaly> {
    let ops = pairs(history);
    let mut anomalies = Vec::new();
    let Some(log) = ops
        .iter()
        .rev()
        .find(|op| op.f == "read" && op.end == EventType::Ok)
        .and_then(|op| op.output.as_array().cloned())
    else {
        return vec![Anomaly::new("no-final-read", "no final read of the log")];
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
                    EventType::Ok if n != 1 => anomalies.push(sent(
                        op.start,
                        "not-exactly-once",
                        format!("{} {item} was acknowledged and applied {n} times", op.f),
                    )),
                    EventType::Info if n > 1 => anomalies.push(sent(
                        op.start,
                        "applied-twice",
                        format!("{} {item} (in doubt) was applied {n} times", op.f),
                    )),
                    EventType::Fail if n > 0 && op.f == "tx-send" => anomalies.push(sent(
                        op.start,
                        "aborted-send-applied",
                        format!("tx-send {item}: a send from an aborted transaction was applied"),
                    )),
                    EventType::Fail if n > 0 => anomalies.push(sent(
                        op.start,
                        "failed-send-applied",
                        format!("send {item} failed but was applied"),
                    )),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    for entry in log.iter().filter(|e| parse_item(e).is_some()) {
        if !sends.contains_key(entry) {
            anomalies.push(Anomaly::new(
                "never-sent",
                format!("{entry} was applied but never sent"),
            ));
        }
    }
    // Order per client.
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    for entry in &log {
        if let Some((c, n)) = parse_item(entry) {
            if let Some(&before) = last.get(&c)
                && n < before
            {
                anomalies.push(Anomaly::new(
                    "out-of-order",
                    format!("client {c}'s c{c}-{n} was applied after its c{c}-{before}"),
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
                anomalies.push(
                    sent(
                        *invoked,
                        "applied-while-failed",
                        format!(
                            "{item} was sent after the failing {failed} was queued and applied \
                             before that failure's restart"
                        ),
                    )
                    .op(op.start, Role::Party, "failing action"),
                );
            }
        }
    }
    for (entry, n) in &times {
        if entry.starts_with("R:") && *n > 1 {
            anomalies.push(Anomaly::new(
                "restarted-twice",
                format!("the failure {entry} was restarted {n} times"),
            ));
        }
    }
    anomalies
}

#[cfg(test)]
mod tests {
    use super::CHECKER;
    use crate::Checker;
    use crate::history::{Event, F, History};
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
        CHECKER
            .check(&history(ops, log))
            .unwrap()
            .anomalies
            .into_iter()
            .map(|a| a.message)
            .collect()
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
