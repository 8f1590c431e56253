//! `avout view` as a user runs it, and its pages in a real browser: Debian's `chromium`,
//! headless, opening the page from disk and running its script; the test reads the DOM the
//! script drew and checks the anomaly's operations are the highlighted ones. `bash .ci/test`
//! installs chromium when it is missing; a test that cannot start it fails, never skips.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::check_cli::testdata;
use crate::avout;

/// The browser: `$AVOUT_CHROMIUM`, or `chromium` on the path.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("AVOUT_CHROMIUM") {
        return path.into();
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|n| dir.join(n)))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no chromium on the path: install Debian's chromium (bash .ci/test does), or \
                 name a binary in AVOUT_CHROMIUM"
            )
        })
}

/// The page's DOM after its script ran, as headless Chromium serialises it.
fn rendered(page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    // Into files, not pipes: a DOM bigger than a pipe's buffer would block chromium while
    // this waits for it to exit.
    let (stdout, stderr) = (
        profile.path().join("dom.html"),
        profile.path().join("stderr"),
    );
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1600,1000",
            &format!(
                "--user-data-dir={}",
                profile.path().join("profile").display()
            ),
            "--dump-dom",
            &format!("file://{}", page.canonicalize().unwrap().display()),
        ])
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("chromium does not start: {e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("chromium did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let dom = std::fs::read_to_string(&stdout).unwrap();
    assert!(
        status.success() && dom.contains("</html>"),
        "chromium failed: {status}\n{}",
        std::fs::read_to_string(&stderr).unwrap_or_default()
    );
    assert!(
        dom.contains("data-rendered=\"1\""),
        "the page's script did not draw it"
    );
    dom
}

/// The page's data, as embedded.
fn data(page: &Path) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let json = html
        .split("id=\"avout-data\">")
        .nth(1)
        .and_then(|rest| rest.split("</script>").next())
        .expect("the page embeds its data");
    serde_json::from_str(json).unwrap()
}

/// The chart the script drew (the page's script holds the same tags as text).
fn chart(dom: &str) -> &str {
    let start = dom
        .find("<svg id=\"main\"")
        .expect("the page has its chart");
    let end = dom[start..].find("</svg>").expect("the chart ends") + start;
    &dom[start..end]
}

/// The opening tags of `name` elements in the chart of `dom`.
fn tags<'a>(dom: &'a str, name: &str) -> Vec<&'a str> {
    chart(dom)
        .split(&format!("<{name} "))
        .skip(1)
        .map(|rest| &rest[..rest.find('>').unwrap_or(rest.len())])
        .collect()
}

/// The value of attribute `name` in an opening `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    let value = tag
        .split(&format!("{name}=\""))
        .nth(1)
        .unwrap_or_else(|| panic!("no {name} in {tag}"));
    &value[..value.find('"').unwrap_or(value.len())]
}

/// The classes of the bar drawn for operation `op`.
fn op_classes(dom: &str, op: u64) -> &str {
    let id = format!("data-op=\"{op}\"");
    let tag = tags(dom, "rect")
        .into_iter()
        .find(|t| t.contains(&id))
        .unwrap_or_else(|| panic!("operation {op} is not drawn"));
    attr(tag, "class")
}

/// Every operation the selected (first) finding marks is drawn highlighted in its role, and
/// every other operation drawn is dimmed.
fn assert_highlighted(dom: &str, data: &Value) -> Vec<u64> {
    let marks = data["findings"][0]["marks"].as_array().unwrap();
    assert!(!marks.is_empty());
    let marked: Vec<u64> = marks.iter().map(|m| m["op"].as_u64().unwrap()).collect();
    for m in marks {
        let classes = op_classes(dom, m["op"].as_u64().unwrap());
        let role = m["role"].as_str().unwrap();
        assert!(
            classes.contains("mark") && classes.contains(role),
            "operation {} drawn as {classes:?}, not as a {role}",
            m["op"]
        );
    }
    for tag in tags(dom, "rect")
        .into_iter()
        .filter(|t| t.contains("data-op="))
    {
        let op: u64 = attr(tag, "data-op").parse().unwrap();
        if !marked.contains(&op) {
            assert!(tag.contains(" dim"), "operation {op} is not dimmed: {tag}");
        }
    }
    assert!(
        dom.contains("data-finding=\"0\""),
        "the first finding is selected"
    );
    marked
}

#[test]
fn a_history_becomes_a_page_beside_it_and_bad_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("mutex-overlap.jsonl");
    std::fs::copy(testdata("mutex-overlap.jsonl"), &history).unwrap();
    let out = avout(&["view", &history.display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let page = dir.path().join("mutex-overlap.html");
    let d = data(&page);
    assert_eq!(d["verdict"]["checker"], "mutex");
    assert_eq!(d["findings"][0]["name"], "overlap");
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 anomalies drawn"));

    let out = avout(&["view", "/nonexistent/history.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"));
    let out = avout(&["view", &testdata("not-an-event.edn")]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = avout(&[
        "view",
        &testdata("mutex-overlap.jsonl"),
        "--model",
        "list-append",
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "the wrong checker is refused: {out:?}"
    );
}

#[test]
fn two_holders_at_once_are_highlighted_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    let out = avout(&[
        "view",
        &testdata("mutex-overlap.jsonl"),
        "--out",
        &page.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let dom = rendered(&page);
    let marked = assert_highlighted(&dom, &data(&page));
    assert_eq!(marked.len(), 4, "two acquires and two releases");
    assert!(
        tags(&dom, "rect")
            .iter()
            .any(|t| t.contains("class=\"span overlap\""))
    );
    assert!(dom.contains("two holders: client 0 (process 0) with token 1"));
}

#[test]
fn a_cycle_and_its_edges_are_drawn_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    let out = avout(&[
        "view",
        &testdata("list-append-g-single.jsonl"),
        "--out",
        &page.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let dom = rendered(&page);
    assert_highlighted(&dom, &data(&page));
    let arrows: Vec<&str> = tags(&dom, "path")
        .into_iter()
        .filter(|t| t.contains("class=\"arrow "))
        .collect();
    assert!(arrows.iter().any(|t| t.contains("arrow rw")), "{arrows:?}");
    assert!(arrows.iter().any(|t| t.contains("arrow wr")), "{arrows:?}");
}

#[test]
fn the_operation_nobody_could_place_is_highlighted_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    let out = avout(&[
        "view",
        &testdata("knossos-cas-register-invalid.edn"),
        "--model",
        "cas-register",
        "--out",
        &page.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let dom = rendered(&page);
    let d = data(&page);
    assert_highlighted(&dom, &d);
    assert_eq!(d["findings"][0]["marks"][0]["role"], "culprit");
    assert!(dom.contains("cannot be placed"));
}

/// The issue's own example: the planted lock bug's failing run leaves a page beside its case
/// file, and it shows the acquires that never finished and the lost reply before them.
#[cfg(feature = "planted-bugs")]
#[test]
fn a_failing_run_leaves_a_page_showing_its_anomaly_and_the_fault_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = avout(&[
        "run",
        "mutex",
        "--planted",
        "lock-no-guid-recovery",
        "--seed",
        "1",
        "--out",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let page = dir.path().join("mutex-seed1.html");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("timeline    {}", page.display()))
    );
    let d = data(&page);
    assert_eq!(d["findings"][0]["name"], "liveness");
    let dom = rendered(&page);
    assert_highlighted(&dom, &d);
    // The lost reply of the create that left the orphaned lock node is among the faults
    // drawn as leading there.
    let related: Vec<&str> = tags(&dom, "path")
        .into_iter()
        .filter(|t| t.contains(" related"))
        .collect();
    assert!(
        related.iter().any(|t| t.contains("reply-lost")),
        "{related:?}"
    );
}

/// A failing run on a real server has no case file: its page goes beside its history, with
/// no simulator events.
#[cfg(feature = "planted-bugs")]
#[test]
fn a_failing_run_on_a_real_server_leaves_a_page_beside_its_history() {
    let server = avout_testkit::server::ZkServer::start()
        .expect("a real ZooKeeper server (Debian's zookeeper package)");
    let dir = tempfile::tempdir().unwrap();
    // Unchecked writes lose increments whenever two clients overlap, faults or not.
    let out = avout(&[
        "run",
        "counter",
        "--planted",
        "atom-unchecked-write",
        "--ops",
        "40",
        "--zk",
        &server.connect_string(),
        "--out",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let page = dir.path().join("counter-seed1.html");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("timeline    {}", page.display()))
    );
    let d = data(&page);
    assert_eq!(d["verdict"]["valid"], false);
    assert_eq!(d["axis"], "ns");
    assert!(d["events"].as_array().unwrap().is_empty(), "no simulator");
    assert!(
        d["about"][0].as_str().unwrap().contains("ZooKeeper at"),
        "{}",
        d["about"]
    );
    assert_eq!(d["ops"].as_array().unwrap().len(), 4 * 40 + 1);
    assert!(dir.path().join("counter-seed1.jsonl").is_file());
}
