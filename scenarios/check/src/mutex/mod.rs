//! The mutex checker: one holder at a time, except where fencing tokens make it safe.
//!
//! # History format
//!
//! Each process acquires, optionally writes to a fenced resource, and releases:
//!
//! ```text
//! {"type":"invoke","process":0,"f":"acquire","value":null}
//! {"type":"ok","process":0,"f":"acquire","value":7}
//! {"type":"invoke","process":0,"f":"write","value":7}
//! {"type":"ok","process":0,"f":"write","value":7}
//! {"type":"invoke","process":0,"f":"release","value":7}
//! {"type":"ok","process":0,"f":"release","value":7}
//! ```
//!
//! - `acquire`: `null` on the invocation; an `ok` completion carries the hold's *fencing
//!   token*, an integer the lock service makes larger for every grant (with ZooKeeper, the
//!   lock node's sequence number or its czxid). `fail` means not acquired. `info` (or no
//!   completion) means unknown: such a hold is not trusted — its client does not know it holds
//!   the lock, so does not act on it — and is not checked.
//! - `release`: ends the process's current hold (its last `ok` acquire). `ok` is a clean
//!   release. `fail` or `info` means the hold ended by *losing* it: the client found its session
//!   gone (or could not tell), so the lock may have passed to someone else at any moment after
//!   the acquire. A release with no hold is ignored. A hold never released lasts to the end of
//!   the history.
//! - `write`: a write to a resource that enforces the fencing rule, value the token (an integer,
//!   or an object with an integer `token` field). `ok` means the resource accepted it, `fail`
//!   that it refused it (a stale token), `info` unknown.
//!
//! # What is checked
//!
//! A hold surely lasted from its acquire's completion to its release's invocation (the lock was
//! granted before the client heard, and released after it asked). For every two holds whose
//! sure intervals overlap, the one with the smaller token must have ended by losing: a holder
//! that lost its session is fenced off by the token, not trusted. Which of the two heard of its
//! grant first does not matter: a client told late (paused, or its reply delayed) may hold the
//! older node, deleted by its session's end before the other was granted. Anything else is two
//! live holders. Besides:
//! - tokens grow with real time: an acquire that began after another completed has a larger
//!   token, and no two holds share a token;
//! - the resource accepts writes in token order: an accepted write that began after another
//!   accepted write completed does not carry a smaller token.
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::mutex::Mutex;
//! use avout_check::history::{Event, History, F};
//! use serde_json::Value;
//! let acquire = || F::Other("acquire".into());
//! // Process 1 acquires while process 0 still holds, and 0 then releases cleanly.
//! let h: History = [
//!     Event::invoke(0, acquire(), Value::Null),
//!     Event::ok(0, acquire(), 1.into()),
//!     Event::invoke(1, acquire(), Value::Null),
//!     Event::ok(1, acquire(), 2.into()),
//!     Event::invoke(0, F::Other("release".into()), Value::Null),
//!     Event::ok(0, F::Other("release".into()), Value::Null),
//! ]
//! .into_iter()
//! .collect();
//! let verdict = Mutex.check(&h).unwrap();
//! assert_eq!(verdict.kinds(), vec!["overlap"]);
//! let overlap = &verdict.anomalies[0].spans[0];
//! assert_eq!((overlap.from, overlap.to), (3, Some(4)), "from the second grant to the release");
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::checker::{CheckError, Checker};
use crate::history::{History, Keys, Operation, Outcome};
use crate::verdict::{Anomaly, Interval, Role, Stretch, Verdict};

/// One trusted hold: an `ok` acquire and how it ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Hold {
    /// Its fencing token.
    pub(crate) token: i64,
    /// The `ok` acquire.
    pub(crate) acquire: Operation,
    /// The release that ended it; `None` if it lasted to the end.
    pub(crate) release: Option<Operation>,
}

impl Hold {
    /// Whether it ended by losing the lock: a release that did not complete `ok`.
    pub(crate) fn lost(&self) -> bool {
        self.release
            .as_ref()
            .is_some_and(|r| r.outcome != Outcome::Ok)
    }

    /// Where it surely began: its acquire's completion.
    fn start(&self) -> usize {
        self.acquire.complete.expect("ok acquires complete").index
    }

    /// Where it surely still held: up to its release's invocation.
    fn end(&self) -> usize {
        self.release.as_ref().map_or(usize::MAX, |r| r.invoke.index)
    }
}

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "process {} held token {} from line {}",
            self.acquire.process,
            self.token,
            self.acquire.complete.map_or(0, |c| c.line)
        )?;
        match &self.release {
            None => write!(f, " to the end"),
            Some(r) if r.outcome == Outcome::Ok => write!(f, " to line {}", r.invoke.line),
            Some(r) => write!(
                f,
                " and lost it (release at line {} ended {})",
                r.invoke.line, r.outcome
            ),
        }
    }
}

/// A breach of mutual exclusion or of the fencing rule.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum MutexViolation {
    /// Two holds surely overlapped, and fencing does not excuse it: the earlier did not have the
    /// smaller token or did not end by losing.
    Overlap {
        /// The hold whose acquire completed first.
        first: Box<Hold>,
        /// The hold that began while `first` surely held.
        second: Box<Hold>,
    },
    /// An acquire that began after `earlier` completed got a token no larger.
    TokenOrder {
        /// The acquire with the larger token, completed first.
        earlier: Operation,
        /// The acquire that began after it.
        later: Operation,
    },
    /// Two holds with the same token.
    DuplicateToken {
        /// The first acquire.
        first: Operation,
        /// The second.
        second: Operation,
    },
    /// The resource accepted a write with a smaller token after accepting a larger one.
    StaleWrite {
        /// The accepted write with the larger token, completed first.
        accepted: Operation,
        /// The accepted write that began after it with a smaller token.
        stale: Operation,
    },
}

impl MutexViolation {
    /// A short name: `overlap`, `token-order`, `duplicate-token` or `stale-write`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            MutexViolation::Overlap { .. } => "overlap",
            MutexViolation::TokenOrder { .. } => "token-order",
            MutexViolation::DuplicateToken { .. } => "duplicate-token",
            MutexViolation::StaleWrite { .. } => "stale-write",
        }
    }
}

impl fmt::Display for MutexViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MutexViolation::Overlap { first, second } => {
                write!(f, "overlap: {first}, while {second}")?;
                if first.token == second.token {
                    write!(f, " (the same token)")
                } else {
                    let older = first.token.min(second.token);
                    write!(
                        f,
                        " (the holder of the smaller token {older} did not lose its hold)"
                    )
                }
            }
            MutexViolation::TokenOrder { earlier, later } => write!(
                f,
                "token-order: {later} began after {earlier} and got a token no larger"
            ),
            MutexViolation::DuplicateToken { first, second } => {
                write!(f, "duplicate-token: {first} and {second}")
            }
            MutexViolation::StaleWrite { accepted, stale } => write!(
                f,
                "stale-write: {stale} was accepted after {accepted} (token order broken)"
            ),
        }
    }
}

/// The result of a mutex check.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Findings {
    /// Trusted holds (`ok` acquires).
    pub(crate) holds: usize,
    /// Holds that ended by losing the lock.
    pub(crate) lost: usize,
    /// Accepted (`ok`) writes.
    pub(crate) writes: usize,
    /// Every breach found: overlaps first (by the second hold's start), then token order,
    /// duplicate tokens and stale writes, each in history order.
    pub(crate) violations: Vec<MutexViolation>,
}

impl Findings {
    /// Whether no breach was found.
    pub(crate) fn is_valid(&self) -> bool {
        self.violations.is_empty()
    }
}

impl Findings {
    /// The report's first line.
    fn summary(&self) -> String {
        format!(
            "{}: {} holds ({} lost), {} accepted writes, {} violations",
            if self.is_valid() { "valid" } else { "invalid" },
            self.holds,
            self.lost,
            self.writes,
            self.violations.len()
        )
    }

    /// As one verdict.
    pub(crate) fn verdict(&self) -> Verdict {
        Verdict::new(
            Mutex.name(),
            self.summary(),
            self.violations
                .iter()
                .map(MutexViolation::reported)
                .collect(),
        )
    }
}

impl fmt::Display for Findings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.verdict().report())
    }
}

impl Hold {
    /// Its stretch: from its acquire's completion to its release's invocation (or the end).
    fn span(&self, label: String) -> Interval {
        Interval {
            ops: vec![self.acquire.invoke.index],
            from: self.start(),
            to: self.release.as_ref().map(|r| r.invoke.index),
            role: Stretch::Hold,
            label,
        }
    }

    /// `holds token 7 (released cleanly)`.
    fn label(&self) -> String {
        let how = match &self.release {
            None => "never released",
            Some(r) if r.outcome == Outcome::Ok => "released cleanly",
            Some(_) => "lost",
        };
        format!("holds token {} ({how})", self.token)
    }
}

impl MutexViolation {
    /// As a verdict reports it: the two holds at once with their tokens and their overlap,
    /// or the acquires and writes out of token order.
    fn reported(&self) -> Anomaly {
        let a = Anomaly::new(self.name(), self.to_string());
        let realtime = "began after it completed";
        match self {
            MutexViolation::Overlap { first, second } => {
                let (pa, pb) = (first.acquire.process, second.acquire.process);
                let (la, lb) = (first.label(), second.label());
                let mut a = a.titled(format!(
                    "two holders at once: process {pa} {la}; process {pb} {lb}"
                ));
                for h in [first, second] {
                    a = a.op(
                        h.acquire.invoke.index,
                        Role::Party,
                        format!("token {}", h.token),
                    );
                    if let Some(r) = &h.release {
                        a = a.op(
                            r.invoke.index,
                            Role::Party,
                            format!("release {}", r.outcome),
                        );
                    }
                }
                let (x, y) = (first.span(la), second.span(lb));
                let to = match (x.to, y.to) {
                    (Some(p), Some(q)) => Some(p.min(q)),
                    (p, q) => p.or(q),
                };
                a.span(Interval {
                    ops: vec![first.acquire.invoke.index, second.acquire.invoke.index],
                    from: x.from.max(y.from),
                    to,
                    role: Stretch::Overlap,
                    label: format!(
                        "two holders: process {pa} with token {}, process {pb} with token {}",
                        first.token, second.token
                    ),
                })
                .span(x)
                .span(y)
            }
            MutexViolation::TokenOrder { earlier, later } => tokens(a, earlier, later).link(
                earlier.invoke.index,
                later.invoke.index,
                "realtime",
                "realtime",
                realtime,
            ),
            MutexViolation::DuplicateToken { first, second } => tokens(a, first, second),
            MutexViolation::StaleWrite { accepted, stale } => a
                .op(accepted.invoke.index, Role::Party, "accepted")
                .op(stale.invoke.index, Role::Culprit, "stale, accepted")
                .link(
                    accepted.invoke.index,
                    stale.invoke.index,
                    "realtime",
                    "realtime",
                    realtime,
                ),
        }
    }
}

/// `a` with two acquires and their tokens: `party` the first, `culprit` the second.
fn tokens(a: Anomaly, party: &Operation, culprit: &Operation) -> Anomaly {
    a.op(
        party.invoke.index,
        Role::Party,
        format!("token {}", party.value),
    )
    .op(
        culprit.invoke.index,
        Role::Culprit,
        format!("token {}", culprit.value),
    )
}

/// The mutex checker (`mutex`): mutual exclusion of lock holds under fencing tokens (see the
/// [module docs](self)).
///
/// ```
/// use avout_check::Checker;
/// use avout_check::mutex::Mutex;
/// use avout_check::history::{Event, History, F};
/// use serde_json::Value;
/// let (a, r) = (|| F::Other("acquire".into()), || F::Other("release".into()));
/// // Process 0 loses its session; process 1 acquires with a larger token: fenced, valid.
/// let h: History = [
///     Event::invoke(0, a(), Value::Null),
///     Event::ok(0, a(), 1.into()),
///     Event::invoke(1, a(), Value::Null),
///     Event::ok(1, a(), 2.into()),
///     Event::invoke(0, r(), Value::Null),
///     Event::info(0, r(), Value::Null),
/// ]
/// .into_iter()
/// .collect();
/// let verdict = Mutex.check(&h).unwrap();
/// assert!(verdict.is_valid(), "{verdict}");
/// assert!(verdict.summary.contains("2 holds (1 lost)"));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Mutex;

impl Checker for Mutex {
    fn name(&self) -> String {
        "mutex".to_owned()
    }

    fn check(&self, history: &History) -> Result<Verdict, CheckError> {
        Ok(check_mutex(history)?.verdict())
    }
}

/// Checks a mutex history (format in the [module docs](self)).
pub(crate) fn check_mutex(history: &History) -> Result<Findings, CheckError> {
    let ops = history.operations(Keys::Field)?;
    let mut holds: Vec<Hold> = Vec::new();
    // Each process's current hold, as an index into `holds`.
    let mut holding: BTreeMap<u64, usize> = BTreeMap::new();
    let mut writes: Vec<(i64, Operation)> = Vec::new();
    for op in ops {
        match op.f.as_str() {
            "acquire" => {
                if op.outcome != Outcome::Ok {
                    continue;
                }
                let line = op.complete.map_or(op.invoke.line, |c| c.line);
                let token = token(&op.value, line)?;
                holding.insert(op.process, holds.len());
                holds.push(Hold {
                    token,
                    acquire: op,
                    release: None,
                });
            }
            "release" => {
                if let Some(h) = holding.remove(&op.process) {
                    holds[h].release = Some(op);
                }
            }
            "write" => {
                let token = token(&op.value, op.invoke.line)?;
                if op.outcome == Outcome::Ok {
                    writes.push((token, op));
                }
            }
            _ => {
                return Err(CheckError::Unsupported {
                    line: op.invoke.line,
                    f: op.f.clone(),
                    model: "mutex",
                    known: "acquire, release, write",
                });
            }
        }
    }
    let mut violations = overlaps(&holds);
    let acquires: Vec<(i64, &Operation)> = holds.iter().map(|h| (h.token, &h.acquire)).collect();
    violations.extend(
        out_of_order(&acquires, true)
            .into_iter()
            .map(|(earlier, later)| MutexViolation::TokenOrder { earlier, later }),
    );
    let mut first_with: BTreeMap<i64, &Operation> = BTreeMap::new();
    for (token, op) in &acquires {
        if let Some(first) = first_with.insert(*token, op) {
            violations.push(MutexViolation::DuplicateToken {
                first: first.clone(),
                second: (*op).clone(),
            });
            first_with.insert(*token, first);
        }
    }
    let accepted: Vec<(i64, &Operation)> = writes.iter().map(|(t, op)| (*t, op)).collect();
    violations.extend(
        out_of_order(&accepted, false)
            .into_iter()
            .map(|(accepted, stale)| MutexViolation::StaleWrite { accepted, stale }),
    );
    Ok(Findings {
        holds: holds.len(),
        lost: holds.iter().filter(|h| h.lost()).count(),
        writes: writes.len(),
        violations,
    })
}

/// Overlapping holds not excused by fencing, by a sweep over holds in order of start.
fn overlaps(holds: &[Hold]) -> Vec<MutexViolation> {
    let mut by_start: Vec<&Hold> = holds.iter().collect();
    by_start.sort_by_key(|h| h.start());
    let mut found = Vec::new();
    let mut active: Vec<&Hold> = Vec::new();
    for second in by_start {
        active.retain(|h| h.end() > second.start());
        for first in &active {
            // The smaller token must be the hold that ended by losing, whichever hold heard
            // of its grant first: a client told late (paused, or its reply delayed) may hold
            // the older node, which its session's end deleted before the other was granted.
            let (older, newer) = if first.token < second.token {
                (*first, second)
            } else {
                (second, *first)
            };
            let fenced = older.token < newer.token && older.lost();
            if !fenced {
                found.push(MutexViolation::Overlap {
                    first: Box::new((*first).clone()),
                    second: Box::new(second.clone()),
                });
            }
        }
        active.push(second);
    }
    found
}

/// Pairs (earlier, later) where `later` began after `earlier` completed and its token is smaller
/// (or equal, when `strict`) than the largest token completed before it began. Each offender is
/// reported once, against the operation holding that largest token.
fn out_of_order(ops: &[(i64, &Operation)], strict: bool) -> Vec<(Operation, Operation)> {
    // (position, is completion, op): at a completion the op's token becomes the floor for
    // everything invoked afterwards.
    let mut events: Vec<(usize, bool, usize)> = Vec::with_capacity(ops.len() * 2);
    for (i, (_, op)) in ops.iter().enumerate() {
        events.push((op.invoke.index, false, i));
        events.push((op.complete.expect("ok operations complete").index, true, i));
    }
    events.sort_unstable();
    let mut best: Option<usize> = None;
    let mut floor_at_invoke: Vec<Option<usize>> = vec![None; ops.len()];
    let mut found = Vec::new();
    for (_, is_completion, i) in events {
        if !is_completion {
            floor_at_invoke[i] = best;
            continue;
        }
        let token = ops[i].0;
        if let Some(f) = floor_at_invoke[i] {
            let floor = ops[f].0;
            if token < floor || (strict && token == floor) {
                found.push((ops[f].1.clone(), ops[i].1.clone()));
            }
        }
        if best.is_none_or(|b| ops[b].0 < token) {
            best = Some(i);
        }
    }
    found.sort_by_key(|(_, later)| later.invoke.index);
    found
}

fn token(value: &Value, line: usize) -> Result<i64, CheckError> {
    let token = match value {
        Value::Object(fields) => fields.get("token"),
        other => Some(other),
    };
    token
        .and_then(Value::as_i64)
        .ok_or_else(|| CheckError::malformed(line, value, "a fencing token (an integer)"))
}

#[cfg(test)]
mod tests;
