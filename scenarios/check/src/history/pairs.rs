//! Operations as recipes' checkers read them: each invocation with its process's next
//! completion, and both values (the register checkers' [`Operation`](super::Operation) keeps
//! one), for operations with any name.

use std::collections::BTreeMap;

use super::{EventType, History, Process};

/// An invocation and its completion, with both values (the recipes' checkers need the
/// completion's value for operations the register checkers do not know).
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// The process.
    pub process: u64,
    /// The function.
    pub f: String,
    /// The invocation's value.
    pub input: serde_json::Value,
    /// The completion's value (`null` if none).
    pub output: serde_json::Value,
    /// How it ended (`Info` if it never did).
    pub end: EventType,
    /// Index of the invocation among the events.
    pub start: usize,
    /// Index of the completion (`usize::MAX` if none).
    pub stop: usize,
    /// The invocation's time (nanoseconds since the start of the run).
    pub time: u64,
}

/// Pairs each invocation with the next completion of its process.
///
/// ```
/// use avout_check::history::{pairs, Event, EventType, History, F};
/// let h: History = [Event::invoke(0, F::Read, serde_json::Value::Null), Event::ok(0, F::Read, 4.into())]
///     .into_iter().collect();
/// let p = pairs(&h);
/// assert_eq!((p[0].output.clone(), p[0].end, p[0].stop), (4.into(), EventType::Ok, 1));
/// ```
pub fn pairs(history: &History) -> Vec<Pair> {
    let mut out: Vec<Pair> = Vec::new();
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    for (i, e) in history.events().iter().enumerate() {
        let Process::Client(process) = e.process else {
            continue;
        };
        if e.kind == EventType::Invoke {
            open.insert(process, out.len());
            out.push(Pair {
                process,
                f: e.f.as_str().to_owned(),
                input: e.value.clone(),
                output: serde_json::Value::Null,
                end: EventType::Info,
                start: i,
                stop: usize::MAX,
                time: e.time.unwrap_or(0),
            });
        } else if let Some(at) = open.remove(&process) {
            let p = &mut out[at];
            p.output = e.value.clone();
            p.end = e.kind;
            p.stop = i;
        }
    }
    out
}
