//! Histories in Jepsen's own format: EDN, as Jepsen, Knossos and Elle write them.
//!
//! A file holds events one map after another (Jepsen's `history.edn`: one map a line), or a
//! single vector or list of maps (Knossos's and Elle's test histories):
//!
//! ```text
//! {:type :invoke, :f :txn, :value [[:append 9 1] [:r 8 nil]], :process 0, :time 1000, :index 0}
//! {:type :ok, :f :txn, :value [[:append 9 1] [:r 8 [1 2]]], :process 0, :time 2000, :index 1}
//! {:type :info, :f :start-partition, :value nil, :process :nemesis, :index 2}
//! ```
//!
//! Each map becomes an [`Event`] exactly as its JSON-lines twin would:
//! - `:type` is `:invoke`, `:ok`, `:fail` or `:info`.
//! - `:process` is a non-negative integer (a client) or any keyword, string or symbol
//!   (`:nemesis`): such events are kept as [`Process::Named`] events, which are not client
//!   operations.
//! - `:f` is a keyword, string or symbol: `:read`, `:write` and `:cas` are the register
//!   functions, anything else is kept by name (`:txn`).
//! - `:value` is any EDN value. Keywords, symbols and strings become JSON strings without their
//!   colon (`[:append :x 1]` reads as `["append","x",1]`), so list-append micro-operations and
//!   Jepsen's `independent` tuples `[k v]` take the shapes the checkers know; vectors, lists and
//!   sets become arrays (sets in EDN's order); maps become objects whose keys are the names of
//!   keyword, string and symbol keys and the JSON text of any other key (`{0 10}` →
//!   `{"0":10}`); `nil` is `null`; a ratio becomes its floating-point value; a tagged value
//!   (`#jepsen.history.Op{…}`, `#inst "…"`) is read as the value it tags.
//! - `:time` and `:index` are optional non-negative integers; `:key` is optional, as in JSON.
//! - `:error` is Maelstrom's error, as a code (`30`), a name (`:txn-conflict`) or Maelstrom's
//!   own `[:txn-conflict "text"]` / `[30 "text"]` (see [`super::code`]); an error Maelstrom
//!   does not name (Jepsen's `[:timeout]` of another client, free text) is ignored, so the
//!   completion's `:type` decides as before.
//!   Every other field is ignored, as the JSON reader ignores unknown fields.
//!
//! Anything else is an [`EdnError`] naming the line (and, for syntax, the column) where it is:
//! text that is not EDN, a top-level form that is not a map, a field missing or of the wrong
//! type, a number JSON cannot hold (a NaN, an infinity, a big integer). Parsing is
//! `clojure-reader`'s; this module walks the top level itself so that every event keeps its line.

use std::fmt;
use std::path::Path;

use clojure_reader::edn::{self, Edn};
use clojure_reader::error::Code;
use serde_json::{Map, Number, Value};

use super::{ErrorCode, Event, EventType, F, History, HistoryError, Process};

/// Why an EDN history could not be read.
///
/// ```
/// use avout_check::history::{EdnError, History, HistoryError};
/// let err = History::from_edn_str("{:type :invoke, :process 0, :f :read, :value nil}\n{:type").unwrap_err();
/// assert!(matches!(err, HistoryError::Edn(EdnError::Syntax { line: 2, .. })), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EdnError {
    /// The text is not EDN.
    #[error("line {line}, column {column}: not EDN: {reason}")]
    Syntax {
        /// The line, from 1.
        line: usize,
        /// The column, from 1, in characters.
        column: usize,
        /// What the reader found wrong.
        reason: String,
    },
    /// The file is not UTF-8 text.
    #[error("line {line}: not UTF-8 text")]
    NotUtf8 {
        /// The line of the first byte that is not.
        line: usize,
    },
    /// A top-level form that is not a map.
    #[error("line {line}: not a history event: {found} is not a map")]
    NotAMap {
        /// The line where the form starts.
        line: usize,
        /// The form, as EDN.
        found: String,
    },
    /// An event without a field it needs.
    #[error("line {line}: not a history event: no {field}")]
    MissingField {
        /// The line where the event starts.
        line: usize,
        /// The field, as a keyword (`:type`).
        field: &'static str,
    },
    /// A field whose value cannot be what the field means.
    #[error("line {line}: not a history event: {field} is {found}, not {expected}")]
    BadField {
        /// The line where the event starts.
        line: usize,
        /// The field, as a keyword.
        field: &'static str,
        /// Its value, as EDN.
        found: String,
        /// What it should be.
        expected: &'static str,
    },
    /// A value JSON cannot hold.
    #[error("line {line}: {found} cannot be held as JSON ({why})")]
    Unrepresentable {
        /// The line where the event starts.
        line: usize,
        /// The value, as EDN.
        found: String,
        /// Why not.
        why: &'static str,
    },
}

impl History {
    /// Reads an EDN history (see [the module docs](self)).
    ///
    /// ```
    /// use avout_check::history::{History, F};
    /// let h = History::from_edn_str("{:type :invoke, :process 0, :f :write, :value 3}").unwrap();
    /// assert_eq!(h.events()[0].f, F::Write);
    /// ```
    pub fn from_edn_str(text: &str) -> Result<Self, HistoryError> {
        Ok(read_str(text)?)
    }

    /// Reads a history file in either format: EDN if it is named `*.edn` or its text starts
    /// like EDN ([`looks_like_edn`]), JSON lines otherwise.
    ///
    /// ```
    /// use avout_check::history::{History, HistoryError};
    /// let dir = std::env::temp_dir();
    /// let path = dir.join(format!("avout-doc-load-{}.txt", std::process::id()));
    /// std::fs::write(&path, "[{:type :invoke :process 0 :f :read :value nil}]").unwrap();
    /// assert_eq!(History::load(&path).unwrap().len(), 1);
    /// std::fs::write(&path, "{\"type\":\"invoke\",\"process\":0,\"f\":\"read\"}").unwrap();
    /// assert_eq!(History::load(&path).unwrap().len(), 1);
    /// std::fs::remove_file(&path).unwrap();
    /// assert!(matches!(History::load(&path), Err(HistoryError::Open { .. })));
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Self, HistoryError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| HistoryError::Open {
            path: path.to_owned(),
            source,
        })?;
        let named_edn = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("edn"));
        if named_edn || looks_like_edn(&bytes) {
            Ok(read_bytes(&bytes)?)
        } else {
            History::from_reader(bytes.as_slice())
        }
    }
}

/// Reads an EDN history from its text.
///
/// ```
/// use avout_check::history::{edn, EventType, Process, F};
/// let h = edn::read_str(
///     "[{:type :invoke, :process 0, :f :cas, :value [1 2]}\n \
///       {:type :info, :process :nemesis, :f :kill, :value nil}]",
/// )
/// .unwrap();
/// assert_eq!(h.events()[0].f, F::Cas);
/// assert_eq!(h.events()[0].value, serde_json::json!([1, 2]));
/// assert_eq!(h.events()[1].process, Process::Named("nemesis".into()));
/// assert_eq!(h.position(1).line, 2);
/// ```
pub fn read_str(text: &str) -> Result<History, EdnError> {
    let lines = Lines::new(text);
    let mut history = History::new();
    let mut pos = skip_blank(text, 0);
    // The events one after another, or inside one vector or list: its closing bracket and
    // what it is called.
    let enclosed = match text[pos..].chars().next() {
        Some('[') => Some((']', "vector")),
        Some('(') => Some((')', "list")),
        _ => None,
    };
    let in_vector = enclosed.is_some();
    if in_vector {
        pos = skip_blank(text, pos + 1);
    }
    loop {
        if pos == text.len() {
            if let Some((_, what)) = enclosed {
                return Err(lines.syntax(pos, format!("the {what} of events is never closed")));
            }
            break;
        }
        if let Some((close, what)) = enclosed
            && text[pos..].starts_with(close)
        {
            let after = skip_blank(text, pos + 1);
            if after != text.len() {
                return Err(lines.syntax(after, format!("text after the {what} of events")));
            }
            break;
        }
        let line = lines.at(pos).0;
        let (form, rest) = match edn::read(&text[pos..]) {
            Ok(read) => read,
            // Only discarded forms (`#_ …`) were left.
            Err(e) if e.code == Code::UnexpectedEOF && e.ptr.is_none() && !in_vector => break,
            Err(e) => {
                let at = e.ptr.map_or(text.len(), |p| pos + p);
                return Err(lines.syntax(at, reason(&e.code)));
            }
        };
        history.events.push(event(&form, line)?);
        history.lines.push(line);
        pos = skip_blank(text, text.len() - rest.len());
    }
    Ok(history)
}

/// Reads an EDN history from bytes, which must be UTF-8.
///
/// ```
/// use avout_check::history::{edn, EdnError};
/// assert_eq!(edn::read_bytes(b"\n\xff").unwrap_err(), EdnError::NotUtf8 { line: 2 });
/// ```
pub fn read_bytes(bytes: &[u8]) -> Result<History, EdnError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => read_str(text),
        Err(e) => {
            let line = 1 + bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            Err(EdnError::NotUtf8 { line })
        }
    }
}

/// Whether text looks like an EDN history rather than JSON lines: its first form opens a
/// vector or a list (`[`, `(`), a tagged value or comment (`#`, `;`), or a map whose first
/// key is a keyword (`{:`).
///
/// ```
/// use avout_check::history::edn::looks_like_edn;
/// assert!(looks_like_edn(b"  {:type :invoke}"));
/// assert!(looks_like_edn(b"[{:type :ok}]"));
/// assert!(looks_like_edn(b"({:type :ok})"));
/// assert!(!looks_like_edn(b"{\"type\":\"invoke\"}"));
/// assert!(!looks_like_edn(b""));
/// ```
pub fn looks_like_edn(bytes: &[u8]) -> bool {
    let mut rest = bytes
        .iter()
        .skip_while(|b| b.is_ascii_whitespace() || **b == b',');
    match rest.next() {
        Some(b'[' | b'(' | b'#' | b';') => true,
        Some(b'{') => rest.find(|b| !b.is_ascii_whitespace() && **b != b',') == Some(&b':'),
        _ => false,
    }
}

/// The offset of the next form at or after `pos`: past whitespace, commas, `;` comments and
/// discarded forms (`#_ form`; one that does not parse is left for the reader to report).
fn skip_blank(text: &str, mut pos: usize) -> usize {
    let bytes = text.as_bytes();
    while pos < bytes.len() {
        match bytes[pos] {
            b';' => {
                while pos < bytes.len() && bytes[pos] != b'\n' {
                    pos += 1;
                }
            }
            b',' => pos += 1,
            b'#' if bytes.get(pos + 1) == Some(&b'_') => match edn::read(&text[pos + 2..]) {
                Ok((_, rest)) => pos = text.len() - rest.len(),
                Err(_) => break,
            },
            _ => match text[pos..].chars().next() {
                Some(c) if c.is_whitespace() => pos += c.len_utf8(),
                _ => break,
            },
        }
    }
    pos
}

/// Line starts, to turn a byte offset into a line and column.
struct Lines<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Lines<'t> {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { text, starts }
    }

    /// (line, column), both from 1; the column counts characters.
    fn at(&self, offset: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        let column = self.text[start..offset].chars().count() + 1;
        (line, column)
    }

    fn syntax(&self, offset: usize, reason: String) -> EdnError {
        let (line, column) = self.at(offset);
        EdnError::Syntax {
            line,
            column,
            reason,
        }
    }
}

fn reason(code: &Code) -> String {
    match code {
        Code::UnexpectedEOF => "the text ends inside a form".into(),
        Code::UnmatchedDelimiter(c) => format!("an unmatched {c}"),
        Code::InvalidChar => "an invalid character".into(),
        Code::InvalidEscape => "an invalid escape in a string".into(),
        Code::InvalidKeyword => "an invalid keyword".into(),
        Code::InvalidNumber => "an invalid number".into(),
        Code::InvalidTag => "an invalid tag".into(),
        Code::HashMapDuplicateKey => "a map with a key twice".into(),
        Code::SetDuplicateKey => "a set with an element twice".into(),
        other => format!("{other:?}"),
    }
}

/// Prints a form for an error message, shortened.
struct Shown<'a, 'e>(&'a Edn<'e>);

impl fmt::Display for Shown<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MAX: usize = 60;
        let text = self.0.to_string();
        match text.char_indices().nth(MAX) {
            Some((cut, _)) => write!(f, "{}…", &text[..cut]),
            None => f.write_str(&text),
        }
    }
}

fn event(form: &Edn<'_>, line: usize) -> Result<Event, EdnError> {
    let map = match form {
        Edn::Map(map) => map,
        Edn::Tagged(_, inner) if matches!(**inner, Edn::Map(_)) => {
            let Edn::Map(map) = &**inner else {
                unreachable!("matched a map")
            };
            map
        }
        other => {
            return Err(EdnError::NotAMap {
                line,
                found: Shown(other).to_string(),
            });
        }
    };
    // Field names are given as keywords, colon and all; the reader drops the colon.
    let field = |name: &'static str| map.get(&Edn::Key(name[1..].into()));
    let required =
        |name: &'static str| field(name).ok_or(EdnError::MissingField { line, field: name });
    let bad = |name: &'static str, found: &Edn<'_>, expected: &'static str| EdnError::BadField {
        line,
        field: name,
        found: Shown(found).to_string(),
        expected,
    };
    let kind = match required(":type")? {
        Edn::Key(k) if k == "invoke" => EventType::Invoke,
        Edn::Key(k) if k == "ok" => EventType::Ok,
        Edn::Key(k) if k == "fail" => EventType::Fail,
        Edn::Key(k) if k == "info" => EventType::Info,
        other => return Err(bad(":type", other, ":invoke, :ok, :fail or :info")),
    };
    let process = match required(":process")? {
        &Edn::Int(p) if p >= 0 => Process::Client(p as u64),
        Edn::Key(name) | Edn::Str(name) | Edn::Symbol(name) => Process::Named(name.to_string()),
        other => return Err(bad(":process", other, "a non-negative integer or a name")),
    };
    let f = match required(":f")? {
        Edn::Key(name) | Edn::Str(name) | Edn::Symbol(name) => F::from(name.to_string()),
        other => return Err(bad(":f", other, "a keyword")),
    };
    let count = |name: &'static str| match field(name) {
        None | Some(Edn::Nil) => Ok(None),
        Some(&Edn::Int(n)) if n >= 0 => Ok(Some(n as u64)),
        Some(other) => Err(bad(name, other, "a non-negative integer")),
    };
    Ok(Event {
        kind,
        process,
        f,
        value: field(":value").map_or(Ok(Value::Null), |v| json(v, line))?,
        key: field(":key").map(|k| json(k, line)).transpose()?,
        time: count(":time")?,
        index: count(":index")?,
        error: field(":error").and_then(error_code),
    })
}

/// Maelstrom's error code in an `:error` field, if it holds one.
fn error_code(form: &Edn<'_>) -> Option<ErrorCode> {
    match form {
        &Edn::Int(n) => u32::try_from(n).ok().map(ErrorCode),
        Edn::Key(name) | Edn::Str(name) | Edn::Symbol(name) => ErrorCode::from_name(name),
        Edn::Vector(items) | Edn::List(items) => items.first().and_then(error_code),
        _ => None,
    }
}

/// An EDN value as JSON (see the module docs for the mapping).
fn json(form: &Edn<'_>, line: usize) -> Result<Value, EdnError> {
    let unrepresentable = |why| EdnError::Unrepresentable {
        line,
        found: Shown(form).to_string(),
        why,
    };
    let float = |x: f64| {
        Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| unrepresentable("not a finite number"))
    };
    Ok(match form {
        Edn::Nil => Value::Null,
        Edn::Bool(b) => Value::Bool(*b),
        Edn::Int(n) => Value::from(*n),
        Edn::Double(x) => float(x.into_inner())?,
        &Edn::Rational((n, d)) => float(n as f64 / d as f64)?,
        Edn::Key(s) | Edn::Str(s) | Edn::Symbol(s) => Value::String(s.to_string()),
        Edn::Char(c) => Value::String(c.to_string()),
        Edn::Vector(items) | Edn::List(items) => Value::Array(
            items
                .iter()
                .map(|i| json(i, line))
                .collect::<Result<_, _>>()?,
        ),
        Edn::Set(items) => Value::Array(
            items
                .iter()
                .map(|i| json(i, line))
                .collect::<Result<_, _>>()?,
        ),
        Edn::Map(entries) => {
            let mut object = Map::new();
            for (k, v) in entries {
                let name = match k {
                    Edn::Key(s) | Edn::Str(s) | Edn::Symbol(s) => s.to_string(),
                    other => json(other, line)?.to_string(),
                };
                object.insert(name, json(v, line)?);
            }
            Value::Object(object)
        }
        Edn::Tagged(_, inner) => json(inner, line)?,
        _ => return Err(unrepresentable("a kind of value JSON has no place for")),
    })
}

#[cfg(test)]
mod tests;
