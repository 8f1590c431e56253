//! The anomalies the checker reports, and its verdict.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;

use super::Consistency;
use super::graph::{PROCESS, REALTIME, RW, WR, WW};
use crate::history::Operation;
use crate::verdict::{Anomaly, Role, Verdict};

/// Which cycle of the dependency graph, by Adya's phenomena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum CycleKind {
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Order {
    /// None: a serializability anomaly.
    None,
    /// Process order.
    Process,
    /// Real-time order.
    Realtime,
}

impl Order {
    /// How the anomaly's name says so: `""`, `"-process"` or `"-realtime"`.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Order::None => "",
            Order::Process => "-process",
            Order::Realtime => "-realtime",
        }
    }
}

/// The kind of an edge of the dependency graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum EdgeKind {
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
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Edge {
    /// The transaction it leaves, as an index into [`Cycle::transactions`].
    pub(crate) from: usize,
    /// The transaction it enters, likewise.
    pub(crate) to: usize,
    /// Its kind.
    pub(crate) kind: EdgeKind,
    /// The key, for a dependency edge.
    pub(crate) key: Option<Value>,
    /// The elements that show it: for `ww` the two consecutive appends; for `wr` the element
    /// read last; for `rw` the element read last (absent for an empty read) and the one appended
    /// next.
    pub(crate) elements: Vec<Value>,
    /// For `ww` and `rw`: the later append was never read, so the version order only places it
    /// after every element read (the edge stands for a chain of edges through the appends
    /// between, as in Elle).
    pub(crate) unread: bool,
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
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Cycle {
    /// Which phenomenon.
    pub(crate) kind: CycleKind,
    /// The order edges it needs.
    pub(crate) order: Order,
    /// The transactions on it, as completed (an `info` one as invoked).
    pub(crate) transactions: Vec<Operation>,
    /// Its edges, from `T0` round to `T0`.
    pub(crate) edges: Vec<Edge>,
}

impl Cycle {
    /// Its name, as Elle gives it: `G-single`, `G0-realtime`, …
    pub(crate) fn name(&self) -> String {
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
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expected {
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
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ElleAnomaly {
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

impl ElleAnomaly {
    /// Its name, as Elle gives it: `G0`, `G1a`, `G1b`, `G1c`, `G-single`, `G-nonadjacent`,
    /// `G2-item` (with `-process` or `-realtime`), `internal`, `future-read`, `lost-update`,
    /// `incompatible-order`, `duplicate-elements`, `garbage-read`.
    pub(crate) fn name(&self) -> String {
        match self {
            ElleAnomaly::Cycle(c) => c.name(),
            ElleAnomaly::AbortedRead { .. } => "G1a".into(),
            ElleAnomaly::IntermediateRead { .. } => "G1b".into(),
            ElleAnomaly::Internal { .. } => "internal".into(),
            ElleAnomaly::IncompatibleOrder { .. } => "incompatible-order".into(),
            ElleAnomaly::DuplicateElements { .. } => "duplicate-elements".into(),
            ElleAnomaly::GarbageRead { .. } => "garbage-read".into(),
            ElleAnomaly::FutureRead { .. } => "future-read".into(),
            ElleAnomaly::LostUpdate { .. } => "lost-update".into(),
        }
    }
}

impl fmt::Display for ElleAnomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElleAnomaly::Cycle(c) => write!(f, "{c}"),
            ElleAnomaly::AbortedRead {
                reader,
                writer,
                key,
                element,
            } => writeln!(
                f,
                "G1a: {reader}\n    read {element} on key {key}, appended by the failed {writer}"
            ),
            ElleAnomaly::IntermediateRead {
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
            ElleAnomaly::Internal {
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
            ElleAnomaly::IncompatibleOrder {
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
            ElleAnomaly::DuplicateElements { op, key, read } => writeln!(
                f,
                "duplicate-elements: {op}\n    read key {key} = {}",
                list(read)
            ),
            ElleAnomaly::GarbageRead { op, key, element } => writeln!(
                f,
                "garbage-read: {op}\n    read {element} on key {key}, which no transaction appended"
            ),
            ElleAnomaly::FutureRead { op, key, element } => writeln!(
                f,
                "future-read: {op}\n    read {element} on key {key} before appending it itself"
            ),
            ElleAnomaly::LostUpdate { key, read, txns } => {
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
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Findings {
    /// The model checked.
    pub(crate) consistency: Consistency,
    /// Transactions by outcome: ok, fail, info.
    pub(crate) transactions: [usize; 3],
    /// Distinct keys.
    pub(crate) keys: usize,
    /// Edges in the dependency graph (after deduplication).
    pub(crate) edges: usize,
    /// Every anomaly found: the others by check, each in history order, then cycles by
    /// component.
    pub(crate) anomalies: Vec<ElleAnomaly>,
}

impl Findings {
    /// Whether no anomaly was found.
    pub(crate) fn is_valid(&self) -> bool {
        self.anomalies.is_empty()
    }

    /// The names of the anomalies found, sorted and without repeats.
    pub(crate) fn anomaly_names(&self) -> Vec<String> {
        let names: BTreeSet<String> = self.anomalies.iter().map(ElleAnomaly::name).collect();
        names.into_iter().collect()
    }
}

impl Findings {
    /// The report's first line.
    fn summary(&self) -> String {
        let [ok, fail, info] = self.transactions;
        let mut line = format!(
            "{} as {}: {} transactions ({ok} ok, {fail} fail, {info} info), {} keys, {} edges",
            if self.is_valid() { "valid" } else { "invalid" },
            self.consistency,
            ok + fail + info,
            self.keys,
            self.edges,
        );
        if !self.is_valid() {
            line.push_str(&format!("; anomalies: {}", self.anomaly_names().join(", ")));
        }
        line
    }

    /// As one verdict of `checker`, its anomalies by name (in history order within a name).
    pub(crate) fn verdict(&self, checker: String) -> Verdict {
        let mut anomalies: Vec<&ElleAnomaly> = self.anomalies.iter().collect();
        anomalies.sort_by_key(|a| a.name());
        Verdict::new(
            checker,
            self.summary(),
            anomalies.into_iter().map(ElleAnomaly::reported).collect(),
        )
    }
}

impl fmt::Display for Findings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.verdict(String::new()).report())
    }
}

impl ElleAnomaly {
    /// As a verdict reports it: a cycle's transactions and edges, or the reads and writes at
    /// fault.
    pub(crate) fn reported(&self) -> Anomaly {
        let name = self.name();
        let a = Anomaly::new(name.as_str(), self.to_string().trim_end());
        match self {
            ElleAnomaly::Cycle(c) => {
                let mut path = String::from("T0");
                for e in &c.edges {
                    path.push_str(&format!(" -{}-> T{}", e.kind, e.to));
                }
                let mut a = a.titled(format!(
                    "a cycle of {} transactions: {path}",
                    c.transactions.len()
                ));
                for (i, tx) in c.transactions.iter().enumerate() {
                    a = a.op(tx.invoke.index, Role::Party, format!("T{i}"));
                }
                for e in &c.edges {
                    let key = match &e.key {
                        Some(Value::String(k)) => format!(" {k}"),
                        Some(k) => format!(" {k}"),
                        None => String::new(),
                    };
                    a = a.link(
                        c.transactions[e.from].invoke.index,
                        c.transactions[e.to].invoke.index,
                        e.kind.to_string(),
                        format!("{}{key}", e.kind),
                        e.to_string(),
                    );
                }
                a
            }
            ElleAnomaly::AbortedRead { reader, writer, .. }
            | ElleAnomaly::IntermediateRead { reader, writer, .. } => a
                .op(reader.invoke.index, Role::Culprit, "reader")
                .op(writer.invoke.index, Role::Party, "writer")
                .link(
                    writer.invoke.index,
                    reader.invoke.index,
                    "wr",
                    "wr",
                    self.to_string(),
                ),
            ElleAnomaly::Internal { op, .. }
            | ElleAnomaly::DuplicateElements { op, .. }
            | ElleAnomaly::GarbageRead { op, .. }
            | ElleAnomaly::FutureRead { op, .. } => {
                a.op(op.invoke.index, Role::Culprit, name.as_str())
            }
            ElleAnomaly::IncompatibleOrder { longest, other, .. } => a
                .op(other.0.invoke.index, Role::Culprit, "not a prefix")
                .op(longest.0.invoke.index, Role::Party, "longest read"),
            ElleAnomaly::LostUpdate { txns, .. } => {
                let mut a = a;
                for (i, tx) in txns.iter().enumerate() {
                    a = a.op(tx.invoke.index, Role::Party, format!("T{i}"));
                }
                a
            }
        }
    }
}
