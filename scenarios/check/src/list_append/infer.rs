//! The analysis of a parsed history: the checks within and across transactions, the version
//! orders (with unread appends placed), and the dependency and order edges of the graph. The
//! cycle search over that graph is in `cycles.rs`.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::parse::{Mop, Parsed};
use super::{Consistency, ElleAnomaly, Expected, Findings};
use crate::elle::findings::outcomes;
use crate::elle::graph::{Graph, RW, WR, WW};
use crate::elle::order::order_edges;
use crate::history::{Operation, Outcome};

pub(super) struct Analysis<'p> {
    pub(super) p: &'p Parsed,
    pub(super) anomalies: Vec<ElleAnomaly>,
    /// Per key, the version order of the elements read (the longest read; empty if nobody read
    /// the key non-empty), unless the key's reads are incompatible or show an element twice.
    pub(super) order: Vec<Option<Vec<u32>>>,
    /// The index of each (key, element) in its key's version order.
    pub(super) position: HashMap<(u32, u32), usize>,
    /// Per key with a version order, the appends of `ok` transactions that no read shows, as
    /// (element, transaction) in history order: each comes after every element of the order.
    pub(super) unread: Vec<Vec<(u32, u32)>>,
    pub(super) graph: Graph,
}

impl<'p> Analysis<'p> {
    pub(super) fn run(p: &'p Parsed, consistency: Consistency) -> Findings {
        let keys = p.keys.values.len();
        let mut a = Analysis {
            p,
            anomalies: Vec::new(),
            order: vec![None; keys],
            position: HashMap::new(),
            unread: vec![Vec::new(); keys],
            graph: Graph::new(p.txns.len()),
        };
        a.internal();
        a.future_reads();
        a.version_orders();
        a.read_anomalies();
        a.lost_updates();
        a.dependency_edges();
        let ops: Vec<&Operation> = p.txns.iter().map(|t| &t.op).collect();
        order_edges(&mut a.graph, &ops, consistency);
        a.graph.seal();
        a.cycles();
        Findings {
            consistency,
            transactions: outcomes(ops),
            keys,
            edges: a.graph.edges(),
            anomalies: a.anomalies,
        }
    }

    pub(super) fn op(&self, t: u32) -> Operation {
        self.p.txns[t as usize].op.clone()
    }

    /// Reads of `ok` transactions: (transaction, micro-op index, key, list).
    fn reads(&self) -> impl Iterator<Item = (u32, usize, u32, &'p [u32])> + 'p {
        let p = self.p;
        p.txns.iter().enumerate().flat_map(|(t, txn)| {
            txn.mops
                .iter()
                .enumerate()
                .filter_map(move |(m, mop)| match mop {
                    Mop::Read { key, list: Some(l) } => Some((t as u32, m, *key, l.as_slice())),
                    _ => None,
                })
        })
    }

    fn internal(&mut self) {
        for txn in &self.p.txns {
            // Per key: (known whole list, or only its own appends as a suffix).
            let mut known: HashMap<u32, (bool, Vec<u32>)> = HashMap::new();
            for mop in &txn.mops {
                match mop {
                    Mop::Append { key, elem } => {
                        known
                            .entry(*key)
                            .or_insert((false, Vec::new()))
                            .1
                            .push(*elem);
                    }
                    Mop::Read { list: None, .. } => {}
                    Mop::Read {
                        key,
                        list: Some(read),
                    } => {
                        let ok = match known.get(key) {
                            None => true,
                            Some((true, whole)) => whole == read,
                            Some((false, suffix)) => read.ends_with(suffix),
                        };
                        if !ok {
                            let (whole, l) = &known[key];
                            let l = self.p.elems(l);
                            self.anomalies.push(ElleAnomaly::Internal {
                                op: txn.op.clone(),
                                key: self.p.key(*key),
                                expected: if *whole {
                                    Expected::Exactly(l)
                                } else {
                                    Expected::EndsWith(l)
                                },
                                read: self.p.elems(read),
                            });
                        }
                        known.insert(*key, (true, read.clone()));
                    }
                }
            }
        }
    }

    /// Future reads: a read showing an element its own transaction appends later. Reported once
    /// per transaction, as Elle does.
    fn future_reads(&mut self) {
        for txn in &self.p.txns {
            // Per key, the elements read so far.
            let mut read: HashMap<u32, HashSet<u32>> = HashMap::new();
            let future = txn.mops.iter().find_map(|mop| match mop {
                Mop::Read {
                    key,
                    list: Some(list),
                } => {
                    read.entry(*key).or_default().extend(list.iter().copied());
                    None
                }
                Mop::Read { list: None, .. } => None,
                Mop::Append { key, elem } => read
                    .get(key)
                    .is_some_and(|seen| seen.contains(elem))
                    .then_some((*key, *elem)),
            });
            if let Some((key, elem)) = future {
                self.anomalies.push(ElleAnomaly::FutureRead {
                    op: txn.op.clone(),
                    key: self.p.key(key),
                    element: self.p.elem(elem),
                });
            }
        }
    }

    fn version_orders(&mut self) {
        let mut longest: Vec<Option<(u32, &'p [u32])>> = vec![None; self.order.len()];
        for (t, _, key, list) in self.reads() {
            let slot = &mut longest[key as usize];
            if slot.is_none_or(|(_, l)| l.len() < list.len()) {
                *slot = Some((t, list));
            }
        }
        let mut incompatible: Vec<bool> = vec![false; self.order.len()];
        for (t, _, key, list) in self.reads() {
            let Some((lt, l)) = longest[key as usize] else {
                continue;
            };
            if !incompatible[key as usize] && !l.starts_with(list) {
                incompatible[key as usize] = true;
                self.anomalies.push(ElleAnomaly::IncompatibleOrder {
                    key: self.p.key(key),
                    longest: (self.op(lt), self.p.elems(l)),
                    other: (self.op(t), self.p.elems(list)),
                });
            }
        }
        for (key, slot) in longest.into_iter().enumerate() {
            let Some((t, l)) = slot else {
                // Nobody read the key (non-empty): its appends all follow the empty list.
                self.order[key] = Some(Vec::new());
                continue;
            };
            let mut seen = HashSet::with_capacity(l.len());
            if !l.iter().all(|e| seen.insert(*e)) {
                self.anomalies.push(ElleAnomaly::DuplicateElements {
                    op: self.op(t),
                    key: self.p.key(key as u32),
                    read: self.p.elems(l),
                });
                continue;
            }
            if incompatible[key] {
                continue;
            }
            for (i, &e) in l.iter().enumerate() {
                self.position.insert((key as u32, e), i);
            }
            self.order[key] = Some(l.to_vec());
        }
        // Appends of committed transactions that no read shows come after every element read.
        // Those of `info` transactions are left out: they may never have happened.
        for (t, txn) in self.p.txns.iter().enumerate() {
            if txn.op.outcome != Outcome::Ok {
                continue;
            }
            for mop in &txn.mops {
                if let Mop::Append { key, elem } = *mop
                    && self.order[key as usize].is_some()
                    && !self.position.contains_key(&(key, elem))
                {
                    self.unread[key as usize].push((elem, t as u32));
                }
            }
        }
    }

    /// G1a, G1b and garbage reads, each reported once per (reader, key).
    fn read_anomalies(&mut self) {
        let mut garbage_seen: HashSet<(u32, u32)> = HashSet::new();
        for (t, _, key, list) in self.reads() {
            let mut aborted_reported = false;
            for &e in list {
                match self.p.appender.get(&(key, e)) {
                    None => {
                        if garbage_seen.insert((key, e)) {
                            self.anomalies.push(ElleAnomaly::GarbageRead {
                                op: self.op(t),
                                key: self.p.key(key),
                                element: self.p.elem(e),
                            });
                        }
                    }
                    Some(&(w, _)) if self.p.outcome(w) == Outcome::Fail && !aborted_reported => {
                        aborted_reported = true;
                        self.anomalies.push(ElleAnomaly::AbortedRead {
                            reader: self.op(t),
                            writer: self.op(w),
                            key: self.p.key(key),
                            element: self.p.elem(e),
                        });
                    }
                    Some(_) => {}
                }
            }
            let Some(&last) = list.last() else { continue };
            let Some(&(w, m)) = self.p.appender.get(&(key, last)) else {
                continue;
            };
            if w == t || self.p.outcome(w) == Outcome::Fail {
                continue;
            }
            let later = self.p.txns[w as usize].mops[m as usize + 1..]
                .iter()
                .find_map(|mop| match mop {
                    Mop::Append { key: k, elem } if *k == key => Some(*elem),
                    _ => None,
                });
            if let Some(later) = later {
                self.anomalies.push(ElleAnomaly::IntermediateRead {
                    reader: self.op(t),
                    writer: self.op(w),
                    key: self.p.key(key),
                    element: self.p.elem(last),
                    later: self.p.elem(later),
                });
            }
        }
    }

    /// Lost updates: committed transactions that read the same version of a key before
    /// appending to it, grouped by (key, version), each group in history order.
    fn lost_updates(&mut self) {
        let mut groups: BTreeMap<(u32, &'p [u32]), Vec<u32>> = BTreeMap::new();
        for (t, txn) in self.p.txns.iter().enumerate() {
            if txn.op.outcome != Outcome::Ok {
                continue;
            }
            // Per key: the external read, if any, and whether an append of it was counted.
            let mut first_read: HashMap<u32, &'p [u32]> = HashMap::new();
            let mut appended: HashSet<u32> = HashSet::new();
            for mop in &txn.mops {
                match mop {
                    Mop::Read {
                        key,
                        list: Some(list),
                    } if !appended.contains(key) => {
                        first_read.entry(*key).or_insert(list);
                    }
                    Mop::Read { .. } => {}
                    Mop::Append { key, .. } => {
                        if appended.insert(*key)
                            && let Some(&read) = first_read.get(key)
                        {
                            groups.entry((*key, read)).or_default().push(t as u32);
                        }
                    }
                }
            }
        }
        let mut found: Vec<(u32, ElleAnomaly)> = groups
            .into_iter()
            .filter(|(_, txns)| txns.len() > 1)
            .map(|((key, read), txns)| {
                let anomaly = ElleAnomaly::LostUpdate {
                    key: self.p.key(key),
                    read: self.p.elems(read),
                    txns: txns.iter().map(|&t| self.op(t)).collect(),
                };
                (txns[0], anomaly)
            })
            .collect();
        found.sort_by_key(|(first, _)| *first);
        self.anomalies.extend(found.into_iter().map(|(_, a)| a));
    }

    /// Whether a transaction is in the graph: it committed, or may have.
    fn node(&self, t: u32) -> bool {
        self.p.outcome(t) != Outcome::Fail
    }

    fn dependency_edges(&mut self) {
        // ww: consecutive appends in each version order.
        for key in 0..self.order.len() {
            let Some(order) = &self.order[key] else {
                continue;
            };
            let writers: Vec<Option<u32>> = order
                .iter()
                .map(|&e| self.p.appender.get(&(key as u32, e)).map(|&(w, _)| w))
                .collect();
            for i in 1..order.len() {
                if let (Some(a), Some(b)) = (writers[i - 1], writers[i])
                    && a != b
                    && self.node(a)
                    && self.node(b)
                {
                    self.graph.add(a, b, WW);
                }
            }
            // Unread appends follow the last element read.
            if let Some(Some(a)) = writers.last().copied()
                && self.node(a)
            {
                for &(_, b) in &self.unread[key] {
                    if a != b {
                        self.graph.add(a, b, WW);
                    }
                }
            }
        }
        // wr and rw: external reads only.
        for (t, txn) in self.p.txns.iter().enumerate() {
            let t = t as u32;
            let mut touched: HashSet<u32> = HashSet::new();
            for mop in &txn.mops {
                let (key, list) = match mop {
                    Mop::Append { key, .. } => {
                        touched.insert(*key);
                        continue;
                    }
                    Mop::Read { key, list } => (*key, list),
                };
                if !touched.insert(key) {
                    continue;
                }
                let Some(list) = list else { continue };
                if let Some(&last) = list.last()
                    && let Some(&(w, _)) = self.p.appender.get(&(key, last))
                    && w != t
                    && self.node(w)
                {
                    self.graph.add(w, t, WR);
                }
                let Some(order) = &self.order[key as usize] else {
                    continue;
                };
                if !order.starts_with(list) {
                    continue;
                }
                match order.get(list.len()) {
                    Some(&next) => {
                        if let Some(&(w, _)) = self.p.appender.get(&(key, next))
                            && w != t
                            && self.node(w)
                        {
                            self.graph.add(t, w, RW);
                        }
                    }
                    // It read the whole order: every unread append came after.
                    None => {
                        for &(_, w) in &self.unread[key as usize] {
                            if w != t {
                                self.graph.add(t, w, RW);
                            }
                        }
                    }
                }
            }
        }
    }
}
