//! The cache's task: load, then follow the tree with a persistent watch, or with one-shot
//! watches on servers that refuse `addWatch`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::channel::{mpsc, oneshot};
use futures::future::BoxFuture;
use futures::future::FusedFuture;
use futures::stream::{FuturesOrdered, FuturesUnordered};
use futures::{FutureExt, StreamExt};

use crate::planted::{Bug, Bugs};
use crate::sync::{Mutex, lock};
use crate::{
    AddWatchMode, Coordination, Error, EventKind, PersistentWatch, Result, SessionState, Stat,
    Watch, WatchedEvent,
};

use super::view::View;
use super::{CacheEvent, CacheScope, Entry, Shared};

/// How long to wait before retrying a read that failed indeterminately.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// How many nodes a relist reads at once.
const RELIST_PIPELINE: usize = 256;

/// A node's data and `Stat`, as read.
type Found = (Vec<u8>, Stat);

/// A node's children and `Stat`, as listed.
type Listed = (Vec<String>, Stat);

/// How often to look whether a lost session was replaced.
const REPLACE_POLL: Duration = Duration::from_millis(100);

/// How a stretch of following ended.
enum Ended {
    /// The session ended; the next call may run on a new one (a managed client).
    SessionLost(Error),
    /// Asked to stop.
    Stopped,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Data,
    Child,
}

type Fired = BoxFuture<'static, (String, Kind, WatchedEvent)>;

/// A pipelined read of a node the persistent watch named: the path and what was found.
type Read<'a> = BoxFuture<'a, (String, Result<Option<(Vec<u8>, Stat)>>)>;

pub(super) struct Follower<C: ?Sized> {
    zk: Arc<C>,
    root: String,
    scope: CacheScope,
    shared: Arc<Mutex<Shared>>,
    tx: mpsc::UnboundedSender<CacheEvent>,
    /// How many full loads succeeded.
    loads: u64,
    planted: Bugs,
    /// The planted CURATOR-476's initial load, waiting for a node that is gone: `start` is
    /// never told the load is done.
    stuck_load: Option<oneshot::Sender<Result<()>>>,
}

impl<C: Coordination + ?Sized + 'static> Follower<C> {
    pub(super) fn new(
        zk: Arc<C>,
        root: &str,
        scope: CacheScope,
        shared: Arc<Mutex<Shared>>,
        tx: mpsc::UnboundedSender<CacheEvent>,
        planted: Bugs,
    ) -> Self {
        Follower {
            zk,
            root: root.to_owned(),
            scope,
            shared,
            tx,
            loads: 0,
            planted,
            stuck_load: None,
        }
    }

    /// Follows until stopped, an error other than a lost session, or a lost session that no
    /// new one replaces (a plain session; a managed client opens a new one, with a new id,
    /// which the cache follows on); reports the end of the initial load (or its failure) on
    /// `ready`.
    pub(super) async fn run(
        mut self,
        ready: oneshot::Sender<Result<()>>,
        stop: oneshot::Receiver<()>,
    ) {
        let mut ready = Some(ready);
        let mut stop = stop.fuse();
        let mut persistent = true;
        loop {
            let session = self.zk.session();
            let error = match self.stretch(&mut persistent, &mut ready, &mut stop).await {
                Ok(Ended::Stopped) => return,
                Ok(Ended::SessionLost(e)) => e,
                Err(e) => e,
            };
            let replaced = error.is_session_lost()
                && ready.is_none()
                && self.replaced(session.id, session.timeout, &mut stop).await;
            if (&mut stop).now_or_never().is_some() {
                return;
            }
            if !replaced {
                lock(&self.shared).error = Some(error.clone());
                if let Some(ready) = ready.take() {
                    let _ = ready.send(Err(error));
                }
                return;
            }
        }
    }

    /// Waits (up to the session timeout, at most 5 s) for the session `lost` to be replaced
    /// by a new one; whether it was.
    async fn replaced(
        &self,
        lost: crate::SessionId,
        timeout: Duration,
        stop: &mut futures::future::Fuse<oneshot::Receiver<()>>,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + timeout.min(Duration::from_secs(5));
        loop {
            if self.zk.session().id != lost {
                return true;
            }
            if self.zk.session_state() == SessionState::Closed
                || tokio::time::Instant::now() >= deadline
                || stop.is_terminated()
            {
                return false;
            }
            futures::select_biased! {
                () = tokio::time::sleep(REPLACE_POLL).fuse() => {}
                _ = &mut *stop => return false,
            }
        }
    }

    /// Arms a watch, re-lists, and follows until the session ends, an error, or a stop.
    async fn stretch(
        &mut self,
        persistent: &mut bool,
        ready: &mut Option<oneshot::Sender<Result<()>>>,
        stop: &mut futures::future::Fuse<oneshot::Receiver<()>>,
    ) -> Result<Ended> {
        if *persistent {
            let mode = match self.scope {
                CacheScope::Node => AddWatchMode::Persistent,
                CacheScope::Children | CacheScope::Subtree => AddWatchMode::PersistentRecursive,
            };
            let root = self.root.clone();
            match retry(&*self.zk, &root, |zk, p| zk.add_watch(p, mode)).await {
                Ok(watch) => {
                    lock(&self.shared).persistent = true;
                    return self.follow_persistent(watch, ready, stop).await;
                }
                Err(Error::Unimplemented(_)) => *persistent = false,
                Err(e) => return Err(e),
            }
        }
        lock(&self.shared).persistent = false;
        self.follow_oneshot(ready, stop).await
    }

    fn loaded(&mut self, ready: &mut Option<oneshot::Sender<Result<()>>>) {
        if self.loads == 0 {
            let _ = self.tx.unbounded_send(CacheEvent::Initialized);
        }
        self.loads += 1;
        if let Some(ready) = ready.take() {
            let _ = ready.send(Ok(()));
        }
    }

    fn apply(&self, path: &str, found: Option<(Vec<u8>, Stat)>) {
        publish(&self.shared, &self.tx, |view| view.apply(path, found));
    }

    /// Follows the persistent watch. Each event's read is sent as the event arrives, without
    /// waiting for the reads before it, and the replies are applied in the order they were
    /// sent: one session answers in order, so each reply is as new as the one before it, and
    /// the view moves as it would with one read at a time, at the pace of the server rather
    /// than of one round trip per change.
    ///
    /// A read that fails indeterminately is not retried in place (a retry would be newer
    /// than the replies queued behind it): the cache takes no more events, applies what is
    /// in flight, and re-lists. So does the `Connected` event after a connection loss.
    async fn follow_persistent(
        &mut self,
        mut watch: PersistentWatch,
        ready: &mut Option<oneshot::Sender<Result<()>>>,
        stop: &mut futures::future::Fuse<oneshot::Receiver<()>>,
    ) -> Result<Ended> {
        // Armed first, then listed: a change after the listing is reported by the watch.
        let vanished = match self.relist().await {
            Ok(vanished) => vanished,
            Err(e) => {
                let _ = watch.remove().await;
                return Err(e);
            }
        };
        if vanished && self.loads == 0 && self.planted.contains(Bug::Curator476) {
            // The planted CURATOR-476: the initial load waits for the node that went.
            self.stuck_load = ready.take();
        }
        self.loaded(ready);
        let mut reads: FuturesOrdered<Read> = FuturesOrdered::new();
        let mut stale = false;
        loop {
            if stale {
                match reads.next().await {
                    Some((path, found)) => self.apply_read(&path, found, &mut stale)?,
                    None => {
                        // Changes made while disconnected were not reported (ZOOKEEPER-4698).
                        self.relist().await?;
                        stale = false;
                    }
                }
                continue;
            }
            let event = futures::select_biased! {
                event = watch.next().fuse() => event,
                (path, found) = reads.select_next_some() => {
                    self.apply_read(&path, found, &mut stale)?;
                    continue;
                }
                _ = &mut *stop => {
                    let _ = watch.remove().await;
                    return Ok(Ended::Stopped);
                }
            };
            let Some(event) = event else {
                return Ok(Ended::SessionLost(Error::Closed));
            };
            match event.kind {
                EventKind::Session => match event.state {
                    // The planted CURATOR-311 takes the reconnection as nothing missed.
                    SessionState::Connected => stale = !self.planted.contains(Bug::Curator311),
                    SessionState::Disconnected => {}
                    state => {
                        let error = state.terminal_error().unwrap_or(Error::Closed);
                        return Ok(Ended::SessionLost(error));
                    }
                },
                _ if self.scope.covers(&self.root, &event.path) => {
                    reads.push_back(self.send_read(event.path.clone()));
                    // A recursive watch reports no child changes: re-read the parent, so its
                    // cached `Stat` (children, `cversion`, `pzxid`) stays current too.
                    let parent = crate::path::parent(&event.path).map(str::to_owned);
                    if matches!(event.kind, EventKind::NodeCreated | EventKind::NodeDeleted)
                        && let Some(parent) = parent.filter(|p| self.scope.covers(&self.root, p))
                    {
                        reads.push_back(self.send_read(parent));
                    }
                }
                _ => {}
            }
        }
    }

    /// A read of `path`, sent now (the request goes out when `get_data` is called).
    fn send_read(&self, path: String) -> Read<'_> {
        let reply = self.zk.get_data(&path);
        async move {
            let found = match reply.await {
                Ok(found) => Ok(Some(found)),
                Err(Error::NoNode { .. }) => Ok(None),
                Err(e) => Err(e),
            };
            (path, found)
        }
        .boxed()
    }

    /// Applies a pipelined read's reply; an indeterminate failure marks the view `stale`
    /// (to be re-listed), any other is returned.
    fn apply_read(
        &self,
        path: &str,
        found: Result<Option<(Vec<u8>, Stat)>>,
        stale: &mut bool,
    ) -> Result<()> {
        match found {
            Ok(found) => self.apply(path, found),
            Err(e) if e.is_indeterminate() => *stale = true,
            Err(e) => return Err(e),
        }
        Ok(())
    }

    async fn follow_oneshot(
        &mut self,
        ready: &mut Option<oneshot::Sender<Result<()>>>,
        stop: &mut futures::future::Fuse<oneshot::Receiver<()>>,
    ) -> Result<Ended> {
        let mut armed: BTreeSet<(String, Kind)> = BTreeSet::new();
        let mut pending: FuturesUnordered<Fired> = FuturesUnordered::new();
        let root = self.root.clone();
        self.load(&root, &mut armed, &mut pending).await?;
        self.loaded(ready);
        loop {
            let fired = futures::select_biased! {
                fired = pending.select_next_some() => fired,
                _ = &mut *stop => return Ok(Ended::Stopped),
                // Every watch gone without a session event: only a closed client does that.
                complete => return Ok(Ended::SessionLost(Error::Closed)),
            };
            let (path, kind, event) = fired;
            armed.remove(&(path.clone(), kind));
            match (event.kind, kind) {
                (EventKind::Session, _) => {
                    let error = event.state.terminal_error().unwrap_or(Error::Closed);
                    return Ok(Ended::SessionLost(error));
                }
                // Every event, a deletion too, is followed by a read rather than applied: it
                // may be a late one of an earlier node at the path (held across a
                // reconnection), after a child listing showed that node gone and a new one
                // took its place.
                _ => self.load(&path, &mut armed, &mut pending).await?,
            }
        }
    }

    /// Reads `start` and, where the scope lists children, everything under it, arming the
    /// watches that are not armed yet and recording what it finds.
    async fn load(
        &mut self,
        start: &str,
        armed: &mut BTreeSet<(String, Kind)>,
        pending: &mut FuturesUnordered<Fired>,
    ) -> Result<()> {
        let mut todo = vec![start.to_owned()];
        while let Some(path) = todo.pop() {
            // The data watch (an exists watch while the node is missing) also tells when the
            // node appears or goes; the root's is armed even when its data is not cached.
            let watched = self.scope.covers(&self.root, &path) || path == self.root;
            let czxid = |shared: &Shared| shared.view.nodes.get(&path).map(|e| e.stat.czxid);
            let was_cached = czxid(&lock(&self.shared));
            let mut present = true;
            if watched
                && armed.contains(&(path.clone(), Kind::Data))
                && self.scope.covers(&self.root, &path)
            {
                // Its children changed: re-read it (its watch stays armed) so that its
                // cached `Stat` follows.
                let found = self.read(&path).await?;
                present = found.is_some();
                self.apply(&path, found);
            } else if watched && !armed.contains(&(path.clone(), Kind::Data)) {
                match retry(&*self.zk, &path, |zk, p| zk.get_and_watch_data(p)).await {
                    Ok((data, stat, watch)) => {
                        arm(armed, pending, &path, Kind::Data, watch);
                        if self.scope.covers(&self.root, &path) {
                            self.apply(&path, Some((data, stat)));
                        }
                    }
                    Err(Error::NoNode { .. }) => {
                        present = false;
                        self.apply(&path, None);
                        if path == self.root {
                            let (stat, watch) =
                                retry(&*self.zk, &path, |zk, p| zk.exists_and_watch(p)).await?;
                            arm(armed, pending, &path, Kind::Data, watch);
                            if stat.is_some() {
                                // Created in between: read it again, watch armed.
                                todo.push(path.clone());
                            }
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            let child_armed = armed.contains(&(path.clone(), Kind::Child));
            // A node that (re)enters the view has its children listed even if its child watch
            // is still armed: they may have left the view with it.
            let now_cached = czxid(&lock(&self.shared));
            let entered = now_cached.is_some() && now_cached != was_cached;
            if !present
                || !self.scope.lists_children_of(&self.root, &path)
                || (child_armed && !entered)
            {
                continue;
            }
            let listing = if child_armed {
                retry(&*self.zk, &path, |zk, p| zk.get_children(p)).await
            } else {
                retry(&*self.zk, &path, |zk, p| zk.get_and_watch_children(p))
                    .await
                    .map(|(children, stat, watch)| {
                        arm(armed, pending, &path, Kind::Child, watch);
                        (children, stat)
                    })
            };
            match listing {
                Ok((children, stat)) => {
                    lock(&self.shared).view.refresh_stat(&path, stat);
                    let listed: BTreeSet<String> = children
                        .iter()
                        .map(|c| crate::path::join(&path, c))
                        .collect();
                    let gone: Vec<String> = {
                        let shared = lock(&self.shared);
                        shared
                            .view
                            .nodes
                            .keys()
                            .filter(|p| crate::path::parent(p) == Some(path.as_str()))
                            .filter(|p| !listed.contains(*p))
                            .cloned()
                            .collect()
                    };
                    for child in gone {
                        self.apply(&child, None);
                    }
                    let cached: Vec<bool> = {
                        let shared = lock(&self.shared);
                        listed
                            .iter()
                            .map(|c| shared.view.nodes.contains_key(c))
                            .collect()
                    };
                    for (child, cached) in listed.into_iter().zip(cached) {
                        // A child not cached yet is read even if a watch of an earlier node
                        // at its path is still pending.
                        if !cached || !armed.contains(&(child.clone(), Kind::Data)) {
                            todo.push(child);
                        }
                    }
                }
                Err(Error::NoNode { .. }) => self.apply(&path, None),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Lists everything in scope (after a `sync`) and reports the differences with the view;
    /// whether a listed node was gone when read.
    ///
    /// The tree is walked a level at a time, with up to [`RELIST_PIPELINE`] nodes' reads in
    /// flight at once: one session answers in order, so this reads what one read after
    /// another would, at the pace of the server rather than of one round trip per node.
    async fn relist(&self) -> Result<bool> {
        let root = self.root.clone();
        retry(&*self.zk, &root, |zk, p| zk.sync(p)).await?;
        let mut fresh = BTreeMap::new();
        let mut vanished = false;
        let mut level = vec![root.clone()];
        while !level.is_empty() {
            let mut reads = futures::stream::iter(std::mem::take(&mut level))
                .map(|path| self.read_node(&root, path))
                .buffered(RELIST_PIPELINE);
            while let Some(node) = reads.next().await {
                let (path, data, children) = node?;
                if let Some((data, stat)) = data {
                    fresh.insert(path.clone(), Entry { data, stat });
                } else if path != root && children.is_none() {
                    vanished = true;
                }
                let Some((children, stat)) = children else {
                    continue;
                };
                if let Some(entry) = fresh.get_mut(&path)
                    && entry.stat.czxid == stat.czxid
                    && entry.stat.mzxid == stat.mzxid
                {
                    // Listed after its data was read: the later child fields.
                    entry.stat = stat;
                }
                level.extend(children.iter().map(|c| crate::path::join(&path, c)));
            }
        }
        publish(&self.shared, &self.tx, |view| view.replace(fresh));
        Ok(vanished)
    }

    /// One node of a relist: its data if it is in scope, then its children if the scope lists
    /// them (not for a node found gone).
    async fn read_node(
        &self,
        root: &str,
        path: String,
    ) -> Result<(String, Option<Found>, Option<Listed>)> {
        let data = if self.scope.covers(root, &path) {
            match self.read(&path).await? {
                Some(found) => Some(found),
                None => return Ok((path, None, None)),
            }
        } else {
            None
        };
        let children = if self.scope.lists_children_of(root, &path) {
            match retry(&*self.zk, &path, |zk, p| zk.get_children(p)).await {
                Ok(listed) => Some(listed),
                Err(Error::NoNode { .. }) => None,
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        Ok((path, data, children))
    }

    async fn read(&self, path: &str) -> Result<Option<(Vec<u8>, Stat)>> {
        match retry(&*self.zk, path, |zk, p| zk.get_data(p)).await {
            Ok(found) => Ok(Some(found)),
            Err(Error::NoNode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Changes the view and queues the events of the change under one lock, so that whoever
/// holds the lock finds every change the view shows with its events already queued (what
/// [`Cache::take_events_and_view`](super::Cache::take_events_and_view) relies on). Queued after
/// the lock was released, a relist's events trailed its changes: on a multi-threaded runtime
/// a reader that drained the events and then read the view saw changes without their events.
pub(super) fn publish(
    shared: &Mutex<Shared>,
    tx: &mpsc::UnboundedSender<CacheEvent>,
    change: impl FnOnce(&mut View) -> Vec<CacheEvent>,
) {
    let mut shared = lock(shared);
    for event in change(&mut shared.view) {
        // Nobody listening is fine: the view is kept either way.
        let _ = tx.unbounded_send(event);
    }
}

/// A call retried after indeterminate errors (reads, syncs and watch arming are idempotent).
async fn retry<'a, C, T>(
    zk: &'a C,
    path: &'a str,
    call: impl Fn(&'a C, &'a str) -> crate::OpFuture<'a, T>,
) -> Result<T>
where
    C: Coordination + ?Sized,
{
    loop {
        match call(zk, path).await {
            Err(e) if e.is_indeterminate() => tokio::time::sleep(RETRY_PAUSE).await,
            other => return other,
        }
    }
}

fn arm(
    armed: &mut BTreeSet<(String, Kind)>,
    pending: &mut FuturesUnordered<Fired>,
    path: &str,
    kind: Kind,
    watch: Watch,
) {
    armed.insert((path.to_owned(), kind));
    let path = path.to_owned();
    pending.push(async move { (path, kind, watch.await) }.boxed());
}
