//! Linearizability checking for register and compare-and-set register histories: the
//! checkers `register` and `cas-register` ([`Linearizable`]).
//!
//! A history is linearizable if every operation can be given a single instant between its
//! invocation and its completion such that, taken in the order of those instants, the operations
//! are a legal sequential run of the model: each read returns the last value written (`null`
//! before any write), and each cas `[expected, new]` finds `expected` there and leaves `new`.
//!
//! How a history becomes a search problem:
//! 1. **Pairing** ([`History::operations`](crate::history::History::operations)): each invocation with the next completion of its
//!    process. `ok` operations took effect and must be placed; `fail` operations did not happen
//!    and are dropped; `info` operations (and invocations never completed) may be placed anywhere
//!    after their invocation, or nowhere. A read that did not complete `ok` returned nothing and
//!    constrains nothing, so it is dropped too.
//! 2. **Per-key decomposition**: linearizability is local (Herlihy and Wing; the
//!    P-compositionality of Horn and Kroening), so each key is checked on its own, which turns one
//!    search exponential in the total concurrency into many small ones.
//! 3. **Pruning** that cannot change the verdict: an `info` write or cas whose resulting value no
//!    read returns and no cas expects is dropped, because placing it never helps. (An order that
//!    places it stays valid with it removed: nothing could have observed the state it produced.)
//! 4. **Search**: Wing and Gong's depth-first search with Lowe's memoisation of
//!    (set of placed operations, state), as in Knossos' `linear` and Porcupine, before which a
//!    linear pass reports any operation observing a value that nothing invoked before it
//!    completed could have written. The private `linear` module's documentation has the
//!    details, including the further exact reductions: matching reads are not a choice,
//!    `info` operations are never placed where no one could see them, twins are not told
//!    apart, and memoisation uses dominance for the optional part.
//!
//! On a violation the report names, for the key, the operation whose completion no order of
//! the operations gets past — the history up to that completion is the shortest prefix that
//! cannot be linearized — the values the register could hold there, the operations open at that
//! moment, and the end of the deepest partial order found.
//!
//! The verdict does not depend on hash-map iteration order: maps are only looked up, and keys
//! are reported in order of first appearance.
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::history::{Event, History, F};
//! use avout_check::linear::{Linearizable, Model};
//! use serde_json::Value;
//!
//! // Process 0 writes 1; after that completes, process 1 still reads null: a stale read.
//! let h: History = [
//!     Event::invoke(0, F::Write, 1.into()),
//!     Event::ok(0, F::Write, 1.into()),
//!     Event::invoke(1, F::Read, Value::Null),
//!     Event::ok(1, F::Read, Value::Null),
//! ]
//! .into_iter()
//! .collect();
//! let verdict = Linearizable::new(Model::Register).check(&h).unwrap();
//! assert!(!verdict.is_valid());
//! let culprit = &verdict.anomalies[0].ops[0];
//! assert_eq!((culprit.op, culprit.label.as_str()), (2, "cannot be placed"));
//! assert!(verdict.anomalies[0].message.contains("every order that got this far left the register holding: 1"));
//! ```

mod problem;
mod search;
#[cfg(any(test, feature = "synth"))]
pub mod synth;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::checker::{CheckError, Checker};
use crate::history::{ErrorCode, History, Keys, Operation};
use crate::verdict::{Anomaly, Role, Verdict};
use problem::{Problem, group_by_key};

/// The sequential object a history is checked against.
///
/// ```
/// use avout_check::linear::Model;
/// assert_eq!("cas-register".parse::<Model>().unwrap(), Model::CasRegister);
/// assert_eq!(Model::Register.to_string(), "register");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Model {
    /// Reads and writes.
    Register,
    /// Reads, writes and compare-and-set.
    CasRegister,
}

impl Model {
    /// The name used on the command line.
    ///
    /// ```
    /// assert_eq!(avout_check::linear::Model::CasRegister.name(), "cas-register");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Model::Register => "register",
            Model::CasRegister => "cas-register",
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A model name that is not `register` or `cas-register`.
///
/// ```
/// assert!("queue".parse::<avout_check::linear::Model>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown model {0:?}: expected register or cas-register")]
pub struct UnknownModel(pub String);

impl FromStr for Model {
    type Err = UnknownModel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "register" => Ok(Model::Register),
            "cas-register" => Ok(Model::CasRegister),
            _ => Err(UnknownModel(s.to_owned())),
        }
    }
}

/// Why a key is not linearizable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Cause {
    /// `op` reads, or its cas expects, a value that no operation that may have happened, and
    /// was invoked before `op` completed, wrote: found without a search. The history up to its
    /// completion cannot be linearized, but a shorter prefix may not be linearizable either.
    NeverWritten,
    /// The search tried every order: none gets past `op`'s completion, and the history up to
    /// it is the shortest prefix that cannot be linearized.
    NoOrder,
}

/// Where linearizability fails for one key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Violation {
    /// The key; `None` for the unnamed register.
    pub(crate) key: Option<Value>,
    /// How it was found.
    pub(crate) cause: Cause,
    /// The operation whose completion no order of the operations gets past: the history up to
    /// its completion is the shortest prefix that cannot be linearized.
    pub(crate) op: Operation,
    /// The values the register held in the orders that got as far as `op`'s completion, with
    /// everything completed before it placed and `op` impossible to place (up to 16).
    pub(crate) states: Vec<Value>,
    /// Other operations invoked before `op` completed and not yet completed then (up to 16,
    /// the last invoked).
    pub(crate) open: Vec<Operation>,
    /// The last operations (up to 12, oldest first) of the deepest partial order found.
    pub(crate) path: Vec<Operation>,
    /// How many operations that partial order had placed.
    pub(crate) path_len: usize,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(key) = &self.key {
            write!(f, "key {key}: ")?;
        }
        if self.cause == Cause::NeverWritten {
            writeln!(
                f,
                "not linearizable: nothing invoked in time wrote the value observed by"
            )?;
            writeln!(f, "  {}", self.op)?;
            return Ok(());
        }
        writeln!(f, "not linearizable: no order of the operations gets past")?;
        writeln!(f, "  {}", self.op)?;
        let states: Vec<String> = self.states.iter().map(Value::to_string).collect();
        writeln!(
            f,
            "  every order that got this far left the register holding: {}",
            states.join(", ")
        )?;
        if !self.open.is_empty() {
            writeln!(
                f,
                "  operations that could still take effect at its completion:"
            )?;
            for op in &self.open {
                writeln!(f, "    {op}")?;
            }
        }
        writeln!(
            f,
            "  deepest partial order ({} operations placed), ending:",
            self.path_len
        )?;
        for op in &self.path {
            writeln!(f, "    {op}")?;
        }
        Ok(())
    }
}

impl Violation {
    /// As the verdict tells it: the operation nobody could place, the end of the deepest
    /// partial order (numbered, linked in order, ending in the stuck one), and what was still
    /// open.
    fn anomaly(&self) -> Anomaly {
        let key = self
            .key
            .as_ref()
            .map(|k| format!("key {k}: "))
            .unwrap_or_default();
        let op = &self.op;
        let title = match self.cause {
            Cause::NeverWritten => format!(
                "{key}process {} {} {}: a value nothing invoked in time wrote",
                op.process, op.f, op.value
            ),
            Cause::NoOrder => format!(
                "{key}no order of the operations gets past process {}'s {} {}",
                op.process, op.f, op.value
            ),
        };
        let mut a = Anomaly::new("not-linearizable", self.to_string().trim_end())
            .titled(title)
            .op(op.invoke.index, Role::Culprit, "cannot be placed");
        let first = self.path_len - self.path.len();
        for (i, p) in self.path.iter().enumerate() {
            a = a.op(p.invoke.index, Role::Order, format!("#{}", first + i + 1));
        }
        for pair in self.path.windows(2) {
            a = a.link(
                pair[0].invoke.index,
                pair[1].invoke.index,
                "order",
                "",
                "next in the deepest partial order",
            );
        }
        if let Some(last) = self.path.last() {
            let states: Vec<String> = self.states.iter().map(|s| s.to_string()).collect();
            let held = format!("the register held {}", states.join(" or "));
            a = a.link(
                last.invoke.index,
                op.invoke.index,
                "stuck",
                format!("✕ {held}"),
                format!("no order places it here: {held}"),
            );
        }
        for o in &self.open {
            a = a.op(o.invoke.index, Role::Open, "open");
        }
        a
    }
}

/// What the search found: every key's verdict, with the search's work.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Findings {
    /// The model checked against.
    pub(crate) model: Model,
    /// Client operations in the history.
    pub(crate) operations: usize,
    /// Distinct keys (the unnamed register counts as one).
    pub(crate) keys: usize,
    /// Distinct (placed set, state) pairs memoised, over all keys: the search's work.
    pub(crate) explored: u64,
    /// One per key that is not linearizable, in order of the key's first appearance.
    pub(crate) violations: Vec<Violation>,
    /// Keys whose search exceeded [`Linearizable::max_states`] before deciding.
    pub(crate) unknown: Vec<Option<Value>>,
}

impl Findings {
    /// Whether every key was found linearizable.
    #[cfg(test)]
    pub(crate) fn is_linearizable(&self) -> bool {
        self.violations.is_empty() && self.unknown.is_empty()
    }

    /// The report's first line.
    fn summary(&self) -> String {
        let verdict = if !self.violations.is_empty() {
            "not linearizable"
        } else if !self.unknown.is_empty() {
            "unknown"
        } else {
            "linearizable"
        };
        format!(
            "{verdict} as a {}: {} operations, {} {}, {} states explored",
            self.model,
            self.operations,
            self.keys,
            if self.keys == 1 { "key" } else { "keys" },
            self.explored
        )
    }

    /// As one verdict.
    fn verdict(&self) -> Verdict {
        let mut v = Verdict::new(
            format!("linearizability ({})", self.model),
            self.summary(),
            self.violations.iter().map(Violation::anomaly).collect(),
        );
        v.undecided = self
            .unknown
            .iter()
            .map(|key| {
                let key = key
                    .as_ref()
                    .map_or("the register".to_owned(), Value::to_string);
                format!("{key}: gave up at the state limit")
            })
            .collect();
        v
    }
}

impl fmt::Display for Findings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.verdict().report())
    }
}

/// Checks a JSON-lines history file (keys in the `key` field).
#[cfg(test)]
pub(crate) fn check_file(
    path: impl AsRef<std::path::Path>,
    model: Model,
) -> Result<Findings, CheckError> {
    Linearizable::new(model).analyse(&History::read_file(path)?)
}

/// Checks a history (keys in the `key` field).
#[cfg(test)]
pub(crate) fn check_history(history: &History, model: Model) -> Result<Findings, CheckError> {
    Linearizable::new(model).analyse(history)
}

/// The linearizability checker of a register or cas-register (`register`, `cas-register`).
///
/// ```
/// use avout_check::Checker;
/// use avout_check::history::{Event, History, Keys, F};
/// use avout_check::linear::{Linearizable, Model};
/// use serde_json::json;
/// let h: History = [
///     Event::invoke(0, F::Write, json!(["a", 1])),
///     Event::ok(0, F::Write, json!(["a", 1])),
///     Event::invoke(1, F::Read, json!(["b", null])),
///     Event::ok(1, F::Read, json!(["b", 1])),
/// ]
/// .into_iter()
/// .collect();
/// let verdict = Linearizable::new(Model::Register).keys(Keys::Tuple).check(&h).unwrap();
/// assert!(verdict.summary.contains("2 keys"));
/// assert!(verdict.anomalies[0].title.starts_with("key \"b\": process 1 read 1"));
/// ```
#[derive(Clone, Debug)]
pub struct Linearizable {
    model: Model,
    keys: Keys,
    max_states: Option<u64>,
    /// Whether to look for unwritable observations before searching; off only to test the
    /// search on histories the pre-check would settle.
    precheck: bool,
}

impl Linearizable {
    /// The default state limit per key: about a gigabyte of memo at most. A valid history
    /// needs a few states per operation; a failing one must exhaust every order of its prefix,
    /// which many concurrent `info` operations over few values can make explode.
    pub const DEFAULT_MAX_STATES: u64 = 8_000_000;

    /// A checker for `model`, keys in the `key` field, giving up on a key after
    /// [`Linearizable::DEFAULT_MAX_STATES`] states.
    pub fn new(model: Model) -> Self {
        Linearizable {
            model,
            keys: Keys::Field,
            max_states: Some(Self::DEFAULT_MAX_STATES),
            precheck: true,
        }
    }

    /// Where the history keeps its keys.
    pub fn keys(mut self, keys: Keys) -> Self {
        self.keys = keys;
        self
    }

    /// Gives up on a key, reporting it as undecided ([`Verdict::undecided`]), after
    /// memoising this many states for it; the search is exponential in the worst case.
    /// `u64::MAX` means never.
    ///
    /// ```
    /// use avout_check::Checker;
    /// use avout_check::history::{Event, History, F};
    /// use avout_check::linear::{Linearizable, Model};
    /// let h: History = [
    ///     Event::invoke(0, F::Write, 1.into()),
    ///     Event::invoke(1, F::Write, 2.into()),
    ///     Event::ok(0, F::Write, 1.into()),
    ///     Event::ok(1, F::Write, 2.into()),
    /// ]
    /// .into_iter()
    /// .collect();
    /// let verdict = Linearizable::new(Model::Register).max_states(1).check(&h).unwrap();
    /// assert_eq!(verdict.undecided, vec!["the register: gave up at the state limit"]);
    /// assert!(!verdict.is_decided());
    /// ```
    pub fn max_states(mut self, states: u64) -> Self {
        self.max_states = Some(states);
        self
    }

    #[cfg(test)]
    pub(crate) fn without_precheck(mut self) -> Self {
        self.precheck = false;
        self
    }

    /// Judges a history, every key's findings in detail.
    pub(crate) fn analyse(&self, history: &History) -> Result<Findings, CheckError> {
        // An operation the service did not support did nothing, whatever its function: the
        // model need not know it.
        let mut operations = history.operations(self.keys)?;
        operations.retain(|op| op.error != Some(ErrorCode::NOT_SUPPORTED));
        self.analyse_operations(&operations)
    }

    /// Judges paired operations, as [`History::operations`] returns them.
    pub(crate) fn analyse_operations(
        &self,
        operations: &[Operation],
    ) -> Result<Findings, CheckError> {
        let mut findings = Findings {
            model: self.model,
            operations: operations.len(),
            keys: 0,
            explored: 0,
            violations: Vec::new(),
            unknown: Vec::new(),
        };
        for (key, members) in group_by_key(operations) {
            findings.keys += 1;
            let problem = Problem::build(self.model, operations, &members)?;
            if let Some(op) = problem.unwritable().filter(|_| self.precheck) {
                let stuck = search::Stuck {
                    op,
                    ..search::Stuck::default()
                };
                let mut violation = problem.explain(key, operations, &stuck);
                violation.cause = Cause::NeverWritten;
                findings.violations.push(violation);
                continue;
            }
            let searched = search::search(&problem.ops, self.max_states);
            findings.explored += searched.explored;
            match searched.outcome {
                search::Outcome::Linearizable => {}
                search::Outcome::Unknown => findings.unknown.push(key),
                search::Outcome::Violation(stuck) => {
                    findings
                        .violations
                        .push(problem.explain(key, operations, &stuck));
                }
            }
        }
        Ok(findings)
    }
}

impl Checker for Linearizable {
    fn name(&self) -> String {
        format!("linearizability ({})", self.model)
    }

    fn check(&self, history: &History) -> Result<Verdict, CheckError> {
        Ok(self.analyse(history)?.verdict())
    }
}
