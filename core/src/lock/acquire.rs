//! The acquisition machine shared by the mutex and both sides of the read-write lock.
//!
//! ZooKeeper's lock recipe: each contender creates an ephemeral-sequential node under the lock
//! path; the lowest sequence number holds the lock; every other contender watches only the
//! node just before its own (no herd effect: a release wakes exactly one waiter) and re-reads
//! the children when it fires. The read-write variant differs only in who blocks whom: a
//! reader waits for the nearest *writer* below it, a writer for the nearest node of any kind.
//!
//! Two refinements over the textbook recipe:
//!
//! - **One round trip to a free lock.** The create and the children read are sent together;
//!   ZooKeeper applies a session's requests in order, so the children already include the new
//!   node.
//! - **Recovery after an indeterminate create.** The node's name starts with `_c_<GUID>-` (as
//!   Apache Curator names them, so Java and Rust processes can share a lock). After a
//!   connection loss the machine lists the children, and a node with its GUID whose ephemeral
//!   owner is this session is adopted instead of creating a second one, which would otherwise
//!   sit in the queue forever, held by nobody, and deadlock every later contender.
//! - **Handoff without a second read.** A waiter whose watched node was the last one that
//!   could block it (the lowest node, for the mutex) takes the lock when that node's deletion
//!   is reported, without listing the children again: sequence numbers only grow, so no node
//!   that blocks it can appear below it. A release then reaches the next holder in one
//!   notification instead of a notification and a round trip. Any other event (a data change,
//!   as a revocation request makes) re-reads the children as before.
//! - **Releases still in flight do not block.** A handle whose previous release's delete is
//!   still travelling (see [`LockGuard::unlock`](super::LockGuard::unlock)) names that node
//!   with [`AcquireMachine::with_releasing`]; the machine never waits for it. The delete is
//!   usually applied before our create (one session's requests are applied in order); if it
//!   was lost, the node is ours and is being deleted again, and while it lingers it blocks
//!   only other owners, which is safe.

use std::collections::VecDeque;

use crate::machine::{Machine, Millis, Reply, Request, Token};
use crate::{
    CreateMode, CreateOptions, Error, ErrorClass, EventKind, SessionState, WatchedEvent, path,
};

use super::LockError;

/// Which side of which lock a machine acquires; decides the node name and who blocks whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockKind {
    /// The exclusive lock (Curator's `InterProcessMutex`, nodes named `…-lock-NNNNNNNNNN`).
    Exclusive,
    /// The read side of a read-write lock (`…-__READ__NNNNNNNNNN`).
    Read,
    /// The write side of a read-write lock (`…-__WRIT__NNNNNNNNNN`).
    Write,
    /// A leader-election candidate (Curator's `LeaderLatch`, `…-latch-NNNNNNNNNN`): exclusive,
    /// leadership being the lock.
    Latch,
}

impl LockKind {
    /// The marker in the node name, as Curator spells it.
    ///
    /// ```
    /// assert_eq!(avout::lock::LockKind::Read.marker(), "__READ__");
    /// ```
    pub fn marker(self) -> &'static str {
        match self {
            LockKind::Exclusive => "lock-",
            LockKind::Read => "__READ__",
            LockKind::Write => "__WRIT__",
            LockKind::Latch => "latch-",
        }
    }
}

/// How long an acquisition may wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Patience {
    /// Wait until acquired (or the session is lost).
    Forever,
    /// Give up at once if the lock is held.
    None,
    /// Give up after this many milliseconds.
    Millis(u64),
}

/// A lock node this machine owns after acquiring.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Acquired {
    /// The full path of the lock node.
    pub node: String,
    /// The node's creation zxid: increases with every acquisition of this lock (holders are
    /// ordered by creation), so a resource can refuse a holder older than one it has seen.
    pub fencing_token: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    /// No node of ours exists (or none was created yet).
    Absent,
    /// A create is in flight or its outcome is unknown.
    Unknown,
    /// Our node: its name (not path) and czxid.
    Mine { name: String, czxid: i64 },
}

/// Pause before redoing a step after a connection loss, unless the session reconnects first.
const RETRY_PAUSE_MS: u64 = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Retry {
    Recover,
    Check,
    Abandon,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Create (after any parents) and children read sent together.
    Creating {
        create: Token,
        children: Token,
        listed: Option<Vec<String>>,
    },
    /// Listing the children to find a node whose create had an unknown outcome.
    Recovering { list: Token },
    /// Checking that a node with our GUID is owned by this session.
    VerifyingOwner { exists: Token, name: String },
    /// Reading the children to decide.
    Checking { list: Token },
    /// Watching the predecessor; `last` when it is the only node that blocks ours, so its
    /// deletion alone hands us the lock.
    Watching { exists: Token, last: bool },
    /// Deleting our node before giving up.
    Abandoning { delete: Token },
    /// Finished.
    Done,
}

/// Acquires one lock node; see the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AcquireMachine {
    lock_path: String,
    kind: LockKind,
    /// `_c_<GUID>-<marker>`: the prefix of our node's name.
    prefix: String,
    /// Nodes this owner already holds on the same lock path (a write holder taking the read
    /// lock must not wait for itself).
    own: Vec<String>,
    /// The node's data (a candidate's participant id; empty for locks).
    data: Vec<u8>,
    /// Names of this owner's nodes whose delete is in flight: they never block.
    releasing: Vec<String>,
    patience: Patience,
    deadline: Option<Millis>,
    session: i64,
    node: Node,
    phase: Phase,
    next_token: u64,
    outbox: VecDeque<(Token, Request)>,
    give_up: Option<LockError>,
    /// A step to redo after a connection loss, and when: at once on reconnection, else after
    /// a short pause, so a disconnected client does not spin.
    retry: Option<(Retry, Millis)>,
    started: bool,
    output: Option<Result<Acquired, LockError>>,
}

impl AcquireMachine {
    /// A machine acquiring `kind` on `lock_path` for session `session`, naming its node with
    /// `guid`. `own` lists the names of nodes this owner already holds on the lock path.
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// let m = AcquireMachine::new("/locks/a", LockKind::Exclusive, 7, 0x42, Patience::Forever, vec![]);
    /// assert!(m.prefix().starts_with("_c_"));
    /// ```
    pub fn new(
        lock_path: &str,
        kind: LockKind,
        guid: u128,
        session: i64,
        patience: Patience,
        own: Vec<String>,
    ) -> Self {
        let prefix = format!("_c_{}-{}", uuid::Uuid::from_u128(guid), kind.marker());
        AcquireMachine {
            lock_path: lock_path.to_owned(),
            kind,
            prefix,
            own,
            data: Vec::new(),
            releasing: Vec::new(),
            patience,
            deadline: None,
            session,
            node: Node::Absent,
            phase: Phase::Done,
            next_token: 0,
            outbox: VecDeque::new(),
            give_up: None,
            retry: None,
            started: false,
            output: None,
        }
    }

    /// The same machine, creating its node with `data` (as an election candidate carries its
    /// participant id).
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// let m = AcquireMachine::new("/e", LockKind::Latch, 1, 1, Patience::Forever, vec![])
    ///     .with_data(b"worker-1".to_vec());
    /// assert!(m.prefix().ends_with("-latch-"));
    /// ```
    pub fn with_data(mut self, data: Vec<u8>) -> Self {
        self.data = data;
        self
    }

    /// The same machine, not waiting for `releasing`: names (not paths) of nodes this owner
    /// has released whose delete may not have been applied yet. They are ours and going, so
    /// waiting for them would only delay us (or, if their delete failed for good, deadlock
    /// us); while they linger they still block every other owner, which is safe.
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// let m = AcquireMachine::new("/l", LockKind::Exclusive, 1, 1, Patience::Forever, vec![])
    ///     .with_releasing(vec!["_c_0-lock-0000000007".into()]);
    /// assert!(m.prefix().ends_with("-lock-"));
    /// ```
    pub fn with_releasing(mut self, releasing: Vec<String>) -> Self {
        self.releasing = releasing;
        self
    }

    /// The prefix of this machine's node name (`_c_<GUID>-<marker>`).
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// let m = AcquireMachine::new("/l", LockKind::Write, 1, 1, Patience::None, vec![]);
    /// assert!(m.prefix().ends_with("-__WRIT__"));
    /// ```
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The full path of the node this machine created or adopted, if it knows of one. A
    /// cancelled acquisition must delete it (or, if the create's outcome is unknown, look for
    /// a child named with [`prefix`](Self::prefix)).
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// let m = AcquireMachine::new("/l", LockKind::Exclusive, 1, 1, Patience::None, vec![]);
    /// assert_eq!(m.node_path(), None);
    /// ```
    pub fn node_path(&self) -> Option<String> {
        match &self.node {
            Node::Mine { name, .. } => Some(path::join(&self.lock_path, name)),
            Node::Absent | Node::Unknown => None,
        }
    }

    /// Whether a create may have happened whose node this machine does not know.
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// let m = AcquireMachine::new("/l", LockKind::Exclusive, 1, 1, Patience::None, vec![]);
    /// assert!(!m.node_unknown());
    /// ```
    pub fn node_unknown(&self) -> bool {
        self.node == Node::Unknown
    }

    fn token(&mut self) -> Token {
        self.next_token += 1;
        Token(self.next_token)
    }

    fn send(&mut self, request: Request) -> Token {
        let token = self.token();
        self.outbox.push_back((token, request));
        token
    }

    fn finish(&mut self, result: Result<Acquired, LockError>) {
        self.phase = Phase::Done;
        self.retry = None;
        self.outbox.clear();
        self.output = Some(result);
    }

    /// Sends the ancestors' creates (when `with_parents`), our create and the children read,
    /// back to back.
    fn start_create(&mut self, with_parents: bool) {
        if with_parents {
            let mut end = 0;
            let lock_path = self.lock_path.clone();
            while end < lock_path.len() {
                end = lock_path[end + 1..]
                    .find('/')
                    .map_or(lock_path.len(), |i| end + 1 + i);
                // NodeExists replies to these are expected and ignored.
                self.send(Request::Create {
                    path: lock_path[..end].to_owned(),
                    data: Vec::new(),
                    options: CreateOptions::default(),
                });
            }
        }
        self.node = Node::Unknown;
        let create = self.send(Request::Create {
            path: path::join(&self.lock_path, &self.prefix),
            data: self.data.clone(),
            options: CreateOptions::new(CreateMode::EphemeralSequential),
        });
        let children = self.send(Request::GetChildren {
            path: self.lock_path.clone(),
            watch: false,
        });
        self.phase = Phase::Creating {
            create,
            children,
            listed: None,
        };
    }

    fn check(&mut self) {
        let list = self.send(Request::GetChildren {
            path: self.lock_path.clone(),
            watch: false,
        });
        self.phase = Phase::Checking { list };
    }

    fn recover(&mut self) {
        // After a connection loss the session may have moved to a server that has not yet
        // applied our lost create: without the sync it would list no node of ours, we would
        // create a second one, and the first — held by our live session — would block every
        // waiter behind it until the session ends. The sync travels in the same round trip;
        // its reply needs no handling (a failure fails the list read behind it too).
        self.send(Request::Sync {
            path: self.lock_path.clone(),
        });
        let list = self.send(Request::GetChildren {
            path: self.lock_path.clone(),
            watch: false,
        });
        self.phase = Phase::Recovering { list };
    }

    fn abandon(&mut self, reason: LockError) {
        self.give_up = Some(reason.clone());
        match self.node.clone() {
            Node::Mine { name, .. } => {
                // A step scheduled before giving up (a re-check after a connection loss)
                // must not run after it: it would re-queue or even acquire.
                self.retry = None;
                let delete = self.send(Request::Delete {
                    path: path::join(&self.lock_path, &name),
                    version: None,
                });
                self.phase = Phase::Abandoning { delete };
            }
            // The create's reply will arrive; `give_up` makes it delete the node then.
            Node::Unknown => {}
            Node::Absent => self.finish(Err(reason)),
        }
    }

    /// Decides from the children whether we hold the lock or whom to watch.
    fn decide(&mut self, children: Vec<String>) {
        let Node::Mine { name, czxid } = self.node.clone() else {
            unreachable!("deciding without a node")
        };
        let mut contenders: Vec<(i64, String)> = children
            .into_iter()
            .filter(|c| {
                [
                    LockKind::Exclusive,
                    LockKind::Read,
                    LockKind::Write,
                    LockKind::Latch,
                ]
                .iter()
                .any(|k| c.contains(k.marker()))
            })
            .filter(|c| !self.releasing.contains(c))
            .filter_map(|c| path::sequence(&c).map(|seq| (seq, c)))
            .collect();
        contenders.sort();
        let Some(ours) = contenders.iter().position(|(_, c)| *c == name) else {
            // Our node is gone (deleted by an administrator, or by an expiry we have not been
            // told of yet): start again; a lost session fails the create.
            self.node = Node::Absent;
            self.start_create(false);
            return;
        };
        // A reader whose owner holds the write lock (its write node is still there) is let in
        // at once, as Curator does: nobody else can hold anything, and writers queued behind
        // the owner's write node must not block it, or the owner would wait for itself.
        let under_own_write = self.kind == LockKind::Read
            && contenders[..ours]
                .iter()
                .any(|(_, c)| c.contains(LockKind::Write.marker()) && self.own.contains(c));
        let mut blockers = contenders[..ours]
            .iter()
            .filter(|(_, c)| match self.kind {
                LockKind::Read => !under_own_write && c.contains(LockKind::Write.marker()),
                LockKind::Exclusive | LockKind::Write | LockKind::Latch => true,
            })
            .map(|(_, c)| c.clone());
        let first = blockers.next();
        let blocker = blockers.next_back().or(first.clone());
        // Only the nearest blocker is watched; when it is the only one, nodes below ours can
        // only go (sequence numbers grow), so its deletion alone means we hold.
        let last = blocker == first;
        match blocker {
            None => {
                let node = path::join(&self.lock_path, &name);
                self.finish(Ok(Acquired {
                    node,
                    fencing_token: czxid,
                }));
            }
            Some(_) if self.patience == Patience::None => self.abandon(LockError::WouldBlock),
            Some(blocker) => {
                let exists = self.send(Request::Exists {
                    path: path::join(&self.lock_path, &blocker),
                    watch: true,
                });
                self.phase = Phase::Watching { exists, last };
            }
        }
    }

    /// The watched node is gone and was the last that blocked ours.
    fn take_over(&mut self) {
        let Node::Mine { name, czxid } = self.node.clone() else {
            unreachable!("watching without a node")
        };
        let node = path::join(&self.lock_path, &name);
        self.finish(Ok(Acquired {
            node,
            fencing_token: czxid,
        }));
    }

    /// Handles a failed request: after a connection loss `step` is scheduled again; session
    /// loss ends the acquisition; a refusal is surfaced.
    fn failed(&mut self, now: Millis, error: Error, step: Retry) {
        match error.class() {
            ErrorClass::Indeterminate => {
                self.retry = Some((step, now.plus(RETRY_PAUSE_MS)));
            }
            ErrorClass::SessionLost => self.finish(Err(LockError::SessionLost(error))),
            ErrorClass::Rejected => self.finish(Err(LockError::Zk(error))),
        }
    }

    fn run_retry(&mut self) {
        let Some((step, _)) = self.retry.take() else {
            return;
        };
        match step {
            Retry::Recover => self.recover(),
            Retry::Check => self.check(),
            Retry::Abandon => {
                let reason = self.give_up.clone().expect("abandoning has a reason");
                self.abandon(reason);
            }
        }
    }
}

impl Machine for AcquireMachine {
    type Output = Result<Acquired, LockError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop_front()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            Phase::Creating {
                create,
                children: _,
                listed,
            } if token == create => match reply {
                Ok(Reply::Created {
                    path: created,
                    stat,
                }) => {
                    self.node = Node::Mine {
                        name: path::name(&created).to_owned(),
                        czxid: stat.czxid,
                    };
                    if let Some(reason) = self.give_up.clone() {
                        return self.abandon(reason);
                    }
                    if let Some(list) = listed {
                        self.decide(list);
                    }
                }
                Err(Error::NoNode { .. }) => {
                    self.node = Node::Absent;
                    if let Some(reason) = self.give_up.clone() {
                        return self.finish(Err(reason));
                    }
                    self.start_create(true);
                }
                Err(e) => self.failed(now, e, Retry::Recover),
                Ok(other) => unreachable!("create replied {other:?}"),
            },
            Phase::Creating {
                create,
                children,
                listed: None,
            } if token == children => match reply {
                Ok(Reply::Children { children: list, .. }) => {
                    if matches!(self.node, Node::Mine { .. }) {
                        self.decide(list);
                    } else {
                        self.phase = Phase::Creating {
                            create,
                            children,
                            listed: Some(list),
                        };
                    }
                }
                // The create's reply decides what to do; a failed read is simply re-done.
                Err(_) => {
                    if matches!(self.node, Node::Mine { .. }) {
                        self.check();
                    }
                }
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Recovering { list } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => {
                    match children.into_iter().find(|c| {
                        c.starts_with(&self.prefix)
                            && !crate::planted::active(crate::planted::Bug::LockNoGuidRecovery)
                    }) {
                        Some(name) => {
                            let exists = self.send(Request::Exists {
                                path: path::join(&self.lock_path, &name),
                                watch: false,
                            });
                            self.phase = Phase::VerifyingOwner { exists, name };
                        }
                        None => match self.give_up.clone() {
                            Some(reason) => {
                                self.node = Node::Absent;
                                self.finish(Err(reason));
                            }
                            None => self.start_create(false),
                        },
                    }
                }
                Err(Error::NoNode { .. }) => match self.give_up.clone() {
                    Some(reason) => {
                        self.node = Node::Absent;
                        self.finish(Err(reason));
                    }
                    None => self.start_create(true),
                },
                Err(e) => self.failed(now, e, Retry::Recover),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::VerifyingOwner { exists, name } if token == exists => match reply {
                Ok(Reply::Exists(Some(stat))) if stat.ephemeral_owner == self.session => {
                    self.node = Node::Mine {
                        name,
                        czxid: stat.czxid,
                    };
                    match self.give_up.clone() {
                        Some(reason) => self.abandon(reason),
                        None => self.check(),
                    }
                }
                Ok(Reply::Exists(_)) => {
                    self.node = Node::Absent;
                    match self.give_up.clone() {
                        Some(reason) => self.finish(Err(reason)),
                        None => self.start_create(false),
                    }
                }
                Err(e) => self.failed(now, e, Retry::Recover),
                Ok(other) => unreachable!("exists replied {other:?}"),
            },
            Phase::Checking { list } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => self.decide(children),
                Err(Error::NoNode { .. }) => {
                    self.node = Node::Absent;
                    self.start_create(true);
                }
                Err(e) => self.failed(now, e, Retry::Check),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Watching { exists, last } if token == exists => match reply {
                // Gone before the watch was armed: ours if it was the last blocker, else look
                // again.
                Ok(Reply::Exists(None)) if last => self.take_over(),
                Ok(Reply::Exists(None)) => self.check(),
                // Armed: wait for the event.
                Ok(Reply::Exists(Some(_))) => {}
                Err(e) => self.failed(now, e, Retry::Check),
                Ok(other) => unreachable!("exists replied {other:?}"),
            },
            Phase::Abandoning { delete } if token == delete => match reply {
                Ok(_) | Err(Error::NoNode { .. }) => {
                    self.node = Node::Absent;
                    let reason = self.give_up.clone().expect("abandoning has a reason");
                    self.finish(Err(reason));
                }
                Err(e) if e.is_indeterminate() => {
                    self.retry = Some((Retry::Abandon, now.plus(RETRY_PAUSE_MS)));
                }
                Err(e) => self.finish(Err(LockError::Zk(e))),
            },
            // Replies to superseded requests (ancestors' creates, an old children read).
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, token: Token, event: WatchedEvent) {
        if let Phase::Watching { exists, last } = self.phase
            && exists == token
        {
            if last && event.kind == EventKind::NodeDeleted {
                self.take_over();
            } else {
                self.check();
            }
        }
    }

    fn handle_session(&mut self, now: Millis, state: SessionState) {
        if !self.started {
            // The driver's first call gives the starting time and state.
            self.started = true;
            self.deadline = match self.patience {
                Patience::Millis(ms) => Some(now.plus(ms)),
                Patience::Forever | Patience::None => None,
            };
            if let Some(error) = state.terminal_error() {
                return self.finish(Err(LockError::SessionLost(error)));
            }
            return self.start_create(false);
        }
        if state == SessionState::Connected && self.phase != Phase::Done {
            self.run_retry();
        }
        if let Some(error) = state.terminal_error()
            && self.phase != Phase::Done
        {
            // The session's ephemerals, ours included, are gone with it.
            self.node = Node::Absent;
            self.finish(Err(LockError::SessionLost(error)));
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Some((_, at)) = self.retry
            && now >= at
        {
            self.run_retry();
        }
        if let Some(deadline) = self.deadline
            && now >= deadline
        {
            self.deadline = None;
            if self.phase != Phase::Done && self.give_up.is_none() {
                self.abandon(LockError::TimedOut);
            }
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        let retry = self.retry.map(|(_, at)| at);
        match (retry, self.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.output.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stat;
    use crate::machine::testing::{children, drain};

    const SESSION: i64 = 0x5e55;

    fn start(patience: Patience) -> AcquireMachine {
        let mut m = AcquireMachine::new("/l", LockKind::Exclusive, 1, SESSION, patience, vec![]);
        m.handle_session(Millis(0), SessionState::Connected);
        m
    }

    fn stat(czxid: i64) -> Stat {
        Stat {
            czxid,
            ephemeral_owner: SESSION,
            ..Stat::default()
        }
    }

    #[test]
    fn a_free_lock_takes_one_round_trip() {
        let mut m = start(Patience::Forever);
        let sent = drain(&mut m);
        assert!(matches!(&sent[0].1, Request::Create { path, options, .. }
            if path.starts_with("/l/_c_") && path.ends_with("-lock-") && options.mode == CreateMode::EphemeralSequential));
        assert!(matches!(&sent[1].1, Request::GetChildren { path, watch: false } if path == "/l"));
        let ours = format!("{}0000000003", m.prefix());
        m.handle_reply(
            Millis(1),
            sent[0].0,
            Ok(Reply::Created {
                path: format!("/l/{ours}"),
                stat: stat(77),
            }),
        );
        m.handle_reply(Millis(1), sent[1].0, children(&[&ours]));
        let acquired = m.poll_output().expect("done").expect("acquired");
        assert_eq!(acquired.node, format!("/l/{ours}"));
        assert_eq!(acquired.fencing_token, 77);
        assert!(drain(&mut m).is_empty());
    }

    #[test]
    fn a_waiter_watches_only_its_predecessor() {
        let mut m = start(Patience::Forever);
        let sent = drain(&mut m);
        let ours = format!("{}0000000005", m.prefix());
        m.handle_reply(
            Millis(1),
            sent[0].0,
            Ok(Reply::Created {
                path: format!("/l/{ours}"),
                stat: stat(9),
            }),
        );
        m.handle_reply(
            Millis(1),
            sent[1].0,
            children(&[
                "_c_a-lock-0000000001",
                "_c_b-lock-0000000004",
                &ours,
                "_c_c-lock-0000000006",
            ]),
        );
        let sent = drain(&mut m);
        assert_eq!(sent.len(), 1);
        assert!(
            matches!(&sent[0].1, Request::Exists { path, watch: true } if path == "/l/_c_b-lock-0000000004")
        );
        m.handle_reply(
            Millis(2),
            sent[0].0,
            Ok(Reply::Exists(Some(Stat::default()))),
        );
        assert!(drain(&mut m).is_empty() && m.poll_output().is_none());
        m.handle_watch(
            Millis(3),
            sent[0].0,
            WatchedEvent {
                kind: crate::EventKind::NodeDeleted,
                state: SessionState::Connected,
                path: String::new(),
            },
        );
        let sent = drain(&mut m);
        m.handle_reply(
            Millis(4),
            sent[0].0,
            children(&[&ours, "_c_c-lock-0000000006"]),
        );
        assert!(m.poll_output().expect("done").is_ok());
    }

    fn deleted() -> WatchedEvent {
        WatchedEvent {
            kind: crate::EventKind::NodeDeleted,
            state: SessionState::Connected,
            path: String::new(),
        }
    }

    #[test]
    fn the_lowest_predecessor_going_hands_over_without_a_read() {
        let mut m = start(Patience::Forever);
        let sent = drain(&mut m);
        let ours = format!("{}0000000002", m.prefix());
        m.handle_reply(
            Millis(1),
            sent[0].0,
            Ok(Reply::Created {
                path: format!("/l/{ours}"),
                stat: stat(8),
            }),
        );
        m.handle_reply(
            Millis(1),
            sent[1].0,
            children(&["_c_a-lock-0000000001", &ours, "_c_c-lock-0000000003"]),
        );
        let sent = drain(&mut m);
        m.handle_reply(Millis(2), sent[0].0, Ok(Reply::Exists(Some(stat(1)))));
        // A data change (a revocation request) is not a release: look again.
        m.handle_watch(
            Millis(3),
            sent[0].0,
            WatchedEvent {
                kind: crate::EventKind::NodeDataChanged,
                ..deleted()
            },
        );
        let sent = drain(&mut m);
        assert!(matches!(&sent[..], [(_, Request::GetChildren { .. })]));
        m.handle_reply(
            Millis(4),
            sent[0].0,
            children(&["_c_a-lock-0000000001", &ours]),
        );
        let sent = drain(&mut m);
        m.handle_reply(Millis(5), sent[0].0, Ok(Reply::Exists(Some(stat(1)))));
        m.handle_watch(Millis(6), sent[0].0, deleted());
        assert!(
            drain(&mut m).is_empty(),
            "no children read after the release"
        );
        let acquired = m.poll_output().expect("done").expect("acquired");
        assert_eq!(acquired.fencing_token, 8);
        assert_eq!(acquired.node, format!("/l/{ours}"));
    }

    #[test]
    fn a_predecessor_gone_before_the_watch_hands_over_only_if_last() {
        let mut m = start(Patience::Forever);
        let sent = drain(&mut m);
        let ours = format!("{}0000000003", m.prefix());
        m.handle_reply(
            Millis(1),
            sent[0].0,
            Ok(Reply::Created {
                path: format!("/l/{ours}"),
                stat: stat(9),
            }),
        );
        m.handle_reply(
            Millis(1),
            sent[1].0,
            children(&["_c_a-lock-0000000001", "_c_b-lock-0000000002", &ours]),
        );
        let sent = drain(&mut m);
        // Not the last blocker: its absence sends us back to the children.
        m.handle_reply(Millis(2), sent[0].0, Ok(Reply::Exists(None)));
        let sent = drain(&mut m);
        assert!(matches!(&sent[..], [(_, Request::GetChildren { .. })]));
        m.handle_reply(
            Millis(3),
            sent[0].0,
            children(&["_c_a-lock-0000000001", &ours]),
        );
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[..], [(_, Request::Exists { path, watch: true })] if path == "/l/_c_a-lock-0000000001")
        );
        m.handle_reply(Millis(4), sent[0].0, Ok(Reply::Exists(None)));
        assert!(drain(&mut m).is_empty());
        assert_eq!(
            m.poll_output()
                .expect("done")
                .expect("acquired")
                .fencing_token,
            9
        );
    }

    #[test]
    fn a_node_being_released_by_this_owner_does_not_block() {
        let releasing = "_c_0-lock-0000000001".to_string();
        let mut m = AcquireMachine::new(
            "/l",
            LockKind::Exclusive,
            1,
            SESSION,
            Patience::None,
            vec![],
        )
        .with_releasing(vec![releasing.clone()]);
        m.handle_session(Millis(0), SessionState::Connected);
        let sent = drain(&mut m);
        let ours = format!("{}0000000002", m.prefix());
        m.handle_reply(
            Millis(1),
            sent[0].0,
            Ok(Reply::Created {
                path: format!("/l/{ours}"),
                stat: stat(4),
            }),
        );
        m.handle_reply(Millis(1), sent[1].0, children(&[&releasing, &ours]));
        assert!(m.poll_output().expect("done").is_ok(), "not WouldBlock");
    }

    #[test]
    fn an_indeterminate_create_adopts_the_node_it_made() {
        let mut m = start(Patience::Forever);
        let sent = drain(&mut m);
        m.handle_reply(Millis(1), sent[0].0, Err(Error::ConnectionLoss));
        m.handle_reply(Millis(1), sent[1].0, Err(Error::ConnectionLoss));
        assert!(drain(&mut m).is_empty(), "waits before retrying");
        m.handle_session(Millis(2), SessionState::Connected);
        let sent = drain(&mut m);
        assert!(
            matches!(
                &sent[..],
                [(_, Request::Sync { .. }), (_, Request::GetChildren { .. })]
            ),
            "the recovery read is synced first: {sent:?}"
        );
        m.handle_reply(Millis(3), sent[0].0, Ok(Reply::Synced));
        let ours = format!("{}0000000000", m.prefix());
        m.handle_reply(Millis(3), sent[1].0, children(&[&ours]));
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[0].1, Request::Exists { path, watch: false } if *path == format!("/l/{ours}"))
        );
        m.handle_reply(Millis(4), sent[0].0, Ok(Reply::Exists(Some(stat(5)))));
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[0].1, Request::GetChildren { .. }),
            "no second create"
        );
        m.handle_reply(Millis(5), sent[0].0, children(&[&ours]));
        assert_eq!(
            m.poll_output()
                .expect("done")
                .expect("acquired")
                .fencing_token,
            5
        );
    }

    #[test]
    fn try_lock_removes_its_node_when_the_lock_is_held() {
        let mut m = start(Patience::None);
        let sent = drain(&mut m);
        let ours = format!("{}0000000002", m.prefix());
        m.handle_reply(
            Millis(1),
            sent[0].0,
            Ok(Reply::Created {
                path: format!("/l/{ours}"),
                stat: stat(3),
            }),
        );
        m.handle_reply(
            Millis(1),
            sent[1].0,
            children(&["_c_x-lock-0000000001", &ours]),
        );
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[0].1, Request::Delete { path, .. } if *path == format!("/l/{ours}"))
        );
        m.handle_reply(Millis(2), sent[0].0, Ok(Reply::Deleted));
        assert_eq!(m.poll_output(), Some(Err(LockError::WouldBlock)));
    }

    #[test]
    fn a_reader_waits_only_for_writers_it_does_not_hold() {
        let own = vec!["_c_me-__WRIT__0000000001".to_string()];
        let mut m = AcquireMachine::new("/rw", LockKind::Read, 2, SESSION, Patience::None, own);
        m.handle_session(Millis(0), SessionState::Connected);
        let sent = drain(&mut m);
        let ours = format!("{}0000000003", m.prefix());
        m.handle_reply(
            Millis(1),
            sent[0].0,
            Ok(Reply::Created {
                path: format!("/rw/{ours}"),
                stat: stat(4),
            }),
        );
        m.handle_reply(
            Millis(1),
            sent[1].0,
            children(&["_c_me-__WRIT__0000000001", "_c_r-__READ__0000000002", &ours]),
        );
        assert!(m.poll_output().expect("done").is_ok());
    }

    #[test]
    fn a_recheck_pending_at_the_deadline_is_not_run_after_giving_up() {
        let mut m = start(Patience::Millis(100));
        let sent = drain(&mut m);
        let ours = format!("{}0000000002", m.prefix());
        m.handle_reply(
            Millis(1),
            sent[0].0,
            Ok(Reply::Created {
                path: format!("/l/{ours}"),
                stat: stat(3),
            }),
        );
        m.handle_reply(Millis(1), sent[1].0, Err(Error::ConnectionLoss));
        let sent = drain(&mut m);
        // The re-check fails just before the deadline: it is due again after it.
        m.handle_reply(Millis(95), sent[0].0, Err(Error::ConnectionLoss));
        m.handle_session(Millis(96), SessionState::Disconnected);
        assert_eq!(m.poll_timer(), Some(Millis(100)));
        m.handle_timer(Millis(100));
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[..], [(_, Request::Delete { path, .. })] if *path == format!("/l/{ours}"))
        );
        m.handle_session(Millis(101), SessionState::Connected);
        assert!(drain(&mut m).is_empty(), "no re-check after giving up");
        m.handle_reply(Millis(102), sent[0].0, Ok(Reply::Deleted));
        assert_eq!(m.poll_output(), Some(Err(LockError::TimedOut)));
    }

    #[test]
    fn session_expiry_ends_the_wait() {
        let mut m = start(Patience::Forever);
        drain(&mut m);
        m.handle_session(Millis(1), SessionState::Expired);
        assert_eq!(
            m.poll_output(),
            Some(Err(LockError::SessionLost(Error::SessionExpired)))
        );
    }
}
