//! The faults of a batch of runs: one [`FaultPlan`] for every seed, or each seed's own mix
//! drawn from a pool of kinds ([`Swarm`], swarm testing).
//!
//! Under swarm testing each seed switches every kind of the pool on or off and draws the
//! rates of those on from wide ranges ([`FaultRates::swarm`], from the seed's own stream, so
//! the workload's and the network's choices do not move). The mix a seed drew is a plain
//! [`FaultPlan`] of rates: a case file records it, so the run replays bit for bit and shrinks
//! like any other; the case also keeps the pool it was drawn from ([`Case::swarm`]).
//!
//! [`Case::swarm`]: super::case::Case::swarm
//!
//! ```
//! use avout_scenarios::scenario::{Faults, Swarm};
//! use avout_sim_zk::FaultKind;
//! let faults = Faults::Swarm(Swarm::default());
//! assert_eq!(faults.plan(3), faults.plan(3));
//! assert_ne!(faults.plan(3), faults.plan(4));
//! assert!(!faults.plan(3).rates.any_ensemble());
//! assert_eq!(Swarm::default().kinds, FaultKind::DEFAULT.to_vec());
//! ```

use std::fmt;

use avout_sim_zk::{FaultKind, FaultRates};
use serde::{Deserialize, Serialize};

use super::FaultPlan;

/// Swarm testing over a pool of fault kinds: each seed draws which of them are on and at
/// what rates (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Swarm {
    /// The kinds a seed may switch on.
    pub kinds: Vec<FaultKind>,
}

impl Default for Swarm {
    /// The seven one-server kinds, as the fixed mix `all` has them.
    fn default() -> Self {
        Swarm::of(&FaultKind::DEFAULT)
    }
}

impl Swarm {
    /// Swarm testing over `kinds` (in [`FaultKind::ALL`]'s order, each once).
    ///
    /// ```
    /// use avout_scenarios::scenario::Swarm;
    /// use avout_sim_zk::FaultKind;
    /// let s = Swarm::of(&[FaultKind::Pause, FaultKind::ReplyLost, FaultKind::Pause]);
    /// assert_eq!(s.kinds, vec![FaultKind::ReplyLost, FaultKind::Pause]);
    /// ```
    pub fn of(kinds: &[FaultKind]) -> Self {
        Swarm {
            kinds: FaultKind::ALL
                .into_iter()
                .filter(|k| kinds.contains(k))
                .collect(),
        }
    }

    /// The plan of the run of `seed`: the mix it draws, as rates.
    pub fn plan(&self, seed: u64) -> FaultPlan {
        FaultPlan {
            rates: FaultRates::swarm(seed, &self.kinds),
            scheduled: Vec::new(),
        }
    }
}

impl fmt::Display for Swarm {
    /// `swarm of the 7 one-server kinds`, `swarm of every kind`, or the kinds named.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kinds == FaultKind::ALL {
            f.write_str("swarm of every kind")
        } else if self.kinds == FaultKind::DEFAULT {
            f.write_str("swarm of the 7 one-server kinds")
        } else {
            let names: Vec<&str> = self.kinds.iter().map(|k| k.name()).collect();
            write!(f, "swarm of {}", names.join(", "))
        }
    }
}

/// The faults of the runs of many seeds: one plan for all, or a swarm mix per seed.
#[derive(Clone, Debug, PartialEq)]
pub enum Faults {
    /// The same plan for every seed.
    Plan(FaultPlan),
    /// Each seed's own mix.
    Swarm(Swarm),
}

impl Default for Faults {
    fn default() -> Self {
        Faults::Plan(FaultPlan::none())
    }
}

impl Faults {
    /// The plan of the run of `seed`.
    pub fn plan(&self, seed: u64) -> FaultPlan {
        match self {
            Faults::Plan(plan) => plan.clone(),
            Faults::Swarm(swarm) => swarm.plan(seed),
        }
    }

    /// The swarm, if the runs draw their mixes.
    pub fn swarm(&self) -> Option<&Swarm> {
        match self {
            Faults::Plan(_) => None,
            Faults::Swarm(swarm) => Some(swarm),
        }
    }
}

/// A plan's rates, per request, as `reply-lost 1.340%, session-expiry 0.210%` (`none`
/// without any).
///
/// ```
/// use avout_scenarios::scenario::{FaultPlan, swarm::rates_line};
/// assert_eq!(rates_line(&FaultPlan::none()), "none");
/// assert_eq!(rates_line(&FaultPlan::kinds(&[avout_sim_zk::FaultKind::Outage], None)), "outage 0.030%");
/// ```
pub fn rates_line(plan: &FaultPlan) -> String {
    let on: Vec<String> = FaultKind::ALL
        .into_iter()
        .filter(|&k| plan.rates.rate(k) > 0.0)
        .map(|k| format!("{} {:.3}%", k.name(), plan.rates.rate(k) * 100.0))
        .collect();
    if on.is_empty() {
        "none".to_owned()
    } else {
        on.join(", ")
    }
}
