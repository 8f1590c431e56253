//! The order edges a consistency model adds to the dependency graph: each process's order
//! (strong session serializability) and real time (strict serializability).

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use super::Consistency;
use super::graph::{Graph, PROCESS, REALTIME};
use crate::history::{Operation, Outcome};

/// What the order edges need of a transaction: its process, how it ended, and the indices of
/// its events.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    pub(crate) process: u64,
    pub(crate) outcome: Outcome,
    pub(crate) invoke: usize,
    pub(crate) complete: Option<usize>,
}

impl From<&Operation> for Span {
    fn from(op: &Operation) -> Span {
        Span {
            process: op.process,
            outcome: op.outcome,
            invoke: op.invoke.index,
            complete: op.complete.map(|c| c.index),
        }
    }
}

/// Adds the order edges `consistency` needs between the transactions `ops` (transaction `t`
/// is `ops[t]`, in history order).
pub(crate) fn order_edges(graph: &mut Graph, ops: &[Span], consistency: Consistency) {
    if consistency != Consistency::Serializable {
        process_edges(graph, ops);
    }
    if consistency == Consistency::StrictSerializable {
        realtime_edges(graph, ops);
    }
}

/// From each committed transaction to its process's next that may have committed.
fn process_edges(graph: &mut Graph, ops: &[Span]) {
    // Only looked up, never iterated.
    let mut last_ok: FxHashMap<u64, u32> = FxHashMap::default();
    for (t, op) in ops.iter().enumerate() {
        let t = t as u32;
        if op.outcome == Outcome::Fail {
            continue;
        }
        if let Some(&prev) = last_ok.get(&op.process) {
            graph.add(prev, t, PROCESS);
        }
        if op.outcome == Outcome::Ok {
            last_ok.insert(op.process, t);
        }
    }
}

/// Realtime edges, transitively reduced as Elle does: a transaction gets an edge from every
/// transaction in the frontier (completed, and not yet followed by a completed transaction
/// that began after it) when it begins; when it completes, it replaces its predecessors in
/// the frontier, since anything beginning later follows them through it.
fn realtime_edges(graph: &mut Graph, ops: &[Span]) {
    // Each event index once: invocations as 2t, completions as 2t + 1, placed by index (no
    // sort: a history's events are numbered densely).
    const NONE: u32 = u32::MAX;
    let last = ops
        .iter()
        .map(|op| op.complete.unwrap_or(op.invoke))
        .max()
        .unwrap_or(0);
    let mut events = vec![NONE; last + 1];
    for (t, op) in ops.iter().enumerate() {
        if op.outcome == Outcome::Fail {
            continue;
        }
        events[op.invoke] = 2 * t as u32;
        if op.outcome == Outcome::Ok {
            let end = op.complete.expect("ok transactions complete");
            events[end] = 2 * t as u32 + 1;
        }
    }
    let mut frontier: BTreeSet<u32> = BTreeSet::new();
    // The frontier each transaction in flight saw when it began; vectors reused.
    let mut preds: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    let mut spare: Vec<Vec<u32>> = Vec::new();
    for e in events.into_iter().filter(|&e| e != NONE) {
        let t = e / 2;
        if e % 2 == 1 {
            if let Some(mut before) = preds.remove(&t) {
                for p in &before {
                    frontier.remove(p);
                }
                before.clear();
                spare.push(before);
            }
            frontier.insert(t);
        } else {
            let mut before = spare.pop().unwrap_or_default();
            for &p in &frontier {
                graph.add(p, t, REALTIME);
                before.push(p);
            }
            preds.insert(t, before);
        }
    }
}
