//! What a try is told and what it answers: its configuration, the commit order, the outcome
//! of a command and the counts the engine keeps.

use super::super::super::protocol::Change;
use super::super::{Halt, Newest};

/// Who a try is: what [`TryMachine::new`](super::TryMachine::new) needs.
///
/// ```
/// let c = avout::stm::mvcc::TryConfig { root: "/s".into(), guid: 7, session: 3, age: None, max_history: 10, planted: avout::planted::Bugs::NONE };
/// assert!(c.age.is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TryConfig {
    /// The STM's root.
    pub root: String,
    /// The try's GUID: with the age, its transaction id.
    pub guid: u128,
    /// This session's id (lock nodes are recognised by their owner).
    pub session: i64,
    /// The transaction's age (its first try's read point), if an earlier try fixed it.
    pub age: Option<i64>,
    /// History values kept per ref (`StmConfig::max_history`).
    pub max_history: usize,
    /// The bugs planted in the try and its steps (`StmConfig::planted`).
    pub planted: crate::planted::Bugs,
}

/// What a try commits: [`CommitPlan`](crate::stm::protocol::CommitPlan) without the commute
/// functions, which the caller runs when asked ([`Outcome::Recompute`]).
///
/// ```
/// let o = avout::stm::mvcc::CommitOrder { writes: vec![("a".into(), b"1".to_vec())], commutes: vec![], lock: vec![("a".into(), 9)], may_barge: true, sends: vec![] };
/// assert_eq!(o.lock.len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommitOrder {
    /// Refs written and their new bytes.
    pub writes: Vec<(String, Vec<u8>)>,
    /// Refs only commuted.
    pub commutes: Vec<String>,
    /// Every written and commuted ref with the GUID of its write-lock node, sorted.
    pub lock: Vec<(String, u128)>,
    /// Whether BARGE-WAIT has passed since the transaction started (for refs tagged now).
    pub may_barge: bool,
    /// Agent sends, created by the commit record's `multi` (see
    /// [`CommitPlan::sends`](crate::stm::protocol::CommitPlan::sends)).
    pub sends: Vec<crate::Op>,
}

/// The answer to one command.
///
/// ```
/// let o = avout::stm::mvcc::Outcome::Read(b"1".to_vec());
/// assert!(matches!(o, avout::stm::mvcc::Outcome::Read(_)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The value read (answers [`TryMachine::read`](super::TryMachine::read)).
    Read(Vec<u8>),
    /// Done: a write announced, a ref ensured, a read-only commit or an abort cleaned up.
    Done,
    /// The commuted refs' newest values, under their write locks: answer with
    /// [`TryMachine::recomputed`](super::TryMachine::recomputed) (or
    /// [`TryMachine::abort`](super::TryMachine::abort) if a recomputation failed).
    Recompute(Vec<Newest>),
    /// Committed: one change per written and commuted ref, sorted by name.
    Committed(Vec<Change>),
    /// The try is over without committing; what it created is removed (unless the session
    /// is gone). A retryable halt means "run the body again".
    Failed(Halt),
}

/// What a try did that the engine counts.
///
/// ```
/// let s = avout::stm::mvcc::TryStats::default();
/// assert_eq!(s.barges + s.killed + s.read_faults + s.recoveries, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TryStats {
    /// Younger transactions barged.
    pub barges: u64,
    /// Times this try learnt it was barged (its move to `COMMITTING` failed).
    pub killed: u64,
    /// Reads that found their value trimmed.
    pub read_faults: u64,
    /// Commits whose lost reply was resolved by a read.
    pub recoveries: u64,
}
