//! A distributed counting semaphore: at most N leases held at once, across processes.
//!
//! # Algorithm (Apache Curator's `InterProcessSemaphoreV2`)
//!
//! Under the semaphore path sit two directories: `locks`, an exclusive lock (the lock recipe,
//! [`AcquireMachine`]), and `leases`, one ephemeral-sequential node `_c_<GUID>-lease-<seq>`
//! per lease. To acquire:
//!
//! 1. take the `locks` mutex;
//! 2. create a lease node and, in the same round trip, list `leases`;
//! 3. if there are at most N lease nodes (ours included), the lease is ours; otherwise list
//!    again with a child watch and wait for it, re-counting each time it fires;
//! 4. release the mutex.
//!
//! Only the mutex holder ever creates a lease node or waits on `leases`, so the count cannot
//! race past N, and a released lease wakes exactly one process — the one waiter holding the
//! mutex — while the others wait in the mutex queue, each watching only its predecessor. The
//! simpler "first N sequence numbers hold" scheme was rejected because it has no herd-free
//! wake-up for N > 1: a waiter becomes eligible when *any* N of the nodes below it go, and no
//! single node's deletion signals that, so it must either watch the whole directory (a herd)
//! or miss wake-ups. The layout and names are Curator's, so Java and Rust processes share a
//! semaphore. The cost is three round trips for a free lease (lock, lease, unlock) instead of
//! one.
//!
//! # Connection loss, session expiry, cancellation
//!
//! - A connection loss while acquiring is recovered: the mutex node and the lease node are
//!   found again by the GUID in their names (and their owner checked) instead of being created
//!   twice; reads and the deletes of our own nodes are simply redone.
//! - A session expiry fails an acquisition with [`LockError::SessionLost`] and ends every lease
//!   of the session (its lease nodes are ephemeral): [`Lease::status`] reports it and
//!   [`Lease::lost`] resolves. A holder paused past its session timeout may not know yet; fence
//!   with [`Lease::fencing_token`].
//! - Dropping an acquisition future removes the mutex and lease nodes it created or may have
//!   created (in a background task); dropping a [`Lease`] releases it like
//!   [`Lease::release`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::lock::{
    AcquireMachine, Acquired, LockError, LockKind, LockStatus, Patience, delete_idempotent,
    find_own_node, node_lost, session_status, spawn_cleanup,
};
use crate::machine::{Machine, Millis, Reply, Request, Token, drive};
use crate::{
    Coordination, CreateMode, CreateOptions, Error, ErrorClass, SessionState, WatchedEvent, path,
};

/// Pause before redoing a step after a connection loss, unless the session reconnects first.
const RETRY_PAUSE_MS: u64 = 20;

/// The marker in lease node names, as Curator spells it.
const LEASE_MARKER: &str = "lease-";

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    Absent,
    Unknown,
    Mine { name: String, czxid: i64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Retry {
    Recover,
    Count { watch: bool },
    Unlock,
    Abandon,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Not started.
    Idle,
    /// Taking the mutex (the embedded lock machine runs).
    Locking,
    /// Lease create (after any parents) and lease listing sent together.
    Creating {
        create: Token,
        list: Token,
        listed: Option<Vec<String>>,
    },
    /// Listing leases to find a lease node whose create had an unknown outcome.
    Recovering { list: Token },
    /// Checking that a lease node with our GUID is owned by this session.
    VerifyingOwner { exists: Token, name: String },
    /// Counting the leases; `watch`: the listing arms a child watch, and once it has replied
    /// with too many leases the machine waits for that watch.
    Counting {
        list: Token,
        watch: bool,
        armed: bool,
    },
    /// Deleting our lease node before giving up.
    Abandoning { delete: Token },
    /// Deleting the mutex node; the result is decided.
    Unlocking { delete: Token },
    /// Finished.
    Done,
}

/// Acquires one lease of a semaphore; see the [module docs](self).
///
/// Its own requests carry odd tokens; the embedded mutex machine's carry even ones (its own
/// token doubled), so replies and watches find their way back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SemaphoreMachine {
    leases_path: String,
    max_leases: u32,
    session: i64,
    lease_prefix: String,
    patience: Patience,
    deadline: Option<Millis>,
    lock: AcquireMachine,
    lock_node: Option<String>,
    lease: Node,
    phase: Phase,
    next_token: u64,
    outbox: VecDeque<(Token, Request)>,
    give_up: Option<LockError>,
    /// The result to return once the mutex is released.
    pending: Option<Result<Acquired, LockError>>,
    retry: Option<(Retry, Millis)>,
    output: Option<Result<Acquired, LockError>>,
}

impl SemaphoreMachine {
    /// A machine acquiring one of `max_leases` leases of the semaphore at `path`, for session
    /// `session`, naming its nodes with `guid`.
    ///
    /// ```
    /// use avout::lock::Patience;
    /// use avout::recipes::semaphore::SemaphoreMachine;
    /// let m = SemaphoreMachine::new("/sem", 3, 0x42, 7, Patience::Forever);
    /// assert!(m.lease_prefix().ends_with("-lease-"));
    /// ```
    pub fn new(path: &str, max_leases: u32, guid: u128, session: i64, patience: Patience) -> Self {
        let lock = AcquireMachine::new(
            &path::join(path, "locks"),
            LockKind::Exclusive,
            guid,
            session,
            patience,
            Vec::new(),
        );
        SemaphoreMachine {
            leases_path: path::join(path, "leases"),
            max_leases,
            session,
            lease_prefix: format!("_c_{}-{LEASE_MARKER}", uuid::Uuid::from_u128(guid)),
            patience,
            deadline: None,
            lock,
            lock_node: None,
            lease: Node::Absent,
            phase: Phase::Idle,
            next_token: 0,
            outbox: VecDeque::new(),
            give_up: None,
            pending: None,
            retry: None,
            output: None,
        }
    }

    /// The prefix of this machine's lease node name (`_c_<GUID>-lease-`).
    ///
    /// ```
    /// # use avout::{lock::Patience, recipes::semaphore::SemaphoreMachine};
    /// let m = SemaphoreMachine::new("/sem", 1, 1, 1, Patience::None);
    /// assert!(m.lease_prefix().starts_with("_c_"));
    /// ```
    pub fn lease_prefix(&self) -> &str {
        &self.lease_prefix
    }

    /// The prefix of this machine's mutex node name (`_c_<GUID>-lock-`).
    ///
    /// ```
    /// # use avout::{lock::Patience, recipes::semaphore::SemaphoreMachine};
    /// let m = SemaphoreMachine::new("/sem", 1, 1, 1, Patience::None);
    /// assert!(m.lock_prefix().ends_with("-lock-"));
    /// ```
    pub fn lock_prefix(&self) -> &str {
        self.lock.prefix()
    }

    /// Whether the machine may have nodes to remove if abandoned now (it has started and not
    /// finished).
    ///
    /// ```
    /// # use avout::{lock::Patience, recipes::semaphore::SemaphoreMachine};
    /// let m = SemaphoreMachine::new("/sem", 1, 1, 1, Patience::None);
    /// assert!(!m.in_progress());
    /// ```
    pub fn in_progress(&self) -> bool {
        !matches!(self.phase, Phase::Idle | Phase::Done)
    }

    fn send(&mut self, request: Request) -> Token {
        self.next_token += 1;
        let token = Token(self.next_token * 2 + 1);
        self.outbox.push_back((token, request));
        token
    }

    fn finish(&mut self, result: Result<Acquired, LockError>) {
        self.phase = Phase::Done;
        self.retry = None;
        self.outbox.clear();
        self.output = Some(result);
    }

    /// Takes the mutex machine's result, if it has one.
    fn after_lock_step(&mut self) {
        if self.phase != Phase::Locking {
            return;
        }
        match self.lock.poll_output() {
            None => {}
            Some(Ok(acquired)) => {
                self.lock_node = Some(acquired.node);
                self.start_create(false);
            }
            // The lock machine removed its own node before giving up.
            Some(Err(e)) => self.finish(Err(e)),
        }
    }

    fn start_create(&mut self, with_parents: bool) {
        if with_parents {
            let leases = self.leases_path.clone();
            let mut end = 0;
            while end < leases.len() {
                end = leases[end + 1..]
                    .find('/')
                    .map_or(leases.len(), |i| end + 1 + i);
                // NodeExists replies to these are expected and ignored.
                self.send(Request::Create {
                    path: leases[..end].to_owned(),
                    data: Vec::new(),
                    options: CreateOptions::default(),
                });
            }
        }
        self.lease = Node::Unknown;
        let create = self.send(Request::Create {
            path: path::join(&self.leases_path, &self.lease_prefix),
            data: Vec::new(),
            options: CreateOptions::new(CreateMode::EphemeralSequential),
        });
        let list = self.send(Request::GetChildren {
            path: self.leases_path.clone(),
            watch: false,
        });
        self.phase = Phase::Creating {
            create,
            list,
            listed: None,
        };
    }

    fn recover(&mut self) {
        let list = self.send(Request::GetChildren {
            path: self.leases_path.clone(),
            watch: false,
        });
        self.phase = Phase::Recovering { list };
    }

    fn count(&mut self, watch: bool) {
        let list = self.send(Request::GetChildren {
            path: self.leases_path.clone(),
            watch,
        });
        self.phase = Phase::Counting {
            list,
            watch,
            armed: false,
        };
    }

    /// Releases the mutex, then returns `result`.
    fn unlock(&mut self, result: Result<Acquired, LockError>) {
        self.retry = None;
        self.pending = Some(result);
        match self.lock_node.clone() {
            Some(node) => {
                let delete = self.send(Request::Delete {
                    path: node,
                    version: None,
                });
                self.phase = Phase::Unlocking { delete };
            }
            None => {
                let result = self.pending.take().expect("just set");
                self.finish(result);
            }
        }
    }

    fn abandon(&mut self, reason: LockError) {
        self.give_up = Some(reason.clone());
        match self.lease.clone() {
            Node::Mine { name, .. } => {
                // A step scheduled before giving up must not run after it.
                self.retry = None;
                let delete = self.send(Request::Delete {
                    path: path::join(&self.leases_path, &name),
                    version: None,
                });
                self.phase = Phase::Abandoning { delete };
            }
            // The create's reply will arrive; `give_up` makes it delete the node then.
            Node::Unknown => {}
            Node::Absent => self.unlock(Err(reason)),
        }
    }

    /// Counts the leases: ours if at most `max_leases`, else wait.
    fn decide(&mut self, children: Vec<String>, watched: bool, list: Token) {
        let Node::Mine { name, czxid } = self.lease.clone() else {
            unreachable!("counting without a lease node")
        };
        let leases = children
            .iter()
            .filter(|c| c.contains(LEASE_MARKER) && path::sequence(c).is_some())
            .count();
        if !children.contains(&name) {
            // Our lease node is gone (deleted by an administrator, or by an expiry we have
            // not been told of yet): create another; a lost session fails the create.
            self.lease = Node::Absent;
            return self.start_create(false);
        }
        if leases <= self.max_leases as usize {
            let node = path::join(&self.leases_path, &name);
            return self.unlock(Ok(Acquired {
                node,
                fencing_token: czxid,
            }));
        }
        if self.patience == Patience::None {
            return self.abandon(LockError::WouldBlock);
        }
        if watched {
            self.phase = Phase::Counting {
                list,
                watch: true,
                armed: true,
            };
        } else {
            // Only a waiter arms a watch, so holders that got a lease at once leave none
            // behind to be woken by later releases.
            self.count(true);
        }
    }

    fn failed(&mut self, now: Millis, error: Error, step: Retry) {
        match error.class() {
            ErrorClass::Indeterminate => self.retry = Some((step, now.plus(RETRY_PAUSE_MS))),
            ErrorClass::SessionLost => self.finish(Err(LockError::SessionLost(error))),
            ErrorClass::Rejected => match step {
                // Our nodes may still exist: remove them before surfacing the refusal.
                Retry::Recover | Retry::Count { .. } => self.abandon(LockError::Zk(error)),
                Retry::Abandon => self.unlock(Err(LockError::Zk(error))),
                Retry::Unlock => self.finish(Err(LockError::Zk(error))),
            },
        }
    }

    fn run_retry(&mut self) {
        let Some((step, _)) = self.retry.take() else {
            return;
        };
        match step {
            Retry::Recover => self.recover(),
            Retry::Count { watch } => self.count(watch),
            Retry::Unlock => {
                let result = self.pending.take().expect("unlocking has a result");
                self.unlock(result);
            }
            Retry::Abandon => {
                let reason = self.give_up.clone().expect("abandoning has a reason");
                self.abandon(reason);
            }
        }
    }

    fn handle_own_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            Phase::Creating {
                create,
                list,
                listed,
            } if token == create => match reply {
                Ok(Reply::Created {
                    path: created,
                    stat,
                }) => {
                    self.lease = Node::Mine {
                        name: path::name(&created).to_owned(),
                        czxid: stat.czxid,
                    };
                    if let Some(reason) = self.give_up.clone() {
                        return self.abandon(reason);
                    }
                    if let Some(children) = listed {
                        self.decide(children, false, list);
                    }
                }
                Err(Error::NoNode { .. }) => {
                    self.lease = Node::Absent;
                    match self.give_up.clone() {
                        Some(reason) => self.unlock(Err(reason)),
                        None => self.start_create(true),
                    }
                }
                Err(e) => self.failed(now, e, Retry::Recover),
                Ok(other) => unreachable!("create replied {other:?}"),
            },
            Phase::Creating {
                create,
                list,
                listed: None,
            } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => {
                    if matches!(self.lease, Node::Mine { .. }) {
                        self.decide(children, false, list);
                    } else {
                        self.phase = Phase::Creating {
                            create,
                            list,
                            listed: Some(children),
                        };
                    }
                }
                // The create's reply decides; a failed listing is simply redone.
                Err(_) => {
                    if matches!(self.lease, Node::Mine { .. }) {
                        self.count(false);
                    }
                }
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Recovering { list } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => {
                    match children
                        .into_iter()
                        .find(|c| c.starts_with(&self.lease_prefix))
                    {
                        Some(name) => {
                            let exists = self.send(Request::Exists {
                                path: path::join(&self.leases_path, &name),
                                watch: false,
                            });
                            self.phase = Phase::VerifyingOwner { exists, name };
                        }
                        None => {
                            self.lease = Node::Absent;
                            match self.give_up.clone() {
                                Some(reason) => self.unlock(Err(reason)),
                                None => self.start_create(false),
                            }
                        }
                    }
                }
                Err(Error::NoNode { .. }) => {
                    self.lease = Node::Absent;
                    match self.give_up.clone() {
                        Some(reason) => self.unlock(Err(reason)),
                        None => self.start_create(true),
                    }
                }
                Err(e) => self.failed(now, e, Retry::Recover),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::VerifyingOwner { exists, name } if token == exists => match reply {
                Ok(Reply::Exists(Some(stat))) if stat.ephemeral_owner == self.session => {
                    self.lease = Node::Mine {
                        name,
                        czxid: stat.czxid,
                    };
                    match self.give_up.clone() {
                        Some(reason) => self.abandon(reason),
                        None => self.count(false),
                    }
                }
                Ok(Reply::Exists(_)) => {
                    self.lease = Node::Absent;
                    match self.give_up.clone() {
                        Some(reason) => self.unlock(Err(reason)),
                        None => self.start_create(false),
                    }
                }
                Err(e) => self.failed(now, e, Retry::Recover),
                Ok(other) => unreachable!("exists replied {other:?}"),
            },
            Phase::Counting {
                list,
                watch,
                armed: false,
            } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => self.decide(children, watch, list),
                Err(Error::NoNode { .. }) => {
                    self.lease = Node::Absent;
                    self.start_create(true);
                }
                Err(e) => self.failed(now, e, Retry::Count { watch }),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Abandoning { delete } if token == delete => match reply {
                Ok(_) | Err(Error::NoNode { .. }) => {
                    self.lease = Node::Absent;
                    let reason = self.give_up.clone().expect("abandoning has a reason");
                    self.unlock(Err(reason));
                }
                Err(e) => self.failed(now, e, Retry::Abandon),
            },
            Phase::Unlocking { delete } if token == delete => match reply {
                Ok(_) | Err(Error::NoNode { .. }) => {
                    self.lock_node = None;
                    let result = self.pending.take().expect("unlocking has a result");
                    self.finish(result);
                }
                Err(e) => self.failed(now, e, Retry::Unlock),
            },
            // Replies to superseded requests (parents' creates, an old listing).
            _ => {}
        }
    }
}

impl Machine for SemaphoreMachine {
    type Output = Result<Acquired, LockError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        if let Some(next) = self.outbox.pop_front() {
            return Some(next);
        }
        if self.phase == Phase::Locking {
            return self
                .lock
                .poll_request()
                .map(|(Token(t), request)| (Token(t * 2), request));
        }
        None
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        if token.0.is_multiple_of(2) {
            if self.phase == Phase::Locking {
                self.lock.handle_reply(now, Token(token.0 / 2), reply);
                self.after_lock_step();
            }
            return;
        }
        self.handle_own_reply(now, token, reply);
    }

    fn handle_watch(&mut self, now: Millis, token: Token, event: WatchedEvent) {
        if token.0.is_multiple_of(2) {
            if self.phase == Phase::Locking {
                self.lock.handle_watch(now, Token(token.0 / 2), event);
                self.after_lock_step();
            }
            return;
        }
        if let Phase::Counting {
            list, armed: true, ..
        } = self.phase
            && list == token
        {
            // A lease was released (or the session ended, which the session report handles).
            if event.state.terminal_error().is_none() {
                self.count(true);
            }
        }
    }

    fn handle_session(&mut self, now: Millis, state: SessionState) {
        if self.phase == Phase::Done {
            return;
        }
        if let Some(error) = state.terminal_error() {
            // The session's ephemerals, mutex and lease nodes included, are gone with it.
            self.lease = Node::Absent;
            self.lock_node = None;
            return self.finish(Err(LockError::SessionLost(error)));
        }
        if self.phase == Phase::Idle {
            self.deadline = match self.patience {
                Patience::Millis(ms) => Some(now.plus(ms)),
                Patience::Forever | Patience::None => None,
            };
            self.phase = Phase::Locking;
        }
        if self.phase == Phase::Locking {
            self.lock.handle_session(now, state);
            return self.after_lock_step();
        }
        if state == SessionState::Connected {
            self.run_retry();
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.phase == Phase::Locking {
            // The mutex machine has the same deadline and gives up by itself.
            self.lock.handle_timer(now);
            return self.after_lock_step();
        }
        if let Some((_, at)) = self.retry
            && now >= at
        {
            self.run_retry();
        }
        if let Some(deadline) = self.deadline
            && now >= deadline
        {
            self.deadline = None;
            let deciding = !matches!(self.phase, Phase::Unlocking { .. } | Phase::Done);
            if deciding && self.give_up.is_none() {
                self.abandon(LockError::TimedOut);
            }
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        if self.phase == Phase::Locking {
            return self.lock.poll_timer();
        }
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

/// A distributed counting semaphore with `max_leases` leases; see the [module docs](self).
///
/// Each acquisition is a separate lease (there is no reentrancy: a task that acquires twice
/// holds two leases).
///
/// ```no_run
/// use std::sync::Arc;
/// use avout::recipes::semaphore::Semaphore;
/// # async fn demo(zk: Arc<avout::zk::ZkClient>) -> Result<(), avout::lock::LockError> {
/// let downloads = Semaphore::new(zk, "/limits/downloads", 4)?;
/// let lease = downloads.acquire().await?;
/// // ... at most four of these run at once, cluster-wide ...
/// lease.release().await?;
/// # Ok(()) }
/// ```
pub struct Semaphore<C: Coordination + ?Sized + 'static> {
    zk: Arc<C>,
    path: String,
    max_leases: u32,
}

impl<C: Coordination + ?Sized + 'static> Clone for Semaphore<C> {
    fn clone(&self) -> Self {
        Semaphore {
            zk: self.zk.clone(),
            path: self.path.clone(),
            max_leases: self.max_leases,
        }
    }
}

impl<C: Coordination + ?Sized + 'static> std::fmt::Debug for Semaphore<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("path", &self.path)
            .field("max_leases", &self.max_leases)
            .finish()
    }
}

impl<C: Coordination + ?Sized + 'static> Semaphore<C> {
    /// A handle on the semaphore at `path` with `max_leases` leases (the nodes are created
    /// on first use). Every participant must use the same `max_leases`.
    ///
    /// Fails for an invalid path, or zero leases.
    ///
    /// ```no_run
    /// # fn demo(zk: std::sync::Arc<avout::zk::ZkClient>) {
    /// use avout::recipes::semaphore::Semaphore;
    /// assert!(Semaphore::new(zk.clone(), "/sem", 0).is_err());
    /// assert!(Semaphore::new(zk, "/sem", 2).is_ok());
    /// # }
    /// ```
    pub fn new(zk: Arc<C>, path: impl Into<String>, max_leases: u32) -> Result<Self, LockError> {
        let path = path.into();
        path::validate_path(&path, false)?;
        if max_leases == 0 {
            return Err(LockError::Zk(Error::BadArguments(
                "a semaphore needs at least one lease".into(),
            )));
        }
        Ok(Semaphore {
            zk,
            path,
            max_leases,
        })
    }

    /// The semaphore's path.
    ///
    /// ```no_run
    /// # fn demo(s: avout::recipes::semaphore::Semaphore<avout::zk::ZkClient>) {
    /// println!("{}", s.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How many leases the semaphore has.
    ///
    /// ```no_run
    /// # fn demo(s: avout::recipes::semaphore::Semaphore<avout::zk::ZkClient>) {
    /// assert!(s.max_leases() >= 1);
    /// # }
    /// ```
    pub fn max_leases(&self) -> u32 {
        self.max_leases
    }

    /// Waits for a lease. Fails only when the session is lost or a request is refused.
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::semaphore::Semaphore<avout::zk::ZkClient>) -> Result<(), avout::lock::LockError> {
    /// let lease = s.acquire().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<Lease<C>, LockError> {
        self.run(Patience::Forever).await
    }

    /// Takes a lease if one is free now (and no other process is acquiring); `Ok(None)`
    /// otherwise.
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::semaphore::Semaphore<avout::zk::ZkClient>) -> Result<(), avout::lock::LockError> {
    /// if let Some(lease) = s.try_acquire().await? { lease.release().await?; }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<Lease<C>>, LockError> {
        match self.run(Patience::None).await {
            Err(LockError::WouldBlock) => Ok(None),
            other => other.map(Some),
        }
    }

    /// Waits at most `timeout` for a lease; `Ok(None)` if none was acquired in time (the
    /// nodes created are removed before returning).
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::semaphore::Semaphore<avout::zk::ZkClient>) -> Result<(), avout::lock::LockError> {
    /// let lease = s.try_acquire_for(std::time::Duration::from_secs(2)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_for(&self, timeout: Duration) -> Result<Option<Lease<C>>, LockError> {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        match self.run(Patience::Millis(ms)).await {
            Err(LockError::TimedOut) => Ok(None),
            other => other.map(Some),
        }
    }

    async fn run(&self, patience: Patience) -> Result<Lease<C>, LockError> {
        let machine = SemaphoreMachine::new(
            &self.path,
            self.max_leases,
            self.zk.new_guid(),
            self.zk.session().id.0,
            patience,
        );
        let mut acquiring = Acquiring {
            machine,
            zk: Some(self.zk.clone()),
            path: self.path.clone(),
        };
        let result = drive(&*self.zk, &mut acquiring.machine).await;
        // Finished: the machine removed its nodes if it gave up.
        acquiring.zk = None;
        Ok(Lease {
            zk: self.zk.clone(),
            acquired: result?,
            released: false,
        })
    }
}

/// A lease acquisition in progress; if dropped before it finishes, removes its nodes.
struct Acquiring<C: Coordination + ?Sized + 'static> {
    machine: SemaphoreMachine,
    /// `Some` until the acquisition finishes.
    zk: Option<Arc<C>>,
    path: String,
}

impl<C: Coordination + ?Sized + 'static> Drop for Acquiring<C> {
    fn drop(&mut self) {
        let Some(zk) = self.zk.take() else { return };
        if !self.machine.in_progress() {
            return;
        }
        // Either node may exist, or be being created: look for both by GUID. Lease first, so
        // a waiter holding the mutex never leaves a lease behind it.
        let dirs = [
            (
                path::join(&self.path, "leases"),
                self.machine.lease_prefix().to_owned(),
            ),
            (
                path::join(&self.path, "locks"),
                self.machine.lock_prefix().to_owned(),
            ),
        ];
        spawn_cleanup(async move {
            for (dir, prefix) in dirs {
                if let Some(node) = find_own_node(&*zk, &dir, &prefix).await? {
                    delete_idempotent(&*zk, &node).await?;
                }
            }
            Ok(())
        });
    }
}

/// One lease of a [`Semaphore`]. Release with [`release`](Self::release); dropping it
/// releases in the background.
///
/// ```no_run
/// # async fn demo(s: avout::recipes::semaphore::Semaphore<avout::zk::ZkClient>) -> Result<(), avout::lock::LockError> {
/// let lease = s.acquire().await?;
/// println!("lease {} (token {})", lease.node(), lease.fencing_token());
/// lease.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the lease releases it"]
pub struct Lease<C: Coordination + ?Sized + 'static> {
    zk: Arc<C>,
    acquired: Acquired,
    released: bool,
}

impl<C: Coordination + ?Sized + 'static> std::fmt::Debug for Lease<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("node", &self.acquired.node)
            .finish()
    }
}

impl<C: Coordination + ?Sized + 'static> Lease<C> {
    /// The lease node's path (`<semaphore>/leases/_c_<GUID>-lease-<seq>`).
    ///
    /// ```no_run
    /// # fn demo(l: avout::recipes::semaphore::Lease<avout::zk::ZkClient>) {
    /// println!("{}", l.node());
    /// # }
    /// ```
    pub fn node(&self) -> &str {
        &self.acquired.node
    }

    /// The lease node's creation zxid: grows with every lease granted, so a resource can
    /// refuse holders older than the leases it has seen expire.
    ///
    /// ```no_run
    /// # fn demo(l: avout::recipes::semaphore::Lease<avout::zk::ZkClient>) {
    /// let token = l.fencing_token();
    /// # }
    /// ```
    pub fn fencing_token(&self) -> i64 {
        self.acquired.fencing_token
    }

    /// Whether the lease is still held, as far as this process can tell
    /// ([`LockStatus::Suspended`] while the connection is down).
    ///
    /// ```no_run
    /// # fn demo(l: avout::recipes::semaphore::Lease<avout::zk::ZkClient>) {
    /// use avout::lock::LockStatus;
    /// if l.status() != LockStatus::Held { /* stop using the resource */ }
    /// # }
    /// ```
    pub fn status(&self) -> LockStatus {
        session_status(&*self.zk)
    }

    /// Resolves when the lease is lost: the session ended or the node was deleted.
    ///
    /// ```no_run
    /// # async fn demo(l: avout::recipes::semaphore::Lease<avout::zk::ZkClient>) {
    /// eprintln!("lease lost: {}", l.lost().await);
    /// # }
    /// ```
    pub async fn lost(&self) -> LockError {
        node_lost(&*self.zk, &self.acquired.node).await
    }

    /// Returns the lease (deletes its node, waking one waiter).
    ///
    /// ```no_run
    /// # async fn demo(l: avout::recipes::semaphore::Lease<avout::zk::ZkClient>) -> Result<(), avout::lock::LockError> {
    /// l.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<(), LockError> {
        self.released = true;
        delete_idempotent(&*self.zk, &self.acquired.node).await?;
        Ok(())
    }
}

impl<C: Coordination + ?Sized + 'static> Drop for Lease<C> {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let zk = self.zk.clone();
        let node = self.acquired.node.clone();
        spawn_cleanup(async move { delete_idempotent(&*zk, &node).await });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::testing::{children, drain};
    use crate::{EventKind, Stat};

    const SESSION: i64 = 0x5e55;

    fn start(max: u32, patience: Patience) -> SemaphoreMachine {
        let mut m = SemaphoreMachine::new("/s", max, 1, SESSION, patience);
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

    fn created(path: String, czxid: i64) -> crate::Result<Reply> {
        Ok(Reply::Created {
            path,
            stat: stat(czxid),
        })
    }

    /// Steps through taking the free mutex; returns the mutex node's path.
    fn take_mutex(m: &mut SemaphoreMachine) -> String {
        let sent = drain(m);
        assert!(
            matches!(&sent[0].1, Request::Create { path, .. } if path.starts_with("/s/locks/_c_") && path.ends_with("-lock-"))
        );
        assert!(
            sent.iter().all(|(t, _)| t.0 % 2 == 0),
            "the mutex machine's tokens"
        );
        let lock = format!("/s/locks/{}0000000000", m.lock_prefix());
        m.handle_reply(Millis(1), sent[0].0, created(lock.clone(), 10));
        m.handle_reply(Millis(1), sent[1].0, children(&[path::name(&lock)]));
        lock
    }

    #[test]
    fn a_free_lease_takes_lock_lease_unlock() {
        let mut m = start(2, Patience::Forever);
        let lock = take_mutex(&mut m);
        let sent = drain(&mut m);
        assert_eq!(sent.len(), 2, "lease create and listing travel together");
        assert!(matches!(&sent[0].1, Request::Create { path, options, .. }
            if path.starts_with("/s/leases/_c_") && path.ends_with("-lease-") && options.mode == CreateMode::EphemeralSequential));
        assert!(matches!(
            &sent[1].1,
            Request::GetChildren { watch: false, .. }
        ));
        let ours = format!("{}0000000004", m.lease_prefix());
        m.handle_reply(
            Millis(2),
            sent[0].0,
            created(format!("/s/leases/{ours}"), 20),
        );
        m.handle_reply(
            Millis(2),
            sent[1].0,
            children(&["_c_x-lease-0000000003", &ours]),
        );
        let sent = drain(&mut m);
        assert_eq!(sent.len(), 1);
        assert_eq!(
            sent[0].1,
            Request::Delete {
                path: lock,
                version: None
            },
            "the mutex is released before the lease is handed out"
        );
        assert_eq!(m.poll_output(), None);
        m.handle_reply(Millis(3), sent[0].0, Ok(Reply::Deleted));
        let lease = m.poll_output().expect("done").expect("leased");
        assert_eq!(lease.node, format!("/s/leases/{ours}"));
        assert_eq!(lease.fencing_token, 20);
    }

    #[test]
    fn a_full_semaphore_waits_on_one_child_watch_while_holding_the_mutex() {
        let mut m = start(1, Patience::Forever);
        take_mutex(&mut m);
        let sent = drain(&mut m);
        let ours = format!("{}0000000002", m.lease_prefix());
        m.handle_reply(
            Millis(2),
            sent[0].0,
            created(format!("/s/leases/{ours}"), 20),
        );
        m.handle_reply(
            Millis(2),
            sent[1].0,
            children(&["_c_x-lease-0000000001", &ours]),
        );
        let sent = drain(&mut m);
        assert_eq!(sent.len(), 1);
        assert!(
            matches!(&sent[0].1, Request::GetChildren { path, watch: true } if path == "/s/leases")
        );
        m.handle_reply(
            Millis(3),
            sent[0].0,
            children(&["_c_x-lease-0000000001", &ours]),
        );
        assert!(drain(&mut m).is_empty(), "waits for the watch");
        m.handle_watch(
            Millis(9),
            sent[0].0,
            WatchedEvent {
                kind: EventKind::NodeChildrenChanged,
                state: SessionState::Connected,
                path: "/s/leases".into(),
            },
        );
        let sent = drain(&mut m);
        assert!(matches!(
            &sent[0].1,
            Request::GetChildren { watch: true, .. }
        ));
        m.handle_reply(Millis(10), sent[0].0, children(&[&ours]));
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[0].1, Request::Delete { path, .. } if path.starts_with("/s/locks/"))
        );
        m.handle_reply(Millis(11), sent[0].0, Ok(Reply::Deleted));
        assert!(m.poll_output().expect("done").is_ok());
    }

    #[test]
    fn timing_out_removes_the_lease_then_the_mutex_node() {
        let mut m = start(1, Patience::Millis(100));
        let lock = take_mutex(&mut m);
        let sent = drain(&mut m);
        let ours = format!("/s/leases/{}0000000002", m.lease_prefix());
        m.handle_reply(Millis(2), sent[0].0, created(ours.clone(), 20));
        m.handle_reply(
            Millis(2),
            sent[1].0,
            children(&["_c_x-lease-0000000001", path::name(&ours)]),
        );
        let sent = drain(&mut m);
        m.handle_reply(
            Millis(3),
            sent[0].0,
            children(&["_c_x-lease-0000000001", path::name(&ours)]),
        );
        assert_eq!(m.poll_timer(), Some(Millis(100)));
        m.handle_timer(Millis(100));
        let sent = drain(&mut m);
        assert_eq!(
            sent[0].1,
            Request::Delete {
                path: ours,
                version: None
            }
        );
        m.handle_reply(Millis(101), sent[0].0, Ok(Reply::Deleted));
        let sent = drain(&mut m);
        assert_eq!(
            sent[0].1,
            Request::Delete {
                path: lock,
                version: None
            }
        );
        m.handle_reply(Millis(102), sent[0].0, Ok(Reply::Deleted));
        assert_eq!(m.poll_output(), Some(Err(LockError::TimedOut)));
    }

    #[test]
    fn an_indeterminate_lease_create_adopts_the_node_it_made() {
        let mut m = start(3, Patience::Forever);
        take_mutex(&mut m);
        let sent = drain(&mut m);
        m.handle_reply(Millis(2), sent[0].0, Err(Error::ConnectionLoss));
        m.handle_reply(Millis(2), sent[1].0, Err(Error::ConnectionLoss));
        assert!(drain(&mut m).is_empty(), "waits before retrying");
        m.handle_session(Millis(3), SessionState::Disconnected);
        m.handle_session(Millis(4), SessionState::Connected);
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[0].1, Request::GetChildren { path, watch: false } if path == "/s/leases")
        );
        let ours = format!("{}0000000000", m.lease_prefix());
        m.handle_reply(Millis(5), sent[0].0, children(&[&ours]));
        let sent = drain(&mut m);
        assert!(matches!(&sent[0].1, Request::Exists { watch: false, .. }));
        m.handle_reply(Millis(6), sent[0].0, Ok(Reply::Exists(Some(stat(30)))));
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[0].1, Request::GetChildren { .. }),
            "no second create"
        );
        m.handle_reply(Millis(7), sent[0].0, children(&[&ours]));
        let sent = drain(&mut m);
        m.handle_reply(Millis(8), sent[0].0, Ok(Reply::Deleted));
        assert_eq!(
            m.poll_output()
                .expect("done")
                .expect("leased")
                .fencing_token,
            30
        );
    }

    #[test]
    fn try_acquire_gives_up_when_full() {
        let mut m = start(1, Patience::None);
        let lock = take_mutex(&mut m);
        let sent = drain(&mut m);
        let ours = format!("/s/leases/{}0000000002", m.lease_prefix());
        m.handle_reply(Millis(2), sent[0].0, created(ours.clone(), 20));
        m.handle_reply(
            Millis(2),
            sent[1].0,
            children(&["_c_x-lease-0000000001", path::name(&ours)]),
        );
        let sent = drain(&mut m);
        assert_eq!(
            sent[0].1,
            Request::Delete {
                path: ours,
                version: None
            }
        );
        m.handle_reply(Millis(3), sent[0].0, Ok(Reply::Deleted));
        let sent = drain(&mut m);
        assert_eq!(
            sent[0].1,
            Request::Delete {
                path: lock,
                version: None
            }
        );
        m.handle_reply(
            Millis(4),
            sent[0].0,
            Err(Error::NoNode {
                path: String::new(),
            }),
        );
        assert_eq!(m.poll_output(), Some(Err(LockError::WouldBlock)));
    }

    #[test]
    fn session_expiry_ends_the_acquisition() {
        let mut m = start(1, Patience::Forever);
        take_mutex(&mut m);
        drain(&mut m);
        m.handle_session(Millis(5), SessionState::Expired);
        assert_eq!(
            m.poll_output(),
            Some(Err(LockError::SessionLost(Error::SessionExpired)))
        );
    }
}
