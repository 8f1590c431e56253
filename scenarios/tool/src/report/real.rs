//! The real servers a report's calibration points run on: the server of `--zk`, and the
//! standalone server and ensemble `--zk-ensemble N` starts (on 127.0.0.1, free ports,
//! temporary directories; stopped when [`Servers`] drops).

use avout_testkit::server::{ZkEnsemble, ZkServer};

use super::deploy::Real;
use super::{ReportError, SweepArgs};

/// The real servers of a report, kept running while it holds them.
pub(super) struct Servers {
    standalone: Option<String>,
    ensemble: Option<String>,
    // Held for their `Drop`, which stops the servers and removes their directories.
    _started: (Option<ZkServer>, Option<ZkEnsemble>),
}

impl Servers {
    /// Starts what `args` asks for (nothing without `--zk-ensemble`).
    pub(super) fn start(args: &SweepArgs) -> Result<Servers, ReportError> {
        let fail = |what: &str, e: avout_testkit::server::TestkitError| ReportError::Setup {
            what: format!("starting {what}"),
            detail: e.to_string(),
        };
        let mut server = None;
        let mut ensemble = None;
        let mut standalone = args.zk.clone();
        let mut members = None;
        if let Some(n) = args.zk_ensemble {
            if standalone.is_none() {
                let s = ZkServer::start().map_err(|e| fail("a standalone server", e))?;
                standalone = Some(s.connect_string());
                server = Some(s);
            }
            let e = ZkEnsemble::start(usize::from(n))
                .map_err(|e| fail(&format!("a {n}-member ensemble"), e))?;
            members = Some(e.connect_string());
            ensemble = Some(e);
        }
        Ok(Servers {
            standalone,
            ensemble: members,
            _started: (server, ensemble),
        })
    }

    /// Each real deployment and its connect string.
    pub(super) fn targets(&self) -> Vec<(Real, &str)> {
        let mut out = Vec::new();
        if let Some(c) = &self.standalone {
            out.push((Real::Standalone, c.as_str()));
        }
        if let Some(c) = &self.ensemble {
            out.push((Real::Ensemble, c.as_str()));
        }
        out
    }
}
