//! The lock-table transaction as a sans-IO machine: read the slots, evaluate the statements
//! on the snapshot, then make the outcome conditional on the snapshot in one `multi`.
//!
//! 1. **Read.** For every slot the transaction names: the slot's children (the entries) with
//!    the slot's data version, then each entry's data. A missing slot is created (with its
//!    parents) and read again, so that "no entry" can be checked by version like any other
//!    state. After a conflict or a connection loss the reads are preceded by a `sync`, so a
//!    lagging server cannot make the machine conflict forever.
//! 2. **Evaluate** the statements in order on a copy of the snapshot (later statements see
//!    earlier changes). Each exists-condition that came out true records a *witness*: the
//!    entry that made it true.
//! 3. **Commit** with one `multi`: a check of every slot's version (a slot the transaction
//!    changes is written instead, with its version expected), a check of every witness entry
//!    (ephemeral entries vanish with their session without writing the slot), the changes to
//!    this session's entries, and the handle's marker set to the transaction id. A failed
//!    transaction commits a `multi` of the checks alone, so its verdict too holds at one
//!    instant. A check that fails means the snapshot changed: read again.
//! 4. **Resolve** a commit whose reply was lost: `sync`, then read the marker. It holds this
//!    transaction's id if and only if the `multi` was applied (the handle runs one
//!    transaction at a time, so nothing else of it can have written the marker since).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::coverage::{self, Mark};
use crate::machine::{Machine, Millis, Outbox, Reply, Request, Resumed, Stall, Token};
use crate::recipes::once::ancestor_creates;
use crate::{CreateMode, Error, ErrorClass, Op, OpResult, SessionState, WatchedEvent, path};

use super::statement::{Change, Condition, Slot, Statement, Transaction, encode_name};
use super::{Committed, LockTableError};

/// How many conflicting attempts a transaction makes before giving up with
/// [`LockTableError::Contended`].
pub const MAX_ATTEMPTS: u32 = 64;

/// What an entry node holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct EntryData {
    /// The id of the transaction that set it, hex.
    pub(crate) tx: String,
    /// The entry's value.
    pub(crate) value: String,
    /// The setting transaction's description.
    pub(crate) description: String,
}

/// The node name of `session`'s entry in a slot.
pub(crate) fn entry_name(session: i64) -> String {
    format!("{:016x}", session as u64)
}

/// The session an entry node name stands for.
pub(crate) fn entry_session(name: &str) -> Option<i64> {
    u64::from_str_radix(name, 16).ok().map(|s| s as i64)
}

/// The path of a slot's node under namespace `ns`.
pub(crate) fn slot_path(ns: &str, slot: &Slot) -> String {
    format!("{}/{}", table_path(ns, &slot.table), encode_name(&slot.var))
}

fn table_path(ns: &str, table: &str) -> String {
    format!("{}/{}", vars_path(ns), encode_name(table))
}

pub(crate) fn vars_path(ns: &str) -> String {
    path::join(ns, "vars")
}

/// One entry as read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct EntryView {
    value: String,
    version: i32,
}

/// One slot as read: its data version and its entries by session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct SlotView {
    version: i32,
    entries: BTreeMap<i64, EntryView>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Pending {
    Sync,
    Create,
    Children(String),
    Data { slot: String, session: i64 },
}

/// What a commit `multi` decides.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Verdict {
    /// The changes were made (the per-statement applied flags).
    Commit(Vec<bool>),
    /// Statement `index` failed; the `multi` only checks the snapshot.
    Fail(usize),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Reading {
        pending: BTreeMap<Token, Pending>,
        snapshot: BTreeMap<String, SlotView>,
    },
    Committing {
        multi: Token,
        ops: Vec<Op>,
        verdict: Verdict,
        writes: bool,
        marker_index: Option<usize>,
    },
    Resolving {
        data: Token,
        ops: Vec<Op>,
        applied: Vec<bool>,
    },
    /// Waiting for a retry (after a connection loss).
    Paused,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Retry {
    Read,
    Commit,
    Resolve,
}

/// How a transaction ended, as the machine reports it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TxOutcome {
    /// Applied: what [`LockTable::execute`](super::LockTable::execute) returns.
    Committed(Committed),
    /// Statement `index` did not hold; nothing was changed.
    Failed {
        /// The failing statement's index.
        index: usize,
    },
}

/// Runs one lock transaction; see the module docs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TxMachine {
    ns: String,
    tx: Transaction,
    /// Slot paths by slot, for every slot the transaction names.
    slots: BTreeMap<Slot, String>,
    session: i64,
    txid: u128,
    marker: String,
    marker_exists: bool,
    attempts: u32,
    resolved: bool,
    sync_first: bool,
    out: Outbox<Result<TxOutcome, LockTableError>>,
    phase: Phase,
    /// The step to redo after a connection loss.
    stall: Stall<Retry>,
}

impl TxMachine {
    /// A machine running `tx` in namespace `ns` for `session`, as transaction `txid`,
    /// recording it in the handle's `marker` node (which exists already if `marker_exists`).
    ///
    /// ```
    /// use avout::locktable::{assert, exists, not, Transaction, TxMachine};
    /// let tx = Transaction::new("t", vec![assert(not(exists("a", "b")))]);
    /// let m = TxMachine::new("/ns", tx, 7, 1, "/ns/tx/m".into(), false);
    /// assert!(!m.marker_exists());
    /// ```
    pub fn new(
        ns: &str,
        tx: Transaction,
        session: i64,
        txid: u128,
        marker: String,
        marker_exists: bool,
    ) -> Self {
        let slots = tx
            .statements
            .iter()
            .flat_map(Statement::slots)
            .map(|s| (s.clone(), slot_path(ns, s)))
            .collect();
        TxMachine {
            ns: ns.to_owned(),
            tx,
            slots,
            session,
            txid,
            marker,
            marker_exists,
            attempts: 0,
            resolved: false,
            sync_first: false,
            out: Outbox::default(),
            phase: Phase::Done,
            stall: Stall::default(),
        }
    }

    /// Whether the handle's marker node exists, as far as this machine learnt.
    ///
    /// ```
    /// use avout::locktable::{Transaction, TxMachine};
    /// let m = TxMachine::new("/ns", Transaction::new("t", vec![]), 7, 1, "/ns/tx/m".into(), true);
    /// assert!(m.marker_exists());
    /// ```
    pub fn marker_exists(&self) -> bool {
        self.marker_exists
    }

    fn send(&mut self, request: Request) -> Token {
        self.out.send(request)
    }

    fn finish(&mut self, result: Result<TxOutcome, LockTableError>) {
        self.phase = Phase::Done;
        self.stall.cancel();
        self.out.finish(result);
    }

    /// Reads `slot`'s children as part of `pending`.
    fn list(&mut self, pending: &mut BTreeMap<Token, Pending>, slot: String) {
        let t = self.send(Request::GetChildren {
            path: slot.clone(),
            watch: false,
        });
        pending.insert(t, Pending::Children(slot));
    }

    /// Creates `path` and its ancestors as part of `pending` (`NodeExists` replies expected).
    fn create_all(&mut self, pending: &mut BTreeMap<Token, Pending>, path: &str) {
        for create in ancestor_creates(path) {
            pending.insert(self.send(create), Pending::Create);
        }
    }

    fn txid_hex(&self) -> String {
        format!("{:032x}", self.txid)
    }

    /// Starts an attempt: reads every slot.
    fn read(&mut self) {
        let mut pending = BTreeMap::new();
        if std::mem::take(&mut self.sync_first) {
            let t = self.send(Request::Sync {
                path: self.ns.clone(),
            });
            pending.insert(t, Pending::Sync);
        }
        if !self.marker_exists {
            // The marker's parent, for the commit to create the marker in; NodeExists
            // replies are expected.
            let parent = path::parent(&self.marker).unwrap_or("/").to_owned();
            if parent != "/" {
                self.create_all(&mut pending, &parent);
            }
        }
        let paths: BTreeSet<String> = self.slots.values().cloned().collect();
        for slot in paths {
            self.list(&mut pending, slot);
        }
        self.phase = Phase::Reading {
            pending,
            snapshot: BTreeMap::new(),
        };
    }

    /// The snapshot changed under us: read again, unless that has happened too often.
    fn conflict(&mut self) {
        self.attempts += 1;
        if self.attempts >= MAX_ATTEMPTS {
            return self.finish(Err(LockTableError::Contended {
                attempts: self.attempts,
            }));
        }
        self.sync_first = true;
        self.read();
    }

    fn failed(&mut self, now: Millis, error: Error, step: Retry) {
        match error.class() {
            ErrorClass::Indeterminate => {
                self.sync_first = true;
                if step == Retry::Read {
                    self.phase = Phase::Paused;
                }
                self.stall.start(step, now);
            }
            ErrorClass::SessionLost => self.finish(Err(LockTableError::SessionLost(error))),
            ErrorClass::Rejected => self.finish(Err(LockTableError::Zk(error))),
        }
    }

    fn redo(&mut self, step: Retry) {
        match (step, self.phase.clone()) {
            (Retry::Read, _) => self.read(),
            (
                Retry::Commit,
                Phase::Committing {
                    ops,
                    verdict,
                    writes,
                    marker_index,
                    ..
                },
            ) => {
                if writes {
                    // The multi may have been applied: find out before anything else.
                    self.resolve(ops, verdict);
                } else {
                    // Only checks: repeating them is harmless.
                    self.commit(ops, verdict, writes, marker_index);
                }
            }
            (Retry::Resolve, Phase::Resolving { ops, applied, .. }) => {
                self.resolve(ops, Verdict::Commit(applied))
            }
            (_, phase) => unreachable!("retry {step:?} in {phase:?}"),
        }
    }

    fn resolve(&mut self, ops: Vec<Op>, verdict: Verdict) {
        let Verdict::Commit(applied) = verdict else {
            unreachable!("only writing multis are resolved")
        };
        // The server this session now talks to may lag the one that applied the multi.
        self.send(Request::Sync {
            path: self.marker.clone(),
        });
        let data = self.send(Request::GetData {
            path: self.marker.clone(),
            watch: false,
        });
        self.phase = Phase::Resolving { data, ops, applied };
    }

    /// A reply during the reads.
    fn on_read(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        let Phase::Reading {
            mut pending,
            mut snapshot,
        } = self.phase.clone()
        else {
            return;
        };
        let Some(what) = pending.remove(&token) else {
            return;
        };
        match (what, reply) {
            (Pending::Sync | Pending::Create, Ok(_)) => {}
            (Pending::Create, Err(Error::NodeExists { .. })) => {}
            (Pending::Children(slot), Ok(Reply::Children { children, stat })) => {
                let view = snapshot.entry(slot.clone()).or_default();
                view.version = stat.version;
                for child in children {
                    if let Some(session) = entry_session(&child) {
                        let t = self.send(Request::GetData {
                            path: path::join(&slot, &child),
                            watch: false,
                        });
                        pending.insert(
                            t,
                            Pending::Data {
                                slot: slot.clone(),
                                session,
                            },
                        );
                    }
                }
            }
            (Pending::Children(slot), Err(Error::NoNode { .. })) => {
                self.create_all(&mut pending, &slot);
                self.list(&mut pending, slot);
            }
            (Pending::Data { slot, session }, Ok(Reply::Data { data, stat })) => {
                // An entry that is not ours to parse (written by hand) counts with an empty
                // value: its presence still excludes.
                let value = serde_json::from_slice::<EntryData>(&data)
                    .map(|d| d.value)
                    .unwrap_or_default();
                snapshot.entry(slot).or_default().entries.insert(
                    session,
                    EntryView {
                        value,
                        version: stat.version,
                    },
                );
            }
            // Gone between the listing and the read: its session ended.
            (Pending::Data { .. }, Err(Error::NoNode { .. })) => {}
            (_, Err(e)) => return self.failed(now, e, Retry::Read),
            (what, Ok(other)) => unreachable!("{what:?} replied {other:?}"),
        }
        if pending.is_empty() {
            self.evaluate(snapshot);
        } else {
            self.phase = Phase::Reading { pending, snapshot };
        }
    }

    /// Evaluates the statements on the snapshot and sends the deciding `multi`.
    fn evaluate(&mut self, snapshot: BTreeMap<String, SlotView>) {
        let mut state = snapshot.clone();
        let mut witnesses: BTreeSet<(String, i64, i32)> = BTreeSet::new();
        let mut applied = Vec::with_capacity(self.tx.statements.len());
        let mut failed = None;
        for (index, statement) in self.tx.statements.clone().iter().enumerate() {
            let ok = match statement {
                Statement::Assert(condition) => {
                    self.holds(condition, &mut state, &snapshot, &mut witnesses)
                }
                Statement::AnywayContinueAfter(change) => {
                    applied.push(self.apply(change, &mut state));
                    continue;
                }
            };
            if !ok {
                failed = Some(index);
                break;
            }
            applied.push(true);
        }
        let mut ops = Vec::new();
        let (verdict, writes) = match failed {
            Some(index) => (Verdict::Fail(index), false),
            None => {
                let writes = state != snapshot;
                (Verdict::Commit(applied), writes)
            }
        };
        for (slot, read) in &snapshot {
            let now = &state[slot];
            if writes && now != read {
                ops.push(Op::set_data(
                    slot.clone(),
                    self.txid_hex().into_bytes(),
                    Some(read.version),
                ));
            } else {
                ops.push(Op::check(slot.clone(), Some(read.version)));
            }
        }
        for (slot, session, version) in &witnesses {
            ops.push(Op::check(
                path::join(slot, &entry_name(*session)),
                Some(*version),
            ));
        }
        let mut marker_index = None;
        if writes {
            let data = serde_json::to_vec(&EntryData {
                tx: self.txid_hex(),
                value: String::new(),
                description: self.tx.description.clone(),
            })
            .expect("entry data serialises");
            for (slot, read) in &snapshot {
                let mine = entry_name(self.session);
                let node = path::join(slot, &mine);
                match (
                    read.entries.get(&self.session),
                    state[slot].entries.get(&self.session),
                ) {
                    (None, Some(now)) => ops.push(Op::create(
                        node,
                        with_value(&data, &now.value),
                        CreateMode::Ephemeral,
                    )),
                    (Some(before), Some(now)) if before != now => {
                        ops.push(Op::set_data(
                            node,
                            with_value(&data, &now.value),
                            Some(before.version),
                        ));
                    }
                    (Some(before), None) => ops.push(Op::delete(node, Some(before.version))),
                    _ => {}
                }
            }
            marker_index = Some(ops.len());
            let txid = self.txid_hex().into_bytes();
            ops.push(if self.marker_exists {
                Op::set_data(self.marker.clone(), txid, None)
            } else {
                Op::create(self.marker.clone(), txid, CreateMode::Ephemeral)
            });
        }
        if let Err(e) = Op::validate_all(&ops) {
            return self.finish(Err(LockTableError::Invalid {
                reason: format!("the transaction does not fit one request: {e}"),
            }));
        }
        self.commit(ops, verdict, writes, marker_index);
    }

    /// Sends the deciding `multi`.
    fn commit(
        &mut self,
        ops: Vec<Op>,
        verdict: Verdict,
        writes: bool,
        marker_index: Option<usize>,
    ) {
        let multi = self.send(Request::Multi(ops.clone()));
        self.phase = Phase::Committing {
            multi,
            ops,
            verdict,
            writes,
            marker_index,
        };
    }

    /// Evaluates a condition, applying the changes it makes to `state`.
    fn holds(
        &self,
        condition: &Condition,
        state: &mut BTreeMap<String, SlotView>,
        snapshot: &BTreeMap<String, SlotView>,
        witnesses: &mut BTreeSet<(String, i64, i32)>,
    ) -> bool {
        match condition {
            Condition::Exists {
                slot,
                value,
                include_own,
            } => {
                let path = &self.slots[slot];
                let found = state[path].entries.iter().find(|(session, e)| {
                    (*include_own || **session != self.session)
                        && value.as_ref().is_none_or(|v| *v == e.value)
                });
                match found {
                    Some((session, entry)) => {
                        // An entry as read may vanish with its session before the commit:
                        // check it is still there. One we set in this transaction is
                        // written by the commit itself.
                        if snapshot[path].entries.get(session) == Some(entry) {
                            witnesses.insert((path.clone(), *session, entry.version));
                        }
                        true
                    }
                    None => false,
                }
            }
            Condition::Not(inner) => !self.holds(inner, state, snapshot, witnesses),
            Condition::Change(change) => self.apply(change, state),
        }
    }

    /// Applies a change to `state` if it can be; says whether it was.
    fn apply(&self, change: &Change, state: &mut BTreeMap<String, SlotView>) -> bool {
        let view = state
            .get_mut(&self.slots[change.slot()])
            .expect("every named slot was read");
        match change {
            Change::SetVar {
                value,
                allow_duplicates,
                ..
            } => {
                let others = view.entries.keys().any(|s| *s != self.session);
                if others && !allow_duplicates {
                    return false;
                }
                let version = view.entries.get(&self.session).map_or(-1, |e| e.version);
                view.entries.insert(
                    self.session,
                    EntryView {
                        value: value.clone(),
                        version,
                    },
                );
                true
            }
            Change::DeleteVar { value, .. } => match view.entries.get(&self.session) {
                Some(e) if value.as_ref().is_none_or(|v| *v == e.value) => {
                    view.entries.remove(&self.session);
                    true
                }
                _ => false,
            },
        }
    }
}

/// The entry data with the entry's own value.
fn with_value(data: &[u8], value: &str) -> Vec<u8> {
    let mut entry: EntryData = serde_json::from_slice(data).expect("our own entry data");
    entry.value = value.to_owned();
    serde_json::to_vec(&entry).expect("entry data serialises")
}

/// The zxid of a writing commit, from its reply: every writing `multi` sets the data of
/// each slot it changes, and a `setData` result carries the node's new `mzxid`, the
/// `multi`'s own zxid. A `multi` of checks alone writes nothing: `None`.
fn written_at(reply: &Reply) -> Option<i64> {
    match reply {
        Reply::Multi(results) => results.iter().find_map(|r| match r {
            OpResult::SetData { stat } => Some(stat.mzxid),
            _ => None,
        }),
        _ => None,
    }
}

impl Machine for TxMachine {
    type Output = Result<TxOutcome, LockTableError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.out.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            Phase::Reading { .. } => self.on_read(now, token, reply),
            Phase::Committing {
                multi,
                verdict,
                marker_index,
                ..
            } if token == multi => match reply {
                Ok(reply) => {
                    let outcome = match verdict {
                        Verdict::Commit(applied) => {
                            if marker_index.is_some() {
                                self.marker_exists = true;
                            }
                            TxOutcome::Committed(Committed {
                                applied,
                                resolved: self.resolved,
                                zxid: written_at(&reply),
                            })
                        }
                        Verdict::Fail(index) => TxOutcome::Failed { index },
                    };
                    self.finish(Ok(outcome));
                }
                Err(Error::Multi { index, source })
                    if matches!(
                        *source,
                        Error::BadVersion { .. } | Error::NoNode { .. } | Error::NodeExists { .. }
                    ) =>
                {
                    if Some(index) == marker_index && matches!(*source, Error::NodeExists { .. }) {
                        // A cancelled transaction of this handle created it.
                        self.marker_exists = true;
                    }
                    self.conflict();
                }
                Err(e) => self.failed(now, e, Retry::Commit),
            },
            Phase::Resolving { data, ops, applied } if token == data => match reply {
                Ok(Reply::Data { data, stat }) => {
                    self.marker_exists = true;
                    self.resolved = true;
                    if data == self.txid_hex().into_bytes() {
                        // The marker was last written by the deciding `multi`.
                        coverage::reach(Mark::LockTableCommitLostApplied);
                        self.finish(Ok(TxOutcome::Committed(Committed {
                            applied,
                            resolved: true,
                            zxid: Some(stat.mzxid),
                        })));
                    } else {
                        coverage::reach(Mark::LockTableCommitLostNotApplied);
                        drop(ops);
                        self.conflict();
                    }
                }
                Err(Error::NoNode { .. }) if !self.marker_exists => {
                    // The marker's create was part of the multi: not applied.
                    coverage::reach(Mark::LockTableCommitLostNotApplied);
                    self.resolved = true;
                    self.conflict();
                }
                Err(Error::NoNode { .. }) => {
                    self.finish(Err(LockTableError::Indeterminate(Error::NoNode {
                        path: self.marker.clone(),
                    })))
                }
                Err(e) => self.failed(now, e, Retry::Resolve),
                Ok(other) => unreachable!("marker read replied {other:?}"),
            },
            // Replies to superseded requests (the sync before a marker read).
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, _token: Token, _event: WatchedEvent) {}

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.out.session_stalled(state, &mut self.stall) {
            Resumed::Start => self.read(),
            // The session's entries went with it, whatever the last multi did.
            Resumed::Ended(error) => self.finish(Err(LockTableError::SessionLost(error))),
            Resumed::Redo(step) => self.redo(step),
            Resumed::Quiet => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Some(step) = self.stall.due(now) {
            self.redo(step);
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.stall.deadline()
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.out.take_output()
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
