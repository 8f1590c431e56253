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
//! The cases live in one module per area (`nodes`, `children`, `sessions`, `watches`,
//! `persistent`, `multi`, `reads`, `acl`, `extended`, `limits`) and are listed once, in the `cases!` table below; what they share (calls
//! that must succeed, refusals matching a pattern, bounded waits, and one table of the
//! requests that name a single path, for cases that expect many of them refused alike) is in
//! `check`.
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

use avout::path;
use avout::{Coordination, CoordinationExt, CreateOptions};
use futures::FutureExt;

use check::ok;

mod acl;
mod check;
mod children;
mod extended;
mod limits;
mod multi;
mod nodes;
mod persistent;
mod reads;
mod sessions;
mod watches;
#[cfg(feature = "zookeeper")]
mod zk_backend;

#[cfg(feature = "zookeeper")]
pub use zk_backend::ZkBackend;

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

/// Declares the cases once, in the order [`run_all`] runs them: [`CASES`] lists their names,
/// and `case_body` dispatches a name to its body `module::case(backend, root)`.
macro_rules! cases {
    ($($module:ident::$case:ident),* $(,)?) => {
        /// The names of every case, in the order [`run_all`] runs them.
        ///
        /// ```
        /// use avout_testkit::conformance::CASES;
        /// assert!(CASES.contains(&"multi_atomicity"));
        /// ```
        pub const CASES: &[&str] = &[$(stringify!($case)),*];

        async fn case_body<B: Backend>(backend: &B, name: &str, root: &str) {
            match name {
                $(stringify!($case) => $module::$case(backend, root).await,)*
                other => unreachable!("{other} is in CASES but has no body"),
            }
        }
    };
}

cases![
    nodes::create_modes,
    nodes::create_errors,
    nodes::get_set_versions,
    nodes::delete_versions,
    nodes::missing_nodes,
    nodes::exists,
    children::children,
    children::stat_zxids,
    children::sequential_numbering,
    sessions::ephemerals_on_close,
    sessions::session_expiry,
    watches::data_watch,
    watches::exists_watch,
    watches::child_watch,
    watches::watch_before_reply,
    persistent::persistent_watch,
    persistent::recursive_watch,
    persistent::persistent_watch_end,
    multi::multi_success,
    multi::multi_atomicity,
    reads::multi_read,
    reads::who_am_i,
    sessions::sync,
    acl::acl_digest,
    acl::acl_creator_all,
    extended::set_acl,
    extended::ttl_nodes,
    extended::ephemerals_and_counts,
    limits::validation,
    limits::data_limit,
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
    let body = case_body(backend, name, root);
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
