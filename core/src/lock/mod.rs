//! Distributed locks on ZooKeeper's lock recipes: [`Mutex`] (exclusive, reentrant),
//! [`RwLock`] (the shared-lock recipe: readers share, writers exclude everyone), both
//! [revocable] on request, [`MultiLock`] (all or nothing over several mutexes), the
//! acquisition machine they all run ([`AcquireMachine`]) and the
//! machine that watches a held node until it is lost ([`MonitorMachine`]). Every hold is a
//! [`LockGuard`].
//!
//! Lock nodes are named as Apache Curator names them (`_c_<GUID>-lock-<seq>`,
//! `_c_<GUID>-__READ__<seq>`, `_c_<GUID>-__WRIT__<seq>`), so a Rust process and a Java process
//! using Curator's `InterProcessMutex` or `InterProcessReadWriteLock` on the same path exclude
//! each other.
//!
//! # Connection loss, session expiry, cancellation
//!
//! - A connection loss during acquisition is recovered: the machine finds its node by the
//!   GUID in its name (checking that this session owns it) instead of queueing a second one.
//! - A session expiry ends an acquisition with [`LockError::SessionLost`], and ends every hold:
//!   [`LockGuard::status`] reports it and [`LockGuard::lost`] resolves. A holder that was
//!   paused (GC, SIGSTOP) past its session timeout may not know yet; use the
//!   [fencing token](LockGuard::fencing_token) or [`LockGuard::fenced`] writes so a resource
//!   refuses it. A guard keeps the session it was acquired on and stays lost; the same
//!   handle's next acquisition runs on the client's next session (it does not join the lost
//!   hold), queueing behind the old session's node until the service has removed it.
//! - Dropping an acquisition future removes the node it created (in a background task, since
//!   `Drop` cannot wait), and sends alone the deferred release it took to carry if its `multi`
//!   was not sent yet or may not have applied; dropping a guard releases like
//!   [`LockGuard::unlock`]. Dropping the handle itself leaves a deferred release to its task,
//!   which sends it when the linger ends.
//! - [`LockGuard::unlock`] returns at once. A handle that locks again promptly after it
//!   unlocks *defers* its releases: the node's delete rides with the next acquisition (one
//!   `multi` deletes the old node and queues the new one: a warm lock–unlock cycle is one
//!   write), or, if none comes within [`RELEASE_LINGER`] (a millisecond), a background task
//!   sends it alone; any other release is sent at once. A background task checks the
//!   delete's reply and repeats it after a connection loss (a release deferred while the
//!   connection is down goes out when it is back); after a session loss the node went with
//!   the session, and a deferred release of an ended session is dropped, never carried by an
//!   acquisition on the client's next session. [`LockGuard::unlock_now`] never defers, and returns when the
//!   delete is ordered on the session, ahead of everything the session sends later. Either
//!   way a waiter whose watched node was the last in its way takes the lock on the deletion
//!   event without re-reading the children.

mod acquire;
mod monitor;
mod multi;
mod mutex;
mod release;
pub mod revocable;
mod rwlock;
mod side;

pub use acquire::{AcquireMachine, Acquired, LockKind, Patience, blocked_wait};
pub use monitor::MonitorMachine;
pub use multi::{MultiLock, MultiLockGuard};
pub use mutex::{LockGuard, LockStatus, Mutex, MutexGuard};
pub(crate) use mutex::{node_lost, session_status};
pub use release::{RELEASE_LINGER, ReleaseMachine};
pub(crate) use revocable::pause_for_retry;
pub use revocable::{REVOKE_MESSAGE, RevocationMachine, holders, revoke, revoke_holders};
pub use rwlock::{ReadGuard, RwLock, WriteGuard};
pub(crate) use side::{acquire_node, delete_idempotent, find_own_node, spawn_cleanup};

use crate::Error;

/// Why a lock was not acquired, or was lost.
///
/// ```
/// use avout::lock::LockError;
/// assert_eq!(LockError::TimedOut.to_string(), "timed out waiting for the lock");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// `try_lock` found the lock held.
    #[error("the lock is held by another owner")]
    WouldBlock,
    /// `try_lock_for` ran out of time.
    #[error("timed out waiting for the lock")]
    TimedOut,
    /// The session ended; no lock of it is held any more.
    #[error("session lost: {0}")]
    SessionLost(Error),
    /// The lock node was deleted while held (by an administrator, or by expiry).
    #[error("lock node {node} was deleted")]
    NodeDeleted {
        /// The deleted node.
        node: String,
    },
    /// The handle holds the read side of a read-write lock and asked for the write side,
    /// which would wait for its own read node forever (upgrades are not supported; release
    /// the read lock first, or take the write lock first and the read lock under it).
    #[error("a read holder cannot take the write lock of the same read-write lock")]
    WouldDeadlock,
    /// The coordination service refused a request (bad path, no access, …).
    #[error(transparent)]
    Zk(Error),
}

impl From<Error> for LockError {
    fn from(error: Error) -> Self {
        if error.is_session_lost() {
            LockError::SessionLost(error)
        } else {
            LockError::Zk(error)
        }
    }
}
