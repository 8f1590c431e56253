//! The anomalies the list-append checker reports.

use std::fmt;

use serde_json::Value;

use crate::elle::cycle::Cycle;
use crate::elle::findings::{Found, bad_read, parties};
use crate::history::Operation;
use crate::verdict::{Anomaly, Role};

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

impl Found for ElleAnomaly {
    /// Its name, as Elle gives it: `G0`, `G1a`, `G1b`, `G1c`, `G-single`, `G-nonadjacent`,
    /// `G2-item` (with `-process` or `-realtime`), `internal`, `future-read`, `lost-update`,
    /// `incompatible-order`, `duplicate-elements`, `garbage-read`.
    fn name(&self) -> String {
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

    fn cycle(&self) -> Option<&Cycle> {
        match self {
            ElleAnomaly::Cycle(c) => Some(c),
            _ => None,
        }
    }

    /// As a verdict reports it: a cycle's transactions and edges, or the reads and writes at
    /// fault.
    fn reported(&self) -> Anomaly {
        let name = self.name();
        let a = Anomaly::new(name.as_str(), self.to_string().trim_end());
        match self {
            ElleAnomaly::Cycle(c) => c.reported(),
            ElleAnomaly::AbortedRead { reader, writer, .. }
            | ElleAnomaly::IntermediateRead { reader, writer, .. } => {
                bad_read(a, reader, writer, self.to_string())
            }
            ElleAnomaly::Internal { op, .. }
            | ElleAnomaly::DuplicateElements { op, .. }
            | ElleAnomaly::GarbageRead { op, .. }
            | ElleAnomaly::FutureRead { op, .. } => {
                a.op(op.invoke.index, Role::Culprit, name.as_str())
            }
            ElleAnomaly::IncompatibleOrder { longest, other, .. } => a
                .op(other.0.invoke.index, Role::Culprit, "not a prefix")
                .op(longest.0.invoke.index, Role::Party, "longest read"),
            ElleAnomaly::LostUpdate { txns, .. } => parties(a, txns),
        }
    }
}
