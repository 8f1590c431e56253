//! The `barrier` checker: nobody passes a set barrier.
//!
//! History: `set` and `remove` (value the round), `wait` (value the round; `ok` when the
//! waiter was let through). No `wait` of a round completed before that round's `remove` was
//! invoked (a waiter that started after the barrier was set must not pass it while it
//! stands).
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::history::{Event, History, F};
//! let f = |s: &str| F::Other(s.into());
//! // The waiter of round 0 got through before the barrier was removed.
//! let h: History = [
//!     Event::invoke(0, f("set"), 0.into()),
//!     Event::ok(0, f("set"), 0.into()),
//!     Event::invoke(1, f("wait"), 0.into()),
//!     Event::ok(1, f("wait"), 0.into()),
//!     Event::invoke(0, f("remove"), 0.into()),
//!     Event::ok(0, f("remove"), 0.into()),
//! ]
//! .into_iter()
//! .collect();
//! let v = avout_check::recipes::barrier::CHECKER.check(&h).unwrap();
//! assert_eq!(v.kinds(), vec!["passed-standing-barrier"]);
//! ```

use std::collections::BTreeMap;

use crate::Rule;
use crate::history::{EventType, History, pairs};
use crate::verdict::{Anomaly, Role};

/// The checker.
pub const CHECKER: Rule = Rule::new("barrier (nobody passes a set barrier)", judge);

fn judge(history: &History) -> Vec<Anomaly> {
    let ops = pairs(history);
    // The first invocation of each round's remove.
    let mut removed: BTreeMap<u64, usize> = BTreeMap::new();
    for op in ops.iter().filter(|o| o.f == "remove") {
        if let Some(r) = op.input.as_u64() {
            removed.entry(r).or_insert(op.start);
        }
    }
    let mut anomalies = Vec::new();
    for op in ops
        .iter()
        .filter(|o| o.f == "wait" && o.end == EventType::Ok)
    {
        let Some(round) = op.input.as_u64() else {
            continue;
        };
        let remove = removed.get(&round).copied();
        if remove.is_none_or(|r| op.stop < r) {
            let mut a = Anomaly::new(
                "passed-standing-barrier",
                format!(
                    "process {} passed the barrier of round {round} while it stood (event {}, \
                     before its removal{})",
                    op.process,
                    op.stop,
                    remove.map(|r| format!(" at event {r}")).unwrap_or_default()
                ),
            )
            .op(op.start, Role::Culprit, "passed");
            if let Some(r) = remove {
                a = a.op(r, Role::Party, "removal");
            }
            anomalies.push(a);
        }
    }
    anomalies
}
