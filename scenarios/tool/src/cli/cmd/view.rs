//! `avout view CASE|HISTORY [--out FILE.html] [--model M]`: a run's timeline as one
//! self-contained HTML page, the checker's verdict drawn on it ([`crate::view`]).
//!
//! A case file (`*.json` written by run, explore, soak or shrink) is replayed from its recorded
//! choices with the simulator's event log kept, and judged by its scenario's checker. Any other
//! file is a history in JSON lines or EDN, as `avout check` reads it, judged by `--model` (or
//! by the checker its operations call for, [`Judge::guess`]); it has no simulator events, but a
//! nemesis's events are drawn. The page goes beside the file (`X.case.json` → `X.html`) unless
//! `--out` says otherwise. Exit 0 when written, 2 when the input could not be read.

use std::path::{Path, PathBuf};

use crate::view::{Judge, Page, ViewError, page_path};
use avout_check::history::History;
use avout_scenarios::scenario::Registry;
use avout_scenarios::scenario::case::Case;

use super::check::{CheckerArgs, model_names};

/// Options of `avout view`.
#[derive(Debug, clap::Args)]
pub(crate) struct ViewArgs {
    /// A case file (`*.case.json`, `*.shrunk.json`) or a history (JSON lines or EDN).
    file: PathBuf,
    /// Where to write the page (default: beside FILE, `.html`).
    #[arg(long, value_name = "FILE.html")]
    out: Option<PathBuf>,
    /// For a history: the checker whose verdict to draw (default: the one its operations
    /// call for).
    #[arg(long, value_parser = model_names())]
    model: Option<String>,
    #[command(flatten)]
    checker: CheckerArgs,
}

/// Whether `path` names a case file rather than a history: a `.json` file (histories are
/// `.jsonl` or `.edn`); one that is not a case says so when loaded.
fn is_case(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

impl ViewArgs {
    fn judge(&self, history: &History) -> Judge {
        let name = match (&self.model, Judge::guess(history)) {
            (Some(name), _) => name.clone(),
            (None, Judge::Checker { name, .. }) => name,
            (None, other) => return other,
        };
        Judge::Checker {
            name,
            options: self.checker.options(),
        }
    }
}

/// `avout view`.
pub(crate) fn run(registry: &Registry, args: &ViewArgs) -> Result<(), ViewError> {
    let page = if is_case(&args.file) {
        let case = Case::load(&args.file)?;
        let mut page = Page::of_case(registry, &case)?;
        page.about
            .push(format!("replay: avout replay {}", args.file.display()));
        page
    } else {
        let history = History::load(&args.file)?;
        let name = args
            .file
            .file_name()
            .map_or_else(|| "history".into(), |n| n.to_string_lossy().into_owned());
        let mut page = Page::of_history(&history, &args.judge(&history), &name)?;
        page.about.push(format!(
            "{}: {} events, {} operations",
            args.file.display(),
            history.len(),
            page.ops.len()
        ));
        page
    };
    let out = args.out.clone().unwrap_or_else(|| page_path(&args.file));
    page.write(&out)?;
    println!(
        "page        {} ({} operations, {} events, {} anomalies drawn; {})",
        out.display(),
        page.ops.len(),
        page.events.len(),
        page.findings.len(),
        if page.verdict.valid {
            "valid"
        } else {
            "not valid"
        }
    );
    Ok(())
}
