//! The rw-register checker on a hand-made history per anomaly and on valid histories.

mod anomalies;
mod valid;

use super::{Findings, RegisterAnomaly, RwRegister};
use crate::elle::cycle::{Cycle, EdgeKind};
pub(super) use crate::elle::findings::Found;
use crate::history::{Event, F, History};

pub(super) use crate::elle::testing::{concurrent, failed, solo, txn, unknown};

pub(super) fn check_with(checker: &RwRegister, events: Vec<Event>) -> Findings {
    let h: History = events.into_iter().collect();
    checker.analyse(&h).expect("well-formed history")
}

pub(super) fn check(events: Vec<Event>) -> Findings {
    check_with(&RwRegister::new(), events)
}

/// The findings on `events`, which must be exactly the anomalies `names`.
pub(super) fn only(names: &[&str], events: Vec<Event>) -> Findings {
    let verdict = check(events);
    assert_eq!(verdict.anomaly_names(), names, "{verdict}");
    verdict
}

pub(super) fn the_cycle<'f>(verdict: &'f Findings, name: &str) -> &'f Cycle {
    verdict
        .anomalies
        .iter()
        .filter_map(|a| match a {
            RegisterAnomaly::Cycle(c) => Some(c),
            _ => None,
        })
        .find(|c| c.name() == name)
        .unwrap_or_else(|| panic!("no {name}: {verdict}"))
}

pub(super) fn edge_kinds(c: &Cycle) -> Vec<EdgeKind> {
    c.edges.iter().map(|e| e.kind).collect()
}
