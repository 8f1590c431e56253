//! Histories of client operations, in Jepsen's JSON-lines format.
//!
//! A history is a sequence of *events*, one JSON object per line, in the order they happened:
//!
//! ```text
//! {"type":"invoke","process":0,"f":"write","value":3,"time":1000}
//! {"type":"invoke","process":1,"f":"read","value":null,"time":1500}
//! {"type":"ok","process":0,"f":"write","value":3,"time":2000}
//! {"type":"ok","process":1,"f":"read","value":3,"time":2600}
//! {"type":"invoke","process":2,"f":"cas","value":[3,4],"time":3000}
//! {"type":"info","process":2,"f":"cas","value":[3,4],"time":9000}
//! ```
//!
//! Fields:
//! - `type`: `invoke` starts an operation; its completion is `ok` (it took effect, and for a read
//!   the completion carries the value read), `fail` (it definitely did not take effect) or `info`
//!   (it may or may not have taken effect; the client does not know).
//! - `process`: the client, an integer. Each process has at most one operation outstanding, so a
//!   completion belongs to the last invocation of its process. A non-integer process (Jepsen's
//!   `"nemesis"`) is not a client: its events are kept in the [`History`] but are not
//!   [`Operation`]s.
//! - `f`: `read`, `write`, `cas`, or any other name (kept as [`F::Other`]; the register checkers
//!   reject it).
//! - `value`: for a read, `null` on the invocation and the value read on an `ok` completion; for a
//!   write, the value written; for a cas, `[expected, new]`.
//! - `time` (nanoseconds) and `index`: optional and informational; the order of the lines is the
//!   order of the events.
//! - `error`: optional, on a `fail` or `info` completion: Maelstrom's error code (see
//!   [`code`]), which decides whether the operation took effect: 0 and 13 (and codes Maelstrom
//!   does not name) make it `info`, every other code `fail`, whatever `type` says. An `ok`
//!   completion with an error is malformed ([`HistoryError::OkWithError`]).
//! - `key`: optional, for keyed histories (Maelstrom's lin-kv, Jepsen's independent checker), where
//!   each key is a separate register. Events without a key belong to the one unnamed register.
//!   Histories that instead carry the key inside the value, as a `[key, value]` tuple, are read
//!   with [`Keys::Tuple`]; the format cannot tell the two apart on its own, because a cas value is
//!   a pair too.
//!
//! Unknown fields are ignored on reading and not written back. Blank lines are skipped; line
//! numbers in errors and reports count every line of the file, from 1.
//!
//! [`History::operations`] pairs invocations with completions. An invocation that never completes
//! counts as `info`: it stays concurrent with everything after it, to the end of the history.
//!
//! Jepsen's own EDN format (`{:type :invoke, :process 0, :f :txn, :value [[:append 1 2]]}`, one
//! map a line or one vector of maps) reads into the same events: see [`edn`].
//! [`History::load`] takes either: a file named `*.edn` is EDN, and so is one whose text starts
//! like EDN ([`edn::looks_like_edn`]: `[`, `#`, `;` or a map whose first key is a keyword);
//! anything else is JSON lines.

pub mod code;
pub mod edn;
mod error;
mod event;
mod pairing;
mod pairs;

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use serde_json::Value;

pub use code::ErrorCode;
pub use edn::EdnError;
pub use error::HistoryError;
pub use event::{Event, EventType, F, Process};
pub(crate) use pairing::{Pairing, outcome};
pub use pairs::{Pair, pairs};

/// Where an event sits: its position among the history's events and its line in the file.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// let h: History = [Event::invoke(0, F::Write, 1.into())].into_iter().collect();
/// let ops = h.operations(Default::default()).unwrap();
/// assert_eq!(ops[0].invoke.index, 0);
/// assert_eq!(ops[0].invoke.line, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    /// Index among the history's events, from 0.
    pub index: usize,
    /// Line in the file, from 1 (for a history built in memory, `index + 1`).
    pub line: usize,
}

/// How an operation ended.
///
/// ```
/// use avout_check::history::Outcome;
/// assert!(Outcome::Info.is_indeterminate());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It took effect.
    Ok,
    /// It definitely did not take effect.
    Fail,
    /// It may or may not have taken effect: an `info` completion, or none at all.
    Info,
}

impl Outcome {
    /// Whether the operation may or may not have taken effect.
    ///
    /// ```
    /// assert!(!avout_check::history::Outcome::Ok.is_indeterminate());
    /// ```
    pub fn is_indeterminate(self) -> bool {
        self == Outcome::Info
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Ok => "ok",
            Outcome::Fail => "fail",
            Outcome::Info => "info",
        })
    }
}

/// Where a keyed history keeps its keys.
///
/// ```
/// use avout_check::history::Keys;
/// assert_eq!(Keys::default(), Keys::Field);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Keys {
    /// In the `key` field; events without one address the one unnamed register.
    #[default]
    Field,
    /// In the value, as a `[key, value]` tuple on every client event (Jepsen's independent
    /// checker): `[k, null]` for an invoked read, `[k, [expected, new]]` for a cas. A completion
    /// whose value is `null` takes its invocation's key.
    Tuple,
}

/// An invocation paired with its completion.
///
/// ```
/// use avout_check::history::{Event, History, Outcome, F};
/// let h: History = [
///     Event::invoke(0, F::Read, serde_json::Value::Null),
///     Event::ok(0, F::Read, 2.into()),
/// ]
/// .into_iter()
/// .collect();
/// let op = &h.operations(Default::default()).unwrap()[0];
/// assert_eq!((op.f.clone(), op.value.clone(), op.outcome), (F::Read, 2.into(), Outcome::Ok));
/// assert_eq!(op.complete.unwrap().line, 2);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    /// The client that performed it.
    pub process: u64,
    /// What it does.
    pub f: F,
    /// The register it addresses; `None` for the one unnamed register.
    pub key: Option<Value>,
    /// For a read, the value read (`null` unless it completed `ok`); for a write or cas, the
    /// invoked value (the completion's if the invocation had none).
    pub value: Value,
    /// How it ended.
    pub outcome: Outcome,
    /// Its invocation.
    pub invoke: Position,
    /// Its completion; `None` if it never completed.
    pub complete: Option<Position>,
    /// The Maelstrom error code its completion carried, if any.
    pub error: Option<ErrorCode>,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "process {} {} {} {}",
            self.process, self.f, self.value, self.outcome
        )?;
        match self.complete {
            Some(end) => write!(f, " (lines {}-{})", self.invoke.line, end.line),
            None => write!(f, " (line {}, never completed)", self.invoke.line),
        }
    }
}

/// A history: events in the order they happened, with their line numbers.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// let mut h = History::new();
/// h.push(Event::invoke(0, F::Write, 1.into()));
/// h.push(Event::ok(0, F::Write, 1.into()));
/// let mut out = Vec::new();
/// h.write_to(&mut out).unwrap();
/// assert_eq!(History::from_reader(out.as_slice()).unwrap(), h);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    events: Vec<Event>,
    lines: Vec<usize>,
}

impl History {
    /// An empty history.
    ///
    /// ```
    /// assert!(avout_check::history::History::new().is_empty());
    /// ```
    pub fn new() -> Self {
        History::default()
    }

    /// Appends an event, on the line after the last one.
    ///
    /// ```
    /// use avout_check::history::{Event, History, F};
    /// let mut h = History::new();
    /// h.push(Event::invoke(0, F::Read, serde_json::Value::Null));
    /// assert_eq!(h.len(), 1);
    /// ```
    pub fn push(&mut self, event: Event) {
        let line = self.lines.last().map_or(1, |l| l + 1);
        self.events.push(event);
        self.lines.push(line);
    }

    /// The events, in order.
    ///
    /// ```
    /// use avout_check::history::{Event, History, F};
    /// let h: History = [Event::invoke(0, F::Write, 1.into())].into_iter().collect();
    /// assert_eq!(h.events()[0].f, F::Write);
    /// ```
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Where event `index` sits.
    ///
    /// # Panics
    /// If `index` is out of range.
    ///
    /// ```
    /// use avout_check::history::History;
    /// let h = History::from_reader(
    ///     "\n{\"type\":\"invoke\",\"process\":0,\"f\":\"read\",\"value\":null}\n".as_bytes(),
    /// )
    /// .unwrap();
    /// assert_eq!(h.position(0).line, 2);
    /// ```
    pub fn position(&self, index: usize) -> Position {
        Position {
            index,
            line: self.lines[index],
        }
    }

    /// The number of events.
    ///
    /// ```
    /// assert_eq!(avout_check::history::History::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether there are no events.
    ///
    /// ```
    /// assert!(avout_check::history::History::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Reads JSON lines, one event a line; blank lines are skipped.
    ///
    /// ```
    /// use avout_check::history::{History, HistoryError};
    /// let text = "{\"type\":\"invoke\",\"process\":0,\"f\":\"read\",\"value\":null}\nnot json\n";
    /// match History::from_reader(text.as_bytes()) {
    ///     Err(HistoryError::Parse { line, .. }) => assert_eq!(line, 2),
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn from_reader<R: BufRead>(reader: R) -> Result<Self, HistoryError> {
        let mut history = History::new();
        for (i, line) in reader.lines().enumerate() {
            let number = i + 1;
            let line = line.map_err(|source| HistoryError::Read {
                line: number,
                source,
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let event = serde_json::from_str(&line).map_err(|source| HistoryError::Parse {
                line: number,
                source,
            })?;
            history.events.push(event);
            history.lines.push(number);
        }
        Ok(history)
    }

    /// Reads a JSON-lines file.
    ///
    /// ```
    /// use avout_check::history::{History, HistoryError};
    /// let err = History::read_file("/nonexistent/history.jsonl").unwrap_err();
    /// assert!(matches!(err, HistoryError::Open { .. }));
    /// ```
    pub fn read_file(path: impl AsRef<Path>) -> Result<Self, HistoryError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| HistoryError::Open {
            path: path.to_owned(),
            source,
        })?;
        History::from_reader(BufReader::new(file))
    }

    /// Writes the events as JSON lines.
    ///
    /// ```
    /// use avout_check::history::{Event, History, F};
    /// let h: History = [Event::invoke(1, F::Cas, serde_json::json!([1, 2]))].into_iter().collect();
    /// let mut out = Vec::new();
    /// h.write_to(&mut out).unwrap();
    /// assert_eq!(
    ///     String::from_utf8(out).unwrap(),
    ///     "{\"type\":\"invoke\",\"process\":1,\"f\":\"cas\",\"value\":[1,2]}\n"
    /// );
    /// ```
    pub fn write_to<W: Write>(&self, mut writer: W) -> Result<(), HistoryError> {
        for event in &self.events {
            serde_json::to_writer(&mut writer, event)
                .map_err(|e| HistoryError::Write(io::Error::other(e)))?;
            writer.write_all(b"\n").map_err(HistoryError::Write)?;
        }
        writer.flush().map_err(HistoryError::Write)
    }

    /// Writes the events to a JSON-lines file, replacing it.
    ///
    /// ```
    /// use avout_check::history::{Event, History, F};
    /// let h: History = [Event::invoke(0, F::Write, 1.into())].into_iter().collect();
    /// let path = std::env::temp_dir().join(format!("avout-doc-{}.jsonl", std::process::id()));
    /// h.write_file(&path).unwrap();
    /// assert_eq!(History::read_file(&path).unwrap(), h);
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<(), HistoryError> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|source| HistoryError::Open {
            path: path.to_owned(),
            source,
        })?;
        self.write_to(BufWriter::new(file))
    }

    /// Pairs each client invocation with its completion, in order of invocation.
    ///
    /// Events of named processes are skipped. An invocation never completed is an
    /// [`Outcome::Info`] operation with no completion.
    ///
    /// ```
    /// use avout_check::history::{Event, History, HistoryError, Keys, Outcome, F};
    /// let h: History = [
    ///     Event::invoke(0, F::Write, serde_json::json!(["a", 1])),
    ///     Event::invoke(1, F::Read, serde_json::json!(["b", null])),
    ///     Event::ok(1, F::Read, serde_json::json!(["b", 5])),
    /// ]
    /// .into_iter()
    /// .collect();
    /// let ops = h.operations(Keys::Tuple).unwrap();
    /// assert_eq!(ops[0].key, Some("a".into()));
    /// assert_eq!(ops[0].outcome, Outcome::Info);
    /// assert_eq!((ops[1].key.clone(), ops[1].value.clone()), (Some("b".into()), 5.into()));
    ///
    /// let twice: History = [Event::invoke(0, F::Write, 1.into()), Event::invoke(0, F::Write, 2.into())]
    ///     .into_iter()
    ///     .collect();
    /// assert!(matches!(
    ///     twice.operations(Keys::Field),
    ///     Err(HistoryError::AlreadyPending { line: 2, process: 0, pending_line: 1 })
    /// ));
    /// ```
    pub fn operations(&self, keys: Keys) -> Result<Vec<Operation>, HistoryError> {
        let mut ops: Vec<Operation> = Vec::new();
        let mut pairing = pairing::Pairing::default();
        for (index, event) in self.events.iter().enumerate() {
            let Process::Client(process) = event.process else {
                continue;
            };
            let here = self.position(index);
            let (key, value) = split_key(event, keys, here.line)?;
            if event.kind == EventType::Invoke {
                pairing.invoke(process, ops.len(), here, |open| ops[open].invoke.line)?;
                ops.push(Operation {
                    process,
                    f: event.f.clone(),
                    key,
                    value,
                    outcome: Outcome::Info,
                    invoke: here,
                    complete: None,
                    error: None,
                });
                continue;
            }
            let op = &mut ops[pairing.complete(process, here)?];
            if op.f != event.f {
                return Err(HistoryError::MismatchedF {
                    line: here.line,
                    invoke_line: op.invoke.line,
                    invoked: op.f.clone(),
                    completed: event.f.clone(),
                });
            }
            op.outcome = pairing::outcome(event.kind, event.error, here.line)?;
            op.error = event.error;
            op.complete = Some(here);
            if op.key.is_none() {
                op.key = key;
            }
            // A read's result is on its completion; a write's or cas's argument is on its
            // invocation, but some clients only record it on the completion.
            if op.f == F::Read {
                if op.outcome == Outcome::Ok {
                    op.value = value;
                }
            } else if op.value.is_null() {
                op.value = value;
            }
        }
        Ok(ops)
    }
}

fn split_key(
    event: &Event,
    keys: Keys,
    line: usize,
) -> Result<(Option<Value>, Value), HistoryError> {
    match keys {
        Keys::Field => Ok((event.key.clone(), event.value.clone())),
        Keys::Tuple => match &event.value {
            Value::Array(pair) if pair.len() == 2 => Ok((Some(pair[0].clone()), pair[1].clone())),
            // Some clients leave a completion's value out; the invocation has the key.
            Value::Null if event.kind != EventType::Invoke => Ok((None, Value::Null)),
            other => Err(HistoryError::NotKeyed {
                line,
                value: other.clone(),
            }),
        },
    }
}

impl FromIterator<Event> for History {
    fn from_iter<I: IntoIterator<Item = Event>>(iter: I) -> Self {
        let mut history = History::new();
        for event in iter {
            history.push(event);
        }
        history
    }
}

impl Extend<Event> for History {
    fn extend<I: IntoIterator<Item = Event>>(&mut self, iter: I) {
        for event in iter {
            self.push(event);
        }
    }
}
