//! The result of a transactional check, whatever the workload: the model, the counts, every
//! anomaly found, and the verdict made of them.

use std::collections::BTreeSet;
use std::fmt;

use super::Consistency;
use super::cycle::{Cycle, CycleKind};
use crate::history::{Operation, Outcome};
use crate::verdict::{Anomaly, Role, Verdict};

/// One anomaly a transactional checker reports: a cycle, or one of the workload's own.
pub(crate) trait Found: fmt::Display {
    /// Its name, as Elle gives it (`G1a`, `G-single-realtime`, `internal`, …).
    fn name(&self) -> String;
    /// As a verdict reports it.
    fn reported(&self) -> Anomaly;
    /// The cycle, if it is one.
    fn cycle(&self) -> Option<&Cycle>;
}

/// The result of a check.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Findings<A> {
    /// The model checked.
    pub(crate) consistency: Consistency,
    /// Transactions by outcome: ok, fail, info.
    pub(crate) transactions: [usize; 3],
    /// Distinct keys.
    pub(crate) keys: usize,
    /// Edges in the dependency graph (after deduplication).
    pub(crate) edges: usize,
    /// Every anomaly found: the others by check, each in history order, then cycles by
    /// component.
    pub(crate) anomalies: Vec<A>,
}

impl<A: Found> Findings<A> {
    /// Whether no anomaly was found.
    pub(crate) fn is_valid(&self) -> bool {
        self.anomalies.is_empty()
    }

    /// The names of the anomalies found, sorted and without repeats.
    pub(crate) fn anomaly_names(&self) -> Vec<String> {
        let names: BTreeSet<String> = self.anomalies.iter().map(Found::name).collect();
        names.into_iter().collect()
    }

    /// Drops the write-skew cycles (G2-item), which snapshot isolation allows.
    pub(crate) fn allow_write_skew(&mut self) {
        self.anomalies
            .retain(|a| a.cycle().is_none_or(|c| c.kind != CycleKind::G2Item));
    }

    /// The report's first line.
    fn summary(&self) -> String {
        let [ok, fail, info] = self.transactions;
        let mut line = format!(
            "{} as {}: {} transactions ({ok} ok, {fail} fail, {info} info), {} keys, {} edges",
            if self.is_valid() { "valid" } else { "invalid" },
            self.consistency,
            ok + fail + info,
            self.keys,
            self.edges,
        );
        if !self.is_valid() {
            line.push_str(&format!("; anomalies: {}", self.anomaly_names().join(", ")));
        }
        line
    }

    /// As one verdict of `checker`, its anomalies by name (in history order within a name).
    pub(crate) fn verdict(&self, checker: String) -> Verdict {
        let mut anomalies: Vec<&A> = self.anomalies.iter().collect();
        anomalies.sort_by_key(|a| a.name());
        Verdict::new(
            checker,
            self.summary(),
            anomalies.into_iter().map(Found::reported).collect(),
        )
    }
}

impl<A: Found> fmt::Display for Findings<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.verdict(String::new()).report())
    }
}

/// Counts transactions by outcome: ok, fail, info.
pub(crate) fn outcomes(ops: impl IntoIterator<Item = Outcome>) -> [usize; 3] {
    let mut counts = [0; 3];
    for outcome in ops {
        counts[match outcome {
            Outcome::Ok => 0,
            Outcome::Fail => 1,
            Outcome::Info => 2,
        }] += 1;
    }
    counts
}

/// A read of `writer`'s write by `reader` that should not have happened (G1a, G1b), as a
/// verdict shows it: `a` with the two operations and the edge between them.
pub(crate) fn bad_read(a: Anomaly, reader: &Operation, writer: &Operation, why: String) -> Anomaly {
    a.op(reader.invoke.index, Role::Culprit, "reader")
        .op(writer.invoke.index, Role::Party, "writer")
        .link(writer.invoke.index, reader.invoke.index, "wr", "wr", why)
}

/// `a` with each of `txns` named `T0`, `T1`, … (a lost update's transactions).
pub(crate) fn parties(a: Anomaly, txns: &[Operation]) -> Anomaly {
    txns.iter().enumerate().fold(a, |a, (i, tx)| {
        a.op(tx.invoke.index, Role::Party, format!("T{i}"))
    })
}
