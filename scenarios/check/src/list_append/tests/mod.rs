//! The list-append checker on a hand-made history per anomaly, valid histories, and generated
//! ones.

mod anomalies;
mod elle;
mod valid;

use serde_json::{Value, json};

use super::{EdgeKind, ElleAnomaly, Findings, check_list_append};
pub(super) use crate::elle::findings::Found;
use crate::history::{Event, History};

pub(super) fn txn() -> crate::history::F {
    crate::history::F::Other("txn".into())
}

/// `invoke(p, [..])` with reads' values blanked, as a client invokes.
pub(super) fn invoke(p: u64, mops: Value) -> Event {
    let blank = mops
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match m[0].as_str() {
            Some("r") => json!(["r", m[1], null]),
            _ => m.clone(),
        })
        .collect();
    Event::invoke(p, txn(), Value::Array(blank))
}

pub(super) fn ok(p: u64, mops: Value) -> Event {
    Event::ok(p, txn(), mops)
}

/// A transaction run alone: invoke then ok.
pub(super) fn solo(p: u64, mops: Value) -> [Event; 2] {
    [invoke(p, mops.clone()), ok(p, mops)]
}

/// A transaction that failed: invoke then fail.
pub(super) fn failed(p: u64, mops: Value) -> [Event; 2] {
    [invoke(p, mops.clone()), Event::fail(p, txn(), mops)]
}

/// A transaction whose outcome is unknown: invoke then info.
pub(super) fn unknown(p: u64, mops: Value) -> [Event; 2] {
    [invoke(p, mops.clone()), Event::info(p, txn(), mops)]
}

/// The findings on `events`, which must be exactly one kind of anomaly, `name`.
pub(super) fn only(name: &str, events: &[Event]) -> Findings {
    let verdict = check(events.to_vec());
    assert_eq!(verdict.anomaly_names(), vec![name], "{verdict}");
    verdict
}

pub(super) fn check(events: Vec<Event>) -> Findings {
    let h: History = events.into_iter().collect();
    check_list_append(&h).expect("well-formed history")
}

pub(super) fn cycles(verdict: &Findings) -> Vec<&super::Cycle> {
    verdict
        .anomalies
        .iter()
        .filter_map(|a| match a {
            ElleAnomaly::Cycle(c) => Some(c),
            _ => None,
        })
        .collect()
}

pub(super) fn edge_kinds(c: &super::Cycle) -> Vec<EdgeKind> {
    c.edges.iter().map(|e| e.kind).collect()
}

/// The processes of a cycle's transactions, in cycle order from the smallest.
pub(super) fn processes(c: &super::Cycle) -> Vec<u64> {
    let mut ps: Vec<u64> = c.transactions.iter().map(|t| t.process).collect();
    let start = (0..ps.len()).min_by_key(|&i| ps[i]).unwrap();
    ps.rotate_left(start);
    ps
}
