//! One try of an Mvcc transaction: [`Try`], the [`Attempt`] the frontend drives, a thin
//! driver of [`TryMachine`] (which holds the whole protocol of a try, so that the model
//! checker runs it too).
//!
//! Reads resolve at the try's read point. The first write of a ref starts its tagging and
//! returns at once: the tag's requests travel with whatever the try sends next — the body's
//! next read, or the commit's first burst — and its replies are settled there, before that
//! step's own. The commit's prepare (`COMMITTING` and the write locks) is sent right behind a
//! tagging still in flight: if the tagging then finds a conflict or an owner to wait for, the
//! try removes its nodes (it is not `COMMITTING` for long enough to matter: it writes nothing)
//! and retries.

use futures::future::BoxFuture;

use crate::client::Session;
use crate::{Coordination, Error};

use super::super::StmError;
use super::super::protocol::{
    Attempt, CommitPlan, Committed, Failure, RetryReason, Started, TryError, TxnSlot,
};
use super::ensure::CleanupMachine;
use super::{BARGES, CommitOrder, Halt, Mvcc, Outcome, Slot, TryConfig, TryMachine, too_large};

/// One try; see the [module docs](self).
pub(super) struct Try<'a> {
    e: &'a Mvcc,
    zk: &'a Session,
    slot: &'a mut TxnSlot,
    run: Started<'a, dyn Coordination, TryMachine>,
}

impl Drop for Try<'_> {
    /// A try dropped mid-way (the `dosync` future was cancelled) may hold ephemerals — a lock
    /// node would block every writer of its ref until the session ends: remove them in the
    /// background (`Drop` cannot wait).
    fn drop(&mut self) {
        let (paths, held) = self.run.machine().owned_nodes();
        if paths.is_empty() && held.is_empty() {
            return;
        }
        let zk = self.zk.clone();
        let mut m = CleanupMachine::of(paths, held);
        crate::lock::spawn_cleanup(async move {
            match crate::machine::drive(&*zk, &mut m).await {
                Ok(()) | Err(Halt::SessionLost(_)) => Ok(()),
                Err(Halt::Zk(e)) => Err(e),
                Err(other) => Err(Error::Other(format!("cleanup stopped: {other:?}"))),
            }
        });
    }
}

pub(super) fn halt_to_try(h: Halt, name: &str) -> TryError {
    match h {
        Halt::NoRef(n) => TryError::Fail(StmError::NoRef { name: n }),
        Halt::ReadFault => TryError::Retry(RetryReason::ReadFault {
            name: name.to_owned(),
        }),
        Halt::Conflict(name) => TryError::Retry(RetryReason::Conflict { name }),
        Halt::Barged => TryError::Retry(RetryReason::Barged),
        Halt::Blocked { name, .. } => TryError::Retry(RetryReason::Conflict { name }),
        Halt::Interrupted => TryError::Retry(RetryReason::Interrupted),
        Halt::SessionLost(e) => TryError::Fail(StmError::SessionLost(e)),
        Halt::Zk(e) => TryError::Fail(StmError::from_zk(e)),
        Halt::TooLarge { name, len } => TryError::Fail(too_large(&name, len)),
        Halt::Violation(m) => panic!("Mvcc protocol violation: {m}"),
    }
}

impl<'a> Try<'a> {
    pub(super) fn new(e: &'a Mvcc, zk: &'a Session, slot: &'a mut TxnSlot, guid: u128) -> Self {
        let age = Self::slot_of(slot).age;
        let machine = TryMachine::new(TryConfig {
            root: e.root.clone(),
            guid,
            session: zk.session().id.0,
            age,
            max_history: e.config.max_history,
            planted: e.config.planted,
        });
        Try {
            e,
            zk,
            slot,
            run: Started::start(&**zk, machine, false),
        }
    }

    fn slot_of(slot: &mut TxnSlot) -> &mut Slot {
        slot.state
            .as_mut()
            .and_then(|s| s.downcast_mut::<Slot>())
            .expect("begin made the slot")
    }

    /// Whether BARGE-WAIT has passed since the transaction started.
    fn may_barge(&mut self) -> bool {
        Self::slot_of(self.slot).started.elapsed() >= self.e.config.barge_wait
    }

    /// Gives the machine a command and drives it to its answer, counting what it did.
    async fn step(
        &mut self,
        command: impl FnOnce(&mut TryMachine, crate::machine::Millis),
    ) -> Outcome {
        let now = self.run.now();
        command(self.run.machine_mut(), now);
        let out = self.run.finish(&self.e.counters).await;
        let machine = self.run.machine_mut();
        let stats = machine.take_stats();
        if let Some(age) = machine.age() {
            Self::slot_of(self.slot).age.get_or_insert(age);
        }
        let c = &self.e.counters;
        c.add(&c.barges, stats.barges);
        BARGES.fetch_add(stats.barges, std::sync::atomic::Ordering::Relaxed);
        c.add(&c.killed, stats.killed);
        c.add(&c.read_faults, stats.read_faults);
        c.add(&c.recoveries, stats.recoveries);
        out
    }

    async fn commit_writes(&mut self, plan: CommitPlan<'_>) -> Result<Committed, TryError> {
        let _e = self.e;
        let mut lock: Vec<(String, u128)> = plan
            .writes
            .iter()
            .map(|(n, _)| n)
            .chain(plan.commutes.iter().map(|c| &c.name))
            .map(|n| (n.clone(), self.zk.new_guid()))
            .collect();
        lock.sort();
        let order = CommitOrder {
            writes: plan.writes,
            commutes: plan.commutes.iter().map(|c| c.name.clone()).collect(),
            lock,
            may_barge: self.may_barge(),
            sends: plan.sends,
        };
        let mut commutes = plan.commutes;
        let mut out = self.step(|m, now| m.commit(now, order)).await;
        loop {
            match out {
                Outcome::Recompute(newest) => {
                    let mut values = Vec::with_capacity(newest.len());
                    for (c, newest) in commutes.iter_mut().zip(&newest) {
                        match (c.recompute)(&newest.value) {
                            Ok(v) => values.push(v),
                            Err(f) => {
                                // The recomputation's failure is the one to report.
                                let _ = self.step(|m, now| m.abort(now)).await;
                                return Err(TryError::Fail(f));
                            }
                        }
                    }
                    out = self.step(|m, now| m.recomputed(now, values)).await;
                }
                Outcome::Committed(changes) => return Ok(Committed { changes }),
                Outcome::Failed(Halt::Violation(m)) => panic!(
                    "Mvcc protocol violation: {m} (transaction {}, the planted bug \
                     stm-barge-committing does this)",
                    self.run.machine().txid()
                ),
                Outcome::Failed(h) => return Err(halt_to_try(h, "")),
                other => unreachable!("a commit answered {other:?}"),
            }
        }
    }
}

/// The failure of a step that cannot ask for a retry (a cleanup's).
fn failure(h: Halt) -> Failure {
    match halt_to_try(h, "") {
        TryError::Fail(f) => f,
        TryError::Retry(r) => unreachable!("a cleanup asked for a retry: {r:?}"),
    }
}

impl Try<'_> {
    /// A read of `name` by the machine's `command` (`read` or `read_for_write`).
    fn read_by<'b>(
        &'b mut self,
        name: &'b str,
        command: fn(&mut TryMachine, crate::machine::Millis, &str),
    ) -> BoxFuture<'b, Result<Vec<u8>, TryError>> {
        Box::pin(async move {
            match self.step(|m, now| command(m, now, name)).await {
                Outcome::Read(value) => Ok(value),
                Outcome::Failed(h) => Err(halt_to_try(h, name)),
                other => unreachable!("a read answered {other:?}"),
            }
        })
    }
}

impl Attempt for Try<'_> {
    fn read<'b>(&'b mut self, name: &'b str) -> BoxFuture<'b, Result<Vec<u8>, TryError>> {
        self.read_by(name, TryMachine::read)
    }

    fn read_for_write<'b>(&'b mut self, name: &'b str) -> BoxFuture<'b, Result<Vec<u8>, TryError>> {
        self.read_by(name, TryMachine::read_for_write)
    }

    fn write<'b>(&'b mut self, name: &'b str) -> BoxFuture<'b, Result<(), TryError>> {
        Box::pin(async move {
            let may_barge = self.may_barge();
            match self.step(|m, now| m.write(now, name, may_barge)).await {
                Outcome::Done => Ok(()),
                other => unreachable!("a write answered {other:?}"),
            }
        })
    }

    fn ensure<'b>(&'b mut self, name: &'b str) -> BoxFuture<'b, Result<(), TryError>> {
        Box::pin(async move {
            let guid = self.zk.new_guid();
            match self.step(|m, now| m.ensure(now, name, guid)).await {
                Outcome::Done => Ok(()),
                Outcome::Failed(h) => Err(halt_to_try(h, name)),
                other => unreachable!("an ensure answered {other:?}"),
            }
        })
    }

    fn commit<'b>(
        &'b mut self,
        plan: CommitPlan<'b>,
    ) -> BoxFuture<'b, Result<Committed, TryError>> {
        Box::pin(async move {
            let touched_no_ref = plan.reads.is_empty() && plan.ensures.is_empty();
            if plan.writes.is_empty() && plan.commutes.is_empty() && touched_no_ref {
                // Sends only: nothing to serialize against, no commit record to write.
                let sends = plan.sends;
                match self.step(|m, now| m.abort(now)).await {
                    Outcome::Done => {}
                    Outcome::Failed(h) => return Err(TryError::Fail(failure(h))),
                    other => unreachable!("a cleanup answered {other:?}"),
                }
                return super::super::protocol::send_only(self.zk, &self.e.counters, sends).await;
            }
            if plan.is_read_only() {
                // Snapshot reads need no validation; ensured refs are released.
                return match self.step(|m, now| m.abort(now)).await {
                    Outcome::Done => Ok(Committed::default()),
                    Outcome::Failed(h) => Err(TryError::Fail(failure(h))),
                    other => unreachable!("a cleanup answered {other:?}"),
                };
            }
            self.commit_writes(plan).await
        })
    }

    fn abort(&mut self) -> BoxFuture<'_, Result<(), Failure>> {
        Box::pin(async move {
            match self.step(|m, now| m.abort(now)).await {
                Outcome::Done => Ok(()),
                Outcome::Failed(h) => Err(failure(h)),
                other => unreachable!("an abort answered {other:?}"),
            }
        })
    }
}
