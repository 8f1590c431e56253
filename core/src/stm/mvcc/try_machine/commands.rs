//! The commands a try is driven by: the body's reads, writes and `ensure`s, the commit, its
//! recomputation and the abort. Each is answered by one [`Outcome`].

use crate::machine::Millis;

use super::super::Halt;
use super::{AfterCleanup, AfterRead, CommitOrder, Outcome, Phase, TryMachine};

impl TryMachine {
    /// Reads ref `name` at the try's read point (the first read fixes it); answered by
    /// [`Outcome::Read`].
    ///
    /// ```
    /// let mut m = avout::stm::mvcc::TryMachine::new(avout::stm::mvcc::TryConfig { root: "/s".into(), guid: 1, session: 1, age: None, max_history: 10, planted: avout::planted::Bugs::NONE });
    /// m.read(avout::machine::Millis(0), "a");
    /// ```
    pub fn read(&mut self, now: Millis, name: &str) {
        self.command(now, |m, now| {
            if m.gave_up_unvalidated(now) {
                return;
            }
            m.start_read(now, name, AfterRead::Report, false)
        });
    }

    /// Reads ref `name` that the body is about to write ([`write`](Self::write) MUST follow
    /// before any other command); answered by [`Outcome::Read`].
    ///
    /// On a transaction's first try, a first read for writing fixes the read point without
    /// a `sync`: the tagging that follows is a write, ordered after every commit acknowledged
    /// before the try began, and its read of the ref node (a commit past the read point is a
    /// conflict) then validates the value read, so the try's first round trip writes
    /// nothing. Later reads of that try treat a ref committed past the read point as a
    /// conflict rather than read its history (the point may be stale), and a try that does
    /// not tag the ref after all is given up and retried with a synced read point. Retries
    /// always sync.
    ///
    /// ```
    /// use avout::machine::{Machine, Millis, Request};
    /// use avout::stm::mvcc::{TryConfig, TryMachine};
    /// let mut m = TryMachine::new(TryConfig { root: "/s".into(), guid: 7, session: 3, age: None, max_history: 10, planted: avout::planted::Bugs::NONE });
    /// m.handle_session(Millis(0), avout::SessionState::Connected);
    /// m.read_for_write(Millis(0), "a");
    /// // The clock and the ref, without a `sync`.
    /// assert!(matches!(m.poll_request(), Some((_, Request::Exists { .. }))));
    /// ```
    pub fn read_for_write(&mut self, now: Millis, name: &str) {
        self.command(now, |m, now| {
            if m.gave_up_unvalidated(now) {
                return;
            }
            let first_try = m.config.age.is_none() && m.point.is_none();
            m.start_read(now, name, AfterRead::Report, first_try)
        });
    }

    /// Gives the try up (a conflict: the retry syncs) if a read for writing is still
    /// unvalidated: any command but the write that tags it leaves it so. Returns whether it
    /// gave up.
    fn gave_up_unvalidated(&mut self, now: Millis) -> bool {
        let Some(name) = self.unvalidated.take() else {
            return false;
        };
        crate::coverage::reach(crate::coverage::Mark::StmMvccUnvalidatedRead);
        self.give_up(now, Halt::Conflict(Some(name)));
        true
    }

    /// Announces the body's first write of `name`: its tagging is sent with the try's next
    /// requests; answered at once by [`Outcome::Done`]. `may_barge`: BARGE-WAIT has passed.
    ///
    /// # Panics
    ///
    /// Before the try's first read (every ref is read before it is written).
    ///
    /// ```
    /// let mut m = avout::stm::mvcc::TryMachine::new(avout::stm::mvcc::TryConfig { root: "/s".into(), guid: 1, session: 1, age: Some(1), max_history: 10, planted: avout::planted::Bugs::NONE });
    /// # use avout::machine::Machine;
    /// m.handle_session(avout::machine::Millis(0), avout::SessionState::Connected);
    /// m.read(avout::machine::Millis(0), "a");
    /// ```
    pub fn write(&mut self, now: Millis, name: &str, may_barge: bool) {
        self.command(now, |m, now| {
            if !m.tagged.iter().any(|n| n == name) {
                m.start_tag(now, vec![name.to_owned()], may_barge);
            }
            m.output = Some(Outcome::Done);
        });
    }

    /// Ensures ref `name` (its read lock, held until the try ends), naming the lock node with
    /// `guid`; answered by [`Outcome::Done`].
    ///
    /// ```
    /// let mut m = avout::stm::mvcc::TryMachine::new(avout::stm::mvcc::TryConfig { root: "/s".into(), guid: 1, session: 1, age: None, max_history: 10, planted: avout::planted::Bugs::NONE });
    /// m.ensure(avout::machine::Millis(0), "a", 5);
    /// ```
    pub fn ensure(&mut self, now: Millis, name: &str, guid: u128) {
        self.command(now, |m, now| {
            if m.gave_up_unvalidated(now) {
                return;
            }
            if m.point.is_none() {
                m.start_read(now, name, AfterRead::Ensure(guid), false);
            } else {
                m.phase = Phase::Ensuring {
                    name: name.to_owned(),
                    guid,
                };
            }
        });
    }

    /// Commits `order`; answered by [`Outcome::Committed`], or first by
    /// [`Outcome::Recompute`] when it commutes refs. An order without writes, commutes or
    /// sends releases what the try holds and is answered by [`Outcome::Done`]. An order with
    /// sends only MUST come from a try that read a ref (it has a read point); the caller
    /// commits a try that touched no ref otherwise.
    ///
    /// ```
    /// use avout::stm::mvcc::{CommitOrder, TryConfig, TryMachine};
    /// let mut m = TryMachine::new(TryConfig { root: "/s".into(), guid: 1, session: 1, age: None, max_history: 10, planted: avout::planted::Bugs::NONE });
    /// m.commit(avout::machine::Millis(0), CommitOrder { writes: vec![], commutes: vec![], lock: vec![], may_barge: false, sends: vec![] });
    /// ```
    pub fn commit(&mut self, now: Millis, order: CommitOrder) {
        self.command(now, |m, now| {
            // A commit tags what it writes: only a ref read for writing and not written is
            // left unvalidated.
            let written = |n: &String| order.writes.iter().any(|(w, _)| w == n);
            if !m.unvalidated.as_ref().is_none_or(written) && m.gave_up_unvalidated(now) {
                return;
            }
            if order.writes.is_empty() && order.commutes.is_empty() && order.sends.is_empty() {
                m.start_cleanup(now, AfterCleanup::Finish);
            } else if m.point.is_none() {
                // Every ref is read before it is written; a plan without reads has no read
                // point yet: take one now.
                let name = order
                    .writes
                    .first()
                    .map(|(n, _)| n.clone())
                    .or_else(|| order.commutes.first().cloned())
                    .expect("a writing order, or sends from a try that read a ref");
                m.start_read(now, &name, AfterRead::Commit(order), false);
            } else {
                m.prepare(now, order);
            }
        });
    }

    /// Answers [`Outcome::Recompute`]: the commuted refs' new bytes, in the order asked.
    ///
    /// # Panics
    ///
    /// If no recomputation was asked for.
    ///
    /// ```should_panic
    /// let mut m = avout::stm::mvcc::TryMachine::new(avout::stm::mvcc::TryConfig { root: "/s".into(), guid: 1, session: 1, age: None, max_history: 10, planted: avout::planted::Bugs::NONE });
    /// m.recomputed(avout::machine::Millis(0), vec![]);
    /// ```
    pub fn recomputed(&mut self, now: Millis, values: Vec<Vec<u8>>) {
        let Phase::Recomputing(order, prepared) = std::mem::replace(&mut self.phase, Phase::Idle)
        else {
            panic!("recomputed without a Recompute outcome")
        };
        self.write_record(now, order, prepared, values);
        self.advance(now);
    }

    /// Gives the try up: removes what it created; answered by [`Outcome::Done`] (or
    /// [`Outcome::Failed`] if the cleanup could not finish).
    ///
    /// ```
    /// let mut m = avout::stm::mvcc::TryMachine::new(avout::stm::mvcc::TryConfig { root: "/s".into(), guid: 1, session: 1, age: None, max_history: 10, planted: avout::planted::Bugs::NONE });
    /// # use avout::machine::Machine;
    /// m.handle_session(avout::machine::Millis(0), avout::SessionState::Connected);
    /// m.abort(avout::machine::Millis(0));
    /// assert_eq!(m.poll_output(), Some(avout::stm::mvcc::Outcome::Done));
    /// ```
    pub fn abort(&mut self, now: Millis) {
        self.phase = Phase::Idle;
        self.output = None;
        self.start_cleanup(now, AfterCleanup::Finish);
        self.advance(now);
    }

    fn command(&mut self, now: Millis, start: impl FnOnce(&mut Self, Millis)) {
        assert!(
            self.phase == Phase::Idle && self.output.is_none(),
            "a command while another is in progress ({:?})",
            self.phase
        );
        start(self, now);
        self.advance(now);
    }
}
