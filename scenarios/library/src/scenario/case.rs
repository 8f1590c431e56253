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
//! use avout_scenarios::scenario::{FaultPlan, ScenarioName, Workload};
//! let mut w = Workload::new(ScenarioName::Counter, 5);
//! w.ops = 3;
//! let case = Case::record(&w, &FaultPlan::none(), None).unwrap();
//! let back = Case::from_json(&case.to_json()).unwrap();
//! let replay = back.replay().unwrap();
//! assert_eq!(replay.hash, Some(case.sim.hash));
//! ```

use std::path::Path;

use avout::planted::Bug;
use avout_sim_zk::ReplayFile;
use serde::{Deserialize, Serialize};

use super::{FaultPlan, Report, RunError, Workload, run_sim};

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
    /// The faults.
    pub plan: FaultPlan,
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
    /// Runs `w` under `plan` (with `planted` on), recording its choices.
    pub fn record(w: &Workload, plan: &FaultPlan, planted: Option<Bug>) -> Result<Case, RunError> {
        let report = run_sim(w, plan, planted, true, None)?;
        Ok(Case::from_report(&report, plan))
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
            anomalies: report.verdict.problems().map(str::to_owned).collect(),
            sim: report
                .replay
                .clone()
                .expect("a case is made from a run that recorded its choices"),
        }
    }

    /// Re-runs the case from its recorded choices.
    pub fn replay(&self) -> Result<Report, RunError> {
        self.check_seed()?;
        run_sim(
            &self.workload,
            &self.plan,
            self.planted,
            false,
            Some(&self.sim),
        )
    }

    /// [`Case::replay`], keeping the simulator's event log (what `avout view` draws).
    pub fn replay_logged(&self) -> Result<(Report, Vec<avout_sim_zk::LogEvent>), RunError> {
        self.check_seed()?;
        super::run_sim_inner(
            &self.workload,
            &self.plan,
            self.planted,
            false,
            Some(&self.sim),
            true,
        )
    }

    fn check_seed(&self) -> Result<(), RunError> {
        if self.sim.config.seed != self.workload.seed {
            return Err(RunError::Case(format!(
                "the simulator's seed {} is not the workload's seed {}",
                self.sim.config.seed, self.workload.seed
            )));
        }
        Ok(())
    }

    /// Re-runs the case from its seed and fault plan, without the recorded choices (what a
    /// regression test does: it survives changes to how the simulator tapes its choices).
    pub fn rerun(&self, planted: Option<Bug>) -> Result<Report, RunError> {
        run_sim(&self.workload, &self.plan, planted, false, None)
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
