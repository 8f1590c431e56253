//! Where a sweep's points run: simulated deployments (one server as the first reports had it;
//! three servers with a latency model fitted from real ones, with and without faults) and the
//! real servers they are calibrated against.
//!
//! The fitted models are files (`avout report latency` writes them to `reports/latency/`),
//! so a simulated figure depends on the command and those files only: the same command
//! writes the same numbers, wherever it runs.

use std::path::Path;
use std::time::Duration;

use avout_sim_zk::latency::LatencyModel;
use avout_sim_zk::{FaultRates, Sim};

use super::ReportError;

/// The real servers a simulated deployment is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Real {
    /// One standalone server (`--zk`, or the one `--zk-ensemble` starts beside the ensemble).
    Standalone,
    /// The `--zk-ensemble N` ensemble.
    Ensemble,
}

/// One simulated deployment of a sweep.
#[derive(Clone, Debug)]
pub(crate) struct Deployment {
    /// Suffix of its plots' files (empty for one server, whose plots keep their names).
    pub(crate) slug: &'static str,
    /// Its name in headings and tables.
    pub(crate) name: &'static str,
    /// What it is, for the report.
    pub(crate) what: String,
    servers: u8,
    latency: Option<LatencyModel>,
    rates: FaultRates,
    /// Whether every point runs on it, or only the points compared with real servers.
    pub(crate) every_point: bool,
    /// The real servers its calibration points are compared with.
    pub(crate) real: Option<Real>,
}

/// The fault mix of the deployment with faults: the ensemble's everyday faults at a rate a
/// five-second run sees a few of ([`avout_sim_zk::bench::ensemble_rates`] at `0.002`: lost
/// requests and replies, disconnects, moved sessions, stale follower reads, slow disks and
/// lagging leaders, and rarely an election, an expiry or a partition).
pub(crate) const FAULT_RATE: f64 = 0.002;

/// The fitted model files in `dir`: one standalone server's and the ensemble's.
pub(crate) const STANDALONE_FILE: &str = "standalone.json";
/// See [`STANDALONE_FILE`].
pub(crate) const ENSEMBLE_FILE: &str = "ensemble-3.json";

/// Reads a fitted model.
pub(crate) fn load_model(path: &Path) -> Result<LatencyModel, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReportError::Setup {
        what: format!("the latency model {}", path.display()),
        detail: format!("{e} (`avout report latency` measures and writes it)"),
    })?;
    serde_json::from_str(&text).map_err(|e| ReportError::Setup {
        what: format!("the latency model {}", path.display()),
        detail: e.to_string(),
    })
}

/// The deployments of every STM report, the fitted models read from `dir`.
pub(crate) fn deployments(dir: &Path) -> Result<Vec<Deployment>, ReportError> {
    let standalone = load_model(&dir.join(STANDALONE_FILE))?;
    let ensemble = load_model(&dir.join(ENSEMBLE_FILE))?;
    let describe = |m: &LatencyModel| {
        format!(
            "one-way latency {} µs, mean round trips read {:.2} ms, write {:.2} ms, sync {:.2} \
             ms, multi {:.2} ms, followers {} ms behind",
            m.one_way.as_micros(),
            ms(m.mean_round_trip(avout_sim_zk::latency::RequestClass::Read)),
            ms(m.mean_round_trip(avout_sim_zk::latency::RequestClass::Write)),
            ms(m.mean_round_trip(avout_sim_zk::latency::RequestClass::Sync)),
            ms(m.mean_round_trip(avout_sim_zk::latency::RequestClass::Multi)),
            m.follower_lag.as_millis(),
        )
    };
    Ok(vec![
        Deployment {
            slug: "",
            name: "1 server, uniform",
            what: "one simulated server, one-way latency uniform in 0.1–2 ms, requests served \
                   as they arrive, no faults (the setting of the first reports)"
                .into(),
            servers: 1,
            latency: None,
            rates: FaultRates::default(),
            every_point: true,
            real: Some(Real::Standalone),
        },
        Deployment {
            slug: "fitted-1",
            name: "1 server, fitted",
            what: format!(
                "one simulated server with the latency model fitted from a real one ({})",
                describe(&standalone)
            ),
            servers: 1,
            latency: Some(standalone),
            rates: FaultRates::default(),
            every_point: false,
            real: Some(Real::Standalone),
        },
        Deployment {
            slug: "uniform-3",
            name: "3 servers, uniform",
            what: "three simulated servers with the simulator's default latencies (uniform \
                   0.1–2 ms, followers 50, 100 and 150 ms behind), no faults"
                .into(),
            servers: 3,
            latency: None,
            rates: FaultRates::default(),
            every_point: false,
            real: Some(Real::Ensemble),
        },
        Deployment {
            slug: "ensemble",
            name: "3 servers, fitted",
            what: format!(
                "three simulated servers with the latency model fitted from a real 3-member \
                 ensemble ({}), no faults",
                describe(&ensemble)
            ),
            servers: 3,
            latency: Some(ensemble.clone()),
            rates: FaultRates::default(),
            every_point: true,
            real: Some(Real::Ensemble),
        },
        Deployment {
            slug: "ensemble-faults",
            name: "3 servers, fitted, faults",
            what: format!(
                "the fitted 3-server ensemble under the ensemble's everyday faults \
                 (`ensemble_rates({FAULT_RATE})` per request: lost requests and replies, \
                 disconnects, moved sessions, stale follower reads, slow disks, lagging \
                 leaders, and rarely an election, a session expiry or a partition)"
            ),
            servers: 3,
            latency: Some(ensemble),
            rates: avout_sim_zk::bench::ensemble_rates(FAULT_RATE),
            every_point: true,
            real: None,
        },
    ])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Deployment {
    /// A simulation of this deployment.
    pub(crate) fn sim(&self, seed: u64, clients: usize, time_limit: Duration) -> Sim {
        let mut b = Sim::builder()
            .seed(seed)
            .clients(clients)
            .servers(self.servers)
            .rates(self.rates)
            .time_limit(time_limit)
            .keep_log(false);
        if let Some(model) = &self.latency {
            b = b.latency_model(model);
        }
        b.build()
    }

    /// The file slug of a plot of this deployment.
    pub(crate) fn plot_slug(&self, slug: &str) -> String {
        if self.slug.is_empty() {
            slug.to_owned()
        } else {
            format!("{slug}-{}", self.slug)
        }
    }
}
