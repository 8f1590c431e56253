//! The `sessions` checker, for a long mixed workload across expiries of each client's own
//! session: one client's operations on an atom, a bank of refs, a mutex, and its leadership.
//!
//! History: the main loop's operations under the clients' processes: `add` and `read` (the
//! atom, as [`counter`]), `transfer` and `balances` (the bank, as [`bank`](crate::bank)),
//! `acquire`, `write` and `release` (the mutex, as [`holds`] and [`mutex`](crate::mutex)),
//! and `expire` (`ok` when the client expired its own session, value `{session, …}`); its
//! leadership's `acquire`, `write` and `release` under processes from [`LEADER_BASE`] (as
//! [`holds`]); the final reads from [`FINAL_BASE`].
//!
//! Each part is judged by its recipe's checker; and, liveness, every client made progress
//! after each of its expiries: an `ok` operation of its own main loop invoked after the
//! `expire` completed.
//!
//! ```
//! use avout_check::{Checker, Options};
//! use avout_check::history::{Event, History, F};
//! use avout_check::recipes::sessions::Sessions;
//! let f = |s: &str| F::Other(s.into());
//! // Client 0's session expired, and nothing of it succeeded afterwards.
//! let h: History = [
//!     Event::invoke(0, f("expire"), serde_json::Value::Null),
//!     Event::ok(0, f("expire"), serde_json::json!({"session": "0x1"})),
//!     Event::invoke(0, f("add"), 1.into()),
//!     Event::fail(0, f("add"), 1.into()),
//! ]
//! .into_iter()
//! .collect();
//! let v = Sessions::new(&Options { clients: 2, ..Options::default() }).check(&h).unwrap();
//! assert!(v.anomalies[0].message.starts_with("liveness: client 0"), "{v}");
//! ```

#[cfg(test)]
mod tests;

use serde_json::Value;

use super::{counter, holds};
use crate::bank::Bank;
use crate::checker::{CheckError, Checker, Options};
use crate::history::{Event, EventType, F, History, Process, pairs};
use crate::mutex::Mutex;
use crate::verdict::{Anomaly, Role, Verdict};

/// The first process number of the clients' leadership (client `i`'s is `LEADER_BASE + i`,
/// and on, as the numbering of a retired process moves on by the number of clients).
pub const LEADER_BASE: u64 = 1 << 32;

/// The process number of the final reads.
pub const FINAL_BASE: u64 = 1 << 33;

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

/// A part: its name, and what it keeps.
type Part = (&'static str, Keep);

/// The parts, each judged by its recipe's checker ([`Sessions::part_checkers`]).
const PARTS: [Part; 4] = [
    ("atom", |_, f| {
        matches!(f, "add" | "read").then(|| F::from(f.to_owned()))
    }),
    ("bank", |_, f| match f {
        "transfer" => Some(F::from(f.to_owned())),
        "balances" => Some(F::Read),
        _ => None,
    }),
    ("lock", |p, f| {
        (who(p) == Who::Worker).then(|| hold_op(f)).flatten()
    }),
    ("leader", |p, f| {
        (who(p) == Who::Leader).then(|| hold_op(f)).flatten()
    }),
];

/// The `sessions` checker: each part of the history by its recipe's checker, and every
/// client's progress after each of its expiries (see the [module docs](self)).
#[derive(Clone, Debug)]
pub struct Sessions {
    clients: usize,
    bank: Bank,
}

impl Sessions {
    /// For a run of `clients` clients whose bank part holds the total `options.total` over
    /// `options.accounts`.
    pub fn new(options: &Options) -> Self {
        let mut bank = Bank::new();
        if let Some(total) = options.total {
            bank = bank.total(total);
        }
        if let Some(accounts) = &options.accounts {
            bank = bank.accounts(accounts.iter().cloned());
        }
        Sessions {
            clients: options.clients,
            bank,
        }
    }

    /// The checkers of each part, in [`PARTS`]'s order.
    fn part_checkers(&self) -> [Vec<&dyn Checker>; 4] {
        [
            vec![&counter::CHECKER],
            vec![&self.bank],
            vec![&holds::CHECKER, &Mutex],
            vec![&holds::CHECKER],
        ]
    }
}

impl Checker for Sessions {
    fn name(&self) -> String {
        "sessions (atom as counter, bank, lock as mutex, leader as election; progress after \
         each expiry)"
            .to_owned()
    }

    fn check(&self, history: &History) -> Result<Verdict, CheckError> {
        let mut anomalies = Vec::new();
        for ((name, keep), checkers) in PARTS.into_iter().zip(self.part_checkers()) {
            let part = part(history, keep);
            for checker in checkers {
                anomalies.extend(checker.judge(&part).anomalies.into_iter().map(|a| Anomaly {
                    message: format!("{name}: {}", a.message),
                    // The part's events are renamed and renumbered: its operations are not
                    // the history's.
                    ops: Vec::new(),
                    links: Vec::new(),
                    spans: Vec::new(),
                    ..a
                }));
            }
        }
        anomalies.extend(stalled_after_expiry(history, self.clients));
        Ok(Verdict::new(self.name(), "", anomalies))
    }
}

/// The liveness rule: after each `ok` expiry of a client, an `ok` operation of the same
/// client's main loop invoked after the expiry completed.
fn stalled_after_expiry(history: &History, clients: usize) -> Vec<Anomaly> {
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
            out.push(
                Anomaly::new(
                    "no-progress",
                    format!(
                        "liveness: client {c} made no progress after its session {} expired \
                         (the expiry completed at event {}): none of its later operations \
                         succeeded",
                        expiry.output.get("session").unwrap_or(&Value::Null),
                        expiry.stop
                    ),
                )
                .op(expiry.start, Role::Culprit, "expiry"),
            );
        }
    }
    out
}
