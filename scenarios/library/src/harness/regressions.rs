//! The shrunk failures a harness keeps in the user's repository, re-run before any seed.

use std::path::{Path, PathBuf};

use crate::scenario::case::{Case, CaseError};

/// The cases kept for `scenario` in `dir` (files `SCENARIO-*.json`), in name order; none if
/// the directory does not exist yet.
pub(crate) fn load(dir: &Path, scenario: &str) -> Result<Vec<(PathBuf, Case)>, CaseError> {
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
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_stem()
                    .and_then(|n| n.to_str())
                    .is_some_and(|stem| is_case_of(stem, scenario))
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| Case::load(&p).map(|case| (p, case)))
        .collect()
}

/// Whether a file stem names a kept case of `scenario`: `{scenario}-{seed}`, as
/// [`path_for`] names them (a prefix alone would give `scheduler` the cases of a scenario
/// named `scheduler-nodes`).
fn is_case_of(stem: &str, scenario: &str) -> bool {
    stem.strip_prefix(scenario)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|seed| !seed.is_empty() && seed.bytes().all(|b| b.is_ascii_digit()))
}

/// Where the shrunk case of a failure of `case`'s seed is kept in `dir`.
pub(crate) fn path_for(dir: &Path, case: &Case) -> PathBuf {
    dir.join(format!(
        "{}-{}.json",
        case.workload.scenario, case.workload.seed
    ))
}

#[cfg(test)]
mod tests {
    use super::is_case_of;

    #[test]
    fn a_case_belongs_to_the_scenario_its_whole_name_says() {
        assert!(is_case_of("scheduler-4", "scheduler"));
        assert!(is_case_of("scheduler-nodes-9830000103", "scheduler-nodes"));
        assert!(!is_case_of("scheduler-nodes-9830000103", "scheduler"));
        assert!(!is_case_of("scheduler-", "scheduler"));
        assert!(!is_case_of("scheduler4", "scheduler"));
        assert!(!is_case_of("counter-1", "scheduler"));
    }
}
