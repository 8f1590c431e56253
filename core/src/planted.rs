//! Planted bugs: deliberately broken variants of avout's protocols, switched on one at a time,
//! so that the tools meant to find bugs (the scenario explorer, the models) can be shown to
//! find them.
//!
//! Each [`Bug`] names one weakening of a protocol — a lock that forgets its GUID recovery, an
//! atom write without its version check, and so on. The protocol code asks
//! [`active`]`(Bug::…)` at the one place the bug lives. Without the cargo feature
//! `planted-bugs`, [`active`] is a constant `false` that the compiler removes, and
//! [`enable`] refuses with [`PlantedError::NotCompiledIn`]: production builds cannot be
//! broken by accident.
//!
//! # Scope: per thread, so parallel tests do not see each other's bugs
//!
//! [`enable`] switches a bug on *for the calling thread* until the returned [`Planted`] guard
//! is dropped. A simulated run executes on one current-thread runtime, so every protocol
//! machine of that run sees the bug, and a test running beside it on another thread does
//! not. Switching is deterministic: nothing random or time-dependent decides whether a bug
//! is on. A program that runs one workload per process on a multi-threaded runtime (the
//! `avout` command line against real ZooKeeper) uses [`enable_process_wide`] instead; tests
//! must not, since it is seen by every thread of the test binary.
//!
//! ```
//! use avout::planted::{self, Bug};
//!
//! assert!(!planted::active(Bug::AtomUncheckedWrite));
//! if planted::COMPILED_IN {
//!     let guard = planted::enable(Bug::AtomUncheckedWrite).unwrap();
//!     assert!(planted::active(Bug::AtomUncheckedWrite));
//!     assert!(!planted::active(Bug::LockNoGuidRecovery));
//!     drop(guard);
//!     assert!(!planted::active(Bug::AtomUncheckedWrite));
//! } else {
//!     assert!(planted::enable(Bug::AtomUncheckedWrite).is_err());
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
}

impl Bug {
    /// Every bug, in a fixed order.
    ///
    /// ```
    /// assert!(avout::planted::Bug::ALL.contains(&avout::planted::Bug::AtomUncheckedWrite));
    /// ```
    pub const ALL: [Bug; 5] = [
        Bug::LockNoGuidRecovery,
        Bug::AtomUncheckedWrite,
        Bug::StmNoReadPointCheck,
        Bug::StmBargeCommitting,
        Bug::StmSessionLossRetried,
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
        }
    }

    #[cfg(feature = "planted-bugs")]
    fn bit(self) -> u32 {
        1 << (self as u32)
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
         stm-no-read-point-check, stm-barge-committing, stm-session-loss-retried)"
    )]
    Unknown(String),
    /// The build lacks the `planted-bugs` feature.
    #[error("planted bugs are not compiled in: build with the cargo feature `planted-bugs`")]
    NotCompiledIn,
}

#[cfg(feature = "planted-bugs")]
mod state {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU32, Ordering};

    thread_local! {
        pub(super) static THREAD: Cell<u32> = const { Cell::new(0) };
    }
    pub(super) static PROCESS: AtomicU32 = AtomicU32::new(0);

    pub(super) fn bits() -> u32 {
        THREAD.with(Cell::get) | PROCESS.load(Ordering::Relaxed)
    }
}

/// Whether `bug` is switched on for this thread (or the whole process). Always `false`
/// without the `planted-bugs` feature.
///
/// ```
/// assert!(!avout::planted::active(avout::planted::Bug::StmBargeCommitting));
/// ```
#[inline(always)]
pub fn active(bug: Bug) -> bool {
    #[cfg(feature = "planted-bugs")]
    {
        state::bits() & bug.bit() != 0
    }
    #[cfg(not(feature = "planted-bugs"))]
    {
        let _ = bug;
        false
    }
}

/// Keeps a bug switched on for this thread; dropping it restores what was on before.
///
/// ```
/// # if avout::planted::COMPILED_IN {
/// let guard = avout::planted::enable(avout::planted::Bug::LockNoGuidRecovery).unwrap();
/// drop(guard);
/// # }
/// ```
#[derive(Debug)]
#[must_use = "the bug is switched off again when the guard is dropped"]
pub struct Planted {
    previous: u32,
    // The guard restores a thread-local: it must be dropped on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for Planted {
    fn drop(&mut self) {
        #[cfg(feature = "planted-bugs")]
        state::THREAD.with(|t| t.set(self.previous));
        #[cfg(not(feature = "planted-bugs"))]
        let _ = self.previous;
    }
}

/// Switches `bug` on for the calling thread until the guard is dropped.
///
/// ```
/// use avout::planted::{self, Bug};
/// match planted::enable(Bug::AtomUncheckedWrite) {
///     Ok(_guard) => assert!(planted::active(Bug::AtomUncheckedWrite)),
///     Err(e) => assert_eq!(e, planted::PlantedError::NotCompiledIn),
/// }
/// ```
pub fn enable(bug: Bug) -> Result<Planted, PlantedError> {
    #[cfg(feature = "planted-bugs")]
    {
        let previous = state::THREAD.with(|t| t.replace(t.get() | bug.bit()));
        Ok(Planted {
            previous,
            _not_send: std::marker::PhantomData,
        })
    }
    #[cfg(not(feature = "planted-bugs"))]
    {
        let _ = bug;
        Err(PlantedError::NotCompiledIn)
    }
}

/// Switches `bug` on for every thread of the process, for good. For a program that runs one
/// workload per process on a multi-threaded runtime; tests use [`enable`].
///
/// ```no_run
/// avout::planted::enable_process_wide(avout::planted::Bug::AtomUncheckedWrite).unwrap();
/// ```
pub fn enable_process_wide(bug: Bug) -> Result<(), PlantedError> {
    #[cfg(feature = "planted-bugs")]
    {
        state::PROCESS.fetch_or(bug.bit(), std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
    #[cfg(not(feature = "planted-bugs"))]
    {
        let _ = bug;
        Err(PlantedError::NotCompiledIn)
    }
}

#[cfg(all(test, feature = "planted-bugs"))]
mod tests {
    use super::*;

    #[test]
    fn guards_nest_and_restore() {
        let a = enable(Bug::LockNoGuidRecovery).unwrap();
        let b = enable(Bug::AtomUncheckedWrite).unwrap();
        assert!(active(Bug::LockNoGuidRecovery) && active(Bug::AtomUncheckedWrite));
        drop(b);
        assert!(active(Bug::LockNoGuidRecovery) && !active(Bug::AtomUncheckedWrite));
        drop(a);
        assert!(!active(Bug::LockNoGuidRecovery));
    }

    #[test]
    fn another_thread_does_not_see_this_threads_bug() {
        let _g = enable(Bug::StmBargeCommitting).unwrap();
        let seen = std::thread::spawn(|| active(Bug::StmBargeCommitting))
            .join()
            .unwrap();
        assert!(!seen);
        assert!(active(Bug::StmBargeCommitting));
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
