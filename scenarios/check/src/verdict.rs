//! The one verdict every checker gives: which checker judged, what it checked, and each
//! anomaly it found, named, told, and with what a viewer needs to draw it — the operations
//! it concerns and their part in it, the orders between them (a cycle's edges, a
//! linearization), and the stretches of time it is about (two lock holds at once).
//!
//! Operations are named by the index of their invocation among the history's events
//! ([`Position::index`](crate::history::Position::index)), which is how a viewer finds them on
//! its timeline; stretches of time by the indices of the events that bound them.
//!
//! ```
//! use avout_check::{Anomaly, Role, Verdict};
//! let v = Verdict::new(
//!     "counter",
//!     "2 increments",
//!     vec![Anomaly::new("lost-update", "two increments returned 1").op(0, Role::Party, "T0")],
//! );
//! assert!(!v.is_valid());
//! assert_eq!(v.to_string(), "ANOMALY (counter): 1 problem(s)\n  - two increments returned 1\n");
//! assert_eq!(v.anomalies[0].ops[0].op, 0);
//! ```

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// How many anomalies of one kind [`Verdict::report`] prints.
pub const SHOWN_PER_KIND: usize = 8;

/// How many problems the short form ([`Verdict`]'s `Display`) lists.
const SHOWN_SHORT: usize = 10;

/// A checker's judgement of a history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Which checker judged, with what it holds the history to: `counter`, `bank (total 100,
    /// no negative balance)`, `linearizability (cas-register)`.
    pub checker: String,
    /// What it checked, as the checker's report begins: `valid: 2 holds (1 lost), 3 accepted
    /// writes, 0 violations`. Empty for a checker with nothing to say beyond its anomalies.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    /// What is wrong, in the order the checker reports it; empty when the history passed.
    pub anomalies: Vec<Anomaly>,
    /// What the checker could not decide (a key given up on at its state limit): such a
    /// history is neither shown valid nor shown wrong.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<String>,
}

impl Verdict {
    /// A verdict of `checker` with `anomalies` found.
    ///
    /// ```
    /// let v = avout_check::Verdict::new("counter", "", vec![]);
    /// assert!(v.is_valid());
    /// assert_eq!(v.to_string(), "valid (counter)");
    /// ```
    pub fn new(
        checker: impl Into<String>,
        summary: impl Into<String>,
        anomalies: Vec<Anomaly>,
    ) -> Self {
        Verdict {
            checker: checker.into(),
            summary: summary.into(),
            anomalies,
            undecided: Vec::new(),
        }
    }

    /// The verdicts of several checkers on one history as one, under `checker`: every
    /// anomaly and undecided part of each, in order. It has no summary: each summary speaks
    /// for its own checker's verdict, which the joint one is not.
    ///
    /// ```
    /// use avout_check::{Anomaly, Verdict};
    /// let a = Verdict::new("holds", "valid: 3 holds", vec![]);
    /// let b = Verdict::new("mutex", "invalid: 1 write", vec![Anomaly::new("overlap", "two holders")]);
    /// let v = Verdict::all("mutex (both)", [a, b]);
    /// assert_eq!((v.checker.as_str(), v.summary.as_str()), ("mutex (both)", ""));
    /// assert_eq!(v.anomalies.len(), 1);
    /// ```
    pub fn all(checker: impl Into<String>, verdicts: impl IntoIterator<Item = Verdict>) -> Self {
        let mut out = Verdict::new(checker, "", Vec::new());
        for v in verdicts {
            out.anomalies.extend(v.anomalies);
            out.undecided.extend(v.undecided);
        }
        out
    }

    /// Whether the history passed: no anomaly, nothing undecided.
    pub fn is_valid(&self) -> bool {
        self.anomalies.is_empty() && self.undecided.is_empty()
    }

    /// Whether the checker decided: it found an anomaly, or found none and gave up nowhere.
    ///
    /// ```
    /// let mut v = avout_check::Verdict::new("linearizability (register)", "", vec![]);
    /// v.undecided.push("the register: gave up at the state limit".into());
    /// assert!(!v.is_valid() && !v.is_decided());
    /// ```
    pub fn is_decided(&self) -> bool {
        !self.anomalies.is_empty() || self.undecided.is_empty()
    }

    /// The kinds of anomaly found, sorted, each once.
    ///
    /// ```
    /// use avout_check::{Anomaly, Verdict};
    /// let v = Verdict::new("t", "", vec![Anomaly::new("b", "x"), Anomaly::new("a", "y"), Anomaly::new("b", "z")]);
    /// assert_eq!(v.kinds(), vec!["a", "b"]);
    /// ```
    pub fn kinds(&self) -> Vec<String> {
        let kinds: BTreeSet<&str> = self.anomalies.iter().map(|a| a.kind.as_str()).collect();
        kinds.into_iter().map(str::to_owned).collect()
    }

    /// Every problem in a line or a few: each anomaly's message, then each undecided part.
    pub fn problems(&self) -> impl Iterator<Item = &str> {
        self.anomalies
            .iter()
            .map(|a| a.message.as_str())
            .chain(self.undecided.iter().map(String::as_str))
    }

    /// The checker's full report: its summary, then its anomalies in order (at most
    /// [`SHOWN_PER_KIND`] of a kind), then what it could not decide.
    ///
    /// ```
    /// use avout_check::{Anomaly, Verdict};
    /// let v = Verdict::new("bank", "invalid: 1 read", vec![Anomaly::new("negative", "a read of -1")]);
    /// assert_eq!(v.report(), "invalid: 1 read\n  a read of -1\n");
    /// ```
    pub fn report(&self) -> String {
        let mut out = String::new();
        if !self.summary.is_empty() {
            out.push_str(&self.summary);
            out.push('\n');
        }
        let mut shown: Vec<(&str, usize)> = Vec::new();
        for a in &self.anomalies {
            let seen = match shown.iter_mut().find(|(k, _)| *k == a.kind) {
                Some((_, n)) => n,
                None => {
                    shown.push((&a.kind, 0));
                    &mut shown.last_mut().expect("just pushed").1
                }
            };
            *seen += 1;
            if *seen <= SHOWN_PER_KIND {
                out.push_str(&indented(&a.message, "  ", ""));
            }
        }
        for (kind, n) in shown.iter().filter(|(_, n)| *n > SHOWN_PER_KIND) {
            out.push_str(&format!("  … and {} more {kind}\n", n - SHOWN_PER_KIND));
        }
        for u in &self.undecided {
            out.push_str(&indented(u, "  ", ""));
        }
        out
    }
}

/// `text`, its first line after `first`, the others after `rest` (a message indents its own
/// continuation lines), each ending in a newline.
fn indented(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        out.push_str(if i == 0 { first } else { rest });
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The short form, as a run prints it: `valid (CHECKER)`, or `ANOMALY (CHECKER): N
/// problem(s)` and the first ten problems, one `  - ` each.
impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_valid() {
            return write!(f, "valid ({})", self.checker);
        }
        let problems: Vec<&str> = self.problems().collect();
        writeln!(
            f,
            "ANOMALY ({}): {} problem(s)",
            self.checker,
            problems.len()
        )?;
        for p in problems.iter().take(SHOWN_SHORT) {
            f.write_str(&indented(p, "  - ", ""))?;
        }
        if problems.len() > SHOWN_SHORT {
            writeln!(f, "  … and {} more", problems.len() - SHOWN_SHORT)?;
        }
        Ok(())
    }
}

/// One thing a checker found wrong.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Anomaly {
    /// Its kind, as the checker names it: `G-single`, `not-linearizable`, `overlap`,
    /// `wrong-total`, `lost-update`, …; `error`, `liveness` and `panic` for a run that did not
    /// end well.
    pub kind: String,
    /// What is wrong, in one line (a drawing's title).
    pub title: String,
    /// The checker's account of it, in one line or several.
    pub message: String,
    /// The operations it concerns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops: Vec<Part>,
    /// Orders between them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    /// Stretches of time it is about.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<Interval>,
}

impl Anomaly {
    /// An anomaly of `kind` told by `message`, titled by its first line.
    ///
    /// ```
    /// let a = avout_check::Anomaly::new("overlap", "holds overlap\n  in detail");
    /// assert_eq!(a.title, "holds overlap");
    /// ```
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        let message = message.into();
        Anomaly {
            kind: kind.into(),
            title: message.lines().next().unwrap_or_default().trim().to_owned(),
            message,
            ops: Vec::new(),
            links: Vec::new(),
            spans: Vec::new(),
        }
    }

    /// The same, titled `title`.
    pub fn titled(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// The same, concerning the operation invoked at event `op` in `role`, labelled `label`.
    /// An operation already there keeps its first part (the stronger: culprit before
    /// context).
    ///
    /// ```
    /// use avout_check::{Anomaly, Role};
    /// let a = Anomaly::new("k", "m").op(3, Role::Culprit, "reader").op(3, Role::Party, "again");
    /// assert_eq!(a.ops.len(), 1);
    /// assert_eq!(a.ops[0].role, Role::Culprit);
    /// ```
    pub fn op(mut self, op: usize, role: Role, label: impl Into<String>) -> Self {
        if self.ops.iter().all(|p| p.op != op) {
            self.ops.push(Part {
                op,
                role,
                label: label.into(),
            });
        }
        self
    }

    /// The same, with an order from the operation invoked at event `from` to the one at
    /// `to`, of `kind` (`ww`, `wr`, `rw`, `realtime`, `process`, `order`, `stuck`, …).
    pub fn link(
        mut self,
        from: usize,
        to: usize,
        kind: impl Into<String>,
        label: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        self.links.push(Link {
            from,
            to,
            kind: kind.into(),
            label: label.into(),
            detail: detail.into(),
        });
        self
    }

    /// The same, about the stretch of time `span`.
    pub fn span(mut self, span: Interval) -> Self {
        self.spans.push(span);
        self
    }
}

/// An operation an anomaly concerns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// The index of its invocation among the history's events.
    pub op: usize,
    /// How it takes part.
    pub role: Role,
    /// Its label (`T0`, `token 7`, `cannot be placed`).
    pub label: String,
}

/// How an operation takes part in an anomaly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// It breaks the rule: the operation nobody could place, the stale read, the second
    /// holder.
    Culprit,
    /// It takes part: a transaction of a cycle, a holder, the write a read saw.
    Party,
    /// It is in the deepest linearization found.
    Order,
    /// It could still take effect when the culprit completed.
    Open,
}

impl Role {
    /// Its name: `culprit`, `party`, `order` or `open`.
    ///
    /// ```
    /// assert_eq!(avout_check::Role::Open.name(), "open");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Role::Culprit => "culprit",
            Role::Party => "party",
            Role::Order => "order",
            Role::Open => "open",
        }
    }
}

/// An order between two operations of an anomaly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// From the operation invoked at this event.
    pub from: usize,
    /// To the operation invoked at this event.
    pub to: usize,
    /// `ww`, `wr`, `rw`, `realtime`, `process` (a cycle's edges), `order` (a
    /// linearization's next operation), `stuck` (where it could not go on).
    pub kind: String,
    /// Its label.
    pub label: String,
    /// What shows it.
    pub detail: String,
}

/// A stretch of time an anomaly is about, between two events of the history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interval {
    /// The operations (by their invocations) on whose clients it lies.
    pub ops: Vec<usize>,
    /// The event it starts at.
    pub from: usize,
    /// The event it ends at; `None`: the end of the history.
    pub to: Option<usize>,
    /// What it is.
    pub role: Stretch,
    /// Its label.
    pub label: String,
}

/// What a stretch of time is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stretch {
    /// A lock hold: from its grant to the start of its release.
    Hold,
    /// Two holds at once.
    Overlap,
}

impl Stretch {
    /// Its name: `hold` or `overlap`.
    ///
    /// ```
    /// assert_eq!(avout_check::Stretch::Overlap.name(), "overlap");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Stretch::Hold => "hold",
            Stretch::Overlap => "overlap",
        }
    }
}
