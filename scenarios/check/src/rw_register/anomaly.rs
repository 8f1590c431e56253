//! The anomalies the rw-register checker reports.

use std::fmt;

use serde_json::Value;

use crate::elle::cycle::Cycle;
use crate::elle::findings::{Found, bad_read, parties};
use crate::history::Operation;
use crate::verdict::{Anomaly, Role};

/// One anomaly found in an rw-register history.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RegisterAnomaly {
    /// A cycle in the dependency graph (G0, G1c, G-single, G-nonadjacent, G2-item, with order
    /// suffixes).
    Cycle(Cycle),
    /// G1a: a committed read of a value a failed transaction wrote.
    AbortedRead {
        /// The reader.
        reader: Operation,
        /// The failed transaction.
        writer: Operation,
        /// The key.
        key: Value,
        /// The value it should never have seen.
        value: Value,
    },
    /// G1b: a committed read of a value its writer overwrote before committing.
    IntermediateRead {
        /// The reader.
        reader: Operation,
        /// The writer.
        writer: Operation,
        /// The key.
        key: Value,
        /// The value read.
        value: Value,
        /// The writer's next write of the key, which the reader should have seen instead.
        later: Value,
    },
    /// A read inconsistent with the transaction's own earlier read or write of the key.
    Internal {
        /// The transaction.
        op: Operation,
        /// The key.
        key: Value,
        /// What it should have read.
        expected: Value,
        /// What it read.
        read: Value,
    },
    /// A read of a value no transaction wrote.
    GarbageRead {
        /// The reader.
        op: Operation,
        /// The key.
        key: Value,
        /// The value.
        value: Value,
    },
    /// A read of a value the transaction itself only writes later.
    FutureRead {
        /// The transaction.
        op: Operation,
        /// The key.
        key: Value,
        /// The value read, then written.
        value: Value,
    },
    /// Two or more committed transactions read the same version of a key and each wrote it:
    /// all but one of them should have seen another's write.
    LostUpdate {
        /// The key.
        key: Value,
        /// The version they all read (`null`: the initial one).
        read: Value,
        /// The transactions, in history order.
        txns: Vec<Operation>,
    },
    /// The key's version order, as the reads and writes show it, has a cycle: some version
    /// both precedes and follows another. Its order then adds no edges.
    CyclicVersions {
        /// The key.
        key: Value,
        /// The versions on the cycle, each before the next and the last before the first.
        versions: Vec<Value>,
    },
}

impl Found for RegisterAnomaly {
    /// Its name, as Elle gives it: `G0`, `G1a`, `G1b`, `G1c`, `G-single`, `G-nonadjacent`,
    /// `G2-item` (with `-process` or `-realtime`), `internal`, `garbage-read`, `future-read`,
    /// `lost-update`, `cyclic-versions`.
    fn name(&self) -> String {
        match self {
            RegisterAnomaly::Cycle(c) => c.name(),
            RegisterAnomaly::AbortedRead { .. } => "G1a".into(),
            RegisterAnomaly::IntermediateRead { .. } => "G1b".into(),
            RegisterAnomaly::Internal { .. } => "internal".into(),
            RegisterAnomaly::GarbageRead { .. } => "garbage-read".into(),
            RegisterAnomaly::FutureRead { .. } => "future-read".into(),
            RegisterAnomaly::LostUpdate { .. } => "lost-update".into(),
            RegisterAnomaly::CyclicVersions { .. } => "cyclic-versions".into(),
        }
    }

    fn cycle(&self) -> Option<&Cycle> {
        match self {
            RegisterAnomaly::Cycle(c) => Some(c),
            _ => None,
        }
    }

    fn reported(&self) -> Anomaly {
        let name = self.name();
        let a = Anomaly::new(name.as_str(), self.to_string().trim_end());
        match self {
            RegisterAnomaly::Cycle(c) => c.reported(),
            RegisterAnomaly::AbortedRead { reader, writer, .. }
            | RegisterAnomaly::IntermediateRead { reader, writer, .. } => {
                bad_read(a, reader, writer, self.to_string())
            }
            RegisterAnomaly::Internal { op, .. }
            | RegisterAnomaly::GarbageRead { op, .. }
            | RegisterAnomaly::FutureRead { op, .. } => {
                a.op(op.invoke.index, Role::Culprit, name.as_str())
            }
            RegisterAnomaly::LostUpdate { txns, .. } => parties(a, txns),
            RegisterAnomaly::CyclicVersions { .. } => a,
        }
    }
}

impl fmt::Display for RegisterAnomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterAnomaly::Cycle(c) => write!(f, "{c}"),
            RegisterAnomaly::AbortedRead {
                reader,
                writer,
                key,
                value,
            } => writeln!(
                f,
                "G1a: {reader}\n    read key {key} = {value}, written by the failed {writer}"
            ),
            RegisterAnomaly::IntermediateRead {
                reader,
                writer,
                key,
                value,
                later,
            } => writeln!(
                f,
                "G1b: {reader}\n    read key {key} = {value}, but {writer}\n    \
                 wrote {later} to it afterwards in the same transaction"
            ),
            RegisterAnomaly::Internal {
                op,
                key,
                expected,
                read,
            } => writeln!(
                f,
                "internal: {op}\n    read key {key} = {read}, but by its own earlier read or \
                 write it should have read {expected}"
            ),
            RegisterAnomaly::GarbageRead { op, key, value } => writeln!(
                f,
                "garbage-read: {op}\n    read key {key} = {value}, which no transaction wrote"
            ),
            RegisterAnomaly::FutureRead { op, key, value } => writeln!(
                f,
                "future-read: {op}\n    read key {key} = {value} before writing it itself"
            ),
            RegisterAnomaly::LostUpdate { key, read, txns } => {
                writeln!(
                    f,
                    "lost-update on key {key}: {} committed transactions read {read} and wrote it",
                    txns.len(),
                )?;
                for t in txns {
                    writeln!(f, "    {t}")?;
                }
                Ok(())
            }
            RegisterAnomaly::CyclicVersions { key, versions } => {
                let shown: Vec<String> = versions.iter().map(Value::to_string).collect();
                writeln!(
                    f,
                    "cyclic-versions on key {key}: {} < {}",
                    shown.join(" < "),
                    shown[0]
                )
            }
        }
    }
}
