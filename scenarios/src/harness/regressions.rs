//! The shrunk failures a harness keeps in the user's repository, re-run before any seed.

use std::path::{Path, PathBuf};

use crate::scenario::ScenarioName;
use crate::scenario::case::{Case, CaseError};

/// The cases kept for `scenario` in `dir` (files `SCENARIO-*.json`), in name order; none if
/// the directory does not exist yet.
pub(crate) fn load(dir: &Path, scenario: ScenarioName) -> Result<Vec<(PathBuf, Case)>, CaseError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(CaseError::Io {
                path: dir.display().to_string(),
                source,
            });
        }
    };
    let prefix = format!("{}-", scenario.name());
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix))
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| Case::load(&p).map(|case| (p, case)))
        .collect()
}

/// Where the shrunk case of a failure of `case`'s seed is kept in `dir`.
pub(crate) fn path_for(dir: &Path, case: &Case) -> PathBuf {
    dir.join(format!(
        "{}-{}.json",
        case.workload.scenario.name(),
        case.workload.seed
    ))
}
