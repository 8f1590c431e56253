//! The reentrant exclusive lock, and the per-handle hold bookkeeping and guard it shares with
//! both sides of the [read-write lock](super::RwLock).

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::client::Session;
use crate::machine::{Driving, Pace, drive, until_certain};
use crate::planted::{Bug, Bugs};
use crate::sync::{Mutex as StdMutex, lock};
use crate::{Client, Coordination, Error, Op, OpResult, SessionState, path};

use super::release::{ReleaseMachine, Releases};
use super::{AcquireMachine, Acquired, LockError, LockKind, Patience};

struct Held {
    acquired: Acquired,
    count: usize,
    /// The session the node belongs to: the hold ends with it.
    session: Session,
}

/// One kind of lock on one path, as one handle holds it: the node, a hold count for
/// reentrancy, and the serialisation of acquisitions. A [`Mutex`] has one side, a
/// [`RwLock`](super::RwLock) two.
pub(super) struct Side {
    path: String,
    kind: LockKind,
    held: StdMutex<Option<Held>>,
    /// Serialises acquisitions through one handle, so that a second `lock` while the first is
    /// still queueing joins the first hold instead of queueing behind it (a deadlock).
    acquiring: tokio::sync::Mutex<()>,
    client: Client,
    /// The other side of the same read-write lock handle.
    partner: OnceLock<Weak<Side>>,
    /// A released write node kept until the read holds taken under it are released too
    /// (see [`Side::release_node`]).
    parked: StdMutex<Option<String>>,
    /// Released nodes whose delete has not been confirmed.
    releases: StdMutex<Releases>,
    /// The bugs planted in this side's acquisitions.
    planted: Bugs,
}

impl Side {
    pub(super) fn new(client: &Client, path: String, kind: LockKind) -> Arc<Self> {
        Arc::new(Side {
            path,
            kind,
            held: StdMutex::new(None),
            acquiring: tokio::sync::Mutex::new(()),
            client: client.clone(),
            partner: OnceLock::new(),
            parked: StdMutex::new(None),
            releases: StdMutex::new(Releases::default()),
            planted: Bugs::NONE,
        })
    }

    /// Plants `bugs` in a side nobody shares yet.
    ///
    /// # Panics
    ///
    /// If the side is shared (its handle was cloned).
    pub(super) fn plant(side: &mut Arc<Self>, bugs: Bugs) {
        Arc::get_mut(side)
            .expect("bugs are planted in a new handle, before it is shared")
            .planted = bugs;
    }

    /// Makes `read` and `write` the two sides of one read-write lock handle.
    pub(super) fn link(read: &Arc<Self>, write: &Arc<Self>) {
        let linked = read.partner.set(Arc::downgrade(write)).is_ok()
            && write.partner.set(Arc::downgrade(read)).is_ok();
        assert!(linked, "a side is linked once");
    }

    /// Releases `node`, whose last hold on this side was just released. The returned future
    /// resolves once the release is ordered on the session (see [`LockGuard::unlock`]); the
    /// delete is sent before this function returns, so dropping the future does not undo it.
    ///
    /// The exception is a write node with a read hold of the same handle taken under it and a
    /// foreign writer queued between the two: that writer watches only the write node and
    /// would let itself in beside our read (Curator's read-write lock has this hole). Such a
    /// write node is parked, and deleted with the last read hold; deciding it needs a children
    /// read, which the future performs. Without a writer in between, releasing the write lock
    /// is a true downgrade: later readers share, later writers queue behind our read.
    fn release_node(
        self: Arc<Self>,
        session: Session,
        node: String,
    ) -> BoxFuture<'static, Result<(), Error>> {
        let partner = self.partner.get().and_then(Weak::upgrade);
        match (self.kind, partner) {
            // The planted CURATOR-621 deletes the write node at once, whoever waits on it.
            (LockKind::Write, Some(read))
                if !self.planted.contains(Bug::Curator621)
                    && read
                        .held_name()
                        .is_some_and(|r| path::sequence(&r) > path::sequence(&node)) =>
            {
                self.release_under_read(session, node, read).boxed()
            }
            (LockKind::Read, Some(write)) => {
                let read = self.send_delete(&session, node);
                let parked = lock(&write.parked).take();
                let parked = parked.map(|parked| write.send_delete(&session, parked));
                async move {
                    read.await?;
                    match parked {
                        Some(parked) => parked.await,
                        None => Ok(()),
                    }
                }
                .boxed()
            }
            _ => self.send_delete(&session, node),
        }
    }

    /// The write node's release when a read hold of this handle sits above it.
    async fn release_under_read(
        self: Arc<Self>,
        session: Session,
        node: String,
        read: Arc<Self>,
    ) -> Result<(), Error> {
        let zk = &*session;
        let Some(read_name) = read.held_name() else {
            return self.send_delete(&session, node).await;
        };
        if writer_between(zk, &self.path, path::name(&node), &read_name).await? {
            *lock(&self.parked) = Some(node);
            // The read side may have been released meanwhile, missing the park.
            let missed = match read.held_name() {
                None => lock(&self.parked).take(),
                Some(_) => None,
            };
            if let Some(node) = missed {
                self.send_delete(&session, node).await?;
            }
            return Ok(());
        }
        self.send_delete(&session, node).await
    }

    /// Sends the delete of our `node` now: ZooKeeper applies it after every request this
    /// session sent before and before every request it sends after. The returned future
    /// resolves once the delete is handed to the session; a task drives its
    /// [`ReleaseMachine`] to the end (see [`super::release`]) and books the outcome for the
    /// handle's next acquisition.
    fn send_delete(
        self: &Arc<Self>,
        session: &Session,
        node: String,
    ) -> BoxFuture<'static, Result<(), Error>> {
        if let Some(error) = session.session_state().terminal_error() {
            // The node went with the session.
            return futures::future::ready(Err(error)).boxed();
        }
        if tokio::runtime::Handle::try_current().is_err() {
            // No task to check the reply: wait for it here.
            let zk = session.clone();
            return async move { drive(&*zk, &mut ReleaseMachine::new(node)).await }.boxed();
        }
        lock(&self.releases).begin(&node);
        let (sent, was_sent) = tokio::sync::oneshot::channel();
        let side = self.clone();
        let session = session.clone();
        // The task starts the machine at once (its delete is submitted at the start), and the
        // caller waits for that, so the delete is ordered before anything the caller sends next.
        crate::task::spawn(async move {
            let mut driving = Driving::start(&*session, ReleaseMachine::new(node.clone()));
            let _ = sent.send(());
            let outcome = driving.finish().await;
            lock(&side.releases).settle(node, outcome);
        });
        async move {
            // Dropped unsent only if the runtime is shutting down, taking the task with it.
            let _ = was_sent.await;
            Ok(())
        }
        .boxed()
    }

    /// Names (not paths) of released nodes whose delete is still in flight.
    fn releasing_names(&self) -> Vec<String> {
        lock(&self.releases).in_flight()
    }

    /// Retries the deletes of released nodes that failed for good; fails if one still does.
    async fn retry_failed_releases(&self, zk: &dyn Coordination) -> Result<(), Error> {
        let failed = lock(&self.releases).failed();
        for node in failed {
            let outcome = drive(zk, &mut ReleaseMachine::new(node.clone())).await;
            lock(&self.releases).settle(node, outcome.clone());
            outcome?;
        }
        Ok(())
    }

    pub(super) fn path(&self) -> &str {
        &self.path
    }

    pub(super) fn client(&self) -> &Client {
        &self.client
    }

    /// The name (not path) of the node this side holds, if held.
    pub(super) fn held_name(&self) -> Option<String> {
        lock(&self.held)
            .as_ref()
            .map(|h| path::name(&h.acquired.node).to_owned())
    }

    /// Joins the handle's hold, if it has one. A hold whose session has ended is not joined:
    /// its node is gone, so the acquisition goes on, on the client's current session (the
    /// dead hold's guards stay [`LockStatus::Lost`]).
    fn reenter(self: &Arc<Self>) -> Option<LockGuard> {
        let mut held = lock(&self.held);
        let held = held.as_mut()?;
        if held.session.has_ended() {
            return None;
        }
        held.count += 1;
        Some(LockGuard {
            side: self.clone(),
            acquired: held.acquired.clone(),
            session: held.session.clone(),
            released: false,
        })
    }

    /// Acquires this side, or joins this handle's hold. `own` runs once the handle's earlier
    /// acquisitions have finished and this side is not held: it returns the names of nodes
    /// the handle holds on the same path that must not block this one, or refuses.
    pub(super) async fn acquire(
        self: &Arc<Self>,
        patience: Patience,
        own: impl FnOnce() -> Result<Vec<String>, LockError>,
    ) -> Result<LockGuard, LockError> {
        if let Some(guard) = self.reenter() {
            return Ok(guard);
        }
        let _serial = self.acquiring.lock().await;
        if let Some(guard) = self.reenter() {
            return Ok(guard);
        }
        let own = own()?;
        let session = self.client.current_session().await?;
        // Earlier releases through this handle: failed ones are retried first (their nodes
        // would block everyone); those still in flight must not make us wait for ourselves.
        let partner = self.partner.get().and_then(Weak::upgrade);
        self.retry_failed_releases(&*session).await?;
        let mut releasing = self.releasing_names();
        if let Some(partner) = &partner {
            partner.retry_failed_releases(&*session).await?;
            releasing.extend(partner.releasing_names());
        }
        let zk = &session;
        let machine = AcquireMachine::new(
            &self.path,
            self.kind,
            zk.new_guid(),
            zk.session().id.0,
            patience,
            own,
        )
        .with_releasing(releasing)
        .planted(self.planted);
        let acquired = acquire_node(zk, machine, &self.path).await?;
        // Replaces a hold whose session ended, if any: its guards only report it lost.
        *lock(&self.held) = Some(Held {
            acquired: acquired.clone(),
            count: 1,
            session: session.clone(),
        });
        Ok(LockGuard {
            side: self.clone(),
            acquired,
            session,
            released: false,
        })
    }
}

/// Whether a foreign write node sits strictly between our write node and our read node.
async fn writer_between<C: Coordination + ?Sized>(
    zk: &C,
    lock_path: &str,
    write: &str,
    read: &str,
) -> Result<bool, Error> {
    let (low, high) = (path::sequence(write), path::sequence(read));
    let Some(children) = children_of(zk, lock_path).await? else {
        return Ok(false);
    };
    Ok(children.iter().any(|c| {
        c.contains(LockKind::Write.marker()) && {
            let seq = path::sequence(c);
            seq > low && seq < high
        }
    }))
}

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

/// Runs `machine` (acquiring a node under `lock_path`) to its end. Cancellation-safe: if the
/// returned future is dropped first, the node it created, or may have created, is removed in
/// the background.
pub(crate) async fn acquire_node(
    zk: &Session,
    machine: AcquireMachine,
    lock_path: &str,
) -> Result<Acquired, LockError> {
    let mut acquiring = Acquiring {
        machine,
        zk: Some(zk.clone()),
        lock_path: lock_path.to_owned(),
    };
    let result = drive(&**zk, &mut acquiring.machine).await;
    // Finished: the machine cleaned up after itself if it gave up.
    acquiring.zk = None;
    result
}

/// An acquisition in progress; if dropped before it finishes, removes its node.
struct Acquiring {
    machine: AcquireMachine,
    /// `Some` until the acquisition finishes.
    zk: Option<Session>,
    lock_path: String,
}

impl Drop for Acquiring {
    fn drop(&mut self) {
        let Some(zk) = self.zk.take() else { return };
        let node = self.machine.node_path();
        let unknown = self.machine.node_unknown();
        if node.is_none() && !unknown {
            return;
        }
        let prefix = self.machine.prefix().to_owned();
        let lock_path = std::mem::take(&mut self.lock_path);
        spawn_cleanup(async move {
            let node = match node {
                Some(node) => Some(node),
                // The create may or may not have happened: look for our GUID.
                None => find_own_node(&*zk, &lock_path, &prefix).await?,
            };
            if let Some(node) = node {
                delete_idempotent(&*zk, &node).await?;
            }
            Ok(())
        });
    }
}

/// Runs a cleanup in the background; `Drop` cannot wait for it.
pub(crate) fn spawn_cleanup(cleanup: impl Future<Output = Result<(), Error>> + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => {
            crate::task::spawn(async move {
                if let Err(e) = cleanup.await {
                    // The node goes when the session ends; until then it blocks the lock.
                    tracing::warn!(error = %e, "lock node cleanup failed");
                }
            });
        }
        Err(_) => tracing::warn!(
            "lock released outside a tokio runtime: its node stays until the session ends"
        ),
    }
}

pub(crate) async fn find_own_node<C: Coordination + ?Sized>(
    zk: &C,
    lock_path: &str,
    prefix: &str,
) -> Result<Option<String>, Error> {
    let children = children_of(zk, lock_path).await?.unwrap_or_default();
    Ok(children
        .into_iter()
        .find(|c| c.starts_with(prefix))
        .map(|c| path::join(lock_path, &c)))
}

/// The children of a lock directory (`None` if it does not exist), read until the answer is
/// certain. Retried at once, not paced: these reads and deletes have always gone out back to
/// back, and the simulator's pinned runs replay them so.
async fn children_of<C: Coordination + ?Sized>(
    zk: &C,
    lock_path: &str,
) -> Result<Option<Vec<String>>, Error> {
    match until_certain(zk, Pace::AT_ONCE, || zk.get_children(lock_path)).await {
        Ok((children, _)) => Ok(Some(children)),
        Err(Error::NoNode { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Deletes our own lock node. Its name holds our GUID, so no other owner can create it, and
/// retrying the delete after a connection loss is safe.
pub(crate) async fn delete_idempotent<C: Coordination + ?Sized>(
    zk: &C,
    node: &str,
) -> Result<(), Error> {
    match until_certain(zk, Pace::AT_ONCE, || zk.delete(node, None)).await {
        Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
        Err(e) => Err(e),
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
    /// `unlock` returns once the release is **ordered on the session**: the delete of the lock
    /// node has been handed to the session, behind every request it sent before and ahead of
    /// every request it sends after, and ZooKeeper applies one session's requests in that
    /// order. So:
    ///
    /// - every later request of this session — the next `lock` through any handle on it, a
    ///   read of the lock's children, a write to the guarded resource — is applied after the
    ///   node is gone;
    /// - other sessions see the lock free when ZooKeeper applies the delete, normally within
    ///   the round trip that `unlock` did not wait for. Until then they keep waiting, which
    ///   is safe: a lock held a little longer never lets two holders in.
    ///
    /// This is what lets a release and the next acquisition travel together (one round trip,
    /// and ZooKeeper commits both writes in one batch) instead of paying a round trip each.
    /// Stop touching the guarded resource before calling `unlock`, as with any lock.
    ///
    /// The delete's reply is still checked, by a background task: after a connection loss the
    /// delete is sent again (it is idempotent: the node's name carries this handle's GUID);
    /// after a session loss the node is gone anyway. If it fails for good (say, an ACL now
    /// refuses it), the next acquisition through this handle retries it and returns that
    /// error rather than queue behind a node nobody holds; if there is no next acquisition,
    /// the node stays until the session ends (and a warning is logged). A next acquisition
    /// that starts while the delete is still unconfirmed never waits for its own old node.
    ///
    /// Fails with [`LockError::SessionLost`] when the session has already ended (the node
    /// went with it). Outside a tokio runtime there is no task to check the reply, and
    /// `unlock` waits for the delete to be applied.
    ///
    /// ```no_run
    /// # async fn demo(g: avout::lock::MutexGuard) -> Result<(), avout::lock::LockError> {
    /// g.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn unlock(mut self) -> Result<(), LockError> {
        self.released = true;
        if let Some(node) = self.release_hold() {
            self.side
                .clone()
                .release_node(self.session.clone(), node)
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
            spawn_cleanup(self.side.clone().release_node(self.session.clone(), node));
        }
    }
}

#[cfg(all(test, loom))]
#[path = "loom_tests.rs"]
mod loom_tests;
