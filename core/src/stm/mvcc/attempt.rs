//! One try of an Mvcc transaction: [`Try`], the [`Attempt`] the frontend drives.
//!
//! Reads resolve at the try's read point. The first write of a ref starts its tagging
//! ([`TagMachine`]) and returns at once: the tag's requests travel with whatever the try sends
//! next — the body's next read, or the commit's first burst — and its replies are settled
//! there, before that step's own. The commit's prepare (`COMMITTING` and the write locks) is
//! sent right behind a tagging still in flight: if the tagging then finds a conflict or an
//! owner to wait for, the try removes its nodes (it is not `COMMITTING` for long enough to
//! matter: it writes nothing) and retries.

use std::collections::BTreeMap;

use futures::future::BoxFuture;

use crate::planted::{self, Bug};
use crate::{Coordination, CreateMode, Error, Op};

use super::super::StmError;
use super::super::protocol::{
    Attempt, Change, CommitPlan, Committed, Failure, RetryReason, Started, TryError, TxnSlot,
};
use super::ensure::{CleanupMachine, EnsureMachine};
use super::layout;
use super::locks::Held;
use super::{
    BARGES, Barging, Base, Halt, LOCK_WAIT_MS, Me, Mvcc, PrepareMachine, ReadMachine, Slot,
    TagMachine, WaitMachine, WriteMachine, max_value_len, too_large,
};

/// One try; see the [module docs](self).
pub(super) struct Try<'a, C: Coordination + ?Sized + 'static> {
    e: &'a Mvcc<C>,
    slot: &'a mut TxnSlot,
    /// The try's GUID: with the age, its transaction id.
    guid: u128,
    /// The transaction id, once the first write names it.
    txid: String,
    point: Option<i64>,
    /// Ensured refs and their read-lock nodes.
    ensured: BTreeMap<String, String>,
    /// Lock nodes a failed step may have left.
    leftovers: Vec<Held>,
    /// Refs whose tag this try may have created.
    tagged: Vec<String>,
    /// Whether this try's point may exist.
    point_made: bool,
    /// Taggings sent and not yet settled, oldest first.
    pending: Vec<Started<'a, C, TagMachine>>,
    /// What the settled taggings learnt, by ref.
    bases: BTreeMap<String, Base>,
}

impl<C: Coordination + ?Sized + 'static> Drop for Try<'_, C> {
    /// A try dropped mid-way (the `dosync` future was cancelled) may hold ephemerals — a lock
    /// node would block every writer of its ref until the session ends: remove them in the
    /// background (`Drop` cannot wait).
    fn drop(&mut self) {
        let (paths, held) = self.owned_nodes();
        if paths.is_empty() && held.is_empty() {
            return;
        }
        let zk = self.e.zk.clone();
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
        Halt::Interrupted => TryError::Retry(RetryReason::Conflict { name: None }),
        Halt::SessionLost(e) => TryError::Fail(StmError::SessionLost(e)),
        Halt::Zk(e) => TryError::Fail(StmError::from_zk(e)),
        Halt::Violation(m) => panic!("Mvcc protocol violation: {m}"),
    }
}

impl<'a, C: Coordination + ?Sized + 'static> Try<'a, C> {
    pub(super) fn new(e: &'a Mvcc<C>, slot: &'a mut TxnSlot, guid: u128) -> Self {
        Try {
            e,
            slot,
            guid,
            txid: String::new(),
            point: None,
            ensured: BTreeMap::new(),
            leftovers: Vec::new(),
            tagged: Vec::new(),
            point_made: false,
            pending: Vec::new(),
            bases: BTreeMap::new(),
        }
    }

    fn slot(&mut self) -> &mut Slot {
        self.slot
            .state
            .as_mut()
            .and_then(|s| s.downcast_mut::<Slot>())
            .expect("begin made the slot")
    }

    fn age(&mut self) -> i64 {
        let point = self.point.expect("a read point");
        self.slot().age.get_or_insert(point).to_owned()
    }

    /// Paths of the nodes this try created and may still hold, and its lock nodes.
    fn owned_nodes(&mut self) -> (Vec<String>, Vec<Held>) {
        let l = &self.e.layout;
        let mut paths: Vec<String> = self.tagged.iter().map(|n| l.tag(n, &self.txid)).collect();
        if self.point_made {
            paths.push(l.point(&self.txid));
        }
        paths.extend(std::mem::take(&mut self.ensured).into_values());
        (paths, std::mem::take(&mut self.leftovers))
    }

    /// Removes everything this try created and still holds. Taggings in flight are dropped:
    /// the deletes are ordered after their creates.
    async fn cleanup(&mut self) -> Result<(), Failure> {
        self.pending.clear();
        let (paths, held) = self.owned_nodes();
        self.tagged.clear();
        self.point_made = false;
        let mut m = CleanupMachine::of(paths, held);
        match self.e.run(&mut m).await {
            Ok(()) => Ok(()),
            Err(Halt::SessionLost(e)) => Err(StmError::SessionLost(e)),
            Err(Halt::Zk(e)) => Err(StmError::from_zk(e)),
            Err(other) => unreachable!("cleanup stopped with {other:?}"),
        }
    }

    /// Cleans up, then reports `h` (or the cleanup's own failure, which is worse). A blocked
    /// try then waits for its blocker's point to change (Clojure's `blockAndBail`), so that
    /// its retry does not find the same owner at once.
    async fn give_up(&mut self, h: Halt, name: &str) -> TryError {
        let blocker = match &h {
            Halt::Blocked { blocker, .. } => Some(self.e.layout.point(blocker)),
            _ => None,
        };
        let reason = halt_to_try(h, name);
        if let Err(f) = self.cleanup().await {
            return match reason {
                TryError::Fail(first) => TryError::Fail(first),
                TryError::Retry(_) => TryError::Fail(f),
            };
        }
        if let Some(path) = blocker {
            let mut wait = WaitMachine::new(&path, LOCK_WAIT_MS);
            if let Err(Halt::SessionLost(e)) = self.e.run(&mut wait).await {
                return TryError::Fail(StmError::SessionLost(e));
            }
        }
        reason
    }

    async fn give_up_with(&mut self, f: Failure) -> TryError {
        let _ = self.cleanup().await;
        TryError::Fail(f)
    }

    fn count_read_fault(&self, h: &Halt) {
        if *h == Halt::ReadFault {
            self.e.counters.add(&self.e.counters.read_faults, 1);
        }
    }

    /// Sends the tagging of `names` (and the point, on the first): it rides with the
    /// requests already in flight, if any.
    fn start_tag(&mut self, names: Vec<String>) {
        let e = self.e;
        let age = self.age();
        if self.txid.is_empty() {
            self.txid = layout::txid(age, self.guid);
        }
        let me = Me {
            txid: self.txid.clone(),
            age,
            read_point: self.point.expect("a read point"),
        };
        let barging = Barging {
            may_barge: self.slot().started.elapsed() >= e.config.barge_wait,
            barge_committing: planted::active(Bug::StmBargeCommitting),
        };
        let mut m = TagMachine::new(&e.root, me, names.clone(), barging);
        if self.point_made {
            m = m.without_point();
        }
        self.point_made = true;
        self.tagged.extend(names);
        let riding = !self.pending.is_empty();
        self.pending.push(Started::start(&*e.zk, m, riding));
    }

    /// Collects the replies of the taggings in flight (barging as they decide).
    async fn settle(&mut self) -> Result<(), Halt> {
        let counters = &self.e.counters;
        while !self.pending.is_empty() {
            let tagged = self.pending[0].finish(counters).await;
            self.pending.remove(0);
            let tagged = tagged?;
            if tagged.barged > 0 {
                let n = u64::from(tagged.barged);
                counters.add(&counters.barges, n);
                BARGES.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            }
            for base in tagged.bases {
                self.bases.insert(base.name.clone(), base);
            }
        }
        Ok(())
    }

    async fn commit_writes(&mut self, plan: CommitPlan<'_>) -> Result<Committed, TryError> {
        let e = self.e;
        let l = e.layout.clone();
        if self.point.is_none() {
            // Every ref is read before it is written; a plan without reads has no read
            // point yet: take one now.
            let name = plan
                .writes
                .first()
                .map(|(n, _)| n.clone())
                .or_else(|| plan.commutes.first().map(|c| c.name.clone()))
                .expect("a writing plan");
            self.read(&name).await?;
        }
        // Writes the body did not announce (a commute of a ref it also read becomes a write
        // at commit) are tagged now; a commit of commutes only still needs its point.
        let untagged: Vec<String> = plan
            .writes
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| !self.tagged.contains(n))
            .collect();
        if !untagged.is_empty() || !self.point_made {
            self.start_tag(untagged);
        }
        let age = self.age();

        let mut lock: Vec<(String, u128)> = plan
            .writes
            .iter()
            .map(|(n, _)| n)
            .chain(plan.commutes.iter().map(|c| &c.name))
            .map(|n| (n.clone(), e.zk.new_guid()))
            .collect();
        lock.sort();
        let release_first: Vec<String> = lock
            .iter()
            .filter_map(|(n, _)| self.ensured.remove(n))
            .collect();
        let commute_names: Vec<String> = plan.commutes.iter().map(|c| c.name.clone()).collect();
        let prep = PrepareMachine::new(
            &e.root,
            &self.txid,
            age,
            lock,
            commute_names,
            release_first,
            e.session(),
            LOCK_WAIT_MS,
        );
        // Sent right behind the taggings in flight: one round trip for both.
        let riding = !self.pending.is_empty();
        let mut prep = Started::start(&*e.zk, prep, riding);
        if let Err(h) = self.settle().await {
            self.leftovers.extend(prep.machine().held());
            drop(prep);
            return Err(self.give_up(h, "").await);
        }
        let prepared = match prep.finish(&e.counters).await {
            Ok(p) => p,
            Err(h) => {
                if h == Halt::Barged {
                    e.counters.add(&e.counters.killed, 1);
                }
                self.leftovers.extend(prep.machine().held());
                drop(prep);
                return Err(self.give_up(h, "").await);
            }
        };
        drop(prep);
        self.leftovers
            .extend(prepared.locks.iter().map(|(_, n)| Held::Node(n.clone())));

        // The commit record.
        let mut ops = vec![Op::delete(
            l.point(&self.txid),
            Some(prepared.committing_version),
        )];
        let mut deletes: Vec<String> = Vec::new();
        let mut changes = Vec::new();
        let txid = self.txid.clone();
        let add = |ops: &mut Vec<Op>,
                   deletes: &mut Vec<String>,
                   name: &str,
                   version: i32,
                   history: &[String],
                   new: Vec<u8>| {
            let node = l.history_node(name, &txid, version + 1);
            ops.push(Op::create(node, new.clone(), CreateMode::Persistent));
            ops.push(Op::set_data(l.ref_node(name), new, Some(version)));
            deletes.extend(
                layout::trim_after_commit(history, e.config.max_history)
                    .into_iter()
                    .map(|n| crate::path::join(&l.history(name), &n)),
            );
        };
        for (name, new) in &plan.writes {
            let base = self.bases.get(name).expect("every write is tagged").clone();
            if new.len() > max_value_len() {
                return Err(self.give_up_with(too_large(name, new.len())).await);
            }
            add(
                &mut ops,
                &mut deletes,
                name,
                base.version,
                &base.history,
                new.clone(),
            );
            ops.push(Op::delete(l.tag(name, &self.txid), None));
            changes.push(Change {
                name: name.clone(),
                old: base.value,
                new: new.clone(),
            });
        }
        let mut commutes = plan.commutes;
        for (c, newest) in commutes.iter_mut().zip(&prepared.commuted) {
            let new = match (c.recompute)(&newest.value) {
                Ok(v) => v,
                Err(f) => return Err(self.give_up_with(f).await),
            };
            if new.len() > max_value_len() {
                return Err(self.give_up_with(too_large(&c.name, new.len())).await);
            }
            add(
                &mut ops,
                &mut deletes,
                &c.name,
                newest.version,
                &newest.history,
                new.clone(),
            );
            changes.push(Change {
                name: c.name.clone(),
                old: newest.value.clone(),
                new,
            });
        }
        if let Err(Error::DataTooLarge { len, .. }) = Op::validate_all(&ops) {
            let name = changes.first().map_or("", |c| c.name.as_str()).to_owned();
            return Err(self.give_up_with(too_large(&name, len)).await);
        }
        // The lock nodes and the trimmed history go in the same `multi`: one write instead of
        // three. The history was listed with the ref version the `multi` checks, so it is the
        // history the trim applies to whenever the `multi` applies at all.
        let lock_nodes = prepared.locks.iter().map(|(_, n)| n.clone());
        for node in lock_nodes
            .chain(self.ensured.values().cloned())
            .chain(deletes)
        {
            ops.push(Op::delete(node, None));
        }
        let point = l.point(&self.txid);
        let mut write = WriteMachine::new(ops, Vec::new(), &point, &l.points());
        match e.run(&mut write).await {
            Ok(w) => {
                if w.recovered {
                    e.counters.add(&e.counters.recoveries, 1);
                }
                // The multi removed the point, tags and locks.
                self.point_made = false;
                self.tagged.clear();
                self.leftovers.clear();
                self.ensured.clear();
                changes.sort_by(|a, b| a.name.cmp(&b.name));
                Ok(Committed { changes })
            }
            Err(Halt::Violation(m)) => panic!(
                "Mvcc protocol violation: {m} (transaction {}, the planted bug \
                 stm-barge-committing does this)",
                self.txid
            ),
            // The commit may have applied: nothing to clean (the session took the rest).
            Err(Halt::SessionLost(err)) => Err(TryError::Fail(StmError::SessionLost(err))),
            Err(h) => Err(self.give_up(h, "").await),
        }
    }
}

impl<C: Coordination + ?Sized + 'static> Attempt for Try<'_, C> {
    fn read<'b>(&'b mut self, name: &'b str) -> BoxFuture<'b, Result<Vec<u8>, TryError>> {
        Box::pin(async move {
            let e = self.e;
            let l = &e.layout;
            let m = ReadMachine::new(
                &l.ref_node(name),
                &l.history(name),
                &l.points(),
                self.point,
                !planted::active(Bug::StmNoReadPointCheck),
            );
            // Sent right behind the taggings in flight, whose replies come first.
            let mut read = Started::start(&*e.zk, m, !self.pending.is_empty());
            if let Err(h) = self.settle().await {
                drop(read);
                return Err(self.give_up(h, name).await);
            }
            let out = read.finish(&e.counters).await;
            drop(read);
            match out {
                Ok(out) => {
                    if self.point.is_none() {
                        self.point = Some(out.read_point);
                        self.age();
                    }
                    Ok(out.value)
                }
                Err(h) => {
                    self.count_read_fault(&h);
                    Err(self.give_up(h, name).await)
                }
            }
        })
    }

    fn write<'b>(&'b mut self, name: &'b str) -> BoxFuture<'b, Result<(), TryError>> {
        Box::pin(async move {
            if !self.tagged.iter().any(|n| n == name) {
                self.start_tag(vec![name.to_owned()]);
            }
            Ok(())
        })
    }

    fn ensure<'b>(&'b mut self, name: &'b str) -> BoxFuture<'b, Result<(), TryError>> {
        Box::pin(async move {
            let point = match self.point {
                Some(p) => p,
                None => {
                    self.read(name).await?;
                    self.point.expect("read fixed it")
                }
            };
            if let Err(h) = self.settle().await {
                return Err(self.give_up(h, name).await);
            }
            let guid = self.e.zk.new_guid();
            let mut m = EnsureMachine::new(
                &self.e.root,
                name,
                point,
                guid,
                self.e.session(),
                LOCK_WAIT_MS,
            );
            match self.e.run(&mut m).await {
                Ok(node) => {
                    self.ensured.insert(name.to_owned(), node);
                    Ok(())
                }
                Err(h) => {
                    self.leftovers.extend(m.held());
                    Err(self.give_up(h, name).await)
                }
            }
        })
    }

    fn commit<'b>(
        &'b mut self,
        plan: CommitPlan<'b>,
    ) -> BoxFuture<'b, Result<Committed, TryError>> {
        Box::pin(async move {
            if plan.is_read_only() {
                // Snapshot reads need no validation; ensured refs are released.
                return match self.cleanup().await {
                    Ok(()) => Ok(Committed::default()),
                    Err(f) => Err(TryError::Fail(f)),
                };
            }
            self.commit_writes(plan).await
        })
    }

    fn abort(&mut self) -> BoxFuture<'_, Result<(), Failure>> {
        Box::pin(async move { self.cleanup().await })
    }
}
