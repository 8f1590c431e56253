//! The registry of scenarios: the built-ins and the user's, by name.
//!
//! A scenario is a value implementing [`Scenario`]. The built-ins are listed in
//! [`Registry::builtins`]; a user's are added with [`Registry::with`] (for a binary of their
//! own, `avout_cli::main_with`) or [`register`] (what [`crate::harness::Harness`] does).
//! Every name that has been registered in the process resolves through [`lookup`], so case
//! files, replay and shrinking work on a user's scenario as on a built-in.

use std::any::Any;
use std::sync::{Arc, RwLock};

use futures::future::LocalBoxFuture;

use super::any_cluster::AnyCluster;
use super::env::Recorder;
use super::error::WorkloadError;
use super::name::ScenarioName;
use super::{Checks, Workload};

/// A workload against a cluster, and the checkers that judge the history it records.
///
/// The workload opens managed clients on the cluster ([`Cluster::client`]), draws every
/// choice from the workload's seed ([`client_rng`]), and records each operation's invocation
/// and completion with the [`Recorder`]. The same code runs on the simulator (where every run
/// of a seed is the same run) and on a real ensemble. The checkers it binds
/// ([`Scenario::checkers`]: avout-check's by name, or the user's own) judge the history alone.
///
/// [`Cluster::client`]: super::env::Cluster::client
/// [`client_rng`]: super::env::client_rng
///
/// ```
/// use avout::atom::Atom;
/// use avout_check::Options;
/// use avout_check::history::EventType;
/// use avout_scenarios::scenario::env::{Cluster, Recorder};
/// use avout_scenarios::scenario::{AnyCluster, Checks, Scenario, Workload, WorkloadError};
/// use futures::future::LocalBoxFuture;
///
/// struct Hits;
///
/// impl Scenario for Hits {
///     fn name(&self) -> &'static str { "doc-hits" }
///     fn about(&self) -> &'static str { "one increment per client; checker: all acknowledged" }
///     fn defaults(&self) -> (usize, usize) { (2, 1) }
///     fn workload<'a>(&'a self, cluster: AnyCluster<'a>, w: &'a Workload, rec: &'a Recorder)
///         -> LocalBoxFuture<'a, Result<(), WorkloadError>> {
///         Box::pin(async move {
///             for p in 0..w.clients as u64 {
///                 let client = cluster.client().await?;
///                 let hits: Atom<u64> = Atom::open(&client, "/hits", 0).await?;
///                 rec.invoke(p, "add", 1.into(), None);
///                 match hits.swap(|n| n + 1).await {
///                     Ok(n) => rec.complete(EventType::Ok, p, "add", n.into(), None),
///                     Err(_) => rec.complete(EventType::Info, p, "add", 1.into(), None),
///                 }
///             }
///             Ok(())
///         })
///     }
///     fn checkers(&self, _: &Workload) -> Checks {
///         // Its adds, each producing the next count: avout-check's `counter` judges them.
///         Checks::named("counter", &Options::default())
///     }
/// }
///
/// let name = avout_scenarios::scenario::registry::register(Hits);
/// let w = Workload::new(name, 1);
/// let report = avout_scenarios::scenario::run_sim(
///     &w, &avout_scenarios::scenario::FaultPlan::none(), None, false, None).unwrap();
/// assert!(report.verdict.is_valid(), "{}", report.verdict);
/// ```
pub trait Scenario: Any + Send + Sync {
    /// The name on the command line and in case files (unique in the registry).
    fn name(&self) -> &'static str;
    /// One line about the workload and its checker.
    fn about(&self) -> &'static str;
    /// The default number of clients and of operations per client.
    fn defaults(&self) -> (usize, usize);
    /// Runs the workload of `w` on `cluster`, recording its history with `rec`. An `Err`
    /// fails the run (on the simulator, as an anomaly that is recorded and shrunk).
    fn workload<'a>(
        &'a self,
        cluster: AnyCluster<'a>,
        w: &'a Workload,
        rec: &'a Recorder,
    ) -> LocalBoxFuture<'a, Result<(), WorkloadError>>;
    /// The checkers that judge a history of `w`.
    fn checkers(&self, w: &Workload) -> Checks;
}

/// Scenarios by name, in the order they were added.
///
/// ```
/// use avout_scenarios::scenario::registry::Registry;
/// let r = Registry::builtins();
/// assert_eq!(r.get("counter").unwrap().name(), "counter");
/// assert!(r.names().contains(&"bank"));
/// ```
#[derive(Clone, Default)]
pub struct Registry {
    scenarios: Vec<Arc<dyn Scenario>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Registry {
    /// No scenarios.
    pub fn empty() -> Self {
        Registry::default()
    }

    /// avout's own scenarios.
    pub fn builtins() -> Self {
        use super::*;
        Registry::empty()
            .with(counter::CounterScenario)
            .with(linkv::LinKvScenario)
            .with(mutex::MutexScenario)
            .with(rwlock::RwlockScenario)
            .with(election::ElectionScenario)
            .with(queue::QueueScenario)
            .with(barrier::BarrierScenario)
            .with(bank::BankScenario)
            .with(list_append::ListAppendScenario)
            .with(locktable::LockTableScenario)
            .with(two_phase_commit::TwoPhaseCommitScenario)
            .with(sessions::SessionsScenario)
            .with(agents::AgentsScenario)
            .with(cache::CacheScenario)
    }

    /// The same, with `scenario` added.
    ///
    /// # Panics
    ///
    /// If another scenario has its name: names are what case files keep.
    pub fn with(mut self, scenario: impl Scenario) -> Self {
        self.add(Arc::new(scenario));
        self
    }

    /// Adds `scenario`, unless a scenario of the same type and name is there already.
    fn add(&mut self, scenario: Arc<dyn Scenario>) {
        let name = scenario.name();
        match self.get(name) {
            Some(there) if same_type(there.as_ref(), scenario.as_ref()) => {}
            Some(_) => panic!("two scenarios are named {name:?}"),
            None => self.scenarios.push(scenario),
        }
    }

    /// The scenario named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Scenario>> {
        self.scenarios.iter().find(|s| s.name() == name)
    }

    /// The names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.scenarios.iter().map(|s| s.name()).collect()
    }

    /// Makes every scenario here resolvable by name in this process ([`lookup`],
    /// [`ScenarioName`]'s parsing), beside those already registered.
    pub fn install(&self) {
        let mut global = global().write().expect("never poisoned");
        for s in &self.scenarios {
            global.add(s.clone());
        }
    }
}

fn same_type(a: &dyn Scenario, b: &dyn Scenario) -> bool {
    let (a, b): (&dyn Any, &dyn Any) = (a, b);
    a.type_id() == b.type_id()
}

/// The scenarios that resolve by name in this process: the built-ins, then every one
/// registered since.
fn global() -> &'static RwLock<Registry> {
    static GLOBAL: std::sync::OnceLock<RwLock<Registry>> = std::sync::OnceLock::new();
    GLOBAL.get_or_init(|| RwLock::new(Registry::builtins()))
}

/// Makes `scenario` resolvable by name in this process and returns its name. Registering the
/// same scenario again is harmless.
///
/// # Panics
///
/// If a different scenario already has its name.
///
/// ```
/// use avout_scenarios::scenario::{registry, ScenarioName};
/// assert_eq!(registry::register(avout_scenarios::scenario::counter::CounterScenario), ScenarioName::Counter);
/// ```
pub fn register(scenario: impl Scenario) -> ScenarioName {
    let name = scenario.name();
    global()
        .write()
        .expect("never poisoned")
        .add(Arc::new(scenario));
    ScenarioName::new_unchecked(name)
}

/// The scenario registered under `name`.
///
/// ```
/// assert!(avout_scenarios::scenario::registry::lookup("bank").is_some());
/// assert!(avout_scenarios::scenario::registry::lookup("nope").is_none());
/// ```
pub fn lookup(name: &str) -> Option<Arc<dyn Scenario>> {
    global().read().expect("never poisoned").get(name).cloned()
}

/// Every registered name, in order.
pub fn names() -> Vec<&'static str> {
    global().read().expect("never poisoned").names()
}
