//! What a workload runs against: a [`Cluster`] to open managed clients on (the simulator or a
//! real ensemble) and a [`Recorder`] that writes the history. Its clients draw their choices
//! from their own streams, [`ClientStream`](avout_sim_zk::rng::ClientStream), beside the
//! simulator's.
//!
//! Workloads are written once, generic over [`Cluster`], so the same code and the same
//! checker run on the embedded simulator and on real ZooKeeper. Each workload client holds one
//! [`Client`], which opens a new session by itself after each expiry, and builds its handles on
//! it once: nothing in a workload reconnects or rebuilds. Time in the history is
//! `tokio::time::Instant` since the start of the run: virtual nanoseconds on the simulator's
//! paused clock, wall-clock ones on a real server.

use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use avout::planted::Bugs;
use avout::stm::store::RefStore;
use avout::zk::{ZkClient, ZkConfig};
use avout::{Client, Coordination, SessionId};
use futures::future::BoxFuture;
use serde_json::Value;

use super::error::{BoxError, WorkloadError};
use avout_check::history::{ErrorCode, Event, EventType, F, History};

/// Somewhere to run managed clients: the simulator's service or a real ensemble.
///
/// ```
/// use avout_scenarios::scenario::env::{Cluster, SimCluster};
/// let (_, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
///     let cluster = SimCluster::new(ctx.zk.clone());
///     let client = cluster.client().await.unwrap();
///     assert!(cluster.is_simulated());
///     client.close().await.unwrap();
/// });
/// ```
pub trait Cluster {
    /// Opens a managed client: its first session now, a new one by itself after each
    /// expiry. Must be called within the run's tokio runtime.
    fn client(&self) -> impl Future<Output = Result<Client, avout::Error>>;
    /// Whether this is the simulator (virtual time).
    fn is_simulated(&self) -> bool;
    /// The bugs to plant in the handles the workload builds on these clients (none unless
    /// the cluster is [`Planted`]).
    fn planted(&self) -> Bugs {
        Bugs::NONE
    }
    /// Where the STM handles the workload opens keep their refs' values (`None`: in the
    /// nodes).
    fn ref_store(&self) -> Option<Arc<dyn RefStore>> {
        None
    }
    /// Expires `session` now, as the service does when its timeout passes: its ephemerals
    /// go, its calls fail with [`avout::Error::SessionExpired`], and its client opens a new
    /// one. A session this cluster did not open, or that has already ended, is left alone.
    fn expire(&self, session: SessionId) -> impl Future<Output = Result<(), avout::Error>>;
    /// The simulated service, on the simulator (`None` on a real ensemble). Under
    /// `--cfg madsim` a workload starts client processes on it with
    /// [`SimZk::node`](avout_sim_zk::SimZk) (a madsim node each, which can be paused,
    /// killed and restarted with its tasks and timers), and opens their clients there with
    /// [`SimCluster::new`].
    ///
    /// ```
    /// use avout_scenarios::scenario::env::{Cluster, SimCluster};
    /// let (_, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
    ///     assert!(SimCluster::new(ctx.zk.clone()).sim_zk().is_some());
    /// });
    /// ```
    fn sim_zk(&self) -> Option<avout_sim_zk::SimZk> {
        None
    }
}

/// A [`Cluster`] whose workload plants `bugs` in its handles' configuration.
///
/// ```
/// use avout::planted::Bugs;
/// use avout_scenarios::scenario::env::{Cluster, Planted, SimCluster};
/// let (_, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
///     let cluster = SimCluster::new(ctx.zk.clone());
///     assert_eq!(Planted::new(&cluster, Bugs::NONE).planted(), Bugs::NONE);
/// });
/// ```
#[derive(Clone, Debug)]
pub struct Planted<'a, K> {
    inner: &'a K,
    bugs: Bugs,
}

impl<'a, K: Cluster> Planted<'a, K> {
    /// `inner`, with `bugs` planted.
    pub fn new(inner: &'a K, bugs: Bugs) -> Self {
        Planted { inner, bugs }
    }
}

impl<K: Cluster> Cluster for Planted<'_, K> {
    fn client(&self) -> impl Future<Output = Result<Client, avout::Error>> {
        self.inner.client()
    }

    fn is_simulated(&self) -> bool {
        self.inner.is_simulated()
    }

    fn planted(&self) -> Bugs {
        self.bugs
    }

    fn ref_store(&self) -> Option<Arc<dyn RefStore>> {
        self.inner.ref_store()
    }

    fn expire(&self, session: SessionId) -> impl Future<Output = Result<(), avout::Error>> {
        self.inner.expire(session)
    }

    fn sim_zk(&self) -> Option<avout_sim_zk::SimZk> {
        self.inner.sim_zk()
    }
}

/// The simulator's service as a [`Cluster`]: every session of every client is a new
/// simulated client (the next index, the number faults name it by).
#[derive(Clone)]
pub struct SimCluster {
    zk: avout_sim_zk::SimZk,
    store: Option<Arc<dyn RefStore>>,
}

impl std::fmt::Debug for SimCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimCluster")
            .field("ref_store", &self.store.as_ref().map(|s| s.name()))
            .finish_non_exhaustive()
    }
}

impl SimCluster {
    /// Wraps the run's service.
    ///
    /// ```
    /// let (_, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
    ///     let _ = avout_scenarios::scenario::env::SimCluster::new(ctx.zk.clone());
    /// });
    /// ```
    pub fn new(zk: avout_sim_zk::SimZk) -> Self {
        SimCluster { zk, store: None }
    }

    /// The same, with the STM's values in `store` (`None`: in the nodes).
    ///
    /// ```
    /// use avout_scenarios::scenario::env::{Cluster, SimCluster};
    /// use avout_scenarios::scenario::store::RefStoreKind;
    /// let (_, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
    ///     let c = SimCluster::new(ctx.zk.clone()).with_ref_store(RefStoreKind::Memory.in_process());
    ///     assert!(c.ref_store().is_some());
    /// });
    /// ```
    pub fn with_ref_store(mut self, store: Option<Arc<dyn RefStore>>) -> Self {
        self.store = store;
        self
    }
}

impl Cluster for SimCluster {
    async fn client(&self) -> Result<Client, avout::Error> {
        Client::connect(self.zk.clone()).await
    }

    fn is_simulated(&self) -> bool {
        true
    }

    fn ref_store(&self) -> Option<Arc<dyn RefStore>> {
        self.store.clone()
    }

    async fn expire(&self, session: SessionId) -> Result<(), avout::Error> {
        if self.zk.with_kernel(|k| k.is_alive(session)) {
            self.zk.expire_session(session);
        }
        Ok(())
    }

    fn sim_zk(&self) -> Option<avout_sim_zk::SimZk> {
        Some(self.zk.clone())
    }
}

/// A real ZooKeeper ensemble as a [`Cluster`]. It keeps track of the sessions its clients
/// open, so that a workload or a nemesis can expire them ([`ZkCluster::sessions`]).
#[derive(Clone)]
pub struct ZkCluster {
    sessions: Sessions,
    store: Option<Arc<dyn RefStore>>,
}

impl std::fmt::Debug for ZkCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkCluster")
            .field("sessions", &self.sessions)
            .field("ref_store", &self.store.as_ref().map(|s| s.name()))
            .finish()
    }
}

/// A [`ZkConfig`] that remembers the sessions it opens: the connector of a [`ZkCluster`]'s
/// clients.
#[derive(Clone, Debug)]
struct Sessions {
    config: ZkConfig,
    opened: Arc<Mutex<Vec<Weak<ZkClient>>>>,
}

impl avout::client::Connect for Sessions {
    fn connect(&self) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
        Box::pin(async move {
            let zk = Arc::new(ZkClient::connect(&self.config).await?);
            let mut opened = self.opened.lock().expect("never poisoned");
            // Forget the sessions that are gone, so a long run does not grow the list.
            opened.retain(|s| s.strong_count() > 0);
            opened.push(Arc::downgrade(&zk));
            Ok(zk as Arc<dyn Coordination>)
        })
    }
}

impl ZkCluster {
    /// Clients of `config`.
    ///
    /// ```
    /// let c = avout_scenarios::scenario::env::ZkCluster::new(avout::zk::ZkConfig::new("127.0.0.1:2181"));
    /// assert!(c.sessions().is_empty());
    /// ```
    pub fn new(config: ZkConfig) -> Self {
        ZkCluster {
            sessions: Sessions {
                config,
                opened: Arc::default(),
            },
            store: None,
        }
    }

    /// The same, with the STM's values in `store` (`None`: in the nodes).
    ///
    /// ```
    /// use avout_scenarios::scenario::env::{Cluster, ZkCluster};
    /// use avout_scenarios::scenario::store::RefStoreKind;
    /// let c = ZkCluster::new(avout::zk::ZkConfig::new("127.0.0.1:2181"))
    ///     .with_ref_store(RefStoreKind::Memory.in_process());
    /// assert!(c.ref_store().is_some());
    /// ```
    pub fn with_ref_store(mut self, store: Option<Arc<dyn RefStore>>) -> Self {
        self.store = store;
        self
    }

    /// The sessions its clients hold open now, oldest first.
    pub fn sessions(&self) -> Vec<Arc<ZkClient>> {
        self.sessions
            .opened
            .lock()
            .expect("never poisoned")
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|zk| !zk.session_state().is_terminal())
            .collect()
    }
}

impl Cluster for ZkCluster {
    async fn client(&self) -> Result<Client, avout::Error> {
        Client::connect(self.sessions.clone()).await
    }

    fn is_simulated(&self) -> bool {
        false
    }

    fn ref_store(&self) -> Option<Arc<dyn RefStore>> {
        self.store.clone()
    }

    async fn expire(&self, session: SessionId) -> Result<(), avout::Error> {
        let open = self
            .sessions()
            .into_iter()
            .find(|zk| zk.session().id == session);
        match open {
            Some(zk) => zk.expire_session().await,
            None => Ok(()),
        }
    }
}

#[derive(Debug, Default)]
struct Book {
    history: History,
    retries: u64,
    stalls: Vec<String>,
}

/// Writes a run's history, shared by its clients.
///
/// ```
/// use avout_scenarios::scenario::env::Recorder;
/// let (_, _) = avout_sim_zk::Sim::builder().build().run(|_| async move {
///     let rec = Recorder::new();
///     rec.invoke(0, "read", serde_json::Value::Null, None);
///     rec.complete(avout_check::history::EventType::Ok, 0, "read", 3.into(), None);
///     assert_eq!(rec.history().len(), 2);
/// });
/// ```
#[derive(Clone, Debug)]
pub struct Recorder {
    book: Arc<Mutex<Book>>,
    start: tokio::time::Instant,
}

impl Recorder {
    /// An empty history starting now (call inside the run's runtime).
    pub fn new() -> Self {
        Recorder {
            book: Arc::default(),
            start: tokio::time::Instant::now(),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().expect("the recorder is never poisoned")
    }

    /// Records the start of an operation.
    pub fn invoke(&self, process: u64, f: &str, value: Value, key: Option<Value>) {
        self.record(EventType::Invoke, process, f, value, key, None);
    }

    /// Records the end of an operation.
    pub fn complete(
        &self,
        kind: EventType,
        process: u64,
        f: &str,
        value: Value,
        key: Option<Value>,
    ) {
        self.record(kind, process, f, value, key, None);
    }

    /// Records an event of `kind`, failed with Maelstrom's error `code` if any (`kind` MUST
    /// agree with it: `fail` for a definite code, `info` for 0 or 13).
    pub fn record(
        &self,
        kind: EventType,
        process: u64,
        f: &str,
        value: Value,
        key: Option<Value>,
        code: Option<ErrorCode>,
    ) {
        debug_assert!(
            code.is_none_or(|c| c.event_type() == kind),
            "{code:?} with {kind:?}"
        );
        let t = self.elapsed().as_nanos() as u64;
        let mut event = Event::new(kind, process, F::from(f.to_owned()), value).with_time(t);
        event.key = key;
        event.error = code;
        self.book().history.push(event);
    }

    /// Counts retries a client made inside one operation (conflicts, recoveries).
    pub fn retries(&self, n: u64) {
        self.book().retries += n;
    }

    /// Records that an operation did not finish within the run's deadline.
    pub fn stall(&self, what: String) {
        self.book().stalls.push(what);
    }

    /// Time since the start of the run.
    pub fn elapsed(&self) -> Duration {
        tokio::time::Instant::now() - self.start
    }

    /// The history so far.
    pub fn history(&self) -> History {
        self.book().history.clone()
    }

    /// The history, retries and stalls.
    pub(crate) fn finish(&self) -> (History, u64, Vec<String>) {
        let book = self.book();
        (book.history.clone(), book.retries, book.stalls.clone())
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

/// A logical client's process number in the history. After an operation whose outcome is
/// unknown, Jepsen retires the process and carries on under a fresh number, so that every
/// process has at most one operation in doubt; `retire` does that.
#[derive(Clone, Copy, Debug)]
pub struct Process {
    id: u64,
    stride: u64,
}

impl Process {
    /// Client `index` of `clients`.
    ///
    /// ```
    /// let mut p = avout_scenarios::scenario::env::Process::new(1, 4);
    /// assert_eq!(p.id(), 1);
    /// p.retire();
    /// assert_eq!(p.id(), 5);
    /// ```
    pub fn new(index: usize, clients: usize) -> Self {
        Process {
            id: index as u64,
            stride: clients.max(1) as u64,
        }
    }

    /// The same numbering moved up by `base`: for a second process set of the same clients
    /// (a part of each client that runs beside its main loop), apart from the first.
    ///
    /// ```
    /// let p = avout_scenarios::scenario::env::Process::new(1, 4).shifted(1000);
    /// assert_eq!(p.id(), 1001);
    /// ```
    pub fn shifted(self, base: u64) -> Self {
        Process {
            id: self.id + base,
            ..self
        }
    }

    /// The current number.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Moves on to a fresh number.
    pub fn retire(&mut self) {
        self.id += self.stride;
    }
}

/// How an operation's error ended it: definitely not applied, or in doubt.
///
/// ```
/// use avout_scenarios::scenario::env::outcome_of;
/// use avout_check::history::EventType;
/// assert_eq!(outcome_of(&avout::Error::ConnectionLoss), EventType::Info);
/// assert_eq!(outcome_of(&avout::Error::SessionExpired), EventType::Fail);
/// ```
pub fn outcome_of(e: &avout::Error) -> EventType {
    if e.is_indeterminate() {
        EventType::Info
    } else {
        EventType::Fail
    }
}

/// Opens a managed client on `cluster`.
pub(crate) async fn open_client<K: Cluster>(cluster: &K) -> Result<Client, WorkloadError> {
    Ok(cluster.client().await?)
}

/// Runs `f` until it opens something, pausing after each failure (a session lost under it
/// included: the next try runs on the client's next session); gives up with the last error
/// after `attempts`.
pub(crate) async fn retry_open<T, E: Into<BoxError>, Fut>(
    attempts: u32,
    mut f: impl FnMut() -> Fut,
) -> Result<T, WorkloadError>
where
    Fut: Future<Output = Result<T, E>>,
{
    let mut last = None;
    for _ in 0..attempts {
        match f().await {
            Ok(t) => return Ok(t),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(WorkloadError::gave_up(
        format!("opening a handle ({attempts} tries)"),
        last,
    ))
}

/// Runs `client(i)` for each of `clients` clients concurrently, to completion, and returns the
/// first error (every client finishes first, so the history is complete).
///
/// Each client is a process of its own: it runs under its own [`avout::task::Gate`], with
/// the background tasks avout starts for it, so the simulator's `client-freeze` stops all of
/// it at once, as a stopped process stops.
pub(crate) async fn all_clients<Fut>(
    clients: usize,
    mut client: impl FnMut(usize) -> Fut,
) -> Result<(), WorkloadError>
where
    Fut: std::future::Future<Output = Result<(), WorkloadError>>,
{
    futures::future::join_all((0..clients).map(|i| avout::task::Gate::new().run(client(i))))
        .await
        .into_iter()
        .collect()
}
