//! One trait over where a test body runs: the simulated ZooKeeper or a real one.
//!
//! # Why
//!
//! A recipe's test is worth most when its body runs unchanged on both: on the simulator, where
//! faults are injected and a failing schedule replays from its seed, and on a real ZooKeeper,
//! which says whether the simulator told the truth (turmoil's conformance tests have this
//! shape). A body is written once against [`Backend`]: it opens managed clients
//! ([`Backend::client`]) or single sessions ([`Backend::session`]), expires a session as the
//! service would ([`Backend::expire`]), and asks [`Backend::simulator`] for the simulated
//! service when it wants to check the service's own state (the kernel) on the simulator only.
//! The backend conformance suite ([`conformance`](crate::conformance)) is such a set of bodies,
//! as are the recipe tests of `avout`'s `tests/it`.
//!
//! Two backends: [`SimBackend`] (the simulator's service inside a run, `avout_sim_zk::Sim`)
//! and [`ZkBackend`] (real ZooKeeper, feature `zookeeper`; [`ZkBackend::standalone`] starts
//! its own server and fails, never skips, when it cannot).
//!
//! # `Backend` and [`Connect`]
//!
//! [`Connect`] is core's: how *one managed client* opens each of its sessions (the first, and
//! the next one after each expiry). A backend is where a test opens *many* clients and
//! sessions, and it remembers the ones it opened so that it can expire them. Each backend has
//! a connector ([`Backend::connector`]): every [`Client`] the backend opens uses it, so the
//! sessions a client opens later, on its own, are the backend's too.
//!
//! # For workloads too
//!
//! The trait is object safe (its futures are boxed), so a registry of scenarios can hand its
//! workloads a `&dyn Backend` whichever service the run is on: `avout-scenarios` does, in its
//! `scenario::env::Env`. Settings of a run that are not about the service (planted bugs,
//! where the STM keeps its values) belong beside the backend, there, not in it.
//!
//! # One trait
//!
//! Somewhere new to run tests and workloads implements this trait, and nothing else of the
//! kit's: it is what the conformance suite ([`conformance`](crate::conformance)), avout's
//! recipe tests and the scenarios' workloads all take (the suite once had a trait of its own,
//! and the scenarios a `Cluster`; both are folded into this one). Its connector is core's
//! [`Connect`], which a managed [`Client`] needs anyway.
//!
//! ```
//! use avout::{Coordination, CoordinationExt};
//! use avout_testkit::backend::{Backend, SimBackend};
//!
//! /// A body written once.
//! async fn creates_and_reads(backend: &dyn Backend) {
//!     let client = backend.client().await.expect("a client");
//!     client.ensure_path("/a/b").await.expect("created");
//!     assert!(client.exists("/a/b").await.expect("read").is_some());
//! }
//!
//! // On the simulator (on real ZooKeeper: `ZkBackend::standalone()`).
//! avout_sim_zk::Sim::builder().seed(1).clients(0).build().run(|ctx| async move {
//!     creates_and_reads(&SimBackend::new(ctx.zk.clone())).await;
//! });
//! ```

use std::sync::Arc;

use avout::client::Connect;
use avout::{Client, Coordination, SessionId};
use futures::future::BoxFuture;

mod sim;
#[cfg(feature = "zookeeper")]
mod zk;

pub use sim::SimBackend;
#[cfg(feature = "zookeeper")]
pub use zk::ZkBackend;

/// Somewhere to open ZooKeeper sessions and managed clients: the simulated service or a real
/// one. See the [module docs](self).
///
/// # Example
///
/// A backend of your own, over a service that hands out sessions (sketch):
///
/// ```
/// use std::sync::Arc;
/// use avout::client::Connect;
/// use avout::{Client, Coordination, SessionId};
/// use avout_testkit::backend::Backend;
/// use futures::future::BoxFuture;
///
/// struct Mine<C: Connect + Clone>(C);
///
/// impl<C: Connect + Clone> Backend for Mine<C> {
///     fn connector(&self) -> Arc<dyn Connect> {
///         Arc::new(self.0.clone())
///     }
///     fn session_with_digest(
///         &self,
///         user: &str,
///         password: &str,
///     ) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
///         let auth = format!("{user}:{password}");
///         Box::pin(async move {
///             let session = self.0.connect().await?;
///             session.add_auth("digest", auth.as_bytes()).await?;
///             Ok(session)
///         })
///     }
///     fn expire(&self, _session: SessionId) -> BoxFuture<'_, avout::Result<()>> {
///         Box::pin(async { Err(avout::Error::Unimplemented("expire".into())) })
///     }
/// }
/// ```
pub trait Backend: Send + Sync {
    /// How the managed clients of this backend open their sessions (see the
    /// [module docs](self#backend-and-connect)).
    fn connector(&self) -> Arc<dyn Connect>;

    /// Opens one session, connected and ready. It is not managed: when it ends, it stays
    /// ended. Errors are those of connecting.
    fn session(&self) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
        Box::pin(async move { self.connector().connect().await })
    }

    /// Opens one session that authenticated with ZooKeeper's `digest` scheme as
    /// `user:password`.
    fn session_with_digest(
        &self,
        user: &str,
        password: &str,
    ) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>>;

    /// Opens a managed client: its first session now, a new one by itself after each expiry
    /// (through [`connector`](Self::connector)). Errors are those of the first session's
    /// connecting.
    fn client(&self) -> BoxFuture<'_, avout::Result<Client>> {
        Box::pin(async move {
            let connector = self.connector();
            let first = connector.connect().await?;
            Ok(Client::builder(ConnectorOf(connector)).adopt(first))
        })
    }

    /// Makes the *service* expire `session` now, as it does when the session's timeout
    /// passes: its ephemerals go, its calls fail with [`avout::Error::SessionExpired`], and
    /// a managed client on it opens a new one. Returns once the service has expired it; the
    /// client learns of it asynchronously, as a real client would. A session this backend did
    /// not open, or that has already ended, is left alone.
    fn expire(&self, session: SessionId) -> BoxFuture<'_, avout::Result<()>>;

    /// The simulated service, on the simulator (`None` on real ZooKeeper): for checks of the
    /// service's own state, and for what only a simulated run can do (inject a fault, start
    /// a madsim node).
    fn simulator(&self) -> Option<&avout_sim_zk::SimZk> {
        None
    }

    /// Whether this is the simulator (virtual time).
    fn is_simulated(&self) -> bool {
        self.simulator().is_some()
    }
}

/// A shared connector as a connector (the client builder takes one by value).
struct ConnectorOf(Arc<dyn Connect>);

impl Connect for ConnectorOf {
    fn connect(&self) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
        self.0.connect()
    }

    fn jitter(&self) -> u64 {
        self.0.jitter()
    }
}
