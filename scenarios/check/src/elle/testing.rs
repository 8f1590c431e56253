//! Transactions for hand-written test histories, for every transactional checker.

use serde_json::{Value, json};

use crate::history::{Event, F};

pub(crate) fn txn() -> F {
    F::Other("txn".into())
}

/// `invoke(p, [..])` with reads' values blanked, as a client invokes.
pub(crate) fn invoke(p: u64, mops: Value) -> Event {
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

pub(crate) fn ok(p: u64, mops: Value) -> Event {
    Event::ok(p, txn(), mops)
}

/// A transaction run alone: invoke then ok.
pub(crate) fn solo(p: u64, mops: Value) -> [Event; 2] {
    [invoke(p, mops.clone()), ok(p, mops)]
}

/// A transaction that failed: invoke then fail.
pub(crate) fn failed(p: u64, mops: Value) -> [Event; 2] {
    [invoke(p, mops.clone()), Event::fail(p, txn(), mops)]
}

/// A transaction whose outcome is unknown: invoke then info.
pub(crate) fn unknown(p: u64, mops: Value) -> [Event; 2] {
    [invoke(p, mops.clone()), Event::info(p, txn(), mops)]
}

/// Transactions that all overlap: every invocation, then every completion.
pub(crate) fn concurrent(txns: &[(u64, Value)]) -> Vec<Event> {
    let mut events: Vec<Event> = txns.iter().map(|(p, m)| invoke(*p, m.clone())).collect();
    events.extend(txns.iter().map(|(p, m)| ok(*p, m.clone())));
    events
}
