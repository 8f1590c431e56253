//! The `queue` checker, for a FIFO queue with exactly-once delivery.
//!
//! History: `put` (value the item; `ok`, `fail`, or `info` when the session was lost with
//! the put in doubt), `take` (`ok` value the item, or `null` for an empty queue; `info` when
//! the session was lost with a claim in doubt).
//!
//! No item was taken twice; every item taken was put (and not failed); every item whose put
//! was acknowledged was taken by the end, except at most as many as there were takes in
//! doubt (an element claimed by a session that then died is gone).
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::history::{Event, History, F};
//! let f = |s: &str| F::Other(s.into());
//! // One item put once, taken twice.
//! let h: History = [
//!     Event::invoke(0, f("put"), "a".into()),
//!     Event::ok(0, f("put"), "a".into()),
//!     Event::invoke(1, f("take"), serde_json::Value::Null),
//!     Event::ok(1, f("take"), "a".into()),
//!     Event::invoke(2, f("take"), serde_json::Value::Null),
//!     Event::ok(2, f("take"), "a".into()),
//! ]
//! .into_iter()
//! .collect();
//! let v = avout_check::recipes::queue::CHECKER.check(&h).unwrap();
//! assert!(v.anomalies[0].message.contains("twice"), "{v}");
//! assert_eq!(v.anomalies[0].ops.len(), 2, "both takes");
//! ```

use std::collections::BTreeMap;

use crate::Rule;
use crate::history::{EventType, History, pairs};
use crate::verdict::{Anomaly, Role};

/// The checker.
pub const CHECKER: Rule = Rule::new("queue (exactly once)", judge);

fn judge(history: &History) -> Vec<Anomaly> {
    let ops = pairs(history);
    let mut anomalies = Vec::new();
    let mut put: BTreeMap<String, (EventType, usize)> = BTreeMap::new();
    let mut taken: BTreeMap<String, (u64, usize)> = BTreeMap::new();
    let mut in_doubt = 0usize;
    for op in &ops {
        match (op.f.as_str(), op.end) {
            ("put", end) => {
                if let Some(item) = op.input.as_str() {
                    put.insert(item.to_owned(), (end, op.start));
                }
            }
            ("take", EventType::Ok) => {
                if let Some(item) = op.output.as_str()
                    && let Some((first, at)) = taken.insert(item.to_owned(), (op.process, op.start))
                {
                    anomalies.push(
                        Anomaly::new(
                            "delivered-twice",
                            format!(
                                "{item} was delivered twice (to processes {first} and {})",
                                op.process
                            ),
                        )
                        .op(op.start, Role::Culprit, format!("took {item} again"))
                        .op(at, Role::Party, format!("took {item}")),
                    );
                }
            }
            ("take", EventType::Info) => in_doubt += 1,
            _ => {}
        }
    }
    for (item, &(_, at)) in &taken {
        let (kind, message) = match put.get(item) {
            None => ("never-put", format!("{item} was taken but never put")),
            Some((EventType::Fail, _)) => (
                "put-failed",
                format!("{item} was taken, but its put failed"),
            ),
            _ => continue,
        };
        anomalies.push(Anomaly::new(kind, message).op(at, Role::Culprit, format!("took {item}")));
    }
    let lost: Vec<(&String, usize)> = put
        .iter()
        .filter(|(item, (end, _))| *end == EventType::Ok && !taken.contains_key(*item))
        .map(|(item, &(_, at))| (item, at))
        .collect();
    if lost.len() > in_doubt {
        let mut a = Anomaly::new(
            "lost",
            format!(
                "{} acknowledged item(s) never delivered (only {in_doubt} take(s) in doubt could \
                 explain it): {}",
                lost.len(),
                lost.iter()
                    .take(5)
                    .map(|(s, _)| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        for (item, at) in lost.iter().take(5) {
            a = a.op(*at, Role::Culprit, format!("put {item}, never taken"));
        }
        anomalies.push(a);
    }
    anomalies
}
