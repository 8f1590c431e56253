//! Distributed locks on ZooKeeper's lock recipe: [`Mutex`] (exclusive, reentrant) and the
//! acquisition machine it runs ([`AcquireMachine`]), which the read-write lock shares.
//!
//! Lock nodes are named as Apache Curator names them (`_c_<GUID>-lock-<seq>`), so a Rust
//! process and a Java process using Curator's `InterProcessMutex` on the same path exclude
//! each other.
//!
//! # Connection loss, session expiry, cancellation
//!
//! - A connection loss during acquisition is recovered: the machine finds its node by the
//!   GUID in its name (checking that this session owns it) instead of queueing a second one.
//! - A session expiry ends an acquisition with [`LockError::SessionLost`], and ends every hold:
//!   [`MutexGuard::status`] reports it and [`MutexGuard::lost`] resolves. A holder that was
//!   paused (GC, SIGSTOP) past its session timeout may not know yet; use the
//!   [fencing token](MutexGuard::fencing_token) or [`MutexGuard::fenced`] writes so a resource
//!   refuses it.
//! - Dropping an acquisition future removes the node it created (in a background task, since
//!   `Drop` cannot wait); dropping a guard releases like [`MutexGuard::unlock`].

mod acquire;
mod mutex;

pub use acquire::{AcquireMachine, Acquired, LockKind, Patience};
pub use mutex::{LockStatus, Mutex, MutexGuard};

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
