//! One line of a history: an event, its type, its process and its function.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ErrorCode;

/// What an event says about its operation: it started, or how it ended.
///
/// ```
/// use avout_check::history::EventType;
/// let t: EventType = serde_json::from_str("\"info\"").unwrap();
/// assert_eq!(t, EventType::Info);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventType {
    /// The operation started.
    Invoke,
    /// The operation took effect.
    Ok,
    /// The operation definitely did not take effect.
    Fail,
    /// The operation may or may not have taken effect.
    Info,
}

/// Who performed an event: a client process, or a named actor such as Jepsen's nemesis.
///
/// ```
/// use avout_check::history::Process;
/// assert_eq!(serde_json::from_str::<Process>("7").unwrap(), Process::Client(7));
/// assert_eq!(
///     serde_json::from_str::<Process>("\"nemesis\"").unwrap(),
///     Process::Named("nemesis".into())
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Process {
    /// A client process; only these perform [`Operation`](super::Operation)s.
    Client(u64),
    /// Anything else (Jepsen's `"nemesis"`); its events are not client operations.
    Named(String),
}

impl fmt::Display for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Process::Client(p) => write!(f, "{p}"),
            Process::Named(name) => f.write_str(name),
        }
    }
}

/// The function an operation performs.
///
/// ```
/// use avout_check::history::F;
/// assert_eq!(serde_json::from_str::<F>("\"cas\"").unwrap(), F::Cas);
/// assert_eq!(serde_json::from_str::<F>("\"append\"").unwrap(), F::Other("append".into()));
/// assert_eq!(F::Write.as_str(), "write");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum F {
    /// Read the register.
    Read,
    /// Overwrite the register.
    Write,
    /// Compare-and-set: `[expected, new]`.
    Cas,
    /// Any other function, kept by name.
    Other(String),
}

impl F {
    /// The name as it appears in the `f` field.
    ///
    /// ```
    /// assert_eq!(avout_check::history::F::Read.as_str(), "read");
    /// ```
    pub fn as_str(&self) -> &str {
        match self {
            F::Read => "read",
            F::Write => "write",
            F::Cas => "cas",
            F::Other(name) => name,
        }
    }
}

impl From<String> for F {
    fn from(name: String) -> Self {
        match name.as_str() {
            "read" => F::Read,
            "write" => F::Write,
            "cas" => F::Cas,
            _ => F::Other(name),
        }
    }
}

impl From<F> for String {
    fn from(f: F) -> Self {
        match f {
            F::Other(name) => name,
            other => other.as_str().to_owned(),
        }
    }
}

impl fmt::Display for F {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of a history.
///
/// ```
/// use avout_check::history::{Event, EventType, F, Process};
/// let e = Event::invoke(3, F::Write, 5.into()).with_key("x".into()).with_time(10);
/// let line = serde_json::to_string(&e).unwrap();
/// assert_eq!(
///     line,
///     r#"{"type":"invoke","process":3,"f":"write","value":5,"key":"x","time":10}"#
/// );
/// let back: Event = serde_json::from_str(&line).unwrap();
/// assert_eq!(back, e);
/// assert_eq!(back.kind, EventType::Invoke);
/// assert_eq!(back.process, Process::Client(3));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// `invoke`, `ok`, `fail` or `info` (the JSON field is `type`).
    #[serde(rename = "type")]
    pub kind: EventType,
    /// Who performed it.
    pub process: Process,
    /// What it does.
    pub f: F,
    /// Its argument or result; `null` when absent.
    #[serde(default)]
    pub value: Value,
    /// The register it addresses, in keyed histories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<Value>,
    /// When it happened, in nanoseconds; informational.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<u64>,
    /// Its index in the history, as Jepsen numbers events; informational.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// For a failed completion, Maelstrom's error code: it decides whether the operation took
    /// effect ([`ErrorCode::is_definite`]), whatever `type` says. Read leniently: an `error`
    /// that is no Maelstrom code (Jepsen's `"net-timeout"`) is `None`.
    #[serde(
        default,
        deserialize_with = "super::code::lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub error: Option<ErrorCode>,
}

impl Event {
    /// An event of `kind` by client `process`, without key, time or index.
    ///
    /// ```
    /// use avout_check::history::{Event, EventType, F};
    /// let e = Event::new(EventType::Fail, 1, F::Cas, serde_json::json!([1, 2]));
    /// assert_eq!(e.kind, EventType::Fail);
    /// ```
    pub fn new(kind: EventType, process: u64, f: F, value: Value) -> Self {
        Event {
            kind,
            process: Process::Client(process),
            f,
            value,
            key: None,
            time: None,
            index: None,
            error: None,
        }
    }

    /// An invocation.
    ///
    /// ```
    /// use avout_check::history::{Event, F};
    /// let e = Event::invoke(0, F::Read, serde_json::Value::Null);
    /// assert!(e.value.is_null());
    /// ```
    pub fn invoke(process: u64, f: F, value: Value) -> Self {
        Event::new(EventType::Invoke, process, f, value)
    }

    /// A completion that took effect.
    ///
    /// ```
    /// use avout_check::history::{Event, EventType, F};
    /// assert_eq!(Event::ok(0, F::Read, 4.into()).kind, EventType::Ok);
    /// ```
    pub fn ok(process: u64, f: F, value: Value) -> Self {
        Event::new(EventType::Ok, process, f, value)
    }

    /// A completion that definitely did not take effect.
    ///
    /// ```
    /// use avout_check::history::{Event, EventType, F};
    /// assert_eq!(Event::fail(0, F::Cas, serde_json::json!([1, 2])).kind, EventType::Fail);
    /// ```
    pub fn fail(process: u64, f: F, value: Value) -> Self {
        Event::new(EventType::Fail, process, f, value)
    }

    /// A completion whose effect is unknown.
    ///
    /// ```
    /// use avout_check::history::{Event, EventType, F};
    /// assert_eq!(Event::info(0, F::Write, 1.into()).kind, EventType::Info);
    /// ```
    pub fn info(process: u64, f: F, value: Value) -> Self {
        Event::new(EventType::Info, process, f, value)
    }

    /// The same event, addressing register `key`.
    ///
    /// ```
    /// use avout_check::history::{Event, F};
    /// let e = Event::invoke(0, F::Write, 1.into()).with_key(7.into());
    /// assert_eq!(e.key, Some(7.into()));
    /// ```
    pub fn with_key(mut self, key: Value) -> Self {
        self.key = Some(key);
        self
    }

    /// The same event, failed with Maelstrom's error `code`.
    ///
    /// ```
    /// use avout_check::history::{ErrorCode, Event, F};
    /// let e = Event::fail(0, F::Write, 1.into()).with_error(ErrorCode::TEMPORARILY_UNAVAILABLE);
    /// assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"type":"fail","process":0,"f":"write","value":1,"error":11}"#);
    /// ```
    pub fn with_error(mut self, code: ErrorCode) -> Self {
        self.error = Some(code);
        self
    }

    /// The same event, stamped with `time` nanoseconds.
    ///
    /// ```
    /// use avout_check::history::{Event, F};
    /// assert_eq!(Event::invoke(0, F::Write, 1.into()).with_time(5).time, Some(5));
    /// ```
    pub fn with_time(mut self, time: u64) -> Self {
        self.time = Some(time);
        self
    }
}
