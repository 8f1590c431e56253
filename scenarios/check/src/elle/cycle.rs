//! Cycles of the dependency graph: which kinds to look for in each strongly connected
//! component, in what order, how a found cycle is named by Adya's phenomena, and how a
//! verdict shows it. What shows each dependency edge is the workload's to say.

use std::fmt;

use serde_json::Value;

use super::graph::{CycleFinder, CycleSpec, Graph, Hop, PROCESS, REALTIME, RW, RwRule, WR, WW};
use crate::history::Operation;
use crate::verdict::{Anomaly, Role};

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
    /// Write-write: the later write installed the version right after the earlier's.
    Ww,
    /// Write-read: the reader saw the writer's write.
    Wr,
    /// Read-write (anti-dependency): the reader did not see the writer's write.
    Rw,
    /// Process order.
    Process,
    /// Real-time order.
    Realtime,
}

impl EdgeKind {
    pub(crate) fn from_bit(bit: u8) -> EdgeKind {
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

/// What shows a dependency edge, as the workload finds it.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct Shown {
    /// The key.
    pub(crate) key: Option<Value>,
    /// The values that show it (the workload says which).
    pub(crate) elements: Vec<Value>,
    /// The later write's place in the version order is inferred, not read.
    pub(crate) unread: bool,
    /// The explanation, naming the transactions `T{from}` and `T{to}`.
    pub(crate) why: String,
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
    /// The values that show it: for list-append, for `ww` the two consecutive appends, for
    /// `wr` the element read last, for `rw` the element read last (absent for an empty read)
    /// and the one appended next; for rw-register the versions (`null` for the initial one).
    pub(crate) elements: Vec<Value>,
    /// For `ww` and `rw`: the later write's place was inferred (an append nobody read, placed
    /// after every element read, as in Elle).
    pub(crate) unread: bool,
    /// Why the edge is there, in the workload's words.
    pub(crate) why: String,
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "T{} -{}-> T{}: {}",
            self.from, self.kind, self.to, self.why
        )
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

    /// As a verdict reports it: its transactions and edges.
    pub(crate) fn reported(&self) -> Anomaly {
        let mut path = String::from("T0");
        for e in &self.edges {
            path.push_str(&format!(" -{}-> T{}", e.kind, e.to));
        }
        let mut a = Anomaly::new(self.name(), self.to_string().trim_end()).titled(format!(
            "a cycle of {} transactions: {path}",
            self.transactions.len()
        ));
        for (i, tx) in self.transactions.iter().enumerate() {
            a = a.op(tx.invoke.index, Role::Party, format!("T{i}"));
        }
        for e in &self.edges {
            let key = match &e.key {
                Some(Value::String(k)) => format!(" {k}"),
                Some(k) => format!(" {k}"),
                None => String::new(),
            };
            a = a.link(
                self.transactions[e.from].invoke.index,
                self.transactions[e.to].invoke.index,
                e.kind.to_string(),
                format!("{}{key}", e.kind),
                e.to_string(),
            );
        }
        a
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

/// Budget of node visits per cycle search in one component; past it, the shortest cycle found
/// so far is reported (a longer one than necessary, never a wrong one).
const SEARCH_BUDGET: u64 = 2_000_000;

/// The kinds searched for, most severe first, each with the edges it may use (before order
/// edges are added).
const SPECS: [(CycleKind, CycleSpec); 5] = [
    (
        CycleKind::G0,
        CycleSpec {
            first: WW,
            path: WW,
            rw: RwRule::Free,
        },
    ),
    (
        CycleKind::G1c,
        CycleSpec {
            first: WR,
            path: WW | WR,
            rw: RwRule::Free,
        },
    ),
    (
        CycleKind::GSingle,
        CycleSpec {
            first: RW,
            path: WW | WR,
            rw: RwRule::Free,
        },
    ),
    (
        CycleKind::GNonadjacent,
        CycleSpec {
            first: RW,
            path: WW | WR | RW,
            rw: RwRule::NonAdjacent,
        },
    ),
    (
        CycleKind::G2Item,
        CycleSpec {
            first: RW,
            path: WW | WR | RW,
            rw: RwRule::Adjacent,
        },
    ),
];

/// The cycles of a sealed `graph`, component by component, each kind with the weakest order
/// that shows it. `op(t)` is transaction `t`; `explain(hop, a, b)` says what shows the
/// dependency edge `hop`, whose ends are `Ta` and `Tb` on the cycle.
pub(crate) fn find_cycles(
    graph: &Graph,
    op: impl Fn(u32) -> Operation,
    mut explain: impl FnMut(&Hop, usize, usize) -> Shown,
) -> Vec<Cycle> {
    let mut cycles = Vec::new();
    let components = graph.cycles_components();
    if components.is_empty() {
        return cycles;
    }
    let mut finder = CycleFinder::new(graph);
    let mut describe = |hops: &[Hop]| describe(hops, &op, &mut explain);
    for component in &components {
        finder.enter(component);
        let mut found: Vec<CycleKind> = Vec::new();
        // No order edges, then process order, then real time too: each kind of cycle is
        // reported with the weakest order that shows it.
        for extra in [0, PROCESS, PROCESS | REALTIME] {
            for (kind, spec) in SPECS {
                // A G-single is the one-rw case of G-nonadjacent (Elle's implication).
                let implied =
                    kind == CycleKind::GNonadjacent && found.contains(&CycleKind::GSingle);
                if found.contains(&kind) || implied {
                    continue;
                }
                let spec = CycleSpec {
                    path: spec.path | extra,
                    ..spec
                };
                let Some(hops) = finder.shortest(component, spec, SEARCH_BUDGET) else {
                    continue;
                };
                let cycle = describe(&hops);
                found.push(cycle.kind);
                cycles.push(cycle);
            }
        }
        if found.is_empty() {
            // Budgets ran out before any search finished (or only walks that revisit a
            // transaction were found); any cycle will do.
            let any = CycleSpec {
                first: WW | WR | RW,
                path: u8::MAX,
                rw: RwRule::Free,
            };
            let hops = finder
                .shortest(component, any, u64::MAX)
                .expect("a strongly connected component has a cycle");
            cycles.push(describe(&hops));
        }
    }
    cycles
}

/// Names a cycle by the edges it actually uses, and explains each edge.
fn describe(
    hops: &[Hop],
    op: impl Fn(u32) -> Operation,
    mut explain: impl FnMut(&Hop, usize, usize) -> Shown,
) -> Cycle {
    let n = hops.len();
    let rw: Vec<bool> = hops.iter().map(|h| h.kind == RW).collect();
    let rw_count = rw.iter().filter(|&&r| r).count();
    let adjacent = (0..n).any(|i| rw[i] && rw[(i + 1) % n]);
    let kind = match rw_count {
        0 if hops.iter().any(|h| h.kind == WR) => CycleKind::G1c,
        0 => CycleKind::G0,
        1 => CycleKind::GSingle,
        _ if adjacent => CycleKind::G2Item,
        _ => CycleKind::GNonadjacent,
    };
    let order = if hops.iter().any(|h| h.kind == REALTIME) {
        Order::Realtime
    } else if hops.iter().any(|h| h.kind == PROCESS) {
        Order::Process
    } else {
        Order::None
    };
    let edges = hops
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let (a, b) = (i, (i + 1) % n);
            let shown = match h.kind {
                PROCESS => Shown {
                    why: format!("T{b} followed T{a} on its process"),
                    ..Shown::default()
                },
                REALTIME => Shown {
                    why: format!("T{a} completed before T{b} began"),
                    ..Shown::default()
                },
                _ => explain(h, a, b),
            };
            Edge {
                from: a,
                to: b,
                kind: EdgeKind::from_bit(h.kind),
                key: shown.key,
                elements: shown.elements,
                unread: shown.unread,
                why: shown.why,
            }
        })
        .collect();
    Cycle {
        kind,
        order,
        transactions: hops.iter().map(|h| op(h.from)).collect(),
        edges,
    }
}
