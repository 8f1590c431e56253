//! The kernel: ZooKeeper's state machine, pure and synchronous.
//!
//! The kernel knows nothing of networks, clocks or tasks. Time comes in as an argument
//! (`now_ms`), requests come in as [`Request`](avout::Request) values (avout's own vocabulary, the one every
//! backend speaks) and leave as a [`Reply`] (or an [`avout::Error`]) plus the watch events
//! they fired ([`Fired`]), so the simulated network, a unit test and a model checker drive the
//! very same code. Closing a session is [`Kernel::close_session`].
//!
//! # How a request is processed
//!
//! Reads are answered from the tree of the replica the session is attached to
//! ([`Server::Leader`] by default). Writes follow ZooKeeper's pipeline:
//!
//! 1. **Prepare** (the leader's `PrepRequestProcessor`). Every write request consumes the next
//!    zxid, even if it fails, as ZooKeeper logs an error transaction for it. The request is
//!    checked against the leader's tree seen through an *overlay* of the changes the request
//!    itself already made (ZooKeeper's outstanding change records): this is what lets the
//!    third operation of a `multi` see the node the first one created. Checks run in
//!    ZooKeeper's order, so the error is the one ZooKeeper gives: for a create, invalid ACL,
//!    missing parent, `NoAuth` on the parent, existing node, ephemeral parent. A sequential
//!    node takes its suffix from the number of children ever created under the parent
//!    before it: ZooKeeper's internal `cversion`, which counts creates only, while the
//!    `cversion` clients see counts deletes too; the create count is
//!    `(cversion + numChildren) / 2`, so deletes never advance the suffix.
//! 2. **Commit and apply**. A prepared write becomes a [`Txn`] that the leader's
//!    [`DataTree`] applies at once. A failed `multi` becomes [`TxnKind::Error`]: the overlay
//!    is dropped and nothing changes, and the error is [`avout::Error::Multi`] with the index
//!    of the first failing operation.
//! 3. **Replicate**. If a lagging follower exists, the transaction also joins its backlog; the
//!    follower applies its backlog when told ([`Kernel::advance_follower`]), on `sync` from a
//!    session attached to it, and before replying to a write of such a session (ZooKeeper
//!    answers a write from the server the client is connected to, after that server applied
//!    it, which is why a session always reads its own writes). Sessions attached to the
//!    follower read stale but monotonic state; their watches live in the follower's tree and
//!    fire when the follower applies the change.
//!
//! Sessions have an id, a timeout, identities for ACLs and the replica they read from.
//! Whether a session is alive is the network's business (it knows about heartbeats, pauses
//! and partitions): it calls [`Kernel::expire_session`] when a session's timeout has passed
//! in silence. Closing or expiring a session is a transaction that deletes its ephemerals
//! (firing the watches of others) and drops its watches.
//!
//! Container nodes are deleted by [`Kernel::reap_containers`] once they have had children and
//! have none left. ZooKeeper does this from a timer (`znode.container.checkIntervalMs`, a
//! minute by default); the simulated network calls it right after the write that emptied the
//! container, which is one of the schedules the real timer allows.

mod acl;
mod op_ref;
mod requests;
mod tree;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use avout::{Acl, Reply, Result, SessionId, Stat};

pub use tree::{DataTree, Fired, Node, Txn, TxnKind, WatchMode};

/// What one kernel step produced: the reply for the requester (a [`Reply`] for a request,
/// `()` for a close) and the watch events it fired, in the order they fired. Events come
/// first on the wire.
///
/// ```
/// let a: avout_sim_zk::kernel::Applied =
///     avout_sim_zk::kernel::Applied { result: Err(avout::Error::SessionExpired), events: vec![] };
/// assert!(a.result.is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied<T = Reply> {
    /// The reply.
    pub result: Result<T>,
    /// Watch events, for any session.
    pub events: Vec<Fired>,
}

/// The replica a session reads from.
///
/// ```
/// assert_ne!(avout_sim_zk::kernel::Server::Leader, avout_sim_zk::kernel::Server::Follower(0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Server {
    /// Always current.
    Leader,
    /// The follower with this index: applies the leader's transactions late, each follower
    /// at its own pace.
    Follower(u8),
}

/// What the simulated server supports beyond ZooKeeper 3.5's requests; both on by default,
/// as on the 3.8 servers the test kit starts (with `extendedTypesEnabled=true`).
///
/// ```
/// let f = avout_sim_zk::kernel::Features::default();
/// assert!(f.persistent_watches && f.ttl_nodes);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Features {
    /// `addWatch` (ZooKeeper 3.6+); without it, it fails with `Unimplemented`, as a server
    /// that does not know the request answers.
    pub persistent_watches: bool,
    /// TTL nodes (`extendedTypesEnabled`); without it, a TTL create fails with
    /// `Unimplemented`, as a 3.8 server without the setting answers.
    pub ttl_nodes: bool,
    /// A create inside a `multi` answers the new node's [`Stat`], as ZooKeeper 3.7.2, 3.8.2
    /// and 3.9 do (ZOOKEEPER-4026); off by default, as on the Debian 3.8.0 servers the test
    /// kit starts, which answer none.
    #[serde(default)]
    pub multi_create_stats: bool,
}

impl Default for Features {
    fn default() -> Self {
        Features {
            persistent_watches: true,
            ttl_nodes: true,
            multi_create_stats: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Session {
    timeout_ms: u64,
    ids: acl::Identities,
    server: Server,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Follower {
    tree: DataTree,
    /// Shared with the other followers' backlogs: one transaction, however many replicas.
    backlog: VecDeque<Arc<Txn>>,
}

/// A node as a prepared operation sees it: the tree's, or changed by an earlier operation of
/// the same request (then not shown by the tree yet).
#[derive(Clone, Debug)]
struct Record {
    stat: Stat,
    acl: Arc<[Acl]>,
}

/// The changes the operations of one request made so far (ZooKeeper's outstanding change
/// records), by path (`None`: deleted). A request of one operation keeps none: nothing after
/// it would read them.
struct Overlay {
    changes: Option<BTreeMap<String, Option<Record>>>,
}

impl Overlay {
    /// The overlay of a `multi`, whose operations see each other's changes.
    fn multi() -> Self {
        Overlay {
            changes: Some(BTreeMap::new()),
        }
    }

    /// The overlay of a single operation.
    fn single() -> Self {
        Overlay { changes: None }
    }

    /// The change recorded for `path`: `None` if there is none, `Some(None)` if deleted.
    fn get(&self, path: &str) -> Option<&Option<Record>> {
        self.changes.as_ref()?.get(path)
    }

    /// Records `path` as `record()` makes it (if this overlay keeps changes).
    fn set(&mut self, path: &str, record: impl FnOnce() -> Option<Record>) {
        if let Some(changes) = &mut self.changes {
            changes.insert(path.to_owned(), record());
        }
    }
}

/// ZooKeeper's state machine: the leader's tree, sessions, the zxid counter and any number
/// of lagging followers. See the [module docs](self).
///
/// ```
/// use avout::{CreateMode, CreateOptions};
/// use avout::{Reply, Request};
/// use avout_sim_zk::kernel::Kernel;
/// use std::time::Duration;
///
/// let mut k = Kernel::new();
/// let s = k.create_session(0, Duration::from_secs(10));
/// let create = Request::Create {
///     path: "/jobs".into(), data: vec![], options: CreateOptions::default(),
/// };
/// assert!(k.apply(1, s, &create).result.is_ok());
/// let seq = Request::Create {
///     path: "/jobs/j-".into(), data: vec![], options: CreateMode::PersistentSequential.into(),
/// };
/// match k.apply(2, s, &seq).result {
///     Ok(Reply::Created { path, .. }) => assert_eq!(path, "/jobs/j-0000000000"),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    tree: DataTree,
    followers: Vec<Follower>,
    sessions: BTreeMap<SessionId, Session>,
    next_session: i64,
    zxid: i64,
    features: Features,
    /// The digest identity (`super:HASH`) that makes a session the superuser, as the
    /// server's `zookeeper.DigestAuthenticationProvider.superDigest` does.
    super_digest: Option<String>,
    /// The follower replica that stands for the leader's own apply queue, while the leader
    /// lags applying its commits: a `sync` of a session on it flushes nothing.
    leader_queue: Option<u8>,
}

impl Default for Kernel {
    fn default() -> Self {
        Self::new()
    }
}

/// Session ids look like a 3.8 server's with server id 1: the id in the top byte.
const SESSION_ID_BASE: i64 = 1 << 56;

impl Kernel {
    /// A fresh service with only a leader.
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::kernel::Kernel::new().last_zxid(), 0);
    /// ```
    pub fn new() -> Self {
        Kernel {
            tree: DataTree::new(),
            followers: Vec::new(),
            sessions: BTreeMap::new(),
            next_session: 1,
            zxid: 0,
            features: Features::default(),
            super_digest: None,
            leader_queue: None,
        }
    }

    /// A fresh service with a leader and one follower that sessions may be attached to.
    ///
    /// ```
    /// let k = avout_sim_zk::kernel::Kernel::with_follower();
    /// assert_eq!(k.follower_backlog(), 0);
    /// ```
    pub fn with_follower() -> Self {
        Self::with_followers(1)
    }

    /// A fresh service with a leader and `n` followers, each with its own backlog: the
    /// committed state of an ensemble of `n + 1` servers.
    ///
    /// ```
    /// let k = avout_sim_zk::kernel::Kernel::with_followers(2);
    /// assert_eq!(k.followers(), 2);
    /// ```
    pub fn with_followers(n: u8) -> Self {
        Kernel {
            followers: (0..n)
                .map(|_| Follower {
                    tree: DataTree::new(),
                    backlog: VecDeque::new(),
                })
                .collect(),
            ..Self::new()
        }
    }

    /// How many followers the kernel has.
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::kernel::Kernel::new().followers(), 0);
    /// ```
    pub fn followers(&self) -> u8 {
        u8::try_from(self.followers.len()).expect("at most 255 followers")
    }

    /// Sets what the service supports (see [`Features`]).
    ///
    /// ```
    /// use avout_sim_zk::kernel::{Features, Kernel};
    /// let mut k = Kernel::new();
    /// k.set_features(Features { persistent_watches: false, ..Features::default() });
    /// assert!(!k.features().persistent_watches);
    /// ```
    pub fn set_features(&mut self, features: Features) {
        self.features = features;
    }

    /// What the service supports.
    ///
    /// ```
    /// assert!(avout_sim_zk::kernel::Kernel::new().features().ttl_nodes);
    /// ```
    pub fn features(&self) -> Features {
        self.features
    }

    /// Sets the superuser's digest identity, `super:HASH` as ZooKeeper's
    /// `zookeeper.DigestAuthenticationProvider.superDigest` takes it: a session whose
    /// `addAuth("digest", …)` yields it becomes the superuser (`super:` in `whoAmI`), whom no
    /// ACL refuses. `None` (the default) has no superuser.
    ///
    /// ```
    /// use avout::{Acl, Perms, Reply, Request};
    /// let mut k = avout_sim_zk::kernel::Kernel::new();
    /// k.set_super_digest(Some(Acl::digest("super", "test", Perms::ALL).id));
    /// let s = k.create_session(0, std::time::Duration::from_secs(10));
    /// let auth = Request::AddAuth { scheme: "digest".into(), auth: b"super:test".to_vec() };
    /// assert_eq!(k.apply(1, s, &auth).result, Ok(Reply::AuthAdded));
    /// let config = Request::SetData { path: "/zookeeper/config".into(), data: vec![], version: None };
    /// assert!(k.apply(2, s, &config).result.is_ok(), "no ACL refuses the superuser");
    /// ```
    pub fn set_super_digest(&mut self, digest: Option<String>) {
        self.super_digest = digest;
    }

    /// The leader's tree.
    ///
    /// ```
    /// assert!(avout_sim_zk::kernel::Kernel::new().tree().node("/").is_some());
    /// ```
    pub fn tree(&self) -> &DataTree {
        &self.tree
    }

    /// The zxid of the last committed transaction.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::new();
    /// k.create_session(0, std::time::Duration::from_secs(1));
    /// assert_eq!(k.last_zxid(), 1);
    /// ```
    pub fn last_zxid(&self) -> i64 {
        self.zxid
    }

    /// The live sessions, in id order.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::new();
    /// let s = k.create_session(0, std::time::Duration::from_secs(1));
    /// assert_eq!(k.sessions().collect::<Vec<_>>(), [s]);
    /// ```
    pub fn sessions(&self) -> impl Iterator<Item = SessionId> + '_ {
        self.sessions.keys().copied()
    }

    /// Whether the session is alive.
    ///
    /// ```
    /// let k = avout_sim_zk::kernel::Kernel::new();
    /// assert!(!k.is_alive(avout::SessionId(1)));
    /// ```
    pub fn is_alive(&self, session: SessionId) -> bool {
        self.sessions.contains_key(&session)
    }

    /// The session's timeout, if it is alive.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut k = avout_sim_zk::kernel::Kernel::new();
    /// let s = k.create_session(0, Duration::from_secs(4));
    /// assert_eq!(k.session_timeout(s), Some(Duration::from_secs(4)));
    /// ```
    pub fn session_timeout(&self, session: SessionId) -> Option<Duration> {
        self.sessions
            .get(&session)
            .map(|s| Duration::from_millis(s.timeout_ms))
    }

    /// Whether the kernel has a follower.
    ///
    /// ```
    /// assert!(avout_sim_zk::kernel::Kernel::with_follower().has_follower());
    /// ```
    pub fn has_follower(&self) -> bool {
        !self.followers.is_empty()
    }

    /// How many committed transactions the first follower has not applied yet (0 without
    /// one).
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::kernel::Kernel::new().follower_backlog(), 0);
    /// ```
    pub fn follower_backlog(&self) -> usize {
        self.followers.first().map_or(0, |f| f.backlog.len())
    }

    /// The commit time (ms) of the oldest transaction the follower has not applied yet.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::with_follower();
    /// assert_eq!(k.follower_next_ms(), None);
    /// k.create_session(5, std::time::Duration::from_secs(1));
    /// assert_eq!(k.follower_next_ms(), Some(5));
    /// ```
    pub fn follower_next_ms(&self) -> Option<i64> {
        self.next_ms_of(0)
    }

    /// The commit time (ms) of the oldest transaction follower `i` has not applied yet.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::with_followers(2);
    /// k.create_session(5, std::time::Duration::from_secs(1));
    /// k.advance_follower_of(0, 5);
    /// assert_eq!((k.next_ms_of(0), k.next_ms_of(1)), (None, Some(5)));
    /// ```
    pub fn next_ms_of(&self, i: u8) -> Option<i64> {
        self.followers
            .get(usize::from(i))
            .and_then(|f| f.backlog.front())
            .map(|t| t.time_ms)
    }

    /// Opens a session (a transaction, so it consumes a zxid).
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::new();
    /// let a = k.create_session(0, std::time::Duration::from_secs(1));
    /// let b = k.create_session(0, std::time::Duration::from_secs(1));
    /// assert_ne!(a, b);
    /// ```
    pub fn create_session(&mut self, now_ms: i64, timeout: Duration) -> SessionId {
        let id = SessionId(SESSION_ID_BASE + self.next_session);
        self.next_session += 1;
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.sessions.insert(
            id,
            Session {
                timeout_ms,
                ids: acl::initial_identities(),
                server: Server::Leader,
            },
        );
        let mut events = Vec::new();
        self.commit(
            now_ms,
            id,
            TxnKind::CreateSession { timeout_ms },
            &mut events,
        );
        assert!(events.is_empty(), "creating a session fired watches");
        id
    }

    /// Moves a session to another replica. The follower first catches up with the leader,
    /// so the session never reads older state than it already saw and none of its watches
    /// can miss a change; the events that catching up fires are returned.
    ///
    /// # Panics
    ///
    /// If `server` is a follower the kernel does not have.
    ///
    /// ```
    /// use avout_sim_zk::kernel::{Kernel, Server};
    /// let mut k = Kernel::with_follower();
    /// let s = k.create_session(0, std::time::Duration::from_secs(1));
    /// k.attach(s, Server::Follower(0));
    /// assert_eq!(k.server_of(s), Some(Server::Follower(0)));
    /// ```
    pub fn attach(&mut self, session: SessionId, server: Server) -> Vec<Fired> {
        let Some(current) = self.sessions.get(&session).map(|s| s.server) else {
            return Vec::new();
        };
        if current == server {
            return Vec::new();
        }
        // Both replicas catch up first: the session never reads older state than it saw,
        // and its watches, moved across, miss no change.
        let mut events = Vec::new();
        for s in [current, server] {
            if let Server::Follower(i) = s {
                events.extend(self.sync_follower_of(i));
            }
        }
        let watches = self.read_tree_mut(current).take_watches(session);
        self.read_tree_mut(server).put_watches(session, watches);
        self.sessions
            .get_mut(&session)
            .expect("session checked above")
            .server = server;
        events
    }

    /// The replica a live session reads from.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::new();
    /// let s = k.create_session(0, std::time::Duration::from_secs(1));
    /// assert_eq!(k.server_of(s), Some(avout_sim_zk::kernel::Server::Leader));
    /// ```
    pub fn server_of(&self, session: SessionId) -> Option<Server> {
        self.sessions.get(&session).map(|s| s.server)
    }

    /// Lets every follower apply the transactions committed at or before `time_ms`.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::with_follower();
    /// k.create_session(5, std::time::Duration::from_secs(1));
    /// assert_eq!(k.follower_backlog(), 1);
    /// k.advance_follower(5);
    /// assert_eq!(k.follower_backlog(), 0);
    /// ```
    pub fn advance_follower(&mut self, time_ms: i64) -> Vec<Fired> {
        let mut events = Vec::new();
        for i in 0..self.followers() {
            events.extend(self.advance_follower_of(i, time_ms));
        }
        events
    }

    /// Lets follower `i` apply the transactions committed at or before `time_ms`.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::with_followers(2);
    /// k.create_session(5, std::time::Duration::from_secs(1));
    /// k.advance_follower_of(1, 5);
    /// assert_eq!(k.next_ms_of(1), None);
    /// ```
    pub fn advance_follower_of(&mut self, i: u8, time_ms: i64) -> Vec<Fired> {
        let mut events = Vec::new();
        if let Some(f) = self.followers.get_mut(usize::from(i)) {
            while f.backlog.front().is_some_and(|t| t.time_ms <= time_ms) {
                let txn = f.backlog.pop_front().expect("front checked");
                f.tree.replay(&txn, &mut events);
            }
        }
        events
    }

    /// Lets follower `i` apply everything committed so far (a `sync`, or the follower's
    /// answer to a write it forwarded).
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::with_followers(1);
    /// k.create_session(5, std::time::Duration::from_secs(1));
    /// k.sync_follower_of(0);
    /// assert_eq!(k.follower_backlog(), 0);
    /// ```
    pub fn sync_follower_of(&mut self, i: u8) -> Vec<Fired> {
        self.advance_follower_of(i, i64::MAX)
    }

    /// Makes follower replica `i` stand for the leader's own apply queue (`None`: none does).
    /// Sessions the ensemble attaches to it read what the leader has applied, which may
    /// trail what it has committed and what a follower has already answered. A `sync` of such
    /// a session flushes nothing: ZooKeeper's leader answers its own clients' `sync` at once,
    /// as its commit processor does not match syncs (followers do). A write of such a session
    /// still catches the replica up before its reply, as the leader applies in order.
    ///
    /// ```
    /// use avout::Request;
    /// use avout_sim_zk::kernel::{Kernel, Server};
    /// let mut k = Kernel::with_followers(2);
    /// let writer = k.create_session(0, std::time::Duration::from_secs(5));
    /// let reader = k.create_session(0, std::time::Duration::from_secs(5));
    /// k.set_leader_queue(Some(1));
    /// k.attach(reader, Server::Follower(1));
    /// let create = Request::Create { path: "/b".into(), data: vec![], options: Default::default() };
    /// assert!(k.apply(1, writer, &create).result.is_ok());
    /// k.apply(2, reader, &Request::Sync { path: "/".into() });
    /// let exists = Request::Exists { path: "/b".into(), watch: false };
    /// assert_eq!(k.apply(3, reader, &exists).result, Ok(avout::Reply::Exists(None)));
    /// ```
    pub fn set_leader_queue(&mut self, i: Option<u8>) {
        self.leader_queue = i;
    }

    /// Lets every follower apply everything committed so far.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::with_follower();
    /// k.create_session(5, std::time::Duration::from_secs(1));
    /// k.sync_follower();
    /// assert_eq!(k.follower_backlog(), 0);
    /// ```
    pub fn sync_follower(&mut self) -> Vec<Fired> {
        self.advance_follower(i64::MAX)
    }

    /// Expires a session: its ephemerals are deleted (firing others' watches) and its
    /// watches dropped. Returns the events; nothing happens for a dead session.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::new();
    /// let s = k.create_session(0, std::time::Duration::from_secs(1));
    /// k.expire_session(10, s);
    /// assert!(!k.is_alive(s));
    /// ```
    pub fn expire_session(&mut self, now_ms: i64, session: SessionId) -> Vec<Fired> {
        let mut events = Vec::new();
        if self.sessions.contains_key(&session) {
            self.end_session(now_ms, session, &mut events);
        }
        events
    }

    /// Deletes the TTL nodes due at `now_ms` (childless, data unchanged for longer than their
    /// TTL), one transaction each, as ZooKeeper's `ContainerManager` does.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::new();
    /// assert!(k.reap_ttls(0).is_empty());
    /// ```
    pub fn reap_ttls(&mut self, now_ms: i64) -> Vec<Fired> {
        let mut events = Vec::new();
        for path in self.tree.expired_ttls(now_ms) {
            self.commit(now_ms, SessionId(0), TxnKind::Delete { path }, &mut events);
        }
        events
    }

    /// The earliest virtual time (ms) at which a TTL node may fall due, if any exists.
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::kernel::Kernel::new().next_ttl_ms(), None);
    /// ```
    pub fn next_ttl_ms(&self) -> Option<i64> {
        self.tree.next_ttl_ms()
    }

    /// Deletes containers that had children and have none left, one transaction each.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::new();
    /// assert!(k.reap_containers(0).is_empty());
    /// ```
    pub fn reap_containers(&mut self, now_ms: i64) -> Vec<Fired> {
        let mut events = Vec::new();
        let due: Vec<String> = self.tree.empty_containers().map(str::to_owned).collect();
        for path in due {
            self.commit(now_ms, SessionId(0), TxnKind::Delete { path }, &mut events);
        }
        events
    }
}
