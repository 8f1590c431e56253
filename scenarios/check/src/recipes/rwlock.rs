//! The `rwlock` checker: no writer inside a read hold, no lost increment.
//!
//! History: `acquire-write` / `acquire-read` (`ok` value the token), `write` (value
//! `{"token", "counter"}`), `read` (`ok` value `[first, second]` for a confirmed hold,
//! `fail` when the hold could not be confirmed) and `release`. The `ok` writes wrote
//! distinct values, and every confirmed read saw the same value twice.
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::history::{Event, History, F};
//! // A confirmed read hold saw the counter change: a writer was inside.
//! let h: History = [
//!     Event::invoke(0, F::Other("read".into()), serde_json::Value::Null),
//!     Event::ok(0, F::Other("read".into()), serde_json::json!([3, 4])),
//! ]
//! .into_iter()
//! .collect();
//! let v = avout_check::recipes::rwlock::CHECKER.check(&h).unwrap();
//! assert_eq!(v.kinds(), vec!["writer-inside-read"]);
//! ```

use std::collections::BTreeMap;

use crate::Rule;
use crate::history::{EventType, History, pairs};
use crate::verdict::{Anomaly, Role};

/// The checker.
pub const CHECKER: Rule = Rule::new("rwlock (exclusion)", judge);

fn judge(history: &History) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    let mut written: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
    for op in pairs(history) {
        if op.end != EventType::Ok {
            continue;
        }
        match op.f.as_str() {
            "write" => {
                if let Some(n) = op.input["counter"].as_u64()
                    && let Some((other, at)) = written.insert(n, (op.process, op.start))
                {
                    anomalies.push(
                        Anomaly::new(
                            "two-writers",
                            format!(
                                "processes {other} and {} both wrote {n} under the write lock: \
                                 two writers were inside at once",
                                op.process
                            ),
                        )
                        .op(op.start, Role::Culprit, format!("wrote {n}"))
                        .op(at, Role::Party, format!("wrote {n}")),
                    );
                }
            }
            "read" if op.output[0] != op.output[1] => {
                anomalies.push(
                    Anomaly::new(
                        "writer-inside-read",
                        format!(
                            "process {} read {} then {} under one confirmed read hold: a \
                             writer was inside",
                            op.process, op.output[0], op.output[1]
                        ),
                    )
                    .op(op.start, Role::Culprit, "saw two values"),
                );
            }
            _ => {}
        }
    }
    anomalies
}
