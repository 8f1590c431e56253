//! What a workload runs against: a [`Cluster`] to open sessions on (the simulator or a real
//! ensemble), a [`Recorder`] that writes the history, and per-client random streams.
//!
//! Workloads are written once, generic over [`Cluster`], so the same code and the same
//! checker run on the embedded simulator and on real ZooKeeper. Time in the history is
//! `tokio::time::Instant` since the start of the run: virtual nanoseconds on the simulator's
//! paused clock, wall-clock ones on a real server.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::Coordination;
use avout::planted::Bugs;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::history::{Event, EventType, F, History};

/// Somewhere to open ZooKeeper sessions: the simulator's service or a real ensemble.
///
/// ```
/// use avout_scenarios::scenario::env::{Cluster, SimCluster};
/// let (_, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
///     let cluster = SimCluster::new(ctx.zk.clone());
///     let client = cluster.connect().await.unwrap();
///     assert!(cluster.is_simulated());
///     drop(client);
/// });
/// ```
pub trait Cluster {
    /// The session type.
    type Client: Coordination + 'static;
    /// Opens a new session.
    fn connect(&self) -> impl Future<Output = Result<Arc<Self::Client>, avout::Error>>;
    /// Whether this is the simulator (virtual time).
    fn is_simulated(&self) -> bool;
    /// The bugs to plant in the handles the workload builds on these sessions (none unless
    /// the cluster is [`Planted`]).
    fn planted(&self) -> Bugs {
        Bugs::NONE
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
    type Client = K::Client;

    fn connect(&self) -> impl Future<Output = Result<Arc<Self::Client>, avout::Error>> {
        self.inner.connect()
    }

    fn is_simulated(&self) -> bool {
        self.inner.is_simulated()
    }

    fn planted(&self) -> Bugs {
        self.bugs
    }
}

/// The simulator's service as a [`Cluster`].
#[derive(Clone, Debug)]
pub struct SimCluster {
    zk: avout_sim_zk::SimZk,
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
        SimCluster { zk }
    }
}

impl Cluster for SimCluster {
    type Client = avout_sim_zk::SimClient;

    async fn connect(&self) -> Result<Arc<Self::Client>, avout::Error> {
        Ok(Arc::new(self.zk.connect()))
    }

    fn is_simulated(&self) -> bool {
        true
    }
}

/// A real ZooKeeper ensemble as a [`Cluster`].
#[derive(Clone, Debug)]
pub struct ZkCluster {
    config: avout::zk::ZkConfig,
}

impl ZkCluster {
    /// Sessions from `config`.
    ///
    /// ```
    /// let c = avout_scenarios::scenario::env::ZkCluster::new(avout::zk::ZkConfig::new("127.0.0.1:2181"));
    /// # let _ = c;
    /// ```
    pub fn new(config: avout::zk::ZkConfig) -> Self {
        ZkCluster { config }
    }
}

impl Cluster for ZkCluster {
    type Client = avout::zk::ZkClient;

    async fn connect(&self) -> Result<Arc<Self::Client>, avout::Error> {
        avout::zk::ZkClient::connect(&self.config)
            .await
            .map(Arc::new)
    }

    fn is_simulated(&self) -> bool {
        false
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
///     rec.complete(avout_scenarios::history::EventType::Ok, 0, "read", 3.into(), None);
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

    fn push(&self, kind: EventType, process: u64, f: &str, value: Value, key: Option<Value>) {
        let t = self.elapsed().as_nanos() as u64;
        let mut event = Event::new(kind, process, F::from(f.to_owned()), value).with_time(t);
        event.key = key;
        self.book().history.push(event);
    }

    /// Records the start of an operation.
    pub fn invoke(&self, process: u64, f: &str, value: Value, key: Option<Value>) {
        self.push(EventType::Invoke, process, f, value, key);
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
        self.push(kind, process, f, value, key);
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

/// A client's own random stream: a function of the run's seed and the client's index only,
/// so faults, latencies and the other clients never change what it decides.
///
/// ```
/// use rand::Rng;
/// let mut a = avout_scenarios::scenario::env::client_rng(7, 1);
/// let mut b = avout_scenarios::scenario::env::client_rng(7, 1);
/// assert_eq!(a.random::<u64>(), b.random::<u64>());
/// ```
pub fn client_rng(seed: u64, client: usize) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&(client as u64).to_le_bytes());
    key[16..24].copy_from_slice(b"workload");
    ChaCha8Rng::from_seed(key)
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
/// use avout_scenarios::history::EventType;
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

/// Runs `f` until it opens something, reconnecting after a lost session and pausing after
/// other failures; gives up (with the last error) after `attempts`.
pub(crate) async fn retry_open<K: Cluster, T, E: std::fmt::Display, Fut>(
    cluster: &K,
    client: &mut Arc<K::Client>,
    attempts: u32,
    mut f: impl FnMut(Arc<K::Client>) -> Fut,
) -> Result<T, String>
where
    Fut: Future<Output = Result<T, E>>,
{
    let mut last = String::new();
    for _ in 0..attempts {
        if client.session_states().current().is_terminal()
            && let Ok(c) = cluster.connect().await
        {
            *client = c;
        }
        match f(client.clone()).await {
            Ok(t) => return Ok(t),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(last)
}

/// Runs `client(i)` for each of `clients` clients concurrently, to completion, and returns the
/// first error (every client finishes first, so the history is complete).
pub(crate) async fn all_clients<Fut>(
    clients: usize,
    client: impl FnMut(usize) -> Fut,
) -> Result<(), String>
where
    Fut: std::future::Future<Output = Result<(), String>>,
{
    futures::future::join_all((0..clients).map(client))
        .await
        .into_iter()
        .collect()
}
