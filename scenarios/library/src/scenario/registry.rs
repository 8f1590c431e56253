//! The [`Scenario`] trait, and the [`Registry`]: scenarios by name, the one list of them.
//!
//! A scenario is a value implementing [`Scenario`]. The built-ins are listed in
//! [`Registry::builtins`], and nowhere else; a user adds theirs with [`Registry::with`] (for a
//! binary of their own, `avout_cli::main_with`; for `cargo test`,
//! [`Harness`](crate::harness::Harness)). A registry is a value handed to whatever runs
//! scenarios by name — a [`Run`], [`explore`](super::explore), [`shrink`](super::shrink),
//! [`soak`](super::soak), a [case](super::case) — so case files, replay and shrinking work on a
//! user's scenario as on a built-in, with no process-wide state.

use std::sync::Arc;

use futures::future::LocalBoxFuture;

use super::env::{Env, Recorder};
use super::error::WorkloadError;
use super::run::Run;
use super::{Checks, Workload};

/// A workload against a backend, and the checkers that judge the history it records.
///
/// The workload opens managed clients on its [`Env`]'s backend ([`Backend::client`]), draws every
/// choice from its clients' own streams ([`ClientStream`]), and records each operation's
/// invocation and completion with the [`Recorder`]. The same code runs on the simulator
/// (where every run of a seed is the same run) and on a real ensemble. The checkers it binds
/// ([`Scenario::checkers`]: avout-check's by name, or the user's own) judge the history alone.
///
/// [`Backend::client`]: avout_testkit::backend::Backend::client
/// [`ClientStream`]: avout_sim_zk::rng::ClientStream
///
/// ```
/// use avout::atom::Atom;
/// use avout_check::Options;
/// use avout_check::history::EventType;
/// use avout_scenarios::scenario::env::{Env, Recorder};
/// use avout_scenarios::scenario::{Checks, Registry, Scenario, Workload, WorkloadError};
/// use futures::future::LocalBoxFuture;
///
/// struct Hits;
///
/// impl Scenario for Hits {
///     fn name(&self) -> &'static str { "doc-hits" }
///     fn about(&self) -> &'static str { "one increment per client; checker: all acknowledged" }
///     fn defaults(&self) -> (usize, usize) { (2, 1) }
///     fn workload<'a>(&'a self, env: &'a Env<'a>, w: &'a Workload, rec: &'a Recorder)
///         -> LocalBoxFuture<'a, Result<(), WorkloadError>> {
///         Box::pin(async move {
///             for p in 0..w.clients as u64 {
///                 let client = env.backend.client().await?;
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
/// let registry = Registry::builtins().with(Hits);
/// let w = Workload::new(&Hits, 1);
/// let report = registry.run(&w).sim().unwrap();
/// assert!(report.verdict.is_valid(), "{}", report.verdict);
/// ```
pub trait Scenario: Send + Sync {
    /// The name on the command line and in case files (unique in a registry).
    fn name(&self) -> &'static str;
    /// One line about the workload and its checkers.
    fn about(&self) -> &'static str;
    /// The default number of clients and of operations per client.
    fn defaults(&self) -> (usize, usize);
    /// Runs the workload of `w` on `env`, recording its history with `rec`. An `Err`
    /// fails the run (on the simulator, as an anomaly that is recorded and shrunk).
    fn workload<'a>(
        &'a self,
        env: &'a Env<'a>,
        w: &'a Workload,
        rec: &'a Recorder,
    ) -> LocalBoxFuture<'a, Result<(), WorkloadError>>;
    /// The checkers that judge a history of `w`.
    fn checkers(&self, w: &Workload) -> Checks;
    /// Whether `avout soak` and the test suite run it by default: every scenario but one
    /// with a known failure not fixed yet, which runs by name until it is (its cases are kept
    /// in `scenarios/known-failures/`; [`KnownFailure`] marks a built-in so).
    fn soaked(&self) -> bool {
        true
    }
}

/// The workload of a [`Described`] scenario ([`Scenario::workload`] as a function).
pub type WorkloadFn = for<'a> fn(
    &'a Env<'a>,
    &'a Workload,
    &'a Recorder,
) -> LocalBoxFuture<'a, Result<(), WorkloadError>>;

/// A scenario given by its parts: what every built-in is, and the short way to write one's
/// own.
///
/// ```
/// use avout_check::Options;
/// use avout_scenarios::scenario::{Checks, Described, Registry};
/// const NOTHING: Described = Described {
///     name: "nothing",
///     about: "no operation; checker: a counter's, of nothing",
///     defaults: (1, 0),
///     checkers: |_| Checks::named("counter", &Options::default()),
///     workload: |_, _, _| Box::pin(async { Ok(()) }),
/// };
/// let registry = Registry::empty().with(NOTHING);
/// let w = registry.workload("nothing", 3).unwrap();
/// assert!(registry.run(&w).sim().unwrap().verdict.is_valid());
/// ```
#[derive(Clone, Copy)]
pub struct Described {
    /// [`Scenario::name`].
    pub name: &'static str,
    /// [`Scenario::about`].
    pub about: &'static str,
    /// [`Scenario::defaults`].
    pub defaults: (usize, usize),
    /// [`Scenario::checkers`].
    pub checkers: fn(&Workload) -> Checks,
    /// [`Scenario::workload`].
    pub workload: WorkloadFn,
}

impl std::fmt::Debug for Described {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Described")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Scenario for Described {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn defaults(&self) -> (usize, usize) {
        self.defaults
    }

    fn workload<'a>(
        &'a self,
        env: &'a Env<'a>,
        w: &'a Workload,
        rec: &'a Recorder,
    ) -> LocalBoxFuture<'a, Result<(), WorkloadError>> {
        (self.workload)(env, w, rec)
    }

    fn checkers(&self, w: &Workload) -> Checks {
        (self.checkers)(w)
    }
}

/// A built-in scenario with a known failure not fixed yet: it runs by name, and is left out
/// of the default soak (and CI's) until its bug is fixed; its failing cases are kept in
/// `scenarios/known-failures/`.
///
/// ```
/// use avout_scenarios::scenario::{KnownFailure, Registry, Scenario};
/// let known = KnownFailure(avout_scenarios::builtin::counter::SCENARIO);
/// assert!(!known.soaked());
/// let registry = Registry::empty().with(known);
/// assert!(registry.soaked().is_empty() && registry.get("counter").is_ok());
/// ```
pub struct KnownFailure(pub Described);

impl Scenario for KnownFailure {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn about(&self) -> &'static str {
        self.0.about()
    }

    fn defaults(&self) -> (usize, usize) {
        self.0.defaults()
    }

    fn workload<'a>(
        &'a self,
        env: &'a Env<'a>,
        w: &'a Workload,
        rec: &'a Recorder,
    ) -> LocalBoxFuture<'a, Result<(), WorkloadError>> {
        self.0.workload(env, w, rec)
    }

    fn checkers(&self, w: &Workload) -> Checks {
        self.0.checkers(w)
    }

    fn soaked(&self) -> bool {
        false
    }
}

/// A name that is not a scenario's.
///
/// ```
/// let Err(e) = avout_scenarios::scenario::Registry::builtins().get("nope") else {
///     panic!("no scenario of that name")
/// };
/// assert!(e.to_string().contains("known: counter, lin-kv"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown scenario {name:?}; known: {known}")]
pub struct UnknownScenario {
    /// The name asked for.
    pub name: String,
    /// The names there are, comma-separated.
    pub known: String,
}

/// Scenarios by name, in the order they were added.
///
/// ```
/// use avout_scenarios::scenario::Registry;
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

    /// avout's own scenarios ([`crate::builtin`]), in the order `avout soak` runs them.
    pub fn builtins() -> Self {
        use crate::builtin::*;
        Registry::empty()
            .with(counter::SCENARIO)
            .with(lin_kv::SCENARIO)
            .with(mutex::SCENARIO)
            .with(rwlock::SCENARIO)
            .with(election::SCENARIO)
            .with(queue::SCENARIO)
            .with(barrier::SCENARIO)
            .with(bank::SCENARIO)
            .with(list_append::SCENARIO)
            .with(lock_table::SCENARIO)
            .with(two_phase_commit::SCENARIO)
            .with(sessions::SCENARIO)
            .with(agents::SCENARIO)
            .with(cache::SCENARIO)
            .with(semaphore::SCENARIO)
            .with(double_barrier::SCENARIO)
            .with(latch::SCENARIO)
            .with(work_queue::SCENARIO)
            .with(rw_register::SCENARIO)
            .with(bank::handoff::SCENARIO)
    }

    /// The same, with `scenario` added.
    ///
    /// # Panics
    ///
    /// If another scenario has its name: names are what case files keep.
    pub fn with(mut self, scenario: impl Scenario + 'static) -> Self {
        let name = scenario.name();
        assert!(self.get(name).is_err(), "two scenarios are named {name:?}");
        self.scenarios.push(Arc::new(scenario));
        self
    }

    /// The scenario named `name`.
    pub fn get(&self, name: &str) -> Result<&dyn Scenario, UnknownScenario> {
        self.scenarios
            .iter()
            .find(|s| s.name() == name)
            .map(|s| s.as_ref())
            .ok_or_else(|| UnknownScenario {
                name: name.to_owned(),
                known: self.names().join(", "),
            })
    }

    /// The names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.scenarios.iter().map(|s| s.name()).collect()
    }

    /// The names of the scenarios soaked by default ([`Scenario::soaked`]), in order.
    ///
    /// ```
    /// let r = avout_scenarios::scenario::Registry::builtins();
    /// assert!(r.soaked().contains(&"agents") && r.soaked().len() <= r.names().len());
    /// ```
    pub fn soaked(&self) -> Vec<&'static str> {
        self.scenarios
            .iter()
            .filter(|s| s.soaked())
            .map(|s| s.name())
            .collect()
    }

    /// The workload of the scenario `name` at its default size, with `seed`.
    ///
    /// ```
    /// let w = avout_scenarios::scenario::Registry::builtins().workload("counter", 7).unwrap();
    /// assert_eq!((w.scenario.as_str(), w.seed), ("counter", 7));
    /// ```
    pub fn workload(&self, name: &str, seed: u64) -> Result<Workload, UnknownScenario> {
        Ok(Workload::new(self.get(name)?, seed))
    }

    /// A run of `w`, its scenario found here by name (see [`Run`]).
    pub fn run(&self, w: &Workload) -> Run<'_> {
        Run::new(self, w)
    }
}
