//! Golden files of the page's data (`src/view/testdata/*.page.json`): the JSON embedded in the
//! page for a few recorded cases and histories. A change to the page's data fails here; when
//! it is meant (or the simulator changed the recorded runs), `AVOUT_BLESS=1 cargo test -p
//! avout-cli --lib --all-features view::` writes the files again, to be read in review.

use std::path::PathBuf;

use serde_json::Value;

use super::super::{Judge, Page};
use avout_check::history::History;

fn path(dir: &str, name: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), dir, name].iter().collect()
}

fn golden(name: &str, page: &Page) {
    let file = path("src/view/testdata", &format!("{name}.page.json"));
    let got: Value = serde_json::from_str(&page.to_json()).expect("a page is JSON");
    if std::env::var_os("AVOUT_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&got).expect("JSON prints") + "\n";
        std::fs::write(&file, text).expect("the golden file is writable");
        return;
    }
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e} (AVOUT_BLESS=1 writes it)", file.display()));
    let want: Value = serde_json::from_str(&text).expect("the golden file is JSON");
    assert!(
        got == want,
        "{name}: the page's data differs from {}; if that is meant, run with AVOUT_BLESS=1 \
         and review the diff\n{}",
        file.display(),
        serde_json::to_string_pretty(&got).unwrap()
    );
}

fn history(name: &str) -> History {
    History::load(path("../check/testdata", name)).unwrap()
}

/// Knossos' EDN: the second cas from 1 cannot be placed after the first.
#[test]
fn golden_linearizability_of_an_edn_history() {
    let page = Page::of_history(
        &history("knossos-cas-register-invalid.edn"),
        &Judge::named("cas-register"),
        "knossos-cas-register-invalid.edn",
    )
    .unwrap();
    golden("knossos-cas-register-invalid", &page);
}

/// Elle's G-single in JSON lines, with real-time edges.
#[test]
fn golden_g_single_of_a_json_lines_history() {
    let page = Page::of_history(
        &history("list-append-g-single.jsonl"),
        &Judge::named("list-append"),
        "list-append-g-single.jsonl",
    )
    .unwrap();
    golden("list-append-g-single", &page);
}

/// Two live holders of a lock.
#[test]
fn golden_mutex_overlap() {
    let page = Page::of_history(
        &history("mutex-overlap.jsonl"),
        &Judge::named("mutex"),
        "mutex-overlap.jsonl",
    )
    .unwrap();
    golden("mutex-overlap", &page);
}

/// Recorded simulator runs with their event logs: the planted lock bug's kept regression case
/// (an orphaned lock node after a lost reply: the acquire never finishes) and a shrunk G-single
/// of the planted STM bug.
#[cfg(feature = "planted-bugs")]
#[test]
fn golden_recorded_cases() {
    use avout_scenarios::scenario::Registry;
    use avout_scenarios::scenario::case::Case;
    let cases = [
        (
            path("../regressions", "lock-no-guid-recovery.json"),
            "case-lock-no-guid-recovery",
        ),
        (
            path("src/view/testdata", "list-append-g-single.case.json"),
            "case-list-append-g-single",
        ),
    ];
    for (file, name) in cases {
        let case = Case::load(&file).unwrap();
        let page = Page::of_case(&Registry::builtins(), &case).unwrap();
        assert!(
            page.about.iter().all(|l| !l.starts_with("WARNING")),
            "{name}: the case no longer replays to its hash: {:?}",
            page.about
        );
        assert!(!page.verdict.valid && !page.findings.is_empty(), "{name}");
        golden(name, &page);
    }
}
