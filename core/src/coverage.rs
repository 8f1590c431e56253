//! Coverage marks: the dangerous states the protocol code reached, counted when somebody asks.
//!
//! A test bed that never reaches a state cannot find the bugs that live there. A *mark*, in
//! the style of Antithesis's `sometimes` assertions, names such a state where the code reaches
//! it — a waiter's predecessor vanished while it waited, a commit's reply was lost and its
//! outcome decided by reading, a leader's session ended while it led:
//!
//! ```
//! use avout::coverage::{self, Mark};
//! # fn after_the_recovery_read_found_our_write() {
//! coverage::reach(Mark::AtomWriteLostApplied);
//! # }
//! ```
//!
//! Every mark is declared in [`Mark`], one list, so a mark that a soak never reached is known
//! by name: that is a finding (no scenario, fault mix or seed brings the code there).
//!
//! # Cost and determinism
//!
//! [`reach`] is one relaxed atomic load that finds nobody counting, unless some thread of the
//! process has a [`Counter`] running; then it also looks at a thread-local slot. It never draws
//! a random number, sleeps, logs or sends anything, so a simulated run's choices and its
//! event-log hash are the same whether its marks are counted or not. A simulated run executes
//! on one thread (a current-thread runtime, or madsim's), so a counter started on that thread
//! around the run counts that run's marks alone, whatever other runs do on other threads.
//!
//! ```
//! use avout::coverage::{self, Mark};
//! let counter = coverage::Counter::start();
//! coverage::reach(Mark::LockPredecessorVanished);
//! coverage::reach(Mark::LockPredecessorVanished);
//! let counts = counter.finish();
//! assert_eq!(counts.get(Mark::LockPredecessorVanished), 2);
//! assert_eq!(counts.get(Mark::ClientSessionReplaced), 0);
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Declares the marks: each a variant, a stable name (what reports and files say) and one
/// line about the state it stands for (its doc).
macro_rules! marks {
    ($($variant:ident = $name:literal : $about:literal,)*) => {
        /// A dangerous state of the protocol code; see the [module docs](self). The list is
        /// the one place marks are declared.
        ///
        /// ```
        /// use avout::coverage::Mark;
        /// assert_eq!(Mark::from_name(Mark::ALL[0].name()), Some(Mark::ALL[0]));
        /// assert!(Mark::ALL.iter().all(|m| !m.about().is_empty()));
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Mark {
            $(#[doc = $about] $variant,)*
        }

        impl Mark {
            /// Every mark, in declaration order.
            pub const ALL: &'static [Mark] = &[$(Mark::$variant,)*];

            /// Its stable name, `area.what` (as soak tables and files write it).
            pub fn name(self) -> &'static str {
                match self {
                    $(Mark::$variant => $name,)*
                }
            }

            /// One line about the state it stands for.
            pub fn about(self) -> &'static str {
                match self {
                    $(Mark::$variant => $about,)*
                }
            }
        }
    };
}

marks! {
    ProtectedCreateAdopted = "protected-create.adopted":
        "a sequential create's reply was lost, and recovery found the node by its GUID, owned by this session, and adopted it",
    ProtectedCreateNotApplied = "protected-create.not-applied":
        "a sequential create's reply was lost, and recovery found no node of ours: the create was never applied",
    LockPredecessorVanished = "lock.predecessor-vanished":
        "a lock waiter's watched predecessor went while other nodes still blocked it (a waiter between it and the holder gave up or lost its session), so it read the children again",
    LockOwnNodeVanished = "lock.own-node-vanished":
        "a contender's own lock node was missing from the children it read (its session's expiry not yet told), so it queued again",
    LockGaveUpQueued = "lock.gave-up-queued":
        "a contender gave up (timed out, or would block) with its node queued, and deleted it",
    LockReadUnderOwnWrite = "lock.read-under-own-write":
        "a reader whose owner holds the write lock was let in past the writers queued behind it",
    LockReleaseInFlight = "lock.release-in-flight":
        "a contender passed over its own released node whose delete had not been applied yet",
    LockReleaseRode = "lock.release-rode":
        "a deferred release rode with the next acquisition's create, one multi applied",
    LockRideAdopted = "lock.ride-adopted":
        "a riding create's multi lost its reply, and recovery adopted the node: the release it carried was applied with it",
    LockRideDropped = "lock.ride-dropped":
        "a riding create was refused (the released node already gone, or its delete or stamp refused), and the lock created alone",
    ElectionLeaderSessionEnded = "election.leader-session-ended":
        "a leader's session ended while it led",
    AtomWriteLostApplied = "atom.write-lost-applied":
        "an atom's conditional write lost its reply, and the recovery read found it applied",
    AtomWriteLostNotApplied = "atom.write-lost-not-applied":
        "an atom's conditional write lost its reply, and the recovery read found it not applied",
    AtomWriteLostUnknown = "atom.write-lost-unknown":
        "an atom's conditional write lost its reply, and the recovery read could not tell (the node moved on): the swap failed as indeterminate",
    StmOptimisticCommitLostApplied = "stm.optimistic.commit-lost-applied":
        "an Optimistic commit's multi lost its reply, and the recovery read found it applied",
    StmOptimisticCommitLostNotApplied = "stm.optimistic.commit-lost-not-applied":
        "an Optimistic commit's multi lost its reply, and the recovery read found it not applied",
    StmOptimisticCommitLostUnknown = "stm.optimistic.commit-lost-unknown":
        "an Optimistic commit's multi lost its reply, and the recovery read could not tell",
    StmMvccBargedRunning = "stm.mvcc.barged-running":
        "an older Mvcc transaction barged a younger RUNNING one (killed its point)",
    StmMvccBargeRaceLost = "stm.mvcc.barge-race-lost":
        "an Mvcc barge found its victim no longer RUNNING (it reached COMMITTING first, or was killed by another)",
    StmMvccWasBarged = "stm.mvcc.was-barged":
        "an Mvcc transaction learnt at its move to COMMITTING that it had been barged, and retried",
    StmMvccBlocked = "stm.mvcc.blocked":
        "an Mvcc transaction found a ref it writes owned by a live transaction it may not barge, and waited for it",
    StmMvccStalePointConflict = "stm.mvcc.stale-point-conflict":
        "an Mvcc try whose read point was fixed without a sync read a ref committed past it, and retried rather than read a value that may be stale",
    StmMvccStaleMissingRef = "stm.mvcc.stale-missing-ref":
        "an Mvcc try whose read point was fixed without a sync found a ref missing (its server had not seen it created), and read again synced rather than fail with NoRef",
    StmMvccUnvalidatedRead = "stm.mvcc.unvalidated-read":
        "an Mvcc try read a ref for writing without a sync and came to commit without tagging it, and retried with a synced read point",
    StmMvccTagRedone = "stm.mvcc.tag-redone":
        "an Mvcc tagging (or its barge, or its look at an owner) lost a reply, and was sent again once the session was back instead of giving the try up",
    StmMvccCommittingLost = "stm.mvcc.committing-lost":
        "an Mvcc transaction's move to COMMITTING lost its reply, and its point was read to decide",
    StmMvccCommitLostApplied = "stm.mvcc.commit-lost-applied":
        "an Mvcc commit record's multi lost its reply, and the probe found it committed",
    StmMvccCommitLostNotApplied = "stm.mvcc.commit-lost-not-applied":
        "an Mvcc commit record's multi lost its reply, and the probe found it not committed",
    QueueClaimLostApplied = "queue.claim-lost-applied":
        "a queue take's claim lost its reply, and its receipt showed the claim applied",
    QueueClaimLostNotApplied = "queue.claim-lost-not-applied":
        "a queue take's claim lost its reply, and the missing receipt showed it not applied",
    AgentStepLostApplied = "agent.step-lost-applied":
        "an agent action's commit lost its reply, and the agent's state showed it applied",
    AgentSendLostRecovered = "agent.send-lost-recovered":
        "a send to an agent lost its reply, and was found queued or applied",
    LockTableCommitLostApplied = "lock-table.commit-lost-applied":
        "a lock-table transaction's multi lost its reply, and its marker showed it committed",
    LockTableCommitLostNotApplied = "lock-table.commit-lost-not-applied":
        "a lock-table transaction's multi lost its reply, and the missing marker showed it not applied",
    TwoPhaseDecidedByAnother = "two-phase-commit.decided-by-another":
        "a participant went to record the outcome and found another had recorded it first",
    SyncCheckFailed = "sync.check-failed":
        "a quorum sync's check was refused (its node missing or unreadable), and counted as synced because it went through the quorum",
    ClientSessionReplaced = "client.session-replaced":
        "a managed client's session ended and it opened the next one, its handles carrying on",
}

impl Mark {
    /// The mark named `name` (as [`Mark::name`] spells it).
    ///
    /// ```
    /// use avout::coverage::Mark;
    /// assert_eq!(Mark::from_name("election.leader-session-ended"), Some(Mark::ElectionLeaderSessionEnded));
    /// assert_eq!(Mark::from_name("no.such-mark"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Mark> {
        Mark::ALL.iter().copied().find(|m| m.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Counters running in the process, on any thread: while none is, [`reach`] reads nothing
/// else.
static COUNTING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's counts, while a [`Counter`] runs on it.
    static COUNTS: RefCell<Option<Counts>> = const { RefCell::new(None) };
}

/// Notes that the protocol reached `mark`: counted by the [`Counter`] running on this thread,
/// if any; otherwise nothing happens (see the [module docs](self) for the cost).
///
/// ```
/// avout::coverage::reach(avout::coverage::Mark::ClientSessionReplaced); // nobody counts: a no-op
/// ```
#[inline]
pub fn reach(mark: Mark) {
    if COUNTING.load(Ordering::Relaxed) == 0 {
        return;
    }
    count(mark);
}

#[cold]
#[inline(never)]
fn count(mark: Mark) {
    // During thread teardown the slot may be gone: nobody is counting there any more.
    let _ = COUNTS.try_with(|counts| {
        if let Some(counts) = counts.borrow_mut().as_mut() {
            counts.0[mark.index()] += 1;
        }
    });
}

/// How often each mark was reached.
///
/// ```
/// use avout::coverage::{Counts, Mark};
/// let mut a = Counts::default();
/// a.add_one(Mark::StmMvccBargedRunning);
/// let mut b = Counts::default();
/// b.add(&a);
/// b.add(&a);
/// assert_eq!(b.get(Mark::StmMvccBargedRunning), 2);
/// assert_eq!(b.reached().collect::<Vec<_>>(), vec![(Mark::StmMvccBargedRunning, 2)]);
/// assert_eq!(b.by_name().get("stm.mvcc.barged-running"), Some(&2));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Counts(Vec<u64>);

impl Default for Counts {
    fn default() -> Self {
        Counts(vec![0; Mark::ALL.len()])
    }
}

impl fmt::Debug for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.reached()).finish()
    }
}

impl Counts {
    /// How often `mark` was reached.
    pub fn get(&self, mark: Mark) -> u64 {
        self.0[mark.index()]
    }

    /// Counts `mark` once more.
    pub fn add_one(&mut self, mark: Mark) {
        self.0[mark.index()] += 1;
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Counts) {
        for (mine, theirs) in self.0.iter_mut().zip(&other.0) {
            *mine += theirs;
        }
    }

    /// The marks reached, with their counts, in declaration order.
    pub fn reached(&self) -> impl Iterator<Item = (Mark, u64)> + '_ {
        Mark::ALL
            .iter()
            .map(|&m| (m, self.get(m)))
            .filter(|&(_, n)| n > 0)
    }

    /// Whether no mark was reached.
    ///
    /// ```
    /// assert!(avout::coverage::Counts::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&n| n == 0)
    }

    /// The marks reached, by name.
    pub fn by_name(&self) -> BTreeMap<&'static str, u64> {
        self.reached().map(|(m, n)| (m.name(), n)).collect()
    }
}

/// Counts the marks reached on this thread from [`Counter::start`] to [`Counter::finish`].
///
/// Counters nest: an inner one counts what is reached while it runs, and its counts are also
/// the outer one's when it finishes.
///
/// ```
/// use avout::coverage::{self, Counter, Mark};
/// let outer = Counter::start();
/// coverage::reach(Mark::QueueClaimLostApplied);
/// let inner = Counter::start();
/// coverage::reach(Mark::QueueClaimLostApplied);
/// assert_eq!(inner.finish().get(Mark::QueueClaimLostApplied), 1);
/// assert_eq!(outer.finish().get(Mark::QueueClaimLostApplied), 2);
/// ```
#[must_use = "a counter counts until it is finished"]
pub struct Counter {
    outer: Option<Counts>,
    finished: bool,
}

impl fmt::Debug for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("coverage::Counter")
    }
}

impl Counter {
    /// Starts counting this thread's marks.
    pub fn start() -> Counter {
        COUNTING.fetch_add(1, Ordering::Relaxed);
        let outer = COUNTS.with(|c| c.borrow_mut().replace(Counts::default()));
        Counter {
            outer,
            finished: false,
        }
    }

    /// Stops counting and returns the counts.
    pub fn finish(mut self) -> Counts {
        self.stop()
    }

    fn stop(&mut self) -> Counts {
        self.finished = true;
        COUNTING.fetch_sub(1, Ordering::Relaxed);
        let outer = self.outer.take();
        COUNTS
            .try_with(|c| {
                let mut slot = c.borrow_mut();
                let mine = slot.take().unwrap_or_default();
                *slot = outer.map(|mut o| {
                    o.add(&mine);
                    o
                });
                mine
            })
            .unwrap_or_default()
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        if !self.finished {
            self.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_well_formed() {
        let mut names: Vec<&str> = Mark::ALL.iter().map(|m| m.name()).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "two marks share a name");
        for m in Mark::ALL {
            let name = m.name();
            assert!(name.contains('.'), "{name}: not area.what");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '.' || c == '-'),
                "{name}: not kebab-case"
            );
            assert_eq!(Mark::from_name(name), Some(*m));
            assert_eq!(m.index(), Mark::ALL.iter().position(|x| x == m).unwrap());
        }
    }

    #[test]
    fn nobody_counting_counts_nothing_and_a_dropped_counter_stops() {
        reach(Mark::LockGaveUpQueued);
        let counter = Counter::start();
        drop(counter);
        reach(Mark::LockGaveUpQueued);
        let counter = Counter::start();
        assert!(counter.finish().is_empty());
    }

    #[test]
    fn a_counter_counts_its_own_thread_only() {
        let counter = Counter::start();
        std::thread::spawn(|| {
            let other = Counter::start();
            reach(Mark::AgentSendLostRecovered);
            assert_eq!(other.finish().get(Mark::AgentSendLostRecovered), 1);
            reach(Mark::AgentSendLostRecovered);
        })
        .join()
        .unwrap();
        reach(Mark::AgentStepLostApplied);
        let counts = counter.finish();
        assert_eq!(counts.get(Mark::AgentSendLostRecovered), 0);
        assert_eq!(counts.get(Mark::AgentStepLostApplied), 1);
    }
}
