//! What a run depends on besides its workload ([`SimConfig`]), and how a test sets it
//! ([`Builder`]): seed, sessions, servers, fault rates and planned faults, and where a failing
//! run writes its replay file.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{FailureFiles, REPLAY_ENV, SEED_ENV, Sim};
use crate::{Fault, FaultKind, FaultRates, ReplayFile, When};

/// Everything a run depends on besides its workload.
///
/// ```
/// let c = avout_sim_zk::SimConfig::default();
/// assert_eq!(c.clients, 1);
/// assert!(!c.needs_follower());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimConfig {
    /// The seed every random choice derives from.
    pub seed: u64,
    /// How many clients (sessions) the run opens before the workload starts.
    pub clients: usize,
    /// Their session timeout.
    pub session_timeout: Duration,
    /// Shortest one-way message latency.
    pub min_latency: Duration,
    /// Longest one-way message latency.
    pub max_latency: Duration,
    /// How far the lagging follower trails the leader; `None` for no follower (unless a
    /// stale-reads fault needs one, which then trails by 50 ms).
    pub follower_lag: Option<Duration>,
    /// Faults drawn per request.
    pub rates: FaultRates,
    /// Faults at given times or steps.
    pub scheduled: Vec<(When, Fault)>,
    /// Virtual time after which the run is stopped as stuck.
    pub time_limit: Duration,
    /// Keep the log entries (the hash is computed either way).
    pub keep_log: bool,
    /// Milliseconds since the Unix epoch at virtual time zero (for `ctime`/`mtime`).
    pub epoch_ms: i64,
    /// Whether [`avout::buggify`] points in client code may fire (decided from the seed).
    #[serde(default)]
    pub buggify: bool,
    /// How many servers the ensemble has: one (the leader, plus the lagging follower of
    /// stale reads) unless set, or at least three when an ensemble fault can fire
    /// ([`SimConfig::servers`]). One server keeps runs recorded before the ensemble existed
    /// replaying bit for bit.
    #[serde(default = "one_server")]
    pub servers: u8,
    /// What the simulated servers support beyond ZooKeeper 3.5 (persistent watches, TTL
    /// nodes); everything by default, as the test kit's 3.8 servers.
    #[serde(default)]
    pub features: crate::kernel::Features,
    /// Service times by class of request, fitted from a real server
    /// ([`LatencyModel`](crate::latency::LatencyModel)): each reply waits its request's drawn
    /// service time besides the network's latency. `None` (the default): a request is
    /// answered as it arrives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<crate::latency::ServiceTimes>,
}

fn one_server() -> u8 {
    1
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 0,
            clients: 1,
            session_timeout: Duration::from_secs(10),
            min_latency: Duration::from_micros(100),
            max_latency: Duration::from_millis(2),
            follower_lag: None,
            rates: FaultRates::default(),
            scheduled: Vec::new(),
            time_limit: Duration::from_secs(24 * 3600),
            keep_log: true,
            epoch_ms: 1_700_000_000_000,
            buggify: false,
            servers: 1,
            features: crate::kernel::Features::default(),
            service: None,
        }
    }
}

impl SimConfig {
    /// Whether the run needs a lagging follower.
    ///
    /// ```
    /// let mut c = avout_sim_zk::SimConfig::default();
    /// c.rates.stale_reads = 0.1;
    /// assert!(c.needs_follower());
    /// ```
    pub fn needs_follower(&self) -> bool {
        self.follower_lag.is_some()
            || self.rates.stale_reads > 0.0
            || self
                .scheduled
                .iter()
                .any(|(_, f)| f.kind() == FaultKind::StaleReads)
    }

    /// How many servers the run has: [`SimConfig::servers`], raised to three if an
    /// ensemble fault can fire.
    ///
    /// ```
    /// let mut c = avout_sim_zk::SimConfig::default();
    /// assert_eq!(c.servers(), 1);
    /// c.rates.session_moved = 0.01;
    /// assert_eq!(c.servers(), 3);
    /// ```
    pub fn servers(&self) -> u8 {
        let ensemble = self.rates.any_ensemble()
            || self
                .scheduled
                .iter()
                .any(|(_, f)| FaultKind::ENSEMBLE.contains(&f.kind()));
        if ensemble {
            self.servers.max(3)
        } else {
            self.servers.max(1)
        }
    }

    /// The follower's lag.
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::SimConfig::default().follower_lag().as_millis(), 50);
    /// ```
    pub fn follower_lag(&self) -> Duration {
        self.follower_lag.unwrap_or(Duration::from_millis(50))
    }
}

/// Builds a [`Sim`].
///
/// ```
/// use std::time::Duration;
/// use avout_sim_zk::{Fault, Sim, When};
/// let sim = Sim::builder()
///     .seed(42)
///     .clients(3)
///     .session_timeout(Duration::from_secs(5))
///     .fault(When::Step(10), Fault::ReplyLost { client: None })
///     .build();
/// assert_eq!(sim.config().clients, 3);
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Builder {
    config: SimConfig,
    record: bool,
    from_env: bool,
    failure_files: FailureFiles,
}

impl Builder {
    /// The seed.
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::Sim::builder().seed(3).build().config().seed, 3);
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }

    /// The seed from `AVOUT_SIM_SEED` (decimal or `0x` hex) if set, else `default`: tests
    /// use this so that a printed seed can be replayed without editing them.
    ///
    /// ```
    /// let b = avout_sim_zk::Sim::builder().seed_from_env(9);
    /// # let _ = b;
    /// ```
    ///
    /// It also makes [`build`](Self::build) honour `AVOUT_SIM_REPLAY`: if that names a replay
    /// file (a failing run prints its path), the simulation runs the file's configuration
    /// and choices instead of the builder's.
    pub fn seed_from_env(mut self, default: u64) -> Self {
        let seed = std::env::var(SEED_ENV)
            .ok()
            .and_then(|s| parse_seed(&s))
            .unwrap_or(default);
        self.from_env = true;
        self.seed(seed)
    }

    /// Where a failing run writes its replay file (`None`: it writes none). By default it
    /// goes to `AVOUT_SIM_REPLAY_DIR`, or `avout-sim-replays` in the temporary directory.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join("my-replays");
    /// let sim = avout_sim_zk::Sim::builder().failure_replay_dir(Some(dir)).build();
    /// # let _ = sim;
    /// ```
    pub fn failure_replay_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.failure_files = match dir {
            Some(dir) => FailureFiles::Dir(dir),
            None => FailureFiles::Off,
        };
        self
    }

    /// How many clients to open before the workload starts.
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::Sim::builder().clients(5).build().config().clients, 5);
    /// ```
    pub fn clients(mut self, n: usize) -> Self {
        self.config.clients = n;
        self
    }

    /// The session timeout.
    ///
    /// ```
    /// use std::time::Duration;
    /// let sim = avout_sim_zk::Sim::builder().session_timeout(Duration::from_secs(4)).build();
    /// assert_eq!(sim.config().session_timeout, Duration::from_secs(4));
    /// ```
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.config.session_timeout = timeout;
        self
    }

    /// One-way message latency bounds.
    ///
    /// ```
    /// use std::time::Duration;
    /// let ms = Duration::from_millis;
    /// let sim = avout_sim_zk::Sim::builder().latency(ms(1), ms(5)).build();
    /// assert_eq!(sim.config().max_latency, ms(5));
    /// ```
    pub fn latency(mut self, min: Duration, max: Duration) -> Self {
        self.config.min_latency = min;
        self.config.max_latency = max;
        self
    }

    /// A latency model fitted from a real server: a constant one-way latency, the
    /// followers' lag, and a service time per class of request.
    ///
    /// ```
    /// use std::time::Duration;
    /// use avout_sim_zk::latency::{LatencyModel, Samples};
    /// let us = |u| vec![Duration::from_micros(u)];
    /// let samples = Samples { read: us(150), write: us(400), sync: us(300), multi: us(450) };
    /// let model = LatencyModel::fit(&samples, Duration::from_millis(1)).unwrap();
    /// let sim = avout_sim_zk::Sim::builder().latency_model(&model).build();
    /// assert_eq!(sim.config().max_latency, Duration::from_micros(75));
    /// assert!(sim.config().service.is_some());
    /// ```
    pub fn latency_model(mut self, model: &crate::latency::LatencyModel) -> Self {
        self.config.min_latency = model.one_way;
        self.config.max_latency = model.one_way;
        self.config.follower_lag = Some(model.follower_lag);
        self.config.service = Some(model.service.clone());
        self
    }

    /// Adds a lagging follower trailing by `lag` (sessions move to it on a
    /// [`Fault::StaleReads`]).
    ///
    /// ```
    /// let sim = avout_sim_zk::Sim::builder().follower_lag(std::time::Duration::from_millis(30)).build();
    /// assert!(sim.config().needs_follower());
    /// ```
    pub fn follower_lag(mut self, lag: Duration) -> Self {
        self.config.follower_lag = Some(lag);
        self
    }

    /// How many servers the ensemble has (see [`SimConfig::servers`]).
    ///
    /// ```
    /// let sim = avout_sim_zk::Sim::builder().servers(5).build();
    /// assert_eq!(sim.config().servers(), 5);
    /// ```
    pub fn servers(mut self, n: u8) -> Self {
        self.config.servers = n;
        self
    }

    /// Per-request fault rates.
    ///
    /// ```
    /// let sim = avout_sim_zk::Sim::builder().rates(avout_sim_zk::FaultRates::chaos()).build();
    /// assert!(sim.config().rates.any());
    /// ```
    pub fn rates(mut self, rates: FaultRates) -> Self {
        self.config.rates = rates;
        self
    }

    /// Schedules a fault.
    ///
    /// ```
    /// use avout_sim_zk::{Fault, When};
    /// let sim = avout_sim_zk::Sim::builder().fault(When::Step(3), Fault::RequestLost { client: None }).build();
    /// assert_eq!(sim.config().scheduled.len(), 1);
    /// ```
    pub fn fault(mut self, when: When, fault: Fault) -> Self {
        self.config.scheduled.push((when, fault));
        self
    }

    /// Virtual time after which the run is declared stuck.
    ///
    /// ```
    /// let sim = avout_sim_zk::Sim::builder().time_limit(std::time::Duration::from_secs(60)).build();
    /// assert_eq!(sim.config().time_limit.as_secs(), 60);
    /// ```
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.config.time_limit = limit;
        self
    }

    /// Lets [`avout::buggify`] points in the code the run executes fire: each point is live
    /// in a run with probability 1/2 and then fires with probability 1/4 each time it is
    /// reached, all drawn from the seed's own buggify stream, so a seed fires the same points
    /// at the same moments every time. [`RunSummary::buggified`] counts the firings; the log
    /// names each point.
    ///
    /// [`RunSummary::buggified`]: crate::RunSummary::buggified
    ///
    /// ```
    /// let sim = avout_sim_zk::Sim::builder().buggify(true).build();
    /// assert!(sim.config().buggify);
    /// ```
    pub fn buggify(mut self, on: bool) -> Self {
        self.config.buggify = on;
        self
    }

    /// What the simulated servers support: switch persistent watches off to stand for a
    /// server before 3.6 (`addWatch` answers `Unimplemented`), TTL nodes off for one without
    /// `extendedTypesEnabled`.
    ///
    /// ```
    /// use avout::{AddWatchMode, Coordination, Error};
    /// use avout_sim_zk::kernel::Features;
    /// let old = Features { persistent_watches: false, ..Features::default() };
    /// let (refused, _) = avout_sim_zk::Sim::builder().features(old).build().run(|ctx| async move {
    ///     ctx.clients[0].add_watch("/", AddWatchMode::Persistent).await.unwrap_err()
    /// });
    /// assert!(matches!(refused, Error::Unimplemented(_)));
    /// ```
    pub fn features(mut self, features: crate::kernel::Features) -> Self {
        self.config.features = features;
        self
    }

    /// Whether to keep the log's entries (the hash is always computed).
    ///
    /// ```
    /// let (_, s) = avout_sim_zk::Sim::builder().keep_log(false).build().run(|_| async {});
    /// assert!(s.log.is_empty() && s.log_len > 0);
    /// ```
    pub fn keep_log(mut self, keep: bool) -> Self {
        self.config.keep_log = keep;
        self
    }

    /// The whole configuration at once.
    ///
    /// ```
    /// let c = avout_sim_zk::SimConfig { clients: 2, ..Default::default() };
    /// assert_eq!(avout_sim_zk::Sim::builder().config(c).build().config().clients, 2);
    /// ```
    pub fn config(mut self, config: SimConfig) -> Self {
        self.config = config;
        self
    }

    /// Records the run's choices, so that its summary carries a [`ReplayFile`].
    ///
    /// ```
    /// let (_, s) = avout_sim_zk::Sim::builder().record_choices(true).build().run(|_| async {});
    /// assert!(s.replay.is_some());
    /// ```
    pub fn record_choices(mut self, record: bool) -> Self {
        self.record = record;
        self
    }

    /// The simulation.
    ///
    /// ```
    /// let sim = avout_sim_zk::Sim::builder().build();
    /// assert_eq!(sim.config(), &avout_sim_zk::SimConfig::default());
    /// ```
    ///
    /// # Panics
    ///
    /// If the builder came from [`seed_from_env`](Self::seed_from_env) and `AVOUT_SIM_REPLAY`
    /// names a file that cannot be read as a replay file.
    pub fn build(self) -> Sim {
        let replay = std::env::var_os(REPLAY_ENV).filter(|_| self.from_env);
        if let Some(path) = replay {
            let file = ReplayFile::load(&path)
                .unwrap_or_else(|e| panic!("{REPLAY_ENV}={}: {e}", path.to_string_lossy()));
            return Sim {
                failure_files: self.failure_files,
                ..Sim::from_replay(&file)
            };
        }
        Sim {
            config: self.config,
            record: self.record,
            tapes: None,
            failure_files: self.failure_files,
        }
    }
}

fn parse_seed(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_parse_in_decimal_and_hex() {
        assert_eq!(parse_seed("42"), Some(42));
        assert_eq!(parse_seed("0x2a"), Some(42));
        assert_eq!(parse_seed("x"), None);
    }
}
