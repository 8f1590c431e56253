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
    let mut events: Vec<(usize, bool, u32)> = Vec::new();
    for (t, op) in ops.iter().enumerate() {
        if op.outcome == Outcome::Fail {
            continue;
        }
        events.push((op.invoke, false, t as u32));
        if op.outcome == Outcome::Ok {
            let end = op.complete.expect("ok transactions complete");
            events.push((end, true, t as u32));
        }
    }
    events.sort_unstable();
    let mut frontier: BTreeSet<u32> = BTreeSet::new();
    let mut preds: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    for (_, completes, t) in events {
        if completes {
            for p in preds.remove(&t).unwrap_or_default() {
                frontier.remove(&p);
            }
            frontier.insert(t);
        } else {
            for &p in &frontier {
                graph.add(p, t, REALTIME);
            }
            preds.insert(t, frontier.iter().copied().collect());
        }
    }
}
