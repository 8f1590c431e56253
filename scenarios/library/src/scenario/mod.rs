//! The machinery of scenarios: the [`Scenario`] trait and the [`Registry`] of them, a
//! [`Workload`] and its [`FaultPlan`], a [`Run`] on the embedded simulator or on real
//! ZooKeeper and its [`Report`]; exploration, shrinking, soaking and case files.
//!
//! A scenario is a workload written once against an [`env::Env`], testkit's
//! [`Backend`](avout_testkit::backend::Backend) with the run's settings (so the simulator and
//! real ZooKeeper run the same code), the checkers that judge the history it records (Jepsen's
//! JSON lines, [`avout_check::history`]), and defaults. The built-in ones are in
//! [`crate::builtin`]. [`Registry::run`] builds a run of a workload:
//! [`Run::sim`] makes it on the simulator from a seed and a [`FaultPlan`], [`Run::zk`] on a
//! real server. Both return a [`Report`]: the history, counts, faults and the verdict.

//! Every scenario also fails a run in which an operation did not finish within
//! [`OP_DEADLINE`] (a deadlock): liveness, under faults that all end.

pub mod case;
mod checks;
pub mod codes;
pub mod coverage;
pub mod env;
mod error;
pub mod explore;
mod protocol;
pub mod registry;
mod run;
pub mod shrink;
pub mod soak;
pub mod store;
pub mod swarm;
pub(crate) mod worker;

use std::time::Duration;

use avout_sim_zk::{Fault, FaultKind, FaultRates, When};
use serde::{Deserialize, Serialize};

pub use checks::Checks;
pub use error::{BoxError, WorkloadError};
pub use protocol::Protocol;
pub use registry::{Described, KnownFailure, Registry, Scenario, UnknownScenario, WorkloadFn};
pub use run::{
    Counts, ERROR_PREFIX, LONE_CONFLICT, PANICKED, Report, Run, RunError, WORKLOAD_ERROR_HOOK,
};
pub use swarm::{Faults, Swarm};

/// How long one operation may take before the run is failed as stuck (virtual time on the
/// simulator). Every fault the simulator injects ends well within it.
pub const OP_DEADLINE: Duration = Duration::from_secs(60);

/// How long a Maelstrom workload's client waits after an operation it refused with 11
/// (temporarily unavailable) because its connection was down, before its next: without it a
/// client would refuse its whole budget in an instant of a disconnection.
pub const REFUSED_PAUSE: Duration = Duration::from_millis(50);

/// The session timeout of simulated runs.
pub const SIM_SESSION_TIMEOUT: Duration = Duration::from_secs(4);

/// The largest [`Workload::latency_ms`]: an eighth of [`SIM_SESSION_TIMEOUT`], so a
/// session's pings (every third of it) still arrive in time.
pub const MAX_LATENCY_MS: u64 = 500;

/// The one-way latency of a soak's distant rows (`bank+60ms`): a cross-region ensemble, its
/// round trips (120 ms) longer than the Mvcc STM's lock wait (100 ms).
pub const WAN_LATENCY_MS: u64 = 60;

/// What a run does, besides its faults: the scenario, its size and the seed its clients
/// draw their choices from.
///
/// ```
/// use avout_scenarios::builtin::counter;
/// use avout_scenarios::scenario::{Scenario, Workload};
/// let w = Workload::new(&counter::SCENARIO, 7);
/// assert_eq!((w.clients, w.ops), counter::SCENARIO.defaults());
/// assert_eq!(w.scenario, "counter");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    /// The scenario, by name (as a [`Registry`] knows it).
    pub scenario: String,
    /// Concurrent clients (each its own managed client, one session at a time).
    pub clients: usize,
    /// Operations per client.
    pub ops: usize,
    /// The STM protocol (transactional scenarios only).
    #[serde(default)]
    pub protocol: Protocol,
    /// Where the refs' values live (transactional scenarios only; left out of files when
    /// they are in the nodes).
    #[serde(default, skip_serializing_if = "store::RefStoreKind::is_default")]
    pub ref_store: store::RefStoreKind,
    /// The smallest encoding of a bank account's value, in bytes (padded JSON; 0: plain).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub value_size: usize,
    /// The seed of the clients' choices (and, on the simulator, of everything else).
    pub seed: u64,
    /// The STM's retry limit (transactional scenarios only; `None`: the protocol's default).
    /// A transaction that reaches it fails with Maelstrom's 30 (txn-conflict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_limit: Option<u32>,
    /// A fixed one-way network latency on the simulator, in milliseconds: a distant
    /// ensemble (another region), whose round trips outlast the protocols' short waits.
    /// `None`: the simulator's own (0.1 to 2 ms). A run on a real server ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
}

impl Workload {
    /// `scenario` at its default size, with `seed`.
    pub fn new(scenario: &dyn Scenario, seed: u64) -> Self {
        let (clients, ops) = scenario.defaults();
        Workload {
            scenario: scenario.name().to_owned(),
            clients,
            ops,
            protocol: Protocol::default(),
            ref_store: store::RefStoreKind::default(),
            value_size: 0,
            seed,
            retry_limit: None,
            latency_ms: None,
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The faults of a simulated run: rates drawn per request, and scheduled faults.
///
/// ```
/// use avout_scenarios::scenario::FaultPlan;
/// use avout_sim_zk::FaultKind;
/// let plan = FaultPlan::kinds(&[FaultKind::ReplyLost], None);
/// assert!(plan.rates.reply_lost > 0.0 && plan.rates.request_lost == 0.0);
/// assert!(!FaultPlan::none().rates.any());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultPlan {
    /// Per-request rates.
    pub rates: FaultRates,
    /// Faults at given steps or times.
    pub scheduled: Vec<(When, Fault)>,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> Self {
        FaultPlan::default()
    }

    /// The default kinds ([`FaultKind::DEFAULT`]), at the simulator's chaos mix.
    pub fn all() -> Self {
        FaultPlan::kinds(&FaultKind::DEFAULT, None)
    }

    /// The given kinds, at the chaos mix's rates, or scaled so that the rates add up to
    /// `total` (the chance that a request draws some fault).
    pub fn kinds(kinds: &[FaultKind], total: Option<f64>) -> Self {
        let chaos = FaultRates::chaos_all();
        let mut rates = FaultRates::default();
        for &kind in kinds {
            *rates.rate_mut(kind) = chaos.rate(kind);
        }
        if let Some(total) = total {
            let sum: f64 = FaultKind::ALL.iter().map(|&k| rates.rate(k)).sum();
            if sum > 0.0 {
                let k = total / sum;
                for kind in FaultKind::ALL {
                    *rates.rate_mut(kind) *= k;
                }
            }
        }
        FaultPlan {
            rates,
            scheduled: Vec::new(),
        }
    }

    /// How many faults the plan can fire (scheduled ones; rates count as unbounded).
    pub fn is_empty(&self) -> bool {
        !self.rates.any() && self.scheduled.is_empty()
    }
}
