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
