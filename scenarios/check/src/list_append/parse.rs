//! A list-append history as transactions of interned micro-operations.

use std::collections::HashMap;

use serde_json::Value;

use super::CheckError;
use crate::elle::parse::{Interner, TxnOp, micro_ops, txn_ops};
use crate::history::{History, Operation, Outcome};

#[derive(Clone, Debug)]
pub(super) enum Mop {
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

pub(super) struct Txn {
    /// The operation, its value as completed for an `ok` transaction.
    pub(super) op: Operation,
    pub(super) mops: Vec<Mop>,
}

pub(super) struct Parsed {
    pub(super) txns: Vec<Txn>,
    pub(super) keys: Interner,
    pub(super) elems: Interner,
    /// Who appended each (key, element), and at which micro-operation.
    pub(super) appender: HashMap<(u32, u32), (u32, u32)>,
}

impl Parsed {
    pub(super) fn new(history: &History) -> Result<Parsed, CheckError> {
        let ops = txn_ops(history, "list-append")?;
        let mut parsed = Parsed {
            txns: Vec::with_capacity(ops.len()),
            keys: Interner::default(),
            elems: Interner::default(),
            appender: HashMap::new(),
        };
        for TxnOp { op, line, known } in ops {
            let mops = parsed.mops(&op.value, line, known)?;
            let t = u32::try_from(parsed.txns.len()).expect("fewer than 2^32 transactions");
            for (m, mop) in mops.iter().enumerate() {
                if let Mop::Append { key, elem } = *mop {
                    if let Some(&(first, _)) = parsed.appender.get(&(key, elem)) {
                        return Err(CheckError::DuplicateAppend {
                            key: parsed.keys.value(key),
                            element: parsed.elems.value(elem),
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

    fn mops(&mut self, value: &Value, line: usize, known: bool) -> Result<Vec<Mop>, CheckError> {
        micro_ops(value, line, |f, k, v, bad| {
            let key = self.keys.intern(k);
            match f.as_str() {
                Some("append") => Ok(Mop::Append {
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
                    Ok(Mop::Read { key, list })
                }
                _ => Err(bad("a micro-operation is neither \"append\" nor \"r\"")),
            }
        })
    }

    pub(super) fn key(&self, key: u32) -> Value {
        self.keys.value(key)
    }

    pub(super) fn elem(&self, elem: u32) -> Value {
        self.elems.value(elem)
    }

    pub(super) fn elems(&self, list: &[u32]) -> Vec<Value> {
        list.iter().map(|&e| self.elem(e)).collect()
    }

    pub(super) fn outcome(&self, t: u32) -> Outcome {
        self.txns[t as usize].op.outcome
    }
}
