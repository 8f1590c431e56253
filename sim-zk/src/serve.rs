//! A simulated service inside a madsim simulation that is already running, and what a
//! client that is not avout's needs of it (under `--cfg madsim` only).
//!
//! [`Sim::run`](crate::Sim::run) makes a run of its own. A test written with
//! `#[madsim::test]`, or an application that starts its own madsim nodes, instead starts the
//! service in its simulation with [`SimZk::start`]: the service's driver runs on a madsim node
//! of its own (named `zookeeper`), so pausing or killing the application's nodes never
//! stops it, and its random choices come from the configuration's seed (take it from madsim's,
//! `madsim::runtime::Handle::current().seed()`, and `MADSIM_TEST_SEED` fixes the whole run).
//!
//! The drop-in simulated `zookeeper-client` (crate `avout-zookeeper-client`) is built on this:
//! besides [`SimZk::connect_with_timeout`], it keeps a session when the application lets go of
//! it without closing it ([`SimClient::detach`]) and takes it up again by its id
//! ([`SimZk::resume`]), gives up on a session it has not reached for too long
//! ([`SimZk::give_up`]), and stands behind a proxy that cuts a connection after a
//! notification ([`SimZk::cut_after_event`]).
//!
//! ```
//! # #[cfg(madsim)]
//! # fn main() {
//! use avout::Coordination;
//! let rt = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
//! rt.block_on(async {
//!     let zk = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default());
//!     let session = zk.connect();
//!     session.create("/app", b"", &Default::default()).await.unwrap();
//! });
//! # }
//! # #[cfg(not(madsim))]
//! # fn main() {}
//! ```

use std::sync::Arc;

use avout::{OpFuture, Request, Result, SessionId};
use futures::FutureExt;
use madsim::runtime::Handle;

use crate::world::{Shared, Stop, drive};
use crate::{SimClient, SimConfig, SimZk};

impl SimZk {
    /// Starts a simulated service with `config` in the running madsim simulation, its driver
    /// on a node of its own, and returns it. It serves until the simulation ends; it opens no
    /// sessions of its own (`config.clients` is for [`Sim::run`](crate::Sim::run)).
    ///
    /// # Panics
    ///
    /// Outside a madsim runtime; and, from the service's node, when the simulation is still
    /// running after `config.time_limit` of virtual time.
    ///
    /// ```
    /// # #[cfg(madsim)]
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout::Coordination;
    /// let zk = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default());
    /// assert!(zk.connect().exists("/").await.unwrap().is_some());
    /// # });
    /// ```
    pub fn start(config: SimConfig) -> SimZk {
        let shared = Shared::new(config, tokio::time::Instant::now(), None, false, None);
        let driver = drive(shared.clone());
        Handle::current()
            .create_node()
            .name("zookeeper")
            .build()
            .spawn(async move {
                let Stop::TimeLimit(limit) = driver.await;
                panic!(
                    "the simulated ZooKeeper was still serving after {limit:?} of virtual time \
                     (waiting for something that never happens?)"
                );
            });
        SimZk { shared }
    }

    /// Takes up a session that was [detached](SimClient::detach) again, from the calling
    /// process (madsim node), on a new connection.
    ///
    /// # Errors
    ///
    /// `SessionExpired` if the service no longer has the session (it expired, or was closed);
    /// `SessionMoved` if a live handle still holds it.
    ///
    /// ```
    /// # #[cfg(madsim)]
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout::Coordination;
    /// let zk = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default());
    /// let client = zk.connect();
    /// let id = client.session().id;
    /// client.detach();
    /// assert_eq!(zk.resume(id).unwrap().session().id, id);
    /// # });
    /// ```
    pub fn resume(&self, session: SessionId) -> Result<SimClient> {
        let index = self.shared.world().resume(session)?;
        self.shared.kick();
        Ok(SimClient::from_index(self.shared.clone(), index))
    }

    /// Cuts the connection of client `client` (its index in the run) right after the next
    /// watch event reaches it (the calls in flight fail with `ConnectionLoss`, as on any
    /// broken connection, and the client reconnects), as a proxy between client and server
    /// that stops forwarding after a notification does.
    ///
    /// ```
    /// # #[cfg(madsim)]
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout::{Coordination, SessionState};
    /// let zk = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default());
    /// let (reader, writer) = (zk.connect(), zk.connect());
    /// let (_, watch) = reader.exists_and_watch("/a").await.unwrap();
    /// let mut states = reader.session_states();
    /// zk.cut_after_event(reader.index());
    /// writer.create("/a", b"", &Default::default()).await.unwrap();
    /// watch.await;
    /// assert_eq!(states.next().await, Some(SessionState::Disconnected));
    /// # });
    /// ```
    pub fn cut_after_event(&self, client: usize) {
        self.with_client(client, |w, c| w.cut_after_event(c));
    }

    /// Client `client` (its index in the run) gives up on its session, as `zookeeper-client`
    /// does when it has reached no server for 7/5 of the session timeout: the session is over
    /// for that client (`Expired`: every call fails with `SessionExpired`, every watch fires),
    /// and the service, hearing nothing more from it, expires it after its timeout.
    ///
    /// ```
    /// # #[cfg(madsim)]
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout::{Coordination, Error};
    /// let zk = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default());
    /// let client = zk.connect();
    /// zk.give_up(client.index());
    /// assert_eq!(client.exists("/").await.unwrap_err(), Error::SessionExpired);
    /// # });
    /// ```
    pub fn give_up(&self, client: usize) {
        self.with_client(client, |w, c| w.give_up(c));
    }

    /// Sets the superuser's digest identity (see
    /// [`Kernel::set_super_digest`](crate::kernel::Kernel::set_super_digest)).
    ///
    /// ```
    /// # #[cfg(madsim)]
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout::{Acl, Coordination, Identity, Perms, Reply, Request};
    /// let zk = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default());
    /// zk.set_super_digest(Some(Acl::digest("super", "test", Perms::ALL).id));
    /// let client = zk.connect();
    /// let auth = Request::AddAuth { scheme: "digest".into(), auth: b"super:test".to_vec() };
    /// client.submit(auth).await.unwrap();
    /// let (ids, _) = client.submit(Request::WhoAmI).await.unwrap();
    /// let me = Identity { scheme: "super".into(), user: String::new() };
    /// assert!(matches!(ids, Reply::WhoAmI(ids) if ids.contains(&me)));
    /// # });
    /// ```
    pub fn set_super_digest(&self, digest: Option<String>) {
        self.shared.world().set_super_digest(digest);
    }

    /// The stable hash of the service's event log so far: a run of the same seed and the
    /// same workload has the same.
    ///
    /// ```
    /// # #[cfg(madsim)]
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout::Coordination;
    /// let zk = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default());
    /// let before = zk.log_hash();
    /// zk.connect().create("/a", b"", &Default::default()).await.unwrap();
    /// assert_ne!(zk.log_hash(), before);
    /// # });
    /// ```
    pub fn log_hash(&self) -> u64 {
        self.shared.world().log.hash()
    }

    /// A handle that does not itself keep the service alive (its driver does, while its
    /// simulation runs): for a registry of services that lives longer than one simulation,
    /// such as the drop-in client's registry of addresses.
    ///
    /// ```
    /// # #[cfg(madsim)]
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// let weak = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default()).downgrade();
    /// assert!(weak.upgrade().is_some(), "its driver serves until the simulation ends");
    /// # });
    /// ```
    pub fn downgrade(&self) -> WeakSimZk {
        WeakSimZk {
            shared: Arc::downgrade(&self.shared),
        }
    }

    fn with_client(&self, client: usize, f: impl FnOnce(&mut crate::world::World, usize)) {
        f(&mut self.shared.world(), client);
        self.shared.kick();
    }
}

/// A [`SimZk`] that does not keep its service alive beyond its simulation
/// ([`SimZk::downgrade`]).
#[derive(Clone, Debug)]
pub struct WeakSimZk {
    shared: std::sync::Weak<Shared>,
}

impl WeakSimZk {
    /// The service, if its simulation still runs.
    ///
    /// ```
    /// # #[cfg(madsim)]
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout::Coordination;
    /// let weak = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default()).downgrade();
    /// let zk = weak.upgrade().expect("the simulation runs");
    /// assert!(zk.connect().exists("/").await.unwrap().is_some());
    /// # });
    /// ```
    pub fn upgrade(&self) -> Option<SimZk> {
        self.shared.upgrade().map(|shared| SimZk { shared })
    }
}

impl SimClient {
    /// Lets go of the session without closing it, as a process whose session is detached
    /// does when it drops its last handle: the session goes silent, and the service expires it
    /// after its timeout unless [`SimZk::resume`] takes it up first. Clones of this handle
    /// MUST be gone: they would act on a session that is no longer theirs.
    ///
    /// ```
    /// # #[cfg(madsim)]
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout::Coordination;
    /// let zk = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default());
    /// let client = zk.connect();
    /// let id = client.session().id;
    /// client.detach();
    /// tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    /// assert_eq!(zk.resume(id).unwrap_err(), avout::Error::SessionExpired);
    /// # });
    /// ```
    pub fn detach(self) {
        self.zk().with_client(self.index(), |w, c| w.detach(c));
    }

    /// Removes the session's watches on `path`, one-shot and persistent, here and at the
    /// service (`removeWatches` of every kind), as a client library does when the last of
    /// its watchers there goes before its event: no event reaches them any more (a
    /// [`Watch`](avout::Watch) still held resolves at once as if the session had closed; the
    /// drop-in calls this only when no watcher of its is left there). Resolves with the
    /// service's answer (`NoWatcher` when it had none there).
    ///
    /// ```
    /// # #[cfg(madsim)]
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout::Coordination;
    /// let zk = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default());
    /// let client = zk.connect();
    /// let (_, watch) = client.exists_and_watch("/a").await.unwrap();
    /// client.remove_watches("/a").await.unwrap();
    /// assert_eq!(watch.await.kind, avout::EventKind::Session);
    /// assert_eq!(client.remove_watches("/a").await.unwrap_err(), avout::Error::NoWatcher { path: "/a".into() });
    /// # });
    /// ```
    pub fn remove_watches(&self, path: &str) -> OpFuture<'static, ()> {
        if let Err(e) = avout::path::validate_path(path, false) {
            return futures::future::ready(Err(e)).boxed();
        }
        self.zk()
            .with_client(self.index(), |w, c| w.forget_watches(c, path));
        self.send(Request::RemoveWatches {
            path: path.to_owned(),
        })
        .map(|answer| answer.map(drop))
        .boxed()
    }

    /// The service this client belongs to.
    fn zk(&self) -> SimZk {
        SimZk {
            shared: Arc::clone(self.shared()),
        }
    }
}
