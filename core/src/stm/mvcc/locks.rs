//! Lock acquisitions run inside another machine: several [`AcquireMachine`]s at once, their
//! requests sent in the same burst as the host's own, their tokens tagged with their index.

use super::Halt;
use crate::lock::{AcquireMachine, Acquired, LockError, LockKind, Patience};
use crate::machine::{Machine, Millis, Reply, Request, Token};
use crate::planted::{Bug, Bugs};
use crate::{SessionState, WatchedEvent};

/// Host tokens stay below this; a lock's token is `(index + 1) << SHIFT | inner`.
const SHIFT: u32 = 40;

/// What the host needs to start one acquisition.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct LockRequest {
    /// The ref the lock protects (for the host's bookkeeping).
    pub(crate) name: String,
    /// The lock directory.
    pub(crate) lock_path: String,
    /// Read (ensure) or write (commit).
    pub(crate) kind: LockKind,
    /// The GUID naming the node.
    pub(crate) guid: u128,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Slot {
    name: String,
    lock_path: String,
    machine: AcquireMachine,
    result: Option<Result<Acquired, LockError>>,
}

/// Acquisitions in flight; see the [module docs](self).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Locks {
    slots: Vec<Slot>,
    /// The bugs planted in the acquisitions.
    pub(crate) planted: Bugs,
}

/// A lock node a transaction holds, or may hold (its create's outcome unknown).
///
/// ```
/// let h = avout::stm::mvcc::Held::Node("/s/refs/a/lock/_c_x-__WRIT__0000000001".into());
/// assert!(matches!(h, avout::stm::mvcc::Held::Node(_)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Held {
    /// The node's path.
    Node(String),
    /// A node under `lock_path` whose name starts with `prefix` may exist.
    Unknown {
        /// The lock directory.
        lock_path: String,
        /// The node name's prefix.
        prefix: String,
    },
}

impl Locks {
    /// Starts acquisitions (they send their first requests at the host's next poll).
    pub(crate) fn start(
        &mut self,
        now: Millis,
        state: SessionState,
        session: i64,
        patience: Patience,
        requests: Vec<LockRequest>,
    ) {
        for r in requests {
            let mut machine =
                AcquireMachine::new(&r.lock_path, r.kind, r.guid, session, patience, vec![])
                    .planted(self.planted);
            if !self.planted.contains(Bug::MvccLockWaitFromFirstRequest) {
                machine = machine.blocked_patience();
            }
            machine.handle_session(now, state);
            let result = machine.poll_output();
            self.slots.push(Slot {
                name: r.name,
                lock_path: r.lock_path,
                machine,
                result,
            });
        }
    }

    /// Whether every acquisition has finished.
    pub(crate) fn all_done(&self) -> bool {
        self.slots.iter().all(|s| s.result.is_some())
    }

    /// The first failure, if any acquisition failed, as the halt it makes of the try: a lost
    /// session or a ZooKeeper error as such, a lock not granted (in time) a conflict on its ref.
    pub(crate) fn failure(&self) -> Option<Halt> {
        self.slots.iter().find_map(|s| match &s.result {
            Some(Err(LockError::SessionLost(e))) => Some(Halt::SessionLost(e.clone())),
            Some(Err(LockError::Zk(e))) => Some(Halt::Zk(e.clone())),
            Some(Err(_)) => Some(Halt::Conflict(Some(s.name.clone()))),
            _ => None,
        })
    }

    /// When these locks or the machine holding them (its `redo_at`) next want a timer.
    pub(crate) fn next_timer(&self, redo_at: Option<Millis>) -> Option<Millis> {
        match (redo_at, self.poll_timer()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The nodes acquired, by ref name.
    pub(crate) fn acquired(&self) -> Vec<(String, String)> {
        self.slots
            .iter()
            .filter_map(|s| match &s.result {
                Some(Ok(a)) => Some((s.name.clone(), a.node.clone())),
                _ => None,
            })
            .collect()
    }

    /// Every node these acquisitions hold or may hold: what a cleanup must remove.
    pub(crate) fn held(&self) -> Vec<Held> {
        let mut held = Vec::new();
        for s in &self.slots {
            match &s.result {
                Some(Ok(a)) => held.push(Held::Node(a.node.clone())),
                // A failed acquisition removed its node (or its session is gone).
                Some(Err(_)) => {}
                None => {
                    if let Some(node) = s.machine.node_path() {
                        held.push(Held::Node(node));
                    } else if s.machine.node_unknown() {
                        held.push(Held::Unknown {
                            lock_path: s.lock_path.clone(),
                            prefix: s.machine.prefix().to_owned(),
                        });
                    }
                }
            }
        }
        held
    }

    pub(crate) fn poll_request(&mut self) -> Option<(Token, Request)> {
        for (i, s) in self.slots.iter_mut().enumerate() {
            if s.result.is_some() {
                continue;
            }
            if let Some((Token(t), request)) = s.machine.poll_request() {
                debug_assert!(t < 1 << SHIFT);
                return Some((Token(((i as u64 + 1) << SHIFT) | t), request));
            }
        }
        None
    }

    /// Whether `token` is one of the locks' (else it is the host's).
    pub(crate) fn owns(token: Token) -> bool {
        token.0 >> SHIFT != 0
    }

    fn route(&mut self, token: Token) -> Option<(&mut Slot, Token)> {
        let index = (token.0 >> SHIFT) as usize;
        let inner = Token(token.0 & ((1 << SHIFT) - 1));
        let slot = self.slots.get_mut(index.checked_sub(1)?)?;
        if slot.result.is_some() {
            return None;
        }
        Some((slot, inner))
    }

    pub(crate) fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        if let Some((slot, inner)) = self.route(token) {
            slot.machine.handle_reply(now, inner, reply);
            slot.result = slot.machine.poll_output();
        }
    }

    pub(crate) fn handle_watch(&mut self, now: Millis, token: Token, event: WatchedEvent) {
        if let Some((slot, inner)) = self.route(token) {
            slot.machine.handle_watch(now, inner, event);
            slot.result = slot.machine.poll_output();
        }
    }

    pub(crate) fn handle_session(&mut self, now: Millis, state: SessionState) {
        for s in self.slots.iter_mut().filter(|s| s.result.is_none()) {
            s.machine.handle_session(now, state);
            s.result = s.machine.poll_output();
        }
    }

    pub(crate) fn handle_timer(&mut self, now: Millis) {
        for s in self.slots.iter_mut().filter(|s| s.result.is_none()) {
            if s.machine.poll_timer().is_some_and(|at| at <= now) {
                s.machine.handle_timer(now);
                s.result = s.machine.poll_output();
            }
        }
    }

    pub(crate) fn poll_timer(&self) -> Option<Millis> {
        self.slots
            .iter()
            .filter(|s| s.result.is_none())
            .filter_map(|s| s.machine.poll_timer())
            .min()
    }
}
