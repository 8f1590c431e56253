//! The commit of an Optimistic try as a sans-IO machine: one `multi`, and what to do when it
//! fails or its reply is lost.
//!
//! - **Applied** (one round trip): every check passed and every write landed.
//! - **Refused** (`BadVersion`/`NoNode` at operation `i`): nothing was written. The machine
//!   reads the refs again in the same step (the server that refused has applied the change
//!   that made us lose, so a plain read is current) and reports them, so that the next try
//!   starts with a fresh cache: [`CommitOutcome::Conflict`], or, when the first failing
//!   operation is a commuted ref's write (all the checks and plain writes before it passed),
//!   [`CommitOutcome::CommuteMoved`] with only the commuted refs read — the caller then
//!   recomputes those values and commits again, without running the body again.
//! - **Indeterminate** (connection loss, timeout): a `multi` of checks only is sent again
//!   (it changes nothing). One that writes is never sent again: the machine waits for the
//!   session to reconnect (or a short pause), `sync`s and reads the written refs, and looks
//!   for the commit's id in their headers (see [`super::envelope`]). Found: applied. Every
//!   version since accounted for by other commits: not applied
//!   ([`CommitOutcome::NotApplied`], a conflict). Otherwise [`CommitOutcome::Unknown`].
//! - **Session lost**: [`CommitOutcome::Failed`]; an in-flight commit may or may not have
//!   been applied.

use crate::coverage::{self, Mark};
use crate::machine::{Machine, Millis, Outbox, Reply, Request, Token};
use crate::{Error, ErrorClass, Op, OpResult, SessionState, WatchedEvent};

use super::cache::RefMap;
use super::envelope::{self, Envelope};
use super::read::{Node, RETRY_PAUSE_MS};

/// What a commit sends and how to judge its outcome.
///
/// ```
/// use avout::Op;
/// use avout::stm::optimistic::CommitSpec;
/// let spec = CommitSpec {
///     ops: vec![Op::check("/s/refs/a", Some(3))],
///     commute_from: 1,
///     txn: 9,
///     refresh: vec!["/s/refs/a".into()],
/// };
/// assert!(spec.read_only());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommitSpec {
    /// The `multi`: checks, then writes, then the commuted refs' writes. Writes are
    /// `SetData` with the version read.
    pub ops: Vec<Op>,
    /// Index of the first commuted ref's write (`ops.len()` if none).
    pub commute_from: usize,
    /// The commit's id, recorded in every node it writes.
    pub txn: u128,
    /// Every ref the try touched, read again after a refusal.
    pub refresh: Vec<String>,
}

impl CommitSpec {
    /// The commit of a try: first a `check` of the version read of every ref read or ensured
    /// and not written (`checks`: path and version), then a `set_data` conditional on the
    /// version read of every written ref, then the commuted refs' (`writes` and `commutes`:
    /// path, the node the value was computed from, the new value). Each written node records
    /// `txn` (for [lost replies](super#lost-replies)) and the value it replaces with that
    /// version's commit point, keeping at most `keep` previous values. `refresh` lists every
    /// ref the try touched, read again after a refusal.
    ///
    /// ```
    /// use avout::stm::optimistic::{CommitSpec, Node, initial_data, value_of};
    /// use avout::{Op, Stat};
    /// let base = Node { data: initial_data(b"1"), stat: Stat { version: 4, ..Stat::default() } };
    /// let spec = CommitSpec::of(
    ///     9,
    ///     0,
    ///     vec![("/s/refs/a".into(), 2)],
    ///     vec![("/s/refs/b".into(), base, b"2".to_vec())],
    ///     vec![],
    ///     vec!["/s/refs/a".into(), "/s/refs/b".into()],
    /// );
    /// assert_eq!(spec.ops[0], Op::check("/s/refs/a", Some(2)));
    /// assert!(matches!(&spec.ops[1], Op::SetData { version: Some(4), data, .. } if value_of(data) == b"2"));
    /// assert_eq!(spec.commute_from, 2);
    /// ```
    pub fn of(
        txn: u128,
        keep: usize,
        checks: Vec<(String, i32)>,
        writes: Vec<(String, Node, Vec<u8>)>,
        commutes: Vec<(String, Node, Vec<u8>)>,
        refresh: Vec<String>,
    ) -> CommitSpec {
        let mut ops: Vec<Op> = checks
            .into_iter()
            .map(|(path, version)| Op::check(path, Some(version)))
            .collect();
        let write = |(path, base, body): (String, Node, Vec<u8>)| {
            let previous = Envelope::parse(&base.data);
            let point = base.stat.mzxid as u64;
            let data = Envelope::next(txn, &previous, point, body, keep).to_bytes();
            Op::set_data(path, data, Some(base.stat.version))
        };
        ops.extend(writes.into_iter().map(write));
        let commute_from = ops.len();
        ops.extend(commutes.into_iter().map(write));
        CommitSpec {
            ops,
            commute_from,
            txn,
            refresh,
        }
    }

    /// The same commit, also creating `sends` (agent queue entries, see
    /// [`Tx::send`](crate::stm::Tx::send)), placed after the checks and before the writes: a
    /// refused send (its agent is gone) is then a conflict that ends the transaction, never a
    /// moved commute.
    ///
    /// ```
    /// use avout::{CreateMode, Op};
    /// use avout::stm::optimistic::CommitSpec;
    /// let spec = CommitSpec { ops: vec![Op::check("/s/refs/a", Some(1))], commute_from: 1, txn: 1, refresh: vec![] };
    /// let spec = spec.with_sends(vec![Op::create("/ag/queue/t-", vec![], CreateMode::PersistentSequential)]);
    /// assert_eq!((spec.ops.len(), spec.commute_from), (2, 2));
    /// assert!(!spec.read_only());
    /// ```
    pub fn with_sends(mut self, sends: Vec<Op>) -> CommitSpec {
        let at = self
            .ops
            .iter()
            .position(|op| !matches!(op, Op::Check { .. }))
            .unwrap_or(self.ops.len());
        self.commute_from += sends.len();
        self.ops.splice(at..at, sends);
        self
    }

    /// Whether the commit writes nothing (a `multi` of checks only).
    ///
    /// ```
    /// use avout::stm::optimistic::CommitSpec;
    /// let spec = CommitSpec { ops: vec![], commute_from: 0, txn: 1, refresh: vec![] };
    /// assert!(spec.read_only());
    /// ```
    pub fn read_only(&self) -> bool {
        self.ops.iter().all(|op| matches!(op, Op::Check { .. }))
    }

    /// The written paths and the versions their writes expect.
    fn written(&self) -> Vec<(String, i32)> {
        self.ops
            .iter()
            .filter_map(|op| match op {
                Op::SetData { path, version, .. } => {
                    Some((path.clone(), version.expect("writes are conditional")))
                }
                _ => None,
            })
            .collect()
    }
}

/// How a commit ended; every `current` list pairs paths with the node now (`None`: gone).
///
/// ```
/// use avout::stm::optimistic::CommitOutcome;
/// let o = CommitOutcome::Unknown { detail: "x".into() };
/// assert!(matches!(o, CommitOutcome::Unknown { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CommitOutcome {
    /// The commit took effect. `results` are the `multi`'s (empty after a recovery);
    /// `recovered` the written refs as read by the recovery, if the reply was lost.
    Applied {
        /// The results of the operations.
        results: Vec<OpResult>,
        /// After a lost reply: the written refs as read when deciding.
        recovered: Option<Vec<(String, Option<Node>)>>,
    },
    /// Operation `index` failed: nothing written. `current` holds the refreshed refs (empty
    /// if the refresh itself failed).
    Conflict {
        /// The first failing operation.
        index: usize,
        /// Its error.
        error: Error,
        /// The refs, read again.
        current: Vec<(String, Option<Node>)>,
    },
    /// Only a commuted ref's write failed: recompute and commit again. `current` holds the
    /// commuted refs, read again (empty if that failed).
    CommuteMoved {
        /// The first failing operation.
        index: usize,
        /// The refs, read again.
        current: Vec<(String, Option<Node>)>,
    },
    /// The reply was lost and the commit, it turned out, was not applied.
    NotApplied {
        /// The written refs as read when deciding.
        current: Vec<(String, Option<Node>)>,
    },
    /// The reply was lost and whether the commit was applied cannot be told.
    Unknown {
        /// What was seen.
        detail: String,
    },
    /// Refused for another reason, or the session was lost.
    Failed(Error),
}

/// What a try does once its commit has ended; see [`CommitOutcome::settle`].
///
/// ```
/// use avout::stm::optimistic::{CommitOutcome, RefMap, Settled};
/// let outcome = CommitOutcome::Unknown { detail: "x".into() };
/// assert_eq!(outcome.settle(&mut RefMap::default(), &[], &[], str::to_owned), Settled::Unknown);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Settled {
    /// The transaction committed.
    Committed,
    /// Only commuted refs moved: recompute their values and commit again (the body does not
    /// run again), after reading the commuted refs if `read` (their refresh failed).
    Recompute {
        /// Read the commuted refs first.
        read: bool,
    },
    /// Refused (a conflict), or a lost commit found not applied: the body runs again.
    Retry,
    /// A ref the try touched was deleted: the transaction fails (`NoRef`).
    Deleted,
    /// A lost commit could not be decided: the transaction fails (`Indeterminate`).
    Unknown,
    /// The commit failed (session lost, or another refusal): the transaction fails.
    Failed,
}

impl CommitOutcome {
    /// Updates the handle's cache after a commit of `ops` ended this way and says what the try
    /// does next: an applied commit's written nodes (or, after a lost reply, the refs as the
    /// recovery read them) are remembered; the refs read again after a refusal or a lost
    /// reply are remembered; when the refresh failed, or the outcome is in doubt, the refs
    /// the try touched (`touched`, cache keys) are forgotten, so the next try reads them.
    /// `key` turns a node's path into its cache key.
    ///
    /// ```
    /// use avout::stm::optimistic::{CommitOutcome, Node, RefMap, Settled};
    /// use avout::{Error, Stat};
    /// let node = Node { data: b"x".to_vec(), stat: Stat { version: 3, ..Stat::default() } };
    /// let refused = CommitOutcome::Conflict {
    ///     index: 0,
    ///     error: Error::BadVersion { path: "/s/refs/a".into() },
    ///     current: vec![("/s/refs/a".into(), Some(node))],
    /// };
    /// let mut cache = RefMap::default();
    /// let key = |p: &str| p.trim_start_matches("/s/refs/").to_owned();
    /// assert_eq!(refused.settle(&mut cache, &[], &["a".into()], key), Settled::Retry);
    /// assert_eq!(cache.get("a").unwrap().stat.version, 3);
    /// ```
    pub fn settle(
        &self,
        cache: &mut RefMap,
        ops: &[Op],
        touched: &[String],
        key: impl Fn(&str) -> String,
    ) -> Settled {
        let keyed = |current: &[(String, Option<Node>)]| -> Vec<(String, Option<Node>)> {
            current
                .iter()
                .map(|(path, node)| (key(path), node.clone()))
                .collect()
        };
        match self {
            CommitOutcome::Applied { results, recovered } => {
                match recovered {
                    Some(current) => cache.remember(keyed(current)),
                    None => cache.remember(keyed(&written_nodes(ops, results))),
                }
                Settled::Committed
            }
            CommitOutcome::CommuteMoved { current, .. } => {
                cache.remember(keyed(current));
                Settled::Recompute {
                    read: current.is_empty(),
                }
            }
            CommitOutcome::Conflict { error, current, .. } => {
                if current.is_empty() {
                    cache.forget(touched);
                }
                if matches!(error, Error::NoNode { .. }) {
                    return Settled::Deleted;
                }
                cache.remember(keyed(current));
                Settled::Retry
            }
            CommitOutcome::NotApplied { current } => {
                cache.remember(keyed(current));
                Settled::Retry
            }
            CommitOutcome::Unknown { .. } => {
                cache.forget(touched);
                Settled::Unknown
            }
            CommitOutcome::Failed(_) => {
                cache.forget(touched);
                Settled::Failed
            }
        }
    }
}

/// The written refs' nodes after an applied `multi`: the data sent and the stat returned.
fn written_nodes(ops: &[Op], results: &[OpResult]) -> Vec<(String, Option<Node>)> {
    ops.iter()
        .zip(results)
        .filter_map(|(op, result)| match (op, result) {
            (Op::SetData { path, data, .. }, OpResult::SetData { stat }) => Some((
                path.clone(),
                Some(Node {
                    data: data.clone(),
                    stat: *stat,
                }),
            )),
            _ => None,
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Start,
    Committing(Token),
    Refreshing {
        index: usize,
        error: Error,
        commute: bool,
        first: Token,
        paths: Vec<String>,
        got: Vec<Option<Option<Node>>>,
    },
    /// After a lost reply, waiting to resend (checks only) or to recover.
    Paused {
        until: Millis,
    },
    Recovering {
        first: Token,
        got: Vec<Option<Option<Node>>>,
    },
    Done,
}

/// Runs one commit; see the module docs.
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::stm::optimistic::{CommitMachine, CommitSpec};
/// use avout::{Op, SessionState};
///
/// let spec = CommitSpec {
///     ops: vec![Op::set_data("/s/refs/a", b"v".to_vec(), Some(4))],
///     commute_from: 1,
///     txn: 9,
///     refresh: vec!["/s/refs/a".into()],
/// };
/// let mut m = CommitMachine::new(spec);
/// m.handle_session(Millis(0), SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::Multi(ops))) if ops.len() == 1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommitMachine {
    spec: CommitSpec,
    phase: Phase,
    outbox: Outbox<()>,
    output: Option<CommitOutcome>,
    /// Whether a reply was lost (the outcome then came from a recovery read).
    recovered: bool,
}

impl CommitMachine {
    /// A machine that commits `spec`.
    ///
    /// ```
    /// use avout::stm::optimistic::{CommitMachine, CommitSpec};
    /// let m = CommitMachine::new(CommitSpec { ops: vec![], commute_from: 0, txn: 1, refresh: vec![] });
    /// assert!(!m.recovered());
    /// ```
    pub fn new(spec: CommitSpec) -> Self {
        CommitMachine {
            spec,
            phase: Phase::Start,
            outbox: Outbox::default(),
            output: None,
            recovered: false,
        }
    }

    /// Whether the commit's reply was lost and its outcome decided by reading.
    ///
    /// ```
    /// use avout::stm::optimistic::{CommitMachine, CommitSpec};
    /// let m = CommitMachine::new(CommitSpec { ops: vec![], commute_from: 0, txn: 1, refresh: vec![] });
    /// assert!(!m.recovered());
    /// ```
    pub fn recovered(&self) -> bool {
        self.recovered
    }

    fn finish(&mut self, outcome: CommitOutcome) {
        self.phase = Phase::Done;
        self.outbox.clear();
        self.output = Some(outcome);
    }

    fn commit(&mut self) {
        let token = self.outbox.send(Request::Multi(self.spec.ops.clone()));
        self.phase = Phase::Committing(token);
    }

    /// Sends reads of `paths` back to back; returns the first token.
    fn read_all(&mut self, paths: &[String], sync: bool) -> Token {
        if sync && let Some(p) = paths.first() {
            self.outbox.send(Request::Sync { path: p.clone() });
        }
        let mut first = None;
        for path in paths {
            let t = self.outbox.send(Request::GetData {
                path: path.clone(),
                watch: false,
            });
            first.get_or_insert(t);
        }
        first.unwrap_or(Token(u64::MAX))
    }

    fn refused(&mut self, index: usize, error: Error) {
        let commute = index >= self.spec.commute_from;
        let paths: Vec<String> = if commute {
            self.spec.ops[self.spec.commute_from..]
                .iter()
                .map(|op| op.path().to_owned())
                .collect()
        } else {
            self.spec.refresh.clone()
        };
        if paths.is_empty() {
            return self.refreshed(index, error, commute, Vec::new());
        }
        let first = self.read_all(&paths, false);
        let n = paths.len();
        self.phase = Phase::Refreshing {
            index,
            error,
            commute,
            first,
            paths,
            got: vec![None; n],
        };
    }

    fn refreshed(
        &mut self,
        index: usize,
        error: Error,
        commute: bool,
        current: Vec<(String, Option<Node>)>,
    ) {
        self.finish(if commute {
            CommitOutcome::CommuteMoved { index, current }
        } else {
            CommitOutcome::Conflict {
                index,
                error,
                current,
            }
        });
    }

    fn lost(&mut self, now: Millis) {
        self.outbox.clear();
        self.phase = Phase::Paused {
            until: now.plus(RETRY_PAUSE_MS),
        };
    }

    fn resume(&mut self) {
        if self.spec.read_only() {
            // Checks change nothing: sending them again is safe.
            return self.commit();
        }
        self.recovered = true;
        let paths: Vec<String> = self.spec.written().into_iter().map(|(p, _)| p).collect();
        let n = paths.len();
        let first = self.read_all(&paths, true);
        self.phase = Phase::Recovering {
            first,
            got: vec![None; n],
        };
    }

    fn decide(&mut self, nodes: Vec<Option<Node>>) {
        let written = self.spec.written();
        let current: Vec<(String, Option<Node>)> =
            written.iter().map(|(p, _)| p.clone()).zip(nodes).collect();
        let mut verdicts = Vec::new();
        for ((_, expected), (path, node)) in written.iter().zip(&current) {
            let verdict = match node {
                Some(n) => envelope::took_effect(self.spec.txn, *expected, n.stat.version, &n.data),
                // Refs are never deleted by the STM: a deleted one tells nothing.
                None => None,
            };
            verdicts.push((
                path.clone(),
                *expected,
                node.as_ref().map(|n| n.stat.version),
                verdict,
            ));
        }
        if verdicts.iter().any(|v| v.3 == Some(true)) {
            coverage::reach(Mark::StmOptimisticCommitLostApplied);
            return self.finish(CommitOutcome::Applied {
                results: Vec::new(),
                recovered: Some(current),
            });
        }
        if verdicts.iter().any(|v| v.3 == Some(false)) {
            // The multi is atomic: one write known not to have landed means none did.
            coverage::reach(Mark::StmOptimisticCommitLostNotApplied);
            return self.finish(CommitOutcome::NotApplied { current });
        }
        let detail = verdicts
            .iter()
            .map(|(p, e, f, _)| format!("{p}: sent against version {e}, found {f:?}"))
            .collect::<Vec<_>>()
            .join("; ");
        coverage::reach(Mark::StmOptimisticCommitLostUnknown);
        self.finish(CommitOutcome::Unknown { detail });
    }
}

/// Fills `got[i]` from a reply to read `i`; returns `Err` with the error if it failed.
fn take_read(reply: crate::Result<Reply>) -> Result<Option<Node>, Error> {
    match reply {
        Ok(Reply::Data { data, stat }) => Ok(Some(Node { data, stat })),
        Err(Error::NoNode { .. }) => Ok(None),
        Err(e) => Err(e),
        Ok(other) => unreachable!("a read replied {other:?}"),
    }
}

impl Machine for CommitMachine {
    type Output = CommitOutcome;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match &mut self.phase {
            Phase::Committing(t) if *t == token => match reply {
                Ok(Reply::Multi(results)) => self.finish(CommitOutcome::Applied {
                    results,
                    recovered: None,
                }),
                Ok(other) => unreachable!("a multi replied {other:?}"),
                Err(e) => match (&e, e.class()) {
                    (_, ErrorClass::Indeterminate) => self.lost(now),
                    (Error::Multi { index, source }, ErrorClass::Rejected)
                        if matches!(**source, Error::BadVersion { .. } | Error::NoNode { .. }) =>
                    {
                        let (index, source) = (*index, (**source).clone());
                        self.refused(index, source);
                    }
                    _ => self.finish(CommitOutcome::Failed(e)),
                },
            },
            Phase::Refreshing {
                first, paths, got, ..
            } if token.0 >= first.0 && token.0 < first.0 + paths.len() as u64 => {
                let i = (token.0 - first.0) as usize;
                match take_read(reply) {
                    Ok(node) => got[i] = Some(node),
                    // A lost session ends the transaction: retrying would only fail again
                    // (and, at the retry limit, report the limit instead of the session).
                    Err(e) if e.is_session_lost() => {
                        return self.finish(CommitOutcome::Failed(e));
                    }
                    // The refresh only warms the cache: without it the next try reads.
                    Err(_) => got.clear(),
                }
                if got.is_empty() || got.iter().all(Option::is_some) {
                    let Phase::Refreshing {
                        index,
                        error,
                        commute,
                        paths,
                        got,
                        ..
                    } = std::mem::replace(&mut self.phase, Phase::Done)
                    else {
                        unreachable!()
                    };
                    let current = if got.is_empty() {
                        Vec::new()
                    } else {
                        paths
                            .into_iter()
                            .zip(got.into_iter().map(|n| n.expect("all in")))
                            .collect()
                    };
                    self.refreshed(index, error, commute, current);
                }
            }
            Phase::Recovering { first, got }
                if token.0 >= first.0 && token.0 < first.0 + got.len() as u64 =>
            {
                let i = (token.0 - first.0) as usize;
                match take_read(reply) {
                    Ok(node) => got[i] = Some(node),
                    Err(e) => {
                        return match e.class() {
                            ErrorClass::Indeterminate => self.lost(now),
                            _ => self.finish(CommitOutcome::Failed(e)),
                        };
                    }
                }
                if got.iter().all(Option::is_some) {
                    let nodes = got.drain(..).map(|n| n.expect("all in")).collect();
                    self.decide(nodes);
                }
            }
            // The sync's reply, or a reply superseded by a pause.
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, _token: Token, _event: WatchedEvent) {}

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        if let Some(error) = state.terminal_error() {
            if self.phase != Phase::Done {
                self.finish(CommitOutcome::Failed(error));
            }
            return;
        }
        match self.phase {
            Phase::Start => self.commit(),
            Phase::Paused { .. } if state == SessionState::Connected => self.resume(),
            _ => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Phase::Paused { until } = self.phase
            && now >= until
        {
            self.resume();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        match self.phase {
            Phase::Paused { until } => Some(until),
            _ => None,
        }
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.output.take()
    }
}

#[cfg(test)]
#[path = "commit_tests.rs"]
mod tests;
