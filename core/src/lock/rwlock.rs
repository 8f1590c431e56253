//! The read-write lock, [`RwLock`]: the shared-lock recipe over the acquisition machine.

use std::sync::Arc;
use std::time::Duration;

use crate::planted::Bugs;
use crate::{Client, path};

use super::mutex::{immediate, patience_for, timed};
use super::side::Side;
use super::{LockError, LockGuard, LockKind, Patience};

/// The guard of a [`RwLock`]'s read side.
pub type ReadGuard = LockGuard;

/// The guard of a [`RwLock`]'s write side.
pub type WriteGuard = LockGuard;

/// A distributed read-write lock: ZooKeeper's shared-lock recipe, with Curator's node names.
///
/// # Algorithm
///
/// Readers and writers queue in one directory, as ephemeral-sequential nodes named
/// `_c_<GUID>-__READ__<seq>` and `_c_<GUID>-__WRIT__<seq>` (Apache Curator's
/// `InterProcessReadWriteLock`, so Java and Rust processes share a lock). The sequence number
/// orders everyone:
///
/// - a **writer** holds the lock when no node at all is below its own; otherwise it watches
///   the node just below it;
/// - a **reader** holds the lock when no *writer* node is below its own; otherwise it watches
///   the nearest writer below it. Readers therefore share the lock with each other and
///   really exclude writers: a writer that queued first blocks every later reader, and a
///   reader blocks every later writer until it releases.
///
/// Each waiter watches one node (the recipe's no-herd rule); when a writer releases, the
/// readers queued right behind it all wake, which is not a herd since all of them may
/// proceed. The protocol is [`AcquireMachine`](super::AcquireMachine) with
/// [`LockKind::Read`](super::LockKind::Read) or [`LockKind::Write`](super::LockKind::Write).
///
/// # Reentrancy and downgrading
///
/// Per handle, like [`Mutex`](super::Mutex): while this handle holds a side, taking that side
/// again succeeds at once and adds a hold; the node goes with the last hold. A handle that
/// holds the **write** lock may take the **read** lock: its read node does not wait for its
/// own write node, nor for writers queued behind it. Releasing the write lock then keeps the
/// read lock (a downgrade): later readers share it, later writers wait for it. One case needs
/// care, and Apache Curator's lock gets it wrong: a writer from elsewhere that queued between
/// our write node and our read node watches only the write node, and would let itself in
/// beside our read. When such a writer exists, releasing the write lock keeps the write node
/// until the read lock is released too (still safe, but no other reader can join meanwhile).
/// The opposite, taking the write lock while holding the read lock, would wait for itself forever
/// and fails at once with [`LockError::WouldDeadlock`]. Reentrancy concerns holds, not
/// acquisitions in flight: a `read()` that starts while this handle's `write()` is still
/// queueing waits behind it like any other reader.
///
/// # Connection loss, session expiry, cancellation
///
/// As for the mutex (see the [lock module docs](super)): a connection loss during acquisition is
/// recovered through the GUID in the node name; a session expiry fails an acquisition with
/// [`LockError::SessionLost`] and ends every hold ([`LockGuard::status`], [`LockGuard::lost`]);
/// dropping an acquisition future removes its node (and sends alone the deferred release it
/// took to carry, if any); dropping a guard releases its hold. Releases are deferred as the
/// mutex's are ([`LockGuard::unlock`]), and an acquisition of either side carries the
/// handle's deferred release of either side.
///
/// Clones share holds (they are the same handle); give each task that must be excluded its
/// own handle.
///
/// ```no_run
/// use avout::lock::RwLock;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::lock::LockError> {
/// let rw = RwLock::new(client, "/locks/catalogue")?;
/// let read = rw.read().await?;
/// // ... many readers may be here at once, no writer ...
/// read.unlock().await?;
/// let write = rw.write().await?;
/// let read_too = rw.read().await?; // a write holder may also read
/// write.unlock().await?; // still reading: a downgrade
/// read_too.unlock().await?;
/// # Ok(()) }
/// ```
pub struct RwLock {
    read: Arc<Side>,
    write: Arc<Side>,
}

impl Clone for RwLock {
    fn clone(&self) -> Self {
        RwLock {
            read: self.read.clone(),
            write: self.write.clone(),
        }
    }
}

impl std::fmt::Debug for RwLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RwLock")
            .field("path", &self.read.path())
            .field("reading", &self.read.held_name().is_some())
            .field("writing", &self.write.held_name().is_some())
            .finish()
    }
}

impl RwLock {
    /// A handle on the read-write lock at `path` (created with its parents on first use).
    ///
    /// Fails with [`crate::Error::InvalidPath`] for an invalid path.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// assert!(avout::lock::RwLock::new(client, "relative").is_err());
    /// # }
    /// ```
    pub fn new(client: &Client, path: impl Into<String>) -> Result<Self, LockError> {
        let path = path.into();
        path::validate_path(&path, false)?;
        Ok(Self::sides(client, path, Bugs::NONE))
    }

    /// The same handle with `bugs` planted in both sides (none by default; see
    /// [`crate::planted`]).
    ///
    /// # Panics
    ///
    /// If the handle has been cloned: bugs are planted in a new handle, before it is shared.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// let rw = avout::lock::RwLock::new(client, "/l").unwrap().planted(avout::planted::Bugs::NONE);
    /// # }
    /// ```
    pub fn planted(self, bugs: Bugs) -> Self {
        assert!(
            Arc::strong_count(&self.read) == 1,
            "bugs are planted in a new handle, before it is shared"
        );
        let (path, client) = (self.read.path().to_owned(), self.read.client().clone());
        Self::sides(&client, path, bugs)
    }

    /// Both sides, linked, with `bugs` planted.
    fn sides(client: &Client, path: String, bugs: Bugs) -> Self {
        let mut read = Side::new(client, path.clone(), LockKind::Read);
        let mut write = Side::new(client, path, LockKind::Write);
        Side::plant(&mut read, bugs);
        Side::plant(&mut write, bugs);
        Side::link(&read, &write);
        RwLock { read, write }
    }

    /// The lock's path (the directory of both sides' nodes).
    ///
    /// ```no_run
    /// # fn demo(rw: avout::lock::RwLock) {
    /// println!("{}", rw.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        self.read.path()
    }

    /// Waits for the read lock: until no writer queued before this reader holds or waits.
    /// Succeeds at once if this handle holds the read or the write lock.
    ///
    /// ```no_run
    /// # async fn demo(rw: avout::lock::RwLock) -> Result<(), avout::lock::LockError> {
    /// let guard = rw.read().await?;
    /// # Ok(()) }
    /// ```
    pub async fn read(&self) -> Result<ReadGuard, LockError> {
        self.acquire_read(Patience::Forever).await
    }

    /// Takes the read lock if no writer is ahead now; `Ok(None)` otherwise.
    ///
    /// ```no_run
    /// # async fn demo(rw: avout::lock::RwLock) -> Result<(), avout::lock::LockError> {
    /// if let Some(guard) = rw.try_read().await? { guard.unlock().await?; }
    /// # Ok(()) }
    /// ```
    pub async fn try_read(&self) -> Result<Option<ReadGuard>, LockError> {
        immediate(self.acquire_read(Patience::None).await)
    }

    /// Waits at most `timeout` for the read lock; `Ok(None)` if it was not acquired in time
    /// (the queued node is removed before returning).
    ///
    /// ```no_run
    /// # async fn demo(rw: avout::lock::RwLock) -> Result<(), avout::lock::LockError> {
    /// let guard = rw.try_read_for(std::time::Duration::from_secs(1)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_read_for(&self, timeout: Duration) -> Result<Option<ReadGuard>, LockError> {
        timed(self.acquire_read(patience_for(timeout)).await)
    }

    /// Waits for the write lock: until no node of any kind is queued before this writer.
    /// Succeeds at once if this handle holds the write lock; fails at once with
    /// [`LockError::WouldDeadlock`] if it holds only the read lock.
    ///
    /// ```no_run
    /// # async fn demo(rw: avout::lock::RwLock) -> Result<(), avout::lock::LockError> {
    /// let guard = rw.write().await?;
    /// # Ok(()) }
    /// ```
    pub async fn write(&self) -> Result<WriteGuard, LockError> {
        self.acquire_write(Patience::Forever).await
    }

    /// Takes the write lock if nobody is ahead now; `Ok(None)` otherwise.
    ///
    /// ```no_run
    /// # async fn demo(rw: avout::lock::RwLock) -> Result<(), avout::lock::LockError> {
    /// if let Some(guard) = rw.try_write().await? { guard.unlock().await?; }
    /// # Ok(()) }
    /// ```
    pub async fn try_write(&self) -> Result<Option<WriteGuard>, LockError> {
        immediate(self.acquire_write(Patience::None).await)
    }

    /// Waits at most `timeout` for the write lock; `Ok(None)` if it was not acquired in time
    /// (the queued node is removed before returning).
    ///
    /// ```no_run
    /// # async fn demo(rw: avout::lock::RwLock) -> Result<(), avout::lock::LockError> {
    /// let guard = rw.try_write_for(std::time::Duration::from_secs(1)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_write_for(&self, timeout: Duration) -> Result<Option<WriteGuard>, LockError> {
        timed(self.acquire_write(patience_for(timeout)).await)
    }

    async fn acquire_read(&self, patience: Patience) -> Result<ReadGuard, LockError> {
        let write = &self.write;
        // Under our own write lock nobody else can hold or be ahead: the read node must not
        // wait for the write node it sits behind.
        self.read
            .acquire(patience, || Ok(write.held_name().into_iter().collect()))
            .await
    }

    async fn acquire_write(&self, patience: Patience) -> Result<WriteGuard, LockError> {
        let read = &self.read;
        self.write
            .acquire(patience, || match read.held_name() {
                Some(_) => Err(LockError::WouldDeadlock),
                None => Ok(Vec::new()),
            })
            .await
    }
}

// Its machine's cases are golden transcripts with the acquisition's (`acquire/testdata/rw_*`).
