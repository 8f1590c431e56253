//! Planted bugs: deliberately broken variants of avout's protocols, switched on one at a time,
//! so that the tools meant to find bugs (the scenario explorer, the models) can be shown to
//! find them.
//!
//! Each [`Bug`] names one weakening of a protocol — a lock that forgets its GUID recovery, an
//! atom write without its version check, and so on. Which bugs are on is a plain value,
//! [`Bugs`], carried in the configuration of every machine that has one (and of the handles
//! that build those machines: [`AtomBuilder::planted`](crate::atom::AtomBuilder::planted),
//! [`Mutex::planted`](crate::lock::Mutex::planted), [`StmConfig::planted`](crate::stm::StmConfig::planted)).
//! Machines stay pure: what they do depends on their configuration and inputs only, so a
//! model, a simulated run and a test beside it on another thread never see each other's bugs.
//!
//! Without the cargo feature `planted-bugs`, [`Bugs::contains`] is a constant `false` that
//! the compiler removes, and [`Bugs::plant`] refuses with [`PlantedError::NotCompiledIn`]:
//! production builds cannot be broken by accident.
//!
//! ```
//! use avout::planted::{Bug, Bugs};
//!
//! assert!(!Bugs::NONE.contains(Bug::AtomUncheckedWrite));
//! if avout::planted::COMPILED_IN {
//!     let bugs = Bugs::plant([Bug::AtomUncheckedWrite]).unwrap();
//!     assert!(bugs.contains(Bug::AtomUncheckedWrite));
//!     assert!(!bugs.contains(Bug::LockNoGuidRecovery));
//! } else {
//!     assert!(Bugs::plant([Bug::AtomUncheckedWrite]).is_err());
//! }
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Whether this build has the `planted-bugs` feature (else nothing can be switched on).
///
/// ```
/// let _ = avout::planted::COMPILED_IN;
/// ```
pub const COMPILED_IN: bool = cfg!(feature = "planted-bugs");

/// A deliberately broken protocol variant.
///
/// ```
/// use avout::planted::Bug;
/// assert_eq!("lock-no-guid-recovery".parse::<Bug>().unwrap(), Bug::LockNoGuidRecovery);
/// assert_eq!(Bug::LockNoGuidRecovery.to_string(), "lock-no-guid-recovery");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Bug {
    /// The lock does not look for its own node after a connection loss on the create: the
    /// node whose reply was lost stays queued, owned by a live session and held by nobody,
    /// and every later contender waits behind it (a deadlock until the session ends).
    LockNoGuidRecovery,
    /// An atom's write is an unconditional `set_data` instead of one conditional on the
    /// version read: concurrent swaps overwrite each other (lost updates).
    AtomUncheckedWrite,
    /// The STM reads a ref's newest value instead of the newest one committed at or before
    /// the transaction's read point (no snapshot: read skew, G-single).
    StmNoReadPointCheck,
    /// The STM lets an older transaction barge a COMMITTING one (Clojure never does), so a
    /// commit can be half-undone.
    StmBargeCommitting,
    /// The STM retries a transaction whose session was lost, as if it were a conflict,
    /// instead of failing it: on a dead handle, `dosync` spins through its whole retry limit
    /// and then reports the limit, never the lost session (Avout printed the error and
    /// returned nil).
    StmSessionLossRetried,
    /// A lock waiter takes the lock as soon as the node it watches is deleted, whoever else
    /// is still queued below it, instead of only when that node was the last that blocked it
    /// (and otherwise reading the children again). When a waiter between it and the holder
    /// goes (it gave up, or its session expired), it holds the lock beside the live holder:
    /// two holders with live sessions, which no fencing token excuses.
    LockHandoffWithoutRecheck,
}

impl Bug {
    /// Every bug, in a fixed order.
    ///
    /// ```
    /// assert!(avout::planted::Bug::ALL.contains(&avout::planted::Bug::AtomUncheckedWrite));
    /// ```
    pub const ALL: [Bug; 6] = [
        Bug::LockNoGuidRecovery,
        Bug::AtomUncheckedWrite,
        Bug::StmNoReadPointCheck,
        Bug::StmBargeCommitting,
        Bug::StmSessionLossRetried,
        Bug::LockHandoffWithoutRecheck,
    ];

    /// The bug's kebab-case name (as parsed by [`FromStr`]).
    ///
    /// ```
    /// assert_eq!(avout::planted::Bug::AtomUncheckedWrite.name(), "atom-unchecked-write");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Bug::LockNoGuidRecovery => "lock-no-guid-recovery",
            Bug::AtomUncheckedWrite => "atom-unchecked-write",
            Bug::StmNoReadPointCheck => "stm-no-read-point-check",
            Bug::StmBargeCommitting => "stm-barge-committing",
            Bug::StmSessionLossRetried => "stm-session-loss-retried",
            Bug::LockHandoffWithoutRecheck => "lock-handoff-without-recheck",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Bug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Bug {
    type Err = PlantedError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Bug::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| PlantedError::Unknown(s.to_owned()))
    }
}

/// Why a bug could not be named or switched on.
///
/// ```
/// let e = "no-such-bug".parse::<avout::planted::Bug>().unwrap_err();
/// assert!(e.to_string().contains("no-such-bug"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlantedError {
    /// No bug has this name.
    #[error(
        "no planted bug is named {0:?} (known: lock-no-guid-recovery, atom-unchecked-write, \
         stm-no-read-point-check, stm-barge-committing, stm-session-loss-retried, \
         lock-handoff-without-recheck)"
    )]
    Unknown(String),
    /// The build lacks the `planted-bugs` feature.
    #[error("planted bugs are not compiled in: build with the cargo feature `planted-bugs`")]
    NotCompiledIn,
}

/// A set of planted bugs: the setting a machine's configuration carries. The default is
/// none; only [`Bugs::plant`] makes another, and only in a build with the feature.
///
/// ```
/// use avout::planted::{Bug, Bugs};
/// assert_eq!(Bugs::default(), Bugs::NONE);
/// assert!(Bugs::NONE.is_empty());
/// assert_eq!(Bugs::plant(None).unwrap(), Bugs::NONE);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bugs(u8);

impl Bugs {
    /// No bug: every protocol as it should be.
    pub const NONE: Bugs = Bugs(0);

    /// The set of `bugs` (none for an empty iterator, so `Option<Bug>` serves as well).
    /// Fails with [`PlantedError::NotCompiledIn`] if any is named in a build without the
    /// `planted-bugs` feature.
    ///
    /// ```
    /// use avout::planted::{Bug, Bugs, PlantedError};
    /// match Bugs::plant(Some(Bug::StmBargeCommitting)) {
    ///     Ok(bugs) => assert!(bugs.contains(Bug::StmBargeCommitting)),
    ///     Err(e) => assert_eq!(e, PlantedError::NotCompiledIn),
    /// }
    /// ```
    pub fn plant(bugs: impl IntoIterator<Item = Bug>) -> Result<Bugs, PlantedError> {
        let bits = bugs.into_iter().fold(0, |bits, bug| bits | bug.bit());
        if bits != 0 && !COMPILED_IN {
            return Err(PlantedError::NotCompiledIn);
        }
        Ok(Bugs(bits))
    }

    /// Whether `bug` is in the set. Always `false` without the `planted-bugs` feature.
    ///
    /// ```
    /// assert!(!avout::planted::Bugs::NONE.contains(avout::planted::Bug::StmBargeCommitting));
    /// ```
    #[inline(always)]
    pub fn contains(self, bug: Bug) -> bool {
        COMPILED_IN && self.0 & bug.bit() != 0
    }

    /// Whether no bug is in the set.
    ///
    /// ```
    /// assert!(avout::planted::Bugs::NONE.is_empty());
    /// ```
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

#[cfg(all(test, feature = "planted-bugs"))]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_what_was_planted() {
        let bugs = Bugs::plant([Bug::LockNoGuidRecovery, Bug::AtomUncheckedWrite]).unwrap();
        assert!(bugs.contains(Bug::LockNoGuidRecovery) && bugs.contains(Bug::AtomUncheckedWrite));
        assert!(!bugs.contains(Bug::StmBargeCommitting));
        assert!(!bugs.is_empty());
        for bug in Bug::ALL {
            assert!(Bugs::plant([bug]).unwrap().contains(bug));
        }
    }

    #[test]
    fn names_round_trip() {
        for bug in Bug::ALL {
            assert_eq!(bug.name().parse::<Bug>().unwrap(), bug);
            let json = serde_json::to_string(&bug).unwrap();
            assert_eq!(json, format!("\"{}\"", bug.name()));
        }
    }
}
