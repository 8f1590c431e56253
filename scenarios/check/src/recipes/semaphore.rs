//! The `semaphore` checker: never more holds than leases, and no lease lost.
//!
//! History: `acquire` (input `{"leases": N, …}`; `ok` value the lease's fencing token),
//! `release` (`ok` clean: the lease node was confirmed to stand when the release began; `info`
//! or `fail` when the hold may have been lost) and `capacity` (input `{"leases": N}`; `ok`
//! value how many leases a last process could take while nobody held one).
//!
//! - **over-granted**: at no moment were more than `N` holds open (an `ok` acquire to its
//!   process's next `release` invocation), counting only holds released cleanly: a holder
//!   whose session expired under it may believe it holds beside the next holders (fence it
//!   with its token).
//! - **leases-lost**: the last count took all `N` leases. One short means a lease node outlived
//!   the acquisition that made it, held by nobody, and took its lease away for as long as its
//!   session lives.
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::history::{Event, History, F};
//! let f = |s: &str| F::Other(s.into());
//! let leases = serde_json::json!({"leases": 2});
//! // Nobody holds a lease, and only one of two can be taken.
//! let h: History = [
//!     Event::invoke(9, f("capacity"), leases.clone()),
//!     Event::ok(9, f("capacity"), 1.into()),
//! ]
//! .into_iter()
//! .collect();
//! let v = avout_check::recipes::semaphore::CHECKER.check(&h).unwrap();
//! assert_eq!(v.kinds(), vec!["leases-lost"]);
//! ```

use std::collections::BTreeMap;

use crate::Rule;
use crate::history::{EventType, History, Pair, pairs};
use crate::verdict::{Anomaly, Role};

/// The checker.
pub const CHECKER: Rule = Rule::new("semaphore (at most N holds, no lease lost)", judge);

/// One clean hold: the acquire's pair index, and the event indices it was surely held between.
struct Hold {
    acquire: usize,
    from: usize,
    to: usize,
}

fn leases_of(op: &Pair) -> Option<u64> {
    op.input["leases"].as_u64()
}

/// The holds that ended in a clean release (or never ended), by acquire.
fn clean_holds(ops: &[Pair]) -> Vec<Hold> {
    let mut open: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    let mut holds = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match (op.f.as_str(), op.end) {
            ("acquire", EventType::Ok) => {
                open.insert(op.process, (i, op.stop));
            }
            ("release", end) => {
                if let Some((acquire, from)) = open.remove(&op.process)
                    && end == EventType::Ok
                {
                    holds.push(Hold {
                        acquire,
                        from,
                        to: op.start,
                    });
                }
            }
            _ => {}
        }
    }
    holds.extend(open.into_values().map(|(acquire, from)| Hold {
        acquire,
        from,
        to: usize::MAX,
    }));
    holds
}

fn judge(history: &History) -> Vec<Anomaly> {
    let ops = pairs(history);
    let Some(leases) = ops.iter().find_map(leases_of) else {
        return Vec::new();
    };
    let mut anomalies = Vec::new();
    let holds = clean_holds(&ops);
    // The first moment more than `leases` holds were open: sweep their bounds in order.
    let mut bounds: Vec<(usize, bool, usize)> = holds
        .iter()
        .enumerate()
        .flat_map(|(h, hold)| [(hold.from, true, h), (hold.to, false, h)])
        .collect();
    // At one index, ends before starts: a hold released where another began did not overlap.
    bounds.sort_by_key(|&(at, starts, _)| (at, starts));
    let mut open: Vec<usize> = Vec::new();
    for (_, starts, h) in bounds {
        if !starts {
            open.retain(|&o| o != h);
            continue;
        }
        open.push(h);
        if open.len() as u64 > leases {
            let mut a = Anomaly::new(
                "over-granted",
                format!(
                    "{} leases were held at once, of {leases}, each released cleanly later",
                    open.len()
                ),
            );
            for &o in &open {
                a = a.op(ops[holds[o].acquire].start, Role::Culprit, "held");
            }
            anomalies.push(a);
            break;
        }
    }
    for op in ops
        .iter()
        .filter(|o| o.f == "capacity" && o.end == EventType::Ok)
    {
        let (Some(taken), Some(leases)) = (op.output.as_u64(), leases_of(op)) else {
            continue;
        };
        if taken < leases {
            anomalies.push(
                Anomaly::new(
                    "leases-lost",
                    format!(
                        "with nobody holding a lease, only {taken} of {leases} could be taken: \
                         a lease node outlived its acquisition"
                    ),
                )
                .op(op.start, Role::Culprit, "count"),
            );
        }
    }
    anomalies
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Checker;
    use crate::history::{Event, F};
    use serde_json::json;

    fn f(s: &str) -> F {
        F::Other(s.into())
    }

    fn hold(p: u64, token: i64) -> [Event; 2] {
        [
            Event::invoke(p, f("acquire"), json!({"leases": 2, "wait": null})),
            Event::ok(p, f("acquire"), token.into()),
        ]
    }

    fn released(p: u64, token: i64, clean: bool) -> [Event; 2] {
        let end = if clean {
            Event::ok(p, f("release"), token.into())
        } else {
            Event::info(p, f("release"), token.into())
        };
        [Event::invoke(p, f("release"), token.into()), end]
    }

    fn kinds(events: Vec<[Event; 2]>) -> Vec<String> {
        let h: History = events.into_iter().flatten().collect();
        CHECKER.check(&h).unwrap().kinds()
    }

    #[test]
    fn three_clean_holds_at_once_of_two_leases_are_one_too_many() {
        let h = vec![hold(0, 1), hold(1, 2), hold(2, 3)];
        let mut h = h;
        h.extend([
            released(0, 1, true),
            released(1, 2, true),
            released(2, 3, true),
        ]);
        assert_eq!(kinds(h), vec!["over-granted"]);
    }

    #[test]
    fn a_lost_hold_is_excused_and_holds_in_turn_are_fine() {
        let h = vec![
            hold(0, 1),
            hold(1, 2),
            hold(2, 3),
            released(0, 1, false),
            released(1, 2, true),
            hold(1, 4),
            released(2, 3, true),
            released(1, 4, true),
        ];
        assert!(kinds(h).is_empty());
    }

    #[test]
    fn a_short_count_is_a_lost_lease() {
        let h = vec![
            hold(0, 1),
            released(0, 1, true),
            [
                Event::invoke(9, f("capacity"), json!({"leases": 2})),
                Event::ok(9, f("capacity"), 1.into()),
            ],
        ];
        assert_eq!(kinds(h), vec!["leases-lost"]);
    }

    #[test]
    fn a_full_count_is_valid() {
        let h = vec![[
            Event::invoke(9, f("capacity"), json!({"leases": 2})),
            Event::ok(9, f("capacity"), 2.into()),
        ]];
        assert!(kinds(h).is_empty());
    }
}
