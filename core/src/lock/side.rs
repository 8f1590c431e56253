//! One kind of lock on one path as one handle holds it ([`Side`]): its hold count, the
//! serialisation of its acquisitions and its releases; and the acquisition of a lock node
//! with its cleanup on cancellation, which the mutex, both sides of the read-write lock and
//! the semaphores share.

use std::sync::{Arc, OnceLock, Weak};

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::time::Instant;

use crate::client::Session;
use crate::machine::{Driving, Pace, drive, until_certain};
use crate::planted::{Bug, Bugs};
use crate::sync::{Mutex as StdMutex, lock};
use crate::{Client, Coordination, Error, path};

use super::release::{Deferrals, RELEASE_LINGER, Release, ReleaseMachine, Releases};
use super::{AcquireMachine, Acquired, LockError, LockGuard, LockKind, Patience};

pub(super) struct Held {
    pub(super) acquired: Acquired,
    pub(super) count: usize,
    /// The session the node belongs to: the hold ends with it.
    pub(super) session: Session,
}

/// One kind of lock on one path, as one handle holds it: the node, a hold count for
/// reentrancy, and the serialisation of acquisitions. A [`Mutex`] has one side, a
/// [`RwLock`](super::RwLock) two.
pub(super) struct Side {
    pub(super) path: String,
    pub(super) kind: LockKind,
    pub(super) held: StdMutex<Option<Held>>,
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
    /// The release `unlock` deferred, if any, and whether it defers the next one (see
    /// [`super::release`]).
    deferrals: StdMutex<Deferrals>,
    /// The bugs planted in this side's acquisitions.
    pub(super) planted: Bugs,
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
            deferrals: StdMutex::new(Deferrals::default()),
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

    /// Releases `node`, whose last hold on this side was just released: deferred (see
    /// [`LockGuard::unlock`]) unless `now`, in which case the returned future resolves once
    /// the delete is ordered on the session (it is sent before this function returns, so
    /// dropping the future does not undo it).
    ///
    /// The exception is a write node with a read hold of the same handle taken under it and a
    /// foreign writer queued between the two: that writer watches only the write node and
    /// would let itself in beside our read (Curator's read-write lock has this hole). Such a
    /// write node is parked, and deleted with the last read hold; deciding it needs a children
    /// read, which the future performs. Without a writer in between, releasing the write lock
    /// is a true downgrade: later readers share, later writers queue behind our read. These
    /// releases are never deferred.
    pub(super) fn release_node(
        self: Arc<Self>,
        session: Session,
        node: String,
        now: bool,
    ) -> BoxFuture<'static, Result<(), Error>> {
        let partner = self.partner.get().and_then(Weak::upgrade);
        match (self.kind, partner) {
            (LockKind::Write, Some(read))
                if read
                    .held_name()
                    .is_some_and(|r| path::sequence(&r) > path::sequence(&node)) =>
            {
                if self.planted.contains(Bug::Curator621) {
                    // The planted CURATOR-621 deletes the write node at once, whoever waits
                    // on it.
                    self.send_delete(&session, node)
                } else {
                    self.release_under_read(session, node, read).boxed()
                }
            }
            (LockKind::Read, Some(write)) if lock(&write.parked).is_some() => {
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
            _ if now => self.send_delete(&session, node),
            _ => self.defer(session, node),
        }
    }

    /// Defers `node`'s release if this handle defers (see [`super::release`]): keeps it for
    /// the handle's next acquisition and starts the task that sends it alone once [`RELEASE_LINGER`]
    /// is over, if no acquisition took it; the returned future is ready. Otherwise sends it
    /// now, as [`send_delete`](Self::send_delete). Fails if the session has ended (the node
    /// went with it). Outside a runtime there is no task to defer to: the release is sent at
    /// once, and the future waits for its outcome.
    fn defer(
        self: &Arc<Self>,
        session: Session,
        node: String,
    ) -> BoxFuture<'static, Result<(), Error>> {
        if let Some(error) = session.session_state().terminal_error() {
            return futures::future::ready(Err(error)).boxed();
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return self.send_delete(&session, node);
        }
        let (release, earlier) =
            lock(&self.deferrals).release(node.clone(), session.clone(), Instant::now());
        if let Some(earlier) = earlier {
            // Only one hold at a time is released here, and each acquisition takes the last
            // one; should one be left, it goes now.
            drop(self.send_delete(&earlier.session, earlier.node));
        }
        let Release::Deferred { number } = release else {
            return self.send_delete(&session, node);
        };
        let side = self.clone();
        crate::task::spawn(async move {
            tokio::time::sleep(RELEASE_LINGER).await;
            let unclaimed = lock(&side.deferrals).linger_over(number);
            if let Some(d) = unclaimed {
                side.release(d.session, d.node, None).await;
            }
        });
        futures::future::ready(Ok(())).boxed()
    }

    /// Takes this handle's deferred releases (this side's and its partner's) for an
    /// acquisition on `session`: the one to ride with its create, if one belongs to that
    /// session, in a [`Ride`]; any other is sent alone at once (or dropped, if its session
    /// ended).
    async fn take_deferred(self: &Arc<Self>, session: &Session) -> Ride {
        let partner = self.partner.get().and_then(Weak::upgrade);
        let mine = lock(&self.deferrals).acquire(Instant::now());
        let theirs = partner.as_ref().and_then(|p| lock(&p.deferrals).take());
        let mut ride = Ride {
            side: self.clone(),
            session: session.clone(),
            node: None,
        };
        let mut alone = Vec::new();
        for d in mine.into_iter().chain(theirs) {
            if d.session.has_ended() {
                continue;
            }
            if ride.node.is_none() && d.session.generation() == session.generation() {
                ride.node = Some(d.node);
            } else {
                // Handed to a task here, before anything is awaited: a dropped acquisition
                // loses none of them.
                alone.push(self.send_delete(&d.session, d.node));
            }
        }
        for sent in alone {
            // Its session's end is the only failure, and takes the node with it.
            let _ = sent.await;
        }
        ride
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
        let (sent, was_sent) = tokio::sync::oneshot::channel();
        // The task starts the machine at once (its delete is submitted at the start), and the
        // caller waits for that, so the delete is ordered before anything the caller sends next.
        crate::task::spawn(self.clone().release(session.clone(), node, Some(sent)));
        async move {
            // Dropped unsent only if the runtime is shutting down, taking the task with it.
            let _ = was_sent.await;
            Ok(())
        }
        .boxed()
    }

    /// Books `node`'s release, sends its delete (then says so on `sent`) and drives its
    /// [`ReleaseMachine`] to the end, booking the outcome.
    async fn release(
        self: Arc<Self>,
        session: Session,
        node: String,
        sent: Option<tokio::sync::oneshot::Sender<()>>,
    ) {
        lock(&self.releases).begin(&node);
        let mut driving = Driving::start(&*session, ReleaseMachine::new(node.clone()));
        if let Some(sent) = sent {
            let _ = sent.send(());
        }
        let outcome = driving.finish().await;
        lock(&self.releases).settle(node, outcome);
    }

    /// Sends the delete of `node` (a deferred release no create carried), if any.
    async fn release_unridden(self: &Arc<Self>, session: &Session, node: Option<String>) {
        if let Some(node) = node {
            // Its session's end is the only failure, and takes the node with it.
            let _ = self.send_delete(session, node).await;
        }
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
    pub(super) fn reenter(self: &Arc<Self>) -> Option<LockGuard> {
        let mut held = lock(&self.held);
        let held = held.as_mut()?;
        if held.session.has_ended() {
            return None;
        }
        held.count += 1;
        Some(LockGuard::new(
            self.clone(),
            held.acquired.clone(),
            held.session.clone(),
        ))
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
        // A release `unlock` deferred rides with our create. Until the machine carries it, the
        // `Ride` sends it alone if we return early or are dropped.
        let riding = self.take_deferred(&session).await;
        // The acquisition that makes the handle defer reads whether the lock directory's data
        // allows the stamp (sent now: it travels with the create).
        let reader = session.clone();
        let directory = lock(&self.deferrals)
            .needs_directory()
            .then(|| reader.get_data(&self.path));
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
        let mut machine = AcquireMachine::new(
            &self.path,
            self.kind,
            zk.new_guid(),
            zk.session().id.0,
            patience,
            own,
        )
        .with_releasing(releasing)
        .planted(self.planted);
        // Nothing is awaited between here and the `Acquiring` that takes over the ride.
        if let Some(node) = riding.carry() {
            machine = machine.with_riding(node);
        }
        let (acquired, unreleased, stamp_refused) = acquire_with(zk, machine, &self.path).await;
        // A ride the machine could not carry is released the usual way (before anything else
        // is awaited, so that dropping us now cannot lose it).
        self.release_unridden(&session, unreleased).await;
        if stamp_refused {
            lock(&self.deferrals).stampable(false);
        }
        if let Some(read) = directory {
            // Its reply came before the create's (one session's replies come in order).
            if let Ok((data, _)) = read.await {
                lock(&self.deferrals).stampable(data.is_empty());
            }
        }
        let acquired = acquired?;
        // Replaces a hold whose session ended, if any: its guards only report it lost.
        *lock(&self.held) = Some(Held {
            acquired: acquired.clone(),
            count: 1,
            session: session.clone(),
        });
        Ok(LockGuard::new(self.clone(), acquired, session))
    }
}

/// A deferred release an acquisition took to carry in its `multi`. Until the machine takes
/// it ([`Ride::carry`]), dropping it sends the delete alone: an acquisition that fails, or is
/// dropped, before its `multi` goes out leaves no node behind.
struct Ride {
    side: Arc<Side>,
    session: Session,
    node: Option<String>,
}

impl Ride {
    /// The node, for the machine to carry; the `Ride` is done with it.
    fn carry(mut self) -> Option<String> {
        self.node.take()
    }
}

impl Drop for Ride {
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            // Handed to a task before this returns; its session's end is the only failure,
            // and takes the node with it.
            drop(self.side.send_delete(&self.session, node));
        }
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

/// Runs `machine` (acquiring a node under `lock_path`) to its end. Cancellation-safe: if the
/// returned future is dropped first, the node it created, or may have created, is removed in
/// the background.
pub(crate) async fn acquire_node(
    zk: &Session,
    machine: AcquireMachine,
    lock_path: &str,
) -> Result<Acquired, LockError> {
    acquire_with(zk, machine, lock_path).await.0
}

/// [`acquire_node`], for a machine that may carry a release: also the node whose release it
/// did not carry ([`AcquireMachine::unreleased`]), which the caller must release, and whether
/// a stamp was refused ([`AcquireMachine::stamp_refused`]). Dropped first, it removes that
/// node too.
async fn acquire_with(
    zk: &Session,
    machine: AcquireMachine,
    lock_path: &str,
) -> (Result<Acquired, LockError>, Option<String>, bool) {
    let mut acquiring = Acquiring {
        machine,
        zk: Some(zk.clone()),
        lock_path: lock_path.to_owned(),
    };
    let result = drive(&**zk, &mut acquiring.machine).await;
    // Finished: the machine cleaned up after itself if it gave up.
    acquiring.zk = None;
    let m = &acquiring.machine;
    (result, m.unreleased().map(str::to_owned), m.stamp_refused())
}

/// An acquisition in progress; if dropped before it finishes, removes its node (and the
/// node whose release rode with its create, if the ride may not have applied).
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
        let ride = self.machine.unreleased().map(str::to_owned);
        if node.is_none() && !unknown && ride.is_none() {
            return;
        }
        let prefix = self.machine.prefix().to_owned();
        let lock_path = std::mem::take(&mut self.lock_path);
        spawn_cleanup(async move {
            let node = match node {
                Some(node) => Some(node),
                // The create may or may not have happened: look for our GUID.
                None if unknown => find_own_node(&*zk, &lock_path, &prefix).await?,
                None => None,
            };
            for node in node.into_iter().chain(ride) {
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
