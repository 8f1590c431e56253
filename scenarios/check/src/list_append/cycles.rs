//! Cycles in the dependency graph: which kinds to look for in each strongly connected
//! component, in what order, and how a found cycle is named and explained.

use std::collections::HashSet;

use super::graph::{CycleFinder, CycleSpec, Graph, Hop, PROCESS, REALTIME, RW, RwRule, WR, WW};
use super::infer::Analysis;
use super::parse::Mop;
use super::{Cycle, CycleKind, Edge, EdgeKind, ElleAnomaly, Order};

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

impl Analysis<'_> {
    pub(super) fn cycles(&mut self) {
        let components = self.graph.cycles_components();
        if components.is_empty() {
            return;
        }
        let graph = std::mem::replace(&mut self.graph, Graph::new(0));
        let mut finder = CycleFinder::new(&graph);
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
                    let cycle = self.describe(&hops);
                    found.push(cycle.kind);
                    self.anomalies.push(ElleAnomaly::Cycle(cycle));
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
                let cycle = self.describe(&hops);
                self.anomalies.push(ElleAnomaly::Cycle(cycle));
            }
        }
        self.graph = graph;
    }

    /// Names a cycle by the edges it actually uses, and explains each edge.
    fn describe(&self, hops: &[Hop]) -> Cycle {
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
                let witness = self.witness(h);
                Edge {
                    from: i,
                    to: (i + 1) % n,
                    kind: EdgeKind::from_bit(h.kind),
                    key: witness.key.map(|k| self.p.key(k)),
                    elements: self.p.elems(&witness.elements),
                    unread: witness.unread,
                }
            })
            .collect();
        Cycle {
            kind,
            order,
            transactions: hops.iter().map(|h| self.op(h.from)).collect(),
            edges,
        }
    }

    /// The key and elements that show a dependency edge (found again rather than stored: only
    /// the few edges on reported cycles need them).
    fn witness(&self, hop: &Hop) -> Witness {
        let (from, to) = (hop.from, hop.to);
        let appends = |t: u32| {
            self.p.txns[t as usize]
                .mops
                .iter()
                .filter_map(|m| match m {
                    Mop::Append { key, elem } => Some((*key, *elem)),
                    Mop::Read { .. } => None,
                })
                .collect::<Vec<_>>()
        };
        let external_reads = |t: u32| {
            let mut touched = HashSet::new();
            let mut reads = Vec::new();
            for m in &self.p.txns[t as usize].mops {
                match m {
                    Mop::Append { key, .. } => {
                        touched.insert(*key);
                    }
                    Mop::Read { key, list } => {
                        if touched.insert(*key)
                            && let Some(l) = list
                        {
                            reads.push((*key, l.clone()));
                        }
                    }
                }
            }
            reads
        };
        let writer = |key: u32, e: u32| self.p.appender.get(&(key, e)).map(|&(w, _)| w);
        // `to`'s first append to `key` that no read shows.
        let unread_by = |key: u32| {
            self.unread[key as usize]
                .iter()
                .find(|&&(_, t)| t == to)
                .map(|&(e, _)| e)
        };
        let shown = |key: u32, elements: Vec<u32>, unread: bool| Witness {
            key: Some(key),
            elements,
            unread,
        };
        match hop.kind {
            WW => {
                for (key, e) in appends(from) {
                    let (Some(order), Some(&i)) =
                        (&self.order[key as usize], self.position.get(&(key, e)))
                    else {
                        continue;
                    };
                    match order.get(i + 1) {
                        Some(&next) if writer(key, next) == Some(to) => {
                            return shown(key, vec![e, next], false);
                        }
                        None => {
                            if let Some(u) = unread_by(key) {
                                return shown(key, vec![e, u], true);
                            }
                        }
                        Some(_) => {}
                    }
                }
            }
            WR => {
                for (key, l) in external_reads(to) {
                    if let Some(&last) = l.last()
                        && writer(key, last) == Some(from)
                    {
                        return shown(key, vec![last], false);
                    }
                }
            }
            RW => {
                for (key, l) in external_reads(from) {
                    let Some(order) = &self.order[key as usize] else {
                        continue;
                    };
                    if !order.starts_with(&l) {
                        continue;
                    }
                    let mut elements: Vec<u32> = l.last().copied().into_iter().collect();
                    match order.get(l.len()) {
                        Some(&next) if writer(key, next) == Some(to) => {
                            elements.push(next);
                            return shown(key, elements, false);
                        }
                        None => {
                            if let Some(u) = unread_by(key) {
                                elements.push(u);
                                return shown(key, elements, true);
                            }
                        }
                        Some(_) => {}
                    }
                }
            }
            _ => {}
        }
        Witness {
            key: None,
            elements: Vec::new(),
            unread: false,
        }
    }
}

/// What shows a dependency edge.
struct Witness {
    key: Option<u32>,
    elements: Vec<u32>,
    unread: bool,
}
