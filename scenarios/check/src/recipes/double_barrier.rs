//! The `double-barrier` checker: nobody enters before everyone arrived, nobody leaves before
//! everyone left.
//!
//! History: `enter` and `leave`, input `{"round": r, "client": c, "count": n}`: client `c`'s
//! attempt to enter (leave) round `r` of a barrier of `n` participants; `ok` when it returned,
//! `fail` or `info` when it did not (a client tries again after a failed enter).
//!
//! - **entered-early**: an `enter` of a round returned before `n` distinct clients had
//!   invoked an `enter` of that round: it passed a barrier that had not filled.
//! - **left-early**: a `leave` of a round returned while a client that had entered the round
//!   had not yet invoked its `leave` of it. Clients with an operation of the round that did
//!   not return are left out: a session that ended took their node with it, which counts as
//!   leaving.
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::history::{Event, History, F};
//! let enter = |c: u64| serde_json::json!({"round": 0, "client": c, "count": 2});
//! // Client 0 is let in before client 1 even tried.
//! let h: History = [
//!     Event::invoke(0, F::Other("enter".into()), enter(0)),
//!     Event::ok(0, F::Other("enter".into()), enter(0)),
//!     Event::invoke(1, F::Other("enter".into()), enter(1)),
//!     Event::ok(1, F::Other("enter".into()), enter(1)),
//! ]
//! .into_iter()
//! .collect();
//! let v = avout_check::recipes::double_barrier::CHECKER.check(&h).unwrap();
//! assert_eq!(v.kinds(), vec!["entered-early"]);
//! ```

use std::collections::{BTreeMap, BTreeSet};

use crate::Rule;
use crate::history::{EventType, History, Pair, pairs};
use crate::verdict::{Anomaly, Role};

/// The checker.
pub const CHECKER: Rule = Rule::new("double barrier (enter together, leave together)", judge);

/// An attempt's round, client and participant count.
fn attempt(op: &Pair) -> Option<(u64, u64, u64)> {
    let i = &op.input;
    Some((
        i["round"].as_u64()?,
        i["client"].as_u64()?,
        i["count"].as_u64()?,
    ))
}

fn judge(history: &History) -> Vec<Anomaly> {
    let ops = pairs(history);
    let mut rounds: BTreeMap<u64, Vec<&Pair>> = BTreeMap::new();
    for op in ops.iter().filter(|o| o.f == "enter" || o.f == "leave") {
        if let Some((round, ..)) = attempt(op) {
            rounds.entry(round).or_default().push(op);
        }
    }
    let mut anomalies = Vec::new();
    for (round, ops) in rounds {
        anomalies.extend(entered_early(round, &ops));
        anomalies.extend(left_early(round, &ops));
    }
    anomalies
}

fn entered_early(round: u64, ops: &[&Pair]) -> Option<Anomaly> {
    let enters: Vec<&&Pair> = ops.iter().filter(|o| o.f == "enter").collect();
    let early = enters.iter().filter(|o| o.end == EventType::Ok).find(|o| {
        let count = attempt(o).map_or(0, |(.., n)| n);
        let arrived: BTreeSet<u64> = enters
            .iter()
            .filter(|e| e.start < o.stop)
            .filter_map(|e| attempt(e).map(|(_, c, _)| c))
            .collect();
        (arrived.len() as u64) < count
    })?;
    let (_, client, count) = attempt(early)?;
    let missing: Vec<u64> = (0..count)
        .filter(|c| {
            !enters
                .iter()
                .any(|e| e.start < early.stop && attempt(e).map(|a| a.1) == Some(*c))
        })
        .collect();
    Some(
        Anomaly::new(
            "entered-early",
            format!(
                "client {client} entered round {round} (event {}) before client(s) {missing:?} \
                 had come to the barrier of {count}",
                early.stop
            ),
        )
        .op(early.start, Role::Culprit, "entered"),
    )
}

fn left_early(round: u64, ops: &[&Pair]) -> Option<Anomaly> {
    let clients = |f: &str, end: Option<EventType>| -> BTreeSet<u64> {
        ops.iter()
            .filter(|o| o.f == f && end.is_none_or(|e| o.end == e))
            .filter_map(|o| attempt(o).map(|(_, c, _)| c))
            .collect()
    };
    let entered = clients("enter", Some(EventType::Ok));
    // A client with an operation of the round that did not return may have left with its
    // session.
    let unsure: BTreeSet<u64> = ops
        .iter()
        .filter(|o| o.end != EventType::Ok)
        .filter_map(|o| attempt(o).map(|(_, c, _)| c))
        .collect();
    let leaves: Vec<&&Pair> = ops.iter().filter(|o| o.f == "leave").collect();
    for leave in leaves.iter().filter(|o| o.end == EventType::Ok) {
        let stayed: Vec<u64> = entered
            .iter()
            .filter(|c| !unsure.contains(c))
            .filter(|c| {
                !leaves
                    .iter()
                    .any(|l| l.start < leave.stop && attempt(l).map(|a| a.1) == Some(**c))
            })
            .copied()
            .collect();
        if !stayed.is_empty() {
            let (_, client, _) = attempt(leave)?;
            return Some(
                Anomaly::new(
                    "left-early",
                    format!(
                        "client {client} left round {round} (event {}) while client(s) \
                         {stayed:?} had not begun to leave",
                        leave.stop
                    ),
                )
                .op(leave.start, Role::Culprit, "left"),
            );
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Checker;
    use crate::history::{Event, F};
    use serde_json::json;

    fn op(f: &str, client: u64, ok: bool) -> [Event; 2] {
        let input = json!({"round": 0, "client": client, "count": 2});
        let end = if ok {
            Event::ok(client, F::Other(f.into()), input.clone())
        } else {
            Event::info(client, F::Other(f.into()), input.clone())
        };
        [Event::invoke(client, F::Other(f.into()), input), end]
    }

    fn kinds(events: Vec<Event>) -> Vec<String> {
        let h: History = events.into_iter().collect();
        CHECKER.check(&h).unwrap().kinds()
    }

    #[test]
    fn a_round_done_together_is_valid() {
        let [e0, e0k] = op("enter", 0, true);
        let [e1, e1k] = op("enter", 1, true);
        let [l0, l0k] = op("leave", 0, true);
        let [l1, l1k] = op("leave", 1, true);
        assert!(kinds(vec![e0, e1, e0k, e1k, l0, l1, l0k, l1k]).is_empty());
    }

    #[test]
    fn entering_before_the_other_came_is_early() {
        let [e0, e0k] = op("enter", 0, true);
        let [e1, e1k] = op("enter", 1, true);
        let [l0, l0k] = op("leave", 0, true);
        let [l1, l1k] = op("leave", 1, true);
        assert_eq!(
            kinds(vec![e0, e0k, e1, e1k, l0, l1, l0k, l1k]),
            vec!["entered-early"]
        );
    }

    #[test]
    fn an_enter_that_failed_counts_as_coming_to_the_barrier() {
        let [e0, e0f] = op("enter", 0, false);
        let [e0b, e0k] = op("enter", 0, true);
        let [e1, e1k] = op("enter", 1, true);
        assert!(kinds(vec![e0, e0f, e1, e0b, e1k, e0k]).is_empty());
    }

    #[test]
    fn leaving_before_the_other_began_to_leave_is_early() {
        let [e0, e0k] = op("enter", 0, true);
        let [e1, e1k] = op("enter", 1, true);
        let [l0, l0k] = op("leave", 0, true);
        let [l1, l1k] = op("leave", 1, true);
        assert_eq!(
            kinds(vec![e0, e1, e0k, e1k, l0, l0k, l1, l1k]),
            vec!["left-early"]
        );
    }

    #[test]
    fn a_client_whose_leave_did_not_return_is_not_waited_for() {
        let [e0, e0k] = op("enter", 0, true);
        let [e1, e1k] = op("enter", 1, true);
        let [l0, l0k] = op("leave", 0, true);
        let [l1, l1i] = op("leave", 1, false);
        assert!(kinds(vec![e0, e1, e0k, e1k, l0, l0k, l1, l1i]).is_empty());
    }
}
