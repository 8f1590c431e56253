//! Each checker's structured verdict as findings.

use super::{Arrow, Finding, Mark, Span};
use crate::view::timeline::Timeline;
use avout_check::bank::BankVerdict;
use avout_check::history::{History, Keys, Operation, Outcome};
use avout_check::linear::Cause;
use avout_check::linear::{Checker, Model, Verdict};
use avout_check::list_append::Anomaly;
use avout_check::mutex::{Hold, MutexVerdict, MutexViolation, check_mutex};
use avout_check::two_phase_commit::{Learned, TwoPhaseVerdict, TwoPhaseViolation};
use avout_scenarios::scenario::{Protocol, ScenarioName};

/// The findings of the structured checker behind `scenario`'s verdict; `None` when it has
/// none or it could not judge (the verdict says so).
pub(super) fn of_scenario(
    scenario: ScenarioName,
    protocol: Protocol,
    history: &History,
    t: &Timeline,
) -> Option<Vec<Finding>> {
    Some(match scenario {
        ScenarioName::Mutex | ScenarioName::Election | ScenarioName::LockTable => {
            mutex(&check_mutex(history).ok()?, t)
        }
        ScenarioName::LinKv => linear(
            &Checker::new(Model::CasRegister)
                .keys(Keys::Field)
                .check(history)
                .ok()?,
            t,
        ),
        ScenarioName::ListAppend => {
            let v = avout_scenarios::scenario::list_append::checker(protocol)
                .check(history)
                .ok()?;
            list_append(&v.anomalies, t)
        }
        ScenarioName::Bank => bank(
            &avout_scenarios::scenario::bank::checker()
                .check(history)
                .ok()?,
            t,
        ),
        ScenarioName::TwoPhaseCommit => two_phase_commit(
            &avout_check::two_phase_commit::check_two_phase_commit(history).ok()?,
            t,
        ),
        ScenarioName::Counter
        | ScenarioName::Rwlock
        | ScenarioName::Queue
        | ScenarioName::Barrier
        | ScenarioName::Agents => return None,
        // Its checker judges renamed parts of the history, whose operations the timeline
        // cannot point at yet: the page shows the verdict's text without marks.
        ScenarioName::Sessions => return None,
        // A user's scenario: its checker's verdict is text only.
        _ => return None,
    })
}

/// Builds findings, dropping marks and arrows of operations the timeline does not have (it
/// has every one the checkers name; this keeps a mismatch from breaking the page).
struct Draw<'a> {
    t: &'a Timeline,
    finding: Finding,
}

impl<'a> Draw<'a> {
    fn new(t: &'a Timeline, name: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        Draw {
            t,
            finding: Finding {
                name: name.into(),
                title: text.lines().next().unwrap_or_default().trim().to_owned(),
                text,
                marks: Vec::new(),
                arrows: Vec::new(),
                spans: Vec::new(),
                events: Vec::new(),
                focus: [0, 0],
            },
        }
    }

    fn title(mut self, title: String) -> Self {
        self.finding.title = title;
        self
    }

    fn mark(&mut self, op: &Operation, role: &'static str, label: impl Into<String>) {
        let Some(op) = self.t.op_of(op) else { return };
        // An operation in two roles keeps its first (the stronger: culprit before context).
        if self.finding.marks.iter().all(|m| m.op != op) {
            self.finding.marks.push(Mark {
                op,
                role,
                label: label.into(),
            });
        }
    }

    fn arrow(&mut self, from: &Operation, to: &Operation, kind: &str, label: &str, detail: &str) {
        if let (Some(from), Some(to)) = (self.t.op_of(from), self.t.op_of(to)) {
            self.finding.arrows.push(Arrow {
                from,
                to,
                kind: kind.to_owned(),
                label: label.to_owned(),
                detail: detail.to_owned(),
                at: None,
            });
        }
    }

    fn done(self) -> Finding {
        self.finding
    }
}

/// Linearizability: the operation nobody could place, the end of the deepest partial order
/// (numbered, linked in order, ending in the stuck one), and what was still open.
pub(super) fn linear(v: &Verdict, t: &Timeline) -> Vec<Finding> {
    let mut out: Vec<Finding> = v
        .violations
        .iter()
        .map(|violation| {
            let key = violation
                .key
                .as_ref()
                .map(|k| format!("key {k}: "))
                .unwrap_or_default();
            let op = &violation.op;
            let title = match violation.cause {
                Cause::NeverWritten => format!(
                    "{key}process {} {} {}: a value nothing invoked in time wrote",
                    op.process, op.f, op.value
                ),
                Cause::NoOrder => format!(
                    "{key}no order of the operations gets past process {}'s {} {}",
                    op.process, op.f, op.value
                ),
            };
            let mut d = Draw::new(t, "not-linearizable", violation.to_string()).title(title);
            d.mark(op, "culprit", "cannot be placed");
            let first = violation.path_len - violation.path.len();
            for (i, p) in violation.path.iter().enumerate() {
                d.mark(p, "order", format!("#{}", first + i + 1));
            }
            for pair in violation.path.windows(2) {
                d.arrow(
                    &pair[0],
                    &pair[1],
                    "order",
                    "",
                    "next in the deepest partial order",
                );
            }
            if let Some(last) = violation.path.last() {
                let states: Vec<String> = violation.states.iter().map(|s| s.to_string()).collect();
                let held = format!("the register held {}", states.join(" or "));
                d.arrow(
                    last,
                    op,
                    "stuck",
                    &format!("✕ {held}"),
                    &format!("no order places it here: {held}"),
                );
            }
            for o in &violation.open {
                d.mark(o, "open", "open");
            }
            d.done()
        })
        .collect();
    out.extend(v.unknown.iter().map(|key| {
        let key = key
            .as_ref()
            .map_or("the register".into(), |k| format!("key {k}"));
        Draw::new(t, "unknown", format!("{key}: gave up at the state limit")).done()
    }));
    out
}

/// Elle's anomalies: a cycle's transactions and edges, or the reads and writes at fault.
pub(super) fn list_append(anomalies: &[Anomaly], t: &Timeline) -> Vec<Finding> {
    anomalies
        .iter()
        .map(|a| {
            let mut d = Draw::new(t, a.name(), a.to_string());
            match a {
                Anomaly::Cycle(c) => {
                    let mut path = String::from("T0");
                    for e in &c.edges {
                        path.push_str(&format!(" -{}-> T{}", e.kind, e.to));
                    }
                    d = d.title(format!(
                        "a cycle of {} transactions: {path}",
                        c.transactions.len()
                    ));
                    for (i, tx) in c.transactions.iter().enumerate() {
                        d.mark(tx, "party", format!("T{i}"));
                    }
                    for e in &c.edges {
                        let key = match &e.key {
                            Some(serde_json::Value::String(k)) => format!(" {k}"),
                            Some(k) => format!(" {k}"),
                            None => String::new(),
                        };
                        d.arrow(
                            &c.transactions[e.from],
                            &c.transactions[e.to],
                            &e.kind.to_string(),
                            &format!("{}{key}", e.kind),
                            &e.to_string(),
                        );
                    }
                }
                Anomaly::AbortedRead { reader, writer, .. }
                | Anomaly::IntermediateRead { reader, writer, .. } => {
                    d.mark(reader, "culprit", "reader");
                    d.mark(writer, "party", "writer");
                    d.arrow(writer, reader, "wr", "wr", &a.to_string());
                }
                Anomaly::Internal { op, .. }
                | Anomaly::DuplicateElements { op, .. }
                | Anomaly::GarbageRead { op, .. }
                | Anomaly::FutureRead { op, .. } => d.mark(op, "culprit", a.name()),
                Anomaly::IncompatibleOrder { longest, other, .. } => {
                    d.mark(&other.0, "culprit", "not a prefix");
                    d.mark(&longest.0, "party", "longest read");
                }
                Anomaly::LostUpdate { txns, .. } => {
                    for (i, tx) in txns.iter().enumerate() {
                        d.mark(tx, "party", format!("T{i}"));
                    }
                }
            }
            d.done()
        })
        .collect()
}

/// A hold's stretch: from its acquire's completion to its release's invocation (or the end).
fn hold_span(h: &Hold, t: &Timeline, label: String) -> Option<Span> {
    let acquire = t.op_of(&h.acquire)?;
    let start = t.ops[acquire].end?;
    let end = match &h.release {
        Some(r) => t.ops[t.op_of(r)?].start,
        None => t.end,
    };
    Some(Span {
        lanes: vec![t.ops[acquire].lane],
        start,
        end,
        role: "hold",
        label,
    })
}

/// Who held and how the hold ended: `(client 0 (process 4), holds token 7, released cleanly)`.
fn holder(h: &Hold, t: &Timeline) -> (String, String) {
    let lane = t.op_of(&h.acquire).map(|i| t.ops[i].lane);
    let who = match lane {
        Some(l) => format!("{} (process {})", t.lanes[l].name, h.acquire.process),
        None => format!("process {}", h.acquire.process),
    };
    let how = match &h.release {
        None => "never released",
        Some(r) if r.outcome == Outcome::Ok => "released cleanly",
        Some(_) => "lost",
    };
    (who, format!("holds token {} ({how})", h.token))
}

/// Mutual exclusion: the two holds at once, with their tokens, and their overlap.
pub(super) fn mutex(v: &MutexVerdict, t: &Timeline) -> Vec<Finding> {
    v.violations
        .iter()
        .map(|violation| {
            let mut d = Draw::new(t, violation.name(), violation.to_string());
            match violation {
                MutexViolation::Overlap { first, second } => {
                    let ((who_a, a), (who_b, b)) = (holder(first, t), holder(second, t));
                    d = d.title(format!("two holders at once: {who_a} {a}; {who_b} {b}"));
                    for h in [first, second] {
                        d.mark(&h.acquire, "party", format!("token {}", h.token));
                        if let Some(r) = &h.release {
                            d.mark(r, "party", format!("release {}", r.outcome));
                        }
                    }
                    let spans = [hold_span(first, t, a), hold_span(second, t, b)];
                    if let [Some(x), Some(y)] = &spans {
                        let mut lanes = vec![x.lanes[0], y.lanes[0]];
                        lanes.dedup();
                        d.finding.spans.push(Span {
                            lanes,
                            start: x.start.max(y.start),
                            end: x.end.min(y.end),
                            role: "overlap",
                            label: format!(
                                "two holders: {who_a} with token {}, {who_b} with token {}",
                                first.token, second.token
                            ),
                        });
                    }
                    d.finding.spans.extend(spans.into_iter().flatten());
                }
                MutexViolation::TokenOrder { earlier, later } => {
                    d.mark(earlier, "party", format!("token {}", earlier.value));
                    d.mark(later, "culprit", format!("token {}", later.value));
                    d.arrow(
                        earlier,
                        later,
                        "realtime",
                        "realtime",
                        "began after it completed",
                    );
                }
                MutexViolation::DuplicateToken { first, second } => {
                    d.mark(first, "party", format!("token {}", first.value));
                    d.mark(second, "culprit", format!("token {}", second.value));
                }
                MutexViolation::StaleWrite { accepted, stale } => {
                    d.mark(accepted, "party", "accepted");
                    d.mark(stale, "culprit", "stale, accepted");
                    d.arrow(
                        accepted,
                        stale,
                        "realtime",
                        "realtime",
                        "began after it completed",
                    );
                }
            }
            d.done()
        })
        .collect()
}

/// Bank: each read that no sequence of transfers could produce.
pub(super) fn bank(v: &BankVerdict, t: &Timeline) -> Vec<Finding> {
    v.violations
        .iter()
        .map(|violation| {
            let names: Vec<&str> = violation.faults.iter().map(|f| f.name()).collect();
            let mut d = Draw::new(t, names.join(", "), violation.to_string());
            let faults: Vec<String> = violation.faults.iter().map(ToString::to_string).collect();
            d.mark(&violation.read, "culprit", faults.join("; "));
            d.done()
        })
        .collect()
}

fn learned(d: &mut Draw<'_>, l: &Learned, role: &'static str) {
    d.mark(
        &l.op,
        role,
        format!("{} learned {}", l.who, l.outcome.name()),
    );
}

/// Two-phase commit: the outcomes learned, and the vote or leave they contradict.
pub(super) fn two_phase_commit(v: &TwoPhaseVerdict, t: &Timeline) -> Vec<Finding> {
    v.violations
        .iter()
        .map(|violation| {
            let mut d = Draw::new(t, violation.name(), violation.to_string());
            match violation {
                TwoPhaseViolation::Disagreement {
                    reference, other, ..
                } => {
                    learned(&mut d, other, "culprit");
                    learned(&mut d, reference, "party");
                }
                TwoPhaseViolation::ToldTwice { first, second, .. } => {
                    learned(&mut d, second, "culprit");
                    learned(&mut d, first, "party");
                }
                TwoPhaseViolation::CommitWithoutVote { commit, .. } => {
                    learned(&mut d, commit, "culprit");
                }
                TwoPhaseViolation::CommitDespiteAbort { vote, commit, .. } => {
                    learned(&mut d, commit, "culprit");
                    d.mark(vote, "party", "abort vote");
                }
                TwoPhaseViolation::CommitAfterLeave { leave, commit, .. } => {
                    learned(&mut d, commit, "culprit");
                    d.mark(leave, "party", "left");
                }
            }
            d.done()
        })
        .collect()
}
