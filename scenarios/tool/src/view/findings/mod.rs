//! The checker's verdict, drawn: each anomaly becomes a [`Finding`] that names the operations
//! it concerns ([`Mark`]s), the order between them ([`Arrow`]s, e.g. a cycle's `ww`/`wr`/`rw`/
//! `realtime`/`process` edges or the deepest linearization), the stretches of time it is about
//! ([`Span`]s, e.g. two overlapping lock holds) and the faults that came before it.
//!
//! The findings come from the verdict's anomalies ([`avout_check::Anomaly`]), never from
//! their text: every checker names the operations an anomaly concerns, the orders between
//! them and the stretches of time it is about, and this module puts them on the timeline,
//! whichever checker it was — a scenario run's (its verdict as the run gave it) or the one
//! `avout view --model` names — plus the operations that missed the deadline.

mod drawn;
mod waits;

use avout_check::history::{History, Process};
use avout_check::{CheckError, Checkers, Options, UnknownChecker, Verdict};
use serde::Serialize;

use super::sim::SimEvent;
use super::timeline::Timeline;
use avout_scenarios::scenario::OP_DEADLINE;

/// One anomaly, drawn.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// use avout_cli::view::{Judge, Page};
/// use serde_json::Value;
/// let a = || F::Other("acquire".into());
/// let h: History = [
///     Event::invoke(0, a(), Value::Null),
///     Event::ok(0, a(), 1.into()),
///     Event::invoke(1, a(), Value::Null),
///     Event::ok(1, a(), 2.into()),
/// ]
/// .into_iter()
/// .collect();
/// let page = Page::of_history(&h, &Judge::named("mutex"), "t").unwrap();
/// let f = &page.findings[0];
/// assert_eq!(f.name, "overlap");
/// assert_eq!(f.marks.len(), 2, "the two acquires");
/// assert_eq!(f.spans[0].role, "overlap");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// The anomaly's name, as the checker gives it (`overlap`, `G-single`, …).
    pub name: String,
    /// One line saying what is wrong.
    pub title: String,
    /// The checker's full account of it.
    pub text: String,
    /// The operations it concerns.
    pub marks: Vec<Mark>,
    /// Orders between them.
    pub arrows: Vec<Arrow>,
    /// Stretches of time it is about.
    pub spans: Vec<Span>,
    /// The faults that led there (indices into the page's events): on the lane of each
    /// operation it concerns, those during the operation and the last one before it; on the
    /// service's and servers' lanes, those lasting into its stretch; for two holders at once,
    /// also every client's faults from the first hold's start to the overlap.
    pub events: Vec<usize>,
    /// The stretch of time to show first: what it concerns and those faults. (A stalled
    /// operation counts from its start: the minute it then waits shows nothing.)
    pub focus: [u64; 2],
}

/// An operation a finding concerns.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// use avout_cli::view::{Judge, Page};
/// let h: History = [Event::invoke(0, F::Read, serde_json::Value::Null), Event::ok(0, F::Read, 7.into())]
///     .into_iter()
///     .collect();
/// let page = Page::of_history(&h, &Judge::guess(&h), "t").unwrap();
/// let mark = &page.findings[0].marks[0];
/// assert_eq!((mark.op, mark.role, mark.label.as_str()), (0, "culprit", "cannot be placed"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mark {
    /// The operation (index into the page's operations).
    pub op: usize,
    /// How it takes part: `culprit` (the operation that breaks the rule: the one nobody could
    /// place, the stalled one), `party` (a transaction of a cycle, a holder), `order` (in the
    /// deepest linearization found) or `open` (could still take effect when it failed).
    pub role: &'static str,
    /// Its label on the page.
    pub label: String,
}

/// An order from one operation to another.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// use avout_cli::view::{Judge, Page};
/// // Write 1, then a read of nothing: the write is placed first, the read cannot follow.
/// let h: History = [
///     Event::invoke(0, F::Write, 1.into()),
///     Event::ok(0, F::Write, 1.into()),
///     Event::invoke(1, F::Read, serde_json::Value::Null),
///     Event::ok(1, F::Read, serde_json::Value::Null),
/// ]
/// .into_iter()
/// .collect();
/// let page = Page::of_history(&h, &Judge::guess(&h), "t").unwrap();
/// let arrow = &page.findings[0].arrows[0];
/// assert_eq!((arrow.from, arrow.to, arrow.kind.as_str()), (0, 1, "stuck"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Arrow {
    /// From (an operation index).
    pub from: usize,
    /// To.
    pub to: usize,
    /// `ww`, `wr`, `rw`, `realtime`, `process` (a cycle's edges), `order` (a linearization's
    /// next operation), `stuck` (where it could not go on) or `waits` (a stalled operation
    /// waiting on a node the other operation created).
    pub kind: String,
    /// Its label on the page.
    pub label: String,
    /// What shows it.
    pub detail: String,
    /// The instants it joins, when they matter (a wait's start, the creation it waits on);
    /// otherwise it joins the operations as wholes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<[u64; 2]>,
}

/// A stretch of time on some lanes.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// use avout_cli::view::{Judge, Page};
/// use serde_json::Value;
/// let a = || F::Other("acquire".into());
/// let h: History = [
///     Event::invoke(0, a(), Value::Null),
///     Event::ok(0, a(), 1.into()),
///     Event::invoke(1, a(), Value::Null),
///     Event::ok(1, a(), 2.into()),
/// ]
/// .into_iter()
/// .collect();
/// let page = Page::of_history(&h, &Judge::named("mutex"), "t").unwrap();
/// let hold = page.findings[0].spans.iter().find(|s| s.role == "hold").unwrap();
/// assert_eq!((hold.lanes.clone(), hold.start), (vec![0], 1), "from the grant on");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Span {
    /// The lanes it covers.
    pub lanes: Vec<usize>,
    /// From, on the axis.
    pub start: u64,
    /// To.
    pub end: u64,
    /// `hold` (a lock hold), `overlap` (two holds at once) or `wait` (a stalled operation
    /// after its last request or reply).
    pub role: &'static str,
    /// Its label on the page.
    pub label: String,
}

/// Which checker judges a history for the page.
///
/// ```
/// use avout_cli::view::{Judge, Page};
/// let page = Page::of_history(&Default::default(), &Judge::named("list-append"), "t").unwrap();
/// assert_eq!(page.verdict.checker, "list-append (Elle, strict serializability)");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Judge {
    /// A run already judged: its verdict, drawn as it is.
    Verdict(Verdict),
    /// A checker by name ([`Checkers::builtins`]), told its options.
    Checker {
        /// Its name.
        name: String,
        /// Its options.
        options: Options,
    },
    /// None: the timeline alone.
    None,
}

impl Judge {
    /// The checker `name`, with the default options.
    pub fn named(name: &str) -> Judge {
        Judge::Checker {
            name: name.to_owned(),
            options: Options::default(),
        }
    }

    /// The checker a history's operations call for, when none was named: transactions
    /// (`txn`) for Elle, `acquire`/`release` for the mutex checker, `transfer` for the bank,
    /// `begin`/`vote`/`outcome` for two-phase commit, and `read`/`write`/`cas` alone for a
    /// cas-register; otherwise none.
    ///
    /// ```
    /// use avout_check::history::{Event, History, F};
    /// use avout_cli::view::Judge;
    /// let h: History = [Event::invoke(0, F::Other("acquire".into()), serde_json::Value::Null)]
    ///     .into_iter()
    ///     .collect();
    /// assert!(matches!(Judge::guess(&h), Judge::Checker { name, .. } if name == "mutex"));
    /// assert!(matches!(Judge::guess(&History::new()), Judge::None));
    /// ```
    pub fn guess(history: &History) -> Judge {
        let fs: std::collections::BTreeSet<&str> = history
            .events()
            .iter()
            .filter(|e| matches!(e.process, Process::Client(_)))
            .map(|e| e.f.as_str())
            .collect();
        let any = |names: &[&str]| names.iter().any(|n| fs.contains(n));
        if any(&["txn"]) {
            Judge::named("list-append")
        } else if any(&["acquire", "release"]) {
            Judge::named("mutex")
        } else if any(&["transfer"]) {
            Judge::named("bank")
        } else if any(&["begin", "vote", "outcome"]) {
            Judge::named("two-phase-commit")
        } else if !fs.is_empty() && fs.iter().all(|f| ["read", "write", "cas"].contains(f)) {
            Judge::named("cas-register")
        } else {
            Judge::None
        }
    }
}

/// Why a history could not be judged for the page.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// use avout_cli::view::{Judge, JudgeError, Page, ViewError};
/// // A transaction is not an operation of the mutex model.
/// let h: History = [Event::invoke(0, F::Other("txn".into()), serde_json::json!([]))].into_iter().collect();
/// let err = Page::of_history(&h, &Judge::named("mutex"), "t").unwrap_err();
/// assert!(matches!(err, ViewError::Judge(JudgeError::Refused(_))));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// No checker has that name.
    #[error(transparent)]
    Unknown(#[from] UnknownChecker),
    /// The checker refused the history.
    #[error(transparent)]
    Refused(#[from] CheckError),
}

/// A verdict as the page shows it.
///
/// ```
/// use avout_cli::view::{Judge, Page};
/// let v = Page::of_history(&Default::default(), &Judge::named("mutex"), "t").unwrap().verdict;
/// assert!(v.valid);
/// assert!(v.report[0].starts_with("valid"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PageVerdict {
    /// Which checker judged.
    pub checker: String,
    /// Whether the history passed.
    pub valid: bool,
    /// The checker's report, line by line, cut after [`REPORT_LINES`] lines.
    pub report: Vec<String>,
}

/// How many lines of a checker's report the page keeps: a run with thousands of anomalies
/// would otherwise carry a report bigger than its timeline (the checker prints it whole).
///
/// ```
/// assert!(avout_cli::view::findings::REPORT_LINES >= 100);
/// ```
pub const REPORT_LINES: usize = 200;

fn capped(lines: impl Iterator<Item = String>) -> Vec<String> {
    let mut lines: Vec<String> = lines.collect();
    if lines.len() > REPORT_LINES {
        let more = lines.len() - REPORT_LINES;
        lines.truncate(REPORT_LINES);
        lines.push(format!(
            "… and {more} more lines: the checker prints them all"
        ));
    }
    lines
}

/// The verdict and the findings of `judge` on `history`.
pub(crate) fn judge(
    judge: &Judge,
    history: &History,
    timeline: &Timeline,
) -> Result<(PageVerdict, Vec<Finding>), JudgeError> {
    let verdict = match judge {
        Judge::Verdict(v) => v.clone(),
        Judge::Checker { name, options } => {
            Checkers::builtins().get(name, options)?.check(history)?
        }
        Judge::None => {
            return Ok((
                PageVerdict {
                    checker: "none".into(),
                    valid: true,
                    report: vec!["no checker was asked for: the timeline alone".into()],
                },
                Vec::new(),
            ));
        }
    };
    let mut findings: Vec<Finding> = verdict
        .anomalies
        .iter()
        .filter(|a| a.kind != "liveness")
        .map(|a| drawn::drawn(a, timeline))
        .collect();
    findings.extend(verdict.undecided.iter().map(|u| Finding {
        name: "unknown".into(),
        title: u.clone(),
        text: u.clone(),
        marks: Vec::new(),
        arrows: Vec::new(),
        spans: Vec::new(),
        events: Vec::new(),
        focus: [0, 0],
    }));
    if verdict.anomalies.iter().any(|a| a.kind == "liveness") {
        findings.extend(stalls(timeline));
    }
    let page = PageVerdict {
        checker: verdict.checker.clone(),
        valid: verdict.is_valid(),
        report: capped(verdict.report().lines().map(str::to_owned)),
    };
    Ok((page, findings))
}

/// Operations that ended `info` no sooner than the deadline after they began: the stalls a
/// scenario's liveness check reports, as one finding (stalls at once are usually one
/// deadlock, and its cause is in what they share).
fn stalls(timeline: &Timeline) -> Option<Finding> {
    if timeline.axis != super::timeline::Axis::Ns {
        return None;
    }
    let deadline = OP_DEADLINE.as_nanos() as u64;
    let stuck: Vec<usize> = (0..timeline.ops.len())
        .filter(|&i| {
            let op = &timeline.ops[i];
            op.outcome == "info" && op.end.is_some_and(|e| e - op.start >= deadline)
        })
        .collect();
    if stuck.is_empty() {
        return None;
    }
    let names: Vec<String> = stuck
        .iter()
        .map(|&i| {
            let op = &timeline.ops[i];
            format!(
                "{}'s {} (process {})",
                timeline.lanes[op.lane].name, op.f, op.process
            )
        })
        .collect();
    let title = format!(
        "{} did not finish within {} s",
        names.join(", "),
        OP_DEADLINE.as_secs()
    );
    Some(Finding {
        name: "liveness".into(),
        text: format!(
            "liveness: {title}: {} for something that never came (a deadlock, or a wait \
             nothing ends)",
            if stuck.len() == 1 {
                "it waited"
            } else {
                "they waited"
            }
        ),
        title,
        marks: stuck
            .iter()
            .map(|&op| Mark {
                op,
                role: "culprit",
                label: "never finished".into(),
            })
            .collect(),
        arrows: Vec::new(),
        spans: Vec::new(),
        events: Vec::new(),
        focus: [0, 0],
    })
}

/// Kinds of event that are faults (the simulator's, or a nemesis's).
fn is_fault(e: &SimEvent) -> bool {
    e.kind == "fault" || e.kind == "nemesis"
}

/// Fills each finding's `events` (the faults that led there) and `focus`; a stall's also
/// gets its wait-for chain from the simulator's `log` ([`waits`]).
pub(crate) fn relate_faults(
    findings: &mut [Finding],
    timeline: &Timeline,
    lanes: &[super::timeline::Lane],
    events: &[SimEvent],
    log: &super::sim::Drawn,
) {
    let faults = |lane: usize| {
        events
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.lane == lane && is_fault(e))
    };
    let everyone: Vec<usize> = lanes
        .iter()
        .enumerate()
        .filter(|(_, l)| matches!(l.kind, "service" | "server" | "nemesis"))
        .map(|(i, _)| i)
        .collect();
    for finding in findings {
        // What the finding is about: each lane with its stretch. A stalled operation counts
        // until it went quiet, and what it waited on joins it.
        let mut stretches: Vec<(usize, u64, u64)> = Vec::new();
        if finding.name == "liveness" {
            let stuck: Vec<usize> = finding.marks.iter().map(|m| m.op).collect();
            let w = waits::chain(&stuck, timeline, log);
            if let Some(lanes) = &w.cycle {
                let names: Vec<&str> = lanes
                    .iter()
                    .map(|&l| timeline.lanes[l].name.as_str())
                    .collect();
                finding.title = match names[..] {
                    [a, b] if a == b => format!("{}; {a} waits on itself", finding.title),
                    _ => format!(
                        "{}; they wait on one another: {}",
                        finding.title,
                        names.join(" → ")
                    ),
                };
            }
            for s in &w.spans {
                finding.text.push_str(&format!(
                    "\n  {}: {}",
                    timeline.lanes[s.lanes[0]].name, s.label
                ));
            }
            for a in &w.arrows {
                finding.text.push_str(&format!(
                    "\n  {} {}",
                    timeline.lanes[timeline.ops[a.from].lane].name,
                    a.detail.replace("this operation", &{
                        let to = &timeline.ops[a.to];
                        format!("{}'s {}", timeline.lanes[to.lane].name, to.f)
                    })
                ));
            }
            stretches = w.stretches;
            finding.spans.extend(w.spans);
            finding.arrows.extend(w.arrows);
            finding.marks.extend(w.marks);
        } else {
            stretches.extend(finding.marks.iter().map(|m| {
                let op = &timeline.ops[m.op];
                (op.lane, op.start, op.end.unwrap_or(timeline.end))
            }));
        }
        stretches.extend(
            finding
                .spans
                .iter()
                .filter(|s| s.role != "wait")
                .flat_map(|s| s.lanes.iter().map(|&l| (l, s.start, s.end))),
        );
        let (Some(from), Some(to)) = (
            stretches.iter().map(|s| s.1).min(),
            stretches.iter().map(|s| s.2).max(),
        ) else {
            continue;
        };
        let mut related = Vec::new();
        for &(lane, start, end) in &stretches {
            related.extend(
                faults(lane)
                    .filter(|(_, e)| e.start < start)
                    .map(|(i, _)| i)
                    .next_back(),
            );
            related.extend(
                faults(lane)
                    .filter(|(_, e)| (start..=end).contains(&e.start))
                    .map(|(i, _)| i),
            );
        }
        for &lane in &everyone {
            related.extend(
                faults(lane)
                    .filter(|(_, e)| e.start <= to && e.end.unwrap_or(e.start) >= from)
                    .map(|(i, _)| i),
            );
        }
        // Two holders at once: a third client's fault between the first hold's start and the
        // overlap counts too (its queued node going, with its session, can let a waiter in).
        for span in finding.spans.iter().filter(|s| s.role == "overlap") {
            for lane in 0..lanes.len() {
                related.extend(
                    faults(lane)
                        .filter(|(_, e)| (from..=span.start).contains(&e.start))
                        .map(|(i, _)| i),
                );
            }
        }
        related.sort_unstable();
        related.dedup();
        let starts = related.iter().map(|&e| events[e].start);
        finding.focus = [
            starts.clone().chain([from]).min().unwrap_or(from),
            starts.chain([to]).max().unwrap_or(to),
        ];
        finding.events = related;
    }
}
