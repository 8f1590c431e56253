//! The `counter` checker, for a counter that only grows by one (an atom's `swap(n + 1)`).
//!
//! History: `add` (invoke value 1; an `ok` completion carries the value the increment
//! produced) and `read` (`ok` with the value read).
//!
//! The `ok` adds returned distinct values (two equal ones are a lost update, or an increment
//! applied twice); and every value observed — a read, or the result of an add — lies between
//! the number of adds that surely happened before the observation began (acknowledged before
//! its invocation) and the number that could have happened before it ended (invoked before
//! its completion and not failed).
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::history::{Event, History, F};
//! let add = || F::Other("add".into());
//! // Two increments both returned 1: one of them was lost.
//! let h: History = [
//!     Event::invoke(0, add(), 1.into()),
//!     Event::invoke(1, add(), 1.into()),
//!     Event::ok(0, add(), 1.into()),
//!     Event::ok(1, add(), 1.into()),
//! ]
//! .into_iter()
//! .collect();
//! let v = avout_check::recipes::counter::CHECKER.check(&h).unwrap();
//! assert_eq!(v.kinds(), vec!["duplicate-increment"]);
//! assert!(v.anomalies[0].message.contains("returned 1"));
//! ```

use std::collections::BTreeMap;

use crate::Rule;
use crate::history::{EventType, History, Pair, pairs};
use crate::verdict::{Anomaly, Role};

/// The checker.
pub const CHECKER: Rule = Rule::new("counter", judge);

fn judge(history: &History) -> Vec<Anomaly> {
    let ops = pairs(history);
    let mut anomalies = Vec::new();
    let adds: Vec<&Pair> = ops
        .iter()
        .filter(|o| o.f == "add" && o.end != EventType::Fail)
        .collect();
    let mut seen = BTreeMap::new();
    for op in ops.iter().filter(|o| o.end == EventType::Ok) {
        if op.f != "add" && op.f != "read" {
            continue;
        }
        let Some(observed) = op.output.as_u64() else {
            anomalies.push(
                Anomaly::new(
                    "not-a-count",
                    format!(
                        "event {}: {} returned {}, not a count",
                        op.stop, op.f, op.output
                    ),
                )
                .op(op.start, Role::Culprit, "not a count"),
            );
            continue;
        };
        let surely = adds
            .iter()
            .filter(|a| a.end == EventType::Ok && a.stop < op.start)
            .count() as u64;
        let possibly = adds.iter().filter(|a| a.start < op.stop).count() as u64;
        let low = surely + u64::from(op.f == "add");
        if observed < low || observed > possibly {
            anomalies.push(
                Anomaly::new(
                    "out-of-bounds",
                    format!(
                        "event {}: process {} {} observed {observed}, but between {low} and \
                         {possibly} increments had taken effect",
                        op.stop, op.process, op.f
                    ),
                )
                .op(op.start, Role::Culprit, format!("observed {observed}")),
            );
        }
        if op.f == "add"
            && let Some(other) = seen.insert(observed, op.start)
        {
            anomalies.push(
                Anomaly::new(
                    "duplicate-increment",
                    format!(
                        "two increments returned {observed} (invoked at events {other} and {}): \
                         an update was lost or applied twice",
                        op.start
                    ),
                )
                .op(op.start, Role::Culprit, format!("returned {observed}"))
                .op(other, Role::Party, format!("returned {observed}")),
            );
        }
    }
    anomalies
}
