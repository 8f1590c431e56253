//! The anomalies the checker reports, and its verdict.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;

use super::Consistency;
use super::graph::{PROCESS, REALTIME, RW, WR, WW};
use crate::history::Operation;

/// Which cycle of the dependency graph, by Adya's phenomena.
///
/// ```
/// use avout_check::list_append::CycleKind;
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
    /// Two or more read-write edges, no two adjacent (snapshot isolation forbids it).
    GNonadjacent,
    /// Two or more read-write edges, two of them adjacent (write skew; snapshot isolation
    /// allows it).
    G2Item,
}

impl fmt::Display for CycleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CycleKind::G0 => "G0",
            CycleKind::G1c => "G1c",
            CycleKind::GSingle => "G-single",
            CycleKind::GNonadjacent => "G-nonadjacent",
            CycleKind::G2Item => "G2-item",
        })
    }
}

/// The order edges a cycle needs besides dependencies.
///
/// ```
/// use avout_check::list_append::Order;
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
    /// assert_eq!(avout_check::list_append::Order::None.suffix(), "");
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
/// use avout_check::list_append::EdgeKind;
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
    pub(super) fn from_bit(bit: u8) -> EdgeKind {
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
/// use avout_check::list_append::{Edge, EdgeKind};
/// let e = Edge {
///     from: 0, to: 1, kind: EdgeKind::Realtime, key: None, elements: vec![], unread: false,
/// };
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
    /// For `ww` and `rw`: the later append was never read, so the version order only places it
    /// after every element read (the edge stands for a chain of edges through the appends
    /// between, as in Elle).
    pub unread: bool,
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = (self.from, self.to);
        write!(f, "T{a} -{}-> T{b}: ", self.kind)?;
        let key = self.key.as_ref().unwrap_or(&Value::Null);
        match (self.kind, self.elements.as_slice()) {
            (EdgeKind::Ww, [x, y]) if self.unread => write!(
                f,
                "T{a} appended {x} to key {key}, the last element anyone read, and T{b} \
                 appended {y}, which nobody read, so after it"
            ),
            (EdgeKind::Rw, [x, y]) if self.unread => write!(
                f,
                "T{a} read key {key} ending in {x}, the last element anyone read, without {y}, \
                 which T{b} appended and nobody read"
            ),
            (EdgeKind::Rw, [y]) if self.unread => write!(
                f,
                "T{a} read key {key} empty, without {y}, which T{b} appended and nobody read"
            ),
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
/// use avout_check::list_append::{check_list_append, Anomaly, CycleKind};
/// use avout_check::history::{Event, History, F};
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
    /// use avout_check::list_append::{Cycle, CycleKind, Order};
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
/// use avout_check::list_append::Expected;
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
/// use avout_check::list_append::{check_list_append, Anomaly};
/// use avout_check::history::{Event, History, F};
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
    /// A cycle in the dependency graph (G0, G1c, G-single, G-nonadjacent, G2-item, with order
    /// suffixes).
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
    /// A transaction read an element it only appended later (Elle's future read: it saw its
    /// own write before making it).
    FutureRead {
        /// The transaction.
        op: Operation,
        /// The key.
        key: Value,
        /// The element read, then appended.
        element: Value,
    },
    /// Two or more committed transactions read the same version of a key and each appended to
    /// it: all but one of them should have seen another's append (Elle's lost update).
    LostUpdate {
        /// The key.
        key: Value,
        /// The version they all read.
        read: Vec<Value>,
        /// The transactions, in history order.
        txns: Vec<Operation>,
    },
}

impl Anomaly {
    /// Its name, as Elle gives it: `G0`, `G1a`, `G1b`, `G1c`, `G-single`, `G-nonadjacent`,
    /// `G2-item` (with `-process` or `-realtime`), `internal`, `future-read`, `lost-update`,
    /// `incompatible-order`, `duplicate-elements`, `garbage-read`.
    ///
    /// ```
    /// use avout_check::list_append::{Anomaly, Expected};
    /// use avout_check::history::{Operation, Outcome, Position, F};
    /// let at = |index| Position { index, line: index + 1 };
    /// let op = Operation {
    ///     process: 0, f: F::Other("txn".into()), key: None, value: serde_json::Value::Null,
    ///     outcome: Outcome::Ok, invoke: at(0), complete: Some(at(1)), error: None,
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
            Anomaly::FutureRead { .. } => "future-read".into(),
            Anomaly::LostUpdate { .. } => "lost-update".into(),
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
            Anomaly::FutureRead { op, key, element } => writeln!(
                f,
                "future-read: {op}\n    read {element} on key {key} before appending it itself"
            ),
            Anomaly::LostUpdate { key, read, txns } => {
                writeln!(
                    f,
                    "lost-update on key {key}: {} committed transactions read {} and appended \
                     to it",
                    txns.len(),
                    list(read)
                )?;
                for t in txns {
                    writeln!(f, "    {t}")?;
                }
                Ok(())
            }
        }
    }
}

/// The result of a list-append check.
///
/// ```
/// use avout_check::list_append::check_list_append;
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
    /// Every anomaly found: the others by check, each in history order, then cycles by
    /// component.
    pub anomalies: Vec<Anomaly>,
}

impl ListAppendVerdict {
    /// Whether no anomaly was found.
    ///
    /// ```
    /// use avout_check::list_append::check_list_append;
    /// assert!(check_list_append(&Default::default()).unwrap().is_valid());
    /// ```
    pub fn is_valid(&self) -> bool {
        self.anomalies.is_empty()
    }

    /// The names of the anomalies found, sorted and without repeats.
    ///
    /// ```
    /// use avout_check::list_append::check_list_append;
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
