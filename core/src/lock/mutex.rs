//! The reentrant exclusive lock, and the guard it shares with both sides of the
//! [read-write lock](super::RwLock).

use std::sync::Arc;
use std::time::Duration;

use crate::client::Session;
use crate::machine::drive;
use crate::planted::Bugs;
use crate::sync::lock;
use crate::{Client, Coordination, Error, Op, OpResult, SessionState, path};

use super::side::{Side, spawn_cleanup};
use super::{Acquired, LockError, LockKind, Patience};

/// Turns an acquisition with a timeout into `Ok(None)` when it timed out.
pub(super) fn timed<T>(result: Result<T, LockError>) -> Result<Option<T>, LockError> {
    match result {
        Err(LockError::TimedOut) => Ok(None),
        other => other.map(Some),
    }
}

/// Turns an immediate acquisition into `Ok(None)` when the lock was held.
pub(super) fn immediate<T>(result: Result<T, LockError>) -> Result<Option<T>, LockError> {
    match result {
        Err(LockError::WouldBlock) => Ok(None),
        other => other.map(Some),
    }
}

pub(super) fn patience_for(timeout: Duration) -> Patience {
    Patience::Millis(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX))
}

/// A distributed, reentrant, exclusive lock (ZooKeeper's lock recipe, Curator-compatible).
///
/// Reentrancy is per handle: while a guard from this handle is alive, `lock` on the same
/// handle succeeds at once and increments a hold count; the node is deleted when the last
/// guard goes. Give each task that must be excluded its own handle.
///
/// See the [module docs](super) for connection loss, expiry and cancellation.
///
/// ```no_run
/// use avout::lock::Mutex;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::lock::LockError> {
/// let mutex = Mutex::new(client, "/locks/invoices")?;
/// let guard = mutex.lock().await?;
/// // ... critical section; `guard.fencing_token()` orders holders ...
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
pub struct Mutex {
    side: Arc<Side>,
}

impl Clone for Mutex {
    fn clone(&self) -> Self {
        Mutex {
            side: self.side.clone(),
        }
    }
}

impl std::fmt::Debug for Mutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mutex")
            .field("path", &self.side.path)
            .finish()
    }
}

impl Mutex {
    /// A handle on the lock at `path` (created with its parents on first use).
    ///
    /// Fails with [`Error::InvalidPath`] for an invalid path.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// assert!(avout::lock::Mutex::new(client, "no-slash").is_err());
    /// # }
    /// ```
    pub fn new(client: &Client, path: impl Into<String>) -> Result<Self, LockError> {
        let path = path.into();
        path::validate_path(&path, false)?;
        Ok(Mutex {
            side: Side::new(client, path, LockKind::Exclusive),
        })
    }

    /// The same handle with `bugs` planted in its acquisitions (none by default; see
    /// [`crate::planted`]).
    ///
    /// # Panics
    ///
    /// If the handle has been cloned: bugs are planted in a new handle, before it is shared.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// let m = avout::lock::Mutex::new(client, "/l").unwrap().planted(avout::planted::Bugs::NONE);
    /// # }
    /// ```
    pub fn planted(mut self, bugs: Bugs) -> Self {
        Side::plant(&mut self.side, bugs);
        self
    }

    /// The lock's path.
    ///
    /// ```no_run
    /// # fn demo(m: avout::lock::Mutex) {
    /// println!("{}", m.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        self.side.path()
    }

    /// Waits until the lock is acquired. Fails only when the session is lost or a request
    /// is refused (for example by an ACL).
    ///
    /// ```no_run
    /// # async fn demo(m: avout::lock::Mutex) -> Result<(), avout::lock::LockError> {
    /// let guard = m.lock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock(&self) -> Result<MutexGuard, LockError> {
        self.side
            .acquire(Patience::Forever, || Ok(Vec::new()))
            .await
    }

    /// Acquires the lock if it is free now; `Ok(None)` if it is held.
    ///
    /// ```no_run
    /// # async fn demo(m: avout::lock::Mutex) -> Result<(), avout::lock::LockError> {
    /// if let Some(guard) = m.try_lock().await? {
    ///     guard.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock(&self) -> Result<Option<MutexGuard>, LockError> {
        immediate(self.side.acquire(Patience::None, || Ok(Vec::new())).await)
    }

    /// Waits at most `timeout` for the lock; `Ok(None)` if it was not acquired in time (the
    /// queued node is removed before returning).
    ///
    /// ```no_run
    /// # async fn demo(m: avout::lock::Mutex) -> Result<(), avout::lock::LockError> {
    /// use std::time::Duration;
    /// match m.try_lock_for(Duration::from_millis(500)).await? {
    ///     Some(guard) => guard.unlock().await?,
    ///     None => eprintln!("busy"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_for(&self, timeout: Duration) -> Result<Option<MutexGuard>, LockError> {
        timed(
            self.side
                .acquire(patience_for(timeout), || Ok(Vec::new()))
                .await,
        )
    }
}

/// Whether a guard still holds its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockStatus {
    /// Held, and the session is connected.
    Held,
    /// The connection is down: the lock is held if the session survives, which this process
    /// cannot know until it reconnects. Stop touching the guarded resource.
    Suspended,
    /// The session ended: the lock is not held.
    Lost,
}

/// What the session's state says about anything its ephemeral nodes stand for.
pub(crate) fn session_status<C: Coordination + ?Sized>(zk: &C) -> LockStatus {
    match zk.session_state() {
        SessionState::Connected => LockStatus::Held,
        SessionState::Disconnected => LockStatus::Suspended,
        _ => LockStatus::Lost,
    }
}

/// Resolves when `node` (an ephemeral of this session) is gone: the session ended or the node
/// was deleted. Costs one exists watch at a time: [`MonitorMachine`](super::MonitorMachine),
/// driven.
pub(crate) async fn node_lost<C: Coordination + ?Sized>(zk: &C, node: &str) -> LockError {
    drive(zk, &mut super::MonitorMachine::new(node)).await
}

/// Proof of holding a lock: a [`Mutex`], or either side of a [`RwLock`](super::RwLock).
/// Release with [`unlock`](Self::unlock); dropping the guard releases in the background.
///
/// ```no_run
/// # async fn demo(m: avout::lock::Mutex) -> Result<(), avout::lock::LockError> {
/// let guard: avout::lock::LockGuard = m.lock().await?;
/// println!("{} holds token {}", guard.node(), guard.fencing_token());
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard releases the lock"]
pub struct LockGuard {
    side: Arc<Side>,
    acquired: Acquired,
    /// The session the lock is held with (not necessarily the client's current one).
    session: Session,
    released: bool,
}

/// The guard of a [`Mutex`].
pub type MutexGuard = LockGuard;

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("kind", &self.side.kind)
            .field("node", &self.acquired.node)
            .field("fencing_token", &self.acquired.fencing_token)
            .finish()
    }
}

impl LockGuard {
    /// A guard of one hold of `side`'s node `acquired`, on `session`.
    pub(super) fn new(side: Arc<Side>, acquired: Acquired, session: Session) -> Self {
        LockGuard {
            side,
            acquired,
            session,
            released: false,
        }
    }

    /// The lock node's path (Curator's naming: `<lock>/_c_<GUID>-lock-<seq>`, or `__READ__` /
    /// `__WRIT__` for a read-write lock).
    ///
    /// ```no_run
    /// # fn demo(g: avout::lock::MutexGuard) {
    /// println!("holding {}", g.node());
    /// # }
    /// ```
    pub fn node(&self) -> &str {
        &self.acquired.node
    }

    /// Which lock this guard holds.
    ///
    /// ```no_run
    /// # fn demo(g: avout::lock::MutexGuard) {
    /// assert_eq!(g.kind(), avout::lock::LockKind::Exclusive);
    /// # }
    /// ```
    pub fn kind(&self) -> LockKind {
        self.side.kind
    }

    /// The session the lock is held with.
    pub(super) fn zk(&self) -> &Session {
        &self.session
    }

    /// A number that grows with every acquisition of this lock (the node's creation zxid).
    /// A resource that remembers the largest token it has seen can refuse a stale holder.
    ///
    /// ```no_run
    /// # fn demo(g: avout::lock::MutexGuard) {
    /// let token = g.fencing_token();
    /// # }
    /// ```
    pub fn fencing_token(&self) -> i64 {
        self.acquired.fencing_token
    }

    /// Whether the lock is still held, as far as this process can tell.
    ///
    /// ```no_run
    /// # fn demo(g: avout::lock::MutexGuard) {
    /// use avout::lock::LockStatus;
    /// if g.status() != LockStatus::Held { /* stop writing */ }
    /// # }
    /// ```
    pub fn status(&self) -> LockStatus {
        session_status(&*self.session)
    }

    /// Resolves when the lock is lost: the session ended or the node was deleted. Awaiting it
    /// costs one watch on the lock node.
    ///
    /// ```no_run
    /// # async fn demo(g: avout::lock::MutexGuard) {
    /// let reason = g.lost().await;
    /// eprintln!("lock lost: {reason}");
    /// # }
    /// ```
    pub async fn lost(&self) -> LockError {
        node_lost(&*self.session, &self.acquired.node).await
    }

    /// Applies `ops` atomically only if this guard's lock node still exists, so a holder that
    /// lost the lock without knowing cannot write. The results exclude the check.
    ///
    /// Fails with [`LockError::NodeDeleted`] if the lock was lost.
    ///
    /// ```no_run
    /// # async fn demo(g: avout::lock::MutexGuard) -> Result<(), avout::lock::LockError> {
    /// use avout::Op;
    /// g.fenced(vec![Op::set_data("/accounts/42", b"100".to_vec(), None)]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn fenced(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, LockError> {
        let mut all = Vec::with_capacity(ops.len() + 1);
        all.push(Op::check(self.acquired.node.clone(), None));
        all.extend(ops);
        match self.session.multi(&all).await {
            Ok(mut results) => {
                results.remove(0);
                Ok(results)
            }
            Err(Error::Multi { index: 0, .. }) => Err(LockError::NodeDeleted {
                node: self.acquired.node.clone(),
            }),
            Err(Error::Multi { index, source }) => Err(LockError::Zk(Error::Multi {
                index: index - 1,
                source,
            })),
            Err(e) => Err(e.into()),
        }
    }

    /// Releases this hold; the node is deleted when the last hold of the handle goes.
    ///
    /// # What returning means
    ///
    /// `unlock` returns at once. When this handle locked again within
    /// [`RELEASE_LINGER`](super::RELEASE_LINGER) of its previous release (a loop that locks
    /// right after it unlocks), the release is **deferred**: nothing is sent yet, and the lock
    /// node's delete goes out with whichever comes first:
    ///
    /// - this handle's next acquisition on the same session (either side of a read-write
    ///   lock handle), whose create carries it: one `multi` deletes the old node and queues
    ///   the new one, so such a loop pays one write per cycle instead of two;
    /// - the end of [`RELEASE_LINGER`](super::RELEASE_LINGER) (a millisecond), when a
    ///   background task sends it alone; the handle then stops deferring until it locks
    ///   promptly after a release again.
    ///
    /// Otherwise the delete is sent at once, as [`unlock_now`](Self::unlock_now) sends it.
    /// The riding `multi` stamps the lock directory (it sets its data, empty, to learn the
    /// new node's `czxid` and whether it is alone): a handle defers only on a directory whose
    /// data it found empty and that it may write, so a lock on a path with data of its own
    /// keeps that data.
    ///
    /// Other sessions see the lock free when ZooKeeper applies that delete (or that `multi`):
    /// a round trip after `unlock`, or after the linger. Until then they keep waiting, which
    /// is safe: a lock held a little longer never lets two holders in. Stop touching the
    /// guarded resource before calling `unlock`, as with any lock. A deferred delete is not
    /// ordered before the requests this session makes meanwhile;
    /// [`unlock_now`](Self::unlock_now) always orders the release ahead of everything the
    /// session sends afterwards.
    ///
    /// The delete's reply is checked, by a background task: after a connection loss the
    /// delete is sent again (it is idempotent: the node's name carries this handle's GUID);
    /// after a session loss the node is gone anyway, so a lost session never leaves a node
    /// behind longer than the service takes to expire it. If the delete fails for good (say,
    /// an ACL now refuses it), the next acquisition through this handle retries it and
    /// returns that error rather than queue behind a node nobody holds; if there is no next
    /// acquisition, the node stays until the session ends (and a warning is logged). A next
    /// acquisition that starts while the delete is still unconfirmed never waits for its own
    /// old node.
    ///
    /// Fails with [`LockError::SessionLost`] when the session has already ended (the node
    /// went with it). Outside a tokio runtime there is no task to defer to: `unlock` sends
    /// the delete and waits for it to be applied.
    ///
    /// ```no_run
    /// # async fn demo(g: avout::lock::MutexGuard) -> Result<(), avout::lock::LockError> {
    /// g.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn unlock(self) -> Result<(), LockError> {
        self.release(false).await
    }

    /// Releases this hold like [`unlock`](Self::unlock), but sends the delete now: it
    /// returns once the release is **ordered on the session**, behind every request the
    /// session sent before and ahead of every request it sends after (ZooKeeper applies one
    /// session's requests in that order). Every later request of this session — a read of the
    /// lock's children, a write another process will read, the next `lock` through another
    /// handle — is applied after the node is gone. The delete's reply is checked in the
    /// background as for `unlock`.
    ///
    /// ```no_run
    /// # async fn demo(g: avout::lock::MutexGuard) -> Result<(), avout::lock::LockError> {
    /// g.unlock_now().await?;
    /// # Ok(()) }
    /// ```
    pub async fn unlock_now(self) -> Result<(), LockError> {
        self.release(true).await
    }

    async fn release(mut self, now: bool) -> Result<(), LockError> {
        self.released = true;
        if let Some(node) = self.release_hold() {
            self.side
                .clone()
                .release_node(self.session.clone(), node, now)
                .await?;
        }
        Ok(())
    }

    /// Drops one hold; returns the node to delete if it was the last. A hold that a later
    /// acquisition replaced (its session had ended) has nothing left to release.
    fn release_hold(&self) -> Option<String> {
        let mut held = lock(&self.side.held);
        let hold = held
            .as_mut()
            .filter(|hold| hold.acquired.node == self.acquired.node)?;
        hold.count -= 1;
        if hold.count > 0 {
            return None;
        }
        held.take().map(|h| h.acquired.node)
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Some(node) = self.release_hold() {
            spawn_cleanup(
                self.side
                    .clone()
                    .release_node(self.session.clone(), node, false),
            );
        }
    }
}

#[cfg(all(test, avout_loom))]
#[path = "loom_tests.rs"]
mod loom_tests;
