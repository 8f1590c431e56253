//! The backend conformance suite: test bodies written once against [`Coordination`], run
//! unchanged on every backend.
//!
//! # Why
//!
//! avout's protocols are tested mostly on the deterministic simulated ZooKeeper (`avout-sim-zk`)
//! because only there can faults be injected and failing schedules be replayed. That is worth
//! something only if the simulator behaves like ZooKeeper. This suite pins the behaviour both
//! must share: every case here runs on a real ZooKeeper server (standalone and a three-server
//! ensemble, see `core/tests/it/`) and on the simulator. If both pass, a schedule found in
//! simulation predicts what real ZooKeeper does — the shape of turmoil's io_uring conformance
//! tests, applied to a coordination service.
//!
//! A case asserts what real ZooKeeper 3.8 does, not what we wish it did: sequential suffixes
//! count the parent's child creates (its internal cversion; the `cversion` clients see also
//! counts deletes, which do not advance the suffix), `exists` ignores ACLs, a node's delete
//! permission lives on its parent, a container reports no `ephemeralOwner`, and so on. Where the suite and a backend disagree, the backend is wrong or the
//! suite has found something about ZooKeeper worth writing down.
//!
//! # Shape
//!
//! A backend implements [`Backend`]: how to open a session, an authenticated session, and how
//! to make the service expire a session. Each case is an `async fn(&B, root)`, where `root`
//! is a fresh node the runner creates for that case alone, so cases never see each other's
//! nodes and can run on one service one after another (or, on a real server, concurrently).
//! Cases panic with a message naming the step and what was expected on any mismatch. Anything
//! that waits for an event is bounded by [`EVENT_TIMEOUT`], so a broken backend fails instead of
//! hanging; nothing sleeps on the wall clock, so the suite also runs on a paused tokio clock.
//!
//! ```no_run
//! # async fn demo<B: avout_testkit::conformance::Backend>(backend: B) {
//! use avout_testkit::conformance;
//! // Every case, each under its own root below /conformance.
//! conformance::run_all(&backend, "/conformance").await;
//! // Or one case by name.
//! conformance::run_case(&backend, "multi_atomicity", "/one/multi_atomicity").await;
//! # }
//! ```

use std::future::Future;
use std::time::Duration;

use futures::FutureExt;

use avout::path::{self, sequence};
use avout::{
    Acl, Coordination, CoordinationExt, CreateMode, CreateOptions, Error, EventKind, MAX_DATA_LEN,
    Op, OpResult, Perms, Result, SessionState, Stat, Watch, WatchedEvent,
};

/// How long a case waits for anything asynchronous (a watch event, a session state) before it
/// fails. Generous for a real server on loopback; on the simulator's paused clock it costs
/// nothing.
///
/// ```
/// assert!(avout_testkit::conformance::EVENT_TIMEOUT.as_secs() >= 5);
/// ```
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(15);

/// What the suite needs from a backend under test.
///
/// The futures carry no `Send` bound, so a simulator running on a current-thread runtime can
/// implement it with `!Send` internals; the clients themselves are [`Coordination`] and so
/// `Send + Sync`.
///
/// # Example
///
/// A backend over some `Service` type that hands out sessions (sketch):
///
/// ```
/// use std::future::Future;
/// use avout::Coordination;
/// use avout_testkit::conformance::Backend;
///
/// trait Service {
///     type Session: Coordination + 'static;
///     fn open(&self, auth: Option<(&str, &str)>) -> impl Future<Output = Self::Session>;
///     fn kill(&self, id: i64) -> impl Future<Output = ()>;
/// }
///
/// struct Under<S>(S);
///
/// impl<S: Service> Backend for Under<S> {
///     type Client = S::Session;
///     fn connect(&self) -> impl Future<Output = Self::Client> {
///         self.0.open(None)
///     }
///     fn connect_with_digest(&self, user: &str, password: &str) -> impl Future<Output = Self::Client> {
///         let (user, password) = (user.to_owned(), password.to_owned());
///         async move { self.0.open(Some((&user, &password))).await }
///     }
///     fn expire(&self, client: &Self::Client) -> impl Future<Output = ()> {
///         self.0.kill(client.session().id.0)
///     }
/// }
/// ```
pub trait Backend {
    /// The session handle the backend hands out.
    type Client: Coordination + 'static;

    /// A new session on the service, connected and ready. Panics if that is impossible: a
    /// suite cannot run without one.
    fn connect(&self) -> impl Future<Output = Self::Client>;

    /// A new session that authenticated with ZooKeeper's `digest` scheme as `user:password`.
    fn connect_with_digest(&self, user: &str, password: &str)
    -> impl Future<Output = Self::Client>;

    /// Makes the *service* expire `client`'s session, as if it had been silent for longer than
    /// its timeout. Returns once the service has expired it (its ephemerals are gone); the
    /// client itself learns of it asynchronously, as a real client would.
    ///
    /// Real ZooKeeper: [`ZkClient::expire_session`](avout::zk::ZkClient::expire_session) ends
    /// the session with a `CloseSession` on its own connection (for the service and the other
    /// sessions, an expiry) and has the client report it as expired. The simulator expires the
    /// session directly.
    fn expire(&self, client: &Self::Client) -> impl Future<Output = ()>;
}

/// The names of every case, in the order [`run_all`] runs them.
///
/// ```
/// use avout_testkit::conformance::CASES;
/// assert!(CASES.contains(&"multi_atomicity"));
/// ```
pub const CASES: &[&str] = &[
    "create_modes",
    "create_errors",
    "get_set_versions",
    "delete_versions",
    "missing_nodes",
    "exists",
    "children",
    "stat_zxids",
    "sequential_numbering",
    "ephemerals_on_close",
    "session_expiry",
    "data_watch",
    "exists_watch",
    "child_watch",
    "watch_before_reply",
    "multi_success",
    "multi_atomicity",
    "sync",
    "acl_digest",
    "acl_creator_all",
    "validation",
    "data_limit",
];

/// Runs one case by name under `root`, which must not exist yet: it is created (with any
/// missing ancestors) by a setup session first, and is left behind afterwards for inspection.
///
/// # Panics
///
/// If the case fails, if `name` is not in [`CASES`], or if `root` cannot be created.
///
/// ```no_run
/// # async fn demo<B: avout_testkit::conformance::Backend>(backend: B) {
/// avout_testkit::conformance::run_case(&backend, "sync", "/suite/sync").await;
/// # }
/// ```
pub async fn run_case<B: Backend>(backend: &B, name: &str, root: &str) {
    assert!(
        CASES.contains(&name),
        "unknown conformance case {name:?}; the cases are {CASES:?}"
    );
    let setup = backend.connect().await;
    if let Some(parent) = path::parent(root).filter(|p| *p != "/") {
        ok(
            "ensure the parent of the case root",
            setup.ensure_path(parent).await,
        );
    }
    ok(
        "create the case root (it must not exist yet)",
        setup.create(root, b"", &CreateOptions::default()).await,
    );
    // Dropping a handle ends its session; the case opens its own.
    drop(setup);
    let body = async {
        match name {
            "create_modes" => create_modes(backend, root).await,
            "create_errors" => create_errors(backend, root).await,
            "get_set_versions" => get_set_versions(backend, root).await,
            "delete_versions" => delete_versions(backend, root).await,
            "missing_nodes" => missing_nodes(backend, root).await,
            "exists" => exists(backend, root).await,
            "children" => children(backend, root).await,
            "stat_zxids" => stat_zxids(backend, root).await,
            "sequential_numbering" => sequential_numbering(backend, root).await,
            "ephemerals_on_close" => ephemerals_on_close(backend, root).await,
            "session_expiry" => session_expiry(backend, root).await,
            "data_watch" => data_watch(backend, root).await,
            "exists_watch" => exists_watch(backend, root).await,
            "child_watch" => child_watch(backend, root).await,
            "watch_before_reply" => watch_before_reply(backend, root).await,
            "multi_success" => multi_success(backend, root).await,
            "multi_atomicity" => multi_atomicity(backend, root).await,
            "sync" => sync(backend, root).await,
            "acl_digest" => acl_digest(backend, root).await,
            "acl_creator_all" => acl_creator_all(backend, root).await,
            "validation" => validation(backend, root).await,
            "data_limit" => data_limit(backend, root).await,
            other => unreachable!("{other} is in CASES but has no body"),
        }
    };
    // Re-raise a failure with the case's name, so a run of many cases says which one failed.
    if let Err(panic) = std::panic::AssertUnwindSafe(body).catch_unwind().await {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(a non-string panic)");
        panic!("conformance case {name} failed under {root}: {message}");
    }
}

/// Runs every case in [`CASES`], one after another, each under `{base}/{case}`.
///
/// # Panics
///
/// On the first failing case, naming it.
///
/// ```no_run
/// # async fn demo<B: avout_testkit::conformance::Backend>(backend: B) {
/// avout_testkit::conformance::run_all(&backend, "/conformance").await;
/// # }
/// ```
pub async fn run_all<B: Backend>(backend: &B, base: &str) {
    for name in CASES {
        run_case(backend, name, &path::join(base, name)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The real backend

/// [`Backend`] for real ZooKeeper: sessions are [`ZkClient`](avout::zk::ZkClient)s opened
/// with one [`ZkConfig`](avout::zk::ZkConfig), and [`expire`](Backend::expire) uses
/// [`ZkClient::expire_session`](avout::zk::ZkClient::expire_session).
///
/// ```no_run
/// use avout_testkit::{conformance, server::ZkServer};
/// use avout::zk::ZkConfig;
///
/// # async fn demo() {
/// let server = ZkServer::start().expect("a ZooKeeper server");
/// let backend = conformance::ZkBackend::new(ZkConfig::new(server.connect_string()));
/// conformance::run_all(&backend, "/conformance").await;
/// # }
/// ```
#[cfg(feature = "zookeeper")]
#[derive(Clone, Debug)]
pub struct ZkBackend {
    config: avout::zk::ZkConfig,
}

#[cfg(feature = "zookeeper")]
impl ZkBackend {
    /// A backend whose sessions connect with `config` (authenticated sessions add a digest).
    ///
    /// ```
    /// let backend = avout_testkit::conformance::ZkBackend::new(avout::zk::ZkConfig::new("127.0.0.1:2181"));
    /// assert_eq!(backend.config().connect, "127.0.0.1:2181");
    /// ```
    pub fn new(config: avout::zk::ZkConfig) -> Self {
        ZkBackend { config }
    }

    /// The configuration sessions connect with.
    ///
    /// ```
    /// let backend = avout_testkit::conformance::ZkBackend::new(avout::zk::ZkConfig::new("127.0.0.1:2181"));
    /// assert_eq!(backend.config().session_timeout.as_secs(), 10);
    /// ```
    pub fn config(&self) -> &avout::zk::ZkConfig {
        &self.config
    }

    async fn open(config: &avout::zk::ZkConfig) -> avout::zk::ZkClient {
        match avout::zk::ZkClient::connect(config).await {
            Ok(client) => client,
            Err(e) => panic!("cannot open a session on {}: {e}", config.connect),
        }
    }
}

/// How many times [`ZkBackend`] tries to expire a session before failing the case.
#[cfg(feature = "zookeeper")]
const EXPIRE_ATTEMPTS: usize = 4;

#[cfg(feature = "zookeeper")]
impl Backend for ZkBackend {
    type Client = avout::zk::ZkClient;

    fn connect(&self) -> impl Future<Output = Self::Client> {
        Self::open(&self.config)
    }

    fn connect_with_digest(
        &self,
        user: &str,
        password: &str,
    ) -> impl Future<Output = Self::Client> {
        let config = self.config.clone().with_digest(user, password);
        async move { Self::open(&config).await }
    }

    async fn expire(&self, client: &Self::Client) {
        // An attempt times out only if the service does not answer the session's CloseSession
        // in twice its timeout; a later attempt waits for the same end again.
        let mut errors = Vec::new();
        for _ in 0..EXPIRE_ATTEMPTS {
            match client.expire_session().await {
                Ok(()) => return,
                Err(e) => errors.push(e.to_string()),
            }
        }
        panic!(
            "cannot expire session {} in {EXPIRE_ATTEMPTS} attempts: {errors:?}",
            client.session().id
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// The value of a call that must succeed, or a panic naming the step.
#[track_caller]
fn ok<T>(what: &str, result: Result<T>) -> T {
    match result {
        Ok(v) => v,
        Err(e) => panic!("{what}: unexpected error: {e} ({e:?})"),
    }
}

/// Asserts that a call failed with an error matching a pattern.
macro_rules! assert_err {
    ($what:expr, $result:expr, $pat:pat $(if $guard:expr)? $(,)?) => {
        match $result {
            Err($pat) $(if $guard)? => {}
            other => panic!(
                "{}: expected Err({}), got {:?}",
                $what,
                stringify!($pat $(if $guard)?),
                other
            ),
        }
    };
}

/// Awaits `fut`, failing the case after [`EVENT_TIMEOUT`].
async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(EVENT_TIMEOUT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: nothing after {EVENT_TIMEOUT:?}"),
    }
}

/// Waits for a watch and checks it reports `kind` on `path` in a connected session.
async fn expect_event(what: &str, watch: Watch, kind: EventKind, path: &str) -> WatchedEvent {
    let event = within(what, watch).await;
    check_event(what, &event, kind, path);
    event
}

#[track_caller]
fn check_event(what: &str, event: &WatchedEvent, kind: EventKind, path: &str) {
    assert_eq!(
        (event.kind, event.path.as_str(), event.state),
        (kind, path, SessionState::Connected),
        "{what}: wrong watch event {event:?}"
    );
}

/// Asserts a watch has not fired (yet): it is not ready when polled once.
#[track_caller]
fn assert_not_fired(what: &str, watch: &mut Watch) {
    if let Some(event) = watch.now_or_never() {
        panic!("{what}: the watch fired with {event:?}, but nothing it watches has changed");
    }
}

/// Asserts a watch has already fired with `kind` on `path`: it is ready when polled once.
#[track_caller]
fn assert_fired_now(what: &str, watch: &mut Watch, kind: EventKind, path: &str) {
    match watch.now_or_never() {
        Some(event) => check_event(what, &event, kind, path),
        None => panic!(
            "{what}: the {kind:?} event on {path} was not delivered before the reply that \
             reflects the change"
        ),
    }
}

/// Reads `path` on `client` (after a `sync`) until its data is `want`, so that the change is
/// known to have reached this client's server. Bounded by [`EVENT_TIMEOUT`].
async fn read_until<C: Coordination>(what: &str, client: &C, path: &str, want: &[u8]) -> Stat {
    within(what, async {
        loop {
            ok(what, client.sync(path).await);
            let (data, stat) = ok(what, client.get_data(path).await);
            if data == want {
                return stat;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

/// `exists` after a `sync`, so that writes of other sessions committed before are visible.
async fn synced_exists<C: Coordination>(what: &str, client: &C, path: &str) -> Option<Stat> {
    ok(what, client.sync(path).await);
    ok(what, client.exists(path).await)
}

async fn sorted_children<C: Coordination>(what: &str, client: &C, path: &str) -> Vec<String> {
    ok(what, client.sorted_children(path).await)
}

fn persistent() -> CreateOptions {
    CreateOptions::default()
}

fn opts(mode: CreateMode) -> CreateOptions {
    CreateOptions::new(mode)
}

/// How many children were ever created under a node: ZooKeeper's internal cversion, which
/// numbers the next sequential child. The visible `cversion` counts creates and deletes, and
/// every delete removes a created child, so creates = (cversion + numChildren) / 2.
fn creates_under(stat: &Stat) -> i64 {
    (i64::from(stat.cversion) + i64::from(stat.num_children)) / 2
}

/// The sequence number of a sequential node's path, checking its ten-digit form.
#[track_caller]
fn seq_of(what: &str, created: &str, prefix: &str) -> i64 {
    let suffix = created.strip_prefix(prefix).unwrap_or_else(|| {
        panic!("{what}: created {created:?}, which does not start with {prefix:?}")
    });
    assert!(
        suffix.len() == 10 && suffix.bytes().all(|b| b.is_ascii_digit()),
        "{what}: the suffix of {created:?} is not ten digits"
    );
    sequence(path::name(created)).expect("ten digits parse")
}

// ---------------------------------------------------------------------------------------------
// Cases: creating, reading, writing, deleting

/// All five create modes: the path returned, the [`Stat`] returned (equal to what a read
/// returns), ephemeral owners, sequence suffixes taken from the parent's `cversion`.
async fn create_modes<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let sid = c.session().id.0;

    let p = path::join(root, "persistent");
    let (created, stat) = ok("create persistent", c.create(&p, b"p", &persistent()).await);
    assert_eq!(created, p, "create persistent: returned path");
    assert_eq!(
        (
            stat.version,
            stat.cversion,
            stat.aversion,
            stat.num_children,
            stat.data_length
        ),
        (0, 0, 0, 0, 1),
        "create persistent: version, cversion, aversion, numChildren, dataLength of {stat:?}"
    );
    assert_eq!(stat.ephemeral_owner, 0, "create persistent: ephemeralOwner");
    assert_eq!(
        (stat.mzxid, stat.pzxid),
        (stat.czxid, stat.czxid),
        "create persistent: a new node's mzxid and pzxid are its czxid"
    );
    assert_eq!(stat.mtime, stat.ctime, "create persistent: mtime == ctime");
    let (data, read) = ok("get persistent", c.get_data(&p).await);
    assert_eq!(data, b"p", "get persistent: data");
    assert_eq!(
        read, stat,
        "get persistent: the Stat a create returns is the node's Stat"
    );

    let e = path::join(root, "ephemeral");
    let (created, stat) = ok(
        "create ephemeral",
        c.create(&e, b"", &opts(CreateMode::Ephemeral)).await,
    );
    assert_eq!(created, e, "create ephemeral: returned path");
    assert_eq!(
        stat.ephemeral_owner, sid,
        "create ephemeral: ephemeralOwner is the session id"
    );
    assert_eq!(stat.data_length, 0, "create ephemeral: dataLength");
    assert_eq!(
        ok("get ephemeral", c.get_data(&e).await).1,
        stat,
        "get ephemeral: Stat"
    );

    for (mode, prefix, owner) in [
        (CreateMode::PersistentSequential, "ps-", 0),
        (CreateMode::EphemeralSequential, "es-", sid),
    ] {
        let what = format!("create {mode:?}");
        let parent = ok(&what, c.exists(root).await).expect("the case root exists");
        let prefix = path::join(root, prefix);
        let (created, stat) = ok(&what, c.create(&prefix, b"seq", &opts(mode)).await);
        let seq = seq_of(&what, &created, &prefix);
        assert_eq!(
            seq,
            creates_under(&parent),
            "{what}: the suffix counts the parent's child creates ({parent:?})"
        );
        assert_eq!(stat.ephemeral_owner, owner, "{what}: ephemeralOwner");
        assert_eq!(stat.data_length, 3, "{what}: dataLength");
        let (data, read) = ok(&what, c.get_data(&created).await);
        assert_eq!(
            (data.as_slice(), read),
            (&b"seq"[..], stat),
            "{what}: read back"
        );
    }

    let k = path::join(root, "container");
    let (created, stat) = ok(
        "create container",
        c.create(&k, b"k", &opts(CreateMode::Container)).await,
    );
    assert_eq!(created, k, "create container: returned path");
    // ZooKeeper keeps a container marker internally but reports ephemeralOwner 0
    // (DataNode.copyStat): a container belongs to no session.
    assert_eq!(
        stat.ephemeral_owner, 0,
        "create container: ephemeralOwner is 0"
    );
    assert_eq!(
        ok("get container", c.get_data(&k).await).1,
        stat,
        "get container: Stat"
    );
    let kid = path::join(&k, "child");
    ok(
        "create a child of a container",
        c.create(&kid, b"", &persistent()).await,
    );
    let kstat = ok("exists container", c.exists(&k).await).expect("the container exists");
    assert_eq!(
        kstat.num_children, 1,
        "container: numChildren after a child is created"
    );

    let mut names = sorted_children("children of the case root", &c, root).await;
    names.retain(|n| !n.starts_with("ps-") && !n.starts_with("es-"));
    assert_eq!(
        names,
        ["container", "ephemeral", "persistent"],
        "children of the case root"
    );
    let rstat = ok("exists root", c.exists(root).await).expect("the case root exists");
    assert_eq!(
        (rstat.num_children, rstat.cversion),
        (5, 5),
        "case root after five creates: numChildren, cversion"
    );
}

/// NodeExists, NoNode for a missing parent, NoChildrenForEphemerals — each naming the
/// requested path, and each leaving the parent unchanged.
async fn create_errors<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let p = path::join(root, "p");
    ok("create p", c.create(&p, b"1", &persistent()).await);
    let before = ok("exists root", c.exists(root).await).expect("root exists");

    for mode in [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::Container,
    ] {
        assert_err!(
            format!("create {mode:?} over an existing node"),
            c.create(&p, b"2", &opts(mode)).await,
            Error::NodeExists { path } if path == p
        );
    }
    let (data, _) = ok("get p", c.get_data(&p).await);
    assert_eq!(
        data, b"1",
        "a refused create leaves the existing node's data alone"
    );

    let orphan = path::join(root, "missing/child");
    for mode in [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
        CreateMode::Container,
    ] {
        assert_err!(
            format!("create {mode:?} under a missing parent"),
            c.create(&orphan, b"", &opts(mode)).await,
            Error::NoNode { path } if path == orphan
        );
    }

    let e = path::join(root, "e");
    ok(
        "create ephemeral e",
        c.create(&e, b"", &opts(CreateMode::Ephemeral)).await,
    );
    let es = ok(
        "create ephemeral-sequential es-",
        c.create(
            &path::join(root, "es-"),
            b"",
            &opts(CreateMode::EphemeralSequential),
        )
        .await,
    )
    .0;
    for parent in [&e, &es] {
        let child = path::join(parent, "child");
        for mode in [
            CreateMode::Persistent,
            CreateMode::Ephemeral,
            CreateMode::PersistentSequential,
        ] {
            assert_err!(
                format!("create {mode:?} under the ephemeral {parent}"),
                c.create(&child, b"", &opts(mode)).await,
                Error::NoChildrenForEphemerals { path } if path == child
            );
        }
    }
    let after = ok("exists root", c.exists(root).await).expect("root exists");
    assert_eq!(
        (after.cversion, after.num_children),
        (before.cversion + 2, before.num_children + 2),
        "refused creates change nothing: only the two ephemerals count in the root's cversion"
    );
    assert_eq!(
        ok("exists e", c.exists(&e).await).map(|s| s.num_children),
        Some(0),
        "the ephemeral has no children"
    );
}

/// get/set with versions: BadVersion leaves the node alone, `None` matches any version, the
/// returned Stat is the node's Stat.
async fn get_set_versions<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let n = path::join(root, "n");
    let (_, created) = ok("create n", c.create(&n, b"v0", &persistent()).await);
    let (data, stat) = ok("get n", c.get_data(&n).await);
    assert_eq!(
        (data.as_slice(), stat),
        (&b"v0"[..], created),
        "get n after create"
    );

    let s1 = ok("set n at version 0", c.set_data(&n, b"v1!", Some(0)).await);
    assert_eq!(
        (s1.version, s1.data_length, s1.czxid, s1.ctime),
        (1, 3, created.czxid, created.ctime),
        "set at version 0: version, dataLength, czxid, ctime of {s1:?}"
    );
    assert!(
        s1.mzxid > created.mzxid,
        "set: mzxid grows ({s1:?} after {created:?})"
    );
    assert!(s1.mtime >= created.mtime, "set: mtime does not go back");
    assert_eq!(
        s1.pzxid, created.pzxid,
        "set: pzxid is about children, unchanged"
    );
    let (data, read) = ok("get n", c.get_data(&n).await);
    assert_eq!((data.as_slice(), read), (&b"v1!"[..], s1), "get after set");

    assert_err!(
        "set at a stale version",
        c.set_data(&n, b"stale", Some(0)).await,
        Error::BadVersion { path } if path == n
    );
    assert_err!(
        "set at a future version",
        c.set_data(&n, b"future", Some(7)).await,
        Error::BadVersion { path } if path == n
    );
    let (data, read) = ok("get n", c.get_data(&n).await);
    assert_eq!(
        (data.as_slice(), read),
        (&b"v1!"[..], s1),
        "a BadVersion set changes nothing"
    );

    let s2 = ok("set n at any version", c.set_data(&n, b"v2", None).await);
    assert_eq!(s2.version, 2, "set with None: the version still counts");
    let s3 = ok(
        "set n empty at version 2",
        c.set_data(&n, b"", Some(2)).await,
    );
    assert_eq!(
        (s3.version, s3.data_length),
        (3, 0),
        "set empty: version, dataLength"
    );
    let (data, read) = ok("get n", c.get_data(&n).await);
    assert!(data.is_empty(), "get after setting empty data: {data:?}");
    assert_eq!(read, s3, "get after setting empty data: Stat");

    let same = ok(
        "set the same bytes again",
        c.set_data(&n, b"", Some(3)).await,
    );
    assert_eq!(
        same.version, 4,
        "a set that writes identical bytes still bumps the version"
    );
}

/// delete with versions; NoNode; NotEmpty.
async fn delete_versions<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let n = path::join(root, "n");
    ok("create n", c.create(&n, b"", &persistent()).await);
    ok("set n", c.set_data(&n, b"x", Some(0)).await);
    assert_err!(
        "delete at a stale version",
        c.delete(&n, Some(0)).await,
        Error::BadVersion { path } if path == n
    );
    assert!(
        ok("exists n", c.exists(&n).await).is_some(),
        "a BadVersion delete leaves the node"
    );
    ok("delete n at version 1", c.delete(&n, Some(1)).await);
    assert_eq!(ok("exists n", c.exists(&n).await), None, "deleted");
    assert_err!(
        "delete a deleted node",
        c.delete(&n, None).await,
        Error::NoNode { path } if path == n
    );
    assert_err!(
        "delete a deleted node at a version",
        c.delete(&n, Some(1)).await,
        Error::NoNode { path } if path == n
    );

    let m = path::join(root, "m");
    ok("create m", c.create(&m, b"", &persistent()).await);
    ok("set m", c.set_data(&m, b"1", None).await);
    ok("delete m at any version", c.delete(&m, None).await);
    assert_eq!(
        ok("exists m", c.exists(&m).await),
        None,
        "deleted with None"
    );

    let p = path::join(root, "p");
    let kid = path::join(&p, "kid");
    ok("create p", c.create(&p, b"", &persistent()).await);
    ok("create p/kid", c.create(&kid, b"", &persistent()).await);
    assert_err!(
        "delete a node with a child",
        c.delete(&p, None).await,
        Error::NotEmpty { path } if path == p
    );
    assert_err!(
        "delete a node with a child, at its version",
        c.delete(&p, Some(0)).await,
        Error::NotEmpty { path } if path == p
    );
    ok("delete p/kid", c.delete(&kid, None).await);
    ok("delete the now empty p", c.delete(&p, Some(0)).await);
    let r = ok("exists root", c.exists(root).await).expect("root exists");
    assert_eq!(
        (r.num_children, r.cversion),
        (0, 6),
        "root after 3 creates and 3 deletes: numChildren, cversion"
    );
}

/// Every read and write of a missing node fails with NoNode naming it; `exists` says `None`,
/// even when the parent is missing too.
async fn missing_nodes<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let m = path::join(root, "missing");
    let deep = path::join(root, "missing/deeper");
    for p in [&m, &deep] {
        assert_err!(format!("get_data {p}"), c.get_data(p).await, Error::NoNode { path } if path == *p);
        assert_err!(
            format!("get_and_watch_data {p}"),
            c.get_and_watch_data(p).await,
            Error::NoNode { path } if path == *p
        );
        assert_err!(
            format!("set_data {p}"),
            c.set_data(p, b"x", None).await,
            Error::NoNode { path } if path == *p
        );
        assert_err!(
            format!("set_data {p} at a version"),
            c.set_data(p, b"x", Some(0)).await,
            Error::NoNode { path } if path == *p
        );
        assert_err!(format!("delete {p}"), c.delete(p, None).await, Error::NoNode { path } if path == *p);
        assert_err!(
            format!("get_children {p}"),
            c.get_children(p).await,
            Error::NoNode { path } if path == *p
        );
        assert_err!(
            format!("get_and_watch_children {p}"),
            c.get_and_watch_children(p).await,
            Error::NoNode { path } if path == *p
        );
        assert_err!(format!("get_acl {p}"), c.get_acl(p).await, Error::NoNode { path } if path == *p);
        assert_eq!(ok("exists", c.exists(p).await), None, "exists {p}");
    }
    let r = ok("exists root", c.exists(root).await).expect("root exists");
    assert_eq!(
        r.num_children, 0,
        "nothing was created by the failed requests"
    );
}

/// `exists` returns the same Stat as a read, and `None` once the node is gone.
async fn exists<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let n = path::join(root, "n");
    let (_, created) = ok("create n", c.create(&n, b"abc", &persistent()).await);
    assert_eq!(
        ok("exists n", c.exists(&n).await),
        Some(created),
        "exists after create"
    );
    let set = ok("set n", c.set_data(&n, b"abcd", None).await);
    let found = ok("exists n", c.exists(&n).await);
    assert_eq!(found, Some(set), "exists after set: the Stat set returned");
    assert_eq!(
        found,
        Some(ok("get n", c.get_data(&n).await).1),
        "exists and get_data agree"
    );
    let (found, _watch) = ok("exists_and_watch n", c.exists_and_watch(&n).await);
    assert_eq!(found, Some(set), "exists_and_watch on a present node");
    ok("delete n", c.delete(&n, None).await);
    assert_eq!(
        ok("exists n", c.exists(&n).await),
        None,
        "exists after delete"
    );
    let (found, _watch) = ok("exists_and_watch n", c.exists_and_watch(&n).await);
    assert_eq!(found, None, "exists_and_watch on a missing node");
    assert_eq!(
        ok("exists /", c.exists("/").await).map(|s| s.ephemeral_owner),
        Some(0),
        "the root node exists"
    );
}

/// Children (compared sorted: order is unspecified) and the parent's Stat.
async fn children<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let p = path::join(root, "p");
    ok("create p", c.create(&p, b"data", &persistent()).await);
    let (kids, stat) = ok("get_children of a leaf", c.get_children(&p).await);
    assert!(kids.is_empty(), "a new node has no children: {kids:?}");
    assert_eq!(
        (stat.num_children, stat.cversion),
        (0, 0),
        "a new node's numChildren, cversion"
    );

    for (name, mode) in [
        ("b", CreateMode::Persistent),
        ("a", CreateMode::Ephemeral),
        ("c", CreateMode::Container),
    ] {
        ok(
            "create a child",
            c.create(&path::join(&p, name), b"", &opts(mode)).await,
        );
    }
    let seq = ok(
        "create a sequential child",
        c.create(
            &path::join(&p, "s-"),
            b"",
            &opts(CreateMode::PersistentSequential),
        )
        .await,
    )
    .0;
    let (mut kids, stat) = ok("get_children p", c.get_children(&p).await);
    kids.sort();
    assert_eq!(
        kids,
        ["a", "b", "c", path::name(&seq)],
        "children are names, not paths"
    );
    assert_eq!(
        (
            stat.num_children,
            stat.cversion,
            stat.version,
            stat.data_length
        ),
        (4, 4, 0, 4),
        "get_children Stat: numChildren, cversion, and the data untouched"
    );
    assert_eq!(
        stat.mzxid, stat.czxid,
        "child creates do not touch the parent's mzxid"
    );
    assert_eq!(
        Some(stat),
        ok("exists p", c.exists(&p).await),
        "get_children returns the parent's Stat"
    );
    let (mut watched, wstat, _watch) = ok(
        "get_and_watch_children p",
        c.get_and_watch_children(&p).await,
    );
    watched.sort();
    assert_eq!(
        (watched, wstat),
        (kids, stat),
        "get_and_watch_children agrees"
    );

    ok("delete p/b", c.delete(&path::join(&p, "b"), None).await);
    let (kids, stat) = ok("get_children p", c.get_children(&p).await);
    let mut kids = kids;
    kids.sort();
    assert_eq!(
        kids,
        ["a", "c", path::name(&seq)],
        "children after a delete"
    );
    assert_eq!(
        (stat.num_children, stat.cversion),
        (3, 5),
        "a delete counts in cversion"
    );
}

/// czxid / mzxid / pzxid ordering, and pzxid moving exactly on child create and delete.
async fn stat_zxids<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let a = path::join(root, "a");
    let b = path::join(root, "b");
    let (_, sa) = ok("create a", c.create(&a, b"", &persistent()).await);
    let (_, sb) = ok("create b", c.create(&b, b"", &persistent()).await);
    assert!(
        sb.czxid > sa.czxid,
        "later creates have larger czxids: {sa:?} then {sb:?}"
    );

    let set = ok("set a", c.set_data(&a, b"x", None).await);
    assert!(
        set.mzxid > sb.czxid,
        "a set's mzxid is newer than earlier changes"
    );
    assert_eq!(
        (set.czxid, set.pzxid),
        (sa.czxid, sa.pzxid),
        "a set changes neither czxid nor pzxid"
    );

    let kid = path::join(&a, "kid");
    let (_, sk) = ok("create a/kid", c.create(&kid, b"", &persistent()).await);
    let pa = ok("exists a", c.exists(&a).await).expect("a exists");
    assert_eq!(
        pa.pzxid, sk.czxid,
        "creating a child sets the parent's pzxid to its czxid"
    );
    assert_eq!(
        (pa.mzxid, pa.version, pa.cversion, pa.num_children),
        (set.mzxid, 1, 1, 1),
        "creating a child: the parent's mzxid, version, cversion, numChildren"
    );

    let kset = ok("set a/kid", c.set_data(&kid, b"y", None).await);
    let pa2 = ok("exists a", c.exists(&a).await).expect("a exists");
    assert_eq!(pa2, pa, "a child's data change does not touch the parent");

    ok("delete a/kid", c.delete(&kid, None).await);
    let pa3 = ok("exists a", c.exists(&a).await).expect("a exists");
    assert!(
        pa3.pzxid > kset.mzxid,
        "deleting a child moves the parent's pzxid past earlier changes"
    );
    assert_eq!(
        (pa3.cversion, pa3.num_children, pa3.mzxid),
        (2, 0, set.mzxid),
        "deleting a child: cversion, numChildren, mzxid"
    );
    let (_, sd) = ok(
        "create d",
        c.create(&path::join(root, "d"), b"", &persistent()).await,
    );
    assert!(
        sd.czxid > pa3.pzxid,
        "the delete's zxid precedes later changes"
    );
    assert!(sd.ctime >= sa.ctime, "ctime does not go back");
}

/// Sequential suffixes count the parent's child *creates*: ZooKeeper takes them from the
/// parent's internal cversion, which counts creates only, while the `cversion` a client sees is
/// creates plus deletes (`2 * creates - numChildren`, `DataNode.copyStat`). So deletes do not
/// advance the suffix, non-sequential creates do, refused creates do not, every prefix shares the
/// counter, and a trailing `/` names the node by its suffix alone.
async fn sequential_numbering<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let q = path::join(root, "q");
    ok("create q", c.create(&q, b"", &persistent()).await);
    let n = path::join(&q, "n-");
    let seq_create = |prefix: String, mode: CreateMode| {
        let c = &c;
        async move {
            let what = format!("create {prefix:?} ({mode:?})");
            ok(&what, c.create(&prefix, b"", &opts(mode)).await).0
        }
    };

    let first = seq_create(n.clone(), CreateMode::PersistentSequential).await;
    assert_eq!(
        first,
        format!("{n}0000000000"),
        "the first sequential child"
    );
    let second = seq_create(n.clone(), CreateMode::EphemeralSequential).await;
    assert_eq!(
        second,
        format!("{n}0000000001"),
        "both sequential modes share the counter"
    );
    ok("delete the first", c.delete(&first, None).await);
    let stat = ok("exists q", c.exists(&q).await).expect("q exists");
    assert_eq!(
        (stat.cversion, stat.num_children),
        (3, 1),
        "the visible cversion counts the delete"
    );
    let third = seq_create(n.clone(), CreateMode::PersistentSequential).await;
    assert_eq!(
        third,
        format!("{n}0000000002"),
        "a delete does not advance the suffix, although it counts in the visible cversion"
    );

    let plain = path::join(&q, "plain");
    ok(
        "create a plain child",
        c.create(&plain, b"", &persistent()).await,
    );
    let bare = seq_create(format!("{q}/"), CreateMode::PersistentSequential).await;
    assert_eq!(
        bare,
        format!("{q}/0000000004"),
        "a trailing / names the node by its suffix alone; plain creates count too"
    );
    let other = seq_create(path::join(&q, "x-"), CreateMode::PersistentSequential).await;
    assert_eq!(
        other,
        format!("{q}/x-0000000005"),
        "every prefix shares the parent's counter"
    );

    assert_err!(
        "create an existing plain child",
        c.create(&plain, b"", &persistent()).await,
        Error::NodeExists { .. }
    );
    for victim in [&second, &third, &bare] {
        ok("delete a child", c.delete(victim, None).await);
    }
    let stat = ok("exists q", c.exists(&q).await).expect("q exists");
    assert_eq!(
        (stat.cversion, stat.num_children),
        (10, 2),
        "q after 6 creates and 4 deletes: cversion, numChildren"
    );
    let next = seq_create(n.clone(), CreateMode::PersistentSequential).await;
    assert_eq!(
        next,
        format!("{n}0000000006"),
        "neither deletes nor a refused create advance the suffix"
    );
    assert_eq!(
        sequence(path::name(&next)),
        Some(creates_under(&stat)),
        "the suffix is (cversion + numChildren) / 2 of the parent before the create"
    );
    let mut expected = vec![
        "plain".to_owned(),
        path::name(&other).to_owned(),
        path::name(&next).to_owned(),
    ];
    expected.sort();
    assert_eq!(
        sorted_children("children of q", &c, &q).await,
        expected,
        "children of q"
    );
}

// ---------------------------------------------------------------------------------------------
// Cases: sessions

/// Closing a session deletes its ephemerals (seen from another session, whose child watch
/// fires), fires its own watches with a Closed session event, publishes Closed, and makes
/// every later call fail with `Closed`.
async fn ephemerals_on_close<B: Backend>(backend: &B, root: &str) {
    let a = backend.connect().await;
    let b = backend.connect().await;
    let sid = a.session().id.0;
    let dir = path::join(root, "dir");
    let keep = path::join(root, "keep");
    ok("create dir", a.create(&dir, b"", &persistent()).await);
    ok("create keep", a.create(&keep, b"", &persistent()).await);
    let eph = path::join(&dir, "eph");
    ok(
        "create an ephemeral",
        a.create(&eph, b"", &opts(CreateMode::Ephemeral)).await,
    );
    let es = ok(
        "create an ephemeral-sequential",
        a.create(
            &path::join(&dir, "es-"),
            b"",
            &opts(CreateMode::EphemeralSequential),
        )
        .await,
    )
    .0;
    for p in [&eph, &es] {
        let seen = synced_exists("another session sees the ephemeral", &b, p).await;
        assert_eq!(
            seen.map(|s| s.ephemeral_owner),
            Some(sid),
            "another session sees {p}, owned by the creator's session"
        );
    }

    let (_, _, mut b_watch) = ok("b watches dir", b.get_and_watch_children(&dir).await);
    let (_, _, a_watch) = ok("a watches keep", a.get_and_watch_data(&keep).await);
    let mut a_states = a.session_states();
    assert_eq!(
        a_states.current(),
        SessionState::Connected,
        "a is connected"
    );
    assert_not_fired("b's child watch before the close", &mut b_watch);

    ok("close a", a.close().await);
    let ended = within("a's session states after close", a_states.terminated()).await;
    assert_eq!(ended, SessionState::Closed, "a's session ends Closed");
    let event = within("a's watch after close", a_watch).await;
    assert_eq!(
        (event.kind, event.state),
        (EventKind::Session, SessionState::Closed),
        "a's pending watch fires with a Closed session event: {event:?}"
    );
    assert_err!(
        "get_data after close",
        a.get_data(&keep).await,
        Error::Closed
    );
    assert_err!(
        "create after close",
        a.create(&path::join(root, "late"), b"", &persistent())
            .await,
        Error::Closed
    );

    expect_event(
        "b's child watch when a's ephemerals go",
        b_watch,
        EventKind::NodeChildrenChanged,
        &dir,
    )
    .await;
    for p in [&eph, &es] {
        assert_eq!(
            synced_exists("another session after close", &b, p).await,
            None,
            "{p} is deleted when its session closes"
        );
    }
    assert!(
        synced_exists("keep after close", &b, &keep).await.is_some(),
        "persistent nodes outlive their creator's session"
    );
}

/// A session the service expires: the client sees `Expired` on its state stream, its watches
/// fire with an Expired session event, every later call fails with `SessionExpired`, and its
/// ephemerals are gone for everyone else.
async fn session_expiry<B: Backend>(backend: &B, root: &str) {
    let a = backend.connect().await;
    let b = backend.connect().await;
    let eph = path::join(root, "eph");
    let keep = path::join(root, "keep");
    ok("create keep", a.create(&keep, b"", &persistent()).await);
    ok(
        "create an ephemeral",
        a.create(&eph, b"", &opts(CreateMode::Ephemeral)).await,
    );
    let es = ok(
        "create an ephemeral-sequential",
        a.create(
            &path::join(root, "es-"),
            b"",
            &opts(CreateMode::EphemeralSequential),
        )
        .await,
    )
    .0;
    let (_, _, data_watch) = ok("a watches keep", a.get_and_watch_data(&keep).await);
    let (_, create_watch) = ok(
        "a watches a missing node",
        a.exists_and_watch(&path::join(root, "none")).await,
    );
    // Not a child watch on `root`: expiring a session deletes its ephemerals there, and on real
    // ZooKeeper that NodeChildrenChanged may reach `a` before the expiry does (`a`'s own
    // connection carries the CloseSession, and is open while the ephemerals go).
    let (_, _, child_watch) = ok(
        "a watches keep's children",
        a.get_and_watch_children(&keep).await,
    );
    let mut states = a.session_states();
    assert!(
        synced_exists("b sees a's ephemeral", &b, &eph)
            .await
            .is_some(),
        "b sees a's ephemeral before the expiry"
    );
    let (_, _, b_watch) = ok("b watches root", b.get_and_watch_children(root).await);

    backend.expire(&a).await;

    let ended = within("a's session states after expiry", async {
        while let Some(state) = states.next().await {
            assert!(
                matches!(
                    state,
                    SessionState::Connected | SessionState::Disconnected | SessionState::Expired
                ),
                "unexpected session state {state:?} on the way to Expired"
            );
        }
        states.current()
    })
    .await;
    assert_eq!(ended, SessionState::Expired, "a's session ends Expired");
    for (what, watch) in [
        ("data watch", data_watch),
        ("exists watch", create_watch),
        ("child watch", child_watch),
    ] {
        let event = within(&format!("a's {what} after expiry"), watch).await;
        assert_eq!(
            (event.kind, event.state),
            (EventKind::Session, SessionState::Expired),
            "a's {what} fires with an Expired session event: {event:?}"
        );
    }
    assert_err!(
        "get_data after expiry",
        a.get_data(&keep).await,
        Error::SessionExpired
    );
    assert_err!(
        "create after expiry",
        a.create(&path::join(root, "late"), b"", &persistent())
            .await,
        Error::SessionExpired
    );
    assert_err!(
        "exists after expiry, again",
        a.exists(&keep).await,
        Error::SessionExpired
    );

    expect_event(
        "b's child watch when a's ephemerals go",
        b_watch,
        EventKind::NodeChildrenChanged,
        root,
    )
    .await;
    for p in [&eph, &es] {
        assert_eq!(
            synced_exists("another session after expiry", &b, p).await,
            None,
            "{p} is deleted when its session expires"
        );
    }
    let fresh = backend.connect().await;
    assert_eq!(
        synced_exists("a new session after expiry", &fresh, &eph).await,
        None,
        "a new session does not see the expired session's ephemeral"
    );
    assert!(
        synced_exists("keep after expiry", &b, &keep)
            .await
            .is_some(),
        "persistent nodes outlive an expired session"
    );
}

// ---------------------------------------------------------------------------------------------
// Cases: watches

/// A data watch fires NodeDataChanged once, on the next change only; two watches armed on one
/// node both fire; a data watch ignores child changes; deletion fires NodeDeleted.
async fn data_watch<B: Backend>(backend: &B, root: &str) {
    let a = backend.connect().await;
    let b = backend.connect().await;
    let n = path::join(root, "n");
    ok("create n", a.create(&n, b"0", &persistent()).await);

    let (data, _, mut w) = ok("a watches n", a.get_and_watch_data(&n).await);
    assert_eq!(data, b"0", "get_and_watch_data: data");
    assert_not_fired("a data watch before any change", &mut w);
    ok("b sets n", b.set_data(&n, b"1", None).await);
    expect_event("data watch on a set", w, EventKind::NodeDataChanged, &n).await;

    // One-shot: the next change reaches only a watch armed after the first fired.
    ok("b sets n again", b.set_data(&n, b"2", None).await);
    read_until("a sees the second set", &a, &n, b"2").await;
    let (_, _, mut w) = ok("a re-arms", a.get_and_watch_data(&n).await);
    read_until("a reads again", &a, &n, b"2").await;
    assert_not_fired(
        "a watch armed after the second set, before any further change (a one-shot watch \
         that fired must not fire again)",
        &mut w,
    );
    ok("b sets n a third time", b.set_data(&n, b"3", None).await);
    expect_event("the re-armed watch", w, EventKind::NodeDataChanged, &n).await;

    // Two watches from one session on one node: both fire, once.
    let (_, _, w1) = ok("a watches n (1)", a.get_and_watch_data(&n).await);
    let (_, w2) = ok("a watches n (2)", a.exists_and_watch(&n).await);
    ok("b sets n", b.set_data(&n, b"4", None).await);
    expect_event("first of two watches", w1, EventKind::NodeDataChanged, &n).await;
    expect_event("second of two watches", w2, EventKind::NodeDataChanged, &n).await;

    // A data watch does not fire on child changes.
    let (_, _, mut w) = ok("a watches n", a.get_and_watch_data(&n).await);
    let kid = path::join(&n, "kid");
    ok("b creates n/kid", b.create(&kid, b"", &persistent()).await);
    within("a sees n/kid", async {
        loop {
            ok("sync", a.sync(&n).await);
            if ok("exists n/kid", a.exists(&kid).await).is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_not_fired("a data watch after a child was created", &mut w);
    ok("b deletes n/kid", b.delete(&kid, None).await);
    assert_eq!(
        synced_exists("a sees n/kid gone", &a, &kid).await,
        None,
        "n/kid deleted"
    );
    assert_not_fired("a data watch after a child was deleted", &mut w);

    ok("b deletes n", b.delete(&n, None).await);
    expect_event("data watch on delete", w, EventKind::NodeDeleted, &n).await;
}

/// An exists watch: NodeCreated for a missing node; NodeDataChanged and NodeDeleted for a
/// present one.
async fn exists_watch<B: Backend>(backend: &B, root: &str) {
    let a = backend.connect().await;
    let b = backend.connect().await;
    let n = path::join(root, "n");
    let (stat, mut w) = ok("a watches missing n", a.exists_and_watch(&n).await);
    assert_eq!(stat, None, "n is missing");
    assert_not_fired("an exists watch before the create", &mut w);
    ok("b creates n", b.create(&n, b"", &persistent()).await);
    expect_event(
        "exists watch on a missing node",
        w,
        EventKind::NodeCreated,
        &n,
    )
    .await;

    let (stat, w) = ok("a watches present n", a.exists_and_watch(&n).await);
    assert!(stat.is_some(), "n is present");
    ok("b sets n", b.set_data(&n, b"x", None).await);
    expect_event("exists watch on a set", w, EventKind::NodeDataChanged, &n).await;

    let (stat, w) = ok("a watches present n", a.exists_and_watch(&n).await);
    assert_eq!(stat.map(|s| s.version), Some(1), "n at version 1");
    ok("b deletes n", b.delete(&n, None).await);
    expect_event("exists watch on a delete", w, EventKind::NodeDeleted, &n).await;

    let (stat, w) = ok("a watches missing n again", a.exists_and_watch(&n).await);
    assert_eq!(stat, None, "n is missing again");
    ok(
        "b creates n as an ephemeral",
        b.create(&n, b"", &opts(CreateMode::Ephemeral)).await,
    );
    expect_event("exists watch, second create", w, EventKind::NodeCreated, &n).await;
}

/// A child watch: NodeChildrenChanged when a child is created and when one is deleted, not on
/// a child's or the node's own data change; NodeDeleted when the node goes.
async fn child_watch<B: Backend>(backend: &B, root: &str) {
    let a = backend.connect().await;
    let b = backend.connect().await;
    let p = path::join(root, "p");
    ok("create p", a.create(&p, b"", &persistent()).await);
    let (kids, _, mut w) = ok("a watches p's children", a.get_and_watch_children(&p).await);
    assert!(kids.is_empty(), "no children yet: {kids:?}");
    assert_not_fired("a child watch before any change", &mut w);
    let kid = path::join(&p, "kid");
    ok("b creates p/kid", b.create(&kid, b"", &persistent()).await);
    expect_event(
        "child watch on a create",
        w,
        EventKind::NodeChildrenChanged,
        &p,
    )
    .await;

    let (kids, _, mut w) = ok("a re-arms", a.get_and_watch_children(&p).await);
    assert_eq!(kids, ["kid"], "p's children");
    ok("b sets p/kid", b.set_data(&kid, b"x", None).await);
    ok("b sets p", b.set_data(&p, b"x", None).await);
    read_until("a sees p's new data", &a, &p, b"x").await;
    read_until("a sees p/kid's new data", &a, &kid, b"x").await;
    assert_not_fired("a child watch after data changes only", &mut w);
    ok("b deletes p/kid", b.delete(&kid, None).await);
    expect_event(
        "child watch on a delete",
        w,
        EventKind::NodeChildrenChanged,
        &p,
    )
    .await;

    let (_, _, w) = ok("a re-arms", a.get_and_watch_children(&p).await);
    ok("b deletes p", b.delete(&p, None).await);
    expect_event(
        "child watch when the node goes",
        w,
        EventKind::NodeDeleted,
        &p,
    )
    .await;
}

/// ZooKeeper's ordering guarantee: a client sees a watch event before any reply that reflects
/// the change — for another session's writes (seen by a later read) and for its own (seen in
/// the write's own reply).
async fn watch_before_reply<B: Backend>(backend: &B, root: &str) {
    let a = backend.connect().await;
    let b = backend.connect().await;
    let n = path::join(root, "n");
    ok("create n", a.create(&n, b"0", &persistent()).await);

    let (_, _, mut w) = ok("a watches n's data", a.get_and_watch_data(&n).await);
    ok("b sets n", b.set_data(&n, b"1", None).await);
    read_until("a reads b's write", &a, &n, b"1").await;
    assert_fired_now(
        "data watch vs a later read by the watcher",
        &mut w,
        EventKind::NodeDataChanged,
        &n,
    );

    let m = path::join(root, "m");
    let (_, mut w) = ok("a watches missing m", a.exists_and_watch(&m).await);
    ok("b creates m", b.create(&m, b"", &persistent()).await);
    within("a sees m", async {
        while synced_exists("a looks for m", &a, &m).await.is_none() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_fired_now(
        "exists watch vs a later exists by the watcher",
        &mut w,
        EventKind::NodeCreated,
        &m,
    );

    let (_, _, mut w) = ok(
        "a watches root's children",
        a.get_and_watch_children(root).await,
    );
    ok(
        "a creates a child itself",
        a.create(&path::join(root, "own"), b"", &persistent()).await,
    );
    assert_fired_now(
        "child watch vs the reply of the watcher's own create",
        &mut w,
        EventKind::NodeChildrenChanged,
        root,
    );

    let (_, _, mut w) = ok("a watches n's data", a.get_and_watch_data(&n).await);
    ok("a sets n itself", a.set_data(&n, b"2", None).await);
    assert_fired_now(
        "data watch vs the reply of the watcher's own set",
        &mut w,
        EventKind::NodeDataChanged,
        &n,
    );
}

// ---------------------------------------------------------------------------------------------
// Cases: multi

/// A successful multi applies every op in order and returns their results in order, with the
/// sequential create's actual path.
async fn multi_success<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let sid = c.session().id.0;
    let m = path::join(root, "m");
    ok("create m", c.create(&m, b"0", &persistent()).await);
    let seq = path::join(&m, "s-");
    let plain = path::join(&m, "plain");
    let eph = path::join(&m, "e");
    let results = ok(
        "multi",
        c.multi(&[
            Op::check(&m, Some(0)),
            Op::create(&seq, b"s".to_vec(), CreateMode::PersistentSequential),
            Op::create(&plain, vec![], CreateMode::Persistent),
            Op::set_data(&m, b"1".to_vec(), Some(0)),
            Op::delete(&plain, None),
            Op::create(&eph, vec![], CreateMode::Ephemeral),
            Op::check(&m, None),
            Op::set_data(&m, b"22".to_vec(), None),
        ])
        .await,
    );
    assert_eq!(results.len(), 8, "one result per op: {results:?}");
    assert_eq!(results[0], OpResult::Check, "result 0");
    assert_eq!(
        results[1],
        OpResult::Create {
            path: format!("{seq}0000000000")
        },
        "result 1: the sequential create's actual path"
    );
    assert_eq!(
        results[2],
        OpResult::Create {
            path: plain.clone()
        },
        "result 2"
    );
    match &results[3] {
        OpResult::SetData { stat } => assert_eq!(
            (stat.version, stat.data_length),
            (1, 1),
            "result 3: the Stat after the first set"
        ),
        other => panic!("result 3: expected SetData, got {other:?}"),
    }
    assert_eq!(results[4], OpResult::Delete, "result 4");
    assert_eq!(
        results[5],
        OpResult::Create { path: eph.clone() },
        "result 5"
    );
    assert_eq!(results[6], OpResult::Check, "result 6");
    let last = match &results[7] {
        OpResult::SetData { stat } => *stat,
        other => panic!("result 7: expected SetData, got {other:?}"),
    };
    assert_eq!(
        (last.version, last.data_length),
        (2, 2),
        "result 7: version, dataLength"
    );

    let (data, stat) = ok("get m", c.get_data(&m).await);
    assert_eq!(data, b"22", "m's data after the multi");
    assert_eq!(
        (stat.version, stat.num_children, stat.cversion),
        (2, 2, 4),
        "m after the multi: version, numChildren, cversion (3 creates and a delete)"
    );
    assert_eq!(
        stat.mzxid, last.mzxid,
        "the multi's last set gave m its Stat"
    );
    assert_eq!(
        sorted_children("children of m", &c, &m).await,
        ["e", "s-0000000000"],
        "children of m after the multi"
    );
    assert_eq!(
        ok("exists e", c.exists(&eph).await).map(|s| s.ephemeral_owner),
        Some(sid),
        "an ephemeral created in a multi belongs to the session"
    );
    let (_, sseq) = ok(
        "get the sequential node",
        c.get_data(&format!("{seq}0000000000")).await,
    );
    let (_, se) = ok("get e", c.get_data(&eph).await);
    assert_eq!(sseq.czxid, se.czxid, "every op of a multi shares one zxid");
    assert_eq!(stat.mzxid, se.czxid, "every op of a multi shares one zxid");
}

/// A failing multi changes nothing and reports the first failing op's index and error.
async fn multi_atomicity<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let m = path::join(root, "m");
    ok("create m", c.create(&m, b"0", &persistent()).await);
    let (_, before) = ok("get m", c.get_data(&m).await);
    let a = path::join(&m, "a");
    let cases: Vec<(&str, Vec<Op>, usize)> = vec![
        (
            "BadVersion at index 2",
            vec![
                Op::create(&a, vec![], CreateMode::Persistent),
                Op::set_data(&m, b"x".to_vec(), None),
                Op::check(&m, Some(5)),
                Op::create(path::join(&m, "b"), vec![], CreateMode::Persistent),
            ],
            2,
        ),
        (
            "NoNode at index 0",
            vec![
                Op::delete(path::join(&m, "missing"), None),
                Op::create(&a, vec![], CreateMode::Persistent),
            ],
            0,
        ),
        (
            "NodeExists at index 1 (the first op's own create)",
            vec![
                Op::create(&a, vec![], CreateMode::Persistent),
                Op::create(&a, vec![], CreateMode::Persistent),
            ],
            1,
        ),
        (
            "NotEmpty at index 2",
            vec![
                Op::create(&a, vec![], CreateMode::Persistent),
                Op::create(path::join(&a, "kid"), vec![], CreateMode::Persistent),
                Op::delete(&a, None),
            ],
            2,
        ),
        (
            "NoNode for a check at index 1",
            vec![
                Op::create(&a, vec![], CreateMode::EphemeralSequential),
                Op::check(path::join(&m, "nope"), None),
            ],
            1,
        ),
        (
            "NoChildrenForEphemerals at index 1",
            vec![
                Op::create(&a, vec![], CreateMode::Ephemeral),
                Op::create(path::join(&a, "kid"), vec![], CreateMode::Persistent),
            ],
            1,
        ),
        (
            "BadVersion on a delete at index 1",
            vec![
                Op::set_data(&m, b"y".to_vec(), Some(0)),
                Op::delete(&m, Some(0)),
            ],
            1,
        ),
    ];
    for (what, ops, want) in cases {
        let failing = ops[want].path().to_owned();
        let err = match c.multi(&ops).await {
            Ok(results) => panic!("multi {what}: expected to fail, got {results:?}"),
            Err(e) => e,
        };
        match &err {
            Error::Multi { index, source } => {
                assert_eq!(*index, want, "multi {what}: the failing index ({err:?})");
                let matches = match (what, &**source) {
                    (w, Error::BadVersion { path }) if w.starts_with("BadVersion") => {
                        *path == failing
                    }
                    (w, Error::NoNode { path }) if w.starts_with("NoNode") => *path == failing,
                    (w, Error::NodeExists { path }) if w.starts_with("NodeExists") => {
                        *path == failing
                    }
                    (w, Error::NotEmpty { path }) if w.starts_with("NotEmpty") => *path == failing,
                    (w, Error::NoChildrenForEphemerals { path })
                        if w.starts_with("NoChildrenForEphemerals") =>
                    {
                        *path == failing
                    }
                    _ => false,
                };
                assert!(
                    matches,
                    "multi {what}: the inner error should be the named error for {failing}, \
                     got {source:?}"
                );
            }
            other => panic!("multi {what}: expected Error::Multi, got {other:?}"),
        }
        assert!(
            err.is_rejected(),
            "multi {what}: a failed multi is rejected ({err:?})"
        );
        let (data, after) = ok("get m", c.get_data(&m).await);
        assert_eq!(
            (data.as_slice(), after),
            (&b"0"[..], before),
            "multi {what}: a failed multi changes nothing"
        );
    }
    assert_eq!(
        sorted_children("children of m", &c, &m).await,
        Vec::<String>::new(),
        "no failed multi created anything"
    );
    let seq = ok(
        "a sequential create after the failed multis",
        c.create(
            &path::join(&m, "s-"),
            b"",
            &opts(CreateMode::PersistentSequential),
        )
        .await,
    )
    .0;
    assert_eq!(
        path::name(&seq),
        "s-0000000000",
        "failed multis leave the parent's cversion alone"
    );
}

// ---------------------------------------------------------------------------------------------
// Cases: sync, ACLs, validation

/// `sync` succeeds and makes another session's committed write visible.
async fn sync<B: Backend>(backend: &B, root: &str) {
    let a = backend.connect().await;
    let b = backend.connect().await;
    ok("sync the root", a.sync(root).await);
    ok("sync /", a.sync("/").await);
    for i in 0..5 {
        let n = path::join(root, &format!("n{i}"));
        ok("b creates", b.create(&n, b"v", &persistent()).await);
        ok("a syncs", a.sync(&n).await);
        let (data, _) = ok("a reads what b wrote, after sync", a.get_data(&n).await);
        assert_eq!(data, b"v", "after sync, a sees b's write");
    }
    assert_err!(
        "sync an invalid path",
        a.sync("no-slash").await,
        Error::InvalidPath { .. }
    );
}

/// Digest ACLs: a node readable and writable only by `alice:secret` refuses an
/// unauthenticated session, another user and a wrong password with NoAuth, and accepts alice.
async fn acl_digest<B: Backend>(backend: &B, root: &str) {
    let alice = backend.connect_with_digest("alice", "secret").await;
    let anon = backend.connect().await;
    let bob = backend.connect_with_digest("bob", "secret").await;
    let wrong = backend.connect_with_digest("alice", "wrong").await;
    let acl = vec![Acl::digest("alice", "secret", Perms::ALL)];
    let s = path::join(root, "secret");
    ok(
        "alice creates a node only she may use",
        alice
            .create(&s, b"s", &persistent().with_acl(acl.clone()))
            .await,
    );
    let (got, stat) = ok("alice reads the ACL", alice.get_acl(&s).await);
    assert_eq!(got, acl, "get_acl returns the ACL that was set");
    assert_eq!(stat.aversion, 0, "a new node's aversion");

    for (who, c) in [
        ("an unauthenticated session", &anon),
        ("bob", &bob),
        ("alice with a wrong password", &wrong),
    ] {
        // On an ensemble another session may sit on a server that has not applied the create.
        ok(&format!("sync by {who}"), c.sync(&s).await);
        assert_err!(
            format!("get_data by {who}"),
            c.get_data(&s).await,
            Error::NoAuth { path } if path == s
        );
        assert_err!(
            format!("set_data by {who}"),
            c.set_data(&s, b"x", None).await,
            Error::NoAuth { path } if path == s
        );
        assert_err!(
            format!("get_children by {who}"),
            c.get_children(&s).await,
            Error::NoAuth { path } if path == s
        );
        let kid = path::join(&s, "kid");
        assert_err!(
            format!("create a child by {who}"),
            c.create(&kid, b"", &persistent()).await,
            Error::NoAuth { path } if path == kid
        );
        // ZooKeeper checks no permission for exists.
        assert_eq!(
            ok(&format!("exists by {who}"), c.exists(&s).await).map(|s| s.data_length),
            Some(1),
            "exists by {who} ignores the ACL"
        );
    }
    let (data, _) = ok("alice reads", alice.get_data(&s).await);
    assert_eq!(data, b"s", "alice reads her node");
    ok("alice writes", alice.set_data(&s, b"t", Some(0)).await);
    let kid = path::join(&s, "kid");
    ok(
        "alice creates a child",
        alice.create(&kid, b"", &persistent()).await,
    );
    let (data, _) = ok("alice reads", alice.get_data(&s).await);
    assert_eq!(
        data, b"t",
        "alice's write landed; the refused writes did not"
    );

    let ro = path::join(root, "ro");
    ok(
        "alice creates a world-readable node",
        alice
            .create(&ro, b"r", &persistent().with_acl(Acl::read_unsafe()))
            .await,
    );
    assert_eq!(
        ok("alice reads ro's ACL", alice.get_acl(&ro).await).0,
        Acl::read_unsafe(),
        "get_acl of a read-only node"
    );
    ok("anon syncs", anon.sync(&ro).await);
    let (data, _) = ok("anon reads ro", anon.get_data(&ro).await);
    assert_eq!(data, b"r", "anyone reads a read_unsafe node");
    for (who, c) in [("anon", &anon), ("alice", &alice)] {
        assert_err!(
            format!("{who} writes ro"),
            c.set_data(&ro, b"x", None).await,
            Error::NoAuth { path } if path == ro
        );
    }
    // Deleting a node needs DELETE on its parent, not on the node: the case root is open.
    ok("alice deletes her kid", alice.delete(&kid, None).await);
    ok(
        "an unauthenticated session deletes alice's node through its open parent",
        anon.delete(&s, None).await,
    );
}

/// `creator_all` from an authenticated session becomes a digest entry for that identity; from
/// an unauthenticated session it is InvalidAcl, as is an empty ACL.
async fn acl_creator_all<B: Backend>(backend: &B, root: &str) {
    let alice = backend.connect_with_digest("alice", "secret").await;
    let anon = backend.connect().await;
    let n = path::join(root, "n");
    ok(
        "alice creates with creator_all",
        alice
            .create(&n, b"n", &persistent().with_acl(Acl::creator_all()))
            .await,
    );
    assert_eq!(
        ok("alice reads the ACL", alice.get_acl(&n).await).0,
        vec![Acl::digest("alice", "secret", Perms::ALL)],
        "creator_all is stored as the creator's digest identity"
    );
    ok("anon syncs", anon.sync(&n).await);
    assert_err!(
        "anon reads alice's node",
        anon.get_data(&n).await,
        Error::NoAuth { path } if path == n
    );
    assert_err!(
        "anon writes alice's node",
        anon.set_data(&n, b"x", None).await,
        Error::NoAuth { path } if path == n
    );
    ok("alice writes", alice.set_data(&n, b"m", None).await);
    assert_eq!(
        ok("alice reads", alice.get_data(&n).await).0,
        b"m",
        "alice's own write"
    );

    let m = path::join(root, "m");
    assert_err!(
        "creator_all from an unauthenticated session",
        anon.create(&m, b"", &persistent().with_acl(Acl::creator_all()))
            .await,
        Error::InvalidAcl { .. }
    );
    assert_err!(
        "an empty ACL",
        alice.create(&m, b"", &persistent().with_acl(vec![])).await,
        Error::InvalidAcl { .. }
    );
    assert_eq!(
        ok("exists m", anon.exists(&m).await),
        None,
        "refused creates create nothing"
    );
}

/// Invalid paths and oversized data are refused with typed errors before anything is sent;
/// the session stays usable.
async fn validation<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let bad_paths = [
        String::new(),
        "relative".to_owned(),
        format!("{root}/trailing/"),
        format!("{root}//double"),
        format!("{root}/./dot"),
        format!("{root}/../dotdot"),
        format!("{root}/nul\0"),
        format!("{root}/ctl\u{1}"),
        format!("{root}/private\u{e000}"),
    ];
    for p in &bad_paths {
        let p = p.as_str();
        assert_err!(
            format!("create {p:?}"),
            c.create(p, b"", &persistent()).await,
            Error::InvalidPath { .. }
        );
        assert_err!(
            format!("get_data {p:?}"),
            c.get_data(p).await,
            Error::InvalidPath { .. }
        );
        assert_err!(
            format!("get_and_watch_data {p:?}"),
            c.get_and_watch_data(p).await,
            Error::InvalidPath { .. }
        );
        assert_err!(
            format!("set_data {p:?}"),
            c.set_data(p, b"", None).await,
            Error::InvalidPath { .. }
        );
        assert_err!(
            format!("delete {p:?}"),
            c.delete(p, None).await,
            Error::InvalidPath { .. }
        );
        assert_err!(
            format!("exists {p:?}"),
            c.exists(p).await,
            Error::InvalidPath { .. }
        );
        assert_err!(
            format!("exists_and_watch {p:?}"),
            c.exists_and_watch(p).await,
            Error::InvalidPath { .. }
        );
        assert_err!(
            format!("get_children {p:?}"),
            c.get_children(p).await,
            Error::InvalidPath { .. }
        );
        assert_err!(
            format!("get_and_watch_children {p:?}"),
            c.get_and_watch_children(p).await,
            Error::InvalidPath { .. }
        );
        assert_err!(
            format!("get_acl {p:?}"),
            c.get_acl(p).await,
            Error::InvalidPath { .. }
        );
        assert_err!(
            format!("sync {p:?}"),
            c.sync(p).await,
            Error::InvalidPath { .. }
        );
        let multi = c
            .multi(&[
                Op::create(path::join(root, "fine"), vec![], CreateMode::Persistent),
                Op::check(p, None),
            ])
            .await;
        match &multi {
            Err(e) if matches!(e.root(), Error::InvalidPath { .. }) => {}
            other => panic!("multi with the path {p:?}: expected InvalidPath, got {other:?}"),
        }
    }
    assert_err!(
        "a sequential create directly under /",
        c.create("/", b"", &opts(CreateMode::PersistentSequential))
            .await,
        Error::InvalidPath { .. }
    );

    let big = vec![7u8; MAX_DATA_LEN + 1];
    let n = path::join(root, "n");
    assert_err!(
        "create with data over the limit",
        c.create(&n, &big, &persistent()).await,
        Error::DataTooLarge { len, limit, .. } if len == MAX_DATA_LEN + 1 && limit == MAX_DATA_LEN
    );
    ok("create n", c.create(&n, b"small", &persistent()).await);
    assert_err!(
        "set_data over the limit",
        c.set_data(&n, &big, None).await,
        Error::DataTooLarge { len, .. } if len == MAX_DATA_LEN + 1
    );
    let multi = c.multi(&[Op::set_data(&n, big.clone(), None)]).await;
    match &multi {
        Err(e) if matches!(e.root(), Error::DataTooLarge { .. }) => {}
        other => panic!("multi with data over the limit: expected DataTooLarge, got {other:?}"),
    }
    let (data, stat) = ok("get n", c.get_data(&n).await);
    assert_eq!(
        (data.as_slice(), stat.version),
        (&b"small"[..], 0),
        "refused writes changed nothing"
    );
    assert_eq!(
        sorted_children("children of root", &c, root).await,
        ["n"],
        "refused requests created nothing"
    );
}

/// Data of exactly [`MAX_DATA_LEN`] bytes is accepted by the service (create, set) and read
/// back intact, and so is a multi just under the limit in total: this pins the client-side
/// limit against the real server.
async fn data_limit<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let n = path::join(root, "n");
    let max: Vec<u8> = (0..MAX_DATA_LEN).map(|i| (i % 251) as u8).collect();
    let (_, stat) = ok(
        "create with MAX_DATA_LEN bytes",
        c.create(&n, &max, &persistent()).await,
    );
    let len = i32::try_from(MAX_DATA_LEN).expect("fits");
    assert_eq!(stat.data_length, len, "dataLength of a maximal node");
    let (data, _) = ok("read a maximal node", c.get_data(&n).await);
    assert!(
        data == max,
        "a maximal node reads back intact ({} bytes)",
        data.len()
    );

    let other: Vec<u8> = max.iter().map(|b| b.wrapping_add(1)).collect();
    let stat = ok(
        "set MAX_DATA_LEN bytes",
        c.set_data(&n, &other, Some(0)).await,
    );
    assert_eq!(
        (stat.version, stat.data_length),
        (1, len),
        "set of a maximal value"
    );
    let (data, _) = ok("read after a maximal set", c.get_data(&n).await);
    assert!(data == other, "a maximal set reads back intact");

    // A multi is bounded as a whole: halves that together fit are stored, halves that
    // together exceed the limit are refused client-side.
    let m = path::join(root, "m");
    ok("create m", c.create(&m, b"", &persistent()).await);
    let half = MAX_DATA_LEN / 2 - 256;
    let results = ok(
        "multi writing two halves of the limit",
        c.multi(&[
            Op::set_data(&n, max[..half].to_vec(), Some(1)),
            Op::set_data(&m, other[..half].to_vec(), Some(0)),
        ])
        .await,
    );
    assert_eq!(results.len(), 2, "two results");
    let too_big = c
        .multi(&[
            Op::set_data(&n, vec![1; MAX_DATA_LEN / 2 + 1], None),
            Op::set_data(&m, vec![2; MAX_DATA_LEN / 2 + 1], None),
        ])
        .await;
    match &too_big {
        Err(e) if matches!(e.root(), Error::DataTooLarge { .. }) => {}
        other => panic!("a multi over the limit in total: expected DataTooLarge, got {other:?}"),
    }
    let (data, stat) = ok("read n after the multis", c.get_data(&n).await);
    assert!(data == max[..half], "the first half reads back intact");
    let (data, _) = ok("read m after the multis", c.get_data(&m).await);
    assert!(data == other[..half], "the second half reads back intact");
    assert_eq!(stat.version, 2, "version after the multi");
}
