//! What the transactional checkers read alike: `txn` operations, their micro-operations as
//! `[f, key, value]` triples, and keys and values as small integers.

use std::collections::HashMap;

use serde_json::Value;

use crate::checker::CheckError;
use crate::history::{History, Keys, Operation, Outcome};

/// Canonical JSON text to a small integer, and back.
#[derive(Default)]
pub(crate) struct Interner {
    ids: HashMap<String, u32>,
    pub(crate) values: Vec<Value>,
}

impl Interner {
    pub(crate) fn intern(&mut self, value: &Value) -> u32 {
        // serde_json's maps are sorted, so equal values print equally.
        let next = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct values");
        let id = *self.ids.entry(value.to_string()).or_insert(next);
        if id == next {
            self.values.push(value.clone());
        }
        id
    }

    /// The value interned as `id`.
    pub(crate) fn value(&self, id: u32) -> Value {
        self.values[id as usize].clone()
    }
}

/// A transaction as a checker reads it: the operation, its value the micro-operations as
/// completed (for an `ok` transaction) or as invoked (for any other: its reads unknown).
pub(crate) struct TxnOp {
    /// The operation, its value the micro-operations.
    pub(crate) op: Operation,
    /// The line the value was read from.
    pub(crate) line: usize,
    /// Whether its reads' values are known: it completed `ok`.
    pub(crate) known: bool,
}

/// The transactions of `history` (`f: "txn"`), in invocation order; `model` names the
/// checker in the error for any other operation.
pub(crate) fn txn_ops(history: &History, model: &'static str) -> Result<Vec<TxnOp>, CheckError> {
    let ops = history.operations(Keys::Field)?;
    let mut txns = Vec::with_capacity(ops.len());
    for mut op in ops {
        if op.f.as_str() != "txn" {
            return Err(CheckError::Unsupported {
                line: op.invoke.line,
                f: op.f,
                model,
                known: "txn",
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
        op.value = value.clone();
        txns.push(TxnOp { op, line, known });
    }
    Ok(txns)
}

/// The micro-operations of a transaction's `value`, each `[f, key, value]` made into one by
/// `op`, which is also given the error a malformed one is reported with (`why` it is).
pub(crate) fn micro_ops<M>(
    value: &Value,
    line: usize,
    mut op: impl FnMut(&Value, &Value, &Value, &dyn Fn(&str) -> CheckError) -> Result<M, CheckError>,
) -> Result<Vec<M>, CheckError> {
    let bad = |why: &str| {
        CheckError::malformed(line, value, format!("a list of micro-operations: {why}"))
    };
    triples(value, line)?
        .into_iter()
        .map(|[f, k, v]| op(f, k, v, &bad))
        .collect()
}

/// The micro-operations of a transaction's `value` (at `line`) as `[f, key, value]` triples,
/// or the error saying why not.
pub(crate) fn triples(value: &Value, line: usize) -> Result<Vec<[&Value; 3]>, CheckError> {
    let bad =
        |why| CheckError::malformed(line, value, format!("a list of micro-operations: {why}"));
    let Value::Array(items) = value else {
        return Err(bad("not a list"));
    };
    items
        .iter()
        .map(|item| match item.as_array().map(Vec::as_slice) {
            Some([f, k, v]) => Ok([f, k, v]),
            _ => Err(bad("a micro-operation is not [f, key, value]")),
        })
        .collect()
}
