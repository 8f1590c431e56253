//! A cache of a node, its children or its subtree (Curator's `CuratorCache`, `NodeCache`,
//! `PathChildrenCache`, `TreeCache`, as one design): an initial load, then `Created`,
//! `Changed` and `Deleted` events with data and [`Stat`], and a view that stays consistent
//! across connection losses and session expiry.
//!
//! # How it follows the tree
//!
//! On servers that have them (ZooKeeper 3.6+), the cache arms one persistent watch on its
//! root (recursive for children and subtree scopes) and re-reads each node an event names.
//! Those reads are pipelined: each is sent as its event arrives and the replies are applied
//! in the order sent, so the cache keeps pace with the server rather than with one round trip
//! per change (`avout bench cache-lag` measures how far it trails a writer).
//! On older servers, which refuse `addWatch` with [`Error::Unimplemented`], it falls back to
//! one-shot watches: a data watch on every cached node and a child watch on every node whose
//! children are in scope, each re-armed by the read that follows its event.
//!
//! Every read goes through one diff: a node with a later `mzxid` is `Changed`, one
//! with another `czxid` was deleted and created again, a read no newer than the view reports
//! nothing. So the same change, seen through an event and again through a re-list, is reported
//! once, and a lagging server's older answer never rolls the view back.
//!
//! A change shows in the view when its events are queued, not when they are taken:
//! [`Cache::take_events_and_view`] reads the events ready and the view they lead to at one
//! instant.
//!
//! # Connection loss, expiry, cancellation
//!
//! - **Connection loss**: one-shot watches are re-armed by the client library on
//!   reconnection and report what they missed, so nothing is needed. Persistent watches miss
//!   the changes made while disconnected (ZOOKEEPER-4698): on the `Connected` event that
//!   follows, the cache re-lists its scope and reports the differences. Reads that fail with
//!   an indeterminate error are retried (they are idempotent) after a short pause.
//! - **Session expiry**: with a plain session every later call fails, so the cache stops
//!   and [`Cache::error`] says why; its view stays as it was last seen. With a managed
//!   [`Client`](crate::Client), the next call runs on the new session: the cache re-arms its
//!   watch there, re-lists, and reports the differences.
//! - **Cancellation**: [`Cache::close`] or dropping the cache stops its task; a persistent
//!   watch is removed (or, if that cannot be sent, lasts until the session ends).
//!
//! ```
//! use std::sync::Arc;
//! use avout::{Coordination, CoordinationExt};
//! use avout::recipes::cache::{Cache, CacheEvent, CacheScope};
//!
//! async fn follow(zk: Arc<dyn Coordination>) -> avout::Result<()> {
//!     zk.ensure_path("/config").await?;
//!     let mut cache = Cache::start(zk.clone(), "/config", CacheScope::Subtree).await?;
//!     zk.create("/config/db", b"pg://", &Default::default()).await?;
//!     while let Some(event) = cache.next_event().await {
//!         if let CacheEvent::Created { path, .. } = &event {
//!             if path == "/config/db" {
//!                 break;
//!             }
//!         }
//!     }
//!     assert_eq!(cache.get("/config/db").unwrap().data, b"pg://");
//!     cache.close().await;
//!     Ok(())
//! }
//! ```

mod follow;
// OS threads sharing the view: outside the loom build, whose mutex needs a loom execution.
#[cfg(all(test, not(avout_loom)))]
mod tests;
mod view;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use futures::StreamExt;
use futures::channel::mpsc;

use crate::planted::Bugs;
use crate::sync::{Mutex, lock};
use crate::{Coordination, Error, Result, Stat};

use follow::Follower;
use view::View;

/// What a cache holds, relative to its root.
///
/// ```
/// assert!(avout::recipes::cache::CacheScope::Subtree.covers("/r", "/r/a/b"));
/// assert!(!avout::recipes::cache::CacheScope::Children.covers("/r", "/r"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheScope {
    /// The root node only.
    Node,
    /// The root's children (not the root, not grandchildren).
    Children,
    /// The root and every descendant.
    Subtree,
}

impl CacheScope {
    /// Whether `path` is cached by a cache of this scope on `root`.
    ///
    /// ```
    /// use avout::recipes::cache::CacheScope;
    /// assert!(CacheScope::Children.covers("/r", "/r/a"));
    /// assert!(!CacheScope::Children.covers("/r", "/r/a/b"));
    /// assert!(CacheScope::Node.covers("/r", "/r"));
    /// ```
    pub fn covers(self, root: &str, path: &str) -> bool {
        match self {
            CacheScope::Node => path == root,
            CacheScope::Children => crate::path::parent(path) == Some(root) && path != root,
            CacheScope::Subtree => path == root || crate::path::is_descendant(path, root),
        }
    }

    /// Whether the children of `path` are listed (to find nodes in scope).
    fn lists_children_of(self, root: &str, path: &str) -> bool {
        match self {
            CacheScope::Node => false,
            CacheScope::Children => path == root,
            CacheScope::Subtree => true,
        }
    }
}

/// A cached node.
///
/// ```
/// let e = avout::recipes::cache::Entry { data: b"x".to_vec(), stat: avout::Stat::default() };
/// assert_eq!(e.data, b"x");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its data.
    pub data: Vec<u8>,
    /// Its metadata as last read.
    pub stat: Stat,
}

/// A change the cache saw.
///
/// ```
/// use avout::recipes::cache::CacheEvent;
/// let e = CacheEvent::Created { path: "/a".into(), data: vec![], stat: avout::Stat::default() };
/// assert_eq!(e.to_string(), "created /a");
/// assert_eq!(e.path(), Some("/a"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheEvent {
    /// A node came into the cache (also for each node of the initial load).
    Created {
        /// The node.
        path: String,
        /// Its data.
        data: Vec<u8>,
        /// Its metadata.
        stat: Stat,
    },
    /// A cached node's data changed (its `mzxid` moved on).
    Changed {
        /// The node.
        path: String,
        /// The new data.
        data: Vec<u8>,
        /// The new metadata.
        stat: Stat,
    },
    /// A cached node is gone.
    Deleted {
        /// The node.
        path: String,
        /// Its last cached data.
        data: Vec<u8>,
        /// Its last cached metadata.
        stat: Stat,
    },
    /// The initial load is complete: every node in scope then has had its `Created`.
    Initialized,
}

impl CacheEvent {
    /// The node the event is about (`None` for `Initialized`).
    ///
    /// ```
    /// assert_eq!(avout::recipes::cache::CacheEvent::Initialized.path(), None);
    /// ```
    pub fn path(&self) -> Option<&str> {
        match self {
            CacheEvent::Created { path, .. }
            | CacheEvent::Changed { path, .. }
            | CacheEvent::Deleted { path, .. } => Some(path),
            CacheEvent::Initialized => None,
        }
    }
}

impl fmt::Display for CacheEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheEvent::Created { path, .. } => write!(f, "created {path}"),
            CacheEvent::Changed { path, .. } => write!(f, "changed {path}"),
            CacheEvent::Deleted { path, .. } => write!(f, "deleted {path}"),
            CacheEvent::Initialized => f.write_str("initialized"),
        }
    }
}

/// What the cache's task and its handle share.
#[derive(Debug, Default)]
struct Shared {
    view: View,
    /// Why the task stopped, if it did on an error.
    error: Option<Error>,
    /// Whether the cache follows the tree with a persistent watch (else one-shot watches).
    persistent: bool,
}

/// A cache of a node, its children or its subtree; see the [module docs](self).
pub struct Cache {
    shared: Arc<Mutex<Shared>>,
    events: mpsc::UnboundedReceiver<CacheEvent>,
    stop: Option<futures::channel::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shared = lock(&self.shared);
        f.debug_struct("Cache")
            .field("nodes", &shared.view.nodes.len())
            .field("persistent", &shared.persistent)
            .field("error", &shared.error)
            .finish()
    }
}

impl Cache {
    /// Starts a cache of `scope` on `root` (which need not exist) and returns once the
    /// initial load is done: the view is then complete, and the events so far are the
    /// initial `Created`s and `Initialized`. Must be called within a tokio runtime.
    ///
    /// Errors: the error that stopped the initial load (a session lost, `NoAuth`, …).
    ///
    /// ```
    /// # async fn demo(zk: std::sync::Arc<dyn avout::Coordination>) -> avout::Result<()> {
    /// use avout::recipes::cache::{Cache, CacheScope};
    /// let cache = Cache::start(zk, "/services", CacheScope::Children).await?;
    /// println!("{} services", cache.snapshot().len());
    /// # Ok(()) }
    /// ```
    pub async fn start<C>(zk: Arc<C>, root: &str, scope: CacheScope) -> Result<Cache>
    where
        C: Coordination + ?Sized + 'static,
    {
        Self::start_planted(zk, root, scope, Bugs::NONE).await
    }

    /// [`start`](Self::start) with `bugs` planted in the cache (see [`crate::planted`]).
    ///
    /// ```
    /// # async fn demo(zk: std::sync::Arc<dyn avout::Coordination>) -> avout::Result<()> {
    /// use avout::recipes::cache::{Cache, CacheScope};
    /// let cache = Cache::start_planted(zk, "/s", CacheScope::Node, avout::planted::Bugs::NONE).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start_planted<C>(
        zk: Arc<C>,
        root: &str,
        scope: CacheScope,
        bugs: Bugs,
    ) -> Result<Cache>
    where
        C: Coordination + ?Sized + 'static,
    {
        crate::path::validate_path(root, false)?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (tx, events) = mpsc::unbounded();
        let (ready_tx, ready_rx) = futures::channel::oneshot::channel();
        let (stop, stopped) = futures::channel::oneshot::channel();
        let follower = Follower::new(zk, root, scope, shared.clone(), tx, bugs);
        let task = crate::task::spawn(follower.run(ready_tx, stopped));
        match ready_rx.await {
            Ok(Ok(())) => Ok(Cache {
                shared,
                events,
                stop: Some(stop),
                task: Some(task),
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(lock(&shared).error.clone().unwrap_or(Error::Closed)),
        }
    }

    /// The next event, or `None` once the cache stopped (closed, or on an error: see
    /// [`error`](Self::error)) and every event was taken.
    pub async fn next_event(&mut self) -> Option<CacheEvent> {
        self.events.next().await
    }

    /// The next event if one is ready now.
    pub fn try_next_event(&mut self) -> Option<CacheEvent> {
        self.events.try_recv().ok()
    }

    /// A cached node.
    pub fn get(&self, path: &str) -> Option<Entry> {
        lock(&self.shared).view.nodes.get(path).cloned()
    }

    /// Every cached node, by path.
    ///
    /// It may show changes whose events are not taken yet: an event is queued when its change
    /// shows in the view. For the view the events taken lead to, use
    /// [`take_events_and_view`](Self::take_events_and_view).
    pub fn snapshot(&self) -> BTreeMap<String, Entry> {
        lock(&self.shared).view.nodes.clone()
    }

    /// Every event ready now and the view, read at one instant: replaying all the events
    /// taken (with [`next_event`](Self::next_event), [`try_next_event`](Self::try_next_event)
    /// and this) gives the view returned. Draining `try_next_event` and then reading
    /// [`snapshot`](Self::snapshot) gives no such pair on a multi-threaded runtime: the task
    /// may change the view in between, and the view then shows changes whose events were not
    /// taken.
    ///
    /// ```
    /// # async fn demo(zk: std::sync::Arc<dyn avout::Coordination>) -> avout::Result<()> {
    /// use avout::recipes::cache::{Cache, CacheEvent, CacheScope};
    /// let mut cache = Cache::start(zk, "/s", CacheScope::Subtree).await?;
    /// let (events, view) = cache.take_events_and_view();
    /// // None taken before: the initial load's events are among them.
    /// assert!(events.contains(&CacheEvent::Initialized));
    /// println!("{} events lead to {} nodes", events.len(), view.len());
    /// # Ok(()) }
    /// ```
    pub fn take_events_and_view(&mut self) -> (Vec<CacheEvent>, BTreeMap<String, Entry>) {
        // The task queues a change's events under this lock (`follow::publish`): held, it
        // leaves no change in the view whose events are still to come.
        let shared = lock(&self.shared);
        let events = std::iter::from_fn(|| self.events.try_recv().ok()).collect();
        (events, shared.view.nodes.clone())
    }

    /// Why the cache stopped following the tree, if it did.
    pub fn error(&self) -> Option<Error> {
        lock(&self.shared).error.clone()
    }

    /// Whether the cache follows the tree with a persistent watch (`false`: one-shot watches,
    /// on a server before 3.6).
    pub fn uses_persistent_watch(&self) -> bool {
        lock(&self.shared).persistent
    }

    /// Stops the cache and waits for its task to end (removing its persistent watch).
    pub async fn close(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            // The task removes its watch and ends; nobody waits for it.
            let _ = stop.send(());
        }
    }
}
