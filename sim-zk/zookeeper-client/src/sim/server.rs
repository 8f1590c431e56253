//! [`SimServer`]: the simulated ZooKeeper an application's unchanged connect string reaches.
//!
//! A server is registered, for the madsim simulation it was started in, under the addresses
//! it serves (`host:port`, as a connect string names them); `Client::connect` looks the hosts
//! of its connect string up there, in order. The registry belongs to the thread the
//! simulation runs on and holds its services weakly: a simulation that ends takes its
//! services with it, and the next one (madsim's `MADSIM_TEST_NUM` runs several on one
//! thread) starts from nothing.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout_sim_zk::kernel::Features;
use avout_sim_zk::{Builder, Fault, Sim, SimClient, SimZk, WeakSimZk};

/// What a registered address leads to.
#[derive(Clone)]
struct Entry {
    zk: WeakSimZk,
    settings: Arc<Settings>,
    /// Set for an address that is a forwarder's: the sessions (clients of the service, by
    /// index) connected through it.
    forwarded: Option<Arc<Mutex<Vec<usize>>>>,
}

/// A service's own settings, beside the simulator's configuration.
#[derive(Debug)]
pub(crate) struct Settings {
    /// The session timeouts the service grants: ZooKeeper's `minSessionTimeout` and
    /// `maxSessionTimeout` (two and twenty ticks of 2 s by default).
    pub(crate) session_timeouts: (Duration, Duration),
    /// Stopped: nothing connects any more, and every session is cut off.
    stopped: Mutex<bool>,
}

thread_local! {
    static REGISTRY: RefCell<BTreeMap<String, Entry>> = const { RefCell::new(BTreeMap::new()) };
}

/// A service a connect string reached.
pub(crate) struct Found {
    pub(crate) zk: SimZk,
    pub(crate) settings: Arc<Settings>,
    forwarded: Option<Arc<Mutex<Vec<usize>>>>,
}

impl Found {
    /// Notes a session that connected through this address (a forwarder's).
    pub(crate) fn connected(&self, client: &SimClient) {
        if let Some(sessions) = &self.forwarded {
            sessions
                .lock()
                .expect("never poisoned")
                .push(client.index());
        }
    }
}

/// The running service at `host:port`, if any.
pub(crate) fn lookup(host: &str, port: u16) -> Option<Found> {
    let entry = REGISTRY.with(|r| r.borrow().get(&address(host, port)).cloned())?;
    let zk = entry.zk.upgrade()?;
    if *entry.settings.stopped.lock().expect("never poisoned") {
        return None;
    }
    Some(Found {
        zk,
        settings: entry.settings,
        forwarded: entry.forwarded,
    })
}

fn register(addr: &str, entry: Entry) {
    REGISTRY.with(|r| r.borrow_mut().insert(normalize(addr), entry));
}

fn address(host: &str, port: u16) -> String {
    format!("{host}:{port}")
}

/// `host:port` as a connect string's parser gives it (`[::1]:2181` as `::1:2181`).
fn normalize(addr: &str) -> String {
    match super::connect::parse_endpoints(addr) {
        Ok((endpoints, _)) if endpoints.len() == 1 => {
            address(&endpoints[0].host, endpoints[0].port)
        }
        _ => panic!("{addr:?} is not a server address (host:port)"),
    }
}

/// A simulated ZooKeeper for a madsim simulation, as madsim's etcd client has its
/// `SimServer`: start it on an address, and the application's connect string reaches it.
///
/// It is avout's simulated ZooKeeper (`avout-sim-zk`): one server or an ensemble, every fault
/// kind it has ([`sim`](Self::sim)), every random choice from one seed (madsim's by default,
/// so `MADSIM_TEST_SEED` fixes the whole run).
///
/// ```
/// # madsim::runtime::Runtime::new().block_on(async {
/// use avout_zookeeper_client::{Acls, Client, CreateMode, SimServer};
/// let _server = SimServer::builder().start(["10.0.0.1:2181"]);
/// let client = Client::connect("10.0.0.1:2181").await.unwrap();
/// client.create("/app", b"v1", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
/// assert_eq!(client.get_data("/app").await.unwrap().0, b"v1");
/// # });
/// ```
#[derive(Clone, Debug)]
#[must_use = "a server does nothing until started"]
pub struct SimServer {
    sim: Builder,
    seed: Option<u64>,
    session_timeouts: (Duration, Duration),
    super_digest: Option<String>,
}

impl SimServer {
    /// A server with the simulator's defaults (one member, no faults), ZooKeeper 3.8.2's
    /// answers (a `multi`'s creates answer their `Stat`), `minSessionTimeout` 4 s and
    /// `maxSessionTimeout` 40 s, no superuser, seeded by madsim's seed.
    ///
    /// ```
    /// let server = avout_zookeeper_client::SimServer::builder();
    /// # let _ = server;
    /// ```
    pub fn builder() -> SimServer {
        let sim = Sim::builder()
            .features(Features {
                multi_create_stats: true,
                ..Features::default()
            })
            // A served simulation ends with the test, not by a limit of its own.
            .time_limit(Duration::from_secs(100 * 365 * 24 * 3600));
        SimServer {
            sim,
            seed: None,
            session_timeouts: (Duration::from_secs(4), Duration::from_secs(40)),
            super_digest: None,
        }
    }

    /// The simulator's settings, through its own builder: the ensemble's size, faults drawn
    /// or scheduled (every kind it has), latencies, what the server supports. Its seed is
    /// not used: see [`seed`](Self::seed).
    ///
    /// ```
    /// use avout_sim_zk::{Fault, FaultRates, When};
    /// let server = avout_zookeeper_client::SimServer::builder().sim(|sim| {
    ///     sim.servers(3)
    ///         .rates(FaultRates::chaos())
    ///         .fault(When::Step(10), Fault::ReplyLost { client: None })
    /// });
    /// # let _ = server;
    /// ```
    pub fn sim(mut self, settings: impl FnOnce(Builder) -> Builder) -> Self {
        self.sim = settings(self.sim);
        self
    }

    /// The seed of the simulator's own choices (latencies, faults); madsim's by default, so
    /// that `MADSIM_TEST_SEED` fixes the whole run.
    ///
    /// ```
    /// let server = avout_zookeeper_client::SimServer::builder().seed(7);
    /// # let _ = server;
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The bounds a requested session timeout is moved into (ZooKeeper's
    /// `minSessionTimeout` and `maxSessionTimeout`).
    ///
    /// ```
    /// use std::time::Duration;
    /// let server = avout_zookeeper_client::SimServer::builder()
    ///     .session_timeouts(Duration::from_millis(500), Duration::from_secs(60));
    /// # let _ = server;
    /// ```
    pub fn session_timeouts(mut self, min: Duration, max: Duration) -> Self {
        self.session_timeouts = (min, max.max(min));
        self
    }

    /// The superuser's digest, `super:HASH` as ZooKeeper's
    /// `zookeeper.DigestAuthenticationProvider.superDigest` takes it (`HASH` is the base64 of
    /// the SHA-1 of `super:PASSWORD`): a session that authenticates as it passes every ACL.
    ///
    /// ```
    /// let server = avout_zookeeper_client::SimServer::builder()
    ///     .super_digest("super:D/InIHSb7yEEbrWz8b9l71RjZJU="); // super:test
    /// # let _ = server;
    /// ```
    pub fn super_digest(mut self, digest: impl Into<String>) -> Self {
        self.super_digest = Some(digest.into());
        self
    }

    /// Starts the server in the running madsim simulation, serving at every address in
    /// `addrs` (`host:port`; every address reaches the whole ensemble, which places each
    /// session on a member itself), and returns its handle. It serves until the simulation
    /// ends.
    ///
    /// ```
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout_zookeeper_client::{Client, SimServer};
    /// let server = SimServer::builder()
    ///     .sim(|sim| sim.servers(3))
    ///     .start(["zk1:2181", "zk2:2181", "zk3:2181"]);
    /// let client = Client::connect("zk1:2181,zk2:2181,zk3:2181").await.unwrap();
    /// assert_eq!(client.session_id().0, server.zk().with_kernel(|k| k.sessions().next().unwrap().0));
    /// # });
    /// ```
    ///
    /// # Panics
    ///
    /// Outside a madsim simulation, or for an address that is not `host:port`.
    pub fn start<A: AsRef<str>>(self, addrs: impl IntoIterator<Item = A>) -> SimServerHandle {
        let mut config = self.sim.build().config().clone();
        config.seed = self
            .seed
            .unwrap_or_else(|| madsim::runtime::Handle::current().seed());
        let zk = SimZk::start(config);
        zk.set_super_digest(self.super_digest);
        SimServerHandle::register(zk, self.session_timeouts, addrs)
    }

    /// Starts the server at `addr` and serves until the simulation ends, as madsim's etcd
    /// `SimServer::serve` does: run it as the task of a node of its own.
    ///
    /// ```
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// let handle = madsim::runtime::Handle::current();
    /// handle.create_node().name("zk").build().spawn(async {
    ///     avout_zookeeper_client::SimServer::builder().serve("zk:2181").await
    /// });
    /// let client = avout_zookeeper_client::Client::connect("zk:2181").await.unwrap();
    /// assert!(client.check_stat("/").await.unwrap().is_some());
    /// # });
    /// ```
    pub async fn serve(self, addr: &str) {
        let _server = self.start([addr]);
        std::future::pending::<()>().await;
    }

    /// Serves a service that is already running (a run of avout's harness or `Sim::run`, its
    /// `SimCtx::zk`) at every address in `addrs`, with ZooKeeper's default session timeout
    /// bounds.
    ///
    /// ```
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout_zookeeper_client::{Client, SimServer};
    /// let zk = avout_sim_zk::SimZk::start(avout_sim_zk::SimConfig::default());
    /// let _server = SimServer::attach(&zk, ["zk:2181"]);
    /// let client = Client::connect("zk:2181").await.unwrap();
    /// assert!(client.check_stat("/").await.unwrap().is_some());
    /// # });
    /// ```
    ///
    /// # Panics
    ///
    /// For an address that is not `host:port`.
    pub fn attach<A: AsRef<str>>(
        zk: &SimZk,
        addrs: impl IntoIterator<Item = A>,
    ) -> SimServerHandle {
        let bounds = SimServer::builder().session_timeouts;
        SimServerHandle::register(zk.clone(), bounds, addrs)
    }
}

/// A started [`SimServer`]: the simulated service (to inject faults and look at its state)
/// and what a test does to the server itself.
#[derive(Clone, Debug)]
pub struct SimServerHandle {
    zk: SimZk,
    settings: Arc<Settings>,
}

impl SimServerHandle {
    fn register<A: AsRef<str>>(
        zk: SimZk,
        session_timeouts: (Duration, Duration),
        addrs: impl IntoIterator<Item = A>,
    ) -> SimServerHandle {
        let settings = Arc::new(Settings {
            session_timeouts,
            stopped: Mutex::new(false),
        });
        for addr in addrs {
            let entry = Entry {
                zk: zk.downgrade(),
                settings: settings.clone(),
                forwarded: None,
            };
            register(addr.as_ref(), entry);
        }
        SimServerHandle { zk, settings }
    }

    /// The simulated service: inject faults (`inject`), expire sessions, read the kernel.
    ///
    /// ```
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout_zookeeper_client::{Client, Error, SimServer};
    /// let server = SimServer::builder().start(["zk:2181"]);
    /// let client = Client::connect("zk:2181").await.unwrap();
    /// server.zk().expire_session(avout::SessionId(client.session_id().0));
    /// tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    /// assert_eq!(client.check_stat("/").await.unwrap_err(), Error::SessionExpired);
    /// # });
    /// ```
    pub fn zk(&self) -> &SimZk {
        &self.zk
    }

    /// Stops the server for good, as stopping its container does: nothing connects any more
    /// and every session is cut off. The clients see `Disconnected`, and each gives up on its
    /// session after 7/5 of its timeout (`Expired`), as `zookeeper-client` does when it
    /// reaches no server.
    ///
    /// ```
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout_zookeeper_client::{Client, SessionState, SimServer};
    /// let server = SimServer::builder().start(["zk:2181"]);
    /// let client = Client::connect("zk:2181").await.unwrap();
    /// let mut states = client.state_watcher();
    /// server.stop();
    /// assert_eq!(states.changed().await, SessionState::Disconnected);
    /// assert_eq!(states.changed().await, SessionState::Expired);
    /// # });
    /// ```
    pub fn stop(&self) {
        *self.settings.stopped.lock().expect("never poisoned") = true;
        self.zk.inject(Fault::Outage {
            duration: Duration::from_secs(100 * 365 * 24 * 3600),
        });
    }

    /// Serves at `addr` too, as a proxy in front of the server would: what connects through
    /// it can be cut off after a notification ([`SimForwarder::cut_after_next_event`]).
    ///
    /// ```
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout_zookeeper_client::{Client, SimServer};
    /// let server = SimServer::builder().start(["zk:2181"]);
    /// let proxy = server.forwarder("proxy:2181");
    /// let client = Client::connect("proxy:2181").await.unwrap();
    /// assert!(proxy.cut_after_next_event(), "a session came through it");
    /// # drop(client);
    /// # });
    /// ```
    pub fn forwarder(&self, addr: &str) -> SimForwarder {
        let sessions = Arc::new(Mutex::new(Vec::new()));
        let entry = Entry {
            zk: self.zk.downgrade(),
            settings: self.settings.clone(),
            forwarded: Some(sessions.clone()),
        };
        register(addr, entry);
        SimForwarder {
            zk: self.zk.downgrade(),
            sessions,
        }
    }
}

/// An address in front of a [`SimServer`] whose connections can be cut
/// ([`SimServerHandle::forwarder`]).
#[derive(Clone, Debug)]
pub struct SimForwarder {
    zk: WeakSimZk,
    sessions: Arc<Mutex<Vec<usize>>>,
}

impl SimForwarder {
    /// Cuts the connection of the session that last connected through this address right
    /// after the next watch notification reaches it: the proxy forwards the notification,
    /// then closes both sides. `false` if no session connected through it yet.
    ///
    /// ```
    /// # madsim::runtime::Runtime::new().block_on(async {
    /// use avout_zookeeper_client::{Acls, Client, CreateMode, EventType, SessionState, SimServer};
    /// let server = SimServer::builder().start(["zk:2181"]);
    /// let proxy = server.forwarder("proxy:2181");
    /// assert!(!proxy.cut_after_next_event(), "nothing came through it yet");
    /// let watched = Client::connect("proxy:2181").await.unwrap();
    /// let writer = Client::connect("zk:2181").await.unwrap();
    /// let (_, watcher) = watched.check_and_watch_stat("/a").await.unwrap();
    /// let mut states = watched.state_watcher();
    /// proxy.cut_after_next_event();
    /// writer.create("/a", b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    /// assert_eq!(watcher.changed().await.event_type, EventType::NodeCreated);
    /// assert_eq!(states.changed().await, SessionState::Disconnected);
    /// # });
    /// ```
    pub fn cut_after_next_event(&self) -> bool {
        let last = self
            .sessions
            .lock()
            .expect("never poisoned")
            .last()
            .copied();
        match (last, self.zk.upgrade()) {
            (Some(client), Some(zk)) => {
                zk.cut_after_event(client);
                true
            }
            _ => false,
        }
    }
}
