//! An rw-register history as transactions of interned micro-operations.

use std::collections::HashMap;

use serde_json::Value;

use crate::checker::CheckError;
use crate::elle::parse::{Interner, TxnOp, micro_ops, txn_ops};
use crate::history::{History, Operation, Outcome};

/// A register's version: `None` is the initial `nil`, else an interned value.
pub(super) type Version = Option<u32>;

#[derive(Clone, Copy, Debug)]
pub(super) enum Mop {
    Write {
        key: u32,
        value: u32,
    },
    /// `None`: unknown (an invocation, or a transaction that did not complete `ok`).
    Read {
        key: u32,
        value: Option<Version>,
    },
}

pub(super) struct Txn {
    /// The operation, its value as completed for an `ok` transaction.
    pub(super) op: Operation,
    pub(super) mops: Vec<Mop>,
    /// Its external reads: per key, the first read, if the transaction had not written the
    /// key before (only known reads, so only `ok` transactions have any), in key order.
    pub(super) reads: Vec<(u32, Version)>,
    /// Its external writes: per key, the last write, in key order.
    pub(super) writes: Vec<(u32, u32)>,
}

impl Txn {
    /// Its external read of `key`.
    pub(super) fn read(&self, key: u32) -> Option<Version> {
        let i = self.reads.binary_search_by_key(&key, |&(k, _)| k).ok()?;
        Some(self.reads[i].1)
    }

    /// Its external (last) write of `key`.
    pub(super) fn write(&self, key: u32) -> Option<u32> {
        let i = self.writes.binary_search_by_key(&key, |&(k, _)| k).ok()?;
        Some(self.writes[i].1)
    }
}

pub(super) struct Parsed {
    pub(super) txns: Vec<Txn>,
    pub(super) keys: Interner,
    pub(super) values: Interner,
    /// Who wrote each (key, value), at which micro-operation, and whether it was that
    /// transaction's last write of the key (the version it installed, if it committed).
    pub(super) writer: HashMap<(u32, u32), (u32, u32, bool)>,
}

impl Parsed {
    /// The history in the file at `path`, loaded in full.
    pub(super) fn from_file(path: &std::path::Path) -> Result<Parsed, CheckError> {
        Parsed::new(&History::load(path)?)
    }

    pub(super) fn new(history: &History) -> Result<Parsed, CheckError> {
        let ops = txn_ops(history, "rw-register")?;
        let mut parsed = Parsed {
            txns: Vec::with_capacity(ops.len()),
            keys: Interner::default(),
            values: Interner::default(),
            writer: HashMap::new(),
        };
        for TxnOp { op, line, known } in ops {
            let mops = parsed.mops(&op.value, line, known)?;
            let t = u32::try_from(parsed.txns.len()).expect("fewer than 2^32 transactions");
            let mut reads: HashMap<u32, Version> = HashMap::new();
            let mut writes: HashMap<u32, u32> = HashMap::new();
            for (m, mop) in mops.iter().enumerate() {
                match *mop {
                    Mop::Write { key, value } => {
                        if let Some(&(first, _, _)) = parsed.writer.get(&(key, value)) {
                            return Err(CheckError::DuplicateWrite {
                                key: parsed.keys.value(key),
                                value: parsed.values.value(value),
                                first_line: parsed.txns[first as usize].op.invoke.line,
                                line: op.invoke.line,
                            });
                        }
                        let last = !mops[m + 1..]
                            .iter()
                            .any(|later| matches!(later, Mop::Write { key: k, .. } if *k == key));
                        parsed.writer.insert((key, value), (t, m as u32, last));
                        writes.insert(key, value);
                    }
                    Mop::Read {
                        key,
                        value: Some(v),
                    } if !writes.contains_key(&key) => {
                        reads.entry(key).or_insert(v);
                    }
                    Mop::Read { .. } => {}
                }
            }
            let mut reads: Vec<(u32, Version)> = reads.into_iter().collect();
            reads.sort_unstable();
            let mut writes: Vec<(u32, u32)> = writes.into_iter().collect();
            writes.sort_unstable();
            parsed.txns.push(Txn {
                op,
                mops,
                reads,
                writes,
            });
        }
        Ok(parsed)
    }

    fn mops(&mut self, value: &Value, line: usize, known: bool) -> Result<Vec<Mop>, CheckError> {
        micro_ops(value, line, |f, k, v, bad| {
            let key = self.keys.intern(k);
            match f.as_str() {
                Some("w") if v.is_null() => Err(bad("a write of null")),
                Some("w") => Ok(Mop::Write {
                    key,
                    value: self.values.intern(v),
                }),
                Some("r") => {
                    let value = match (known, v) {
                        (false, _) => None,
                        (true, Value::Null) => Some(None),
                        (true, Value::Array(_) | Value::Object(_)) => {
                            return Err(bad("a read's value is a list or a map, not a register's"));
                        }
                        (true, v) => Some(Some(self.values.intern(v))),
                    };
                    Ok(Mop::Read { key, value })
                }
                _ => Err(bad("a micro-operation is neither \"w\" nor \"r\"")),
            }
        })
    }

    pub(super) fn key(&self, key: u32) -> Value {
        self.keys.value(key)
    }

    /// A version as JSON: `null` for the initial one.
    pub(super) fn version(&self, v: Version) -> Value {
        v.map_or(Value::Null, |v| self.values.value(v))
    }

    pub(super) fn outcome(&self, t: u32) -> Outcome {
        self.txns[t as usize].op.outcome
    }

    /// The transaction that installed `(key, value)`: its last write of the key, in a
    /// transaction that did not fail.
    pub(super) fn installer(&self, key: u32, value: u32) -> Option<u32> {
        match self.writer.get(&(key, value)) {
            Some(&(t, _, true)) if self.outcome(t) != Outcome::Fail => Some(t),
            _ => None,
        }
    }
}
