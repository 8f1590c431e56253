//! The STM protocol a transactional scenario runs, as the command line and case files spell
//! it.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

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

impl Protocol {
    /// Its name, as the command line spells it.
    ///
    /// ```
    /// use avout_scenarios::scenario::Protocol;
    /// assert_eq!(Protocol::Optimistic.name(), "optimistic");
    /// assert_eq!(Protocol::Mvcc.other(), Protocol::Optimistic);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Mvcc => "mvcc",
            Protocol::Optimistic => "optimistic",
        }
    }

    /// The other protocol.
    pub fn other(self) -> Protocol {
        match self {
            Protocol::Mvcc => Protocol::Optimistic,
            Protocol::Optimistic => Protocol::Mvcc,
        }
    }
}

impl FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Protocol::Mvcc, Protocol::Optimistic]
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown protocol {s:?}: expected mvcc or optimistic"))
    }
}
