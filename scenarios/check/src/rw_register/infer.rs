//! The analysis of a parsed rw-register history: the checks within and across transactions,
//! each key's version order as far as the history shows it, the dependency and order edges,
//! and what shows each edge of a cycle.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::Value;

use super::parse::{Mop, Parsed, Version};
use super::{Consistency, Findings, RegisterAnomaly};
use crate::elle::cycle::{Shown, find_cycles};
use crate::elle::findings::outcomes;
use crate::elle::graph::{CycleFinder, CycleSpec, Graph, Hop, RW, RwRule, WR, WW};
use crate::elle::order::{Span, order_edges};
use crate::history::{Operation, Outcome};

pub(super) struct Analysis<'p> {
    p: &'p Parsed,
    anomalies: Vec<RegisterAnomaly>,
    /// Per key, the known pairs (earlier version, later installed value) of its version
    /// order: the initial version before every installed one, and a value a transaction read
    /// before the one it wrote over it.
    versions: BTreeMap<u32, BTreeSet<(Version, u32)>>,
    /// The external readers of each (key, version), `ok` transactions in history order.
    readers: HashMap<(u32, Version), Vec<u32>>,
    graph: Graph,
}

impl<'p> Analysis<'p> {
    pub(super) fn run(p: &'p Parsed, consistency: Consistency) -> Findings {
        let mut readers: HashMap<(u32, Version), Vec<u32>> = HashMap::new();
        for (t, txn) in p.txns.iter().enumerate() {
            for &(key, v) in &txn.reads {
                readers.entry((key, v)).or_default().push(t as u32);
            }
        }
        let mut a = Analysis {
            p,
            anomalies: Vec::new(),
            versions: BTreeMap::new(),
            readers,
            graph: Graph::new(p.txns.len()),
        };
        a.internal();
        a.future_reads();
        a.read_anomalies();
        a.lost_updates();
        a.version_orders();
        a.dependency_edges();
        let spans: Vec<Span> = p.txns.iter().map(|t| Span::from(&t.op)).collect();
        order_edges(&mut a.graph, &spans, consistency);
        a.graph.seal();
        let cycles = find_cycles(&a.graph, |t| a.op(t), |h, x, y| a.explain(h, x, y));
        a.anomalies
            .extend(cycles.into_iter().map(RegisterAnomaly::Cycle));
        Findings {
            consistency,
            transactions: outcomes(spans.iter().map(|s| s.outcome)),
            keys: p.keys.values.len(),
            edges: a.graph.edges(),
            anomalies: a.anomalies,
        }
    }

    fn op(&self, t: u32) -> Operation {
        self.p.txns[t as usize].op.clone()
    }

    /// Known reads: (transaction, micro-op index, key, version).
    fn reads(&self) -> impl Iterator<Item = (u32, usize, u32, Version)> + 'p {
        let p = self.p;
        p.txns.iter().enumerate().flat_map(|(t, txn)| {
            txn.mops
                .iter()
                .enumerate()
                .filter_map(move |(m, mop)| match *mop {
                    Mop::Read {
                        key,
                        value: Some(v),
                    } => Some((t as u32, m, key, v)),
                    _ => None,
                })
        })
    }

    /// A read must show the transaction's own last read or write of the key, if any.
    fn internal(&mut self) {
        for txn in &self.p.txns {
            let mut known: HashMap<u32, Version> = HashMap::new();
            for mop in &txn.mops {
                match *mop {
                    Mop::Write { key, value } => {
                        known.insert(key, Some(value));
                    }
                    Mop::Read { value: None, .. } => {}
                    Mop::Read {
                        key,
                        value: Some(read),
                    } => {
                        if let Some(&expected) = known.get(&key)
                            && expected != read
                        {
                            self.anomalies.push(RegisterAnomaly::Internal {
                                op: txn.op.clone(),
                                key: self.p.key(key),
                                expected: self.p.version(expected),
                                read: self.p.version(read),
                            });
                        }
                        known.insert(key, read);
                    }
                }
            }
        }
    }

    /// A read of a value the transaction writes only later; once per transaction.
    fn future_reads(&mut self) {
        for (t, txn) in self.p.txns.iter().enumerate() {
            let future = txn.mops.iter().enumerate().find_map(|(m, mop)| match *mop {
                Mop::Read {
                    key,
                    value: Some(Some(v)),
                } => match self.p.writer.get(&(key, v)) {
                    Some(&(w, at, _)) if w == t as u32 && at as usize > m => Some((key, v)),
                    _ => None,
                },
                _ => None,
            });
            if let Some((key, v)) = future {
                self.anomalies.push(RegisterAnomaly::FutureRead {
                    op: txn.op.clone(),
                    key: self.p.key(key),
                    value: self.p.version(Some(v)),
                });
            }
        }
    }

    /// G1a, G1b and garbage reads, each of a read of another transaction's write.
    fn read_anomalies(&mut self) {
        let mut garbage_seen: HashSet<(u32, u32)> = HashSet::new();
        for (t, _, key, v) in self.reads() {
            let Some(v) = v else { continue };
            let Some(&(w, m, last)) = self.p.writer.get(&(key, v)) else {
                if garbage_seen.insert((key, v)) {
                    self.anomalies.push(RegisterAnomaly::GarbageRead {
                        op: self.op(t),
                        key: self.p.key(key),
                        value: self.p.version(Some(v)),
                    });
                }
                continue;
            };
            if w == t {
                continue;
            }
            if self.p.outcome(w) == Outcome::Fail {
                self.anomalies.push(RegisterAnomaly::AbortedRead {
                    reader: self.op(t),
                    writer: self.op(w),
                    key: self.p.key(key),
                    value: self.p.version(Some(v)),
                });
            } else if !last {
                let later = self.p.txns[w as usize].mops[m as usize + 1..]
                    .iter()
                    .find_map(|mop| match *mop {
                        Mop::Write { key: k, value } if k == key => Some(value),
                        _ => None,
                    })
                    .expect("a write that is not its transaction's last has a later one");
                self.anomalies.push(RegisterAnomaly::IntermediateRead {
                    reader: self.op(t),
                    writer: self.op(w),
                    key: self.p.key(key),
                    value: self.p.version(Some(v)),
                    later: self.p.version(Some(later)),
                });
            }
        }
    }

    /// Committed transactions that read the same version of a key and then wrote it, grouped
    /// by (key, version), each group in history order.
    fn lost_updates(&mut self) {
        let mut groups: BTreeMap<(u32, Version), Vec<u32>> = BTreeMap::new();
        for (t, txn) in self.p.txns.iter().enumerate() {
            if txn.op.outcome != Outcome::Ok {
                continue;
            }
            for &(key, v) in &txn.reads {
                if txn.write(key).is_some() {
                    groups.entry((key, v)).or_default().push(t as u32);
                }
            }
        }
        let mut found: Vec<(u32, RegisterAnomaly)> = groups
            .into_iter()
            .filter(|(_, txns)| txns.len() > 1)
            .map(|((key, v), txns)| {
                let anomaly = RegisterAnomaly::LostUpdate {
                    key: self.p.key(key),
                    read: self.p.version(v),
                    txns: txns.iter().map(|&t| self.op(t)).collect(),
                };
                (txns[0], anomaly)
            })
            .collect();
        found.sort_by_key(|(first, _)| *first);
        self.anomalies.extend(found.into_iter().map(|(_, a)| a));
    }

    /// Each key's known version order: the initial version first; and a transaction that read
    /// a value of a key and then wrote it installed its write after what it read (writes
    /// follow reads). A key whose reads-then-writes make a cycle is `cyclic-versions`, and
    /// keeps only the initial version's place.
    fn version_orders(&mut self) {
        let mut follows: BTreeMap<u32, BTreeSet<(u32, u32)>> = BTreeMap::new();
        for (t, txn) in self.p.txns.iter().enumerate() {
            for &(key, value) in &txn.writes {
                if self.p.installer(key, value) != Some(t as u32) {
                    continue;
                }
                self.versions.entry(key).or_default().insert((None, value));
                if let Some(Some(read)) = txn.read(key) {
                    follows.entry(key).or_default().insert((read, value));
                }
            }
        }
        for (key, pairs) in follows {
            match cycle_of(&pairs) {
                Some(cycle) => self.anomalies.push(RegisterAnomaly::CyclicVersions {
                    key: self.p.key(key),
                    versions: cycle.iter().map(|&v| self.p.version(Some(v))).collect(),
                }),
                None => self
                    .versions
                    .entry(key)
                    .or_default()
                    .extend(pairs.into_iter().map(|(a, b)| (Some(a), b))),
            }
        }
    }

    fn dependency_edges(&mut self) {
        // wr: a committed read of an installed version.
        for (t, txn) in self.p.txns.iter().enumerate() {
            for &(key, v) in &txn.reads {
                if let Some(v) = v
                    && let Some(w) = self.p.installer(key, v)
                    && w != t as u32
                {
                    self.graph.add(w, t as u32, WR);
                }
            }
        }
        // ww and rw: from the writer and the readers of each earlier version to the
        // installer of each later one.
        for (&key, pairs) in &self.versions {
            for &(earlier, later) in pairs {
                let to = self
                    .p
                    .installer(key, later)
                    .expect("the version order holds installed values");
                if let Some(e) = earlier
                    && let Some(from) = self.p.installer(key, e)
                    && from != to
                {
                    self.graph.add(from, to, WW);
                }
                for &r in self.readers.get(&(key, earlier)).into_iter().flatten() {
                    if r != to {
                        self.graph.add(r, to, RW);
                    }
                }
            }
        }
    }

    /// What shows the dependency edge `hop`, whose ends are `Ta` and `Tb` on the cycle.
    fn explain(&self, hop: &Hop, a: usize, b: usize) -> Shown {
        let (from, to) = (
            &self.p.txns[hop.from as usize],
            &self.p.txns[hop.to as usize],
        );
        let known = |key: u32, earlier: Version, later: u32| {
            self.versions
                .get(&key)
                .is_some_and(|pairs| pairs.contains(&(earlier, later)))
        };
        let shown = |key: u32, versions: Vec<Value>, why: String| Shown {
            key: Some(self.p.key(key)),
            elements: versions,
            unread: false,
            why,
        };
        let v = |value: Version| self.p.version(value);
        match hop.kind {
            WW => {
                for &(key, x) in &from.writes {
                    if let Some(y) = to.write(key)
                        && known(key, Some(x), y)
                    {
                        let (k, x, y) = (self.p.key(key), v(Some(x)), v(Some(y)));
                        let why = format!(
                            "T{a} wrote key {k} = {x}, and T{b} read that and wrote {y} over it"
                        );
                        return shown(key, vec![x, y], why);
                    }
                }
            }
            WR => {
                for &(key, x) in &to.reads {
                    if let Some(x) = x
                        && self.p.installer(key, x) == Some(hop.from)
                    {
                        let (k, x) = (self.p.key(key), v(Some(x)));
                        let why = format!("T{b} read key {k} = {x}, written by T{a}");
                        return shown(key, vec![x], why);
                    }
                }
            }
            RW => {
                for &(key, x) in &from.reads {
                    if let Some(y) = to.write(key)
                        && known(key, x, y)
                    {
                        let (k, xv, y) = (self.p.key(key), v(x), v(Some(y)));
                        let why = match x {
                            None => format!(
                                "T{a} read key {k} = null, the initial version, which T{b}'s \
                                 write of {y} follows"
                            ),
                            Some(_) => format!(
                                "T{a} read key {k} = {xv}, and T{b} read that too and wrote {y} \
                                 over it"
                            ),
                        };
                        return shown(key, vec![xv, y], why);
                    }
                }
            }
            _ => {}
        }
        unreachable!("a dependency edge of the graph has a witness")
    }
}

/// A cycle in the pairs (earlier, later) of one key's versions, if they have one: the
/// versions on it, in order.
fn cycle_of(pairs: &BTreeSet<(u32, u32)>) -> Option<Vec<u32>> {
    let mut ids: BTreeMap<u32, u32> = BTreeMap::new();
    let mut values: Vec<u32> = Vec::new();
    let mut id = |v: u32| {
        *ids.entry(v).or_insert_with(|| {
            values.push(v);
            values.len() as u32 - 1
        })
    };
    let edges: Vec<(u32, u32)> = pairs.iter().map(|&(x, y)| (id(x), id(y))).collect();
    let mut graph = Graph::new(values.len());
    for (x, y) in edges {
        if x != y {
            graph.add(x, y, WW);
        }
    }
    graph.seal();
    let component = graph.cycles_components().into_iter().next()?;
    let mut finder = CycleFinder::new(&graph);
    finder.enter(&component);
    let spec = CycleSpec {
        first: WW,
        path: WW,
        rw: RwRule::Free,
    };
    let hops = finder
        .shortest(&component, spec, u64::MAX)
        .expect("a strongly connected component has a cycle");
    Some(hops.iter().map(|h| values[h.from as usize]).collect())
}
