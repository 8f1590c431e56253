//! The `sessions` checker: each part of the history judged by its own scenario's checker, and
//! every client's progress after each of its expiries.

use serde_json::Value;

use super::{FINAL_BASE, LEADER_BASE};
use crate::scenario::{Verdict, bank, counter, election, mutex, pairs};
use avout_check::history::{Event, EventType, F, History, Process};

/// What a part keeps of an event: its name in the part, or `None` to leave it out.
type Keep = fn(u64, &str) -> Option<F>;

/// The events `keep` keeps, each under the name it gives (the parts' checkers know their
/// operations by name).
fn part(history: &History, keep: Keep) -> History {
    history
        .events()
        .iter()
        .filter_map(|e| {
            let Process::Client(p) = e.process else {
                return None;
            };
            let f = keep(p, e.f.as_str())?;
            Some(Event { f, ..e.clone() })
        })
        .collect()
}

/// Who a process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Who {
    /// A client's main loop.
    Worker,
    /// A client's leadership.
    Leader,
    /// The final reads.
    Final,
}

fn who(p: u64) -> Who {
    if p >= FINAL_BASE {
        Who::Final
    } else if p >= LEADER_BASE {
        Who::Leader
    } else {
        Who::Worker
    }
}

fn hold_op(f: &str) -> Option<F> {
    matches!(f, "acquire" | "write" | "release").then(|| F::from(f.to_owned()))
}

/// A part: its name, what it keeps, and the checker that judges it.
type Part = (&'static str, Keep, fn(&History) -> Verdict);

/// The parts.
const PARTS: [Part; 4] = [
    (
        "atom",
        |_, f| matches!(f, "add" | "read").then(|| F::from(f.to_owned())),
        counter::check,
    ),
    (
        "bank",
        |_, f| match f {
            "transfer" => Some(F::from(f.to_owned())),
            "balances" => Some(F::Read),
            _ => None,
        },
        bank::check,
    ),
    (
        "lock",
        |p, f| (who(p) == Who::Worker).then(|| hold_op(f)).flatten(),
        mutex::check,
    ),
    (
        "leader",
        |p, f| (who(p) == Who::Leader).then(|| hold_op(f)).flatten(),
        election::check,
    ),
];

/// Judges a `sessions` history of `clients` clients (see the [module docs](super)).
///
/// ```
/// use avout_check::history::{Event, History, F};
/// let f = |s: &str| F::Other(s.into());
/// // Client 0's session expired, and nothing of it succeeded afterwards.
/// let h: History = [
///     Event::invoke(0, f("expire"), serde_json::Value::Null),
///     Event::ok(0, f("expire"), serde_json::json!({"session": "0x1"})),
///     Event::invoke(0, f("add"), 1.into()),
///     Event::fail(0, f("add"), 1.into()),
/// ]
/// .into_iter()
/// .collect();
/// let v = avout_scenarios::scenario::sessions::check(&h, 2);
/// assert!(v.anomalies[0].starts_with("liveness: client 0"), "{v}");
/// ```
pub fn check(history: &History, clients: usize) -> Verdict {
    let mut anomalies = Vec::new();
    for (name, keep, judge) in PARTS {
        let verdict = judge(&part(history, keep));
        anomalies.extend(verdict.anomalies.iter().map(|a| format!("{name}: {a}")));
    }
    anomalies.extend(stalled_after_expiry(history, clients));
    Verdict::new(
        "sessions (atom as counter, bank, lock as mutex, leader as election; progress after \
         each expiry)",
        anomalies,
    )
}

/// The liveness rule: after each `ok` expiry of a client, an `ok` operation of the same
/// client's main loop invoked after the expiry completed.
fn stalled_after_expiry(history: &History, clients: usize) -> Vec<String> {
    let ops = pairs(history);
    let client = |p: u64| (who(p) == Who::Worker && clients > 0).then(|| p % clients as u64);
    let mut out = Vec::new();
    for expiry in ops
        .iter()
        .filter(|o| o.f == "expire" && o.end == EventType::Ok)
    {
        let Some(c) = client(expiry.process) else {
            continue;
        };
        let progressed = ops.iter().any(|o| {
            o.end == EventType::Ok
                && o.f != "expire"
                && o.start > expiry.stop
                && client(o.process) == Some(c)
        });
        if !progressed {
            out.push(format!(
                "liveness: client {c} made no progress after its session {} expired (the \
                 expiry completed at event {}): none of its later operations succeeded",
                expiry.output.get("session").unwrap_or(&Value::Null),
                expiry.stop
            ));
        }
    }
    out
}
