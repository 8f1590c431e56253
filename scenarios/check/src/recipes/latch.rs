//! The `latch` checker: a leader latch stands until it is closed, and the leader can always be
//! looked up.
//!
//! History (beside the leaderships the [`holds`](super::holds) checker judges): `acquire`,
//! invoked when a latch starts standing, `ok` with the term when it leads, `fail` when it
//! stopped standing by itself (its client did not close it), `info` when it was closed before
//! it led; `leader` (`ok` value the leader's term or `null`, `fail` when the look-up was
//! refused, `info` when its session was lost).
//!
//! - **stopped-standing**: a latch stopped by itself while its client lived: it gave up
//!   leadership for good without being asked.
//! - **leader-lookup-failed**: looking up the leader was refused. A leader resigning while
//!   it was looked up is no reason: the next candidate leads.
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::history::{Event, History, F};
//! let h: History = [
//!     Event::invoke(0, F::Other("leader".into()), serde_json::Value::Null),
//!     Event::fail(0, F::Other("leader".into()), serde_json::Value::Null),
//! ]
//! .into_iter()
//! .collect();
//! let v = avout_check::recipes::latch::CHECKER.check(&h).unwrap();
//! assert_eq!(v.kinds(), vec!["leader-lookup-failed"]);
//! ```

use crate::Rule;
use crate::history::{EventType, History, pairs};
use crate::verdict::{Anomaly, Role};

/// The checker.
pub const CHECKER: Rule = Rule::new("latch (stands until closed, leader found)", judge);

fn judge(history: &History) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    for op in pairs(history).iter().filter(|o| o.end == EventType::Fail) {
        let (kind, message) = match op.f.as_str() {
            "acquire" => (
                "stopped-standing",
                format!(
                    "process {}'s latch stopped standing by itself (event {}): {}",
                    op.process, op.stop, op.output
                ),
            ),
            "leader" => (
                "leader-lookup-failed",
                format!(
                    "process {}'s look-up of the leader was refused (event {}): {}",
                    op.process, op.stop, op.output
                ),
            ),
            _ => continue,
        };
        anomalies.push(Anomaly::new(kind, message).op(op.start, Role::Culprit, op.f.clone()));
    }
    anomalies
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Checker;
    use crate::history::{Event, F};
    use serde_json::{Value, json};

    fn kinds(events: Vec<Event>) -> Vec<String> {
        let h: History = events.into_iter().collect();
        CHECKER.check(&h).unwrap().kinds()
    }

    fn acquire(p: u64, end: EventType) -> [Event; 2] {
        let f = F::Other("acquire".into());
        let done = match end {
            EventType::Ok => Event::ok(p, f.clone(), 3.into()),
            EventType::Fail => Event::fail(p, f.clone(), json!("session expired")),
            _ => Event::info(p, f.clone(), Value::Null),
        };
        [Event::invoke(p, f, Value::Null), done]
    }

    #[test]
    fn a_latch_that_stopped_by_itself_is_flagged() {
        let [i, e] = acquire(0, EventType::Fail);
        assert_eq!(kinds(vec![i, e]), vec!["stopped-standing"]);
    }

    #[test]
    fn a_latch_that_led_or_was_closed_is_fine() {
        let [i0, e0] = acquire(0, EventType::Ok);
        let [i1, e1] = acquire(1, EventType::Info);
        let f = F::Other("leader".into());
        let lookup = [
            Event::invoke(2, f.clone(), Value::Null),
            Event::ok(2, f.clone(), 3.into()),
            Event::invoke(3, f.clone(), Value::Null),
            Event::info(3, f, Value::Null),
        ];
        let mut h = vec![i0, e0, i1, e1];
        h.extend(lookup);
        assert!(kinds(h).is_empty());
    }

    #[test]
    fn a_refused_look_up_is_flagged_beside_a_stopped_latch() {
        let [i, e] = acquire(0, EventType::Fail);
        let f = F::Other("leader".into());
        let h = vec![
            i,
            Event::invoke(1, f.clone(), Value::Null),
            Event::fail(1, f, json!("no node")),
            e,
        ];
        assert_eq!(kinds(h), vec!["leader-lookup-failed", "stopped-standing"]);
    }
}
