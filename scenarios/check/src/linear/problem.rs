//! One key's operations as a search problem: values interned, operations that cannot matter
//! dropped, and the account of a violation the search found.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::search::{self, Kind, Op};
use super::{Cause, Model, Violation};
use crate::checker::CheckError;
use crate::history::{F, Operation, Outcome};

const MAX_OPEN_REPORTED: usize = 16;

/// Operation indices per key, keys in order of first appearance.
pub(super) fn group_by_key(operations: &[Operation]) -> Vec<(Option<Value>, Vec<usize>)> {
    let mut groups: Vec<(Option<Value>, Vec<usize>)> = Vec::new();
    let mut index: HashMap<Option<String>, usize> = HashMap::new();
    for (i, op) in operations.iter().enumerate() {
        let canonical = op.key.as_ref().map(Value::to_string);
        let g = *index.entry(canonical).or_insert_with(|| {
            groups.push((op.key.clone(), Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(i);
    }
    groups
}

/// Register values as small integers; 0 is `null`, the initial value.
struct Interner {
    ids: HashMap<String, u32>,
    values: Vec<Value>,
}

impl Interner {
    fn new() -> Self {
        Interner {
            ids: HashMap::from([(Value::Null.to_string(), 0)]),
            values: vec![Value::Null],
        }
    }

    fn intern(&mut self, value: &Value) -> u32 {
        // serde_json's maps are sorted, so equal values print equally.
        let text = value.to_string();
        let next = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct values");
        let id = *self.ids.entry(text).or_insert(next);
        if id == next {
            self.values.push(value.clone());
        }
        assert!(
            id < u32::MAX >> 1,
            "values must fit beside the search's flag bit"
        );
        id
    }
}

/// One key's operations, ready for the search.
pub(super) struct Problem {
    pub(super) ops: Vec<Op>,
    /// For each search operation, its index among all operations.
    source: Vec<usize>,
    values: Vec<Value>,
}

impl Problem {
    pub(super) fn build(
        model: Model,
        operations: &[Operation],
        members: &[usize],
    ) -> Result<Self, CheckError> {
        let mut interner = Interner::new();
        let mut candidates: Vec<(usize, Kind)> = Vec::new();
        for &i in members {
            let op = &operations[i];
            let unsupported = || CheckError::Unsupported {
                line: op.invoke.line,
                f: op.f.clone(),
                model: model.name(),
                known: match model {
                    Model::Register => "read, write",
                    Model::CasRegister => "read, write, cas",
                },
            };
            let kind = match &op.f {
                F::Read => Kind::Read(interner.intern(&op.value)),
                F::Write => Kind::Write(interner.intern(&op.value)),
                F::Cas if model == Model::CasRegister => match &op.value {
                    Value::Array(pair) if pair.len() == 2 => {
                        Kind::Cas(interner.intern(&pair[0]), interner.intern(&pair[1]))
                    }
                    other => {
                        return Err(CheckError::malformed(
                            op.invoke.line,
                            other,
                            "an [expected, new] pair (a cas value)",
                        ));
                    }
                },
                F::Cas | F::Other(_) => return Err(unsupported()),
            };
            let happened = match op.outcome {
                Outcome::Ok => true,
                Outcome::Info => !matches!(kind, Kind::Read(_)),
                Outcome::Fail => false,
            };
            if happened {
                candidates.push((i, kind));
            }
        }
        let mut observed = HashSet::new();
        for &(i, kind) in &candidates {
            match kind {
                Kind::Read(v) if operations[i].outcome == Outcome::Ok => {
                    observed.insert(v);
                }
                Kind::Cas(expected, _) => {
                    observed.insert(expected);
                }
                Kind::Read(_) | Kind::Write(_) => {}
            }
        }
        let mut problem = Problem {
            ops: Vec::with_capacity(candidates.len()),
            source: Vec::with_capacity(candidates.len()),
            values: Vec::new(),
        };
        for (i, kind) in candidates {
            let op = &operations[i];
            let definite = op.outcome == Outcome::Ok;
            let leaves = match kind {
                Kind::Write(v) | Kind::Cas(_, v) => v,
                Kind::Read(v) => v,
            };
            if !definite && !observed.contains(&leaves) {
                continue;
            }
            problem.ops.push(Op {
                kind,
                call: op.invoke.index,
                ret: if definite {
                    Some(op.complete.expect("ok operations have completions").index)
                } else {
                    None
                },
            });
            problem.source.push(i);
        }
        problem.values = interner.values;
        Ok(problem)
    }

    /// The earliest-completing operation that observes a value (other than the initial `null`)
    /// that no write or cas that may have happened, invoked before the observer completed,
    /// produces. Such an operation can never be placed, and finding it needs no search, which
    /// for a failing history must otherwise exhaust every order of the prefix.
    pub(super) fn unwritable(&self) -> Option<usize> {
        let mut first_producer: HashMap<u32, usize> = HashMap::from([(0, 0)]);
        for op in &self.ops {
            if let Kind::Write(v) | Kind::Cas(_, v) = op.kind {
                let call = first_producer.entry(v).or_insert(op.call);
                *call = (*call).min(op.call);
            }
        }
        (0..self.ops.len())
            .filter(|&i| {
                let op = &self.ops[i];
                let (Kind::Read(v) | Kind::Cas(v, _)) = op.kind else {
                    return false;
                };
                let Some(ret) = op.ret else { return false };
                v != 0 && first_producer.get(&v).is_none_or(|&call| call > ret)
            })
            .min_by_key(|&i| self.ops[i].ret)
    }

    pub(super) fn explain(
        &self,
        key: Option<Value>,
        operations: &[Operation],
        stuck: &search::Stuck,
    ) -> Violation {
        let op_of = |i: usize| operations[self.source[i]].clone();
        let blocked = &self.ops[stuck.op];
        let end = blocked.ret.expect("only definite operations block");
        let open: Vec<usize> = (0..self.ops.len())
            .filter(|&i| {
                let op = &self.ops[i];
                i != stuck.op && op.call < end && op.ret.is_none_or(|r| r > end)
            })
            .collect();
        let open = open[open.len().saturating_sub(MAX_OPEN_REPORTED)..]
            .iter()
            .map(|&i| op_of(i))
            .collect();
        Violation {
            key,
            cause: Cause::NoOrder,
            op: op_of(stuck.op),
            states: stuck
                .states
                .iter()
                .map(|&v| self.values[v as usize].clone())
                .collect(),
            open,
            path: stuck.tail.iter().map(|&i| op_of(i)).collect(),
            path_len: stuck.depth,
        }
    }
}
