//! What shows each edge of a cycle of the list-append dependency graph (the search itself is
//! [`crate::elle::cycle::find_cycles`]).

use serde_json::Value;

use super::ElleAnomaly;
use super::infer::Analysis;
use super::parse::Mop;
use crate::elle::atom::Atom;
use crate::elle::cycle::{Shown, find_cycles};
use crate::elle::graph::{Hop, RW, WR, WW};

impl Analysis<'_> {
    pub(super) fn cycles(&mut self) {
        let found = find_cycles(&self.graph, |t| self.op(t), |h, a, b| self.explain(h, a, b));
        self.anomalies
            .extend(found.into_iter().map(ElleAnomaly::Cycle));
    }

    /// What shows the dependency edge `hop`, whose ends are `Ta` and `Tb` on the cycle.
    fn explain(&self, hop: &Hop, a: usize, b: usize) -> Shown {
        let w = self.witness(hop);
        let key = w.key.map(|k| self.p.key(k));
        let elements = self.p.elems(&w.elements);
        let k = key.clone().unwrap_or(Value::Null);
        let why = match (hop.kind, elements.as_slice()) {
            (WW, [x, y]) if w.unread => format!(
                "T{a} appended {x} to key {k}, the last element anyone read, and T{b} \
                 appended {y}, which nobody read, so after it"
            ),
            (RW, [x, y]) if w.unread => format!(
                "T{a} read key {k} ending in {x}, the last element anyone read, without {y}, \
                 which T{b} appended and nobody read"
            ),
            (RW, [y]) if w.unread => {
                format!("T{a} read key {k} empty, without {y}, which T{b} appended and nobody read")
            }
            (WW, [x, y]) => {
                format!("T{a} appended {x} to key {k}, and T{b} appended {y} right after it")
            }
            (WR, [x]) => format!("T{b} read key {k} ending in {x}, appended by T{a}"),
            (RW, [x, y]) => {
                format!("T{a} read key {k} ending in {x}, without {y}, which T{b} appended next")
            }
            (RW, [y]) => format!("T{a} read key {k} empty, without {y}, which T{b} appended first"),
            (kind, elements) => format!(
                "{} on key {k} {elements:?}",
                crate::elle::cycle::EdgeKind::from_bit(kind)
            ),
        };
        Shown {
            key,
            elements,
            unread: w.unread,
            why,
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
            let mut touched = Vec::new();
            let mut reads = Vec::new();
            for m in self.p.txns[t as usize].mops.iter() {
                let (key, read) = match m {
                    Mop::Append { key, .. } => (*key, None),
                    Mop::Read { key, read } => (*key, read.list()),
                };
                if !touched.contains(&key) {
                    touched.push(key);
                    if let Some(l) = read {
                        reads.push((key, l.to_vec()));
                    }
                }
            }
            reads
        };
        let writer = |key: u32, e: Atom| self.p.appender.get(&(key, e)).map(|&(w, _)| w);
        // `to`'s first append to `key` that no read shows.
        let unread_by = |key: u32| {
            self.unread[key as usize]
                .iter()
                .find(|&&(_, t)| t == to)
                .map(|&(e, _)| e)
        };
        let shown = |key: u32, elements: Vec<Atom>, unread: bool| Witness {
            key: Some(key),
            elements,
            unread,
        };
        match hop.kind {
            WW => {
                for (key, e) in appends(from) {
                    // Only edges on reported cycles are explained: a scan will do.
                    let Some(order) = self.order[key as usize] else {
                        continue;
                    };
                    let Some(i) = order.iter().position(|&x| x == e) else {
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
                    let mut elements: Vec<Atom> = l.last().copied().into_iter().collect();
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
    elements: Vec<Atom>,
    unread: bool,
}
