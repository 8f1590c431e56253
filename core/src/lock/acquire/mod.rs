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
//! - **A release rides with the next create.** A handle whose previous release is deferred
//!   (see [`LockGuard::unlock`](super::LockGuard::unlock)) hands that node to
//!   [`AcquireMachine::with_riding`]: the create becomes one `multi` that deletes the old node
//!   and creates the new one (with the [stamp](crate::machine::ProtectedCreate::create_riding)
//!   that gives the new node's `czxid`), so a warm lock–unlock cycle costs one write. The
//!   `multi` is all or nothing, and the create's recovery decides both: a node adopted after a
//!   connection loss means the old one is gone, no node means it is still there and the next
//!   create carries it again. If the delete is refused (the node was already gone: done;
//!   anything else, such as an ACL) the machine creates alone and leaves the old node to the
//!   caller ([`AcquireMachine::unreleased`]); it never waits for it meanwhile.

use crate::coverage::{self, Mark};
use crate::machine::{
    Machine, Millis, Outbox, Protected, ProtectedCreate, Reply, Request, Resumed, Stall, Token,
    earliest,
};
use crate::planted::{Bug, Bugs};
use crate::{Error, ErrorClass, EventKind, Op, SessionState, WatchedEvent, path};

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

/// How long a wait behind a holder lasts when its patience is `patience` ms and the server's
/// round trip took `round_trip` ms: the patience, or four round trips if longer (a holder
/// on a distant server needs a few of its own to finish: a lock, a commit, a release), but
/// never more than ten times the patience (a round trip slowed by a reconnection is not the
/// server's).
///
/// ```
/// # use avout::lock::blocked_wait;
/// assert_eq!(blocked_wait(100, 1), 100);
/// assert_eq!(blocked_wait(100, 120), 480);
/// assert_eq!(blocked_wait(100, 4_000), 1_000);
/// ```
pub fn blocked_wait(patience: u64, round_trip: u64) -> u64 {
    let scaled = round_trip.saturating_mul(4);
    patience.max(scaled.min(patience.saturating_mul(10)))
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Retry {
    Recover,
    Check,
    Abandon,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Create (after any parents) and children read sent together; a riding create reads
    /// no children (the stamp says whether we are alone).
    Creating {
        children: Option<Token>,
        listed: Option<Vec<String>>,
    },
    /// Looking for a node whose create had an unknown outcome (the protected create's
    /// recovery: listing the children, then checking the owner of a node with our GUID).
    Recovering,
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

/// Acquires one lock node; see the module docs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AcquireMachine {
    lock_path: String,
    kind: LockKind,
    /// Our node, named `_c_<GUID>-<marker><sequence>`.
    node: ProtectedCreate,
    /// Nodes this owner already holds on the same lock path (a write holder taking the read
    /// lock must not wait for itself).
    own: Vec<String>,
    /// Names of this owner's nodes whose delete is in flight: they never block.
    releasing: Vec<String>,
    /// This owner's released node (its path) whose delete rides with our create, until the
    /// ride is applied; `ride_dropped` once the machine stopped carrying it (refused).
    riding: Option<String>,
    ride_dropped: bool,
    /// Whether a ride's stamp was refused (no write access to the lock directory).
    stamp_refused: bool,
    patience: Patience,
    /// Whether the patience runs only while blocked ([`AcquireMachine::blocked_patience`]).
    blocked_patience: bool,
    /// When the acquisition started (the driver's first call).
    started: Millis,
    deadline: Option<Millis>,
    phase: Phase,
    outbox: Outbox<Result<Acquired, LockError>>,
    give_up: Option<LockError>,
    /// A step to redo after a connection loss.
    retry: Stall<Retry>,
    planted: Bugs,
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
            node: ProtectedCreate::new(lock_path, prefix, session),
            own,
            releasing: Vec::new(),
            riding: None,
            ride_dropped: false,
            stamp_refused: false,
            patience,
            blocked_patience: false,
            started: Millis(0),
            deadline: None,
            phase: Phase::Done,
            outbox: Outbox::default(),
            give_up: None,
            retry: Stall::default(),
            planted: Bugs::NONE,
        }
    }

    /// The same machine with `planted` bugs on (none by default; see [`crate::planted`]).
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// let m = AcquireMachine::new("/l", LockKind::Exclusive, 1, 1, Patience::Forever, vec![])
    ///     .planted(avout::planted::Bugs::NONE);
    /// assert!(m.prefix().ends_with("-lock-"));
    /// ```
    pub fn planted(mut self, planted: Bugs) -> Self {
        self.planted = planted;
        self
    }

    /// The same machine, its [`Patience::Millis`] counted only while the lock is held by
    /// someone else: the clock starts the first time the acquisition finds a holder, so a
    /// free lock is taken however slow the server's round trips. The wait then lasts at least
    /// four times as long as finding the holder took (the server's round trip), so a holder
    /// on a distant server has time to finish, up to ten times the patience
    /// ([`blocked_wait`]). The Mvcc STM takes its locks so, as a lock wait
    /// in Clojure's STM (LOCK_WAIT_MSECS) is spent only behind another transaction: counted
    /// from the start, a server slower than the wait made every transaction time out on its
    /// own lock, and a fixed wait shorter than a holder's round trips starved waiters.
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// use avout::machine::{Machine, Millis};
    /// let mut m = AcquireMachine::new("/l", LockKind::Write, 1, 1, Patience::Millis(100), vec![])
    ///     .blocked_patience();
    /// m.handle_session(Millis(0), avout::SessionState::Connected);
    /// assert_eq!(m.poll_timer(), None, "no clock runs before a holder is seen");
    /// ```
    pub fn blocked_patience(mut self) -> Self {
        self.blocked_patience = true;
        self
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
        self.node = self.node.with_data(data);
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

    /// The same machine, deleting `node` (the path of a node this owner released, under the
    /// same lock path) in the same `multi` as it creates its own; see the
    /// module docs. The node never blocks this machine meanwhile.
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// use avout::machine::{Machine, Millis, Request};
    /// use avout::Op;
    /// let mut m = AcquireMachine::new("/l", LockKind::Exclusive, 1, 1, Patience::Forever, vec![])
    ///     .with_riding("/l/_c_0-lock-0000000007".into());
    /// m.handle_session(Millis(0), avout::SessionState::Connected);
    /// // One multi: the released node's delete, our create, and the lock directory's stamp.
    /// let Some((_, Request::Multi(ops))) = m.poll_request() else { panic!("no multi") };
    /// assert!(matches!(&ops[..], [Op::Delete { .. }, Op::Create { .. }, Op::SetData { .. }]));
    /// assert_eq!(m.unreleased(), Some("/l/_c_0-lock-0000000007"));
    /// ```
    pub fn with_riding(mut self, node: String) -> Self {
        self.releasing.push(path::name(&node).to_owned());
        self.riding = Some(node);
        self
    }

    /// The node given to [`with_riding`](Self::with_riding), while the machine does not know
    /// its delete applied (and its session lives): after the machine finishes, the caller
    /// releases it as any other.
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// let m = AcquireMachine::new("/l", LockKind::Exclusive, 1, 1, Patience::Forever, vec![]);
    /// assert_eq!(m.unreleased(), None);
    /// ```
    pub fn unreleased(&self) -> Option<&str> {
        self.riding.as_deref()
    }

    /// Whether a ride was refused for its stamp (the lock directory may not be written): the
    /// caller should not defer releases on this lock any more.
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// let m = AcquireMachine::new("/l", LockKind::Exclusive, 1, 1, Patience::Forever, vec![]);
    /// assert!(!m.stamp_refused());
    /// ```
    pub fn stamp_refused(&self) -> bool {
        self.stamp_refused
    }

    /// The prefix of this machine's node name (`_c_<GUID>-<marker>`).
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// let m = AcquireMachine::new("/l", LockKind::Write, 1, 1, Patience::None, vec![]);
    /// assert!(m.prefix().ends_with("-__WRIT__"));
    /// ```
    pub fn prefix(&self) -> &str {
        self.node.prefix()
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
        self.node.node_path()
    }

    /// Whether a create may have happened whose node this machine does not know.
    ///
    /// ```
    /// use avout::lock::{AcquireMachine, LockKind, Patience};
    /// let m = AcquireMachine::new("/l", LockKind::Exclusive, 1, 1, Patience::None, vec![]);
    /// assert!(!m.node_unknown());
    /// ```
    pub fn node_unknown(&self) -> bool {
        self.node.unknown()
    }

    fn send(&mut self, request: Request) -> Token {
        self.outbox.send(request)
    }

    fn finish(&mut self, result: Result<Acquired, LockError>) {
        self.phase = Phase::Done;
        self.retry.cancel();
        self.node.halt();
        self.outbox.finish(result);
    }

    /// Sends the ancestors' creates (when `with_parents`) and our create, with the children
    /// read right behind; or the riding create alone, whose stamp says whether we are the
    /// only node (a warm cycle's lock, which then needs no read).
    fn start_create(&mut self, with_parents: bool) {
        let riding = match (&self.riding, self.ride_dropped) {
            (Some(node), false) => vec![Op::delete(node.clone(), None)],
            _ => Vec::new(),
        };
        let read = riding.is_empty();
        self.node
            .create_riding(&mut self.outbox, with_parents, riding);
        let children = read.then(|| {
            self.send(Request::GetChildren {
                path: self.lock_path.clone(),
                watch: false,
            })
        });
        self.phase = Phase::Creating {
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
        self.node.recover(&mut self.outbox);
        self.phase = Phase::Recovering;
    }

    fn abandon(&mut self, reason: LockError) {
        self.give_up = Some(reason.clone());
        if let Some(path) = self.node.node_path() {
            coverage::reach(Mark::LockGaveUpQueued);
            // A step scheduled before giving up (a re-check after a connection loss) must not
            // run after it: it would re-queue or even acquire.
            self.retry.cancel();
            let delete = self.send(Request::Delete {
                path,
                version: None,
            });
            self.phase = Phase::Abandoning { delete };
        } else if !self.node.unknown() {
            self.finish(Err(reason));
        }
        // Otherwise the create's reply will arrive; `give_up` makes it delete the node then.
    }

    /// Goes on from a step of the protected create.
    /// `listed`: the children read sent with the create, if in; `read`: whether one was sent.
    fn protected(
        &mut self,
        now: Millis,
        outcome: Protected,
        listed: Option<Vec<String>>,
        read: bool,
    ) {
        if matches!(outcome, Protected::Created | Protected::Adopted) && !self.ride_dropped {
            // The ride shares the create's fate.
            if self.riding.take().is_some() {
                coverage::reach(match outcome {
                    Protected::Adopted => Mark::LockRideAdopted,
                    _ => Mark::LockReleaseRode,
                });
            }
        }
        match (outcome, self.give_up.clone()) {
            (Protected::Created | Protected::Adopted, Some(reason)) => self.abandon(reason),
            (Protected::Created, None) => match (listed, read) {
                (Some(list), _) => self.decide(now, list),
                // The read is on its way.
                (None, true) => {}
                // A riding create: alone in the directory once it applied, we hold.
                (None, false) => match self.node.parent_stat() {
                    Some(parent) if parent.num_children == 1 => self.take_over(),
                    _ => self.check(),
                },
            },
            (Protected::Adopted, None) => self.check(),
            (Protected::Absent { .. }, Some(reason)) => self.finish(Err(reason)),
            (Protected::Absent { parents_missing }, None) => self.start_create(parents_missing),
            (Protected::Failed(e), _) => self.failed(now, e, Retry::Recover),
            (Protected::Refused { op, error }, give_up) => {
                coverage::reach(Mark::LockRideDropped);
                match (op, error) {
                    // Already gone: nothing left to release.
                    (Some(_), Error::NoNode { .. }) => self.riding = None,
                    // The release cannot ride (or the stamp is refused): create alone; the
                    // caller releases the node afterwards.
                    (op, _) => {
                        self.ride_dropped = true;
                        self.stamp_refused |= op.is_none();
                    }
                }
                match give_up {
                    Some(reason) => self.finish(Err(reason)),
                    None => self.start_create(false),
                }
            }
        }
    }

    /// Decides from the children whether we hold the lock or whom to watch.
    fn decide(&mut self, now: Millis, children: Vec<String>) {
        let Some((name, czxid)) = self.node.node().map(|(n, c)| (n.to_owned(), c)) else {
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
            .filter(|c| {
                let releasing = self.releasing.contains(c);
                if releasing {
                    coverage::reach(Mark::LockReleaseInFlight);
                }
                !releasing
            })
            .filter_map(|c| path::sequence(&c).map(|seq| (seq, c)))
            .collect();
        contenders.sort();
        let Some(ours) = contenders.iter().position(|(_, c)| *c == name) else {
            // Our node is gone (deleted by an administrator, or by an expiry we have not been
            // told of yet): start again; a lost session fails the create.
            coverage::reach(Mark::LockOwnNodeVanished);
            self.node.forget();
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
        if under_own_write {
            coverage::reach(Mark::LockReadUnderOwnWrite);
        }
        // The planted kazoo #649: a reader counts every writer, those queued after it too.
        let considered = if self.kind == LockKind::Read && self.planted.contains(Bug::Kazoo649) {
            &contenders[..]
        } else {
            &contenders[..ours]
        };
        let mut blockers = considered
            .iter()
            .filter(|(_, c)| *c != name)
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
                if let (Patience::Millis(ms), true, None) =
                    (self.patience, self.blocked_patience, self.deadline)
                {
                    // What it took to find the holder is the server's round trip: a holder
                    // needs a few of those to finish, however short the patience.
                    let found_in = now.0.saturating_sub(self.started.0);
                    self.deadline = Some(now.plus(blocked_wait(ms, found_in)));
                }
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
        let (Some(node), Some((_, czxid))) = (self.node.node_path(), self.node.node()) else {
            unreachable!("watching without a node")
        };
        self.finish(Ok(Acquired {
            node,
            fencing_token: czxid,
        }));
    }

    /// Handles a failed request: after a connection loss `step` is scheduled again; session
    /// loss ends the acquisition; a refusal is surfaced.
    fn failed(&mut self, now: Millis, error: Error, step: Retry) {
        match error.class() {
            ErrorClass::Indeterminate => self.retry.start(step, now),
            ErrorClass::SessionLost => {
                self.riding = None;
                self.finish(Err(LockError::SessionLost(error)))
            }
            ErrorClass::Rejected => self.finish(Err(LockError::Zk(error))),
        }
    }

    fn run_retry(&mut self, step: Retry) {
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
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            phase @ (Phase::Creating { .. } | Phase::Recovering) if self.node.expects(token) => {
                let (listed, read) = match phase {
                    Phase::Creating { listed, children } => (listed, children.is_some()),
                    _ => (None, false),
                };
                let reply = match reply {
                    // The planted bug: recovery does not see our own node.
                    Ok(Reply::Children { mut children, stat })
                        if self.phase == Phase::Recovering
                            && self.planted.contains(Bug::LockNoGuidRecovery) =>
                    {
                        children.retain(|c| !c.starts_with(self.node.prefix()));
                        Ok(Reply::Children { children, stat })
                    }
                    reply => reply,
                };
                if let Some(outcome) = self.node.handle_reply(&mut self.outbox, token, reply) {
                    self.protected(now, outcome, listed, read);
                }
            }
            Phase::Creating {
                children: Some(children),
                listed: None,
            } if token == children => match reply {
                Ok(Reply::Children { children: list, .. }) => {
                    if self.node.node().is_some() {
                        self.decide(now, list);
                    } else {
                        self.phase = Phase::Creating {
                            children: Some(children),
                            listed: Some(list),
                        };
                    }
                }
                // The create's reply decides what to do; a failed read is simply re-done.
                Err(_) => {
                    if self.node.node().is_some() {
                        self.check();
                    }
                }
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Checking { list } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => self.decide(now, children),
                Err(Error::NoNode { .. }) => {
                    self.node.forget();
                    self.start_create(true);
                }
                Err(e) => self.failed(now, e, Retry::Check),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Watching { exists, last } if token == exists => match reply {
                // Gone before the watch was armed: ours if it was the last blocker, else look
                // again.
                Ok(Reply::Exists(None)) => {
                    if !last {
                        coverage::reach(Mark::LockPredecessorVanished);
                    }
                    if last || self.planted.contains(Bug::LockHandoffWithoutRecheck) {
                        self.take_over()
                    } else {
                        self.check()
                    }
                }
                // Armed: wait for the event.
                Ok(Reply::Exists(Some(_))) => {}
                Err(e) => self.failed(now, e, Retry::Check),
                Ok(other) => unreachable!("exists replied {other:?}"),
            },
            Phase::Abandoning { delete } if token == delete => match reply {
                Ok(_) | Err(Error::NoNode { .. }) => {
                    self.node.forget();
                    let reason = self.give_up.clone().expect("abandoning has a reason");
                    self.finish(Err(reason));
                }
                // The planted kazoo #732: the lost delete is not sent again, and the node
                // stays behind, owned by a live session.
                Err(e) if e.is_indeterminate() && self.planted.contains(Bug::Kazoo732) => {
                    self.node.forget();
                    let reason = self.give_up.clone().expect("abandoning has a reason");
                    self.finish(Err(reason));
                }
                Err(e) if e.is_indeterminate() => self.retry.start(Retry::Abandon, now),
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
            if !last && event.kind == EventKind::NodeDeleted {
                coverage::reach(Mark::LockPredecessorVanished);
            }
            let last = last || self.planted.contains(Bug::LockHandoffWithoutRecheck);
            if last && event.kind == EventKind::NodeDeleted {
                self.take_over();
            } else {
                self.check();
            }
        }
    }

    fn handle_session(&mut self, now: Millis, state: SessionState) {
        if !self.outbox.started() {
            // The driver's first call gives the starting time.
            self.started = now;
            self.deadline = match self.patience {
                // A blocked-only clock starts in `decide`.
                Patience::Millis(ms) if !self.blocked_patience => Some(now.plus(ms)),
                Patience::Millis(_) | Patience::Forever | Patience::None => None,
            };
        }
        match self.outbox.session_stalled(state, &mut self.retry) {
            Resumed::Start => self.start_create(false),
            Resumed::Ended(error) => {
                // The session's ephemerals, ours and the ridden one included, are gone with it.
                self.node.forget();
                self.riding = None;
                self.finish(Err(LockError::SessionLost(error)));
            }
            Resumed::Redo(step) => self.run_retry(step),
            Resumed::Quiet => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Some(step) = self.retry.due(now) {
            self.run_retry(step);
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
        earliest(self.retry.deadline(), self.deadline)
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.outbox.take_output()
    }
}

#[cfg(test)]
mod tests;
