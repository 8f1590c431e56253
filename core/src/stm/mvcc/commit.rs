//! The commit after tagging: [`PrepareMachine`] (to `COMMITTING`, write locks, newest values
//! of commuted refs) and [`WriteMachine`] (the commit record: one `multi`).
//!
//! **Prepare**, one round trip when the locks are free: a compare-and-set of the point from
//! `RUNNING` (version 0) to `COMMITTING` — failing if an older transaction barged this one —
//! sent together with the write-lock requests of every written and commuted ref (the read
//! side of the same lock is what `ensure` holds, so an ensured ref really excludes writers).
//! A lock not granted within the lock wait gives the try up (two transactions that ensure
//! what the other writes would otherwise wait for each other forever). Once every lock is
//! held, the newest values of commuted refs are read: nobody can change them now.
//!
//! **Write**, one round trip: one `multi` that deletes the point at its `COMMITTING` version
//! (the transaction is `COMMITTED`: its history nodes are the durable record), and for each
//! written ref creates its history node `TXID-VERSION`, sets the ref node's value at the
//! version read when tagging, and deletes the tag; it also deletes the lock nodes and trims the
//! history (the caller puts those deletes in `ops`; `deletes` is for requests that may fail
//! harmlessly and so must not be in the `multi`). All or nothing: no reader can see half a
//! commit, and a client that dies mid-commit leaves nothing behind but ephemerals that go with
//! its session.
//!
//! If the `multi`'s reply is lost, the machine waits for the session, then reads (after a
//! `sync`) whether the transaction's point still exists: the `multi` either applied whole (and
//! deleted it) or not at all, and while the session lives nobody else deletes the point. (A
//! history node the `multi` created is no proof: other commits may have trimmed it away by
//! then, and a commit that applied would be taken for one that did not, and sent again.) If the point's version check is what failed, this `COMMITTING` transaction
//! was killed: a protocol violation (Clojure never kills a committing transaction), reported
//! as [`Halt::Violation`].

use crate::lock::{LockKind, Patience};

use super::locks::{Held, LockRequest, Locks};
use crate::coverage::{self, Mark};
use crate::machine::{Machine, Millis, Reply, Request, Token};
use crate::{Error, Op, SessionState, WatchedEvent};

use super::Halt;
use super::io::{Batch, Io, SessionStep, Verdict, verdict};
use super::layout::{Layout, State};

/// A commuted ref's newest value, read under its write lock.
///
/// ```
/// let n = avout::stm::mvcc::Newest { name: "n".into(), value: b"3".to_vec(), version: 3, history: vec![] };
/// assert_eq!(n.version, 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Newest {
    /// The ref.
    pub name: String,
    /// Its value.
    pub value: Vec<u8>,
    /// The ref node's version.
    pub version: i32,
    /// The history's node names.
    pub history: Vec<String>,
}

/// A prepared commit.
///
/// ```
/// let p = avout::stm::mvcc::Prepared { committing_version: 1, locks: vec![], commuted: vec![] };
/// assert_eq!(p.committing_version, 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Prepared {
    /// The point's version once `COMMITTING`.
    pub committing_version: i32,
    /// The write-lock nodes held, by ref name.
    pub locks: Vec<(String, String)>,
    /// The commuted refs' newest values.
    pub commuted: Vec<Newest>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Start,
    /// The compare-and-set (and any read-lock deletes), with the locks running beside.
    Marking(Batch),
    /// After a lost reply to the compare-and-set: reading the point.
    Checking(Batch),
    /// Waiting for the locks only.
    Locking,
    /// Reading commuted refs under their locks.
    Reading(Batch),
    Done,
}

/// Moves a tagged transaction to `COMMITTING` and takes its write locks; see the
/// module docs.
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::stm::mvcc::PrepareMachine;
/// let mut m = PrepareMachine::new("/s", "t-1", 5, vec![("a".into(), 7)], vec![], vec![], 3, 100);
/// m.handle_session(Millis(0), avout::SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::SetData { version: Some(0), .. }))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PrepareMachine {
    layout: Layout,
    txid: String,
    age: i64,
    /// Refs to write-lock (written and commuted, sorted), with each lock node's GUID.
    lock: Vec<(String, u128)>,
    commutes: Vec<String>,
    /// This transaction's read-lock nodes on refs it now writes: released first, or the
    /// write lock would wait for them.
    release_first: Vec<String>,
    session: i64,
    lock_wait_ms: u64,
    locks: Locks,
    committing: Option<i32>,
    phase: Phase,
    io: Io,
    output: Option<Result<Prepared, Halt>>,
}

impl PrepareMachine {
    /// Prepares the commit of `txid` (age `age`) in the STM at `root`: write locks on `lock`
    /// (ref names with GUIDs for the lock nodes), newest values of `commutes`, after deleting
    /// `release_first`; `session` is this session's id; a lock not granted in `lock_wait_ms`
    /// gives the try up.
    ///
    /// ```
    /// let m = avout::stm::mvcc::PrepareMachine::new("/s", "t-1", 5, vec![], vec![], vec![], 3, 100);
    /// assert!(m.held().is_empty());
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        root: &str,
        txid: &str,
        age: i64,
        lock: Vec<(String, u128)>,
        commutes: Vec<String>,
        release_first: Vec<String>,
        session: i64,
        lock_wait_ms: u64,
    ) -> Self {
        PrepareMachine {
            layout: Layout::new(root),
            txid: txid.to_owned(),
            age,
            lock,
            commutes,
            release_first,
            session,
            lock_wait_ms,
            locks: Locks::default(),
            committing: None,
            phase: Phase::Start,
            io: Io::new(),
            output: None,
        }
    }

    /// The same machine with `planted` bugs on in its lock acquisitions (none by default;
    /// see [`crate::planted`]).
    ///
    /// ```
    /// let m = avout::stm::mvcc::PrepareMachine::new("/s", "t-1", 5, vec![], vec![], vec![], 3, 100)
    ///     .planted(avout::planted::Bugs::NONE);
    /// assert!(m.held().is_empty());
    /// ```
    pub fn planted(mut self, planted: crate::planted::Bugs) -> Self {
        self.locks.planted = planted;
        self
    }

    /// The lock nodes this machine holds or may hold: what a cleanup must remove if the
    /// commit does not go on.
    ///
    /// ```
    /// let m = avout::stm::mvcc::PrepareMachine::new("/s", "t-1", 5, vec![], vec![], vec![], 3, 100);
    /// assert!(m.held().is_empty());
    /// ```
    pub fn held(&self) -> Vec<Held> {
        self.locks.held()
    }

    fn finish(&mut self, out: Result<Prepared, Halt>) {
        if matches!(out, Err(Halt::Barged)) {
            coverage::reach(Mark::StmMvccWasBarged);
        }
        self.phase = Phase::Done;
        self.io.clear();
        self.output = Some(out);
    }

    fn start(&mut self, now: Millis, state: SessionState) {
        let mut batch = Batch::default();
        let cas = self.cas();
        batch.push(&mut self.io, cas);
        batch.push_deletes(&mut self.io, self.release_first.clone());
        let requests = self
            .lock
            .iter()
            .map(|(name, guid)| LockRequest {
                name: name.clone(),
                lock_path: self.layout.lock(name),
                kind: LockKind::Write,
                guid: *guid,
            })
            .collect();
        self.locks.start(
            now,
            state,
            self.session,
            Patience::Millis(self.lock_wait_ms),
            requests,
        );
        self.phase = Phase::Marking(batch);
    }

    fn cas(&self) -> Request {
        Request::SetData {
            path: self.layout.point(&self.txid),
            data: State::Committing.encode(self.age),
            version: Some(0),
        }
    }

    /// Goes on once the point is `COMMITTING` and every lock is decided.
    fn advance(&mut self) {
        if self.phase == Phase::Done || self.committing.is_none() || !self.locks.all_done() {
            return;
        }
        if let Some(halt) = self.locks.failure() {
            return self.finish(Err(halt));
        }
        if self.commutes.is_empty() {
            return self.prepared(Vec::new());
        }
        let mut batch = Batch::default();
        for name in self.commutes.clone() {
            batch.push(
                &mut self.io,
                Request::GetData {
                    path: self.layout.ref_node(&name),
                    watch: false,
                },
            );
            batch.push(
                &mut self.io,
                Request::GetChildren {
                    path: self.layout.history(&name),
                    watch: false,
                },
            );
        }
        self.phase = Phase::Reading(batch);
    }

    fn prepared(&mut self, commuted: Vec<Newest>) {
        let out = Prepared {
            committing_version: self.committing.expect("committing"),
            locks: self.locks.acquired(),
            commuted,
        };
        self.finish(Ok(out));
    }

    fn marked(&mut self, now: Millis, replies: Vec<crate::Result<Reply>>) {
        match verdict(&replies) {
            Verdict::SessionLost(e) => return self.finish(Err(Halt::SessionLost(e))),
            Verdict::Indeterminate => {
                // Did the compare-and-set apply? Read the point once reconnected.
                coverage::reach(Mark::StmMvccCommittingLost);
                self.phase = Phase::Checking(Batch::default());
                return self.io.redo_later(now);
            }
            Verdict::Replied => {}
        }
        match replies.into_iter().next().expect("the cas") {
            Ok(Reply::Set(stat)) => self.committing = Some(stat.version),
            // Killed by an older transaction (or its point is gone with the session).
            Err(Error::BadVersion { .. }) | Err(Error::NoNode { .. }) => {
                return self.finish(Err(Halt::Barged));
            }
            Err(e) => return self.finish(Err(Halt::Zk(e))),
            Ok(other) => unreachable!("set_data replied {other:?}"),
        }
        self.phase = Phase::Locking;
        self.advance();
    }

    fn check(&mut self) {
        let mut batch = Batch::default();
        batch.push(
            &mut self.io,
            Request::GetData {
                path: self.layout.point(&self.txid),
                watch: false,
            },
        );
        self.phase = Phase::Checking(batch);
    }

    fn checked(&mut self, now: Millis, reply: crate::Result<Reply>) {
        match reply {
            Ok(Reply::Data { data, stat }) => match State::parse(&data) {
                Some((State::Committing, _)) => {
                    self.committing = Some(stat.version);
                    self.phase = Phase::Locking;
                    self.advance();
                }
                Some((State::Running, _)) if stat.version == 0 => {
                    let mut batch = Batch::default();
                    let cas = self.cas();
                    batch.push(&mut self.io, cas);
                    self.phase = Phase::Marking(batch);
                }
                _ => self.finish(Err(Halt::Barged)),
            },
            Err(Error::NoNode { .. }) => self.finish(Err(Halt::Barged)),
            Err(e) if e.is_session_lost() => self.finish(Err(Halt::SessionLost(e))),
            Err(e) if e.is_indeterminate() => self.io.redo_later(now),
            Err(e) => self.finish(Err(Halt::Zk(e))),
            Ok(other) => unreachable!("get_data replied {other:?}"),
        }
    }

    fn read(&mut self, now: Millis, replies: Vec<crate::Result<Reply>>) {
        match verdict(&replies) {
            Verdict::SessionLost(e) => return self.finish(Err(Halt::SessionLost(e))),
            Verdict::Indeterminate => {
                self.phase = Phase::Locking;
                self.io.redo_later(now);
                return;
            }
            Verdict::Replied => {}
        }
        let mut it = replies.into_iter();
        let mut commuted = Vec::new();
        for name in self.commutes.clone() {
            let (value, stat) = match it.next() {
                Some(Ok(Reply::Data { data, stat })) => (data, stat),
                Some(Err(Error::NoNode { .. })) => return self.finish(Err(Halt::NoRef(name))),
                Some(Err(e)) => return self.finish(Err(Halt::Zk(e))),
                other => unreachable!("get_data replied {other:?}"),
            };
            let history = match it.next() {
                Some(Ok(Reply::Children { children, .. })) => children,
                Some(Err(e)) => return self.finish(Err(Halt::Zk(e))),
                other => unreachable!("children replied {other:?}"),
            };
            commuted.push(Newest {
                name,
                value,
                version: stat.version,
                history,
            });
        }
        self.prepared(commuted);
    }
}

impl Machine for PrepareMachine {
    type Output = Result<Prepared, Halt>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.io.poll().or_else(|| self.locks.poll_request())
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        if Locks::owns(token) {
            self.locks.handle_reply(now, token, reply);
            return self.advance();
        }
        match &mut self.phase {
            Phase::Marking(batch) | Phase::Reading(batch) | Phase::Checking(batch) => {
                if !batch.accept(token, reply) || !batch.complete() {
                    return;
                }
            }
            Phase::Start | Phase::Locking | Phase::Done => return,
        }
        match self.phase.clone() {
            Phase::Marking(mut batch) => self.marked(now, batch.take()),
            Phase::Reading(mut batch) => self.read(now, batch.take()),
            Phase::Checking(mut batch) => {
                let reply = batch.take().into_iter().next().expect("one read");
                self.checked(now, reply)
            }
            _ => {}
        }
    }

    fn handle_watch(&mut self, now: Millis, token: Token, event: WatchedEvent) {
        if Locks::owns(token) {
            self.locks.handle_watch(now, token, event);
            self.advance();
        }
    }

    fn handle_session(&mut self, now: Millis, state: SessionState) {
        let step = self.io.on_session(state, self.phase == Phase::Done);
        match step {
            SessionStep::Done => return,
            SessionStep::Lost(e) => return self.finish(Err(Halt::SessionLost(e))),
            SessionStep::Start => return self.start(now, state),
            SessionStep::Redo | SessionStep::Carry => self.locks.handle_session(now, state),
        }
        if step == SessionStep::Redo {
            self.redo();
        }
        self.advance();
    }

    fn handle_timer(&mut self, now: Millis) {
        self.locks.handle_timer(now);
        if self.io.on_timer(now, self.phase == Phase::Done) {
            self.redo();
        }
        self.advance();
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.locks.next_timer(self.io.redo_at)
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.output.take()
    }
}

impl PrepareMachine {
    fn redo(&mut self) {
        match self.phase {
            Phase::Checking(_) => self.check(),
            Phase::Locking if self.committing.is_some() && self.locks.all_done() => {
                // The commuted reads were lost: read again.
                self.advance()
            }
            _ => {}
        }
    }
}

/// How the commit `multi` went.
///
/// ```
/// let w = avout::stm::mvcc::Written { recovered: false };
/// assert!(!w.recovered);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Written {
    /// Whether its outcome was decided by a read after a lost reply.
    pub recovered: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum WritePhase {
    Start,
    /// The `multi`, then the deletes.
    Writing {
        multi: Token,
        deletes: Batch,
    },
    /// The `multi`'s outcome is unknown: `sync` and look for its first history node.
    Probing(Batch),
    /// The `multi` is decided; deletes are being (re)sent.
    Deleting {
        committed: bool,
        deletes: Batch,
    },
    Done,
}

/// Sends the commit `multi` and the deletes that follow it; see the module docs.
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::stm::mvcc::WriteMachine;
/// let ops = vec![avout::Op::delete("/s/stm/history/t-1", Some(1))];
/// let mut m = WriteMachine::new(ops, vec![], "/s/stm/history/t-1", "/s/stm/history");
/// m.handle_session(Millis(0), avout::SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::Multi(_)))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WriteMachine {
    ops: Vec<Op>,
    deletes: Vec<String>,
    probe: String,
    sync_path: String,
    outcome: Option<bool>,
    /// Why the `multi` was refused, reported once the deletes are through.
    failure: Option<Halt>,
    recovered: bool,
    phase: WritePhase,
    io: Io,
    output: Option<Result<Written, Halt>>,
}

impl WriteMachine {
    /// Applies `ops` (the first deletes the point at its `COMMITTING` version), then deletes
    /// `deletes` (nodes that may already be gone; missing ones are fine). `probe` is a node the
    /// `multi` deletes and nobody else does while the session lives (the point), read to
    /// decide its outcome after a lost reply (after a `sync` of `sync_path`): gone means
    /// applied.
    ///
    /// ```
    /// let m = avout::stm::mvcc::WriteMachine::new(vec![], vec![], "/p", "/");
    /// assert!(format!("{m:?}").contains("/p"));
    /// ```
    pub fn new(ops: Vec<Op>, deletes: Vec<String>, probe: &str, sync_path: &str) -> Self {
        WriteMachine {
            ops,
            deletes,
            probe: probe.to_owned(),
            sync_path: sync_path.to_owned(),
            outcome: None,
            failure: None,
            recovered: false,
            phase: WritePhase::Start,
            io: Io::new(),
            output: None,
        }
    }

    fn finish(&mut self, out: Result<Written, Halt>) {
        self.phase = WritePhase::Done;
        self.io.clear();
        self.output = Some(out);
    }

    fn delete_batch(&mut self) -> Batch {
        let mut batch = Batch::default();
        batch.push_deletes(&mut self.io, self.deletes.clone());
        batch
    }

    fn start(&mut self) {
        let multi = self.io.send(Request::Multi(self.ops.clone()));
        let deletes = self.delete_batch();
        self.phase = WritePhase::Writing { multi, deletes };
    }

    fn probe(&mut self) {
        let mut batch = Batch::default();
        batch.push(
            &mut self.io,
            Request::Sync {
                path: self.sync_path.clone(),
            },
        );
        batch.push(
            &mut self.io,
            Request::Exists {
                path: self.probe.clone(),
                watch: false,
            },
        );
        self.phase = WritePhase::Probing(batch);
    }

    /// The `multi` is decided: finish once the deletes are through.
    fn decided(&mut self, committed: bool, now: Millis, deletes: Batch) {
        self.outcome = Some(committed);
        self.phase = WritePhase::Deleting { committed, deletes };
        self.deletes_progress(now);
    }

    fn deletes_progress(&mut self, now: Millis) {
        let WritePhase::Deleting { committed, deletes } = &mut self.phase else {
            return;
        };
        if !deletes.complete() {
            return;
        }
        let committed = *committed;
        let replies = deletes.take();
        let retry = replies
            .iter()
            .any(|r| matches!(r, Err(e) if e.is_indeterminate()));
        if retry {
            // Deletes by exact path are idempotent: send them again once reconnected.
            self.phase = WritePhase::Deleting {
                committed,
                deletes: Batch::default(),
            };
            return self.io.redo_later(now);
        }
        // Other failures (the session ended: its ephemerals went with it; a node already
        // gone) leave nothing to do.
        let out = if committed {
            Ok(Written {
                recovered: self.recovered,
            })
        } else {
            Err(self.failure.take().unwrap_or(Halt::Interrupted))
        };
        self.finish(out);
    }

    fn multi_failed(&mut self, e: Error) -> Halt {
        match &e {
            Error::Multi { index: 0, source } if matches!(**source, Error::BadVersion { .. }) => {
                Halt::Violation("a COMMITTING transaction's point was changed by another".into())
            }
            Error::Multi { source, .. } => match source.as_ref() {
                Error::BadVersion { path } | Error::NoNode { path } => Halt::Conflict(ref_of(path)),
                Error::NodeExists { path } => Halt::Conflict(ref_of(path)),
                _ => Halt::Zk(e),
            },
            _ => Halt::Zk(e),
        }
    }
}

/// The ref name in a path `<root>/refs/<name>[/…]`, for messages.
fn ref_of(path: &str) -> Option<String> {
    let (_, rest) = path.split_once("/refs/")?;
    Some(rest.split('/').next().unwrap_or(rest).to_owned())
}

impl Machine for WriteMachine {
    type Output = Result<Written, Halt>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.io.poll()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match &mut self.phase {
            WritePhase::Writing { multi, deletes } => {
                if token != *multi {
                    deletes.accept(token, reply);
                    return;
                }
                let deletes = std::mem::take(deletes);
                match reply {
                    Ok(_) => self.decided(true, now, deletes),
                    Err(e) if e.is_session_lost() => self.finish(Err(Halt::SessionLost(e))),
                    Err(e) if e.is_indeterminate() => {
                        self.phase = WritePhase::Probing(Batch::default());
                        self.io.redo_later(now);
                    }
                    Err(e) => {
                        let halt = self.multi_failed(e);
                        if matches!(halt, Halt::Violation(_)) {
                            return self.finish(Err(halt));
                        }
                        // Not committed: the deletes still release the locks; the caller
                        // cleans up the point and tags.
                        self.outcome = Some(false);
                        self.phase = WritePhase::Deleting {
                            committed: false,
                            deletes,
                        };
                        self.output_after_deletes(halt, now);
                    }
                }
            }
            WritePhase::Probing(batch) => {
                if !batch.accept(token, reply) || !batch.complete() {
                    return;
                }
                let replies = batch.take();
                match verdict(&replies) {
                    Verdict::SessionLost(e) => return self.finish(Err(Halt::SessionLost(e))),
                    Verdict::Indeterminate => return self.io.redo_later(now),
                    Verdict::Replied => {}
                }
                self.recovered = true;
                let committed = match &replies[1] {
                    Ok(Reply::Exists(found)) => found.is_none(),
                    Err(e) => return self.finish(Err(Halt::Zk(e.clone()))),
                    Ok(other) => unreachable!("exists replied {other:?}"),
                };
                coverage::reach(if committed {
                    Mark::StmMvccCommitLostApplied
                } else {
                    Mark::StmMvccCommitLostNotApplied
                });
                let deletes = self.delete_batch();
                self.decided(committed, now, deletes);
            }
            WritePhase::Deleting { deletes, .. } => {
                if deletes.accept(token, reply) {
                    self.deletes_progress(now);
                }
            }
            WritePhase::Start | WritePhase::Done => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, _token: Token, _event: WatchedEvent) {}

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.io.on_session(state, self.phase == WritePhase::Done) {
            SessionStep::Lost(e) => match self.outcome {
                // Decided: the deletes no longer matter (ephemerals went with the session).
                Some(true) => self.finish(Ok(Written {
                    recovered: self.recovered,
                })),
                Some(false) => {
                    let halt = self.failure.take().unwrap_or(Halt::Interrupted);
                    self.finish(Err(halt))
                }
                None => self.finish(Err(Halt::SessionLost(e))),
            },
            SessionStep::Start => self.start(),
            // The multi's outcome is read, or the deletes sent again.
            SessionStep::Redo => self.redo(),
            SessionStep::Done | SessionStep::Carry => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.io.on_timer(now, self.phase == WritePhase::Done) {
            self.redo();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.io.redo_at
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.output.take()
    }
}

impl WriteMachine {
    fn redo(&mut self) {
        match &self.phase {
            WritePhase::Probing(_) => self.probe(),
            WritePhase::Deleting { committed, .. } => {
                let committed = *committed;
                let deletes = self.delete_batch();
                self.phase = WritePhase::Deleting { committed, deletes };
            }
            _ => {}
        }
    }

    /// A refused `multi`: report `halt` once the deletes are through.
    fn output_after_deletes(&mut self, halt: Halt, now: Millis) {
        self.failure = Some(halt);
        self.deletes_progress(now);
    }
}
