//! An Elle-style checker for list-append transactions (Maelstrom's `txn-list-append`).
//!
//! # History format
//!
//! Every operation is a transaction, `f: "txn"`, whose value is a list of micro-operations:
//! `["append", k, v]` appends `v` to the list at key `k`; `["r", k, null]` reads it, and on the
//! `ok` completion carries the list read (`null` there means the key does not exist: the empty
//! list).
//!
//! ```text
//! {"type":"invoke","process":0,"f":"txn","value":[["r",1,null],["append",2,7]]}
//! {"type":"ok","process":0,"f":"txn","value":[["r",1,[3,4]],["append",2,7]]}
//! ```
//!
//! `ok` transactions committed. `fail` transactions did not: nothing may see their appends.
//! `info` transactions (or ones never completed) may or may not have committed: their appends
//! may be seen, and if seen they committed; their reads are unknown and constrain nothing. As in
//! Elle, every append of a key must be a distinct value.
//!
//! # How it works
//!
//! Elle's idea (Kingsbury and Alvaro, *Elle: Inferring Isolation Anomalies from Experimental
//! Observations*, VLDB 2020) is that appends make versions recoverable: a read of `[1, 2, 3]`
//! shows not just one version but the whole order of the appends before it.
//!
//! 1. **Internal consistency**: within a transaction, a read of a key must show what the
//!    transaction already knows of it — the previous read plus its own appends since, or, before
//!    any read, a list ending with its own appends. Anything else is an `internal` anomaly.
//! 2. **Version orders**: per key, the longest read is the order of its appends; every other read
//!    must be a prefix of it, or the key has an `incompatible-order` (its reads cannot come from
//!    one sequence of versions; the key then adds no version-order edges). A read with an element
//!    twice is `duplicate-elements`; an element nobody appended is `garbage-read`.
//! 3. **Aborted and intermediate reads**: a committed read showing an append of a `fail`
//!    transaction is `G1a`; one whose last element another transaction appended before appending
//!    to the same key again is `G1b` (it saw that transaction's intermediate state).
//! 4. **The dependency graph** over committed and possibly committed transactions, with Adya's
//!    edges: `ww` from the appender of each element to the appender of the next in the version
//!    order; `wr` from the appender of the last element of a read to the reader; `rw` from a
//!    reader to the appender of the element right after what it read (it did not see that
//!    append, so it came first). Only a transaction's *external* reads (of a key before it
//!    appended to it) make `wr` and `rw` edges. For strict serializability, `realtime` edges go
//!    from each transaction to every transaction that began after it completed (a transitive
//!    reduction of that order, as Elle builds it), and `process` edges from each committed
//!    transaction to its process's next.
//! 5. **Cycles**: the strongly connected components of the graph (Tarjan), then, inside each,
//!    the shortest cycle (breadth-first search from each edge that must appear) of each kind:
//!    `G0` (write cycle: only `ww`), `G1c` (circular information flow: `ww` and `wr`, at least
//!    one `wr`), `G-single` (exactly one `rw`: read skew), `G2-item` (two or more `rw`: write
//!    skew). A kind is reported with the fewest order edges needed: without any, then with
//!    `process` edges (`G-single-process`), then with `realtime` edges too (`G0-realtime`, …),
//!    which are anomalies for strict serializability but not for plain serializability.
//!
//! Everything printed is deterministic: maps are only looked up, never iterated.
//!
//! ```
//! use avout_scenarios::check::list_append::check_list_append;
//! use avout_scenarios::history::{Event, History, F};
//! use serde_json::json;
//!
//! let txn = || F::Other("txn".into());
//! // Two transactions each read x empty and append to it; a later read shows 1 before 2, so
//! // T0 came first (ww T0 → T1), yet T1's read of x missed T0's append (rw T1 → T0): one
//! // anti-dependency in the cycle, G-single.
//! let h: History = [
//!     Event::invoke(0, txn(), json!([["r", "x", null], ["append", "x", 1]])),
//!     Event::invoke(1, txn(), json!([["r", "x", null], ["append", "x", 2]])),
//!     Event::ok(0, txn(), json!([["r", "x", []], ["append", "x", 1]])),
//!     Event::ok(1, txn(), json!([["r", "x", []], ["append", "x", 2]])),
//!     Event::invoke(2, txn(), json!([["r", "x", null]])),
//!     Event::ok(2, txn(), json!([["r", "x", [1, 2]]])),
//! ]
//! .into_iter()
//! .collect();
//! let verdict = check_list_append(&h).unwrap();
//! assert!(!verdict.is_valid());
//! assert_eq!(verdict.anomaly_names(), vec!["G-single"]);
//! ```

mod graph;
pub mod synth;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::Path;

use serde_json::Value;

use crate::history::{F, History, HistoryError, Keys, Operation, Outcome};
use graph::{CycleFinder, Graph, Hop, PROCESS, REALTIME, RW, WR, WW};

/// The consistency model the graph is checked against: which order edges it includes.
///
/// ```
/// use avout_scenarios::check::list_append::Consistency;
/// assert_eq!(Consistency::default(), Consistency::StrictSerializable);
/// assert_eq!(Consistency::Serializable.to_string(), "serializable");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Consistency {
    /// Dependency edges only: some serial order explains every read.
    Serializable,
    /// Plus each process's order: a process sees its own committed transactions.
    StrongSessionSerializable,
    /// Plus real time: a transaction sees every one that completed before it began.
    #[default]
    StrictSerializable,
}

impl fmt::Display for Consistency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Consistency::Serializable => "serializable",
            Consistency::StrongSessionSerializable => "strong-session-serializable",
            Consistency::StrictSerializable => "strict-serializable",
        })
    }
}

/// Why a history could not be checked (as opposed to being found anomalous).
///
/// ```
/// use avout_scenarios::check::list_append::{check_list_append, ListAppendError};
/// use avout_scenarios::history::{Event, History, F};
/// let h: History = [Event::invoke(0, F::Other("txn".into()), serde_json::json!([["inc", 1, 2]]))]
///     .into_iter()
///     .collect();
/// assert!(matches!(check_list_append(&h), Err(ListAppendError::MalformedTxn { line: 1, .. })));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListAppendError {
    /// The history could not be read or paired.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// An operation other than `txn`.
    #[error("line {line}: {f} is not an operation of the list-append model (txn)")]
    Unsupported {
        /// The invocation's line.
        line: usize,
        /// The operation.
        f: F,
    },
    /// A transaction value that is not a list of `["append", k, v]` / `["r", k, list|null]`.
    #[error("line {line}: {value} is not a list of micro-operations: {why}")]
    MalformedTxn {
        /// The line of the event carrying the value.
        line: usize,
        /// The offending value.
        value: Value,
        /// What is wrong with it.
        why: &'static str,
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
}

/// Which cycle of the dependency graph, by Adya's phenomena.
///
/// ```
/// use avout_scenarios::check::list_append::CycleKind;
/// assert_eq!(CycleKind::GSingle.to_string(), "G-single");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CycleKind {
    /// Only write-write edges.
    G0,
    /// Write-write and write-read edges, at least one write-read.
    G1c,
    /// Exactly one read-write (anti-dependency) edge.
    GSingle,
    /// Two or more read-write edges.
    G2Item,
}

impl fmt::Display for CycleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CycleKind::G0 => "G0",
            CycleKind::G1c => "G1c",
            CycleKind::GSingle => "G-single",
            CycleKind::G2Item => "G2-item",
        })
    }
}

/// The order edges a cycle needs besides dependencies.
///
/// ```
/// use avout_scenarios::check::list_append::Order;
/// assert_eq!(Order::Realtime.suffix(), "-realtime");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Order {
    /// None: a serializability anomaly.
    None,
    /// Process order.
    Process,
    /// Real-time order.
    Realtime,
}

impl Order {
    /// How the anomaly's name says so: `""`, `"-process"` or `"-realtime"`.
    ///
    /// ```
    /// assert_eq!(avout_scenarios::check::list_append::Order::None.suffix(), "");
    /// ```
    pub fn suffix(self) -> &'static str {
        match self {
            Order::None => "",
            Order::Process => "-process",
            Order::Realtime => "-realtime",
        }
    }
}

/// The kind of an edge of the dependency graph.
///
/// ```
/// use avout_scenarios::check::list_append::EdgeKind;
/// assert_eq!(EdgeKind::Rw.to_string(), "rw");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// Write-write: the later append came right after the earlier's in the version order.
    Ww,
    /// Write-read: the reader saw the writer's append last.
    Wr,
    /// Read-write (anti-dependency): the reader did not see the writer's append.
    Rw,
    /// Process order.
    Process,
    /// Real-time order.
    Realtime,
}

impl EdgeKind {
    fn from_bit(bit: u8) -> EdgeKind {
        match bit {
            WW => EdgeKind::Ww,
            WR => EdgeKind::Wr,
            RW => EdgeKind::Rw,
            PROCESS => EdgeKind::Process,
            REALTIME => EdgeKind::Realtime,
            other => unreachable!("edge kind bit {other}"),
        }
    }
}

impl fmt::Display for EdgeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EdgeKind::Ww => "ww",
            EdgeKind::Wr => "wr",
            EdgeKind::Rw => "rw",
            EdgeKind::Process => "process",
            EdgeKind::Realtime => "realtime",
        })
    }
}

/// One edge of a cycle, with what shows it.
///
/// ```
/// use avout_scenarios::check::list_append::{Edge, EdgeKind};
/// let e = Edge { from: 0, to: 1, kind: EdgeKind::Realtime, key: None, elements: vec![] };
/// assert_eq!(e.to_string(), "T0 -realtime-> T1: T0 completed before T1 began");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    /// The transaction it leaves, as an index into [`Cycle::transactions`].
    pub from: usize,
    /// The transaction it enters, likewise.
    pub to: usize,
    /// Its kind.
    pub kind: EdgeKind,
    /// The key, for a dependency edge.
    pub key: Option<Value>,
    /// The elements that show it: for `ww` the two consecutive appends; for `wr` the element
    /// read last; for `rw` the element read last (absent for an empty read) and the one appended
    /// next.
    pub elements: Vec<Value>,
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = (self.from, self.to);
        write!(f, "T{a} -{}-> T{b}: ", self.kind)?;
        let key = self.key.as_ref().unwrap_or(&Value::Null);
        match (self.kind, self.elements.as_slice()) {
            (EdgeKind::Ww, [x, y]) => write!(
                f,
                "T{a} appended {x} to key {key}, and T{b} appended {y} right after it"
            ),
            (EdgeKind::Wr, [x]) => write!(f, "T{b} read key {key} ending in {x}, appended by T{a}"),
            (EdgeKind::Rw, [x, y]) => write!(
                f,
                "T{a} read key {key} ending in {x}, without {y}, which T{b} appended next"
            ),
            (EdgeKind::Rw, [y]) => write!(
                f,
                "T{a} read key {key} empty, without {y}, which T{b} appended first"
            ),
            (EdgeKind::Process, _) => write!(f, "T{b} followed T{a} on its process"),
            (EdgeKind::Realtime, _) => write!(f, "T{a} completed before T{b} began"),
            (kind, elements) => write!(f, "{kind} on key {key} {elements:?}"),
        }
    }
}

/// A cycle in the dependency graph: transactions `T0 … Tn-1` and the edges `T0 → T1 → … → T0`.
///
/// ```
/// use avout_scenarios::check::list_append::{check_list_append, Anomaly, CycleKind};
/// use avout_scenarios::history::{Event, History, F};
/// use serde_json::json;
/// let t = || F::Other("txn".into());
/// // Each transaction's append to x comes before the other's, by the reads of y: G0.
/// let h: History = [
///     Event::invoke(0, t(), json!([["append", "x", 1], ["append", "y", 1]])),
///     Event::invoke(1, t(), json!([["append", "x", 2], ["append", "y", 2]])),
///     Event::ok(0, t(), json!([["append", "x", 1], ["append", "y", 1]])),
///     Event::ok(1, t(), json!([["append", "x", 2], ["append", "y", 2]])),
///     Event::invoke(2, t(), json!([["r", "x", null], ["r", "y", null]])),
///     Event::ok(2, t(), json!([["r", "x", [1, 2]], ["r", "y", [2, 1]]])),
/// ]
/// .into_iter()
/// .collect();
/// let verdict = check_list_append(&h).unwrap();
/// let Anomaly::Cycle(cycle) = &verdict.anomalies[0] else { panic!("{verdict}") };
/// assert_eq!(cycle.kind, CycleKind::G0);
/// assert_eq!(cycle.transactions.len(), 2);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Cycle {
    /// Which phenomenon.
    pub kind: CycleKind,
    /// The order edges it needs.
    pub order: Order,
    /// The transactions on it, as completed (an `info` one as invoked).
    pub transactions: Vec<Operation>,
    /// Its edges, from `T0` round to `T0`.
    pub edges: Vec<Edge>,
}

impl Cycle {
    /// Its name, as Elle gives it: `G-single`, `G0-realtime`, …
    ///
    /// ```
    /// use avout_scenarios::check::list_append::{Cycle, CycleKind, Order};
    /// let c = Cycle { kind: CycleKind::G2Item, order: Order::Process, transactions: vec![], edges: vec![] };
    /// assert_eq!(c.name(), "G2-item-process");
    /// ```
    pub fn name(&self) -> String {
        format!("{}{}", self.kind, self.order.suffix())
    }
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: a cycle of {} transactions",
            self.name(),
            self.transactions.len()
        )?;
        for (i, t) in self.transactions.iter().enumerate() {
            writeln!(f, "    T{i} = {t}")?;
        }
        for e in &self.edges {
            writeln!(f, "    {e}")?;
        }
        Ok(())
    }
}

/// What a transaction should have read of a key, by what it already knew.
///
/// ```
/// use avout_scenarios::check::list_append::Expected;
/// assert_eq!(Expected::EndsWith(vec![3.into()]).to_string(), "a list ending [3]");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// Exactly this list: an earlier read plus the transaction's appends since.
    Exactly(Vec<Value>),
    /// A list ending with the transaction's own appends (it had not read the key before).
    EndsWith(Vec<Value>),
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Exactly(l) => write!(f, "{}", list(l)),
            Expected::EndsWith(l) => write!(f, "a list ending {}", list(l)),
        }
    }
}

fn list(values: &[Value]) -> String {
    Value::Array(values.to_vec()).to_string()
}

/// One anomaly found.
///
/// ```
/// use avout_scenarios::check::list_append::{check_list_append, Anomaly};
/// use avout_scenarios::history::{Event, History, F};
/// use serde_json::json;
/// let t = || F::Other("txn".into());
/// let h: History = [
///     Event::invoke(0, t(), json!([["append", "x", 1]])),
///     Event::fail(0, t(), json!([["append", "x", 1]])),
///     Event::invoke(1, t(), json!([["r", "x", null]])),
///     Event::ok(1, t(), json!([["r", "x", [1]]])),
/// ]
/// .into_iter()
/// .collect();
/// let verdict = check_list_append(&h).unwrap();
/// assert!(matches!(&verdict.anomalies[0], Anomaly::AbortedRead { .. }));
/// assert_eq!(verdict.anomalies[0].name(), "G1a");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Anomaly {
    /// A cycle in the dependency graph (G0, G1c, G-single, G2-item, with order suffixes).
    Cycle(Cycle),
    /// G1a: a committed read showing an append of a failed transaction.
    AbortedRead {
        /// The reader.
        reader: Operation,
        /// The failed transaction.
        writer: Operation,
        /// The key.
        key: Value,
        /// The element it should never have seen.
        element: Value,
    },
    /// G1b: a committed read whose last element another transaction appended before appending
    /// to the key again.
    IntermediateRead {
        /// The reader.
        reader: Operation,
        /// The writer.
        writer: Operation,
        /// The key.
        key: Value,
        /// The last element read.
        element: Value,
        /// The writer's next append to the key, which the reader should have seen too.
        later: Value,
    },
    /// A transaction read a key inconsistently with its own earlier reads and appends.
    Internal {
        /// The transaction.
        op: Operation,
        /// The key.
        key: Value,
        /// What it should have read.
        expected: Expected,
        /// What it read.
        read: Vec<Value>,
    },
    /// Two reads of a key that are not prefixes of one another.
    IncompatibleOrder {
        /// The key.
        key: Value,
        /// The longest read of the key (the version order it is compared with), and its reader.
        longest: (Operation, Vec<Value>),
        /// A read that is not a prefix of it, and its reader.
        other: (Operation, Vec<Value>),
    },
    /// A read showing one element twice.
    DuplicateElements {
        /// The reader.
        op: Operation,
        /// The key.
        key: Value,
        /// What it read.
        read: Vec<Value>,
    },
    /// A read showing an element no transaction appended.
    GarbageRead {
        /// The reader.
        op: Operation,
        /// The key.
        key: Value,
        /// The element.
        element: Value,
    },
}

impl Anomaly {
    /// Its name, as Elle gives it: `G0`, `G1a`, `G1b`, `G1c`, `G-single`, `G2-item` (with
    /// `-process` or `-realtime`), `internal`, `incompatible-order`, `duplicate-elements`,
    /// `garbage-read`.
    ///
    /// ```
    /// use avout_scenarios::check::list_append::{Anomaly, Expected};
    /// use avout_scenarios::history::{Operation, Outcome, Position, F};
    /// let at = |index| Position { index, line: index + 1 };
    /// let op = Operation {
    ///     process: 0, f: F::Other("txn".into()), key: None, value: serde_json::Value::Null,
    ///     outcome: Outcome::Ok, invoke: at(0), complete: Some(at(1)),
    /// };
    /// let a = Anomaly::Internal { op, key: 1.into(), expected: Expected::Exactly(vec![]), read: vec![2.into()] };
    /// assert_eq!(a.name(), "internal");
    /// ```
    pub fn name(&self) -> String {
        match self {
            Anomaly::Cycle(c) => c.name(),
            Anomaly::AbortedRead { .. } => "G1a".into(),
            Anomaly::IntermediateRead { .. } => "G1b".into(),
            Anomaly::Internal { .. } => "internal".into(),
            Anomaly::IncompatibleOrder { .. } => "incompatible-order".into(),
            Anomaly::DuplicateElements { .. } => "duplicate-elements".into(),
            Anomaly::GarbageRead { .. } => "garbage-read".into(),
        }
    }
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Anomaly::Cycle(c) => write!(f, "{c}"),
            Anomaly::AbortedRead {
                reader,
                writer,
                key,
                element,
            } => writeln!(
                f,
                "G1a: {reader}\n    read {element} on key {key}, appended by the failed {writer}"
            ),
            Anomaly::IntermediateRead {
                reader,
                writer,
                key,
                element,
                later,
            } => writeln!(
                f,
                "G1b: {reader}\n    read key {key} ending in {element}, but {writer}\n    \
                 appended {later} to it afterwards in the same transaction"
            ),
            Anomaly::Internal {
                op,
                key,
                expected,
                read,
            } => writeln!(
                f,
                "internal: {op}\n    read key {key} = {}, but by its own reads and appends it \
                 should have read {expected}",
                list(read)
            ),
            Anomaly::IncompatibleOrder {
                key,
                longest,
                other,
            } => writeln!(
                f,
                "incompatible-order on key {key}:\n    {} read {}\n    {} read {}\n    \
                 and neither is a prefix of the other",
                longest.0,
                list(&longest.1),
                other.0,
                list(&other.1)
            ),
            Anomaly::DuplicateElements { op, key, read } => writeln!(
                f,
                "duplicate-elements: {op}\n    read key {key} = {}",
                list(read)
            ),
            Anomaly::GarbageRead { op, key, element } => writeln!(
                f,
                "garbage-read: {op}\n    read {element} on key {key}, which no transaction appended"
            ),
        }
    }
}

/// The result of a list-append check.
///
/// ```
/// use avout_scenarios::check::list_append::check_list_append;
/// let verdict = check_list_append(&Default::default()).unwrap();
/// assert!(verdict.is_valid());
/// assert!(verdict.to_string().starts_with("valid as strict-serializable"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ListAppendVerdict {
    /// The model checked.
    pub consistency: Consistency,
    /// Transactions by outcome: ok, fail, info.
    pub transactions: [usize; 3],
    /// Distinct keys.
    pub keys: usize,
    /// Edges in the dependency graph (after deduplication).
    pub edges: usize,
    /// Every anomaly found: non-cycle anomalies in history order, then cycles by component.
    pub anomalies: Vec<Anomaly>,
}

impl ListAppendVerdict {
    /// Whether no anomaly was found.
    ///
    /// ```
    /// use avout_scenarios::check::list_append::check_list_append;
    /// assert!(check_list_append(&Default::default()).unwrap().is_valid());
    /// ```
    pub fn is_valid(&self) -> bool {
        self.anomalies.is_empty()
    }

    /// The names of the anomalies found, sorted and without repeats.
    ///
    /// ```
    /// use avout_scenarios::check::list_append::check_list_append;
    /// assert!(check_list_append(&Default::default()).unwrap().anomaly_names().is_empty());
    /// ```
    pub fn anomaly_names(&self) -> Vec<String> {
        let names: BTreeSet<String> = self.anomalies.iter().map(Anomaly::name).collect();
        names.into_iter().collect()
    }
}

/// How many anomalies of one name the report prints.
const SHOWN_PER_NAME: usize = 8;

impl fmt::Display for ListAppendVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [ok, fail, info] = self.transactions;
        write!(
            f,
            "{} as {}: {} transactions ({ok} ok, {fail} fail, {info} info), {} keys, {} edges",
            if self.is_valid() { "valid" } else { "invalid" },
            self.consistency,
            ok + fail + info,
            self.keys,
            self.edges,
        )?;
        if self.is_valid() {
            return writeln!(f);
        }
        writeln!(f, "; anomalies: {}", self.anomaly_names().join(", "))?;
        for name in self.anomaly_names() {
            let of_name: Vec<&Anomaly> =
                self.anomalies.iter().filter(|a| a.name() == name).collect();
            for a in of_name.iter().take(SHOWN_PER_NAME) {
                write!(f, "  {a}")?;
            }
            if of_name.len() > SHOWN_PER_NAME {
                writeln!(f, "  … and {} more {name}", of_name.len() - SHOWN_PER_NAME)?;
            }
        }
        Ok(())
    }
}

/// A configured list-append checker.
///
/// ```
/// use avout_scenarios::check::list_append::{Consistency, ListAppendChecker};
/// use avout_scenarios::history::{Event, History, F};
/// use serde_json::json;
/// let t = || F::Other("txn".into());
/// // A stale read after a completed append: fine for serializability, not strict.
/// let h: History = [
///     Event::invoke(0, t(), json!([["append", "x", 1]])),
///     Event::ok(0, t(), json!([["append", "x", 1]])),
///     Event::invoke(1, t(), json!([["r", "x", null]])),
///     Event::ok(1, t(), json!([["r", "x", []]])),
///     Event::invoke(2, t(), json!([["r", "x", null]])),
///     Event::ok(2, t(), json!([["r", "x", [1]]])),
/// ]
/// .into_iter()
/// .collect();
/// let strict = ListAppendChecker::new().check(&h).unwrap();
/// assert_eq!(strict.anomaly_names(), vec!["G-single-realtime"]);
/// let plain = ListAppendChecker::new().consistency(Consistency::Serializable).check(&h).unwrap();
/// assert!(plain.is_valid());
/// ```
#[derive(Clone, Debug, Default)]
pub struct ListAppendChecker {
    consistency: Consistency,
}

impl ListAppendChecker {
    /// A checker for strict serializability.
    ///
    /// ```
    /// let _ = avout_scenarios::check::list_append::ListAppendChecker::new();
    /// ```
    pub fn new() -> Self {
        ListAppendChecker::default()
    }

    /// The model to check.
    ///
    /// ```
    /// use avout_scenarios::check::list_append::{Consistency, ListAppendChecker};
    /// let _ = ListAppendChecker::new().consistency(Consistency::Serializable);
    /// ```
    pub fn consistency(mut self, consistency: Consistency) -> Self {
        self.consistency = consistency;
        self
    }

    /// Checks a JSON-lines history file.
    ///
    /// ```
    /// use avout_scenarios::check::list_append::{ListAppendChecker, ListAppendError};
    /// let err = ListAppendChecker::new().check_file("/nonexistent.jsonl").unwrap_err();
    /// assert!(matches!(err, ListAppendError::History(_)));
    /// ```
    pub fn check_file(&self, path: impl AsRef<Path>) -> Result<ListAppendVerdict, ListAppendError> {
        self.check(&History::read_file(path)?)
    }

    /// Checks a history.
    ///
    /// ```
    /// use avout_scenarios::check::list_append::ListAppendChecker;
    /// assert!(ListAppendChecker::new().check(&Default::default()).unwrap().is_valid());
    /// ```
    pub fn check(&self, history: &History) -> Result<ListAppendVerdict, ListAppendError> {
        let parsed = Parsed::new(history)?;
        Ok(Analysis::run(&parsed, self.consistency))
    }
}

/// Checks a history for strict serializability.
///
/// ```
/// use avout_scenarios::check::list_append::check_list_append;
/// use avout_scenarios::history::{Event, History, F};
/// use serde_json::json;
/// let t = || F::Other("txn".into());
/// let h: History = [
///     Event::invoke(0, t(), json!([["append", 1, 1], ["r", 1, null]])),
///     Event::ok(0, t(), json!([["append", 1, 1], ["r", 1, [1]]])),
/// ]
/// .into_iter()
/// .collect();
/// assert!(check_list_append(&h).unwrap().is_valid());
/// ```
pub fn check_list_append(history: &History) -> Result<ListAppendVerdict, ListAppendError> {
    ListAppendChecker::new().check(history)
}

// ---- parsing ----

#[derive(Clone, Debug)]
enum Mop {
    Append {
        key: u32,
        elem: u32,
    },
    /// `None`: unknown (an invocation, or a transaction that did not complete `ok`).
    Read {
        key: u32,
        list: Option<Vec<u32>>,
    },
}

struct Txn {
    /// The operation, its value as completed for an `ok` transaction.
    op: Operation,
    mops: Vec<Mop>,
}

/// Canonical JSON text to a small integer, and back.
#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
    values: Vec<Value>,
}

impl Interner {
    fn intern(&mut self, value: &Value) -> u32 {
        // serde_json's maps are sorted, so equal values print equally.
        let next = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct values");
        let id = *self.ids.entry(value.to_string()).or_insert(next);
        if id == next {
            self.values.push(value.clone());
        }
        id
    }
}

struct Parsed {
    txns: Vec<Txn>,
    keys: Interner,
    elems: Interner,
    /// Who appended each (key, element), and at which micro-operation.
    appender: HashMap<(u32, u32), (u32, u32)>,
}

impl Parsed {
    fn new(history: &History) -> Result<Parsed, ListAppendError> {
        let ops = history.operations(Keys::Field)?;
        let mut parsed = Parsed {
            txns: Vec::with_capacity(ops.len()),
            keys: Interner::default(),
            elems: Interner::default(),
            appender: HashMap::new(),
        };
        for mut op in ops {
            if op.f.as_str() != "txn" {
                return Err(ListAppendError::Unsupported {
                    line: op.invoke.line,
                    f: op.f,
                });
            }
            let invoked = &history.events()[op.invoke.index].value;
            let (value, line, known) = match (op.outcome, op.complete) {
                (Outcome::Ok, Some(end)) => {
                    let completed = &history.events()[end.index].value;
                    if completed.is_null() {
                        (invoked, op.invoke.line, true)
                    } else {
                        (completed, end.line, true)
                    }
                }
                _ => (invoked, op.invoke.line, false),
            };
            let mops = parsed.mops(value, line, known)?;
            op.value = value.clone();
            let t = u32::try_from(parsed.txns.len()).expect("fewer than 2^32 transactions");
            for (m, mop) in mops.iter().enumerate() {
                if let Mop::Append { key, elem } = *mop {
                    if let Some(&(first, _)) = parsed.appender.get(&(key, elem)) {
                        return Err(ListAppendError::DuplicateAppend {
                            key: parsed.keys.values[key as usize].clone(),
                            element: parsed.elems.values[elem as usize].clone(),
                            first_line: parsed.txns[first as usize].op.invoke.line,
                            line: op.invoke.line,
                        });
                    }
                    parsed.appender.insert((key, elem), (t, m as u32));
                }
            }
            parsed.txns.push(Txn { op, mops });
        }
        Ok(parsed)
    }

    fn mops(
        &mut self,
        value: &Value,
        line: usize,
        known: bool,
    ) -> Result<Vec<Mop>, ListAppendError> {
        let bad = |why| ListAppendError::MalformedTxn {
            line,
            value: value.clone(),
            why,
        };
        let Value::Array(items) = value else {
            return Err(bad("not a list"));
        };
        let mut mops = Vec::with_capacity(items.len());
        for item in items {
            let Some([f, k, v]) = item.as_array().map(Vec::as_slice) else {
                return Err(bad("a micro-operation is not [f, key, value]"));
            };
            let key = self.keys.intern(k);
            match f.as_str() {
                Some("append") => mops.push(Mop::Append {
                    key,
                    elem: self.elems.intern(v),
                }),
                Some("r") => {
                    let list = match (known, v) {
                        (false, _) => None,
                        (true, Value::Null) => Some(Vec::new()),
                        (true, Value::Array(l)) => {
                            Some(l.iter().map(|e| self.elems.intern(e)).collect())
                        }
                        (true, _) => return Err(bad("a read's value is not a list or null")),
                    };
                    mops.push(Mop::Read { key, list });
                }
                _ => return Err(bad("a micro-operation is neither \"append\" nor \"r\"")),
            }
        }
        Ok(mops)
    }

    fn key(&self, key: u32) -> Value {
        self.keys.values[key as usize].clone()
    }

    fn elem(&self, elem: u32) -> Value {
        self.elems.values[elem as usize].clone()
    }

    fn elems(&self, list: &[u32]) -> Vec<Value> {
        list.iter().map(|&e| self.elem(e)).collect()
    }

    fn outcome(&self, t: u32) -> Outcome {
        self.txns[t as usize].op.outcome
    }
}

// ---- analysis ----

/// Budget of node visits per cycle search in one component; past it, the shortest cycle found
/// so far is reported (a longer one than necessary, never a wrong one).
const SEARCH_BUDGET: u64 = 2_000_000;

struct Analysis<'p> {
    p: &'p Parsed,
    anomalies: Vec<Anomaly>,
    /// Per key, the version order (the longest read), if the key's reads are compatible.
    order: Vec<Option<Vec<u32>>>,
    /// The index of each (key, element) in its key's version order.
    position: HashMap<(u32, u32), usize>,
    graph: Graph,
}

impl<'p> Analysis<'p> {
    fn run(p: &'p Parsed, consistency: Consistency) -> ListAppendVerdict {
        let mut a = Analysis {
            p,
            anomalies: Vec::new(),
            order: vec![None; p.keys.values.len()],
            position: HashMap::new(),
            graph: Graph::new(p.txns.len()),
        };
        a.internal();
        a.version_orders();
        a.read_anomalies();
        a.dependency_edges();
        if consistency != Consistency::Serializable {
            a.process_edges();
        }
        if consistency == Consistency::StrictSerializable {
            a.realtime_edges();
        }
        a.graph.seal();
        a.cycles();
        let mut transactions = [0; 3];
        for t in &p.txns {
            transactions[match t.op.outcome {
                Outcome::Ok => 0,
                Outcome::Fail => 1,
                Outcome::Info => 2,
            }] += 1;
        }
        ListAppendVerdict {
            consistency,
            transactions,
            keys: p.keys.values.len(),
            edges: a.graph.edges(),
            anomalies: a.anomalies,
        }
    }

    fn op(&self, t: u32) -> Operation {
        self.p.txns[t as usize].op.clone()
    }

    /// Reads of `ok` transactions: (transaction, micro-op index, key, list).
    fn reads(&self) -> impl Iterator<Item = (u32, usize, u32, &'p [u32])> + 'p {
        let p = self.p;
        p.txns.iter().enumerate().flat_map(|(t, txn)| {
            txn.mops
                .iter()
                .enumerate()
                .filter_map(move |(m, mop)| match mop {
                    Mop::Read { key, list: Some(l) } => Some((t as u32, m, *key, l.as_slice())),
                    _ => None,
                })
        })
    }

    fn internal(&mut self) {
        for txn in &self.p.txns {
            // Per key: (known whole list, or only its own appends as a suffix).
            let mut known: HashMap<u32, (bool, Vec<u32>)> = HashMap::new();
            for mop in &txn.mops {
                match mop {
                    Mop::Append { key, elem } => {
                        known
                            .entry(*key)
                            .or_insert((false, Vec::new()))
                            .1
                            .push(*elem);
                    }
                    Mop::Read { list: None, .. } => {}
                    Mop::Read {
                        key,
                        list: Some(read),
                    } => {
                        let ok = match known.get(key) {
                            None => true,
                            Some((true, whole)) => whole == read,
                            Some((false, suffix)) => read.ends_with(suffix),
                        };
                        if !ok {
                            let (whole, l) = &known[key];
                            let l = self.p.elems(l);
                            self.anomalies.push(Anomaly::Internal {
                                op: txn.op.clone(),
                                key: self.p.key(*key),
                                expected: if *whole {
                                    Expected::Exactly(l)
                                } else {
                                    Expected::EndsWith(l)
                                },
                                read: self.p.elems(read),
                            });
                        }
                        known.insert(*key, (true, read.clone()));
                    }
                }
            }
        }
    }

    fn version_orders(&mut self) {
        let mut longest: Vec<Option<(u32, &'p [u32])>> = vec![None; self.order.len()];
        for (t, _, key, list) in self.reads() {
            let slot = &mut longest[key as usize];
            if slot.is_none_or(|(_, l)| l.len() < list.len()) {
                *slot = Some((t, list));
            }
        }
        let mut incompatible: Vec<bool> = vec![false; self.order.len()];
        for (t, _, key, list) in self.reads() {
            let Some((lt, l)) = longest[key as usize] else {
                continue;
            };
            if !incompatible[key as usize] && !l.starts_with(list) {
                incompatible[key as usize] = true;
                self.anomalies.push(Anomaly::IncompatibleOrder {
                    key: self.p.key(key),
                    longest: (self.op(lt), self.p.elems(l)),
                    other: (self.op(t), self.p.elems(list)),
                });
            }
        }
        for (key, slot) in longest.into_iter().enumerate() {
            let Some((t, l)) = slot else { continue };
            let mut seen = HashSet::with_capacity(l.len());
            if !l.iter().all(|e| seen.insert(*e)) {
                self.anomalies.push(Anomaly::DuplicateElements {
                    op: self.op(t),
                    key: self.p.key(key as u32),
                    read: self.p.elems(l),
                });
                continue;
            }
            if incompatible[key] {
                continue;
            }
            for (i, &e) in l.iter().enumerate() {
                self.position.insert((key as u32, e), i);
            }
            self.order[key] = Some(l.to_vec());
        }
    }

    /// G1a, G1b and garbage reads, each reported once per (reader, key).
    fn read_anomalies(&mut self) {
        let mut garbage_seen: HashSet<(u32, u32)> = HashSet::new();
        for (t, _, key, list) in self.reads() {
            let mut aborted_reported = false;
            for &e in list {
                match self.p.appender.get(&(key, e)) {
                    None => {
                        if garbage_seen.insert((key, e)) {
                            self.anomalies.push(Anomaly::GarbageRead {
                                op: self.op(t),
                                key: self.p.key(key),
                                element: self.p.elem(e),
                            });
                        }
                    }
                    Some(&(w, _)) if self.p.outcome(w) == Outcome::Fail && !aborted_reported => {
                        aborted_reported = true;
                        self.anomalies.push(Anomaly::AbortedRead {
                            reader: self.op(t),
                            writer: self.op(w),
                            key: self.p.key(key),
                            element: self.p.elem(e),
                        });
                    }
                    Some(_) => {}
                }
            }
            let Some(&last) = list.last() else { continue };
            let Some(&(w, m)) = self.p.appender.get(&(key, last)) else {
                continue;
            };
            if w == t || self.p.outcome(w) == Outcome::Fail {
                continue;
            }
            let later = self.p.txns[w as usize].mops[m as usize + 1..]
                .iter()
                .find_map(|mop| match mop {
                    Mop::Append { key: k, elem } if *k == key => Some(*elem),
                    _ => None,
                });
            if let Some(later) = later {
                self.anomalies.push(Anomaly::IntermediateRead {
                    reader: self.op(t),
                    writer: self.op(w),
                    key: self.p.key(key),
                    element: self.p.elem(last),
                    later: self.p.elem(later),
                });
            }
        }
    }

    /// Whether a transaction is in the graph: it committed, or may have.
    fn node(&self, t: u32) -> bool {
        self.p.outcome(t) != Outcome::Fail
    }

    fn dependency_edges(&mut self) {
        // ww: consecutive appends in each version order.
        for key in 0..self.order.len() {
            let Some(order) = &self.order[key] else {
                continue;
            };
            let writers: Vec<Option<u32>> = order
                .iter()
                .map(|&e| self.p.appender.get(&(key as u32, e)).map(|&(w, _)| w))
                .collect();
            for i in 1..order.len() {
                if let (Some(a), Some(b)) = (writers[i - 1], writers[i])
                    && a != b
                    && self.node(a)
                    && self.node(b)
                {
                    self.graph.add(a, b, WW);
                }
            }
        }
        // wr and rw: external reads only.
        for (t, txn) in self.p.txns.iter().enumerate() {
            let t = t as u32;
            let mut touched: HashSet<u32> = HashSet::new();
            for mop in &txn.mops {
                let (key, list) = match mop {
                    Mop::Append { key, .. } => {
                        touched.insert(*key);
                        continue;
                    }
                    Mop::Read { key, list } => (*key, list),
                };
                if !touched.insert(key) {
                    continue;
                }
                let Some(list) = list else { continue };
                if let Some(&last) = list.last()
                    && let Some(&(w, _)) = self.p.appender.get(&(key, last))
                    && w != t
                    && self.node(w)
                {
                    self.graph.add(w, t, WR);
                }
                let Some(order) = &self.order[key as usize] else {
                    continue;
                };
                if !order.starts_with(list) {
                    continue;
                }
                if let Some(&next) = order.get(list.len())
                    && let Some(&(w, _)) = self.p.appender.get(&(key, next))
                    && w != t
                    && self.node(w)
                {
                    self.graph.add(t, w, RW);
                }
            }
        }
    }

    fn process_edges(&mut self) {
        let mut last_ok: HashMap<u64, u32> = HashMap::new();
        for (t, txn) in self.p.txns.iter().enumerate() {
            let t = t as u32;
            if txn.op.outcome == Outcome::Fail {
                continue;
            }
            if let Some(&prev) = last_ok.get(&txn.op.process) {
                self.graph.add(prev, t, PROCESS);
            }
            if txn.op.outcome == Outcome::Ok {
                last_ok.insert(txn.op.process, t);
            }
        }
    }

    /// Realtime edges, transitively reduced as Elle does: a transaction gets an edge from every
    /// transaction in the frontier (completed, and not yet followed by a completed transaction
    /// that began after it) when it begins; when it completes, it replaces its predecessors in
    /// the frontier, since anything beginning later follows them through it.
    fn realtime_edges(&mut self) {
        let mut events: Vec<(usize, bool, u32)> = Vec::new();
        for (t, txn) in self.p.txns.iter().enumerate() {
            if txn.op.outcome == Outcome::Fail {
                continue;
            }
            events.push((txn.op.invoke.index, false, t as u32));
            if txn.op.outcome == Outcome::Ok {
                let end = txn.op.complete.expect("ok transactions complete");
                events.push((end.index, true, t as u32));
            }
        }
        events.sort_unstable();
        let mut frontier: BTreeSet<u32> = BTreeSet::new();
        let mut preds: HashMap<u32, Vec<u32>> = HashMap::new();
        for (_, completes, t) in events {
            if completes {
                for p in preds.remove(&t).unwrap_or_default() {
                    frontier.remove(&p);
                }
                frontier.insert(t);
            } else {
                for &p in &frontier {
                    self.graph.add(p, t, REALTIME);
                }
                preds.insert(t, frontier.iter().copied().collect());
            }
        }
    }

    fn cycles(&mut self) {
        let components = self.graph.cycles_components();
        if components.is_empty() {
            return;
        }
        let graph = std::mem::replace(&mut self.graph, Graph::new(0));
        let mut finder = CycleFinder::new(&graph);
        for component in &components {
            finder.enter(component);
            let mut found: Vec<(CycleKind, Order)> = Vec::new();
            // No order edges, then process order, then real time too: each kind of cycle is
            // reported with the weakest order that shows it.
            for extra in [0, PROCESS, PROCESS | REALTIME] {
                let specs = [
                    (CycleKind::G0, WW, WW),
                    (CycleKind::G1c, WR, WW | WR),
                    (CycleKind::GSingle, RW, WW | WR),
                    (CycleKind::G2Item, RW, WW | WR | RW),
                ];
                for (kind, first, path) in specs {
                    if found.iter().any(|&(k, _)| k == kind)
                        || (kind == CycleKind::G2Item
                            && found.iter().any(|&(k, _)| k == CycleKind::GSingle))
                    {
                        continue;
                    }
                    let Some(hops) = finder.shortest(component, first, path | extra, SEARCH_BUDGET)
                    else {
                        continue;
                    };
                    let cycle = self.describe(&hops);
                    found.push((cycle.kind, cycle.order));
                    self.anomalies.push(Anomaly::Cycle(cycle));
                }
            }
            if found.is_empty() {
                // Budgets ran out before any search finished; any cycle will do.
                let hops = finder
                    .shortest(component, WW | WR | RW, u8::MAX, u64::MAX)
                    .expect("a strongly connected component has a cycle");
                let cycle = self.describe(&hops);
                self.anomalies.push(Anomaly::Cycle(cycle));
            }
        }
        self.graph = graph;
    }

    /// Names a cycle by the edges it actually uses, and explains each edge.
    fn describe(&self, hops: &[Hop]) -> Cycle {
        let nodes: Vec<u32> = hops.iter().map(|h| h.from).collect();
        let index_of = |t: u32| nodes.iter().position(|&n| n == t).expect("on the cycle");
        let rw = hops.iter().filter(|h| h.kind == RW).count();
        let kind = match rw {
            0 if hops.iter().any(|h| h.kind == WR) => CycleKind::G1c,
            0 => CycleKind::G0,
            1 => CycleKind::GSingle,
            _ => CycleKind::G2Item,
        };
        let order = if hops.iter().any(|h| h.kind == REALTIME) {
            Order::Realtime
        } else if hops.iter().any(|h| h.kind == PROCESS) {
            Order::Process
        } else {
            Order::None
        };
        let edges = hops
            .iter()
            .map(|h| {
                let (key, elements) = self.witness(h);
                Edge {
                    from: index_of(h.from),
                    to: index_of(h.to),
                    kind: EdgeKind::from_bit(h.kind),
                    key: key.map(|k| self.p.key(k)),
                    elements: self.p.elems(&elements),
                }
            })
            .collect();
        Cycle {
            kind,
            order,
            transactions: nodes.iter().map(|&t| self.op(t)).collect(),
            edges,
        }
    }

    /// The key and elements that show a dependency edge (found again rather than stored: only
    /// the few edges on reported cycles need them).
    fn witness(&self, hop: &Hop) -> (Option<u32>, Vec<u32>) {
        let (from, to) = (hop.from, hop.to);
        let appends = |t: u32| {
            self.p.txns[t as usize]
                .mops
                .iter()
                .filter_map(|m| match m {
                    Mop::Append { key, elem } => Some((*key, *elem)),
                    Mop::Read { .. } => None,
                })
                .collect::<Vec<_>>()
        };
        let external_reads = |t: u32| {
            let mut touched = HashSet::new();
            let mut reads = Vec::new();
            for m in &self.p.txns[t as usize].mops {
                match m {
                    Mop::Append { key, .. } => {
                        touched.insert(*key);
                    }
                    Mop::Read { key, list } => {
                        if touched.insert(*key)
                            && let Some(l) = list
                        {
                            reads.push((*key, l.clone()));
                        }
                    }
                }
            }
            reads
        };
        let writer = |key: u32, e: u32| self.p.appender.get(&(key, e)).map(|&(w, _)| w);
        match hop.kind {
            WW => {
                for (key, e) in appends(from) {
                    let (Some(order), Some(&i)) =
                        (&self.order[key as usize], self.position.get(&(key, e)))
                    else {
                        continue;
                    };
                    if let Some(&next) = order.get(i + 1)
                        && writer(key, next) == Some(to)
                    {
                        return (Some(key), vec![e, next]);
                    }
                }
            }
            WR => {
                for (key, l) in external_reads(to) {
                    if let Some(&last) = l.last()
                        && writer(key, last) == Some(from)
                    {
                        return (Some(key), vec![last]);
                    }
                }
            }
            RW => {
                for (key, l) in external_reads(from) {
                    if let Some(order) = &self.order[key as usize]
                        && order.starts_with(&l)
                        && let Some(&next) = order.get(l.len())
                        && writer(key, next) == Some(to)
                    {
                        let mut elements: Vec<u32> = l.last().copied().into_iter().collect();
                        elements.push(next);
                        return (Some(key), elements);
                    }
                }
            }
            _ => {}
        }
        (None, Vec::new())
    }
}
