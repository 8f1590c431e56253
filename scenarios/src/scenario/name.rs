//! The names of the registered scenarios and of the STM protocols, as the command line and
//! case files spell them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The registered scenarios.
///
/// ```
/// use avout_scenarios::scenario::ScenarioName;
/// assert_eq!("lin-kv".parse::<ScenarioName>().unwrap(), ScenarioName::LinKv);
/// assert_eq!(ScenarioName::LinKv.to_string(), "lin-kv");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScenarioName {
    /// Atom increments and reads.
    Counter,
    /// Maelstrom's lin-kv.
    LinKv,
    /// The exclusive lock with fencing tokens.
    Mutex,
    /// The read-write lock.
    Rwlock,
    /// Leader election with terms.
    Election,
    /// The FIFO queue with exactly-once delivery.
    Queue,
    /// The barrier.
    Barrier,
    /// Bank transfers over STM refs.
    Bank,
    /// Maelstrom's txn-list-append over STM refs.
    ListAppend,
    /// The medical-records example of lock tables.
    LockTable,
    /// Two-phase commit: atomic commitment of transactions over several sites.
    TwoPhaseCommit,
    /// A long mixed workload (atom, STM, lock, leadership) across expiries of each client's
    /// own session.
    Sessions,
    /// Agents: plain and transactional sends, failing actions, restarts.
    Agents,
}

impl ScenarioName {
    /// Every scenario, in a fixed order: those [`SOAKED`](Self::SOAKED) by default first, then
    /// those that run by name only.
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

    /// The name on the command line.
    ///
    /// ```
    /// assert_eq!(avout_scenarios::scenario::ScenarioName::Mutex.name(), "mutex");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ScenarioName::Counter => "counter",
            ScenarioName::LinKv => "lin-kv",
            ScenarioName::Mutex => "mutex",
            ScenarioName::Rwlock => "rwlock",
            ScenarioName::Election => "election",
            ScenarioName::Queue => "queue",
            ScenarioName::Barrier => "barrier",
            ScenarioName::Bank => "bank",
            ScenarioName::ListAppend => "list-append",
            ScenarioName::LockTable => "lock-table",
            ScenarioName::TwoPhaseCommit => "two-phase-commit",
            ScenarioName::Sessions => "sessions",
            ScenarioName::Agents => "agents",
        }
    }

    /// One line about the workload and its checker.
    ///
    /// ```
    /// assert!(avout_scenarios::scenario::ScenarioName::Counter.about().contains("increment"));
    /// ```
    pub fn about(self) -> &'static str {
        match self {
            ScenarioName::Counter => {
                "atom increments and reads; checker: distinct increments, reads within bounds"
            }
            ScenarioName::LinKv => {
                "Maelstrom lin-kv read/write/cas on 3 keys; checker: linearizability per key"
            }
            ScenarioName::Mutex => {
                "lock, fenced increment, unlock; checker: no lost increment, fencing rule"
            }
            ScenarioName::Rwlock => {
                "readers read twice, writers increment; checker: no writer inside a read hold"
            }
            ScenarioName::Election => {
                "campaign, fenced work, resign; checker: one leader per term, no two live leaders"
            }
            ScenarioName::Queue => {
                "put unique items, take, drain; checker: nothing lost, nothing delivered twice"
            }
            ScenarioName::Barrier => {
                "one client sets and removes, others wait; checker: nobody passes a set barrier"
            }
            ScenarioName::Bank => {
                "STM transfers and whole-bank reads; checker: totals kept, no negative balance"
            }
            ScenarioName::ListAppend => {
                "STM transactions of reads and appends; checker: Elle (G0…G2, internal)"
            }
            ScenarioName::LockTable => {
                "medical records: entry, review, month-end; checker: one clerk inside at a time"
            }
            ScenarioName::TwoPhaseCommit => {
                "transactions over every client as a site; checker: atomic commitment"
            }
            ScenarioName::Sessions => {
                "atom, transfers, fenced lock, leader latch across own expiries; checker: \
                 each part's, and progress after every expiry"
            }
            ScenarioName::Agents => {
                "sends, sends from transactions, failing actions, restarts, an executor per \
                 client; checker: exactly once, order per sender, stop until restarted"
            }
        }
    }

    /// The default number of clients and of operations per client.
    ///
    /// ```
    /// let (clients, ops) = avout_scenarios::scenario::ScenarioName::Counter.defaults();
    /// assert!(clients > 1 && ops > 0);
    /// ```
    pub fn defaults(self) -> (usize, usize) {
        match self {
            ScenarioName::Counter => (4, 50),
            ScenarioName::LinKv => (4, 50),
            ScenarioName::Mutex => (4, 20),
            ScenarioName::Rwlock => (4, 20),
            ScenarioName::Election => (4, 10),
            ScenarioName::Queue => (4, 40),
            ScenarioName::Barrier => (4, 10),
            ScenarioName::Bank => (4, 25),
            ScenarioName::ListAppend => (4, 25),
            ScenarioName::LockTable => (4, 10),
            ScenarioName::TwoPhaseCommit => (4, 15),
            ScenarioName::Sessions => (4, 40),
            ScenarioName::Agents => (3, 20),
        }
    }
}

impl fmt::Display for ScenarioName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
    ScenarioName::ALL
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for ScenarioName {
    type Err = UnknownScenario;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ScenarioName::ALL
            .iter()
            .copied()
            .find(|n| n.name() == s)
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
