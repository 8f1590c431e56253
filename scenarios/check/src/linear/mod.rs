//! Linearizability checking for register and compare-and-set register histories.
//!
//! The other checkers live in submodules, each with a plain `check_*` function:
//! [`list_append`] (Elle-style transactional anomalies of list-append histories,
//! [`list_append::check_list_append`]), [`bank`] (conserved totals, [`bank::check_bank`]),
//! [`mutex`] (mutual exclusion under fencing tokens, [`mutex::check_mutex`]) and
//! [`two_phase_commit`] (atomic commitment, [`two_phase_commit::check_two_phase_commit`]).
//!
//! A history is linearizable if every operation can be given a single instant between its
//! invocation and its completion such that, taken in the order of those instants, the operations
//! are a legal sequential run of the model: each read returns the last value written (`null`
//! before any write), and each cas `[expected, new]` finds `expected` there and leaves `new`.
//!
//! How a history becomes a search problem:
//! 1. **Pairing** ([`History::operations`]): each invocation with the next completion of its
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
//! use avout_check::linear::{check_history, Model};
//! use avout_check::history::{Event, History, F};
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
//! let verdict = check_history(&h, Model::Register).unwrap();
//! assert!(!verdict.is_linearizable());
//! assert_eq!(verdict.violations[0].op.process, 1);
//! assert_eq!(verdict.violations[0].states, vec![Value::from(1)]);
//! ```

mod search;
#[cfg(any(test, feature = "synth"))]
pub mod synth;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde_json::Value;

use crate::history::{ErrorCode, F, History, HistoryError, Keys, Operation, Outcome};
use search::{Kind, Op};

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

/// Why a history could not be checked (as opposed to being found not linearizable).
///
/// ```
/// use avout_check::linear::{check_history, CheckError, Model};
/// use avout_check::history::{Event, History, F};
/// let h: History = [Event::invoke(0, F::Cas, serde_json::json!([1, 2]))].into_iter().collect();
/// let err = check_history(&h, Model::Register).unwrap_err();
/// assert!(matches!(err, CheckError::Unsupported { line: 1, .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The history could not be read or paired.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// An operation the model does not have.
    #[error("line {line}: {f} is not an operation of the {model} model")]
    Unsupported {
        /// The invocation's line.
        line: usize,
        /// The operation.
        f: F,
        /// The model.
        model: Model,
    },
    /// A cas whose value is not `[expected, new]`.
    #[error("line {line}: cas value {value} is not an [expected, new] pair")]
    MalformedCas {
        /// The invocation's line.
        line: usize,
        /// The value found.
        value: Value,
    },
}

/// Why a key is not linearizable.
///
/// ```
/// use avout_check::linear::{check_history, Cause, Model};
/// use avout_check::history::{Event, History, F};
/// let h: History = [Event::invoke(0, F::Read, serde_json::Value::Null), Event::ok(0, F::Read, 4.into())]
///     .into_iter()
///     .collect();
/// assert_eq!(check_history(&h, Model::Register).unwrap().violations[0].cause, Cause::NeverWritten);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cause {
    /// `op` reads, or its cas expects, a value that no operation that may have happened, and
    /// was invoked before `op` completed, wrote: found without a search. The history up to its
    /// completion cannot be linearized, but a shorter prefix may not be linearizable either.
    NeverWritten,
    /// The search tried every order: none gets past `op`'s completion, and the history up to
    /// it is the shortest prefix that cannot be linearized.
    NoOrder,
}

/// Where linearizability fails for one key.
///
/// ```
/// use avout_check::linear::{check_history, Model};
/// use avout_check::history::{Event, History, F};
/// let h: History = [
///     Event::invoke(0, F::Read, serde_json::Value::Null).with_key("k".into()),
///     Event::ok(0, F::Read, 9.into()).with_key("k".into()),
/// ]
/// .into_iter()
/// .collect();
/// let v = &check_history(&h, Model::Register).unwrap().violations[0];
/// assert_eq!(v.key, Some("k".into()));
/// assert_eq!(v.op.value, serde_json::json!(9));
/// assert!(v.to_string().contains("process 0 read 9 ok"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// The key; `None` for the unnamed register.
    pub key: Option<Value>,
    /// How it was found.
    pub cause: Cause,
    /// The operation whose completion no order of the operations gets past: the history up to
    /// its completion is the shortest prefix that cannot be linearized.
    pub op: Operation,
    /// The values the register held in the orders that got as far as `op`'s completion, with
    /// everything completed before it placed and `op` impossible to place (up to 16).
    pub states: Vec<Value>,
    /// Other operations invoked before `op` completed and not yet completed then (up to 16,
    /// the last invoked).
    pub open: Vec<Operation>,
    /// The last operations (up to 12, oldest first) of the deepest partial order found.
    pub path: Vec<Operation>,
    /// How many operations that partial order had placed.
    pub path_len: usize,
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

/// The result of a check.
///
/// ```
/// use avout_check::linear::{check_history, Model};
/// use avout_check::history::{Event, History, F};
/// let h: History = [Event::invoke(0, F::Write, 1.into()), Event::ok(0, F::Write, 1.into())]
///     .into_iter()
///     .collect();
/// let verdict = check_history(&h, Model::Register).unwrap();
/// assert!(verdict.is_linearizable());
/// assert_eq!((verdict.operations, verdict.keys), (1, 1));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The model checked against.
    pub model: Model,
    /// Client operations in the history.
    pub operations: usize,
    /// Distinct keys (the unnamed register counts as one).
    pub keys: usize,
    /// Distinct (placed set, state) pairs memoised, over all keys: the search's work.
    pub explored: u64,
    /// One per key that is not linearizable, in order of the key's first appearance.
    pub violations: Vec<Violation>,
    /// Keys whose search exceeded [`Checker::max_states`] before deciding.
    pub unknown: Vec<Option<Value>>,
}

impl Verdict {
    /// Whether every key was found linearizable.
    ///
    /// ```
    /// use avout_check::linear::{check_history, Model};
    /// let empty = avout_check::history::History::new();
    /// assert!(check_history(&empty, Model::Register).unwrap().is_linearizable());
    /// ```
    pub fn is_linearizable(&self) -> bool {
        self.violations.is_empty() && self.unknown.is_empty()
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if !self.violations.is_empty() {
            "not linearizable"
        } else if !self.unknown.is_empty() {
            "unknown"
        } else {
            "linearizable"
        };
        writeln!(
            f,
            "{verdict} as a {}: {} operations, {} {}, {} states explored",
            self.model,
            self.operations,
            self.keys,
            if self.keys == 1 { "key" } else { "keys" },
            self.explored
        )?;
        for violation in &self.violations {
            write!(f, "{violation}")?;
        }
        for key in &self.unknown {
            let key = key
                .as_ref()
                .map_or("the register".to_owned(), Value::to_string);
            writeln!(f, "{key}: gave up at the state limit")?;
        }
        Ok(())
    }
}

/// Checks a JSON-lines history file (keys in the `key` field).
///
/// ```
/// use avout_check::linear::{check_file, Model};
/// use avout_check::history::{Event, History, F};
/// let h: History = [Event::invoke(0, F::Write, 1.into()), Event::ok(0, F::Write, 1.into())]
///     .into_iter()
///     .collect();
/// let path = std::env::temp_dir().join(format!("avout-check-{}.jsonl", std::process::id()));
/// h.write_file(&path).unwrap();
/// assert!(check_file(&path, Model::CasRegister).unwrap().is_linearizable());
/// std::fs::remove_file(&path).unwrap();
/// ```
pub fn check_file(path: impl AsRef<Path>, model: Model) -> Result<Verdict, CheckError> {
    Checker::new(model).check_file(path)
}

/// Checks a history (keys in the `key` field).
///
/// ```
/// use avout_check::linear::{check_history, Model};
/// use avout_check::history::{Event, History, F};
/// use serde_json::json;
/// // Two cas from 0 both succeed: a lost update.
/// let h: History = [
///     Event::invoke(0, F::Write, 0.into()),
///     Event::ok(0, F::Write, 0.into()),
///     Event::invoke(1, F::Cas, json!([0, 1])),
///     Event::invoke(2, F::Cas, json!([0, 2])),
///     Event::ok(1, F::Cas, json!([0, 1])),
///     Event::ok(2, F::Cas, json!([0, 2])),
/// ]
/// .into_iter()
/// .collect();
/// assert!(!check_history(&h, Model::CasRegister).unwrap().is_linearizable());
/// ```
pub fn check_history(history: &History, model: Model) -> Result<Verdict, CheckError> {
    Checker::new(model).check(history)
}

/// A configured checker.
///
/// ```
/// use avout_check::linear::{Checker, Model};
/// use avout_check::history::{Event, History, Keys, F};
/// use serde_json::json;
/// let h: History = [
///     Event::invoke(0, F::Write, json!(["a", 1])),
///     Event::ok(0, F::Write, json!(["a", 1])),
///     Event::invoke(1, F::Read, json!(["b", null])),
///     Event::ok(1, F::Read, json!(["b", 1])),
/// ]
/// .into_iter()
/// .collect();
/// let verdict = Checker::new(Model::Register).keys(Keys::Tuple).check(&h).unwrap();
/// assert_eq!(verdict.keys, 2);
/// assert_eq!(verdict.violations[0].key, Some("b".into()));
/// ```
#[derive(Clone, Debug)]
pub struct Checker {
    model: Model,
    keys: Keys,
    max_states: Option<u64>,
    /// Whether to look for unwritable observations before searching; off only to test the
    /// search on histories the pre-check would settle.
    precheck: bool,
}

impl Checker {
    /// The default state limit per key: about a gigabyte of memo at most. A valid history
    /// needs a few states per operation; a failing one must exhaust every order of its prefix,
    /// which many concurrent `info` operations over few values can make explode.
    pub const DEFAULT_MAX_STATES: u64 = 8_000_000;

    /// A checker for `model`, keys in the `key` field, giving up on a key after
    /// [`Checker::DEFAULT_MAX_STATES`] states.
    ///
    /// ```
    /// let _ = avout_check::linear::Checker::new(avout_check::linear::Model::Register);
    /// ```
    pub fn new(model: Model) -> Self {
        Checker {
            model,
            keys: Keys::Field,
            max_states: Some(Self::DEFAULT_MAX_STATES),
            precheck: true,
        }
    }

    /// Where the history keeps its keys.
    ///
    /// ```
    /// use avout_check::linear::{Checker, Model};
    /// let _ = Checker::new(Model::Register).keys(avout_check::history::Keys::Tuple);
    /// ```
    pub fn keys(mut self, keys: Keys) -> Self {
        self.keys = keys;
        self
    }

    /// Gives up on a key, reporting it in [`Verdict::unknown`], after memoising this many
    /// states for it; the search is exponential in the worst case. `u64::MAX` means never.
    ///
    /// ```
    /// use avout_check::linear::{Checker, Model};
    /// use avout_check::history::{Event, History, F};
    /// let h: History = [
    ///     Event::invoke(0, F::Write, 1.into()),
    ///     Event::invoke(1, F::Write, 2.into()),
    ///     Event::ok(0, F::Write, 1.into()),
    ///     Event::ok(1, F::Write, 2.into()),
    /// ]
    /// .into_iter()
    /// .collect();
    /// let verdict = Checker::new(Model::Register).max_states(1).check(&h).unwrap();
    /// assert_eq!(verdict.unknown, vec![None]);
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

    /// Checks a JSON-lines history file.
    ///
    /// ```
    /// use avout_check::linear::{CheckError, Checker, Model};
    /// let err = Checker::new(Model::Register).check_file("/nonexistent.jsonl").unwrap_err();
    /// assert!(matches!(err, CheckError::History(_)));
    /// ```
    pub fn check_file(&self, path: impl AsRef<Path>) -> Result<Verdict, CheckError> {
        self.check(&History::read_file(path)?)
    }

    /// Checks a history.
    ///
    /// ```
    /// use avout_check::linear::{Checker, Model};
    /// let h = avout_check::history::History::new();
    /// assert!(Checker::new(Model::Register).check(&h).unwrap().is_linearizable());
    /// ```
    pub fn check(&self, history: &History) -> Result<Verdict, CheckError> {
        // An operation the service did not support did nothing, whatever its function: the
        // model need not know it.
        let mut operations = history.operations(self.keys)?;
        operations.retain(|op| op.error != Some(ErrorCode::NOT_SUPPORTED));
        self.check_operations(&operations)
    }

    /// Checks paired operations, as [`History::operations`] returns them.
    ///
    /// ```
    /// use avout_check::linear::{Checker, Model};
    /// use avout_check::history::{Operation, Outcome, Position, F};
    /// let at = |index| Position { index, line: index + 1 };
    /// let read = Operation {
    ///     process: 0,
    ///     f: F::Read,
    ///     key: None,
    ///     value: 3.into(),
    ///     outcome: Outcome::Ok,
    ///     invoke: at(0),
    ///     complete: Some(at(1)),
    ///     error: None,
    /// };
    /// let verdict = Checker::new(Model::Register).check_operations(&[read]).unwrap();
    /// assert!(!verdict.is_linearizable());
    /// ```
    pub fn check_operations(&self, operations: &[Operation]) -> Result<Verdict, CheckError> {
        let mut verdict = Verdict {
            model: self.model,
            operations: operations.len(),
            keys: 0,
            explored: 0,
            violations: Vec::new(),
            unknown: Vec::new(),
        };
        for (key, members) in group_by_key(operations) {
            verdict.keys += 1;
            let problem = Problem::build(self.model, operations, &members)?;
            if let Some(op) = problem.unwritable().filter(|_| self.precheck) {
                let stuck = search::Stuck {
                    op,
                    ..search::Stuck::default()
                };
                let mut violation = problem.explain(key, operations, &stuck);
                violation.cause = Cause::NeverWritten;
                verdict.violations.push(violation);
                continue;
            }
            let searched = search::search(&problem.ops, self.max_states);
            verdict.explored += searched.explored;
            match searched.outcome {
                search::Outcome::Linearizable => {}
                search::Outcome::Unknown => verdict.unknown.push(key),
                search::Outcome::Violation(stuck) => {
                    verdict
                        .violations
                        .push(problem.explain(key, operations, &stuck));
                }
            }
        }
        Ok(verdict)
    }
}

const MAX_OPEN_REPORTED: usize = 16;

/// Operation indices per key, keys in order of first appearance.
fn group_by_key(operations: &[Operation]) -> Vec<(Option<Value>, Vec<usize>)> {
    let mut groups: Vec<(Option<Value>, Vec<usize>)> = Vec::new();
    let mut index: HashMap<Option<String>, usize> = HashMap::new();
    for (i, op) in operations.iter().enumerate() {
        let canonical = op.key.as_ref().map(Value::to_string);
        let g = *index.entry(canonical).or_insert_with(|| {
            groups.push((op.key.clone(), Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(i);
    }
    groups
}

/// Register values as small integers; 0 is `null`, the initial value.
struct Interner {
    ids: HashMap<String, u32>,
    values: Vec<Value>,
}

impl Interner {
    fn new() -> Self {
        Interner {
            ids: HashMap::from([(Value::Null.to_string(), 0)]),
            values: vec![Value::Null],
        }
    }

    fn intern(&mut self, value: &Value) -> u32 {
        // serde_json's maps are sorted, so equal values print equally.
        let text = value.to_string();
        let next = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct values");
        let id = *self.ids.entry(text).or_insert(next);
        if id == next {
            self.values.push(value.clone());
        }
        assert!(
            id < u32::MAX >> 1,
            "values must fit beside the search's flag bit"
        );
        id
    }
}

/// One key's operations, ready for the search.
struct Problem {
    ops: Vec<Op>,
    /// For each search operation, its index among all operations.
    source: Vec<usize>,
    values: Vec<Value>,
}

impl Problem {
    fn build(
        model: Model,
        operations: &[Operation],
        members: &[usize],
    ) -> Result<Self, CheckError> {
        let mut interner = Interner::new();
        let mut candidates: Vec<(usize, Kind)> = Vec::new();
        for &i in members {
            let op = &operations[i];
            let unsupported = || CheckError::Unsupported {
                line: op.invoke.line,
                f: op.f.clone(),
                model,
            };
            let kind = match &op.f {
                F::Read => Kind::Read(interner.intern(&op.value)),
                F::Write => Kind::Write(interner.intern(&op.value)),
                F::Cas if model == Model::CasRegister => match &op.value {
                    Value::Array(pair) if pair.len() == 2 => {
                        Kind::Cas(interner.intern(&pair[0]), interner.intern(&pair[1]))
                    }
                    other => {
                        return Err(CheckError::MalformedCas {
                            line: op.invoke.line,
                            value: other.clone(),
                        });
                    }
                },
                F::Cas | F::Other(_) => return Err(unsupported()),
            };
            let happened = match op.outcome {
                Outcome::Ok => true,
                Outcome::Info => !matches!(kind, Kind::Read(_)),
                Outcome::Fail => false,
            };
            if happened {
                candidates.push((i, kind));
            }
        }
        let mut observed = HashSet::new();
        for &(i, kind) in &candidates {
            match kind {
                Kind::Read(v) if operations[i].outcome == Outcome::Ok => {
                    observed.insert(v);
                }
                Kind::Cas(expected, _) => {
                    observed.insert(expected);
                }
                Kind::Read(_) | Kind::Write(_) => {}
            }
        }
        let mut problem = Problem {
            ops: Vec::with_capacity(candidates.len()),
            source: Vec::with_capacity(candidates.len()),
            values: Vec::new(),
        };
        for (i, kind) in candidates {
            let op = &operations[i];
            let definite = op.outcome == Outcome::Ok;
            let leaves = match kind {
                Kind::Write(v) | Kind::Cas(_, v) => v,
                Kind::Read(v) => v,
            };
            if !definite && !observed.contains(&leaves) {
                continue;
            }
            problem.ops.push(Op {
                kind,
                call: op.invoke.index,
                ret: if definite {
                    Some(op.complete.expect("ok operations have completions").index)
                } else {
                    None
                },
            });
            problem.source.push(i);
        }
        problem.values = interner.values;
        Ok(problem)
    }

    /// The earliest-completing operation that observes a value (other than the initial `null`)
    /// that no write or cas that may have happened, invoked before the observer completed,
    /// produces. Such an operation can never be placed, and finding it needs no search, which
    /// for a failing history must otherwise exhaust every order of the prefix.
    fn unwritable(&self) -> Option<usize> {
        let mut first_producer: HashMap<u32, usize> = HashMap::from([(0, 0)]);
        for op in &self.ops {
            if let Kind::Write(v) | Kind::Cas(_, v) = op.kind {
                let call = first_producer.entry(v).or_insert(op.call);
                *call = (*call).min(op.call);
            }
        }
        (0..self.ops.len())
            .filter(|&i| {
                let op = &self.ops[i];
                let (Kind::Read(v) | Kind::Cas(v, _)) = op.kind else {
                    return false;
                };
                let Some(ret) = op.ret else { return false };
                v != 0 && first_producer.get(&v).is_none_or(|&call| call > ret)
            })
            .min_by_key(|&i| self.ops[i].ret)
    }

    fn explain(
        &self,
        key: Option<Value>,
        operations: &[Operation],
        stuck: &search::Stuck,
    ) -> Violation {
        let op_of = |i: usize| operations[self.source[i]].clone();
        let blocked = &self.ops[stuck.op];
        let end = blocked.ret.expect("only definite operations block");
        let open: Vec<usize> = (0..self.ops.len())
            .filter(|&i| {
                let op = &self.ops[i];
                i != stuck.op && op.call < end && op.ret.is_none_or(|r| r > end)
            })
            .collect();
        let open = open[open.len().saturating_sub(MAX_OPEN_REPORTED)..]
            .iter()
            .map(|&i| op_of(i))
            .collect();
        Violation {
            key,
            cause: Cause::NoOrder,
            op: op_of(stuck.op),
            states: stuck
                .states
                .iter()
                .map(|&v| self.values[v as usize].clone())
                .collect(),
            open,
            path: stuck.tail.iter().map(|&i| op_of(i)).collect(),
            path_len: stuck.depth,
        }
    }
}
