//! Histories and the checkers that judge them, standing alone: no async runtime, no ZooKeeper
//! client, no simulator — for anyone with a Jepsen, Elle, Knossos or Maelstrom history to
//! judge, as for avout's own scenarios.
//!
//! - [`history`]: histories of client operations, in Jepsen's JSON-lines format or Jepsen's own
//!   EDN (as Jepsen, Knossos and Elle write them), with Maelstrom's error codes.
//! - [`Checker`]: the one trait every checker implements, synchronous, giving one
//!   [`Verdict`]: which checker judged, what it checked, and each [`Anomaly`] named, told and
//!   with what a viewer needs to draw it (the operations involved, a cycle's edges, two
//!   overlapping holds).
//! - [`Checkers`]: the checkers by name, as `avout check --model NAME` and the scenarios that
//!   bind them find them:
//!
//! | name | checker | judges |
//! |---|---|---|
//! | `register`, `cas-register` | [`linear::Linearizable`] | linearizability, per key (Knossos' `linear`, with Lowe's memoisation) |
//! | `list-append` | [`list_append::ListAppend`] | Elle's anomalies of list-append transactions: G0, G1a–c, G-single, G-nonadjacent, G2-item, lost update, internal and future reads, with their process and real-time variants |
//! | `rw-register` | [`rw_register::RwRegister`] | Elle's anomalies of read-write register transactions (Maelstrom's txn-rw-register): the same cycles, G1a, G1b, lost update, internal, future and garbage reads, cyclic versions |
//! | `bank` | [`bank::Bank`] | every read sums to the total, no negative balance |
//! | `mutex` | [`mutex::Mutex`] | mutual exclusion of lock holds under fencing tokens |
//! | `two-phase-commit` | [`two_phase_commit::TwoPhaseCommit`] | atomic commitment |
//! | `counter`, `queue`, `barrier`, `rwlock`, `holds`, `agents`, `cache`, `sessions`, `semaphore`, `double-barrier`, `latch` | [`recipes`] | the promises of avout's recipes |
//!
//! ```
//! use avout_check::{Checkers, Options};
//! use avout_check::history::History;
//! let text = r#"{"type":"invoke","process":0,"f":"write","value":1}
//! {"type":"ok","process":0,"f":"write","value":1}
//! {"type":"invoke","process":1,"f":"read","value":null}
//! {"type":"ok","process":1,"f":"read","value":null}"#;
//! let history = History::from_reader(text.as_bytes()).unwrap();
//! let checker = Checkers::builtins().get("cas-register", &Options::default()).unwrap();
//! let verdict = checker.check(&history).unwrap();
//! assert!(!verdict.is_valid());
//! println!("{}", verdict.report());
//! ```
//!
//! A new checker goes in a module of its own here, implements [`Checker`], and is named in
//! [`Checkers::builtins`]; a scenario then binds it by that name.

pub mod bank;
mod checker;
mod elle;
pub mod history;
pub mod linear;
pub mod list_append;
pub mod mutex;
pub mod recipes;
pub mod rw_register;
pub mod two_phase_commit;
mod verdict;

pub use checker::{CheckError, Checker, Checkers, Options, Rule, UnknownChecker};
pub use verdict::{Anomaly, Interval, Link, Part, Role, SHOWN_PER_KIND, Stretch, Verdict};

use linear::{Linearizable, Model};
use list_append::ListAppend;
use rw_register::RwRegister;

/// avout's checkers, in the order `avout check` lists them.
fn builtin_checkers(checkers: Checkers) -> Checkers {
    checkers
        .with(
            "register",
            "linearizable read/write register, per key",
            |o| Box::new(Linearizable::new(Model::Register).keys(o.keys)),
        )
        .with(
            "cas-register",
            "linearizable read/write/compare-and-set register, per key",
            |o| Box::new(Linearizable::new(Model::CasRegister).keys(o.keys)),
        )
        .with(
            "list-append",
            "transactions of list appends and reads (Maelstrom's txn-list-append), as Elle judges them",
            |o| Box::new(ListAppend::of(elle::Model::of(o))),
        )
        .with(
            "rw-register",
            "transactions of register reads and writes (Maelstrom's txn-rw-register), as Elle judges them",
            |o| Box::new(RwRegister::of(elle::Model::of(o))),
        )
        .with(
            "bank",
            "transfers and balance reads: every read sums to the total, no negative balance",
            |o| {
                let mut bank = bank::Bank::new();
                if let Some(total) = o.total {
                    bank = bank.total(total);
                }
                if let Some(accounts) = &o.accounts {
                    bank = bank.accounts(accounts.iter().cloned());
                }
                if o.allow_negative {
                    bank = bank.allow_negative();
                }
                Box::new(bank)
            },
        )
        .with(
            "mutex",
            "lock holds with fencing tokens and writes to a fenced resource",
            |_| Box::new(mutex::Mutex),
        )
        .with(
            "two-phase-commit",
            "begins, joins, votes, leaves and learned outcomes: atomic commitment",
            |_| Box::new(two_phase_commit::TwoPhaseCommit),
        )
        .with(
            "counter",
            "atom increments and reads: distinct increments, reads within bounds",
            |_| Box::new(recipes::counter::CHECKER),
        )
        .with(
            "queue",
            "puts and takes: nothing lost, nothing delivered twice",
            |_| Box::new(recipes::queue::CHECKER),
        )
        .with(
            "barrier",
            "set, wait, remove: nobody passes a set barrier",
            |_| Box::new(recipes::barrier::CHECKER),
        )
        .with(
            "rwlock",
            "read and write holds: no writer inside a read hold, no lost increment",
            |_| Box::new(recipes::rwlock::CHECKER),
        )
        .with(
            "holds",
            "fenced holds of a lock or a leadership: no lost increment, no token twice, no unfenced overlap",
            |_| Box::new(recipes::holds::CHECKER),
        )
        .with(
            "agents",
            "sends to an agent and its final log: exactly once, in order, stopped until restarted",
            |_| Box::new(recipes::agents::CHECKER),
        )
        .with(
            "cache",
            "writes and cache events: every event real, none twice, every cache converged",
            |_| Box::new(recipes::cache::CHECKER),
        )
        .with(
            "semaphore",
            "leases taken and given back, counted at the end: at most N holds, no lease lost",
            |_| Box::new(recipes::semaphore::CHECKER),
        )
        .with(
            "double-barrier",
            "rounds entered and left: nobody enters before all arrived, nor leaves before all left",
            |_| Box::new(recipes::double_barrier::CHECKER),
        )
        .with(
            "latch",
            "leader latches and look-ups of the leader: a latch stands until closed, look-ups answer",
            |_| Box::new(recipes::latch::CHECKER),
        )
        .with(
            "sessions",
            "a mixed workload across expiries: each part by its checker, progress after each expiry",
            |o| Box::new(recipes::sessions::Sessions::new(o)),
        )
}
