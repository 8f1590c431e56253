//! A soak's fault configurations: which kinds its runs draw, under a short name.

use std::str::FromStr;

use avout_sim_zk::FaultKind;
use serde::{Deserialize, Serialize};

use crate::scenario::{FaultPlan, Faults, Swarm};

/// A set of fault kinds, drawn at the simulator's chaos rates, under a short name.
///
/// ```
/// use avout_scenarios::scenario::soak::FaultConfig;
/// assert_eq!(FaultConfig::all().name, "all");
/// assert_eq!(FaultConfig::per_kind().len(), 13);
/// assert_eq!(FaultConfig::pairs().len(), 78);
/// assert_eq!(FaultConfig::every().kinds.len(), 13);
/// assert_eq!(FaultConfig::pairs()[0].name, "request-lost+reply-lost");
/// ```
///
/// Its name says it all, so it is written (in a soak's JSON) and read back by its name:
///
/// ```
/// use avout_scenarios::scenario::soak::FaultConfig;
/// for config in FaultConfig::pairs().into_iter().chain([FaultConfig::every().swarm()]) {
///     assert_eq!(config.name.parse::<FaultConfig>().unwrap(), config);
/// }
/// assert!("outage+no-such-kind".parse::<FaultConfig>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct FaultConfig {
    /// `all`, `none`, a kind's name, or kinds joined by `+`.
    pub name: String,
    /// The kinds.
    pub kinds: Vec<FaultKind>,
    /// Whether each seed draws its own mix of the kinds (swarm testing; see [`Swarm`]).
    pub swarm: bool,
}

impl FaultConfig {
    /// The given kinds.
    pub fn of(kinds: &[FaultKind]) -> Self {
        let name = if kinds.is_empty() {
            "none".to_owned()
        } else if FaultKind::ALL.iter().all(|k| kinds.contains(k)) {
            "every".to_owned()
        } else if kinds.len() == FaultKind::DEFAULT.len()
            && FaultKind::DEFAULT.iter().all(|k| kinds.contains(k))
        {
            "all".to_owned()
        } else {
            kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join("+")
        };
        FaultConfig {
            name,
            kinds: kinds.to_vec(),
            swarm: false,
        }
    }

    /// The same kinds under swarm testing: each seed draws which are on and their rates.
    /// Its name is the fixed configuration's with `swarm:` before it.
    ///
    /// ```
    /// use avout_scenarios::scenario::soak::FaultConfig;
    /// let s = FaultConfig::all().swarm();
    /// assert_eq!(s.name, "swarm:all");
    /// assert_ne!(s.faults().plan(1), s.faults().plan(2));
    /// ```
    pub fn swarm(self) -> Self {
        if self.swarm {
            return self;
        }
        FaultConfig {
            name: format!("swarm:{}", self.name),
            swarm: true,
            ..self
        }
    }

    /// Every kind together.
    pub fn all() -> Self {
        FaultConfig::of(&FaultKind::DEFAULT)
    }

    /// Every kind together, the ensemble kinds too.
    pub fn every() -> Self {
        FaultConfig::of(&FaultKind::ALL)
    }

    /// No faults.
    pub fn none() -> Self {
        FaultConfig::of(&[])
    }

    /// Each kind alone.
    pub fn per_kind() -> Vec<Self> {
        FaultKind::ALL
            .iter()
            .map(|k| FaultConfig::of(&[*k]))
            .collect()
    }

    /// Every pair of kinds.
    pub fn pairs() -> Vec<Self> {
        let all = FaultKind::ALL;
        (0..all.len())
            .flat_map(|i| (i + 1..all.len()).map(move |j| FaultConfig::of(&[all[i], all[j]])))
            .collect()
    }

    /// The fault plan of the fixed configuration: these kinds at the chaos mix's rates.
    pub fn plan(&self) -> FaultPlan {
        FaultPlan::kinds(&self.kinds, None)
    }

    /// The faults of its runs: the fixed plan, or a swarm of the kinds.
    pub fn faults(&self) -> Faults {
        if self.swarm {
            Faults::Swarm(Swarm::of(&self.kinds))
        } else {
            Faults::Plan(self.plan())
        }
    }
}

/// A fault configuration's name that names none.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown fault configuration {name:?}: expected all, every, none, or fault kinds joined by \
     `+` ({known}), with `swarm:` before any of them for swarm testing"
)]
pub struct FaultConfigError {
    /// The name given.
    pub name: String,
    /// The kinds' names, joined by commas.
    pub known: String,
}

impl FromStr for FaultConfig {
    type Err = FaultConfigError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if let Some(fixed) = name.strip_prefix("swarm:") {
            return fixed.parse::<FaultConfig>().map(FaultConfig::swarm);
        }
        let config = match name {
            "all" => FaultConfig::all(),
            "every" => FaultConfig::every(),
            "none" => FaultConfig::none(),
            kinds => FaultConfig::of(
                &kinds
                    .split('+')
                    .map(|k| {
                        FaultKind::from_name(k).ok_or_else(|| FaultConfigError {
                            name: name.to_owned(),
                            known: FaultKind::ALL.map(FaultKind::name).join(", "),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        Ok(config)
    }
}

impl From<FaultConfig> for String {
    fn from(config: FaultConfig) -> String {
        config.name
    }
}

impl TryFrom<String> for FaultConfig {
    type Error = FaultConfigError;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        name.parse()
    }
}
