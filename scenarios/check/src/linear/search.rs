//! The Wing–Gong–Lowe search for one register (one key), over interned values.
//!
//! The history is a doubly linked list of *entries*: each operation's call, and the return of
//! each operation that surely took effect, in history order. Walking from the head, a call entry
//! is a candidate: if the model accepts the operation in the current state, it is *lifted* (its
//! call and return unlinked, dancing-links style, so they can be relinked in O(1)), pushed on a
//! stack with the state before it, and the walk restarts from the head. Reaching a return entry
//! means the operation it belongs to should already have been placed and was not: pop the last
//! lifted operation, restore its state, relink it and try the next candidate after its call.
//! The search succeeds when every surely-applied operation has been placed, and fails when it
//! must pop an empty stack.
//!
//! Memoisation (Lowe's improvement) records every (set of placed operations, state) reached;
//! arriving at one again cannot lead anywhere new, so that candidate is skipped. The set is a
//! bitset kept compact for hashing: surely-applied operations are numbered in call order, and
//! every one below the lowest unplaced number is placed, so the key stores that number and only
//! the words from there to the highest placed one; the indeterminate operations are a separate
//! bitset, compared by inclusion (below). Keys carry a precomputed hash, so the hash map never
//! rehashes the words.
//!
//! A read that matches the current state is placed without branching: in any order that
//! places it later it could equally go now (nothing it jumps over was bound to precede it, and
//! it changes nothing), so if placing it fails, the state it was placed from fails too. This
//! partial-order reduction is what keeps 20 concurrent processes over a few values cheap.
//!
//! Indeterminate (`info`) operations have no return entry: they may be placed anywhere after
//! their call, or never. Four rules keep them from multiplying the search, all exact:
//! - the caller drops those whose resulting value nothing ever observes (see `mod.rs`);
//! - an indeterminate operation is never placed immediately before a plain write. Any valid order
//!   that does so stays valid with it removed, because nothing saw the state it produced, so
//!   searching only orders without that pattern loses nothing. The state therefore carries one
//!   bit, "the last placed operation was indeterminate", and so does the memo key.
//!
//! - an indeterminate operation that would leave the value as it was is never placed: removing
//!   it from any valid order leaves a valid order;
//! - two indeterminate operations that do the same thing (same write, or same cas) are
//!   interchangeable once both are called, having no returns: only the earliest unplaced one is a
//!   candidate. The placed ones of each kind are then always the earliest called, so sets that
//!   differ only in which twin was placed are never both explored.
//!
//! Without the second rule, k pending indeterminate writes could be placed in any of 2^k subsets
//! before each read that refutes them; without the third, every choice among twins would be
//! explored when values repeat.
//!
//! Candidates are tried definite ones first: the walk from the head skips indeterminate calls,
//! and only when it reaches a return entry does a second walk try the indeterminate calls before
//! it. Both walks together try the same candidates as one, so the verdict is the same; only the
//! order differs. It matters because indeterminate operations never return, so the earliest
//! called sit at the head of the list for the rest of the history: tried first, each one placed
//! opened a subtree (it can explain any later read of its value) that a valid history rarely
//! needs, and with a fifth of the operations `info` among 30 processes the search spent millions
//! of states there and gave up; definite-first settles most of them in thousands of states
//! (`examples/check_speed.rs` with `10000 30 5 200 1`, the hardest seen, takes about 580,000).
//!
//! Finally, memoisation uses dominance for the indeterminate part: a (set, state) is skipped when
//! one with the same definite operations and state and a *subset* of its indeterminate ones was
//! visited, because having placed fewer optional operations leaves strictly more choices. A
//! failing search must exhaust every reachable (set, state), and without this, the optional
//! operations that could each explain some read multiply them.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// What an operation does, over interned values (0 is `null`, the initial value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Read(u32),
    Write(u32),
    Cas(u32, u32),
}

/// One operation of the search, in call order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Op {
    pub(crate) kind: Kind,
    /// Its call's position in the history.
    pub(crate) call: usize,
    /// Its return's position; `None` for an indeterminate operation.
    pub(crate) ret: Option<usize>,
}

/// The furthest the search got before failing.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stuck {
    /// The operation whose return no order got past.
    pub(crate) op: usize,
    /// The register values (interned) when it could not be placed, in order found.
    pub(crate) states: Vec<u32>,
    /// The last operations of the first such order, oldest first.
    pub(crate) tail: Vec<usize>,
    /// How many operations that order had placed.
    pub(crate) depth: usize,
}

#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    Linearizable,
    Violation(Stuck),
    /// The state budget ran out first.
    Unknown,
}

#[derive(Clone, Debug)]
pub(crate) struct Searched {
    pub(crate) outcome: Outcome,
    /// Distinct (placed set, state) pairs recorded.
    pub(crate) explored: u64,
}

const MAX_STATES_REPORTED: usize = 16;
const TAIL_REPORTED: usize = 12;
const HEAD: usize = 0;
const NONE: u32 = u32::MAX;

/// The state of the search: the register value, shifted left, with bit 0 set when the last
/// placed operation was indeterminate.
type State = u32;

fn step(kind: Kind, definite: bool, state: State) -> Option<State> {
    let value = state >> 1;
    let after_indeterminate = state & 1 == 1;
    let next = match kind {
        Kind::Read(v) => (value == v).then_some(value)?,
        Kind::Write(_) if after_indeterminate => return None,
        Kind::Write(v) => v,
        Kind::Cas(expected, new) => (value == expected).then_some(new)?,
    };
    if !definite && next == value {
        return None;
    }
    Some(next << 1 | u32::from(!definite))
}

/// Searches for a linearization of `ops` (sorted by call) from the `null` register.
///
/// `budget` bounds the number of memoised states; past it the outcome is `Unknown`.
pub(crate) fn search(ops: &[Op], budget: Option<u64>) -> Searched {
    assert!(
        ops.windows(2).all(|w| w[0].call < w[1].call),
        "operations must be sorted by call"
    );
    assert!(
        ops.iter().all(|op| op.ret.is_none_or(|r| r > op.call)),
        "a return must follow its call"
    );
    let list = List::new(ops);
    Search::new(ops, list).run(budget)
}

/// The entries as a doubly linked list over indices: 0 is the head, `len + 1` the tail.
struct List {
    next: Vec<u32>,
    prev: Vec<u32>,
    /// For each entry, its operation and whether it is the call.
    entry_op: Vec<u32>,
    entry_is_call: Vec<bool>,
    /// For each operation, its call and return entries.
    call_entry: Vec<u32>,
    ret_entry: Vec<u32>,
}

impl List {
    fn new(ops: &[Op]) -> List {
        let mut events: Vec<(usize, u32, bool)> = Vec::with_capacity(ops.len() * 2);
        for (i, op) in ops.iter().enumerate() {
            let i = u32::try_from(i).expect("fewer than 2^32 operations per key");
            events.push((op.call, i, true));
            if let Some(ret) = op.ret {
                events.push((ret, i, false));
            }
        }
        events.sort_unstable_by_key(|&(pos, _, _)| pos);
        let n = events.len();
        let to_u32 = |i: usize| u32::try_from(i).expect("fewer than 2^32 entries per key");
        let mut list = List {
            next: (1..=n + 2).map(to_u32).collect(),
            prev: (0..n + 2).map(|i| to_u32(i.saturating_sub(1))).collect(),
            entry_op: vec![NONE; n + 2],
            entry_is_call: vec![false; n + 2],
            call_entry: vec![NONE; ops.len()],
            ret_entry: vec![NONE; ops.len()],
        };
        for (e, &(_, op, is_call)) in events.iter().enumerate() {
            let e = e + 1;
            list.entry_op[e] = op;
            list.entry_is_call[e] = is_call;
            if is_call {
                list.call_entry[op as usize] = to_u32(e);
            } else {
                list.ret_entry[op as usize] = to_u32(e);
            }
        }
        list
    }

    fn unlink(&mut self, e: u32) {
        let (p, n) = (self.prev[e as usize], self.next[e as usize]);
        self.next[p as usize] = n;
        self.prev[n as usize] = p;
    }

    fn relink(&mut self, e: u32) {
        let (p, n) = (self.prev[e as usize], self.next[e as usize]);
        self.next[p as usize] = e;
        self.prev[n as usize] = e;
    }

    fn lift(&mut self, op: usize) {
        self.unlink(self.call_entry[op]);
        if self.ret_entry[op] != NONE {
            self.unlink(self.ret_entry[op]);
        }
    }

    /// Undoes `lift(op)`; lifts must be undone in reverse order.
    fn unlift(&mut self, op: usize) {
        if self.ret_entry[op] != NONE {
            self.relink(self.ret_entry[op]);
        }
        self.relink(self.call_entry[op]);
    }
}

/// The set of placed operations: definite ones by call-order number, indeterminate ones apart.
struct Placed {
    slot: Vec<u32>,
    /// For an indeterminate operation, the previous indeterminate one doing the same thing.
    twin_before: Vec<Option<u32>>,
    definite: Vec<bool>,
    def: Vec<u64>,
    info: Vec<u64>,
    n_def: usize,
    /// The lowest definite number not placed (`n_def` when all are).
    low: usize,
    /// No definite word at or past this index has ever had a bit set.
    top: usize,
}

impl Placed {
    fn new(ops: &[Op]) -> Placed {
        let (mut n_def, mut n_info) = (0u32, 0u32);
        let mut slot = Vec::with_capacity(ops.len());
        for op in ops {
            let counter = if op.ret.is_some() {
                &mut n_def
            } else {
                &mut n_info
            };
            slot.push(*counter);
            *counter += 1;
        }
        let mut last_of_kind: HashMap<Kind, u32> = HashMap::new();
        let twin_before = ops
            .iter()
            .enumerate()
            .map(|(i, op)| match op.ret {
                Some(_) => None,
                None => last_of_kind.insert(op.kind, i as u32),
            })
            .collect();
        Placed {
            slot,
            twin_before,
            definite: ops.iter().map(|op| op.ret.is_some()).collect(),
            def: vec![0; (n_def as usize).div_ceil(64)],
            info: vec![0; (n_info as usize).div_ceil(64)],
            n_def: n_def as usize,
            low: 0,
            top: 0,
        }
    }

    fn insert(&mut self, op: usize) {
        let s = self.slot[op] as usize;
        if !self.definite[op] {
            self.info[s / 64] |= 1 << (s % 64);
            return;
        }
        self.def[s / 64] |= 1 << (s % 64);
        self.top = self.top.max(s / 64 + 1);
        while self.low < self.n_def {
            let shift = self.low % 64;
            let ones = (!(self.def[self.low / 64] >> shift)).trailing_zeros() as usize;
            self.low += ones;
            if ones < 64 - shift {
                break;
            }
        }
        self.low = self.low.min(self.n_def);
    }

    fn contains(&self, op: usize) -> bool {
        let s = self.slot[op] as usize;
        let words = if self.definite[op] {
            &self.def
        } else {
            &self.info
        };
        words[s / 64] & (1 << (s % 64)) != 0
    }

    /// Whether `op` may be placed now without exploring a twin's choice again.
    fn is_candidate(&self, op: usize) -> bool {
        self.twin_before[op].is_none_or(|twin| self.contains(twin as usize))
    }

    fn remove(&mut self, op: usize) {
        let s = self.slot[op] as usize;
        if !self.definite[op] {
            self.info[s / 64] &= !(1 << (s % 64));
            return;
        }
        self.def[s / 64] &= !(1 << (s % 64));
        self.low = self.low.min(s);
    }

    /// The memo key: the definite part of the set, compactly, with the state.
    fn key(&self, state: State) -> Key {
        let start = self.low / 64;
        let mut end = self.top.max(start);
        while end > start && self.def[end - 1] == 0 {
            end -= 1;
        }
        let words = &self.def[start..end];
        let mut hash = mix(u64::from(state), start as u64);
        for &w in words {
            hash = mix(hash, w);
        }
        Key {
            hash: finish(hash),
            start: start as u32,
            state,
            words: words.into(),
        }
    }
}

/// Whether `a ⊆ b`, as bitsets of equal length.
fn is_subset(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x & !y == 0)
}

fn mix(hash: u64, word: u64) -> u64 {
    (hash.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

/// MurmurHash3's finaliser: the hash table indexes with low bits, which the multiply leaves weak.
fn finish(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The definite part of a memoised (placed set, state); equality compares the whole set.
#[derive(PartialEq, Eq)]
struct Key {
    hash: u64,
    start: u32,
    state: State,
    words: Box<[u64]>,
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Passes a precomputed hash through.
#[derive(Default)]
struct Precomputed(u64);

impl Hasher for Precomputed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix(self.0, u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

struct Search<'a> {
    ops: &'a [Op],
    list: List,
    placed: Placed,
    /// For each definite part and state, the indeterminate parts visited with it, as an
    /// antichain: none a subset of another.
    memo: HashMap<Key, Vec<Box<[u64]>>, BuildHasherDefault<Precomputed>>,
    explored: u64,
    stuck: Option<(usize, Stuck)>,
}

impl<'a> Search<'a> {
    fn new(ops: &'a [Op], list: List) -> Search<'a> {
        Search {
            ops,
            list,
            placed: Placed::new(ops),
            memo: HashMap::default(),
            explored: 0,
            stuck: None,
        }
    }

    fn run(mut self, budget: Option<u64>) -> Searched {
        let mut state: State = 0;
        // Each placed operation, the state before it, and whether placing it was forced.
        let mut stack: Vec<(u32, State, bool)> = Vec::new();
        let mut remaining = self.placed.n_def;
        let mut e = self.list.next[HEAD] as usize;
        // Each node's candidates are tried definite ones first, then indeterminate ones (see
        // the module docs): `info_pass` says which walk of the list this is.
        let mut info_pass = false;
        let outcome = 'search: loop {
            if remaining == 0 {
                break Outcome::Linearizable;
            }
            let op = self.list.entry_op[e] as usize;
            assert!(op != NONE as usize, "walked past the last return");
            if self.list.entry_is_call[e] {
                let definite = self.placed.definite[op];
                if definite == info_pass {
                    e = self.list.next[e] as usize;
                    continue;
                }
                let kind = self.ops[op].kind;
                let next = match self.placed.is_candidate(op) {
                    true => step(kind, definite, state),
                    false => None,
                };
                let Some(next) = next else {
                    e = self.list.next[e] as usize;
                    continue;
                };
                // A read that matches can be placed now in any order that places it later:
                // nothing it precedes by doing so was bound to come first, and it changes
                // nothing. So it is not a choice, and if placing it fails, so does this state.
                let forced = definite && matches!(kind, Kind::Read(_));
                self.placed.insert(op);
                if self.visit(next) {
                    if budget.is_some_and(|b| self.explored > b) {
                        break Outcome::Unknown;
                    }
                    stack.push((op as u32, state, forced));
                    state = next;
                    self.list.lift(op);
                    remaining -= usize::from(definite);
                    e = self.list.next[HEAD] as usize;
                    info_pass = false;
                    continue;
                }
                self.placed.remove(op);
                if !forced {
                    e = self.list.next[e] as usize;
                    continue;
                }
            } else if !info_pass {
                // The definite candidates are exhausted; now the indeterminate ones.
                info_pass = true;
                e = self.list.next[HEAD] as usize;
                continue;
            } else {
                self.record_stuck(op, state, &stack);
            }
            // Undo placements back to the last real choice, and try the next candidate after it
            // in the same walk.
            loop {
                let Some((back, before, forced)) = stack.pop() else {
                    let (_, stuck) = self
                        .stuck
                        .take()
                        .expect("a failed search got stuck somewhere");
                    break 'search Outcome::Violation(stuck);
                };
                let back = back as usize;
                self.placed.remove(back);
                self.list.unlift(back);
                remaining += usize::from(self.placed.definite[back]);
                state = before;
                if !forced {
                    e = self.list.next[self.list.call_entry[back] as usize] as usize;
                    info_pass = !self.placed.definite[back];
                    break;
                }
            }
        };
        Searched {
            outcome,
            explored: self.explored,
        }
    }

    /// Records the current set with `state`, unless a visited (set, state) dominates it: same
    /// definite part and state, and a subset of its indeterminate part. Everything the search
    /// can do from here it could do from there, skipping the extra indeterminate operations (a
    /// twin placed here but not there is stood in for by the earlier twin).
    fn visit(&mut self, state: State) -> bool {
        let info = &self.placed.info;
        let seen = self.memo.entry(self.placed.key(state)).or_default();
        if seen.iter().any(|old| is_subset(old, info)) {
            return false;
        }
        seen.retain(|old| !is_subset(info, old));
        seen.push(info.as_slice().into());
        self.explored += 1;
        true
    }

    /// Remembers the furthest return any order failed to get past, for the report.
    fn record_stuck(&mut self, op: usize, state: State, stack: &[(u32, State, bool)]) {
        let ret = self.ops[op]
            .ret
            .expect("only definite operations have returns");
        let value = state >> 1;
        match &mut self.stuck {
            Some((at, stuck)) if *at == ret => {
                if stuck.states.len() < MAX_STATES_REPORTED && !stuck.states.contains(&value) {
                    stuck.states.push(value);
                }
            }
            Some((at, _)) if *at > ret => {}
            _ => {
                let from = stack.len().saturating_sub(TAIL_REPORTED);
                self.stuck = Some((
                    ret,
                    Stuck {
                        op,
                        states: vec![value],
                        tail: stack[from..].iter().map(|&(o, _, _)| o as usize).collect(),
                        depth: stack.len(),
                    },
                ));
            }
        }
    }
}
