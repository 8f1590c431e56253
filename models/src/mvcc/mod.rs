//! The STM under protocol `Mvcc`: each client runs one small transaction over two refs, `a`
//! and `b`, through the production [`TryMachine`] (one try: reads at the read point, tagging
//! and barging at the first write of each ref, the move to `COMMITTING` with the write locks,
//! the commit `multi`, the cleanup and the blocked wait) against the model ZooKeeper.
//!
//! The transactions (user code, which the model supplies, as `dosync` bodies would): a
//! **transfer** is `alter(a, -1)` then `alter(b, +1)` — read `a`, write `a`, read `b`, write
//! `b`, commit — and a **reader** reads `a` and `b` and writes nothing. Clients 0 and 1
//! transfer, client 2 reads, client 3 transfers (`avout model mvcc --clients 2`: two
//! transfers, which may barge each other; `--clients 3` adds the reader, whose read of a
//! trimmed value is a read fault).
//!
//! # The glue
//!
//! Everything of a try is the machine's; what stays outside is what the frontend does
//! around it (`stm/tx.rs`, `stm/mvcc/attempt.rs`), mirrored here in a few lines: issue the
//! body's next command when the last one is answered, draw the GUIDs (try and lock nodes),
//! keep the transaction's age across tries, run the body again after a retryable halt
//! within the retry limit, and say whether BARGE-WAIT has passed.
//!
//! **BARGE-WAIT** is time, which the model does not have: with `barge_wait` set, a client
//! starts unable to barge and its script may at any moment take the step "BARGE-WAIT
//! passes" (once per transaction, as the wait is measured from the transaction's start);
//! without it, every client may barge from the start (BARGE-WAIT 0).
//!
//! **Timers** (a lock wait, a blocked try's wait for its blocker, the pause before a redo
//! after a connection loss) fire whenever the checker chooses, but at most `timers` times per
//! client plus once per fault: a timer is "long enough passed", and without a bound a
//! blocked try could time out and retry forever while its blocker is never scheduled — an
//! unfair schedule, and an unbounded state space. Past the bound, a waiting try waits for
//! its watch (its blocker's point changing, a lock released).
//!
//! # Properties
//!
//! - `always` a transfer **conserves the total**; **no lost update** (`b` equals the transfer
//!   commits the server applied); **applied at most once**; **acknowledged means applied**;
//!   a committed reader's reads are a **snapshot** (`a + b` equals the total).
//! - `always` **a COMMITTING transaction is never killed**: a point is killed only from
//!   `RUNNING` (version 0 to 1: a `KILLED` point at a later version was `COMMITTING` first),
//!   and no try's commit finds its point killed (`Halt::Violation`).
//! - `always` **only an older transaction barges a younger one, and only after BARGE-WAIT**:
//!   every compare-and-set to `KILLED` the server applies is sent by a client whose
//!   BARGE-WAIT has passed, against a point whose transaction id (age, then GUID) is greater
//!   than its own.
//! - `always` **the newest committed value is never trimmed**: each ref's history holds the
//!   node its newest value was committed with (created by the `multi` that set the ref).
//! - `always` **retries stay within the limit**: no transaction fails with the retry limit
//!   (`retry_limit`, by default production's, which the bounded timers keep far away).
//! - `eventually` **every transaction finishes**; without faults, **the oldest transaction
//!   commits** (the one with the smallest read point; with stateright's `eventually`, on
//!   every path, which the timer bound makes fair).
//! - `sometimes` **a barge happens** (two transfers), **a read fault happens** (a reader, two
//!   transfers, MAX-HISTORY 1), **a conflict retried**, **a lost commit reply recovered**
//!   (with reply faults), **a read-only transaction validates** (a reader).
//!
//! [`TryMachine`]: avout::stm::mvcc::TryMachine

mod agent;
mod model;

pub use agent::{MvccAgent, decode};
pub use model::MvccModel;

use avout::stm::mvcc::Halt;

/// The STM's root.
///
/// ```
/// assert_eq!(avout_models::mvcc::ROOT, "/mvcc");
/// ```
pub const ROOT: &str = "/mvcc";

/// Ref `a`'s node.
///
/// ```
/// assert_eq!(avout_models::mvcc::REF_A, "/mvcc/refs/a");
/// ```
pub const REF_A: &str = "/mvcc/refs/a";

/// Ref `b`'s node.
pub const REF_B: &str = "/mvcc/refs/b";

/// Tries after which BARGE-WAIT has passed whatever the schedule: a try that retries has
/// waited for a conflicting commit or for its blocker (up to the lock wait, 100 ms), far
/// longer than BARGE-WAIT (10 ms by default).
pub const BARGE_WAIT_TRIES: u32 = 2;

/// The depth `avout model mvcc` stops at unless `--depth` says otherwise: the whole state
/// space of two clients is tens of millions of states (each try pipelines eleven requests
/// whose applications and replies interleave with the other client's), so the model is
/// checked to a bound — every schedule of at most this many steps, not counting the reads
/// the clients take ahead ([`crate::world::World::reading_ahead`]), long enough for a barge
/// and, with one fault, a lost commit reply recovered (two clients, one fault: 4,245,736
/// unique states, about 35 seconds of CPU and 1.5 GiB in a release build, one checker
/// thread).
pub const DEFAULT_DEPTH: usize = 23;

/// The depth bound `avout model mvcc` uses with `strategy` unless told otherwise:
/// [`DEFAULT_DEPTH`] for an exhaustive check, none for random walks (each is cut at
/// [`crate::check::walk::DEFAULT_DEPTH`]).
///
/// ```
/// use avout_models::check::Strategy;
/// assert_eq!(avout_models::mvcc::default_depth(Strategy::BreadthFirst), Some(avout_models::mvcc::DEFAULT_DEPTH));
/// assert_eq!(avout_models::mvcc::default_depth(Strategy::Walks { walks: 1, seed: 0 }), None);
/// ```
pub fn default_depth(strategy: crate::check::Strategy) -> Option<usize> {
    match strategy {
        crate::check::Strategy::Walks { .. } => None,
        _ => Some(DEFAULT_DEPTH),
    }
}

/// The transaction points' directory.
const POINTS: &str = "/mvcc/stm/history";

/// What the clients run.
///
/// ```
/// use avout_models::mvcc::{Body, Workload};
/// assert_eq!(Workload::Increments.body(1), Body::Increment);
/// assert_eq!(Workload::Transfers.body(1), Body::Reader);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Writers increment `a` (`avout model mvcc`): the smallest contention, barging included.
    Increments,
    /// Writers transfer one from `a` to `b` (`avout model mvcc-bank`): two refs per commit.
    Transfers,
}

impl Workload {
    /// Client `index`'s body. Increments: the third of every three reads, the others
    /// write; transfers: odd clients read, even ones transfer (as the stm model). See
    /// [`Workload`].
    pub fn body(self, index: u8) -> Body {
        match self {
            Workload::Increments if index % 3 == 2 => Body::Reader,
            Workload::Increments => Body::Increment,
            Workload::Transfers if index % 2 == 1 => Body::Reader,
            Workload::Transfers => Body::Transfer,
        }
    }
}

/// What a client's transaction does.
///
/// ```
/// assert_ne!(avout_models::mvcc::Body::Increment, avout_models::mvcc::Body::Reader);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Body {
    /// `alter(a, +1)`.
    Increment,
    /// `alter(a, -1)`, `alter(b, +1)`.
    Transfer,
    /// Reads `b`, then `a` (its read point is fixed by the first read: the second may find
    /// its value trimmed).
    Reader,
}

impl Body {
    /// The body's commands in order.
    fn script(self) -> &'static [Command] {
        match self {
            Body::Increment => &[Command::Read("a"), Command::Write("a"), Command::Commit],
            Body::Transfer => &[
                Command::Read("a"),
                Command::Write("a"),
                Command::Read("b"),
                Command::Write("b"),
                Command::Commit,
            ],
            Body::Reader => &[Command::Read("b"), Command::Read("a"), Command::Commit],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Command {
    Read(&'static str),
    Write(&'static str),
    Commit,
}

/// How a client's transaction ended.
///
/// ```
/// use avout_models::mvcc::Ended;
/// assert_ne!(Ended::Committed { a: 1, b: 0 }, Ended::RetryLimit);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ended {
    /// It committed, having read these values in its last try.
    Committed {
        /// `a` as read.
        a: u64,
        /// `b` as read.
        b: u64,
    },
    /// It failed: the halt that is not retried (session lost, a protocol violation, …).
    Failed(Halt),
    /// The retry limit was passed.
    RetryLimit,
}
