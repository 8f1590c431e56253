//! The data tree of one replica and the transactions that change it.
//!
//! ZooKeeper splits a write in two: the leader *prepares* it (checks paths, versions and ACLs
//! against the tree plus the writes still in flight, picks the sequence suffix) into a
//! transaction, and every replica *applies* committed transactions in zxid order. Applying
//! cannot fail: every check already happened. This module is the apply half, shared by the
//! leader and by the lagging follower, which replays the same transactions later; the
//! prepare half lives in [`super::Kernel`].
//!
//! Watches live in the replica a session reads from, as in ZooKeeper, in two tables keyed by
//! path: *data* watches (armed by `getData` and by `exists`, even on a missing node) and
//! *child* watches (armed by `getChildren`). Applying a transaction fires and removes them:
//!
//! | change | data watches of the node | child watches of the node | child watches of the parent |
//! |--------|--------------------------|---------------------------|-----------------------------|
//! | create | `NodeCreated`            | –                         | `NodeChildrenChanged`       |
//! | set    | `NodeDataChanged`        | –                         | –                           |
//! | delete | `NodeDeleted`            | `NodeDeleted`             | `NodeChildrenChanged`       |
//!
//! `cversion` is kept as clients see it. ZooKeeper 3.8 stores the number of child *creates*
//! (which numbers sequential children) and reports `2 × creates − numChildren`, which counts
//! creates and deletes of children alike; so both creating and deleting a child add one here,
//! and the create count is recovered as `(cversion + numChildren) / 2`.
//!
//! A session watching a deleted node in both tables gets one `NodeDeleted`, as ZooKeeper's
//! `WatchManager` suppresses the duplicate. The client library fans one event out to every
//! watch it holds for that path and kind.
//!
//! Persistent watches (`addWatch`) live in the same tables with a [`WatchMode`], one mode per
//! session and path and table, as in ZooKeeper 3.8's `WatcherModeManager`: arming a one-shot
//! watch where the session has a persistent one replaces it (ZOOKEEPER-4466, fixed only in
//! 3.9). A persistent watch, recursive or not, is put in both tables (so a recursive watch
//! replaces a one-shot child watch of the same session and path, which then never fires) and
//! is not removed when it fires; a recursive one also fires, with the changed node's path,
//! for changes of descendants, and never reports `NodeChildrenChanged`. One change notifies
//! a session once per table, however many of its watches match.
//!
//! TTL nodes (`ephemeral_owner` holds their TTL, as ZooKeeper encodes it) are deleted by
//! [`super::Kernel::reap_ttls`] once they have no children and their data was last changed
//! longer than their TTL ago.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use avout::{Acl, EventKind, SessionId, SessionState, Stat, WatchedEvent};

/// How a watch stays armed: one-shot, or persistent (`addWatch`) on its node, or on its node
/// and every descendant. A session has one mode per path in each of the data and child
/// tables, the last armed (ZooKeeper 3.8, ZOOKEEPER-4466).
///
/// ```
/// assert_ne!(avout_sim_zk::kernel::WatchMode::Standard, avout_sim_zk::kernel::WatchMode::Persistent);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WatchMode {
    /// One-shot: removed when it fires.
    Standard,
    /// Stays armed, on its node only.
    Persistent,
    /// Stays armed, on its node and every descendant (data table only).
    PersistentRecursive,
}

type WatchTable = BTreeMap<String, BTreeMap<SessionId, WatchMode>>;

/// One node of the tree.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    /// The node's data, shared with the transaction that set it and every replica that
    /// applied it.
    pub data: Arc<[u8]>,
    /// Its metadata, as clients see it.
    pub stat: Stat,
    /// Its ACL (after `auth` entries were replaced by the creator's identities), shared with
    /// the transaction that set it and every replica that applied it.
    pub acl: Arc<[Acl]>,
    /// Whether it is a container (deleted once it had children and has none left).
    pub container: bool,
    /// A TTL node's TTL in milliseconds (clients see `ephemeralOwner` 0 for it).
    pub ttl_ms: Option<u64>,
    /// The names of its children.
    pub children: BTreeSet<String>,
}

/// A committed change, as the leader broadcasts it to every replica.
///
/// ```
/// use avout_sim_zk::kernel::{Txn, TxnKind};
/// let txn = Txn { zxid: 1, time_ms: 0, session: avout::SessionId(1), kind: TxnKind::Error };
/// assert_eq!(txn.zxid, 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Txn {
    /// The transaction's id; every write request consumes one, failed or not.
    pub zxid: i64,
    /// Virtual time of the commit, milliseconds.
    pub time_ms: i64,
    /// The session that made the request (0 for the server's own, like container reaping).
    pub session: SessionId,
    /// What changes.
    pub kind: TxnKind,
}

/// The change a [`Txn`] makes.
///
/// ```
/// use avout_sim_zk::kernel::TxnKind;
/// let k = TxnKind::Delete { path: "/a".into() };
/// assert!(matches!(k, TxnKind::Delete { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TxnKind {
    /// Creates a node (its parent exists and has no child of that name).
    Create {
        /// The node's full path, sequence suffix included.
        path: String,
        /// Its data.
        data: Arc<[u8]>,
        /// Its ACL.
        acl: Arc<[Acl]>,
        /// The owning session if ephemeral, else 0.
        ephemeral_owner: i64,
        /// Whether it is a container.
        container: bool,
        /// A TTL node's TTL, milliseconds.
        ttl_ms: Option<u64>,
    },
    /// Deletes a node that exists and has no children.
    Delete {
        /// The node.
        path: String,
    },
    /// Replaces a node's data.
    SetData {
        /// The node.
        path: String,
        /// The new data.
        data: Arc<[u8]>,
    },
    /// Replaces a node's ACL (and bumps its `aversion`).
    SetAcl {
        /// The node.
        path: String,
        /// The new ACL (after `auth` entries were replaced).
        acl: Arc<[Acl]>,
    },
    /// Several changes under one zxid.
    Multi(Vec<TxnKind>),
    /// A session was created.
    CreateSession {
        /// Its timeout, milliseconds.
        timeout_ms: u64,
    },
    /// The session ended (closed or expired): its ephemerals go, its watches are dropped.
    CloseSession,
    /// A rejected write: nothing changes but the zxid.
    Error,
}

/// A watch event for one session.
///
/// ```
/// use avout::{EventKind, SessionId, SessionState, WatchedEvent};
/// let f = avout_sim_zk::kernel::Fired {
///     session: SessionId(1),
///     event: WatchedEvent { kind: EventKind::NodeCreated, state: SessionState::Connected, path: "/a".into() },
/// };
/// assert_eq!(f.event.path, "/a");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fired {
    /// The session whose watch fired.
    pub session: SessionId,
    /// The event.
    pub event: WatchedEvent,
}

/// The data tree of one replica: nodes, ephemeral ownership, container candidates, watches.
///
/// ```
/// let tree = avout_sim_zk::kernel::DataTree::new();
/// assert!(tree.node("/").is_some());
/// assert!(tree.node("/zookeeper").is_some());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DataTree {
    nodes: BTreeMap<String, Node>,
    ephemerals: BTreeMap<SessionId, BTreeSet<String>>,
    /// Containers that had children and now have none: the next reap deletes them.
    empty_containers: BTreeSet<String>,
    /// The TTL nodes (ZooKeeper's `DataTree.ttls`).
    ttls: BTreeSet<String>,
    data_watches: WatchTable,
    child_watches: WatchTable,
    last_zxid: i64,
}

impl Default for DataTree {
    fn default() -> Self {
        Self::new()
    }
}

impl DataTree {
    /// A fresh tree as a new ZooKeeper 3.8 server has it: `/`, `/zookeeper`,
    /// `/zookeeper/quota` and `/zookeeper/config`.
    ///
    /// ```
    /// let tree = avout_sim_zk::kernel::DataTree::new();
    /// assert_eq!(tree.last_zxid(), 0);
    /// ```
    pub fn new() -> Self {
        let mut nodes = BTreeMap::new();
        // The server adds these without counting creates, so the visible cversion
        // (2 × creates − numChildren) starts below zero, as on a fresh 3.8 server.
        let system = |children: &[&str], acl: Vec<Acl>| Node {
            data: Arc::from([]),
            stat: Stat {
                num_children: children.len() as i32,
                cversion: -(children.len() as i32),
                ..Stat::default()
            },
            acl: acl.into(),
            container: false,
            ttl_ms: None,
            children: children.iter().map(|c| (*c).to_owned()).collect(),
        };
        nodes.insert("/".to_owned(), system(&["zookeeper"], Acl::open_unsafe()));
        nodes.insert(
            "/zookeeper".to_owned(),
            system(&["config", "quota"], Acl::open_unsafe()),
        );
        nodes.insert(
            "/zookeeper/quota".to_owned(),
            system(&[], Acl::open_unsafe()),
        );
        nodes.insert(
            "/zookeeper/config".to_owned(),
            system(&[], Acl::read_unsafe()),
        );
        DataTree {
            nodes,
            ephemerals: BTreeMap::new(),
            empty_containers: BTreeSet::new(),
            ttls: BTreeSet::new(),
            data_watches: BTreeMap::new(),
            child_watches: BTreeMap::new(),
            last_zxid: 0,
        }
    }

    /// The node at `path`.
    ///
    /// ```
    /// assert!(avout_sim_zk::kernel::DataTree::new().node("/missing").is_none());
    /// ```
    pub fn node(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// The zxid of the last transaction applied.
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::kernel::DataTree::new().last_zxid(), 0);
    /// ```
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// The number of nodes, the root and `/zookeeper` included.
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::kernel::DataTree::new().len(), 4);
    /// ```
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: the root cannot be deleted.
    ///
    /// ```
    /// assert!(!avout_sim_zk::kernel::DataTree::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every node, in path order.
    ///
    /// ```
    /// let tree = avout_sim_zk::kernel::DataTree::new();
    /// assert_eq!(tree.nodes().next().map(|(p, _)| p), Some("/"));
    /// ```
    pub fn nodes(&self) -> impl Iterator<Item = (&str, &Node)> {
        self.nodes.iter().map(|(p, n)| (p.as_str(), n))
    }

    /// How many nodes lie under `path` (its descendants; the node itself not counted).
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::kernel::DataTree::new().count_under("/zookeeper"), 2);
    /// ```
    pub fn count_under(&self, path: &str) -> usize {
        let prefix = format!("{path}/");
        self.nodes
            .range::<str, _>((
                std::ops::Bound::Excluded(prefix.as_str()),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(p, _)| p.starts_with(&prefix))
            .count()
    }

    /// The ephemeral nodes a session owns.
    ///
    /// ```
    /// let tree = avout_sim_zk::kernel::DataTree::new();
    /// assert_eq!(tree.ephemerals(avout::SessionId(7)).count(), 0);
    /// ```
    pub fn ephemerals(&self, session: SessionId) -> impl Iterator<Item = &str> {
        self.ephemerals
            .get(&session)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// Containers due for deletion (they had children and have none now), in path order.
    pub(crate) fn empty_containers(&self) -> impl Iterator<Item = &str> {
        self.empty_containers.iter().map(String::as_str)
    }

    pub(crate) fn add_data_watch(&mut self, path: &str, session: SessionId) {
        self.set_data_mode(path, session, WatchMode::Standard);
    }

    pub(crate) fn add_child_watch(&mut self, path: &str, session: SessionId) {
        self.child_watches
            .entry(path.to_owned())
            .or_default()
            .insert(session, WatchMode::Standard);
    }

    /// Arms a persistent watch (ZooKeeper 3.8's `DataTree.addWatch`): in both tables, with
    /// its mode, replacing any watch of the session on that path.
    pub(crate) fn add_persistent_watch(&mut self, path: &str, session: SessionId, recursive: bool) {
        let mode = if recursive {
            WatchMode::PersistentRecursive
        } else {
            WatchMode::Persistent
        };
        for table in [&mut self.data_watches, &mut self.child_watches] {
            table
                .entry(path.to_owned())
                .or_default()
                .insert(session, mode);
        }
    }

    /// Removes every watch the session has on `path`, of any mode (`removeWatches` with
    /// `WatcherType.Any`); whether there was one.
    pub(crate) fn remove_watches(&mut self, path: &str, session: SessionId) -> bool {
        let mut removed = false;
        for table in [&mut self.data_watches, &mut self.child_watches] {
            if let Some(sessions) = table.get_mut(path) {
                removed |= sessions.remove(&session).is_some();
                if sessions.is_empty() {
                    table.remove(path);
                }
            }
        }
        removed
    }

    fn set_data_mode(&mut self, path: &str, session: SessionId, mode: WatchMode) {
        self.data_watches
            .entry(path.to_owned())
            .or_default()
            .insert(session, mode);
    }

    /// Moves a session's watches to another replica (used when a session changes server:
    /// both replicas are at the same zxid then, so no change can be missed): the data
    /// table's and the child table's, with their modes.
    pub(crate) fn take_watches(&mut self, session: SessionId) -> (Watches, Watches) {
        let take = |table: &mut WatchTable| {
            let mut taken = Vec::new();
            table.retain(|path, sessions| {
                if let Some(mode) = sessions.remove(&session) {
                    taken.push((path.clone(), mode));
                }
                !sessions.is_empty()
            });
            taken
        };
        (take(&mut self.data_watches), take(&mut self.child_watches))
    }

    /// Arms watches taken from another replica with [`take_watches`](Self::take_watches).
    pub(crate) fn put_watches(&mut self, session: SessionId, (data, child): (Watches, Watches)) {
        for (path, mode) in data {
            self.set_data_mode(&path, session, mode);
        }
        for (path, mode) in child {
            self.child_watches
                .entry(path)
                .or_default()
                .insert(session, mode);
        }
    }

    /// The TTL nodes due for deletion at `now_ms`: childless, and unchanged for longer than
    /// their TTL (ZooKeeper's `ContainerManager` measures from `mtime`), in path order.
    pub(crate) fn expired_ttls(&self, now_ms: i64) -> Vec<String> {
        self.ttls
            .iter()
            .filter(|path| {
                let node = &self.nodes[path.as_str()];
                let ttl = node
                    .ttl_ms
                    .map_or(i64::MAX, |t| i64::try_from(t).unwrap_or(i64::MAX));
                node.children.is_empty() && now_ms.saturating_sub(node.stat.mtime) > ttl
            })
            .cloned()
            .collect()
    }

    /// The earliest time (ms) a childless TTL node falls due, if there is one.
    pub(crate) fn next_ttl_ms(&self) -> Option<i64> {
        self.ttls
            .iter()
            .filter_map(|path| {
                let node = &self.nodes[path.as_str()];
                if !node.children.is_empty() {
                    // Due only once childless: the write deleting its last child checks it.
                    return None;
                }
                let ttl = i64::try_from(node.ttl_ms?).unwrap_or(i64::MAX);
                Some(node.stat.mtime.saturating_add(ttl).saturating_add(1))
            })
            .min()
    }

    /// Applies a committed transaction, appending the watch events it fires to `events`, and
    /// returns the new [`Stat`] of every node created or set, in order.
    ///
    /// # Panics
    ///
    /// If the transaction does not fit the tree (a create under a missing parent, a delete of
    /// a node with children, a zxid out of order): the leader prepared it against this state,
    /// so a mismatch is a bug in the kernel.
    ///
    /// ```
    /// use avout_sim_zk::kernel::{DataTree, Txn, TxnKind};
    /// let mut tree = DataTree::new();
    /// let create = TxnKind::Create {
    ///     path: "/a".into(), data: b"x"[..].into(), acl: avout::Acl::open_unsafe().into(),
    ///     ephemeral_owner: 0, container: false, ttl_ms: None,
    /// };
    /// let mut events = Vec::new();
    /// let stats = tree.apply(&Txn { zxid: 1, time_ms: 5, session: avout::SessionId(1), kind: create }, &mut events);
    /// assert_eq!(stats[0].czxid, 1);
    /// // A fresh root shows -1 (it holds /zookeeper, which was never "created").
    /// assert_eq!(tree.node("/").unwrap().stat.cversion, 0);
    /// ```
    pub fn apply(&mut self, txn: &Txn, events: &mut Vec<Fired>) -> Vec<Stat> {
        let mut stats = Vec::new();
        self.apply_to(txn, events, Some(&mut stats));
        stats
    }

    /// [`apply`](Self::apply) for a replica that answers nobody: the stats are not kept.
    pub(crate) fn replay(&mut self, txn: &Txn, events: &mut Vec<Fired>) {
        self.apply_to(txn, events, None);
    }

    fn apply_to(&mut self, txn: &Txn, events: &mut Vec<Fired>, mut stats: Option<&mut Vec<Stat>>) {
        assert!(
            txn.zxid > self.last_zxid,
            "transaction {} applied after {}",
            txn.zxid,
            self.last_zxid
        );
        match &txn.kind {
            TxnKind::CloseSession => {
                let owned: Vec<String> = self
                    .ephemerals
                    .get(&txn.session)
                    .map(|set| set.iter().cloned().collect())
                    .unwrap_or_default();
                for path in owned {
                    self.delete(&path, txn.zxid, events);
                }
                self.ephemerals.remove(&txn.session);
                let _dropped = self.take_watches(txn.session);
            }
            kind => self.apply_kind(kind, txn.zxid, txn.time_ms, events, &mut stats),
        }
        self.last_zxid = txn.zxid;
    }

    fn apply_kind(
        &mut self,
        kind: &TxnKind,
        zxid: i64,
        time_ms: i64,
        events: &mut Vec<Fired>,
        stats: &mut Option<&mut Vec<Stat>>,
    ) {
        let mut answer = |stat: Stat| {
            if let Some(stats) = stats.as_deref_mut() {
                stats.push(stat);
            }
        };
        match kind {
            TxnKind::Create {
                path,
                data,
                acl,
                ephemeral_owner,
                container,
                ttl_ms,
            } => answer(self.create(
                path,
                data,
                acl,
                *ephemeral_owner,
                (*container, *ttl_ms),
                zxid,
                time_ms,
                events,
            )),
            TxnKind::Delete { path } => self.delete(path, zxid, events),
            TxnKind::SetData { path, data } => {
                let node = self
                    .nodes
                    .get_mut(path)
                    .unwrap_or_else(|| panic!("set of missing node {path} at zxid {zxid}"));
                node.data = data.clone();
                node.stat.version += 1;
                node.stat.mzxid = zxid;
                node.stat.mtime = time_ms;
                node.stat.data_length = data.len() as i32;
                answer(node.stat);
                self.trigger(path, EventKind::NodeDataChanged, events);
            }
            TxnKind::SetAcl { path, acl } => {
                let node = self
                    .nodes
                    .get_mut(path)
                    .unwrap_or_else(|| panic!("setACL of missing node {path} at zxid {zxid}"));
                node.acl = acl.clone();
                node.stat.aversion += 1;
                answer(node.stat);
            }
            TxnKind::Multi(kinds) => {
                for kind in kinds {
                    self.apply_kind(kind, zxid, time_ms, events, stats);
                }
            }
            TxnKind::CreateSession { .. } | TxnKind::Error => {}
            TxnKind::CloseSession => panic!("CloseSession inside a multi at zxid {zxid}"),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn create(
        &mut self,
        path: &str,
        data: &Arc<[u8]>,
        acl: &Arc<[Acl]>,
        ephemeral_owner: i64,
        (container, ttl_ms): (bool, Option<u64>),
        zxid: i64,
        time_ms: i64,
        events: &mut Vec<Fired>,
    ) -> Stat {
        let parent_path = avout::path::parent(path)
            .unwrap_or_else(|| panic!("create of the root at zxid {zxid}"));
        let parent = self
            .nodes
            .get_mut(parent_path)
            .unwrap_or_else(|| panic!("create of {path} under a missing parent at zxid {zxid}"));
        assert!(
            parent.children.insert(avout::path::name(path).to_owned()),
            "create of existing node {path} at zxid {zxid}"
        );
        parent.stat.cversion += 1;
        parent.stat.pzxid = zxid;
        parent.stat.num_children += 1;
        if parent.container {
            self.empty_containers.remove(parent_path);
        }
        let stat = Stat {
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            ctime: time_ms,
            mtime: time_ms,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner,
            data_length: data.len() as i32,
            num_children: 0,
        };
        self.nodes.insert(
            path.to_owned(),
            Node {
                data: data.clone(),
                stat,
                acl: acl.clone(),
                container,
                ttl_ms,
                children: BTreeSet::new(),
            },
        );
        if ttl_ms.is_some() {
            self.ttls.insert(path.to_owned());
        }
        if ephemeral_owner != 0 {
            self.ephemerals
                .entry(SessionId(ephemeral_owner))
                .or_default()
                .insert(path.to_owned());
        }
        self.trigger(path, EventKind::NodeCreated, events);
        self.trigger_children(parent_path, events);
        stat
    }

    fn delete(&mut self, path: &str, zxid: i64, events: &mut Vec<Fired>) {
        let node = self
            .nodes
            .remove(path)
            .unwrap_or_else(|| panic!("delete of missing node {path} at zxid {zxid}"));
        assert!(
            node.children.is_empty(),
            "delete of {path} with children at zxid {zxid}"
        );
        let parent_path = avout::path::parent(path)
            .unwrap_or_else(|| panic!("delete of the root at zxid {zxid}"));
        let parent = self
            .nodes
            .get_mut(parent_path)
            .unwrap_or_else(|| panic!("{path} had no parent at zxid {zxid}"));
        parent.children.remove(avout::path::name(path));
        parent.stat.cversion += 1;
        parent.stat.pzxid = zxid;
        parent.stat.num_children -= 1;
        if parent.container && parent.children.is_empty() {
            self.empty_containers.insert(parent_path.to_owned());
        }
        self.empty_containers.remove(path);
        self.ttls.remove(path);
        if node.stat.ephemeral_owner != 0 {
            let owner = SessionId(node.stat.ephemeral_owner);
            if let Some(set) = self.ephemerals.get_mut(&owner) {
                set.remove(path);
                if set.is_empty() {
                    self.ephemerals.remove(&owner);
                }
            }
        }
        // One NodeDeleted per session even if it watched the node in both tables.
        let notified = self.trigger(path, EventKind::NodeDeleted, events);
        fire_table(
            &mut self.child_watches,
            path,
            EventKind::NodeDeleted,
            &notified,
            events,
        );
        self.trigger_children(parent_path, events);
    }

    /// Fires the data table for a change of `path` (and, with recursive watches armed, of
    /// its ancestors' recursive watches); returns the sessions notified.
    fn trigger(
        &mut self,
        path: &str,
        kind: EventKind,
        events: &mut Vec<Fired>,
    ) -> BTreeSet<SessionId> {
        fire_table(&mut self.data_watches, path, kind, &BTreeSet::new(), events)
    }

    fn trigger_children(&mut self, path: &str, events: &mut Vec<Fired>) {
        fire_table(
            &mut self.child_watches,
            path,
            EventKind::NodeChildrenChanged,
            &BTreeSet::new(),
            events,
        );
    }
}

/// A session's watches of one table, as [`DataTree::take_watches`] hands them over.
pub(crate) type Watches = Vec<(String, WatchMode)>;

/// ZooKeeper 3.8's `WatchManager.triggerWatch`: the watches on `path` fire (one-shot ones are
/// removed), then the recursive watches on each ancestor; recursive watches never report
/// `NodeChildrenChanged`. Each session is notified once, unless in `suppress`. Returns the
/// sessions notified.
fn fire_table(
    table: &mut WatchTable,
    path: &str,
    kind: EventKind,
    suppress: &BTreeSet<SessionId>,
    events: &mut Vec<Fired>,
) -> BTreeSet<SessionId> {
    let mut notified = BTreeSet::new();
    let mut fire = |session: SessionId, notified: &mut BTreeSet<SessionId>| {
        if !suppress.contains(&session) && notified.insert(session) {
            events.push(fired(session, kind, path));
        }
    };
    if let Some(sessions) = table.get_mut(path) {
        let watching: Vec<(SessionId, WatchMode)> =
            sessions.iter().map(|(s, m)| (*s, *m)).collect();
        for (session, mode) in watching {
            if mode == WatchMode::PersistentRecursive && kind == EventKind::NodeChildrenChanged {
                continue;
            }
            fire(session, &mut notified);
            if mode == WatchMode::Standard {
                sessions.remove(&session);
            }
        }
        if sessions.is_empty() {
            table.remove(path);
        }
    }
    if kind != EventKind::NodeChildrenChanged {
        let mut ancestor = path;
        while let Some(parent) = avout::path::parent(ancestor) {
            ancestor = parent;
            if let Some(sessions) = table.get(ancestor) {
                for (&session, &mode) in sessions {
                    if mode == WatchMode::PersistentRecursive {
                        fire(session, &mut notified);
                    }
                }
            }
        }
    }
    notified
}

fn fired(session: SessionId, kind: EventKind, path: &str) -> Fired {
    Fired {
        session,
        event: WatchedEvent {
            kind,
            state: SessionState::Connected,
            path: path.to_owned(),
        },
    }
}
