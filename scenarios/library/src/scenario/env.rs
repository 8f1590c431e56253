//! What a workload runs against: an [`Env`] (the backend its clients open sessions on, and
//! the run's settings that are not the service's) and a [`Recorder`] that writes the history.
//! Its clients draw their choices from their own streams,
//! [`ClientStream`](avout_sim_zk::rng::ClientStream), beside the simulator's.
//!
//! Workloads are written once, against testkit's [`Backend`] (through [`Env::backend`]), so
//! the same code and the same checker run on the embedded simulator
//! ([`SimBackend`](avout_testkit::backend::SimBackend)) and on
//! real ZooKeeper ([`ZkBackend`](avout_testkit::backend::ZkBackend)): the trait the recipe
//! tests of `avout`'s `tests/it` and the backend conformance suite run on too. Each workload
//! client holds one [`Client`](avout::Client), which opens a new session by itself after each expiry, and
//! builds its handles on it once: nothing in a workload reconnects or rebuilds. Time in the
//! history is `tokio::time::Instant` since the start of the run: virtual nanoseconds on the
//! simulator's paused clock, wall-clock ones on a real server.
//!
//! # A backend of your own
//!
//! A new place to run workloads implements one trait, testkit's [`Backend`] (how a test or a
//! workload opens many clients and sessions there, and expires them), and gives it core's
//! [`Connect`](avout::client::Connect) (how one managed client opens its next session). What
//! [`Env`] adds, the planted bugs and the STM's ref store, belongs to a run, not to a service:
//! every backend gets it for nothing.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::planted::Bugs;
use avout::stm::store::RefStore;
use avout_testkit::backend::Backend;
use serde_json::Value;

use super::error::{BoxError, WorkloadError};
use avout_check::history::{Event, EventType, F, History};

/// What a workload runs against: the [`Backend`] its clients open sessions on (the simulator
/// or real ZooKeeper), with the settings of the run that are not the service's.
///
/// A workload opens each of its managed clients with `env.backend.client()` (a new session
/// by itself after each expiry), expires a session with `env.backend.expire(id)`, and, on
/// the simulator, reaches the simulated service with `env.backend.simulator()`: under
/// `--cfg madsim` it starts client processes there with
/// [`SimZk::node`](avout_sim_zk::SimZk) (a madsim node each, which can be paused, killed
/// and restarted with its tasks and timers) and opens their clients in an `Env` of their own
/// over a [`SimBackend`](avout_testkit::backend::SimBackend).
///
/// ```
/// use avout_scenarios::scenario::env::Env;
/// use avout_testkit::backend::SimBackend;
/// let (_, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
///     let backend = SimBackend::new(ctx.zk.clone());
///     let env = Env::new(&backend);
///     let client = env.backend.client().await.unwrap();
///     assert!(env.backend.is_simulated() && env.planted.is_empty());
///     client.close().await.unwrap();
/// });
/// ```
#[derive(Clone)]
pub struct Env<'a> {
    /// Where the workload's clients open their sessions.
    pub backend: &'a dyn Backend,
    /// The bugs to plant in the handles the workload builds (none but in a planted run).
    pub planted: Bugs,
    /// Where the STM handles the workload opens keep their refs' values (`None`: in the
    /// nodes).
    pub ref_store: Option<Arc<dyn RefStore>>,
}

impl<'a> Env<'a> {
    /// Workloads on `backend`, with no bug planted and the STM's values in the nodes.
    ///
    /// ```
    /// use avout::planted::Bugs;
    /// use avout_scenarios::scenario::env::Env;
    /// use avout_scenarios::scenario::store::RefStoreKind;
    /// use avout_testkit::backend::ZkBackend;
    /// let backend = ZkBackend::new(avout::zk::ZkConfig::new("127.0.0.1:2181"));
    /// let env = Env { ref_store: RefStoreKind::Memory.in_process(), ..Env::new(&backend) };
    /// assert!(!env.backend.is_simulated() && env.ref_store.is_some());
    /// assert_eq!(env.planted, Bugs::NONE);
    /// ```
    pub fn new(backend: &'a dyn Backend) -> Self {
        Env {
            backend,
            planted: Bugs::NONE,
            ref_store: None,
        }
    }
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("simulated", &self.backend.is_simulated())
            .field("planted", &self.planted)
            .field("ref_store", &self.ref_store.as_ref().map(|s| s.name()))
            .finish()
    }
}

/// What a run's clients wrote down: the history and what no history shows.
#[derive(Clone, Debug, Default)]
pub(crate) struct Book {
    pub(crate) history: History,
    /// Retries made inside operations.
    pub(crate) retries: u64,
    /// Of the retries, STM tries abandoned for a conflict with another transaction.
    pub(crate) conflicts: u64,
    /// Operations that did not finish within the run's deadline.
    pub(crate) stalls: Vec<String>,
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
        self.complete(EventType::Invoke, process, f, value, key);
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
        let mut event = Event::new(kind, process, F::from(f.to_owned()), value);
        event.key = key;
        self.record(event);
    }

    /// Records `event`, stamped with the time since the start of the run. An event failed
    /// with Maelstrom's error code MUST have the type the code has (`fail` for a definite
    /// code, `info` for 0 or 13).
    ///
    /// ```
    /// use avout_check::history::{ErrorCode, Event, F};
    /// use avout_scenarios::scenario::env::Recorder;
    /// let (_, _) = avout_sim_zk::Sim::builder().build().run(|_| async move {
    ///     let rec = Recorder::new();
    ///     let refused = Event::fail(0, F::Read, serde_json::Value::Null);
    ///     rec.record(refused.with_error(ErrorCode::TEMPORARILY_UNAVAILABLE));
    ///     assert_eq!(rec.history().events()[0].time, Some(0));
    /// });
    /// ```
    pub fn record(&self, event: Event) {
        debug_assert!(
            event.error.is_none_or(|c| c.event_type() == event.kind),
            "{:?} with {:?}",
            event.error,
            event.kind
        );
        let t = self.elapsed().as_nanos() as u64;
        self.book().history.push(event.with_time(t));
    }

    /// Counts retries a client made inside one operation (conflicts, recoveries).
    pub fn retries(&self, n: u64) {
        self.book().retries += n;
    }

    /// Counts a client's STM handle's retries, and which of them were conflicts: a run with
    /// one client that has any fails (a lone client has nobody to conflict with).
    ///
    /// ```
    /// use avout_scenarios::scenario::env::Recorder;
    /// let (_, _) = avout_sim_zk::Sim::builder().build().run(|_| async move {
    ///     let rec = Recorder::new();
    ///     rec.stm(avout::stm::StmStats { retries: 2, conflicts: 1, ..Default::default() });
    /// });
    /// ```
    pub fn stm(&self, stats: avout::stm::StmStats) {
        let mut book = self.book();
        book.retries += stats.retries;
        book.conflicts += stats.conflicts;
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

    /// Everything written down.
    pub(crate) fn finish(&self) -> Book {
        self.book().clone()
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
