//! The `holds` checker: a lock, or a leadership, held by one client at a time under fencing
//! tokens, judged by what its holders did inside.
//!
//! History: `acquire` (`ok` value the fencing token), `write` (value `{"token": t,
//! "counter": n}`, `n` the value a holder wrote to a counter it incremented inside its hold)
//! and `release` (`ok` clean; `info` or `fail` when the hold was lost, or could not be
//! confirmed).
//!
//! - The `ok` writes wrote distinct counter values: two equal ones mean two holders were
//!   inside at once and an increment was lost.
//! - No token was granted twice.
//! - Two holds whose sure intervals (acquire completion to release invocation) overlap are a
//!   violation unless the one with the smaller token ended by losing its lock (whichever
//!   heard of its grant first: a holder told late, a paused client, may hold the older node).
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::history::{Event, History, F};
//! let f = |s: &str| F::Other(s.into());
//! // Process 1 acquires while process 0 holds, and 0 releases cleanly afterwards.
//! let h: History = [
//!     Event::invoke(0, f("acquire"), serde_json::Value::Null),
//!     Event::ok(0, f("acquire"), 1.into()),
//!     Event::invoke(1, f("acquire"), serde_json::Value::Null),
//!     Event::ok(1, f("acquire"), 2.into()),
//!     Event::invoke(0, f("release"), 1.into()),
//!     Event::ok(0, f("release"), 1.into()),
//! ]
//! .into_iter()
//! .collect();
//! let v = avout_check::recipes::holds::CHECKER.check(&h).unwrap();
//! assert_eq!(v.kinds(), vec!["overlap"]);
//! ```

use std::collections::BTreeMap;

use crate::Rule;
use crate::history::{EventType, History, Pair, pairs};
use crate::verdict::{Anomaly, Role};

/// The checker.
pub const CHECKER: Rule = Rule::new("holds (fencing)", judge);

/// One hold: from an `ok` acquire to the process's next release.
#[derive(Debug)]
struct Hold {
    process: u64,
    token: i64,
    /// Event index of the acquire's invocation.
    acquire: usize,
    /// Event index of the acquire's completion.
    from: usize,
    /// Event index of the release's invocation (`usize::MAX`: never released).
    to: usize,
    lost: bool,
}

fn holds(ops: &[Pair]) -> Vec<Hold> {
    let mut open: BTreeMap<u64, Hold> = BTreeMap::new();
    let mut out = Vec::new();
    for op in ops {
        match (op.f.as_str(), op.end) {
            ("acquire", EventType::Ok) => {
                let Some(token) = op.output.as_i64() else {
                    continue;
                };
                let hold = Hold {
                    process: op.process,
                    token,
                    acquire: op.start,
                    from: op.stop,
                    to: usize::MAX,
                    lost: false,
                };
                if let Some(prev) = open.insert(op.process, hold) {
                    out.push(prev);
                }
            }
            ("release", end) => {
                if let Some(mut h) = open.remove(&op.process) {
                    h.to = op.start;
                    h.lost = end != EventType::Ok;
                    out.push(h);
                }
            }
            _ => {}
        }
    }
    out.extend(open.into_values());
    out.sort_by_key(|h| h.from);
    out
}

fn judge(history: &History) -> Vec<Anomaly> {
    let ops = pairs(history);
    let mut anomalies = Vec::new();
    let mut written: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
    for op in ops
        .iter()
        .filter(|o| o.f == "write" && o.end == EventType::Ok)
    {
        if let Some(n) = op.input["counter"].as_u64()
            && let Some((other, at)) = written.insert(n, (op.process, op.start))
        {
            anomalies.push(
                Anomaly::new(
                    "lost-increment",
                    format!(
                        "processes {other} and {} both wrote counter value {n} under the lock: \
                         two holders were inside at once (an increment was lost)",
                        op.process
                    ),
                )
                .op(op.start, Role::Culprit, format!("wrote {n}"))
                .op(at, Role::Party, format!("wrote {n}")),
            );
        }
    }
    let hs = holds(&ops);
    let mut tokens: BTreeMap<i64, &Hold> = BTreeMap::new();
    for h in &hs {
        if let Some(other) = tokens.insert(h.token, h) {
            anomalies.push(
                Anomaly::new(
                    "duplicate-token",
                    format!(
                        "processes {} and {} were both granted token {}",
                        other.process, h.process, h.token
                    ),
                )
                .op(h.acquire, Role::Culprit, format!("token {}", h.token))
                .op(other.acquire, Role::Party, format!("token {}", h.token)),
            );
        }
    }
    for (i, a) in hs.iter().enumerate() {
        for b in &hs[i + 1..] {
            // `b` began after `a` (sorted by acquisition); they overlap if `a` had not yet
            // started releasing when `b` was granted. Fencing excuses an overlap whose
            // smaller-token hold ended by losing, whichever heard of its grant first: a
            // holder told late (a paused client) may be the one with the older node.
            let (older, newer) = if a.token < b.token { (a, b) } else { (b, a) };
            if b.from < a.to && !(older.token < newer.token && older.lost) {
                anomalies.push(
                    Anomaly::new(
                        "overlap",
                        format!(
                            "holds overlap: process {} (token {}) still held the lock, {}, when \
                             process {} (token {}) acquired it",
                            a.process,
                            a.token,
                            if a.lost {
                                "having lost it"
                            } else {
                                "and released it cleanly later"
                            },
                            b.process,
                            b.token
                        ),
                    )
                    .op(a.acquire, Role::Party, format!("token {}", a.token))
                    .op(b.acquire, Role::Culprit, format!("token {}", b.token)),
                );
            }
        }
    }
    anomalies
}
