//! Case files: a failing (or any) scenario run, saved so it can be replayed and shrunk.
//!
//! A case is the scenario's [`Workload`], the [`FaultPlan`], the planted bug if any, and the
//! simulator's own [`ReplayFile`] (configuration, every choice the network and fault streams
//! made, and the event-log hash). `avout replay` re-runs it from the recorded choices and
//! confirms the hash; `avout shrink` minimises it. Cases kept under
//! `scenarios/regressions/` are re-run by the tests before anything else.
//!
//! ```
//! use avout_scenarios::scenario::case::Case;
//! use avout_scenarios::scenario::{FaultPlan, Registry};
//! let registry = Registry::builtins();
//! let mut w = registry.workload("counter", 5).unwrap();
//! w.ops = 3;
//! let case = Case::record(&registry, &w, &FaultPlan::none(), None).unwrap();
//! let back = Case::from_json(&case.to_json()).unwrap();
//! let replay = back.replay(&registry).unwrap();
//! assert_eq!(replay.hash, Some(case.sim.hash));
//! ```

use std::path::Path;

use avout::planted::Bug;
use avout_sim_zk::ReplayFile;
use serde::{Deserialize, Serialize};

use super::{FaultPlan, Faults, Registry, Report, Run, RunError, Swarm, Workload};

/// The case-file format this crate writes and reads.
pub const CASE_FORMAT: u32 = 1;

/// A recorded scenario run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    /// [`CASE_FORMAT`].
    pub format: u32,
    /// What ran.
    pub workload: Workload,
    /// The planted bug that was on, if any.
    #[serde(default)]
    pub planted: Option<Bug>,
    /// The faults (under swarm testing, the mix the seed drew: the case replays it as is).
    pub plan: FaultPlan,
    /// The swarm the plan was drawn from, if it was (absent from the files of fixed mixes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm: Option<Swarm>,
    /// The verdict's anomalies when recorded (empty: the run was valid).
    #[serde(default)]
    pub anomalies: Vec<String>,
    /// The simulator's replay file.
    pub sim: ReplayFile,
}

/// Why a case file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaseError {
    /// Reading or writing failed.
    #[error("case file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Not a case file.
    #[error("not a case file of format {CASE_FORMAT}: {0}")]
    Json(#[from] serde_json::Error),
    /// Another format version.
    #[error("case file has format {0}, this tool reads format {CASE_FORMAT}")]
    Format(u32),
    /// The run could not be made.
    #[error(transparent)]
    Run(#[from] RunError),
}

impl Case {
    /// Runs `w` (its scenario found in `registry`) under `plan` with `planted` on, recording
    /// its choices.
    pub fn record(
        registry: &Registry,
        w: &Workload,
        plan: &FaultPlan,
        planted: Option<Bug>,
    ) -> Result<Case, RunError> {
        Case::record_faults(registry, w, &Faults::Plan(plan.clone()), planted)
    }

    /// The same under `faults`: a plan, or the mix `w`'s seed draws from a swarm (which the
    /// case records beside the plan).
    ///
    /// ```
    /// use avout_scenarios::scenario::case::Case;
    /// use avout_scenarios::scenario::{Faults, Registry, Swarm};
    /// let registry = Registry::builtins();
    /// let mut w = registry.workload("counter", 5).unwrap();
    /// w.ops = 3;
    /// let case = Case::record_faults(&registry, &w, &Faults::Swarm(Swarm::default()), None).unwrap();
    /// assert_eq!((case.plan.clone(), case.swarm.clone()), (Swarm::default().plan(5), Some(Swarm::default())));
    /// let back = Case::from_json(&case.to_json()).unwrap();
    /// assert_eq!(back.replay(&registry).unwrap().hash, Some(case.sim.hash));
    /// ```
    pub fn record_faults(
        registry: &Registry,
        w: &Workload,
        faults: &Faults,
        planted: Option<Bug>,
    ) -> Result<Case, RunError> {
        let report = registry
            .run(w)
            .with_faults(faults)
            .planted(planted)
            .recorded()
            .sim()?;
        Ok(Case::from_report(&report, &report.plan))
    }

    /// The case of a run that recorded its choices.
    ///
    /// # Panics
    ///
    /// If the report has no replay file (the run did not record).
    pub fn from_report(report: &Report, plan: &FaultPlan) -> Case {
        Case {
            format: CASE_FORMAT,
            workload: report.workload.clone(),
            planted: report.planted,
            plan: plan.clone(),
            swarm: report.swarm.clone(),
            anomalies: report.verdict.problems().map(str::to_owned).collect(),
            sim: report
                .replay
                .clone()
                .expect("a case is made from a run that recorded its choices"),
        }
    }

    /// The run of the case from its recorded choices (add [`Run::logged`] for the
    /// simulator's log, what `avout view` draws).
    pub fn replay_run<'a>(&'a self, registry: &'a Registry) -> Result<Run<'a>, RunError> {
        if self.sim.config.seed != self.workload.seed {
            return Err(RunError::Case(format!(
                "the simulator's seed {} is not the workload's seed {}",
                self.sim.config.seed, self.workload.seed
            )));
        }
        Ok(registry
            .run(&self.workload)
            .faults(&self.plan)
            .planted(self.planted)
            .replaying(&self.sim))
    }

    /// Re-runs the case from its recorded choices.
    pub fn replay(&self, registry: &Registry) -> Result<Report, RunError> {
        self.replay_run(registry)?.sim()
    }

    /// Re-runs the case from its seed and fault plan, without the recorded choices (what a
    /// regression test does: it survives changes to how the simulator tapes its choices), with
    /// `planted` on.
    pub fn rerun(&self, registry: &Registry, planted: Option<Bug>) -> Result<Report, RunError> {
        registry
            .run(&self.workload)
            .faults(&self.plan)
            .planted(planted)
            .sim()
    }

    /// The case as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a case serialises")
    }

    /// Parses a case.
    pub fn from_json(text: &str) -> Result<Case, CaseError> {
        let case: Case = serde_json::from_str(text)?;
        if case.format != CASE_FORMAT {
            return Err(CaseError::Format(case.format));
        }
        Ok(case)
    }

    /// Writes the case to `path`.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), CaseError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_json()).map_err(|source| CaseError::Io {
            path: path.display().to_string(),
            source,
        })
    }

    /// Reads a case from `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Case, CaseError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| CaseError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Case::from_json(&text)
    }

    /// How many faults the case's plan schedules explicitly.
    pub fn scheduled_faults(&self) -> usize {
        self.plan.scheduled.len()
    }
}
