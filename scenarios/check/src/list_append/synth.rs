//! Synthetic list-append histories of a store that is strict serializable by construction, for
//! testing and measuring the checker.
//!
//! Each process runs one transaction at a time — invoke, apply atomically to the shared store,
//! complete — and at every tick one process, chosen at random, takes its next step, so
//! transactions overlap at random, and ordering them by the tick at which they applied is a
//! serial order that respects real time. Some transactions abort (`fail`, no effect); some end
//! `info`: the reply was lost after applying, or the request was lost before — and then the
//! store may still apply it a little later, after the client gave up (as a real one may), or
//! never. As in Jepsen, a process that saw `info` continues under a fresh number.
//!
//! Keys rotate as in Elle's generator: a few keys are active at a time, and a key that has had
//! its share of appends is retired for a fresh one, so lists stay short. Everything is drawn
//! from one ChaCha8 stream seeded by [`ListAppendSynth::seed`].

use std::collections::{BTreeMap, HashMap};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::history::{Event, F, History, Operation, Outcome};

/// The shape of a synthetic list-append history.
///
/// ```
/// use avout_check::Checker;
/// use avout_check::list_append::ListAppend;
/// use avout_check::list_append::synth::ListAppendSynth;
/// let h = ListAppendSynth { transactions: 300, ..ListAppendSynth::default() }.history();
/// assert_eq!(h.operations(Default::default()).unwrap().len(), 300);
/// assert!(ListAppend::new().check(&h).unwrap().is_valid());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ListAppendSynth {
    /// Seeds the one random stream.
    pub seed: u64,
    /// Concurrent processes.
    pub processes: u64,
    /// Transactions invoked.
    pub transactions: usize,
    /// Keys active at a time.
    pub active_keys: u64,
    /// Appends a key receives before it is retired.
    pub appends_per_key: u64,
    /// Micro-operations per transaction, at most (at least one).
    pub max_ops: usize,
    /// The probability that a transaction aborts (`fail`).
    pub fail_rate: f64,
    /// The probability that a transaction ends `info` (half lost before applying, half after).
    pub info_rate: f64,
}

impl Default for ListAppendSynth {
    /// 10 processes, 1,000 transactions, 5 active keys of 32 appends, up to 4 micro-operations,
    /// 2% `fail`, 2% `info`.
    fn default() -> Self {
        ListAppendSynth {
            seed: 0,
            processes: 10,
            transactions: 1_000,
            active_keys: 5,
            appends_per_key: 32,
            max_ops: 4,
            fail_rate: 0.02,
            info_rate: 0.02,
        }
    }
}

/// A transaction: micro-operations as `(append?, key, value)`.
type Txn = Vec<(bool, u64, u64)>;

enum Step {
    Idle,
    Invoked(Txn),
    Applied(Txn, Option<Value>),
}

struct Proc {
    id: u64,
    step: Step,
}

fn invocation(txn: &Txn) -> Value {
    Value::Array(
        txn.iter()
            .map(|&(append, k, v)| match append {
                true => json!(["append", k, v]),
                false => json!(["r", k, null]),
            })
            .collect(),
    )
}

/// Applies a transaction to the store; the completed value.
fn apply(store: &mut BTreeMap<u64, Vec<u64>>, txn: &Txn) -> Value {
    Value::Array(
        txn.iter()
            .map(|&(append, k, v)| {
                if append {
                    store.entry(k).or_default().push(v);
                    json!(["append", k, v])
                } else {
                    json!(["r", k, store.get(&k)])
                }
            })
            .collect(),
    )
}

impl ListAppendSynth {
    /// Generates the history.
    ///
    /// ```
    /// use avout_check::list_append::synth::ListAppendSynth;
    /// let a = ListAppendSynth { seed: 3, transactions: 50, ..ListAppendSynth::default() };
    /// assert_eq!(a.history(), a.history());
    /// ```
    pub fn history(&self) -> History {
        assert!(self.processes > 0 && self.active_keys > 0 && self.max_ops > 0);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut store: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        // Active keys and how many appends each has been given.
        let mut active: Vec<(u64, u64)> = (0..self.active_keys).map(|k| (k, 0)).collect();
        let mut next_key = self.active_keys;
        let mut procs: Vec<Proc> = (0..self.processes)
            .map(|id| Proc {
                id,
                step: Step::Idle,
            })
            .collect();
        // Requests lost before applying that the store may still apply.
        let mut limbo: Vec<Txn> = Vec::new();
        let mut history = History::new();
        let (mut invoked, mut busy, mut time) = (0usize, 0usize, 0u64);
        while invoked < self.transactions || busy > 0 {
            time += rng.random_range(1..1_000);
            if !limbo.is_empty() && rng.random_bool(0.05) {
                let i = rng.random_range(0..limbo.len());
                let txn = limbo.swap_remove(i);
                if rng.random_bool(0.5) {
                    apply(&mut store, &txn);
                }
            }
            let chosen = rng.random_range(0..procs.len());
            let proc = &mut procs[chosen];
            let txn_f = || F::Other("txn".into());
            match std::mem::replace(&mut proc.step, Step::Idle) {
                Step::Idle if invoked < self.transactions => {
                    let n = rng.random_range(1..=self.max_ops);
                    let mut txn = Txn::with_capacity(n);
                    for _ in 0..n {
                        let slot = rng.random_range(0..active.len());
                        let (key, appends) = &mut active[slot];
                        let key = *key;
                        if rng.random_bool(0.5) {
                            *appends += 1;
                            txn.push((true, key, *appends));
                            if *appends >= self.appends_per_key {
                                active[slot] = (next_key, 0);
                                next_key += 1;
                            }
                        } else {
                            txn.push((false, key, 0));
                        }
                    }
                    history.push(Event::invoke(proc.id, txn_f(), invocation(&txn)).with_time(time));
                    invoked += 1;
                    busy += 1;
                    proc.step = Step::Invoked(txn);
                }
                Step::Idle => {}
                Step::Invoked(txn) if rng.random_bool(self.info_rate / 2.0) => {
                    history.push(Event::info(proc.id, txn_f(), invocation(&txn)).with_time(time));
                    limbo.push(txn);
                    proc.id += self.processes;
                    busy -= 1;
                }
                Step::Invoked(txn) => {
                    let done = if rng.random_bool(self.fail_rate) {
                        None
                    } else {
                        Some(apply(&mut store, &txn))
                    };
                    proc.step = Step::Applied(txn, done);
                }
                Step::Applied(txn, done) => {
                    busy -= 1;
                    let event = match done {
                        _ if rng.random_bool(self.info_rate / 2.0) => {
                            let event = Event::info(proc.id, txn_f(), invocation(&txn));
                            proc.id += self.processes;
                            event
                        }
                        Some(value) => Event::ok(proc.id, txn_f(), value),
                        None => Event::fail(proc.id, txn_f(), invocation(&txn)),
                    };
                    history.push(event.with_time(time));
                }
            }
        }
        history
    }
}

/// Plants a stale read in a list-append history: drops the last element of an `ok` read (in
/// the second half of the history) where a longer read of the key elsewhere keeps that element
/// in the version order and its appender completed before the reader began, so strict
/// serializability surely forbids the result. Returns the history and the line changed, or
/// `None` if no read qualifies.
///
/// ```
/// use avout_check::Checker;
/// use avout_check::list_append::ListAppend;
/// use avout_check::list_append::synth::{ListAppendSynth, stale_read};
/// let h = ListAppendSynth { transactions: 500, ..ListAppendSynth::default() }.history();
/// let (bad, _line) = stale_read(&h).unwrap();
/// assert!(!ListAppend::new().check(&bad).unwrap().is_valid());
/// ```
pub fn stale_read(h: &History) -> Option<(History, usize)> {
    let mut events = h.events().to_vec();
    let ops = h.operations(Default::default()).unwrap();
    let ok_value = |op: &Operation| {
        op.complete
            .filter(|_| op.outcome == Outcome::Ok)
            .map(|end| &events[end.index].value)
    };
    let mut appended_by: HashMap<String, usize> = HashMap::new();
    let mut longest: HashMap<String, usize> = HashMap::new();
    for op in &ops {
        let Some(value) = ok_value(op) else { continue };
        for m in value.as_array().unwrap() {
            let key = m[1].to_string();
            match m[2].as_array() {
                Some(l) if m[0] == "r" => {
                    let n = longest.entry(key).or_default();
                    *n = (*n).max(l.len());
                }
                _ if m[0] == "append" => {
                    let end = op.complete.unwrap().index;
                    appended_by.insert(format!("{key}/{}", m[2]), end);
                }
                _ => {}
            }
        }
    }
    for op in ops.iter().skip(ops.len() / 2) {
        let Some(value) = ok_value(op) else { continue };
        let mops = value.as_array().unwrap();
        for (i, m) in mops.iter().enumerate() {
            let key = m[1].to_string();
            let Some(l) = m[2].as_array().filter(|l| m[0] == "r" && l.len() >= 2) else {
                continue;
            };
            let appends_here = mops.iter().any(|o| o[0] == "append" && o[1] == m[1]);
            let writer_done = appended_by
                .get(&format!("{key}/{}", l[l.len() - 1]))
                .is_some_and(|&end| end < op.invoke.index);
            if appends_here || !writer_done || longest[&key] <= l.len() {
                continue;
            }
            let end = op.complete.unwrap().index;
            events[end].value[i][2].as_array_mut().unwrap().pop();
            let line = h.position(end).line;
            return Some((events.into_iter().collect(), line));
        }
    }
    None
}
