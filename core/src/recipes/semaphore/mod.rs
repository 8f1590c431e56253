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
//!   with [`Lease::fencing_token`]. The same [`Semaphore`] handle's next acquisition runs on
//!   the client's next session.
//! - Dropping an acquisition future removes the mutex and lease nodes it created or may have
//!   created (in a background task); dropping a [`Lease`] releases it like
//!   [`Lease::release`].
//!
//! # Several leases at once
//!
//! [`Semaphore::acquire_many`] takes `n` leases all or nothing (Curator's `acquire(qty)`):
//! it takes the mutex once, then creates and counts `n` lease nodes one after the other under
//! that one hold, waiting for each to fit, then releases the mutex. Because only the mutex
//! holder creates lease nodes, two processes each wanting several leases can never end up
//! each holding part of what they want and waiting for the other (Curator takes the mutex per
//! lease, so two `acquire(3)` on a semaphore of 4 can each get 2 and wait for ever). If it
//! fails, times out or is cancelled part-way, the leases taken so far are released; they are
//! never handed out partially nor leaked.
//!
//! [`AcquireMachine`]: crate::lock::AcquireMachine

use std::time::Duration;

use crate::client::Session;
use crate::lock::{
    Acquired, LockError, LockStatus, Patience, delete_idempotent, find_own_node, node_lost,
    session_status, spawn_cleanup,
};
use crate::machine::drive;
use crate::planted::Bugs;
use crate::{Client, Error, path};

/// The marker in lease node names, as Curator spells it.
const LEASE_MARKER: &str = "lease-";

mod machine;
mod many;
pub use machine::SemaphoreMachine;

/// A distributed counting semaphore with `max_leases` leases; see the [module docs](self).
///
/// Each acquisition is a separate lease (there is no reentrancy: a task that acquires twice
/// holds two leases).
///
/// ```no_run
/// use avout::recipes::semaphore::Semaphore;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::lock::LockError> {
/// let downloads = Semaphore::new(client, "/limits/downloads", 4)?;
/// let lease = downloads.acquire().await?;
/// // ... at most four of these run at once, cluster-wide ...
/// lease.release().await?;
/// # Ok(()) }
/// ```
pub struct Semaphore {
    client: Client,
    path: String,
    max_leases: u32,
    planted: Bugs,
}

impl Clone for Semaphore {
    fn clone(&self) -> Self {
        Semaphore {
            client: self.client.clone(),
            path: self.path.clone(),
            max_leases: self.max_leases,
            planted: self.planted,
        }
    }
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("path", &self.path)
            .field("max_leases", &self.max_leases)
            .finish()
    }
}

impl Semaphore {
    /// A handle on the semaphore at `path` with `max_leases` leases (the nodes are created
    /// on first use). Every participant must use the same `max_leases`.
    ///
    /// Fails for an invalid path, or zero leases.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// use avout::recipes::semaphore::Semaphore;
    /// assert!(Semaphore::new(&client, "/sem", 0).is_err());
    /// assert!(Semaphore::new(client, "/sem", 2).is_ok());
    /// # }
    /// ```
    pub fn new(
        client: &Client,
        path: impl Into<String>,
        max_leases: u32,
    ) -> Result<Self, LockError> {
        let path = path.into();
        path::validate_path(&path, false)?;
        if max_leases == 0 {
            return Err(LockError::Zk(Error::BadArguments(
                "a semaphore needs at least one lease".into(),
            )));
        }
        Ok(Semaphore {
            client: client.clone(),
            path,
            max_leases,
            planted: Bugs::NONE,
        })
    }

    /// The same handle with `bugs` planted in its acquisitions (none by default; see
    /// [`crate::planted`]).
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// use avout::recipes::semaphore::Semaphore;
    /// let s = Semaphore::new(client, "/sem", 2).unwrap().planted(avout::planted::Bugs::NONE);
    /// # }
    /// ```
    pub fn planted(mut self, bugs: Bugs) -> Self {
        self.planted = bugs;
        self
    }

    /// The semaphore's path.
    ///
    /// ```no_run
    /// # fn demo(s: avout::recipes::semaphore::Semaphore) {
    /// println!("{}", s.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How many leases the semaphore has.
    ///
    /// ```no_run
    /// # fn demo(s: avout::recipes::semaphore::Semaphore) {
    /// assert!(s.max_leases() >= 1);
    /// # }
    /// ```
    pub fn max_leases(&self) -> u32 {
        self.max_leases
    }

    /// Waits for a lease. Fails only when the session is lost or a request is refused.
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::semaphore::Semaphore) -> Result<(), avout::lock::LockError> {
    /// let lease = s.acquire().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<Lease, LockError> {
        self.run(Patience::Forever).await
    }

    /// Takes a lease if one is free now (and no other process is acquiring); `Ok(None)`
    /// otherwise.
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::semaphore::Semaphore) -> Result<(), avout::lock::LockError> {
    /// if let Some(lease) = s.try_acquire().await? { lease.release().await?; }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<Lease>, LockError> {
        match self.run(Patience::None).await {
            Err(LockError::WouldBlock) => Ok(None),
            other => other.map(Some),
        }
    }

    /// Waits at most `timeout` for a lease; `Ok(None)` if none was acquired in time (the
    /// nodes created are removed before returning).
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::semaphore::Semaphore) -> Result<(), avout::lock::LockError> {
    /// let lease = s.try_acquire_for(std::time::Duration::from_secs(2)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_for(&self, timeout: Duration) -> Result<Option<Lease>, LockError> {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        match self.run(Patience::Millis(ms)).await {
            Err(LockError::TimedOut) => Ok(None),
            other => other.map(Some),
        }
    }

    async fn run(&self, patience: Patience) -> Result<Lease, LockError> {
        let zk = self.client.current_session().await?;
        let machine = SemaphoreMachine::new(
            &self.path,
            self.max_leases,
            zk.new_guid(),
            zk.session().id.0,
            patience,
        )
        .planted(self.planted);
        self.drive_lease(zk, machine).await
    }

    /// Runs `machine` to a lease. Cancellation-safe: if dropped first, the nodes the machine
    /// created, or may have created, are removed in the background.
    async fn drive_lease(
        &self,
        zk: Session,
        machine: SemaphoreMachine,
    ) -> Result<Lease, LockError> {
        let mut acquiring = Acquiring {
            machine,
            zk: Some(zk.clone()),
            path: self.path.clone(),
        };
        let result = drive(&*zk, &mut acquiring.machine).await;
        // Finished: the machine removed its nodes if it gave up.
        acquiring.zk = None;
        Ok(Lease {
            zk,
            acquired: result?,
            released: false,
        })
    }
}

/// A lease acquisition in progress; if dropped before it finishes, removes its nodes.
struct Acquiring {
    machine: SemaphoreMachine,
    /// `Some` until the acquisition finishes.
    zk: Option<Session>,
    path: String,
}

impl Drop for Acquiring {
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
/// # async fn demo(s: avout::recipes::semaphore::Semaphore) -> Result<(), avout::lock::LockError> {
/// let lease = s.acquire().await?;
/// println!("lease {} (token {})", lease.node(), lease.fencing_token());
/// lease.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the lease releases it"]
pub struct Lease {
    zk: Session,
    acquired: Acquired,
    released: bool,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("node", &self.acquired.node)
            .finish()
    }
}

impl Lease {
    /// The lease node's path (`<semaphore>/leases/_c_<GUID>-lease-<seq>`).
    ///
    /// ```no_run
    /// # fn demo(l: avout::recipes::semaphore::Lease) {
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
    /// # fn demo(l: avout::recipes::semaphore::Lease) {
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
    /// # fn demo(l: avout::recipes::semaphore::Lease) {
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
    /// # async fn demo(l: avout::recipes::semaphore::Lease) {
    /// eprintln!("lease lost: {}", l.lost().await);
    /// # }
    /// ```
    pub async fn lost(&self) -> LockError {
        node_lost(&*self.zk, &self.acquired.node).await
    }

    /// Returns the lease (deletes its node, waking one waiter).
    ///
    /// ```no_run
    /// # async fn demo(l: avout::recipes::semaphore::Lease) -> Result<(), avout::lock::LockError> {
    /// l.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<(), LockError> {
        self.released = true;
        delete_idempotent(&*self.zk, &self.acquired.node).await?;
        Ok(())
    }
}

impl Drop for Lease {
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
mod tests;
