//! The [`Checker`] trait every checker implements, the one error a checker refuses a history
//! with ([`CheckError`]), and the checkers by name ([`Checkers`]), which `avout check --model
//! NAME` and the scenarios that bind checkers go through alike.

use std::path::Path;

use serde_json::Value;

use crate::history::{F, History, HistoryError, Keys};
use crate::list_append::Consistency;
use crate::verdict::{Anomaly, Verdict};

/// Judges a history: synchronous, pure, and the same verdict for the same history.
///
/// ```
/// use avout_check::{Checker, Checkers, Options};
/// use avout_check::history::{Event, History, F};
/// // Process 0 writes 1; after that completes, process 1 still reads null: a stale read.
/// let h: History = [
///     Event::invoke(0, F::Write, 1.into()),
///     Event::ok(0, F::Write, 1.into()),
///     Event::invoke(1, F::Read, serde_json::Value::Null),
///     Event::ok(1, F::Read, serde_json::Value::Null),
/// ]
/// .into_iter()
/// .collect();
/// let checker = Checkers::builtins().get("register", &Options::default()).unwrap();
/// let verdict = checker.check(&h).unwrap();
/// assert!(!verdict.is_valid());
/// assert_eq!(verdict.kinds(), vec!["not-linearizable"]);
/// ```
pub trait Checker: Send + Sync {
    /// What it holds a history to, as its verdicts name it: `bank (total 100, no negative
    /// balance)`.
    fn name(&self) -> String;

    /// Judges `history`; `Err` when the history is not one this checker reads (an operation
    /// it does not know, a value of the wrong shape), which is not a verdict on it.
    fn check(&self, history: &History) -> Result<Verdict, CheckError>;

    /// Judges the history in the file at `path`, read as [`History::load`] reads it (JSON
    /// lines or EDN). The same verdict and the same errors as loading it and calling
    /// [`check`](Checker::check); a checker that can read a file without holding its events
    /// as JSON overrides it (list-append: a fraction of the memory, the lines parsed on every
    /// core).
    ///
    /// ```
    /// use avout_check::{Checker, Checkers, Options};
    /// use avout_check::history::History;
    /// let path = std::env::temp_dir().join(format!("avout-doc-check-{}.jsonl", std::process::id()));
    /// std::fs::write(
    ///     &path,
    ///     concat!(
    ///         r#"{"type":"invoke","process":0,"f":"txn","value":[["append",1,1]]}"#, "\n",
    ///         r#"{"type":"ok","process":0,"f":"txn","value":[["append",1,1]]}"#, "\n",
    ///         r#"{"type":"invoke","process":1,"f":"txn","value":[["r",1,null]]}"#, "\n",
    ///         r#"{"type":"ok","process":1,"f":"txn","value":[["r",1,[]]]}"#, "\n",
    ///     ),
    /// )
    /// .unwrap();
    /// let checker = Checkers::builtins().get("list-append", &Options::default()).unwrap();
    /// let streamed = checker.check_file(&path).unwrap();
    /// let loaded = checker.check(&History::load(&path).unwrap()).unwrap();
    /// assert_eq!(streamed.kinds(), vec!["G-single-realtime"]);
    /// assert_eq!(streamed.report(), loaded.report());
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    fn check_file(&self, path: &Path) -> Result<Verdict, CheckError> {
        self.check(&History::load(path)?)
    }

    /// [`check`](Checker::check), for a caller that must have a verdict whatever the history:
    /// a history this checker refuses is judged invalid, one anomaly of kind `unjudged`
    /// saying why.
    ///
    /// ```
    /// use avout_check::{Checker, Checkers, Options};
    /// use avout_check::history::{Event, History, F};
    /// let h: History = [Event::invoke(0, F::Other("txn".into()), serde_json::json!([]))]
    ///     .into_iter()
    ///     .collect();
    /// let v = Checkers::builtins().get("mutex", &Options::default()).unwrap().judge(&h);
    /// assert_eq!(v.kinds(), vec!["unjudged"]);
    /// assert!(v.anomalies[0].message.starts_with("the checker could not judge the history: line 1"));
    /// ```
    fn judge(&self, history: &History) -> Verdict {
        self.check(history).unwrap_or_else(|e| {
            Verdict::new(
                self.name(),
                "",
                vec![Anomaly::new(
                    "unjudged",
                    format!("the checker could not judge the history: {e}"),
                )],
            )
        })
    }
}

/// Why a checker could not judge a history (as opposed to finding it wrong).
///
/// ```
/// use avout_check::{CheckError, Checkers, Options};
/// use avout_check::history::{Event, History, F};
/// let h: History = [Event::invoke(0, F::Cas, serde_json::json!([1, 2]))].into_iter().collect();
/// let register = Checkers::builtins().get("register", &Options::default()).unwrap();
/// let err = register.check(&h).unwrap_err();
/// assert!(matches!(err, CheckError::Unsupported { line: 1, .. }));
/// assert_eq!(err.to_string(), "line 1: cas is not an operation of the register model (read, write)");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The history could not be read or paired.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// An operation the checker's model does not have.
    #[error("line {line}: {f} is not an operation of the {model} model ({known})")]
    Unsupported {
        /// The invocation's line.
        line: usize,
        /// The operation.
        f: F,
        /// The model.
        model: &'static str,
        /// The operations it has.
        known: &'static str,
    },
    /// A value without the shape its operation needs.
    #[error("line {line}: {value} is not {expected}")]
    Malformed {
        /// The line of the event carrying it.
        line: usize,
        /// The value found.
        value: Value,
        /// What was expected there.
        expected: String,
    },
    /// The same value appended to the same key twice: versions could not be told apart.
    #[error("lines {first_line} and {line}: {element} appended to key {key} twice")]
    DuplicateAppend {
        /// The key.
        key: Value,
        /// The value.
        element: Value,
        /// The first append's invocation line.
        first_line: usize,
        /// The second's.
        line: usize,
    },
    /// The same value written to the same register twice: versions could not be told apart.
    #[error("lines {first_line} and {line}: {value} written to key {key} twice")]
    DuplicateWrite {
        /// The key.
        key: Value,
        /// The value.
        value: Value,
        /// The first write's invocation line.
        first_line: usize,
        /// The second's.
        line: usize,
    },
}

impl CheckError {
    /// A value at `line` that is not `expected`.
    pub(crate) fn malformed(line: usize, value: &Value, expected: impl Into<String>) -> Self {
        CheckError::Malformed {
            line,
            value: value.clone(),
            expected: expected.into(),
        }
    }
}

/// What a checker is told besides the history, as `avout check` takes it; each checker reads
/// the options that concern it and ignores the rest.
///
/// ```
/// use avout_check::{Checkers, Options};
/// let options = Options { total: Some(100), ..Options::default() };
/// let bank = Checkers::builtins().get("bank", &options).unwrap();
/// assert_eq!(bank.name(), "bank (total 100, no negative balance)");
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// register, cas-register: where the history keeps its keys.
    pub keys: Keys,
    /// list-append, rw-register: the consistency model.
    pub consistency: Consistency,
    /// list-append, rw-register: write skew (G2-item) is no anomaly (snapshot isolation).
    pub allow_write_skew: bool,
    /// bank: the total every read must sum to (`None`: the first read's sum).
    pub total: Option<i64>,
    /// bank: the accounts every read must show.
    pub accounts: Option<Vec<String>>,
    /// bank: negative balances are no anomaly.
    pub allow_negative: bool,
    /// sessions: how many clients ran (processes are numbered round them).
    pub clients: usize,
}

/// A checker that reads any history and never refuses one: a name and a rule. Operations it
/// does not know, and values it cannot read, it leaves out.
///
/// ```
/// use avout_check::Checker;
/// use avout_check::recipes::counter;
/// assert!(counter::CHECKER.check(&Default::default()).unwrap().is_valid());
/// assert_eq!(counter::CHECKER.name(), "counter");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    name: &'static str,
    judge: fn(&History) -> Vec<Anomaly>,
}

impl Rule {
    /// The checker `name` whose anomalies `judge` finds.
    pub const fn new(name: &'static str, judge: fn(&History) -> Vec<Anomaly>) -> Self {
        Rule { name, judge }
    }
}

impl Checker for Rule {
    fn name(&self) -> String {
        self.name.to_owned()
    }

    fn check(&self, history: &History) -> Result<Verdict, CheckError> {
        Ok(Verdict::new(self.name, "", (self.judge)(history)))
    }
}

/// Makes a checker from its options.
type Make = fn(&Options) -> Box<dyn Checker>;

/// A name that is not a checker's.
///
/// ```
/// let Err(err) = avout_check::Checkers::builtins().get("queue-of-sorts", &Default::default())
/// else {
///     panic!("no checker of that name")
/// };
/// assert!(err.to_string().contains("known: register, cas-register"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown checker {name:?}; known: {known}")]
pub struct UnknownChecker {
    /// The name asked for.
    pub name: String,
    /// The names there are, comma-separated.
    pub known: String,
}

/// Checkers by name: the one list `avout check --model NAME` offers and scenarios bind from.
///
/// ```
/// let names = avout_check::Checkers::builtins().names();
/// assert!(names.contains(&"list-append") && names.contains(&"counter"));
/// ```
#[derive(Clone, Debug)]
pub struct Checkers {
    entries: Vec<(&'static str, &'static str, Make)>,
}

impl Checkers {
    /// No checkers.
    pub fn empty() -> Self {
        Checkers {
            entries: Vec::new(),
        }
    }

    /// avout's own checkers.
    pub fn builtins() -> Self {
        crate::builtin_checkers(Checkers::empty())
    }

    /// The same, with the checker `name` (about it: `about`) made by `make`.
    ///
    /// # Panics
    ///
    /// If a checker of that name is there already.
    pub fn with(mut self, name: &'static str, about: &'static str, make: Make) -> Self {
        assert!(
            self.entries.iter().all(|(n, _, _)| *n != name),
            "two checkers are named {name:?}"
        );
        self.entries.push((name, about, make));
        self
    }

    /// The names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|(n, _, _)| *n).collect()
    }

    /// One line about the checker `name`.
    ///
    /// ```
    /// assert!(avout_check::Checkers::builtins().about("bank").unwrap().contains("total"));
    /// ```
    pub fn about(&self, name: &str) -> Option<&'static str> {
        self.entries
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, a, _)| *a)
    }

    /// The checker `name`, told `options`.
    pub fn get(&self, name: &str, options: &Options) -> Result<Box<dyn Checker>, UnknownChecker> {
        match self.entries.iter().find(|(n, _, _)| *n == name) {
            Some((_, _, make)) => Ok(make(options)),
            None => Err(UnknownChecker {
                name: name.to_owned(),
                known: self.names().join(", "),
            }),
        }
    }
}
