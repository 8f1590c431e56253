//! The checker on hand-made violations, tricky valid histories, and generated ones.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::synth::Synth;
use super::{Cause, Findings as Verdict, Linearizable as Checker, Model, check_history};
use crate::checker::CheckError;
use crate::history::{Event, EventType, F, History, HistoryError, Keys, Outcome};

mod brute_force;
mod format;
mod generated;
mod golden;
mod valid;
mod violations;

fn history(events: impl IntoIterator<Item = Event>) -> History {
    events.into_iter().collect()
}

fn check(events: impl IntoIterator<Item = Event>) -> Verdict {
    check_history(&history(events), Model::CasRegister).expect("well-formed history")
}

fn read(p: u64) -> Event {
    Event::invoke(p, F::Read, Value::Null)
}

fn read_ok(p: u64, v: impl Into<Value>) -> Event {
    Event::ok(p, F::Read, v.into())
}

fn write(p: u64, v: i64) -> Event {
    Event::invoke(p, F::Write, v.into())
}

fn write_ok(p: u64, v: i64) -> Event {
    Event::ok(p, F::Write, v.into())
}

fn cas(p: u64, from: i64, to: i64) -> Event {
    Event::invoke(p, F::Cas, json!([from, to]))
}

fn cas_ok(p: u64, from: i64, to: i64) -> Event {
    Event::ok(p, F::Cas, json!([from, to]))
}

/// Sequential write then completed write, as a prefix many tests share.
fn wrote(p: u64, v: i64) -> [Event; 2] {
    [write(p, v), write_ok(p, v)]
}
