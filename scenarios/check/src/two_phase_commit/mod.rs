//! The two-phase-commit checker: atomic commitment.
//!
//! # History format
//!
//! A coordinator begins each transaction for a set of sites; each site joins, then votes or
//! leaves; anyone may learn the outcome:
//!
//! ```text
//! {"type":"invoke","process":0,"f":"begin","value":{"tx":3,"sites":["c1","c2"]}}
//! {"type":"ok","process":0,"f":"begin","value":{"tx":3,"sites":["c1","c2"]}}
//! {"type":"invoke","process":1,"f":"join","value":{"tx":3,"site":"c1"}}
//! {"type":"ok","process":1,"f":"join","value":{"tx":3,"site":"c1"}}
//! {"type":"invoke","process":1,"f":"vote","value":{"tx":3,"site":"c1","vote":"commit"}}
//! {"type":"ok","process":1,"f":"vote","value":{"tx":3,"site":"c1","vote":"commit"}}
//! {"type":"invoke","process":2,"f":"leave","value":{"tx":3,"site":"c2"}}
//! {"type":"ok","process":2,"f":"leave","value":{"tx":3,"site":"c2"}}
//! {"type":"invoke","process":0,"f":"outcome","value":{"tx":3}}
//! {"type":"ok","process":0,"f":"outcome","value":{"tx":3,"outcome":"abort"}}
//! {"type":"invoke","process":1,"f":"outcome","value":{"tx":3,"site":"c1"}}
//! {"type":"ok","process":1,"f":"outcome","value":{"tx":3,"site":"c1","outcome":"abort"}}
//! ```
//!
//! - Every invocation names its transaction, `tx` (an integer or a string).
//! - `begin`: `sites` lists the transaction's sites. Its completion does not matter.
//! - `join` and `leave`: `site` names the site. Leaving before voting is a site vanishing.
//! - `vote`: `vote` is `"commit"` or `"abort"`. `ok` and `info` votes may have taken effect;
//!   a `fail` vote surely did not (the site was no longer present, for instance).
//! - `outcome`: a participant learning the decision. The invocation names the site that asks
//!   (`site`), or none for the coordinator; an `ok` completion says what it learned, in an
//!   `outcome` field (`"commit"` or `"abort"`) or as the whole value. Other completions
//!   learned nothing.
//!
//! # What is checked
//!
//! For every transaction:
//! - **agreement**: every participant that learned an outcome learned the coordinator's (or,
//!   when the coordinator learned none, the first one learned);
//! - **no participant is told two different outcomes**;
//! - **commit only if every site voted commit**: when anyone learned commit, every site the
//!   `begin` named (the sites seen in the history, if no `begin` is) has a commit vote that
//!   may have taken effect;
//! - **an abort vote, or a site that left before voting, never yields commit**: a commit
//!   learned while a site has an abort vote that may have taken effect, or left before any
//!   commit vote of its own was invoked, is reported as such rather than as a missing vote.
//!
//! A transaction nobody learned the outcome of is undecided, which is not a violation: the
//! scenario's deadline judges liveness.
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::two_phase_commit::TwoPhaseCommit;
//! use avout_check::history::{Event, History, F};
//! use serde_json::json;
//! let f = |s: &str| F::Other(s.into());
//! // Site c1 voted abort, yet the coordinator learned commit.
//! let h: History = [
//!     Event::invoke(0, f("begin"), json!({"tx": 1, "sites": ["c1"]})),
//!     Event::ok(0, f("begin"), json!({"tx": 1, "sites": ["c1"]})),
//!     Event::invoke(1, f("vote"), json!({"tx": 1, "site": "c1", "vote": "abort"})),
//!     Event::ok(1, f("vote"), json!({"tx": 1, "site": "c1", "vote": "abort"})),
//!     Event::invoke(0, f("outcome"), json!({"tx": 1})),
//!     Event::ok(0, f("outcome"), "commit".into()),
//! ]
//! .into_iter()
//! .collect();
//! let verdict = TwoPhaseCommit.check(&h).unwrap();
//! assert_eq!(verdict.kinds(), vec!["commit-despite-abort"]);
//! assert_eq!(verdict.anomalies[0].ops[0].label, "the coordinator learned commit");
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use crate::checker::{CheckError, Checker};
use crate::history::{History, Keys, Operation, Outcome};
use crate::verdict::{Anomaly, Role, Verdict};

/// Who learned an outcome.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Participant {
    /// The transaction's coordinator.
    Coordinator,
    /// A site, by name.
    Site(String),
}

impl fmt::Display for Participant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Participant::Coordinator => f.write_str("the coordinator"),
            Participant::Site(name) => write!(f, "site {name}"),
        }
    }
}

/// A transaction's outcome, as a site votes it and a participant learns it.
///
/// ```
/// use avout_check::two_phase_commit::Decision;
/// assert_eq!(Decision::parse("abort"), Some(Decision::Abort));
/// assert_eq!(Decision::Commit.name(), "commit");
/// assert_eq!(Decision::parse("maybe"), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Every site voted commit.
    Commit,
    /// A site voted abort, a site left before voting, or the coordinator aborted.
    Abort,
}

impl Decision {
    /// How a history writes it.
    pub fn name(self) -> &'static str {
        match self {
            Decision::Commit => "commit",
            Decision::Abort => "abort",
        }
    }

    /// Reads a history's `"commit"` or `"abort"`.
    pub fn parse(s: &str) -> Option<Decision> {
        match s {
            "commit" => Some(Decision::Commit),
            "abort" => Some(Decision::Abort),
            _ => None,
        }
    }
}

/// An outcome some participant learned: an `ok` `outcome` operation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Learned {
    /// Who learned it.
    pub(crate) who: Participant,
    /// What they learned.
    pub(crate) outcome: Decision,
    /// The `outcome` operation.
    pub(crate) op: Operation,
}

impl fmt::Display for Learned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} learned {} (process {}, line {})",
            self.who,
            Decision::name(self.outcome),
            self.op.process,
            self.op.complete.map_or(self.op.invoke.line, |c| c.line)
        )
    }
}

/// A breach of atomic commitment in one transaction.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TwoPhaseViolation {
    /// Two participants learned different outcomes.
    Disagreement {
        /// The transaction.
        tx: String,
        /// The coordinator's outcome, or the first learned when it learned none.
        reference: Box<Learned>,
        /// The participant that learned otherwise.
        other: Box<Learned>,
    },
    /// One participant was told two different outcomes.
    ToldTwice {
        /// The transaction.
        tx: String,
        /// What it learned first.
        first: Box<Learned>,
        /// What it learned later.
        second: Box<Learned>,
    },
    /// A commit, but a site has no commit vote that may have taken effect.
    CommitWithoutVote {
        /// The transaction.
        tx: String,
        /// The site without a commit vote.
        site: String,
        /// The commit learned.
        commit: Box<Learned>,
    },
    /// A commit, but a site voted abort.
    CommitDespiteAbort {
        /// The transaction.
        tx: String,
        /// The site.
        site: String,
        /// Its abort vote (`ok` or `info`).
        vote: Operation,
        /// The commit learned.
        commit: Box<Learned>,
    },
    /// A commit, but a site left before voting.
    CommitAfterLeave {
        /// The transaction.
        tx: String,
        /// The site.
        site: String,
        /// Its `leave`, invoked before any commit vote of its own.
        leave: Operation,
        /// The commit learned.
        commit: Box<Learned>,
    },
}

impl TwoPhaseViolation {
    /// A short name: `disagreement`, `told-twice`, `commit-without-vote`,
    /// `commit-despite-abort` or `commit-after-leave`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            TwoPhaseViolation::Disagreement { .. } => "disagreement",
            TwoPhaseViolation::ToldTwice { .. } => "told-twice",
            TwoPhaseViolation::CommitWithoutVote { .. } => "commit-without-vote",
            TwoPhaseViolation::CommitDespiteAbort { .. } => "commit-despite-abort",
            TwoPhaseViolation::CommitAfterLeave { .. } => "commit-after-leave",
        }
    }
}

impl fmt::Display for TwoPhaseViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TwoPhaseViolation::Disagreement {
                tx,
                reference,
                other,
            } => write!(f, "disagreement in tx {tx}: {other}, but {reference}"),
            TwoPhaseViolation::ToldTwice { tx, first, second } => {
                write!(f, "told-twice in tx {tx}: {first}, then {second}")
            }
            TwoPhaseViolation::CommitWithoutVote { tx, site, commit } => write!(
                f,
                "commit-without-vote in tx {tx}: {commit}, but site {site} has no commit vote \
                 that may have taken effect"
            ),
            TwoPhaseViolation::CommitDespiteAbort {
                tx,
                site,
                vote,
                commit,
            } => write!(
                f,
                "commit-despite-abort in tx {tx}: {commit}, but site {site} voted abort ({vote})"
            ),
            TwoPhaseViolation::CommitAfterLeave {
                tx,
                site,
                leave,
                commit,
            } => write!(
                f,
                "commit-after-leave in tx {tx}: {commit}, but site {site} left before voting \
                 ({leave})"
            ),
        }
    }
}

/// The result of a two-phase-commit check.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Findings {
    /// Transactions seen.
    pub(crate) transactions: usize,
    /// Transactions someone learned commit of.
    pub(crate) committed: usize,
    /// Transactions someone learned the outcome of, all of them abort.
    pub(crate) aborted: usize,
    /// Every breach found, transaction by transaction in order of first appearance.
    pub(crate) violations: Vec<TwoPhaseViolation>,
}

impl Findings {
    /// Whether no breach was found.
    pub(crate) fn is_valid(&self) -> bool {
        self.violations.is_empty()
    }

    /// Transactions nobody learned the outcome of.
    pub(crate) fn undecided(&self) -> usize {
        self.transactions - self.committed - self.aborted
    }
}

impl Findings {
    /// The report's first line.
    fn summary(&self) -> String {
        format!(
            "{}: {} transactions ({} committed, {} aborted, {} undecided), {} violations",
            if self.is_valid() { "valid" } else { "invalid" },
            self.transactions,
            self.committed,
            self.aborted,
            self.undecided(),
            self.violations.len()
        )
    }

    /// As one verdict.
    fn verdict(&self) -> Verdict {
        Verdict::new(
            TwoPhaseCommit.name(),
            self.summary(),
            self.violations
                .iter()
                .map(TwoPhaseViolation::reported)
                .collect(),
        )
    }
}

impl fmt::Display for Findings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.verdict().report())
    }
}

impl Learned {
    /// `site c1 learned commit`.
    fn label(&self) -> String {
        format!("{} learned {}", self.who, self.outcome.name())
    }
}

impl TwoPhaseViolation {
    /// As a verdict reports it: the outcomes learned, and the vote or leave they contradict.
    fn reported(&self) -> Anomaly {
        let a = Anomaly::new(self.name(), self.to_string());
        let learned = |a: Anomaly, l: &Learned, role| a.op(l.op.invoke.index, role, l.label());
        match self {
            TwoPhaseViolation::Disagreement {
                reference, other, ..
            } => learned(learned(a, other, Role::Culprit), reference, Role::Party),
            TwoPhaseViolation::ToldTwice { first, second, .. } => {
                learned(learned(a, second, Role::Culprit), first, Role::Party)
            }
            TwoPhaseViolation::CommitWithoutVote { commit, .. } => {
                learned(a, commit, Role::Culprit)
            }
            TwoPhaseViolation::CommitDespiteAbort { vote, commit, .. } => {
                learned(a, commit, Role::Culprit).op(vote.invoke.index, Role::Party, "abort vote")
            }
            TwoPhaseViolation::CommitAfterLeave { leave, commit, .. } => {
                learned(a, commit, Role::Culprit).op(leave.invoke.index, Role::Party, "left")
            }
        }
    }
}

/// The two-phase-commit checker (`two-phase-commit`): atomic commitment (see the [module
/// docs](self)).
#[derive(Clone, Copy, Debug, Default)]
pub struct TwoPhaseCommit;

impl Checker for TwoPhaseCommit {
    fn name(&self) -> String {
        "two-phase-commit (atomic commitment)".to_owned()
    }

    fn check(&self, history: &History) -> Result<Verdict, CheckError> {
        Ok(check_two_phase_commit(history)?.verdict())
    }
}

/// What the history says of one transaction.
#[derive(Default)]
struct Tx {
    /// The sites its `begin`s named; `None` if it has no `begin`.
    sites: Option<BTreeSet<String>>,
    /// Sites seen joining, voting or leaving.
    seen: BTreeSet<String>,
    votes: Vec<(String, Decision, Operation)>,
    leaves: Vec<(String, Operation)>,
    learned: Vec<Learned>,
}

fn malformed(line: usize, value: &Value, expected: &'static str) -> CheckError {
    CheckError::malformed(line, value, expected)
}

fn tx_of(op: &Operation) -> Result<String, CheckError> {
    match &op.value["tx"] {
        Value::Number(n) => Ok(n.to_string()),
        Value::String(s) => Ok(s.clone()),
        _ => Err(malformed(
            op.invoke.line,
            &op.value,
            "an object with a transaction \"tx\" (an integer or a string)",
        )),
    }
}

fn site_of(op: &Operation) -> Result<String, CheckError> {
    op.value["site"].as_str().map(str::to_owned).ok_or_else(|| {
        malformed(
            op.invoke.line,
            &op.value,
            "an object with a site name \"site\"",
        )
    })
}

fn parse_decision(value: &Value, line: usize) -> Result<Decision, CheckError> {
    value
        .as_str()
        .and_then(Decision::parse)
        .ok_or_else(|| malformed(line, value, "\"commit\" or \"abort\""))
}

/// Checks a two-phase-commit history (format in the [module docs](self)).
pub(crate) fn check_two_phase_commit(history: &History) -> Result<Findings, CheckError> {
    let events = history.events();
    // Transactions in order of first appearance, so reports follow the history.
    let mut order: Vec<String> = Vec::new();
    let mut txs: BTreeMap<String, Tx> = BTreeMap::new();
    for op in history.operations(Keys::Field)? {
        let line = op.invoke.line;
        if !["begin", "join", "leave", "vote", "outcome"].contains(&op.f.as_str()) {
            return Err(CheckError::Unsupported {
                line,
                f: op.f.clone(),
                model: "two-phase-commit",
                known: "begin, join, vote, leave, outcome",
            });
        }
        let tx_name = tx_of(&op)?;
        if !txs.contains_key(&tx_name) {
            order.push(tx_name.clone());
        }
        let tx = txs.entry(tx_name).or_default();
        match op.f.as_str() {
            "begin" => {
                let sites = op.value["sites"]
                    .as_array()
                    .and_then(|a| {
                        a.iter()
                            .map(|s| s.as_str().map(str::to_owned))
                            .collect::<Option<Vec<String>>>()
                    })
                    .ok_or_else(|| {
                        malformed(
                            line,
                            &op.value,
                            "an object with a list of site names \"sites\"",
                        )
                    })?;
                tx.sites.get_or_insert_with(BTreeSet::new).extend(sites);
            }
            "join" => {
                tx.seen.insert(site_of(&op)?);
            }
            "leave" => {
                let site = site_of(&op)?;
                tx.seen.insert(site.clone());
                tx.leaves.push((site, op));
            }
            "vote" => {
                let site = site_of(&op)?;
                let vote = parse_decision(&op.value["vote"], line)?;
                tx.seen.insert(site.clone());
                tx.votes.push((site, vote, op));
            }
            "outcome" => {
                let who = match &op.value["site"] {
                    Value::Null => Participant::Coordinator,
                    Value::String(s) => Participant::Site(s.clone()),
                    _ => return Err(malformed(line, &op.value, "a site name or nothing")),
                };
                // The decision is on the completion (the invocation names who asks).
                if op.outcome == Outcome::Ok
                    && let Some(done) = op.complete
                {
                    let value = &events[done.index].value;
                    let outcome = parse_decision(value.get("outcome").unwrap_or(value), done.line)?;
                    tx.learned.push(Learned { who, outcome, op });
                }
            }
            other => unreachable!("{other} was checked to be an operation of the model"),
        }
    }
    let mut verdict = Findings {
        transactions: order.len(),
        committed: 0,
        aborted: 0,
        violations: Vec::new(),
    };
    for name in order {
        let tx = &txs[&name];
        judge(&name, tx, &mut verdict);
    }
    Ok(verdict)
}

/// A site's votes of `vote` that may have taken effect (`ok` or `info`).
fn may_have_voted<'a>(
    tx: &'a Tx,
    site: &'a str,
    vote: Decision,
) -> impl Iterator<Item = &'a Operation> + 'a {
    tx.votes
        .iter()
        .filter(move |(s, v, op)| s == site && *v == vote && op.outcome != Outcome::Fail)
        .map(|(_, _, op)| op)
}

fn judge(name: &str, tx: &Tx, verdict: &mut Findings) {
    let violations = &mut verdict.violations;
    let mut first_of: BTreeMap<&Participant, &Learned> = BTreeMap::new();
    for l in &tx.learned {
        match first_of.get(&l.who) {
            None => {
                first_of.insert(&l.who, l);
            }
            Some(first) if first.outcome != l.outcome => {
                violations.push(TwoPhaseViolation::ToldTwice {
                    tx: name.to_owned(),
                    first: Box::new((*first).clone()),
                    second: Box::new(l.clone()),
                })
            }
            Some(_) => {}
        }
    }
    let reference = tx
        .learned
        .iter()
        .find(|l| l.who == Participant::Coordinator)
        .or(tx.learned.first());
    if let Some(reference) = reference {
        for l in &tx.learned {
            if l.who != reference.who && l.outcome != reference.outcome {
                violations.push(TwoPhaseViolation::Disagreement {
                    tx: name.to_owned(),
                    reference: Box::new(reference.clone()),
                    other: Box::new(l.clone()),
                });
            }
        }
    }
    let Some(commit) = tx.learned.iter().find(|l| l.outcome == Decision::Commit) else {
        if !tx.learned.is_empty() {
            verdict.aborted += 1;
        }
        return;
    };
    verdict.committed += 1;
    let sites = tx.sites.as_ref().unwrap_or(&tx.seen);
    for site in sites {
        let violation = if let Some(vote) = may_have_voted(tx, site, Decision::Abort).next() {
            TwoPhaseViolation::CommitDespiteAbort {
                tx: name.to_owned(),
                site: site.clone(),
                vote: vote.clone(),
                commit: Box::new(commit.clone()),
            }
        } else if let Some((_, leave)) = tx.leaves.iter().find(|(s, leave)| {
            s == site
                && !may_have_voted(tx, site, Decision::Commit)
                    .any(|v| v.invoke.index < leave.invoke.index)
        }) {
            TwoPhaseViolation::CommitAfterLeave {
                tx: name.to_owned(),
                site: site.clone(),
                leave: leave.clone(),
                commit: Box::new(commit.clone()),
            }
        } else if may_have_voted(tx, site, Decision::Commit).next().is_none() {
            TwoPhaseViolation::CommitWithoutVote {
                tx: name.to_owned(),
                site: site.clone(),
                commit: Box::new(commit.clone()),
            }
        } else {
            continue;
        };
        violations.push(violation);
    }
}

#[cfg(test)]
mod tests;
