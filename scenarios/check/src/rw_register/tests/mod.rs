//! The rw-register checker on a hand-made history per anomaly and on valid histories.

mod anomalies;
mod valid;

use super::{Findings, RegisterAnomaly, RwRegister};
use crate::elle::cycle::{Cycle, EdgeKind};
pub(super) use crate::elle::findings::Found;
use crate::history::{Event, F, History};

pub(super) use crate::elle::testing::{solo, txn};

pub(super) fn check_with(checker: &RwRegister, events: Vec<Event>) -> Findings {
    let h: History = events.into_iter().collect();
    checker.analyse(&h).expect("well-formed history")
}

pub(super) fn check(events: Vec<Event>) -> Findings {
    check_with(&RwRegister::new(), events)
}

/// The events of the corpus's case `name`.
pub(super) fn events(name: &str) -> Vec<Event> {
    super::corpus::case(name).events
}

/// The findings on the corpus's case `name`, which must be its anomalies.
pub(super) fn case(name: &str) -> Findings {
    let case = super::corpus::case(name);
    let verdict = check(case.events);
    assert_eq!(verdict.anomaly_names(), case.anomalies, "{verdict}");
    verdict
}

#[test]
fn every_case_of_the_corpus_has_its_anomalies() {
    for c in super::corpus::cases() {
        let verdict = check(c.events);
        assert_eq!(
            verdict.anomaly_names(),
            c.anomalies,
            "{}: {verdict}",
            c.name
        );
    }
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
