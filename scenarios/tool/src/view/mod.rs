//! A failing schedule as a page: one self-contained HTML file with the run's timeline and the
//! checker's verdict drawn on it (`avout view`, and next to every failing run's case file).
//!
//! The page has one lane per client, each operation a bar from invocation to completion
//! coloured by how it ended (ok, fail, info); beside them, on the same time axis, the
//! simulator's events (faults by kind, session state changes, watch deliveries, and whatever
//! kinds its log gains later, see [`sim`]) or a history's nemesis events; and on top, the
//! checker's findings ([`findings`]): a cycle's transactions with their `ww`/`wr`/`rw`/
//! `realtime`/`process` edges, the linearizability checker's deepest partial order and the
//! operation nobody could place, the two overlapping lock holds with their fencing tokens,
//! each with the faults that came before it. It zooms (wheel, drag, a minimap) and explains
//! what is under the pointer.
//!
//! The file needs no network: the data is one JSON object embedded in the page
//! (`<script type="application/json" id="avout-data">`), drawn by a small script and style
//! sheet inlined beside it. The data is the page's contract, and what the golden
//! tests pin: [`Page`] serialised.
//!
//! ```
//! use avout_check::history::{Event, History, F};
//! use avout_cli::view::{Judge, Page};
//! use serde_json::Value;
//! let a = || F::Other("acquire".into());
//! let h: History = [
//!     Event::invoke(0, a(), Value::Null),
//!     Event::ok(0, a(), 1.into()),
//!     Event::invoke(1, a(), Value::Null),
//!     Event::ok(1, a(), 2.into()),
//! ]
//! .into_iter()
//! .collect();
//! let page = Page::of_history(&h, &Judge::named("mutex"), "two holders").unwrap();
//! assert!(!page.verdict.valid);
//! assert_eq!(page.findings[0].name, "overlap");
//! assert!(page.to_html().contains("id=\"avout-data\""));
//! ```

pub mod findings;
mod html;
mod sessions;
pub mod sim;
#[cfg(test)]
mod tests;
pub mod timeline;

use std::path::{Path, PathBuf};

use avout_sim_zk::LogEvent;
use serde::Serialize;

use avout_check::history::{History, HistoryError};
use avout_scenarios::scenario::case::{Case, CaseError};
use avout_scenarios::scenario::{PANICKED, Protocol, Registry, Report, RunError};
pub use findings::{Finding, Judge, JudgeError, PageVerdict};
use sim::SimEvent;
use timeline::{Axis, Lane, Op, Timeline};

/// The version of the page's data; raised when its shape changes.
///
/// ```
/// let page = avout_cli::view::Page::of_history(
///     &Default::default(),
///     &avout_cli::view::Judge::None,
///     "empty",
/// )
/// .unwrap();
/// assert_eq!(page.format, avout_cli::view::PAGE_FORMAT);
/// ```
pub const PAGE_FORMAT: u32 = 1;

/// Why a page could not be made or written.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// use avout_cli::view::{Judge, Page, ViewError};
/// // A completion nobody invoked: the history cannot be paired.
/// let h: History = [Event::ok(0, F::Read, 1.into())].into_iter().collect();
/// assert!(matches!(Page::of_history(&h, &Judge::None, "bad"), Err(ViewError::History(_))));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// The history could not be read or paired.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// The case file could not be read.
    #[error(transparent)]
    Case(#[from] CaseError),
    /// The case could not be replayed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The checker asked for refused the history.
    #[error(transparent)]
    Judge(#[from] JudgeError),
    /// The page could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Everything the page shows: the data embedded in it.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// use avout_cli::view::{Judge, Page};
/// let h: History = [
///     Event::invoke(0, F::Write, 1.into()).with_time(1_000),
///     Event::ok(0, F::Write, 1.into()).with_time(5_000),
/// ]
/// .into_iter()
/// .collect();
/// let page = Page::of_history(&h, &Judge::None, "one write").unwrap();
/// assert_eq!((page.ops[0].start, page.ops[0].end), (1_000, Some(5_000)));
/// assert_eq!(page.lanes[0].name, "client 0");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Page {
    /// [`PAGE_FORMAT`].
    pub format: u32,
    /// The page's title.
    pub title: String,
    /// Lines about the run: what ran, its faults, how to replay it.
    pub about: Vec<String>,
    /// What the time axis counts.
    pub axis: Axis,
    /// The last time on the axis.
    pub end: u64,
    /// The verdict.
    pub verdict: PageVerdict,
    /// The lanes: clients, then the service, servers, unmatched sessions and nemeses.
    pub lanes: Vec<Lane>,
    /// The operations.
    pub ops: Vec<Op>,
    /// The simulator's (or the nemesis's) events.
    pub events: Vec<SimEvent>,
    /// The anomalies, drawn.
    pub findings: Vec<Finding>,
}

impl Page {
    /// The page of a case file's run: the case (its scenario found in `registry`) replayed
    /// from its recorded choices with the simulator's event log kept.
    ///
    /// ```
    /// use avout_scenarios::scenario::case::Case;
    /// use avout_scenarios::scenario::{FaultPlan, Registry};
    /// use avout_cli::view::Page;
    /// let registry = Registry::builtins();
    /// let mut w = registry.workload("counter", 5).unwrap();
    /// w.ops = 3;
    /// let case = Case::record(&registry, &w, &FaultPlan::all(), None).unwrap();
    /// let page = Page::of_case(&registry, &case).unwrap();
    /// assert!(page.verdict.valid);
    /// assert!(page.events.iter().any(|e| e.kind == "connect"), "the simulator's events");
    /// ```
    pub fn of_case(registry: &Registry, case: &Case) -> Result<Page, ViewError> {
        let report = case.replay_run(registry)?.logged().sim()?;
        let mut page = Page::of_report(&report, "simulator, replayed from its case file")?;
        let found = report.hash.unwrap_or(PANICKED);
        if found != case.sim.hash {
            page.about.push(format!(
                "WARNING: the replay diverged (event-log hash {found:#018x}, the case recorded \
                 {:#018x}): the code changed since; this is the run as it goes now",
                case.sim.hash
            ));
        }
        Ok(page)
    }

    /// The page of a scenario run: its history and the verdict its scenario's checkers gave,
    /// with the simulator's event log if the run kept it ([`Run::logged`]; none on real
    /// ZooKeeper), on `backend`.
    ///
    /// [`Run::logged`]: avout_scenarios::scenario::Run::logged
    ///
    /// ```
    /// use avout_scenarios::scenario::Registry;
    /// use avout_cli::view::Page;
    /// let registry = Registry::builtins();
    /// let mut w = registry.workload("mutex", 2).unwrap();
    /// w.ops = 2;
    /// let report = registry.run(&w).sim().unwrap();
    /// let page = Page::of_report(&report, "a real server").unwrap();
    /// assert_eq!(page.lanes.len(), w.clients);
    /// assert!(page.about[0].ends_with("a real server"));
    /// ```
    pub fn of_report(report: &Report, backend: &str) -> Result<Page, ViewError> {
        let w = &report.workload;
        let judge = Judge::Verdict(report.verdict.clone());
        let title = format!("{} · seed {}", w.scenario, w.seed);
        let mut page = Page::build(&report.history, Some(w.clients), &judge, title, &report.log)?;
        let planted = report
            .planted
            .map(|b| format!(" · planted bug {b}"))
            .unwrap_or_default();
        // The scenarios whose workloads are STM transactions, which run either protocol.
        let protocol = match (w.scenario.as_str(), w.protocol) {
            ("bank" | "list-append", Protocol::Mvcc) => " · protocol mvcc",
            ("bank" | "list-append", Protocol::Optimistic) => " · protocol optimistic",
            _ => "",
        };
        page.about.push(format!(
            "{} × {}{protocol} · {backend}{planted}",
            count(w.clients, "client"),
            count(w.ops, "op")
        ));
        let c = report.counts;
        let faults: Vec<String> = report
            .faults
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        page.about.push(format!(
            "{} operations: {} ok, {} fail, {} info · faults {}{}",
            c.invoked,
            c.ok,
            c.fail,
            c.info,
            if faults.is_empty() {
                "none".to_owned()
            } else {
                faults.join(", ")
            },
            report
                .virtual_time
                .map(|v| format!(" · {:.3} s virtual", v.as_secs_f64()))
                .unwrap_or_default()
        ));
        Ok(page)
    }

    /// The page of any history (JSON lines or EDN, as `avout check` reads them), judged by
    /// `judge`; a named process's events (Jepsen's nemesis) are drawn beside the clients.
    ///
    /// ```
    /// use avout_check::history::{Event, History, F};
    /// use avout_cli::view::{Judge, Page};
    /// // A read of a value nobody wrote.
    /// let h: History = [Event::invoke(0, F::Read, serde_json::Value::Null), Event::ok(0, F::Read, 3.into())]
    ///     .into_iter()
    ///     .collect();
    /// let page = Page::of_history(&h, &Judge::guess(&h), "stale").unwrap();
    /// assert_eq!(page.findings[0].marks[0].role, "culprit");
    /// ```
    pub fn of_history(history: &History, judge: &Judge, title: &str) -> Result<Page, ViewError> {
        Page::build(history, None, judge, title.to_owned(), &[])
    }

    fn build(
        history: &History,
        clients: Option<usize>,
        judge: &Judge,
        title: String,
        log: &[LogEvent],
    ) -> Result<Page, ViewError> {
        let mut t = Timeline::build(history, clients)?;
        let (verdict, mut findings) = findings::judge(judge, history, &t)?;
        let mut lanes = t.lanes.clone();
        let mut drawn = sim::events(log, &t.ops, &mut lanes);
        t.lanes = lanes;
        let mut events = std::mem::take(&mut drawn.events);
        events.extend(t.nemesis_events(history));
        findings::relate_faults(&mut findings, &t, &t.lanes, &events, &drawn);
        let end = events
            .iter()
            .map(|e| e.end.unwrap_or(e.start))
            .chain([t.end])
            .max()
            .unwrap_or(0);
        Ok(Page {
            format: PAGE_FORMAT,
            title,
            about: Vec::new(),
            axis: t.axis,
            end,
            verdict,
            lanes: t.lanes,
            ops: t.ops,
            events,
            findings,
        })
    }

    /// The page's data as JSON (what the page embeds).
    ///
    /// ```
    /// let page = avout_cli::view::Page::of_history(
    ///     &Default::default(),
    ///     &avout_cli::view::Judge::None,
    ///     "empty",
    /// )
    /// .unwrap();
    /// let data: serde_json::Value = serde_json::from_str(&page.to_json()).unwrap();
    /// assert_eq!(data["title"], "empty");
    /// ```
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a page serialises")
    }

    /// The page as one self-contained HTML file.
    ///
    /// ```
    /// use avout_cli::view::{Judge, Page};
    /// let html = Page::of_history(&Default::default(), &Judge::None, "a <title>").unwrap().to_html();
    /// assert!(html.starts_with("<!DOCTYPE html>"));
    /// assert!(html.contains("<title>a &lt;title&gt;</title>"));
    /// assert!(!html.contains("http://") && !html.contains("https://"), "no network");
    /// ```
    pub fn to_html(&self) -> String {
        html::render(&self.title, &self.to_json())
    }

    /// Writes the page to `path`.
    ///
    /// ```
    /// use avout_cli::view::{Judge, Page, ViewError};
    /// let page = Page::of_history(&Default::default(), &Judge::None, "empty").unwrap();
    /// let err = page.write("/nonexistent/dir/page.html").unwrap_err();
    /// assert!(matches!(err, ViewError::Write { .. }));
    /// ```
    pub fn write(&self, path: impl AsRef<Path>) -> Result<(), ViewError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_html()).map_err(|source| ViewError::Write {
            path: path.to_owned(),
            source,
        })
    }
}

/// `n things`, or `1 thing`.
fn count(n: usize, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// Where the page of a case file or history goes: beside it, `.html` for its extension
/// (`X.case.json` → `X.html`, `X.shrunk.json` → `X.shrunk.html`, `X.jsonl` → `X.html`).
///
/// ```
/// use std::path::Path;
/// use avout_cli::view::page_path;
/// assert_eq!(page_path(Path::new("runs/mutex-seed1.case.json")), Path::new("runs/mutex-seed1.html"));
/// assert_eq!(page_path(Path::new("a.shrunk.json")), Path::new("a.shrunk.html"));
/// assert_eq!(page_path(Path::new("h.edn")), Path::new("h.html"));
/// ```
pub fn page_path(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("page");
    let stem = [".case.json", ".json", ".jsonl", ".edn"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(name);
    path.with_file_name(format!("{stem}.html"))
}
