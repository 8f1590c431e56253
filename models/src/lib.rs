//! # avout-models: stateright checks of avout's production protocol machines
//!
//! Each model runs the machines that run in production — the lock's
//! [`AcquireMachine`](avout::lock::AcquireMachine) (mutex, both sides of the read-write lock,
//! leader election), the leader's [`MonitorMachine`](avout::lock::MonitorMachine) and the
//! atom's [`CasMachine`](avout::atom::CasMachine) and the STM's (protocol Optimistic)
//! [`ReadMachine`](avout::stm::optimistic::ReadMachine) and
//! [`CommitMachine`](avout::stm::optimistic::CommitMachine), and protocol Mvcc's
//! [`TryMachine`](avout::stm::mvcc::TryMachine) — against a model
//! ZooKeeper built on the simulator's pure kernel ([`world`]). The checker plays the
//! scheduler: which request the server processes next, which reply or watch event a client
//! reads next, which request or reply is lost, whose session expires, when a timer fires. It
//! explores every interleaving of a small configuration and checks `always` properties
//! (safety) in every state, `sometimes` properties (the interesting states are reachable, so
//! no model passes by doing nothing) and `eventually` properties (every client finishes).
//!
//! Nothing of the protocols is re-implemented here: the script around a machine is the few
//! lines its production caller has (the lock's release is a `delete` repeated after a
//! connection loss; the atom's update loop reads, computes and writes again on a conflict;
//! the STM's engine reads through its cache, builds the commit and retries on a conflict).
//!
//! ```
//! use avout_models::{Config, check_named};
//!
//! let report = check_named("mutex", &Config { clients: 2, faults: 0, ..Config::default() }).unwrap();
//! assert!(report.ok(), "{report}");
//! assert!(report.unique_states > 10);
//! ```

pub mod atom;
pub mod check;
pub mod conformance;
pub mod executor;
pub mod lock;
pub mod mvcc;
pub mod shared;
pub mod stm;
mod tx;
pub mod world;

use std::str::FromStr;

use avout::planted::{self, Bug, Bugs};

pub use check::{Report, Search, Verdict, check, check_with, trace};

use crate::world::{FaultKind, Faults};

/// The set a model's `bug` plants in its clients' machines (their configuration).
pub(crate) fn plant(bug: Option<Bug>) -> Bugs {
    Bugs::plant(bug).expect("checked when the model was made")
}

/// The models [`check_named`] knows.
///
/// ```
/// assert_eq!("election".parse::<avout_models::Named>().unwrap(), avout_models::Named::Election);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    /// The exclusive lock.
    Mutex,
    /// The read-write lock (client 0 writes, the others read).
    RwLock,
    /// Leader election.
    Election,
    /// The exclusive lock taken with `try_lock` (a client that finds it held gives up).
    TryMutex,
    /// The atom's compare-and-set (each client increments once).
    Atom,
    /// The STM under protocol Optimistic (odd clients read two refs, even ones transfer).
    Stm,
    /// The STM under protocol Mvcc: clients 0, 1 and 3 increment a ref, client 2 reads.
    Mvcc,
    /// The STM under protocol Mvcc: even clients transfer between two refs, odd ones read.
    MvccBank,
    /// The agent executor's hand-off: each client runs an executor over one agent's queue.
    Agent,
}

impl Named {
    /// Every model, in a fixed order.
    ///
    /// ```
    /// assert_eq!(avout_models::Named::ALL.len(), 9);
    /// ```
    pub const ALL: [Named; 9] = [
        Named::Mutex,
        Named::RwLock,
        Named::Election,
        Named::TryMutex,
        Named::Atom,
        Named::Stm,
        Named::Mvcc,
        Named::MvccBank,
        Named::Agent,
    ];

    /// The model's name on the command line.
    ///
    /// ```
    /// assert_eq!(avout_models::Named::RwLock.name(), "rwlock");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Named::Mutex => "mutex",
            Named::RwLock => "rwlock",
            Named::Election => "election",
            Named::TryMutex => "try-mutex",
            Named::Atom => "atom",
            Named::Stm => "stm",
            Named::Mvcc => "mvcc",
            Named::MvccBank => "mvcc-bank",
            Named::Agent => "agent",
        }
    }

    /// The cycles the command line checks when not told: two for the mutex and the
    /// read-write lock, so that a client's second acquisition can carry its first release (the
    /// deferred release's riding path, see [`lock`]); one for the others.
    ///
    /// ```
    /// use avout_models::Named;
    /// assert_eq!((Named::Mutex.default_cycles(), Named::Election.default_cycles()), (2, 1));
    /// ```
    pub fn default_cycles(self) -> u8 {
        match self {
            Named::Mutex | Named::RwLock => 2,
            _ => 1,
        }
    }
}

impl FromStr for Named {
    type Err = ModelError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Named::ALL
            .into_iter()
            .find(|n| n.name() == s)
            .ok_or_else(|| ModelError::Unknown(s.to_owned()))
    }
}

/// Why a model could not be set up.
///
/// ```
/// let e = "x".parse::<avout_models::Named>().unwrap_err();
/// assert_eq!(e, avout_models::ModelError::Unknown("x".into()));
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelError {
    /// No model has this name.
    #[error(
        "no model is named {0:?} (known: mutex, rwlock, election, try-mutex, atom, stm, mvcc, \
         mvcc-bank, agent)"
    )]
    Unknown(String),
    /// The configuration is out of range.
    #[error("{0}")]
    Config(String),
    /// The explorer cannot listen on the address.
    #[error("the explorer cannot listen on {address}: {reason}")]
    Explorer {
        /// The address.
        address: String,
        /// Why.
        reason: String,
    },
    /// The planted bug cannot be switched on.
    #[error(transparent)]
    Planted(#[from] planted::PlantedError),
}

/// A model's size and faults.
///
/// ```
/// let c = avout_models::Config { clients: 3, faults: 0, ..Default::default() };
/// assert_eq!(c.lock(avout_models::lock::Flavor::Mutex).unwrap().clients, 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Clients (1 to 4).
    pub clients: u8,
    /// Acquire-hold-release cycles per lock client.
    pub cycles: u8,
    /// At most this many faults per run.
    pub faults: u8,
    /// The kinds of fault drawn on (by default [`FaultKind::CLASSIC`]).
    pub kinds: Vec<FaultKind>,
    /// A planted bug to switch on (feature `planted-bugs`).
    pub bug: Option<Bug>,
    /// How to search.
    pub search: Search,
    /// Whether the models that can read ahead do (a partial-order reduction, see
    /// [`world::World::reading_ahead`]; the mvcc models, in exhaustive checks: random walks
    /// do not keep states, so they walk the whole graph).
    pub read_ahead: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            clients: 2,
            cycles: 1,
            faults: 1,
            kinds: FaultKind::CLASSIC.to_vec(),
            bug: None,
            search: Search::default(),
            read_ahead: true,
        }
    }
}

impl Config {
    /// Checks the ranges, and that the planted bug can be switched on.
    ///
    /// ```
    /// let c = avout_models::Config { clients: 0, ..Default::default() };
    /// assert!(c.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), ModelError> {
        if !(1..=4).contains(&self.clients) {
            return Err(ModelError::Config(format!(
                "--clients must be 1 to 4 (the state space grows exponentially), not {}",
                self.clients
            )));
        }
        if !(1..=3).contains(&self.cycles) {
            return Err(ModelError::Config(format!(
                "cycles must be 1 to 3, not {}",
                self.cycles
            )));
        }
        Bugs::plant(self.bug)?;
        Ok(())
    }

    fn faults(&self) -> Faults {
        Faults::of(self.faults, &self.kinds)
    }

    /// The lock model of `flavor` this configuration describes. See [`Config`].
    pub fn lock(&self, flavor: lock::Flavor) -> Result<lock::LockModel, ModelError> {
        self.validate()?;
        Ok(lock::LockModel {
            flavor,
            clients: self.clients,
            cycles: self.cycles,
            faults: self.faults(),
            bug: self.bug,
            space: Default::default(),
        })
    }

    /// The atom model this configuration describes.
    ///
    /// ```
    /// assert_eq!(avout_models::Config::default().atom().unwrap().clients, 2);
    /// ```
    pub fn atom(&self) -> Result<atom::AtomModel, ModelError> {
        self.validate()?;
        Ok(atom::AtomModel {
            clients: self.clients,
            faults: self.faults(),
            bug: self.bug,
            space: Default::default(),
        })
    }
}

impl Config {
    /// The STM model this configuration describes (the default retry limit).
    ///
    /// ```
    /// assert_eq!(avout_models::Config::default().stm().unwrap().clients, 2);
    /// ```
    pub fn stm(&self) -> Result<stm::StmModel, ModelError> {
        self.validate()?;
        Ok(stm::StmModel {
            clients: self.clients,
            faults: self.faults(),
            bug: self.bug,
            ..stm::StmModel::new(self.clients)
        })
    }
}

impl Config {
    /// The Mvcc model this configuration describes for `named` (`mvcc`: increments, any
    /// other: transfers), with production's retry limit, MAX-HISTORY 1, BARGE-WAIT to pass,
    /// one timer firing per client and fault.
    ///
    /// ```
    /// use avout_models::{Config, Named};
    /// assert_eq!(Config::default().mvcc(Named::Mvcc).unwrap().clients, 2);
    /// ```
    pub fn mvcc(&self, named: Named) -> Result<mvcc::MvccModel, ModelError> {
        self.validate()?;
        let workload = match named {
            Named::Mvcc => mvcc::Workload::Increments,
            _ => mvcc::Workload::Transfers,
        };
        let walks = matches!(self.search.strategy, check::Strategy::Walks { .. });
        Ok(mvcc::MvccModel {
            workload,
            faults: self.faults(),
            bug: self.bug,
            read_ahead: self.read_ahead && !walks,
            ..mvcc::MvccModel::new(self.clients)
        })
    }
}

impl Config {
    /// The executor hand-off model this configuration describes: `clients` executors and
    /// `cycles + 1` queued actions (so the default queues two, and order can be seen).
    ///
    /// ```
    /// let m = avout_models::Config::default().executor().unwrap();
    /// assert_eq!((m.clients, m.actions), (2, 2));
    /// ```
    pub fn executor(&self) -> Result<executor::ExecutorModel, ModelError> {
        self.validate()?;
        if self.bug.is_some() {
            return Err(ModelError::Config(
                "the agent model has no planted bug".to_owned(),
            ));
        }
        Ok(executor::ExecutorModel {
            actions: self.cycles + 1,
            faults: self.faults(),
            ..executor::ExecutorModel::new(self.clients)
        })
    }
}

/// Checks the model called `name` (see [`Named`]).
///
/// ```
/// let e = avout_models::check_named("paxos", &Default::default()).unwrap_err();
/// assert!(e.to_string().contains("paxos"));
/// ```
pub fn check_named(name: &str, config: &Config) -> Result<Report, ModelError> {
    check_named_with(name, config, &mut |_| {})
}

/// Checks the model called `name`, calling `progress` a few times a second (see
/// [`check::check_with`]).
///
/// ```
/// let mut ticks = 0;
/// let config = avout_models::Config { faults: 0, ..Default::default() };
/// let report = avout_models::check_named_with("atom", &config, &mut |_| ticks += 1).unwrap();
/// assert!(report.ok() && ticks > 0);
/// ```
pub fn check_named_with(
    name: &str,
    config: &Config,
    progress: &mut dyn FnMut(&check::Progress),
) -> Result<Report, ModelError> {
    let search = config.search;
    let named = name.parse::<Named>()?;
    Ok(match named {
        Named::Mutex => check_with(config.lock(lock::Flavor::Mutex)?, search, progress),
        Named::RwLock => check_with(config.lock(lock::Flavor::RwLock)?, search, progress),
        Named::Election => check_with(config.lock(lock::Flavor::Election)?, search, progress),
        Named::TryMutex => check_with(config.lock(lock::Flavor::TryMutex)?, search, progress),
        Named::Atom => check_with(config.atom()?, search, progress),
        Named::Stm => check_with(config.stm()?, search, progress),
        Named::Agent => check_with(config.executor()?, search, progress),
        Named::Mvcc | Named::MvccBank => check_with(
            config.mvcc(named)?,
            Search {
                max_depth: search.max_depth.or(mvcc::default_depth(search.strategy)),
                ..search
            },
            progress,
        ),
    })
}

/// Serves stateright's explorer (a web UI) for the model called `name` on `address`; blocks.
///
/// ```no_run
/// avout_models::serve_named("mutex", &Default::default(), "127.0.0.1:3000").unwrap();
/// ```
pub fn serve_named(name: &str, config: &Config, address: &str) -> Result<(), ModelError> {
    // The explorer's server panics if it cannot bind: find out first, with a clear error.
    drop(
        std::net::TcpListener::bind(address).map_err(|e| ModelError::Explorer {
            address: address.to_owned(),
            reason: e.to_string(),
        })?,
    );
    let named = name.parse::<Named>()?;
    match named {
        Named::Mutex => check::serve(config.lock(lock::Flavor::Mutex)?, address),
        Named::RwLock => check::serve(config.lock(lock::Flavor::RwLock)?, address),
        Named::Election => check::serve(config.lock(lock::Flavor::Election)?, address),
        Named::TryMutex => check::serve(config.lock(lock::Flavor::TryMutex)?, address),
        Named::Atom => check::serve(config.atom()?, address),
        Named::Stm => check::serve(config.stm()?, address),
        Named::Agent => check::serve(config.executor()?, address),
        Named::Mvcc | Named::MvccBank => check::serve(config.mvcc(named)?, address),
    }
    Ok(())
}
