//! The names of the registered scenarios and of the STM protocols, as the command line and
//! case files spell them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A scenario's name, as the command line and case files spell it: one of the built-ins
/// (the associated constants) or a scenario registered by the user
/// ([`registry::register`](super::registry::register)). It parses, and deserializes, only to
/// a registered name; what the name stands for is the registry's [`Scenario`](super::Scenario).
///
/// ```
/// use avout_scenarios::scenario::ScenarioName;
/// assert_eq!("lin-kv".parse::<ScenarioName>().unwrap(), ScenarioName::LinKv);
/// assert_eq!(ScenarioName::LinKv.to_string(), "lin-kv");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScenarioName(&'static str);

/// The built-in scenarios' names, spelt as the enum that preceded the registry spelt them.
#[allow(non_upper_case_globals)]
impl ScenarioName {
    /// Atom increments and reads.
    pub const Counter: ScenarioName = ScenarioName("counter");
    /// Maelstrom's lin-kv.
    pub const LinKv: ScenarioName = ScenarioName("lin-kv");
    /// The exclusive lock with fencing tokens.
    pub const Mutex: ScenarioName = ScenarioName("mutex");
    /// The read-write lock.
    pub const Rwlock: ScenarioName = ScenarioName("rwlock");
    /// Leader election with terms.
    pub const Election: ScenarioName = ScenarioName("election");
    /// The FIFO queue with exactly-once delivery.
    pub const Queue: ScenarioName = ScenarioName("queue");
    /// The barrier.
    pub const Barrier: ScenarioName = ScenarioName("barrier");
    /// Bank transfers over STM refs.
    pub const Bank: ScenarioName = ScenarioName("bank");
    /// Maelstrom's txn-list-append over STM refs.
    pub const ListAppend: ScenarioName = ScenarioName("list-append");
    /// The medical-records example of lock tables.
    pub const LockTable: ScenarioName = ScenarioName("lock-table");
    /// Two-phase commit: atomic commitment of transactions over several sites.
    pub const TwoPhaseCommit: ScenarioName = ScenarioName("two-phase-commit");
    /// A long mixed workload (atom, STM, lock, leadership) across expiries of each client's
    /// own session.
    pub const Sessions: ScenarioName = ScenarioName("sessions");
    /// Agents: plain and transactional sends, failing actions, restarts.
    pub const Agents: ScenarioName = ScenarioName("agents");
    /// The cache recipe following a subtree that writers change.
    pub const Cache: ScenarioName = ScenarioName("cache");
}

impl ScenarioName {
    /// Every built-in scenario, in a fixed order: those [`SOAKED`](Self::SOAKED) by default
    /// first, then those that run by name only.
    pub const ALL: &'static [ScenarioName] = &[
        ScenarioName::Counter,
        ScenarioName::LinKv,
        ScenarioName::Mutex,
        ScenarioName::Rwlock,
        ScenarioName::Election,
        ScenarioName::Queue,
        ScenarioName::Barrier,
        ScenarioName::Bank,
        ScenarioName::ListAppend,
        ScenarioName::LockTable,
        ScenarioName::TwoPhaseCommit,
        ScenarioName::Sessions,
        ScenarioName::Agents,
        ScenarioName::Cache,
    ];

    /// The scenarios `avout soak` and the test suite run by default: every one but those
    /// with a known failure not fixed yet, which run by name until it is (their cases are
    /// kept in `scenarios/known-failures/`). None has one today.
    ///
    /// ```
    /// use avout_scenarios::scenario::ScenarioName;
    /// assert!(ScenarioName::SOAKED.contains(&ScenarioName::Agents));
    /// assert!(ScenarioName::SOAKED.len() <= ScenarioName::ALL.len());
    /// ```
    pub const SOAKED: &'static [ScenarioName] = ScenarioName::ALL
        .split_at(ScenarioName::ALL.len() - Self::BY_NAME_ONLY)
        .0;

    /// How many scenarios, last in [`ALL`](Self::ALL), run by name only.
    const BY_NAME_ONLY: usize = 0;

    /// The name of a scenario, unchecked: for the registry, which checks names are unique.
    pub(crate) const fn new_unchecked(name: &'static str) -> Self {
        ScenarioName(name)
    }

    /// The name on the command line.
    ///
    /// ```
    /// assert_eq!(avout_scenarios::scenario::ScenarioName::Mutex.name(), "mutex");
    /// ```
    pub fn name(self) -> &'static str {
        self.0
    }

    /// The registered scenario of this name.
    ///
    /// # Panics
    ///
    /// If nothing is registered under it: a name is made only by parsing a registered name or
    /// by registering a scenario, and nothing is ever unregistered.
    pub fn scenario(self) -> std::sync::Arc<dyn super::Scenario> {
        super::registry::lookup(self.0)
            .unwrap_or_else(|| panic!("scenario {:?} is not registered", self.0))
    }

    /// One line about the workload and its checker.
    ///
    /// ```
    /// assert!(avout_scenarios::scenario::ScenarioName::Counter.about().contains("increment"));
    /// ```
    pub fn about(self) -> &'static str {
        self.scenario().about()
    }

    /// The default number of clients and of operations per client.
    ///
    /// ```
    /// let (clients, ops) = avout_scenarios::scenario::ScenarioName::Counter.defaults();
    /// assert!(clients > 1 && ops > 0);
    /// ```
    pub fn defaults(self) -> (usize, usize) {
        self.scenario().defaults()
    }
}

impl fmt::Debug for ScenarioName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Display for ScenarioName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for ScenarioName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for ScenarioName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A name that is not a registered scenario.
///
/// ```
/// let e = "nope".parse::<avout_scenarios::scenario::ScenarioName>().unwrap_err();
/// assert!(e.to_string().contains("counter"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown scenario {0:?}; known: {known}", known = known_names())]
pub struct UnknownScenario(pub String);

fn known_names() -> String {
    super::registry::names().join(", ")
}

impl FromStr for ScenarioName {
    type Err = UnknownScenario;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        super::registry::lookup(s)
            .map(|found| ScenarioName(found.name()))
            .ok_or_else(|| UnknownScenario(s.to_owned()))
    }
}

/// The STM protocol, for the transactional scenarios.
///
/// ```
/// assert_eq!("mvcc".parse::<avout_scenarios::scenario::Protocol>().unwrap(),
///            avout_scenarios::scenario::Protocol::Mvcc);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// Avout's recipe: history nodes, read points, write locks, barging.
    #[default]
    Mvcc,
    /// Optimistic validation of node versions in one `multi`.
    Optimistic,
}

impl FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "mvcc" => Ok(Protocol::Mvcc),
            "optimistic" => Ok(Protocol::Optimistic),
            _ => Err(format!(
                "unknown protocol {s:?}: expected mvcc or optimistic"
            )),
        }
    }
}
