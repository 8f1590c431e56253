//! The list-append checker on a hand-made history per anomaly, valid histories, and generated
//! ones.

mod anomalies;
mod elle;
mod valid;

use super::{EdgeKind, ElleAnomaly, Findings, check_list_append};
pub(super) use crate::elle::findings::Found;
use crate::history::{Event, History};

pub(super) use crate::elle::testing::{concurrent, failed, invoke, ok, solo, txn, unknown};

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
