//! `ensure` and the end of a try: [`EnsureMachine`] takes a ref's read lock and checks that
//! nothing was committed to the ref after the read point; [`CleanupMachine`] removes what a
//! try that does not commit leaves behind.
//!
//! An ensured ref stays read-locked until the try ends. Writers take the write side of the
//! same lock before their commit `multi`, so none can commit to the ref meanwhile: the value
//! this try read stays the newest until it commits (Clojure's `ensure`, which prevents write
//! skew). The lock is [`crate::lock`]'s read-write lock, whose read side really excludes
//! writers (Avout's did not: its node names lost their `write-` prefix).

use crate::lock::{LockKind, Patience};

use super::locks::{Held, LockRequest, Locks};
use crate::machine::{Machine, Millis, Reply, Request, Token};
use crate::{Error, SessionState, WatchedEvent};

use super::Halt;
use super::io::{Batch, Io, SessionStep, Verdict, verdict};
use super::layout::Layout;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Start,
    Locking,
    Checking(Batch),
    Done,
}

/// Ensures one ref; see the module docs. Outputs the read-lock node.
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::stm::mvcc::EnsureMachine;
/// let mut m = EnsureMachine::new("/s", "a", 9, 1, 3, 100);
/// m.handle_session(Millis(0), avout::SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::Create { .. }))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EnsureMachine {
    layout: Layout,
    name: String,
    read_point: i64,
    guid: u128,
    session: i64,
    lock_wait_ms: u64,
    locks: Locks,
    phase: Phase,
    io: Io,
    output: Option<Result<String, Halt>>,
}

impl EnsureMachine {
    /// Ensures ref `name` of the STM at `root` for a try at `read_point`, naming the lock
    /// node with `guid`; `session` is this session's id; gives up (a conflict) if the lock is
    /// not granted within `lock_wait_ms`.
    ///
    /// ```
    /// let m = avout::stm::mvcc::EnsureMachine::new("/s", "a", 9, 1, 3, 100);
    /// assert!(m.held().is_empty());
    /// ```
    pub fn new(
        root: &str,
        name: &str,
        read_point: i64,
        guid: u128,
        session: i64,
        lock_wait_ms: u64,
    ) -> Self {
        EnsureMachine {
            layout: Layout::new(root),
            name: name.to_owned(),
            read_point,
            guid,
            session,
            lock_wait_ms,
            locks: Locks::default(),
            phase: Phase::Start,
            io: Io::new(),
            output: None,
        }
    }

    /// The same machine with `planted` bugs on in its lock acquisitions (none by default;
    /// see [`crate::planted`]).
    ///
    /// ```
    /// let m = avout::stm::mvcc::EnsureMachine::new("/s", "a", 9, 1, 3, 100)
    ///     .planted(avout::planted::Bugs::NONE);
    /// assert!(m.held().is_empty());
    /// ```
    pub fn planted(mut self, planted: crate::planted::Bugs) -> Self {
        self.locks.planted = planted;
        self
    }

    /// The lock node this machine holds or may hold.
    ///
    /// ```
    /// let m = avout::stm::mvcc::EnsureMachine::new("/s", "a", 9, 1, 3, 100);
    /// assert!(m.held().is_empty());
    /// ```
    pub fn held(&self) -> Vec<Held> {
        self.locks.held()
    }

    fn finish(&mut self, out: Result<String, Halt>) {
        self.phase = Phase::Done;
        self.io.clear();
        self.output = Some(out);
    }

    fn advance(&mut self) {
        if self.phase != Phase::Locking || !self.locks.all_done() {
            return;
        }
        if let Some(halt) = self.locks.failure() {
            return self.finish(Err(halt));
        }
        self.check();
    }

    fn check(&mut self) {
        let mut batch = Batch::default();
        batch.push(
            &mut self.io,
            Request::Exists {
                path: self.layout.ref_node(&self.name),
                watch: false,
            },
        );
        self.phase = Phase::Checking(batch);
    }
}

impl Machine for EnsureMachine {
    type Output = Result<String, Halt>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.io.poll().or_else(|| self.locks.poll_request())
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        if Locks::owns(token) {
            self.locks.handle_reply(now, token, reply);
            return self.advance();
        }
        let Phase::Checking(batch) = &mut self.phase else {
            return;
        };
        if !batch.accept(token, reply) || !batch.complete() {
            return;
        }
        let replies = batch.take();
        match verdict(&replies) {
            Verdict::SessionLost(e) => return self.finish(Err(Halt::SessionLost(e))),
            Verdict::Indeterminate => return self.io.redo_later(now),
            Verdict::Replied => {}
        }
        match replies.into_iter().next().expect("one request") {
            Ok(Reply::Exists(Some(stat))) => {
                if stat.mzxid > self.read_point {
                    self.finish(Err(Halt::Conflict(Some(self.name.clone()))));
                } else {
                    let node = self.locks.acquired()[0].1.clone();
                    self.finish(Ok(node));
                }
            }
            Ok(Reply::Exists(None)) | Err(Error::NoNode { .. }) => {
                self.finish(Err(Halt::NoRef(self.name.clone())))
            }
            Err(e) => self.finish(Err(Halt::Zk(e))),
            Ok(other) => unreachable!("exists replied {other:?}"),
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
            SessionStep::Done => {}
            SessionStep::Lost(e) => self.finish(Err(Halt::SessionLost(e))),
            SessionStep::Start => {
                let read_lock = LockRequest {
                    name: self.name.clone(),
                    lock_path: self.layout.lock(&self.name),
                    kind: LockKind::Read,
                    guid: self.guid,
                };
                let patience = Patience::Millis(self.lock_wait_ms);
                self.locks
                    .start(now, state, self.session, patience, vec![read_lock]);
                self.phase = Phase::Locking;
                self.advance();
            }
            SessionStep::Redo | SessionStep::Carry => {
                self.locks.handle_session(now, state);
                if step == SessionStep::Redo && matches!(self.phase, Phase::Checking(_)) {
                    self.check();
                }
                self.advance();
            }
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        self.locks.handle_timer(now);
        if matches!(self.phase, Phase::Checking(_)) && self.io.redo_due(now) {
            self.check();
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

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum CleanPhase {
    Start,
    /// Deletes by path, and listings of lock directories holding a node of unknown outcome.
    Working {
        batch: Batch,
        deletes: Vec<String>,
        unknown: Vec<(String, String)>,
    },
    Done,
}

/// Deletes what a try leaves behind: its point, tags and lock nodes (exact paths, missing
/// ones are fine), and lock nodes whose create had an unknown outcome (found by their GUID
/// prefix). Connection losses are waited out; a lost session ends it (its ephemerals, all of
/// these nodes, are gone with it).
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::stm::mvcc::CleanupMachine;
/// let mut m = CleanupMachine::new(vec!["/s/stm/history/t-1".into()], vec![]);
/// m.handle_session(Millis(0), avout::SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::Delete { .. }))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CleanupMachine {
    deletes: Vec<String>,
    unknown: Vec<(String, String)>,
    phase: CleanPhase,
    io: Io,
    output: Option<Result<(), Halt>>,
}

impl CleanupMachine {
    /// Deletes `deletes` and, for each `(lock directory, prefix)` of `unknown`, the child
    /// named with that prefix.
    ///
    /// ```
    /// let m = avout::stm::mvcc::CleanupMachine::new(vec![], vec![]);
    /// assert!(format!("{m:?}").contains("Cleanup"));
    /// ```
    pub fn new(deletes: Vec<String>, unknown: Vec<(String, String)>) -> Self {
        CleanupMachine {
            deletes,
            unknown,
            phase: CleanPhase::Start,
            io: Io::new(),
            output: None,
        }
    }

    /// The cleanup of what `held` lists, plus `paths`.
    pub(crate) fn of(mut paths: Vec<String>, held: Vec<Held>) -> Self {
        let mut unknown = Vec::new();
        for h in held {
            match h {
                Held::Node(n) => paths.push(n),
                Held::Unknown { lock_path, prefix } => unknown.push((lock_path, prefix)),
            }
        }
        paths.sort();
        paths.dedup();
        CleanupMachine::new(paths, unknown)
    }

    fn finish(&mut self, out: Result<(), Halt>) {
        self.phase = CleanPhase::Done;
        self.io.clear();
        self.output = Some(out);
    }

    fn work(&mut self) {
        if self.deletes.is_empty() && self.unknown.is_empty() {
            return self.finish(Ok(()));
        }
        let mut batch = Batch::default();
        batch.push_deletes(&mut self.io, self.deletes.clone());
        for (dir, _) in self.unknown.clone() {
            batch.push(
                &mut self.io,
                Request::GetChildren {
                    path: dir,
                    watch: false,
                },
            );
        }
        self.phase = CleanPhase::Working {
            batch,
            deletes: self.deletes.clone(),
            unknown: self.unknown.clone(),
        };
    }
}

impl Machine for CleanupMachine {
    type Output = Result<(), Halt>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.io.poll()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        let CleanPhase::Working {
            batch,
            deletes,
            unknown,
        } = &mut self.phase
        else {
            return;
        };
        if !batch.accept(token, reply) || !batch.complete() {
            return;
        }
        let (deletes, unknown) = (deletes.clone(), unknown.clone());
        let replies = batch.take();
        if let Verdict::SessionLost(e) = verdict(&replies) {
            return self.finish(Err(Halt::SessionLost(e)));
        }
        let mut again = Vec::new();
        let mut again_unknown = Vec::new();
        let mut retry = false;
        for (reply, path) in replies.iter().zip(&deletes) {
            match reply {
                Ok(_) | Err(Error::NoNode { .. }) => {}
                Err(e) if e.is_indeterminate() => {
                    retry = true;
                    again.push(path.clone());
                }
                Err(e) => return self.finish(Err(Halt::Zk(e.clone()))),
            }
        }
        for (reply, (dir, prefix)) in replies[deletes.len()..].iter().zip(&unknown) {
            match reply {
                Ok(Reply::Children { children, .. }) => {
                    again.extend(
                        children
                            .iter()
                            .filter(|c| c.starts_with(prefix.as_str()))
                            .map(|c| crate::path::join(dir, c)),
                    );
                }
                Err(Error::NoNode { .. }) => {}
                Err(e) if e.is_indeterminate() => {
                    retry = true;
                    again_unknown.push((dir.clone(), prefix.clone()));
                }
                Err(e) => return self.finish(Err(Halt::Zk(e.clone()))),
                Ok(other) => unreachable!("children replied {other:?}"),
            }
        }
        self.deletes = again;
        self.unknown = again_unknown;
        if retry {
            self.phase = CleanPhase::Start;
            self.io.redo_later(now);
        } else {
            self.work();
        }
    }

    fn handle_watch(&mut self, _now: Millis, _token: Token, _event: WatchedEvent) {}

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.io.on_session(state, self.phase == CleanPhase::Done) {
            SessionStep::Lost(e) => self.finish(Err(Halt::SessionLost(e))),
            // The deletes, sent (again).
            SessionStep::Start | SessionStep::Redo => self.work(),
            SessionStep::Done | SessionStep::Carry => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.io.on_timer(now, self.phase == CleanPhase::Done) {
            self.work();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.io.redo_at
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.output.take()
    }
}
