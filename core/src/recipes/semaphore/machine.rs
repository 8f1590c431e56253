//! The acquisition machine: the mutex (an embedded [`AcquireMachine`], a child with its own
//! tokens), then the lease node (a [`ProtectedCreate`]), then the count.

use super::LEASE_MARKER;
use crate::lock::{AcquireMachine, Acquired, LockError, LockKind, Patience};
use crate::machine::{
    Machine, Millis, Outbox, Protected, ProtectedCreate, Reply, Request, Routes, SessionEvent,
    Stall, Token, earliest,
};
use crate::planted::{Bug, Bugs};
use crate::{Error, ErrorClass, SessionState, WatchedEvent, path};

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
        list: Token,
        listed: Option<Vec<String>>,
    },
    /// Looking for a lease node whose create had an unknown outcome (the protected create's
    /// recovery).
    Recovering,
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

/// Acquires one lease of a semaphore; see the [module docs](super).
///
/// The embedded mutex machine is a child: its requests are relayed under tokens of this
/// machine's, and [`Routes`] brings their replies and watches back to it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SemaphoreMachine {
    leases_path: String,
    max_leases: u32,
    patience: Patience,
    deadline: Option<Millis>,
    lock: AcquireMachine,
    routes: Routes<()>,
    lock_node: Option<String>,
    /// The caller holds the semaphore's mutex already (a quantity acquisition): no locking
    /// and no unlocking here.
    prelocked: bool,
    lease: ProtectedCreate,
    phase: Phase,
    outbox: Outbox<Result<Acquired, LockError>>,
    give_up: Option<LockError>,
    /// The result to return once the mutex is released.
    pending: Option<Result<Acquired, LockError>>,
    retry: Stall<Retry>,
    planted: Bugs,
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
        let leases_path = path::join(path, "leases");
        let lease_prefix = format!("_c_{}-{LEASE_MARKER}", uuid::Uuid::from_u128(guid));
        SemaphoreMachine {
            lease: ProtectedCreate::new(&leases_path, lease_prefix, session),
            leases_path,
            max_leases,
            patience,
            deadline: None,
            lock,
            routes: Routes::default(),
            lock_node: None,
            prelocked: false,
            phase: Phase::Idle,
            outbox: Outbox::default(),
            give_up: None,
            pending: None,
            retry: Stall::default(),
            planted: Bugs::NONE,
        }
    }

    /// The same machine with `planted` bugs on, in its mutex too (none by default; see
    /// [`crate::planted`]).
    ///
    /// ```
    /// use avout::lock::Patience;
    /// use avout::recipes::semaphore::SemaphoreMachine;
    /// let m = SemaphoreMachine::new("/sem", 3, 0x42, 7, Patience::Forever)
    ///     .planted(avout::planted::Bugs::NONE);
    /// assert!(m.lease_prefix().ends_with("-lease-"));
    /// ```
    pub fn planted(mut self, planted: Bugs) -> Self {
        self.lock = self.lock.planted(planted);
        self.planted = planted;
        self
    }

    /// The same machine for a caller that already holds the semaphore's mutex: it creates and
    /// counts its lease without taking or releasing the mutex (used to take several leases
    /// under one hold of it).
    ///
    /// ```
    /// use avout::machine::{Machine, Millis, Request};
    /// use avout::{SessionState, lock::Patience, recipes::semaphore::SemaphoreMachine};
    /// let mut m = SemaphoreMachine::new("/sem", 3, 0x42, 7, Patience::Forever).prelocked();
    /// m.handle_session(Millis(0), SessionState::Connected);
    /// assert!(matches!(m.poll_request(), Some((_, Request::Create { .. }))));
    /// ```
    pub fn prelocked(mut self) -> Self {
        self.prelocked = true;
        self
    }

    /// The prefix of this machine's lease node name (`_c_<GUID>-lease-`).
    ///
    /// ```
    /// # use avout::{lock::Patience, recipes::semaphore::SemaphoreMachine};
    /// let m = SemaphoreMachine::new("/sem", 1, 1, 1, Patience::None);
    /// assert!(m.lease_prefix().starts_with("_c_"));
    /// ```
    pub fn lease_prefix(&self) -> &str {
        self.lease.prefix()
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
        self.outbox.send(request)
    }

    fn finish(&mut self, result: Result<Acquired, LockError>) {
        self.phase = Phase::Done;
        self.retry.cancel();
        self.lease.halt();
        self.outbox.finish(result);
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
        self.lease.create(&mut self.outbox, with_parents);
        let list = self.send(Request::GetChildren {
            path: self.leases_path.clone(),
            watch: false,
        });
        self.phase = Phase::Creating { list, listed: None };
    }

    fn recover(&mut self) {
        self.lease.recover(&mut self.outbox);
        self.phase = Phase::Recovering;
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
        self.retry.cancel();
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
        if self.lease.node_path().is_some()
            && reason == LockError::TimedOut
            && self.planted.contains(Bug::Curator462)
        {
            // The planted CURATOR-462: giving up the wait forgets the lease node.
            self.lease.forget();
            return self.unlock(Err(reason));
        }
        if let Some(path) = self.lease.node_path() {
            // A step scheduled before giving up must not run after it.
            self.retry.cancel();
            let delete = self.send(Request::Delete {
                path,
                version: None,
            });
            self.phase = Phase::Abandoning { delete };
        } else if !self.lease.unknown() {
            self.unlock(Err(reason));
        }
        // Otherwise the create's reply will arrive; `give_up` makes it delete the node then.
    }

    /// Goes on from a step of the lease node's protected create.
    fn protected(&mut self, now: Millis, outcome: Protected, listed: Option<(Token, Vec<String>)>) {
        match (outcome, self.give_up.clone()) {
            (Protected::Created | Protected::Adopted, Some(reason)) => self.abandon(reason),
            (Protected::Created, None) => {
                if let Some((list, children)) = listed {
                    self.decide(children, false, list);
                }
            }
            (Protected::Adopted, None) => self.count(false),
            (Protected::Absent { .. }, Some(reason)) => self.unlock(Err(reason)),
            (Protected::Absent { parents_missing }, None) => self.start_create(parents_missing),
            (Protected::Failed(e), _) => self.failed(now, e, Retry::Recover),
            (Protected::Refused { .. }, _) => unreachable!("nothing rides with a lease's create"),
        }
    }

    /// Counts the leases: ours if at most `max_leases`, else wait.
    fn decide(&mut self, children: Vec<String>, watched: bool, list: Token) {
        let Some((name, czxid)) = self.lease.node().map(|(n, c)| (n.to_owned(), c)) else {
            unreachable!("counting without a lease node")
        };
        let leases = children
            .iter()
            .filter(|c| c.contains(LEASE_MARKER) && path::sequence(c).is_some())
            .count();
        if !children.contains(&name) {
            // Our lease node is gone (deleted by an administrator, or by an expiry we have
            // not been told of yet): create another; a lost session fails the create.
            self.lease.forget();
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
            ErrorClass::Indeterminate => self.retry.start(step, now),
            ErrorClass::SessionLost => self.finish(Err(LockError::SessionLost(error))),
            ErrorClass::Rejected => match step {
                // Our nodes may still exist: remove them before surfacing the refusal.
                Retry::Recover | Retry::Count { .. } => self.abandon(LockError::Zk(error)),
                Retry::Abandon => self.unlock(Err(LockError::Zk(error))),
                Retry::Unlock => self.finish(Err(LockError::Zk(error))),
            },
        }
    }

    /// The planted CURATOR-335: a count that failed with a connection loss after the lease
    /// node was made fails the acquisition, and the lease node stays. Whether it did.
    fn orphaned(&mut self, error: &Error) -> bool {
        if !(error.is_indeterminate() && self.planted.contains(Bug::Curator335)) {
            return false;
        }
        self.lease.forget();
        self.unlock(Err(LockError::Zk(error.clone())));
        true
    }

    fn run_retry(&mut self, step: Retry) {
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
            phase @ (Phase::Creating { .. } | Phase::Recovering) if self.lease.expects(token) => {
                let listed = match phase {
                    Phase::Creating {
                        list,
                        listed: Some(children),
                    } => Some((list, children)),
                    _ => None,
                };
                if let Some(outcome) = self.lease.handle_reply(&mut self.outbox, token, reply) {
                    self.protected(now, outcome, listed);
                }
            }
            Phase::Creating { list, listed: None } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => {
                    if self.lease.node().is_some() {
                        self.decide(children, false, list);
                    } else {
                        self.phase = Phase::Creating {
                            list,
                            listed: Some(children),
                        };
                    }
                }
                // The create's reply decides; a failed listing is simply redone.
                Err(e) => {
                    if self.lease.node().is_some() && !self.orphaned(&e) {
                        self.count(false);
                    }
                }
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Counting {
                list,
                watch,
                armed: false,
            } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => self.decide(children, watch, list),
                Err(Error::NoNode { .. }) => {
                    self.lease.forget();
                    self.start_create(true);
                }
                Err(e) => {
                    if !self.orphaned(&e) {
                        self.failed(now, e, Retry::Count { watch });
                    }
                }
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Abandoning { delete } if token == delete => match reply {
                Ok(_) | Err(Error::NoNode { .. }) => {
                    self.lease.forget();
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
        if let Some(next) = self.outbox.pop() {
            return Some(next);
        }
        if self.phase == Phase::Locking {
            let request = self.lock.poll_request()?;
            return Some(self.routes.relay(&mut self.outbox, (), request));
        }
        None
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.routes.get(token) {
            Some(((), inner)) if self.phase == Phase::Locking => {
                self.lock.handle_reply(now, inner, reply);
                self.after_lock_step();
            }
            Some(_) => {}
            None => self.handle_own_reply(now, token, reply),
        }
    }

    fn handle_watch(&mut self, now: Millis, token: Token, event: WatchedEvent) {
        if let Some(((), inner)) = self.routes.get(token) {
            if self.phase == Phase::Locking {
                self.lock.handle_watch(now, inner, event);
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
        match self.outbox.session(state) {
            SessionEvent::Ignored => return,
            SessionEvent::Ended(error) => {
                // The session's ephemerals, mutex and lease nodes included, are gone with it.
                self.lease.forget();
                self.lock_node = None;
                return self.finish(Err(LockError::SessionLost(error)));
            }
            SessionEvent::Start => {
                self.deadline = match self.patience {
                    Patience::Millis(ms) => Some(now.plus(ms)),
                    Patience::Forever | Patience::None => None,
                };
                if self.prelocked {
                    return self.start_create(false);
                }
                self.phase = Phase::Locking;
            }
            SessionEvent::Reconnected | SessionEvent::Disconnected => {}
        }
        if self.phase == Phase::Locking {
            self.lock.handle_session(now, state);
            return self.after_lock_step();
        }
        if state == SessionState::Connected
            && let Some(step) = self.retry.take()
        {
            self.run_retry(step);
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.phase == Phase::Locking {
            // The mutex machine has the same deadline and gives up by itself.
            self.lock.handle_timer(now);
            return self.after_lock_step();
        }
        if let Some(step) = self.retry.due(now) {
            self.run_retry(step);
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
        earliest(self.retry.deadline(), self.deadline)
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.outbox.take_output()
    }
}
