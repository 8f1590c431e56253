//! The clients' side of the page: operations as bars, lanes, rows inside a lane, the time axis.
//!
//! Lanes are clients. A run's workload knows how many clients it had, and a client retires a
//! process number after an operation in doubt and carries on under `p + clients` (Jepsen's
//! rule, [`avout_scenarios::scenario::env::Process`]), so its lane is `process % clients`. A history from
//! elsewhere does not say; there a lane is a chain of processes whose lives do not overlap,
//! packed first-fit in order of first appearance, which gives Jepsen's threads back when
//! processes are retired the same way. Operations that still overlap inside a lane (two roles
//! of one client) get rows of their own.

use serde::Serialize;
use serde_json::Value;

use avout_check::history::{EventType, History, HistoryError, Keys, Operation, Outcome, Process};

/// What the time axis counts.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// use avout_cli::view::{timeline::Axis, Judge, Page};
/// // No times in the history: positions among its events.
/// let h: History = [Event::invoke(0, F::Write, 1.into())].into_iter().collect();
/// assert_eq!(Page::of_history(&h, &Judge::None, "t").unwrap().axis, Axis::Event);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    /// Nanoseconds since the start of the run (virtual ones on the simulator).
    Ns,
    /// Positions among the history's events, for histories without times.
    Event,
}

/// One lane of the page.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// use avout_cli::view::{Judge, Page};
/// let h: History = [Event::invoke(3, F::Write, 1.into())].into_iter().collect();
/// let lane = &Page::of_history(&h, &Judge::None, "t").unwrap().lanes[0];
/// assert_eq!((lane.kind, lane.note.as_str(), lane.rows), ("client", "process 3", 1));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lane {
    /// What the lane holds: `client`, `service`, `server`, `session` or `nemesis`.
    pub kind: &'static str,
    /// Its label.
    pub name: String,
    /// More about it, for the hover: its processes, or the sessions drawn in it.
    pub note: String,
    /// Rows of operations (at least 1 for a client lane, 0 for event-only lanes).
    pub rows: usize,
}

/// One operation: a bar from invocation to completion.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// use avout_cli::view::{Judge, Page};
/// let h: History = [Event::invoke(0, F::Read, serde_json::Value::Null), Event::info(0, F::Read, serde_json::Value::Null)]
///     .into_iter()
///     .collect();
/// let op = &Page::of_history(&h, &Judge::None, "t").unwrap().ops[0];
/// assert_eq!((op.f.as_str(), op.outcome, op.start, op.end), ("read", "info", 0, Some(1)));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Op {
    /// Its lane.
    pub lane: usize,
    /// Its row inside the lane.
    pub row: usize,
    /// The process that performed it.
    pub process: u64,
    /// Its function.
    pub f: String,
    /// What it did, short: the invocation's value, then `→` the completion's if it differs.
    pub value: String,
    /// The register key, when the history has keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `ok`, `fail` or `info`.
    pub outcome: &'static str,
    /// The invocation, on the axis.
    pub start: u64,
    /// The completion, on the axis; `None` if it never completed.
    pub end: Option<u64>,
    /// The invocation's line in the history file.
    pub line: usize,
}

/// How long a value may be in the page; longer ones are cut (the history has them whole).
const VALUE_CHARS: usize = 160;

/// The operations of a history, laid out.
#[derive(Clone, Debug)]
pub(crate) struct Timeline {
    pub(crate) axis: Axis,
    pub(crate) lanes: Vec<Lane>,
    pub(crate) ops: Vec<Op>,
    /// For each history event, the operation it invokes or completes.
    by_event: Vec<Option<usize>>,
    /// For each history event, its place on the axis.
    times: Vec<u64>,
    /// The last time on the axis (the last event's).
    pub(crate) end: u64,
}

impl Timeline {
    /// Lays out `history`'s operations; `clients`, when known, makes the lanes `process %
    /// clients`.
    pub(crate) fn build(history: &History, clients: Option<usize>) -> Result<Self, HistoryError> {
        let operations = history.operations(Keys::Field)?;
        let events = history.events();
        let axis = if !events.is_empty() && events.iter().all(|e| e.time.is_some()) {
            Axis::Ns
        } else {
            Axis::Event
        };
        let at = |index: usize| match axis {
            Axis::Ns => events[index].time.expect("every event has a time"),
            Axis::Event => index as u64,
        };
        let end = events.len().checked_sub(1).map_or(0, at);
        let lane_of = lanes_of(&operations, clients, &at);
        let lane_count = lane_of.iter().map(|&(l, _)| l + 1).max().unwrap_or(0);
        let mut rows_end: Vec<Vec<u64>> = vec![Vec::new(); lane_count];
        let mut by_event = vec![None; events.len()];
        let mut ops = Vec::with_capacity(operations.len());
        for (i, op) in operations.iter().enumerate() {
            let (lane, _) = lane_of[i];
            let start = at(op.invoke.index);
            let stop = op.complete.map(|c| at(c.index));
            // First free row: ops are in order of invocation, so a row is free when its last
            // op ended before this one began (or as it began: virtual time often stands still
            // between one operation and the next).
            let rows = &mut rows_end[lane];
            let row = match rows.iter().position(|&e| e <= start) {
                Some(r) => r,
                None => {
                    rows.push(0);
                    rows.len() - 1
                }
            };
            rows[row] = stop.unwrap_or(u64::MAX);
            by_event[op.invoke.index] = Some(i);
            if let Some(c) = op.complete {
                by_event[c.index] = Some(i);
            }
            ops.push(Op {
                lane,
                row,
                process: op.process,
                f: op.f.to_string(),
                value: shown_value(history, op),
                key: op.key.as_ref().map(Value::to_string),
                outcome: match op.outcome {
                    Outcome::Ok => "ok",
                    Outcome::Fail => "fail",
                    Outcome::Info => "info",
                },
                start,
                end: stop,
                line: op.invoke.line,
            });
        }
        let mut processes: Vec<Vec<u64>> = vec![Vec::new(); lane_count];
        for (i, op) in operations.iter().enumerate() {
            let ps = &mut processes[lane_of[i].0];
            if !ps.contains(&op.process) {
                ps.push(op.process);
            }
        }
        let lanes = (0..lane_count)
            .map(|l| Lane {
                kind: "client",
                name: format!("client {l}"),
                note: processes_note(&processes[l]),
                rows: rows_end[l].len().max(1),
            })
            .collect();
        Ok(Timeline {
            axis,
            lanes,
            ops,
            by_event,
            times: (0..events.len()).map(at).collect(),
            end,
        })
    }

    /// The operation the history's event `index` invokes (or completes).
    pub(crate) fn op_invoked_at(&self, index: usize) -> Option<usize> {
        self.by_event.get(index).copied().flatten()
    }

    /// The place on the axis of the history's event `index` (the end, past the last event).
    pub(crate) fn at_event(&self, index: usize) -> u64 {
        self.times.get(index).copied().unwrap_or(self.end)
    }

    /// The operation of `lane` open at `t` (the latest begun by then).
    pub(crate) fn op_at(&self, lane: usize, t: u64) -> Option<usize> {
        self.ops
            .iter()
            .enumerate()
            .filter(|(_, o)| o.lane == lane && o.start <= t && o.end.is_none_or(|e| e >= t))
            .map(|(i, _)| i)
            .next_back()
    }

    /// Named processes' events (Jepsen's nemesis): one event-only lane per name, after the
    /// clients' lanes, and the events in them.
    pub(crate) fn nemesis_events(&mut self, history: &History) -> Vec<super::sim::SimEvent> {
        let events = history.events();
        let mut names: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for (i, e) in events.iter().enumerate() {
            let Process::Named(name) = &e.process else {
                continue;
            };
            let n = names.iter().position(|x| x == name).unwrap_or_else(|| {
                names.push(name.clone());
                names.len() - 1
            });
            let t = match self.axis {
                Axis::Ns => e.time.unwrap_or(0),
                Axis::Event => i as u64,
            };
            out.push(super::sim::SimEvent {
                kind: "nemesis".into(),
                name: e.f.to_string(),
                lane: self.lanes.len() + n,
                start: t,
                end: None,
                detail: format!("{} {} {}", kind_name(e.kind), e.f, short(&e.value)),
                client: None,
            });
        }
        for name in names {
            self.lanes.push(Lane {
                kind: "nemesis",
                name,
                note: "events of a process that is not a client (Jepsen's nemesis)".into(),
                rows: 0,
            });
        }
        out
    }
}

/// Each operation's lane, and whether the lane was given by `clients`.
fn lanes_of(
    operations: &[Operation],
    clients: Option<usize>,
    at: &impl Fn(usize) -> u64,
) -> Vec<(usize, bool)> {
    if let Some(c) = clients.filter(|&c| c > 0) {
        return operations
            .iter()
            .map(|op| ((op.process % c as u64) as usize, true))
            .collect();
    }
    // Each process's life: its first invocation to its last completion (never: forever).
    let mut lives: Vec<(u64, u64, u64)> = Vec::new();
    for op in operations {
        let end = op.complete.map_or(u64::MAX, |c| at(c.index));
        match lives.iter_mut().find(|l| l.0 == op.process) {
            Some(l) => l.2 = l.2.max(end),
            None => lives.push((op.process, at(op.invoke.index), end)),
        }
    }
    let mut lane_end: Vec<u64> = Vec::new();
    let mut lane_of_process: Vec<(u64, usize)> = Vec::new();
    for &(process, start, end) in &lives {
        let lane = match lane_end.iter().position(|&e| e < start) {
            Some(l) => l,
            None => {
                lane_end.push(0);
                lane_end.len() - 1
            }
        };
        lane_end[lane] = end;
        lane_of_process.push((process, lane));
    }
    lane_of_process.sort_unstable();
    operations
        .iter()
        .map(|op| {
            let i = lane_of_process
                .binary_search_by_key(&op.process, |&(p, _)| p)
                .expect("every process has a lane");
            (lane_of_process[i].1, false)
        })
        .collect()
}

fn processes_note(ps: &[u64]) -> String {
    let shown: Vec<String> = ps.iter().take(12).map(u64::to_string).collect();
    let more = if ps.len() > 12 {
        format!(" … ({} in all)", ps.len())
    } else {
        String::new()
    };
    match ps.len() {
        1 => format!("process {}", shown[0]),
        _ => format!("processes {}{more}", shown.join(", ")),
    }
}

/// The invocation's value and, when it says more, the completion's.
fn shown_value(history: &History, op: &Operation) -> String {
    let events = history.events();
    let invoked = &events[op.invoke.index].value;
    let completed = op.complete.map(|c| &events[c.index].value);
    match completed {
        Some(c) if !c.is_null() && c != invoked => {
            if invoked.is_null() {
                format!("→ {}", short(c))
            } else {
                format!("{} → {}", short(invoked), short(c))
            }
        }
        _ => short(invoked),
    }
}

fn kind_name(kind: EventType) -> &'static str {
    match kind {
        EventType::Invoke => "invoke",
        EventType::Ok => "ok",
        EventType::Fail => "fail",
        EventType::Info => "info",
    }
}

/// A value as text, cut to [`VALUE_CHARS`].
pub(crate) fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= VALUE_CHARS {
        return text;
    }
    let cut: String = text.chars().take(VALUE_CHARS).collect();
    format!("{cut}…")
}
