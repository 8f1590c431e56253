//! The analysis of a parsed history: the checks within and across transactions, the version
//! orders (with unread appends placed), and the dependency and order edges of the graph. The
//! cycle search over that graph is in `cycles.rs`.

use rustc_hash::{FxHashMap, FxHashSet};

use super::parse::{Mop, Parsed};
use super::{Consistency, ElleAnomaly, Expected, Findings};
use crate::elle::atom::Atom;
use crate::elle::findings::outcomes;
use crate::elle::graph::{Graph, RW, WR, WW};
use crate::elle::order::{Span, order_edges};
use crate::history::{Operation, Outcome};

/// Who appended an element: the transaction and its micro-operation.
type Appended = (u32, u32);

// Maps here are only looked up, never iterated: nothing printed depends on their order.
pub(super) struct Analysis<'p> {
    pub(super) p: &'p Parsed,
    pub(super) anomalies: Vec<ElleAnomaly>,
    /// Per key, the version order of the elements read (the longest read; empty if nobody read
    /// the key non-empty), unless the key's reads are incompatible or show an element twice.
    pub(super) order: Vec<Option<&'p [Atom]>>,
    /// Per key with a version order, who appended each of its elements (transaction and
    /// micro-operation), by position: every read of such a key is a prefix of the order, so
    /// its elements' appenders are looked up here, not hashed.
    pub(super) writers: Vec<Box<[Option<Appended>]>>,
    /// Per key with a version order, the position of its first element that no committed or
    /// possibly committed transaction appended (the order's length if none): reads no longer
    /// than that show no aborted and no garbage element.
    first_bad: Vec<usize>,
    /// Per key with a version order, the appends of `ok` transactions that no read shows, as
    /// (element, transaction) in history order: each comes after every element of the order.
    pub(super) unread: Vec<Vec<(Atom, u32)>>,
    pub(super) graph: Graph,
}

/// Transactions from which a history's analysis runs on two threads (below, a thread costs
/// more than it saves); small in tests, so that the generated histories take both paths.
const PARALLEL_FROM: usize = if cfg!(test) { 64 } else { 20_000 };

/// Runs `a` and `b` and returns both results: on two threads if `parallel` and there are
/// two cores, never in a madsim simulation (which forbids threads).
fn both<A: Send, B: Send>(
    parallel: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    #[cfg(not(madsim))]
    if parallel && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1) {
        return std::thread::scope(|s| {
            let other = s.spawn(b);
            let first = a();
            (first, other.join().expect("an analysis thread panicked"))
        });
    }
    #[cfg(madsim)]
    let _ = parallel;
    (a(), b())
}

/// A transaction's micro-operations, each read with its list if known.
fn reads_of(mops: &[Mop]) -> impl Iterator<Item = (usize, u32, &[Atom])> {
    mops.iter().enumerate().filter_map(|(m, mop)| match mop {
        Mop::Read { key, read } => read.list().map(|l| (m, *key, l)),
        Mop::Append { .. } => None,
    })
}

impl<'p> Analysis<'p> {
    pub(super) fn run(p: &'p Parsed, consistency: Consistency) -> Findings {
        let keys = p.keys.len();
        let mut a = Analysis {
            p,
            anomalies: Vec::new(),
            order: vec![None; keys],
            writers: vec![Box::default(); keys],
            first_bad: vec![0; keys],
            unread: vec![Vec::new(); keys],
            graph: Graph::new(0),
        };
        // The version orders first: every other pass reads them.
        a.version_orders();
        let orders_found = std::mem::take(&mut a.anomalies);
        let spans: Vec<Span> = p
            .txns
            .iter()
            .map(|t| Span {
                process: t.process,
                outcome: t.outcome,
                invoke: t.invoke.index,
                complete: t.complete.map(|c| c.index),
            })
            .collect();
        // The anomalies and the graph's edges are found apart, on two cores where the
        // history is big enough; the anomalies come in the same order either way.
        let view = &a;
        let ((before, after), graph) = both(
            p.txns.len() >= PARALLEL_FROM,
            || {
                let (mut before, mut after) = (Vec::new(), Vec::new());
                view.internal(&mut before);
                view.future_reads(&mut before);
                view.read_anomalies(&mut after);
                view.lost_updates(&mut after);
                (before, after)
            },
            || {
                let mut graph = Graph::new(p.txns.len());
                view.dependency_edges(&mut graph);
                order_edges(&mut graph, &spans, consistency);
                graph
            },
        );
        a.anomalies = before;
        a.anomalies.extend(orders_found);
        a.anomalies.extend(after);
        a.graph = graph;
        a.graph.seal();
        a.cycles();
        Findings {
            consistency,
            transactions: outcomes(p.txns.iter().map(|t| t.outcome)),
            keys,
            edges: a.graph.edges(),
            anomalies: a.anomalies,
        }
    }

    pub(super) fn op(&self, t: u32) -> Operation {
        self.p.op(t)
    }

    /// Reads of `ok` transactions: (transaction, micro-op index, key, list).
    fn reads(&self) -> impl Iterator<Item = (u32, usize, u32, &'p [Atom])> + 'p {
        let p = self.p;
        p.txns
            .iter()
            .enumerate()
            .flat_map(|(t, txn)| reads_of(&txn.mops).map(move |(m, key, l)| (t as u32, m, key, l)))
    }

    fn internal(&self, out: &mut Vec<ElleAnomaly>) {
        // Per key touched: whether the whole list is known (the last read, then the
        // transaction's own appends), or only its own appends as a suffix. Transactions are
        // small: a list scanned beats a map built for each.
        let mut known: Vec<(u32, bool, &'p [Atom], Vec<Atom>)> = Vec::new();
        for (t, txn) in self.p.txns.iter().enumerate() {
            known.clear();
            for mop in txn.mops.iter() {
                let slot =
                    |known: &mut Vec<(u32, bool, &'p [Atom], Vec<Atom>)>, key: u32| match known
                        .iter()
                        .position(|k| k.0 == key)
                    {
                        Some(i) => i,
                        None => {
                            known.push((key, false, &[], Vec::new()));
                            known.len() - 1
                        }
                    };
                match mop {
                    Mop::Append { key, elem } => {
                        let i = slot(&mut known, *key);
                        known[i].3.push(*elem);
                    }
                    Mop::Read { key, read } => {
                        let Some(read) = read.list() else { continue };
                        let seen = known.iter().position(|k| k.0 == *key);
                        if let Some(i) = seen {
                            let (_, whole, base, own) = &known[i];
                            let ok = if *whole {
                                read.len() == base.len() + own.len()
                                    && read.starts_with(base)
                                    && read[base.len()..] == own[..]
                            } else {
                                read.ends_with(own)
                            };
                            if !ok {
                                let l: Vec<Atom> = base.iter().chain(own).copied().collect();
                                let l = self.p.elems(&l);
                                out.push(ElleAnomaly::Internal {
                                    op: self.op(t as u32),
                                    key: self.p.key(*key),
                                    expected: if *whole {
                                        Expected::Exactly(l)
                                    } else {
                                        Expected::EndsWith(l)
                                    },
                                    read: self.p.elems(read),
                                });
                            }
                        }
                        let i = slot(&mut known, *key);
                        known[i] = (*key, true, read, Vec::new());
                    }
                }
            }
        }
    }

    /// Future reads: a read showing an element its own transaction appends later. Reported once
    /// per transaction, as Elle does.
    fn future_reads(&self, out: &mut Vec<ElleAnomaly>) {
        for (t, txn) in self.p.txns.iter().enumerate() {
            let mops = &txn.mops;
            let future = mops.iter().enumerate().find_map(|(m, mop)| match mop {
                Mop::Append { key, elem } => reads_of(&mops[..m])
                    .any(|(_, k, l)| k == *key && l.contains(elem))
                    .then_some((*key, *elem)),
                Mop::Read { .. } => None,
            });
            if let Some((key, elem)) = future {
                out.push(ElleAnomaly::FutureRead {
                    op: self.op(t as u32),
                    key: self.p.key(key),
                    element: self.p.elem(elem),
                });
            }
        }
    }

    fn version_orders(&mut self) {
        let mut longest: Vec<Option<(u32, &'p [Atom])>> = vec![None; self.order.len()];
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
                self.order[key] = Some(&[]);
                continue;
            };
            let mut seen = FxHashSet::default();
            seen.reserve(l.len());
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
            self.order[key] = Some(l);
        }
        // Who appended each element of each order; which appends are read (the others, of
        // committed transactions, come after every element read; those of `info` transactions
        // are left out: they may never have happened).
        let mut read: Vec<(u32, u32)> = Vec::new();
        for key in 0..self.order.len() {
            let Some(order) = self.order[key] else {
                continue;
            };
            let writers: Box<[Option<Appended>]> = order
                .iter()
                .map(|&e| self.p.appender.get(&(key as u32, e)).copied())
                .collect();
            read.extend(writers.iter().flatten());
            self.first_bad[key] = writers
                .iter()
                .position(|w| w.is_none_or(|(t, _)| self.p.outcome(t) == Outcome::Fail))
                .unwrap_or(order.len());
            self.writers[key] = writers;
        }
        read.sort_unstable();
        for (t, txn) in self.p.txns.iter().enumerate() {
            if txn.outcome != Outcome::Ok {
                continue;
            }
            for (m, mop) in txn.mops.iter().enumerate() {
                if let Mop::Append { key, elem } = *mop
                    && self.order[key as usize].is_some()
                    && read.binary_search(&(t as u32, m as u32)).is_err()
                {
                    self.unread[key as usize].push((elem, t as u32));
                }
            }
        }
    }

    /// The appender of element `i` (`e`) of a read of `key`.
    fn writer(&self, key: u32, i: usize, e: Atom) -> Option<Appended> {
        match self.order[key as usize] {
            // Every read of a key with an order is a prefix of it.
            Some(_) => self.writers[key as usize][i],
            None => self.p.appender.get(&(key, e)).copied(),
        }
    }

    /// G1a, G1b and garbage reads, each reported once per (reader, key).
    fn read_anomalies(&self, out: &mut Vec<ElleAnomaly>) {
        let mut garbage_seen: FxHashSet<(u32, Atom)> = FxHashSet::default();
        for (t, _, key, list) in self.reads() {
            let mut aborted_reported = false;
            let clean = match self.order[key as usize] {
                Some(_) => self.first_bad[key as usize],
                None => 0,
            };
            for (i, &e) in list.iter().enumerate().skip(clean) {
                match self.writer(key, i, e).as_ref() {
                    None => {
                        if garbage_seen.insert((key, e)) {
                            out.push(ElleAnomaly::GarbageRead {
                                op: self.op(t),
                                key: self.p.key(key),
                                element: self.p.elem(e),
                            });
                        }
                    }
                    Some(&(w, _)) if self.p.outcome(w) == Outcome::Fail && !aborted_reported => {
                        aborted_reported = true;
                        out.push(ElleAnomaly::AbortedRead {
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
            let Some((w, m)) = self.writer(key, list.len() - 1, last) else {
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
                out.push(ElleAnomaly::IntermediateRead {
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
    fn lost_updates(&self, out: &mut Vec<ElleAnomaly>) {
        // A version is told by its length where the key has an order (every read is a prefix
        // of it), else by its elements.
        let mut groups: FxHashMap<(u32, usize, &'p [Atom]), Vec<u32>> = FxHashMap::default();
        // Per key touched: its external read, if any, and whether an append of it was counted.
        let mut keys: Vec<(u32, Option<&'p [Atom]>, bool)> = Vec::new();
        for (t, txn) in self.p.txns.iter().enumerate() {
            if txn.outcome != Outcome::Ok {
                continue;
            }
            keys.clear();
            for mop in txn.mops.iter() {
                let (key, read) = match mop {
                    Mop::Read { key, read } => (*key, read.list()),
                    Mop::Append { key, .. } => (*key, None),
                };
                let i = match keys.iter().position(|k| k.0 == key) {
                    Some(i) => i,
                    None => {
                        keys.push((key, None, false));
                        keys.len() - 1
                    }
                };
                let (_, first_read, appended) = &mut keys[i];
                match mop {
                    Mop::Read { .. } => {
                        if !*appended && first_read.is_none() {
                            *first_read = read;
                        }
                    }
                    Mop::Append { .. } => {
                        if !*appended && let Some(read) = *first_read {
                            let version = match self.order[key as usize] {
                                Some(_) => (key, read.len(), &[][..]),
                                None => (key, 0, read),
                            };
                            groups.entry(version).or_default().push(t as u32);
                        }
                        *appended = true;
                    }
                }
            }
        }
        let mut found: Vec<(u32, u32, ElleAnomaly)> = groups
            .into_iter()
            .filter(|(_, txns)| txns.len() > 1)
            .map(|((key, len, read), txns)| {
                let read = self.order[key as usize].map_or(read, |o| &o[..len]);
                let anomaly = ElleAnomaly::LostUpdate {
                    key: self.p.key(key),
                    read: self.p.elems(read),
                    txns: txns.iter().map(|&t| self.op(t)).collect(),
                };
                (txns[0], key, anomaly)
            })
            .collect();
        // A transaction has one external read of a key, so (first, key) tells groups apart and
        // orders them whatever order the map gave.
        found.sort_by_key(|(first, key, _)| (*first, *key));
        out.extend(found.into_iter().map(|(_, _, a)| a));
    }

    /// Whether a transaction is in the graph: it committed, or may have.
    fn node(&self, t: u32) -> bool {
        self.p.outcome(t) != Outcome::Fail
    }

    fn dependency_edges(&self, graph: &mut Graph) {
        // ww: consecutive appends in each version order.
        for key in 0..self.order.len() {
            let Some(order) = self.order[key] else {
                continue;
            };
            let writers: Vec<Option<u32>> = self.writers[key]
                .iter()
                .map(|w| w.map(|(t, _)| t))
                .collect();
            for i in 1..order.len() {
                if let (Some(a), Some(b)) = (writers[i - 1], writers[i])
                    && a != b
                    && self.node(a)
                    && self.node(b)
                {
                    graph.add(a, b, WW);
                }
            }
            // Unread appends follow the last element read.
            if let Some(Some(a)) = writers.last().copied()
                && self.node(a)
            {
                for &(_, b) in &self.unread[key] {
                    if a != b {
                        graph.add(a, b, WW);
                    }
                }
            }
        }
        // wr and rw: external reads only.
        let mut touched: Vec<u32> = Vec::new();
        for (t, txn) in self.p.txns.iter().enumerate() {
            let t = t as u32;
            touched.clear();
            for mop in txn.mops.iter() {
                let (key, read) = match mop {
                    Mop::Append { key, .. } => (*key, None),
                    Mop::Read { key, read } => (*key, Some(read)),
                };
                if touched.contains(&key) {
                    continue;
                }
                touched.push(key);
                let Some(list) = read.and_then(|r| r.list()) else {
                    continue;
                };
                if let Some(&last) = list.last()
                    && let Some((w, _)) = self.writer(key, list.len() - 1, last)
                    && w != t
                    && self.node(w)
                {
                    graph.add(w, t, WR);
                }
                let Some(order) = self.order[key as usize] else {
                    continue;
                };
                match order.get(list.len()) {
                    Some(_) => {
                        if let Some((w, _)) = self.writers[key as usize][list.len()]
                            && w != t
                            && self.node(w)
                        {
                            graph.add(t, w, RW);
                        }
                    }
                    // It read the whole order: every unread append came after.
                    None => {
                        for &(_, w) in &self.unread[key as usize] {
                            if w != t {
                                graph.add(t, w, RW);
                            }
                        }
                    }
                }
            }
        }
    }
}
