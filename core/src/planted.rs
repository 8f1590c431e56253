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
/// The first six were planted by avout's authors. The last,
/// [`MvccLockWaitFromFirstRequest`](Bug::MvccLockWaitFromFirstRequest), is a bug avout had,
/// found by a test and fixed, kept so the test bed is seen to find it. The rest are the
/// **museum**: historical recipe bugs of Apache Curator, kazoo and ZooKeeper's own recipes,
/// each re-created in avout's recipe that shares the buggy code path and named after its report
/// ([`Bug::report`] gives the address). Each one's doc says what went wrong in the original,
/// how the re-creation reproduces it, why avout's own design does not have it, and which fault
/// kinds bring it out.
///
/// ```
/// use avout::planted::Bug;
/// assert_eq!("lock-no-guid-recovery".parse::<Bug>().unwrap(), Bug::LockNoGuidRecovery);
/// assert_eq!(Bug::LockNoGuidRecovery.to_string(), "lock-no-guid-recovery");
/// assert_eq!("curator-621".parse::<Bug>().unwrap(), Bug::Curator621);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
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
    /// **kazoo #649**, read-write lock deadlock (kazoo 2.8.0, fixed by PR #650).
    ///
    /// kazoo's `ReadLock` matched every write node in the lock directory as a contender and
    /// took the last one before finding itself, which it never found among them: a reader
    /// waited for the highest writer anywhere, queued after it or not. A writer queued behind
    /// the reader waits for the reader, the reader for that writer: both wait forever.
    ///
    /// Re-created in [`AcquireMachine`](crate::lock::AcquireMachine)'s decision: a reader
    /// counts every writer as a blocker, not only those below its own node, and watches the
    /// highest. avout's reader considers only the nodes below its own, as the recipe says.
    /// No fault is needed, only a writer that queues behind a waiting reader.
    Kazoo649,
    /// **CURATOR-621**, a writer let in beside a downgraded reader (fixed in Curator 5.5.0).
    ///
    /// A write holder that takes the read lock (its read node queued behind every waiter) and
    /// then releases the write lock (a downgrade) deleted its write node at once. A writer
    /// that had queued between the two watches only the write node: it found nothing below
    /// itself and held the write lock beside the downgraded reader.
    ///
    /// Re-created in the release of a [`RwLock`](crate::lock::RwLock)'s write side: the
    /// write node is deleted at once even with a foreign writer queued between it and the
    /// handle's read node. avout parks such a
    /// write node until the read holds go. No fault is needed, only a downgrade with a writer
    /// waiting.
    Curator621,
    /// **kazoo #732**, a lock node leaked by an acquisition that gave up (open; PR #760).
    ///
    /// A non-blocking (or timed) acquisition that does not get the lock deletes its node once,
    /// best effort: when that delete failed with a connection loss the error was swallowed and
    /// the node stayed, owned by a session that lives on and held by nobody. Every later
    /// contender queues behind it: the lock is stuck until that process ends.
    ///
    /// Re-created in [`AcquireMachine`](crate::lock::AcquireMachine)'s abandonment: an
    /// indeterminate failure of the delete ends the acquisition instead of deleting again
    /// after the reconnection. The same machine is the semaphore's mutex, so a semaphore's
    /// `try_acquire` leaks there too. Brought out by a lost request (`request-lost`), a
    /// `disconnect` or an `outage` while the delete travels (a lost *reply* means the delete
    /// was applied).
    Kazoo732,
    /// **CURATOR-335**, a semaphore deadlocked under network stress (fixed in Curator 2.11.0).
    ///
    /// `InterProcessSemaphoreV2` created its lease node, then listed the leases; if the
    /// connection dropped in between, the exception left the acquisition with the lease node
    /// still there, owned by a session that lives on. Each such failure took one lease away
    /// for good, and once all were gone no process could acquire.
    ///
    /// Re-created in [`SemaphoreMachine`](crate::recipes::semaphore::SemaphoreMachine): a
    /// failed count after the lease node exists fails the acquisition with the connection
    /// loss and forgets the node, instead of counting again after the reconnection. Brought
    /// out by `request-lost`, `reply-lost`, `disconnect` or `outage` on the lease listing.
    Curator335,
    /// **CURATOR-462**, a lease node orphaned when acquiring is interrupted (fixed in Curator
    /// 2.13.0 / 4.1.0).
    ///
    /// A lease node was handed to the caller only once the lease counted; an acquisition whose
    /// wait for its lease ended early (interrupted) returned without deleting the node it had
    /// created, and the orphan took a lease away for as long as its session lived.
    ///
    /// Re-created in [`SemaphoreMachine`](crate::recipes::semaphore::SemaphoreMachine): an
    /// acquisition that gives up waiting (its timeout passed) forgets its lease node instead
    /// of deleting it. No fault is needed, only a timed acquisition that waits in vain.
    Curator462,
    /// **Curator GitHub #1290**, `DistributedDoubleBarrier` lets a participant in early (fixed
    /// in PR #1291).
    ///
    /// `enter` counted the participants once and then waited; its loop was `do { … } while
    /// (false)`, so any wake-up ended it with success. The watcher also hears connection
    /// events: a reconnection (`SyncConnected`) let a waiting participant through before the
    /// barrier had filled.
    ///
    /// Re-created in [`EnterMachine`](crate::recipes::double_barrier::EnterMachine): a
    /// reconnection while waiting for `ready` is taken as the barrier being ready. avout's
    /// watches fire only on a change or the session's end, and its machine re-checks `ready`
    /// after every one. Brought out by anything that drops the connection while a participant
    /// waits: `disconnect`, `request-lost`, `reply-lost`, `outage`.
    CuratorGh1290,
    /// **ZOOKEEPER-1011**, the tutorial's barrier waits forever (the documentation's example).
    ///
    /// The ZooKeeper tutorial's `Barrier.enter` waited until the barrier node had `size`
    /// children, without the recipe's `ready` node: a participant that looked again after a
    /// quick one had already left found too few children and waited forever.
    ///
    /// Re-created in [`EnterMachine`](crate::recipes::double_barrier::EnterMachine): `ready`
    /// is ignored as a sign of entry; each wake-up lists the participants again and enters
    /// only if there are `count` of them. No fault is needed, only a participant that leaves
    /// before a slower one has looked again.
    Zookeeper1011,
    /// **CURATOR-358**, `getLeader` fails when the leader resigns meanwhile (fixed in Curator
    /// 2.12.0).
    ///
    /// `LeaderSelector.getLeader` listed the participants and then read the first one's node;
    /// if that leader resigned in between, the read's `NoNode` escaped to the caller instead
    /// of the next participant being looked at.
    ///
    /// Re-created in [`Election::leader`](crate::recipes::election::Election::leader): a
    /// `NoNode` on the leader's node is returned as an error. No fault is needed, only an
    /// observer asking while leaders resign.
    Curator358,
    /// **CURATOR-16**, `LeaderSelector` does not requeue on session expiry (fixed in Curator
    /// 2.0.1).
    ///
    /// With `autoRequeue`, a `SessionExpiredException` thrown while acquiring the election's
    /// mutex was not handled by the selector's loop: the loop ended, and the process stopped
    /// standing for leadership for good, silently.
    ///
    /// Re-created in [`LeaderLatch`](crate::recipes::election::LeaderLatch)'s loop: a
    /// campaign that fails because its session ended closes the latch instead of standing
    /// again on the client's next session. Brought out by `session-expiry` or a `pause`
    /// past the session timeout while a latch campaigns.
    Curator16,
    /// **CURATOR-202**, a leader's node left behind by a connection loss (fixed in Curator
    /// 2.8.0).
    ///
    /// When a leader gave up its leadership while the connection was down, the delete of its
    /// node failed and was not retried; the session survived the reconnection, so the node
    /// stayed, and every later candidate, the process's own next one included, queued behind
    /// it forever.
    ///
    /// Re-created in [`Leadership::resign`](crate::recipes::election::Leadership::resign):
    /// the delete is sent once and a connection loss is taken as done. Brought out by
    /// `request-lost`, `disconnect` or `outage` on the resignation's delete.
    Curator202,
    /// **CURATOR-623**, a distributed queue stops being fed after a long disconnect (fixed in
    /// Curator 5.3.0).
    ///
    /// The queue's children cache set its watch with a background `getChildren`; when that
    /// call failed for good after the connection came back, nothing set the watch again, and
    /// the consumer never heard of new items.
    ///
    /// Re-created in [`TakeMachine`](crate::recipes::queue::TakeMachine): when the listing that
    /// arms the empty queue's watch fails with a connection loss, the consumer waits for that
    /// watch anyway, though it was never set. Brought out by `request-lost`, `reply-lost`,
    /// `disconnect` or `outage` while a consumer waits on an empty queue.
    Curator623,
    /// **CURATOR-476**, `PathChildrenCache` never initialised when a child goes during the
    /// load (fixed in Curator 4.1.0).
    ///
    /// The cache listed the children and read each one; a child deleted between the listing
    /// and its read stayed in the set of children the initial load waited for, so the
    /// `INITIALIZED` event never came.
    ///
    /// Re-created in the [cache](crate::recipes::cache)'s initial load: a listed child whose
    /// read finds it gone keeps the load from ever reporting itself done, so
    /// [`Cache::start`](crate::recipes::cache::Cache::start) never returns. No fault is
    /// needed, only a writer deleting while a cache starts.
    Curator476,
    /// **CURATOR-311**, `SharedValue` holds stale data after reconnecting (fixed in Curator
    /// 2.12.0).
    ///
    /// A change made while the client was disconnected was not read when the connection came
    /// back: the shared value kept its old data until the next change.
    ///
    /// Re-created in the [cache](crate::recipes::cache) that [`SharedValue`] is built on
    /// (`SharedValue` follows its node with a cache): on a reconnection the cache does not
    /// read its scope again, and a change the persistent watch did not report while the
    /// connection was down is never seen. Brought out by `disconnect`, `request-lost`,
    /// `reply-lost` or `outage` while another client writes.
    ///
    /// [`SharedValue`]: crate::recipes::shared_value::SharedValue
    Curator311,
    /// avout's own bug, fixed in commit fe66c6c: the Mvcc STM's lock wait (LOCK_WAIT, 100 ms) ran from
    /// an acquisition's first request, not from the moment it found a holder. On a server
    /// whose round trip outlasts it (a distant ensemble, a loaded machine) every try timed out
    /// on its own lock node and retried, reporting a conflict with no other transaction: a
    /// lone client's transactions failed at a small retry limit and wasted tries at any.
    /// Bank's histories stay valid (a retry is invisible to a checker); the scenarios' rule
    /// "a lone client never conflicts" finds it on a distant ensemble (60 ms each way): in
    /// `bank` with one client under faults, in `rw-register` with one (the soak's
    /// `rw-register+1client+60ms` row) with none, whose transactions it also stalls past the
    /// liveness deadline.
    MvccLockWaitFromFirstRequest,
}

impl Bug {
    /// Every bug, in a fixed order.
    ///
    /// ```
    /// assert!(avout::planted::Bug::ALL.contains(&avout::planted::Bug::AtomUncheckedWrite));
    /// ```
    pub const ALL: [Bug; 20] = [
        Bug::LockNoGuidRecovery,
        Bug::AtomUncheckedWrite,
        Bug::StmNoReadPointCheck,
        Bug::StmBargeCommitting,
        Bug::StmSessionLossRetried,
        Bug::LockHandoffWithoutRecheck,
        Bug::Kazoo649,
        Bug::Curator621,
        Bug::Kazoo732,
        Bug::Curator335,
        Bug::Curator462,
        Bug::CuratorGh1290,
        Bug::Zookeeper1011,
        Bug::Curator358,
        Bug::Curator16,
        Bug::Curator202,
        Bug::Curator623,
        Bug::Curator476,
        Bug::Curator311,
        Bug::MvccLockWaitFromFirstRequest,
    ];

    /// The museum: the bugs re-created from a public report, in [`ALL`](Self::ALL)'s order.
    ///
    /// ```
    /// use avout::planted::Bug;
    /// assert!(Bug::museum().all(|b| b.report().is_some()));
    /// assert!(!Bug::museum().any(|b| b == Bug::AtomUncheckedWrite));
    /// ```
    pub fn museum() -> impl Iterator<Item = Bug> {
        Bug::ALL.into_iter().filter(|b| b.report().is_some())
    }

    /// The bug's kebab-case name (as parsed by [`FromStr`]): a museum bug's is its report's.
    ///
    /// ```
    /// assert_eq!(avout::planted::Bug::AtomUncheckedWrite.name(), "atom-unchecked-write");
    /// assert_eq!(avout::planted::Bug::CuratorGh1290.name(), "curator-gh-1290");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Bug::LockNoGuidRecovery => "lock-no-guid-recovery",
            Bug::AtomUncheckedWrite => "atom-unchecked-write",
            Bug::StmNoReadPointCheck => "stm-no-read-point-check",
            Bug::StmBargeCommitting => "stm-barge-committing",
            Bug::StmSessionLossRetried => "stm-session-loss-retried",
            Bug::LockHandoffWithoutRecheck => "lock-handoff-without-recheck",
            Bug::Kazoo649 => "kazoo-649",
            Bug::Curator621 => "curator-621",
            Bug::Kazoo732 => "kazoo-732",
            Bug::Curator335 => "curator-335",
            Bug::Curator462 => "curator-462",
            Bug::CuratorGh1290 => "curator-gh-1290",
            Bug::Zookeeper1011 => "zookeeper-1011",
            Bug::Curator358 => "curator-358",
            Bug::Curator16 => "curator-16",
            Bug::Curator202 => "curator-202",
            Bug::Curator623 => "curator-623",
            Bug::Curator476 => "curator-476",
            Bug::Curator311 => "curator-311",
            Bug::MvccLockWaitFromFirstRequest => "mvcc-lock-wait-from-first-request",
        }
    }

    /// The public report a museum bug re-creates; `None` for avout's own bugs.
    ///
    /// ```
    /// let url = avout::planted::Bug::Kazoo649.report().unwrap();
    /// assert_eq!(url, "https://github.com/python-zk/kazoo/issues/649");
    /// assert_eq!(avout::planted::Bug::StmBargeCommitting.report(), None);
    /// ```
    pub fn report(self) -> Option<&'static str> {
        Some(match self {
            Bug::LockNoGuidRecovery
            | Bug::AtomUncheckedWrite
            | Bug::StmNoReadPointCheck
            | Bug::StmBargeCommitting
            | Bug::StmSessionLossRetried
            | Bug::LockHandoffWithoutRecheck
            | Bug::MvccLockWaitFromFirstRequest => return None,
            Bug::Kazoo649 => "https://github.com/python-zk/kazoo/issues/649",
            Bug::Curator621 => "https://issues.apache.org/jira/browse/CURATOR-621",
            Bug::Kazoo732 => "https://github.com/python-zk/kazoo/issues/732",
            Bug::Curator335 => "https://issues.apache.org/jira/browse/CURATOR-335",
            Bug::Curator462 => "https://issues.apache.org/jira/browse/CURATOR-462",
            Bug::CuratorGh1290 => "https://github.com/apache/curator/issues/1290",
            Bug::Zookeeper1011 => "https://issues.apache.org/jira/browse/ZOOKEEPER-1011",
            Bug::Curator358 => "https://issues.apache.org/jira/browse/CURATOR-358",
            Bug::Curator16 => "https://issues.apache.org/jira/browse/CURATOR-16",
            Bug::Curator202 => "https://issues.apache.org/jira/browse/CURATOR-202",
            Bug::Curator623 => "https://issues.apache.org/jira/browse/CURATOR-623",
            Bug::Curator476 => "https://issues.apache.org/jira/browse/CURATOR-476",
            Bug::Curator311 => "https://issues.apache.org/jira/browse/CURATOR-311",
        })
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

// A set is a bit per bug.
const _: () = assert!(Bug::ALL.len() <= u32::BITS as usize);

impl From<Bug> for &'static str {
    fn from(bug: Bug) -> Self {
        bug.name()
    }
}

impl TryFrom<String> for Bug {
    type Error = PlantedError;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        name.parse()
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

/// Every bug's name, comma-separated.
fn known_names() -> String {
    Bug::ALL.map(Bug::name).join(", ")
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
    #[error("no planted bug is named {0:?} (known: {known})", known = known_names())]
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
pub struct Bugs(u32);

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
    fn every_bug_is_listed_once_with_its_own_bit() {
        let bits: std::collections::BTreeSet<u32> = Bug::ALL.iter().map(|b| b.bit()).collect();
        let names: std::collections::BTreeSet<&str> = Bug::ALL.iter().map(|b| b.name()).collect();
        assert_eq!(bits.len(), Bug::ALL.len());
        assert_eq!(names.len(), Bug::ALL.len());
        assert_eq!(Bug::museum().count(), Bug::ALL.len() - 7);
        let all = Bugs::plant(Bug::ALL).unwrap();
        assert!(Bug::ALL.iter().all(|b| all.contains(*b)));
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let e = "curator-0".parse::<Bug>().unwrap_err().to_string();
        assert!(e.contains("curator-0") && e.contains("kazoo-649") && e.contains("curator-311"));
        assert!(serde_json::from_str::<Bug>("\"curator-0\"").is_err());
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
