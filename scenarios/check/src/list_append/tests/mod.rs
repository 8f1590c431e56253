//! The list-append checker on a hand-made history per anomaly, valid histories, and generated
//! ones.

mod anomalies;
mod elle;
mod stream;
mod valid;

use super::parse::Parsed;
use super::stream::Blocks;
use super::{CheckError, EdgeKind, ElleAnomaly, Findings, ListAppend, check_list_append};
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

/// The findings on `history` written to a file and read back in blocks of a few lines, each
/// block parsed on several threads.
pub(super) fn streamed(history: &History) -> Result<Findings, CheckError> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("history.jsonl");
    history.write_file(&path).expect("the history written");
    streamed_file(&path)
}

/// The findings on the file at `path`, read in blocks of a few lines, each parsed on several
/// threads.
pub(super) fn streamed_file(path: &std::path::Path) -> Result<Findings, CheckError> {
    let blocks = Blocks {
        bytes: 512,
        parallel_from: 2,
    };
    Ok(ListAppend::new().findings(&Parsed::read_file(path, blocks)?))
}
