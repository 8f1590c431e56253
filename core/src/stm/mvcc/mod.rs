//! Protocol [`Mvcc`](super::Protocol::Mvcc): Avout's ZooKeeper recipe for a distributed MVCC
//! STM, with its defects fixed and its round trips cut from ~18 sequential ones (46 requests,
//! measured) to 4.
//!
//! # Nodes
//!
//! ```text
//! <root>/stm/history                  the clock (its pzxid/mzxid: the newest commit point)
//! <root>/stm/history/t-<GUID>         a live transaction's point (ephemeral): "<STATE> <age>"
//! <root>/refs/<name>                  the newest committed value; its mzxid is its commit point
//! <root>/refs/<name>/lock/…           the ref's read-write lock (crate::lock)
//! <root>/refs/<name>/history/<TXID>-<VERSION>   committed values; czxid = commit point
//! <root>/refs/<name>/txn/<TXID>       the tag of the transaction about to write it (ephemeral)
//! ```
//!
//! # The clock
//!
//! The recipe numbers its clock ticks with sequential `t-` nodes and must then lock every ref
//! it reads, because a commit point can be allocated before its values are written. Here the
//! clock is ZooKeeper's zxid, which totally orders every change: a commit is **one `multi`**,
//! so its commit point is that `multi`'s zxid, the `czxid` of the history nodes it creates and
//! the `mzxid` of the ref nodes it sets. A try's **read point** is the newest commit point when
//! it first reads: every commit deletes its transaction point, moving the clock node's `pzxid`
//! (creating a ref sets its data, moving its `mzxid`), so the clock node's metadata, read after
//! a `sync`, names a zxid at or after every commit acknowledged so far, and every later read of
//! this session sees all of them. A read returns the newest value committed at or before the
//! read point — the ref node itself when its `mzxid` is, else the history node with the largest
//! `czxid` that is — so a try reads a consistent snapshot without taking any lock, and a read
//! never waits for a writer.
//!
//! # A transaction
//!
//! 1. **Read** (first touch of each ref): `sync`, the clock (first read only) and the ref node,
//!    in one round trip ([`ReadMachine`]). A value no longer in the history is a read fault:
//!    the try is retried and the fault counted.
//! 2. **Ensure**: the ref's read lock, held until the try ends, then a check that nothing was
//!    committed to it after the read point ([`EnsureMachine`]).
//! 3. **Tag** (commit of a writing try, one round trip, [`TagMachine`]): the transaction's
//!    point `RUNNING`, a tag on each written ref, the ref node (the read-point check: a commit
//!    after the read point is a conflict) and the tags of others. An older transaction barges a
//!    younger `RUNNING` one after BARGE-WAIT by compare-and-set to `KILLED`; a `COMMITTING` one
//!    is never killed: the younger (or not yet impatient) transaction waits for the other's
//!    point to change and retries.
//! 4. **Prepare** (one round trip, [`PrepareMachine`]): compare-and-set of the point to
//!    `COMMITTING`, sent with the write-lock requests of every written and commuted ref; then the
//!    commuted refs' newest values are read under their locks and recomputed.
//! 5. **Write** (one round trip, [`WriteMachine`]): one `multi` deleting the point (at its
//!    `COMMITTING` version: `COMMITTED`), creating the history nodes, setting the ref nodes at
//!    the versions read when tagging, and deleting the tags; the lock deletes and history trims
//!    travel right behind it.
//!
//! A single-ref `alter` is thus 4 round trips; a read-only transaction of any size is one per
//! ref read and nothing at commit.
//!
//! # Isolation
//!
//! Writes are serializable among themselves: each commit is conditional on the version of every
//! written ref read at or before its read point. Plain reads see a consistent snapshot (snapshot
//! isolation, as Clojure's refs): a transaction that reads `a` and writes `b` may commit while
//! another writes `a` (write skew) unless it [`ensure`](super::Tx::ensure)s `a`.
//!
//! # What is fixed in the recipe
//!
//! - **No wedged refs.** The commit record is one `multi`: a client that dies between
//!   `COMMITTING` and `COMMITTED` leaves no half-written commit, and its point, tags and locks
//!   are ephemerals that go with its session. (Avout's persistent `COMMITTING` point and
//!   separately written values would have to be waited on forever by a reader that wanted a
//!   consistent snapshot.)
//! - **Session loss aborts cleanly**: [`StmError::SessionLost`](super::StmError), nothing half
//!   written. A connection loss before the commit retries the try after removing whatever it
//!   created (by exact name: ids are GUIDs); a lost commit reply is resolved by reading whether
//!   its first history node exists.
//! - **Bounded history**: points are removed by the commit (or the abort) that ends them and by
//!   session expiry; at most MAX-HISTORY values per ref are kept (never fewer than the newest two
//!   while a commit is landing, so the newest committed value is never dropped).
//! - **Errors surface**: the retry limit, validators, session loss and refusals are typed
//!   errors; nothing is printed and dropped.
//! - **Ensure really excludes writers**, through [`crate::lock`]'s read-write lock.
//!
//! # Round trips
//!
//! Counted by [`StmStats`](super::StmStats) and the simulator's request counter, uncontended
//! (test `stm_mvcc::round_trips_per_kind`):
//!
//! | transaction | requests | round trips |
//! |---|---|---|
//! | read-only, one ref | 3 | 1 |
//! | read-only, two refs | 5 | 2 |
//! | alter one ref | 13 | 4 |
//! | alter two refs (transfer) | 22 | 5 |
//! | commute one ref | 11 | 5 |
//!
//! (Avout, measured: 46 requests for a single-ref `alter`, 83 for a transfer, all sequential.)
//! A read is `sync` + clock + get; a one-ref `alter` adds the tag burst (point, tag, tags,
//! ref node, history), the prepare burst (`COMMITTING`, lock node, lock children) and the
//! commit burst (`multi`, lock delete, one history trim).

mod commit;
mod ensure;
mod io;
mod layout;
mod locks;
mod read;
mod tag;

pub use commit::{Newest, PrepareMachine, Prepared, WriteMachine, Written};
pub use ensure::{CleanupMachine, EnsureMachine};
pub use layout::State;
pub use locks::Held;
pub use read::{ReadMachine, ReadOut};
pub use tag::{Barging, Base, Me, TagMachine, Tagged};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;

use crate::planted::{self, Bug};
use crate::{Coordination, CoordinationExt, CreateMode, Error, ErrorClass, MAX_DATA_LEN, Op};

use super::protocol::{
    Attempt, Change, CommitPlan, Committed, Counters, Engine, EngineContext, Failure, HistoryEntry,
    RetryReason, TryError, TxnSlot, run_machine,
};
use super::{Protocol, StmConfig, StmError};

use layout::Layout;

/// How long a commit waits for a write lock (or `ensure` for a read lock), and a blocked
/// transaction for its blocker, before giving the try up: Clojure's LOCK_WAIT_MSECS.
const LOCK_WAIT_MS: u64 = 100;

/// Why an Mvcc machine stopped short of its goal.
///
/// ```
/// let h = avout::stm::mvcc::Halt::Conflict(Some("a".into()));
/// assert!(matches!(h, avout::stm::mvcc::Halt::Conflict(_)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Halt {
    /// The ref does not exist.
    NoRef(String),
    /// The value at the read point is no longer kept.
    ReadFault,
    /// Another transaction wrote (or holds) a ref this one needs (named when known).
    Conflict(Option<String>),
    /// An older transaction barged this one.
    Barged,
    /// A connection loss interrupted a step that cannot simply be re-sent; nothing was
    /// committed.
    Interrupted,
    /// The session is gone.
    SessionLost(Error),
    /// A request was refused unexpectedly.
    Zk(Error),
    /// The protocol's invariant was broken (a `COMMITTING` transaction was killed).
    Violation(String),
}

/// Barges made by every Mvcc handle of this process.
static BARGES: AtomicU64 = AtomicU64::new(0);

/// How many younger transactions the Mvcc handles of this process have barged (killed while
/// `RUNNING`) so far: a process-wide total for tests and benchmarks, which compare it before
/// and after a run.
///
/// ```
/// let before = avout::stm::mvcc::barges();
/// assert!(avout::stm::mvcc::barges() >= before);
/// ```
pub fn barges() -> u64 {
    BARGES.load(Ordering::Relaxed)
}

/// What Mvcc keeps across the tries of one transaction.
struct Slot {
    /// The first try's read point: the transaction's age for barging (ties are broken by
    /// the try's id).
    age: Option<i64>,
    /// When the transaction started (for BARGE-WAIT).
    started: tokio::time::Instant,
}

/// The Mvcc engine of one [`Stm`](super::Stm) handle; see the [module docs](self).
pub(crate) struct Mvcc<C: Coordination + ?Sized + 'static> {
    zk: Arc<C>,
    root: String,
    layout: Layout,
    config: StmConfig,
    counters: Arc<Counters>,
    barges: AtomicU64,
}

impl<C: Coordination + ?Sized + 'static> Mvcc<C> {
    /// Prepares the root (`<root>/stm/history`, `<root>/refs`).
    pub(crate) async fn open(cx: EngineContext<C>) -> Result<Self, Failure> {
        let layout = Layout::new(&cx.root);
        let (points, refs) = (layout.points(), layout.refs());
        retry_lost(|| cx.zk.ensure_path(&points)).await?;
        retry_lost(|| cx.zk.ensure_path(&refs)).await?;
        Ok(Mvcc {
            zk: cx.zk,
            root: cx.root,
            layout,
            config: cx.config,
            counters: cx.counters,
            barges: AtomicU64::new(0),
        })
    }

    /// Transactions this handle barged.
    #[allow(dead_code)]
    pub(crate) fn barges(&self) -> u64 {
        self.barges.load(Ordering::Relaxed)
    }

    async fn run<M: crate::machine::Machine>(&self, m: &mut M) -> M::Output {
        run_machine(&*self.zk, &self.counters, m).await
    }

    fn session(&self) -> i64 {
        self.zk.session().id.0
    }
}

/// Retries an idempotent step through connection losses (a bounded number of times).
async fn retry_lost<T, F, Fut>(mut step: F) -> Result<T, Failure>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = crate::Result<T>>,
{
    let mut lost = 0;
    loop {
        match step().await {
            Ok(v) => return Ok(v),
            Err(e) if e.class() == ErrorClass::Indeterminate && lost < 100 => {
                lost += 1;
                tokio::time::sleep(std::time::Duration::from_millis(io::RETRY_PAUSE_MS)).await;
            }
            Err(e) => return Err(StmError::from_zk(e)),
        }
    }
}

/// The largest value a ref can hold: its commit writes it twice (history and ref node) in
/// one `multi`, which ZooKeeper bounds as one request.
fn max_value_len() -> usize {
    MAX_DATA_LEN / 2 - 1024
}

fn too_large(name: &str, len: usize) -> Failure {
    StmError::TooLarge {
        name: name.to_owned(),
        len,
        limit: max_value_len(),
    }
}

impl<C: Coordination + ?Sized + 'static> Engine for Mvcc<C> {
    fn protocol(&self) -> Protocol {
        Protocol::Mvcc
    }

    fn create_ref<'a>(
        &'a self,
        name: &'a str,
        initial: &'a [u8],
    ) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(async move {
            if initial.len() > max_value_len() {
                return Err(too_large(name, initial.len()));
            }
            let l = &self.layout;
            let ops = vec![
                Op::create(l.ref_node(name), initial.to_vec(), CreateMode::Persistent),
                Op::create(l.lock(name), vec![], CreateMode::Persistent),
                Op::create(l.history(name), vec![], CreateMode::Persistent),
                Op::create(l.txn(name), vec![], CreateMode::Persistent),
                Op::create(
                    crate::path::join(&l.history(name), &layout::initial_history_name()),
                    initial.to_vec(),
                    CreateMode::Persistent,
                ),
                // Moves the clock past the ref's creation, so a read point taken after this
                // sees the initial value.
                Op::set_data(l.points(), vec![], None),
            ];
            retry_lost(|| async {
                match self.zk.multi(&ops).await {
                    Ok(_) => Ok(()),
                    // Made by another client (or by our own attempt whose reply was lost).
                    Err(Error::Multi { index: 0, source })
                        if matches!(*source, Error::NodeExists { .. }) =>
                    {
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            })
            .await
        })
    }

    fn read_latest<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<u8>, Failure>> {
        Box::pin(async move {
            let l = &self.layout;
            let mut m = ReadMachine::new(
                &l.ref_node(name),
                &l.history(name),
                &l.points(),
                Some(i64::MAX),
                true,
            );
            match self.run(&mut m).await {
                Ok(out) => Ok(out.value),
                Err(h) => Err(match halt_to_try(h, name) {
                    TryError::Fail(f) => f,
                    TryError::Retry(_) => unreachable!("a latest read never conflicts"),
                }),
            }
        })
    }

    fn begin<'a>(
        &'a self,
        slot: &'a mut TxnSlot,
    ) -> BoxFuture<'a, Result<Box<dyn Attempt + 'a>, TryError>> {
        Box::pin(async move {
            if slot.state.as_ref().is_none_or(|s| !s.is::<Slot>()) {
                slot.state = Some(Box::new(Slot {
                    age: None,
                    started: tokio::time::Instant::now(),
                }));
            }
            let guid = self.zk.new_guid();
            let attempt: Box<dyn Attempt + 'a> = Box::new(Try {
                e: self,
                slot,
                guid,
                txid: String::new(),
                point: None,
                ensured: BTreeMap::new(),
                leftovers: Vec::new(),
                tagged: Vec::new(),
                point_made: false,
            });
            Ok(attempt)
        })
    }

    fn history<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<HistoryEntry>, Failure>> {
        Box::pin(async move {
            let dir = self.layout.history(name);
            let (children, _) =
                retry_lost(|| self.zk.get_children(&dir))
                    .await
                    .map_err(|e| match e {
                        StmError::Zk(Error::NoNode { .. }) => StmError::NoRef {
                            name: name.to_owned(),
                        },
                        e => e,
                    })?;
            let names: Vec<String> = layout::sorted_history(&children)
                .into_iter()
                .map(|(_, n)| n)
                .collect();
            // Sent back to back: one round trip.
            let reads: Vec<_> = names
                .iter()
                .map(|n| self.zk.get_data(&crate::path::join(&dir, n)))
                .collect();
            let mut entries = Vec::new();
            for r in futures::future::join_all(reads).await {
                match r {
                    Ok((value, stat)) => entries.push(HistoryEntry {
                        point: stat.czxid as u64,
                        value,
                    }),
                    // Trimmed since the listing.
                    Err(Error::NoNode { .. }) => {}
                    Err(e) => return Err(StmError::from_zk(e)),
                }
            }
            entries.sort_by_key(|e| std::cmp::Reverse(e.point));
            Ok(entries)
        })
    }
}

/// One try; see the [module docs](self).
struct Try<'a, C: Coordination + ?Sized + 'static> {
    e: &'a Mvcc<C>,
    slot: &'a mut TxnSlot,
    /// The try's GUID: with the age, its transaction id.
    guid: u128,
    /// The transaction id, once the commit names it.
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
}

impl<C: Coordination + ?Sized + 'static> Drop for Try<'_, C> {
    /// A try dropped mid-way (the `dosync` future was cancelled) may hold ephemerals — a lock
    /// node would block every writer of its ref until the session ends: remove them in the
    /// background (`Drop` cannot wait).
    fn drop(&mut self) {
        let l = &self.e.layout;
        let mut paths: Vec<String> = self.tagged.iter().map(|n| l.tag(n, &self.txid)).collect();
        if self.point_made {
            paths.push(l.point(&self.txid));
        }
        paths.extend(std::mem::take(&mut self.ensured).into_values());
        let held = std::mem::take(&mut self.leftovers);
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

fn halt_to_try(h: Halt, name: &str) -> TryError {
    match h {
        Halt::NoRef(n) => TryError::Fail(StmError::NoRef { name: n }),
        Halt::ReadFault => TryError::Retry(RetryReason::ReadFault {
            name: name.to_owned(),
        }),
        Halt::Conflict(name) => TryError::Retry(RetryReason::Conflict { name }),
        Halt::Barged => TryError::Retry(RetryReason::Barged),
        Halt::Interrupted => TryError::Retry(RetryReason::Conflict { name: None }),
        Halt::SessionLost(e) => TryError::Fail(StmError::SessionLost(e)),
        Halt::Zk(e) => TryError::Fail(StmError::from_zk(e)),
        Halt::Violation(m) => panic!("Mvcc protocol violation: {m}"),
    }
}

impl<C: Coordination + ?Sized + 'static> Try<'_, C> {
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

    /// Removes everything this try created and still holds.
    async fn cleanup(&mut self) -> Result<(), Failure> {
        let l = &self.e.layout;
        let mut paths: Vec<String> = self.tagged.iter().map(|n| l.tag(n, &self.txid)).collect();
        if self.point_made {
            paths.push(l.point(&self.txid));
        }
        paths.extend(std::mem::take(&mut self.ensured).into_values());
        let held = std::mem::take(&mut self.leftovers);
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

    /// Cleans up, then reports `h` (or the cleanup's own failure, which is worse).
    async fn give_up(&mut self, h: Halt, name: &str) -> TryError {
        let reason = halt_to_try(h, name);
        match self.cleanup().await {
            Ok(()) => reason,
            Err(f) => match reason {
                TryError::Fail(first) => TryError::Fail(first),
                TryError::Retry(_) => TryError::Fail(f),
            },
        }
    }

    fn count_read_fault(&self, h: &Halt) {
        if *h == Halt::ReadFault {
            self.e.counters.add(&self.e.counters.read_faults, 1);
        }
    }

    async fn commit_writes(&mut self, plan: CommitPlan<'_>) -> Result<Committed, TryError> {
        let e = self.e;
        let l = e.layout.clone();
        let read_point = match self.point {
            Some(p) => p,
            // Every ref is read before it is written; a plan without reads has no read
            // point yet: take one now.
            None => {
                let name = plan
                    .writes
                    .first()
                    .map(|(n, _)| n.clone())
                    .or_else(|| plan.commutes.first().map(|c| c.name.clone()))
                    .expect("a writing plan");
                self.read(&name).await?;
                self.point.expect("read fixed it")
            }
        };
        let age = self.age();
        self.txid = layout::txid(age, self.guid);
        let writes: Vec<String> = plan.writes.iter().map(|(n, _)| n.clone()).collect();
        let elapsed = self.slot().started.elapsed();
        let barging = Barging {
            may_barge: elapsed >= e.config.barge_wait,
            bail_wait_ms: LOCK_WAIT_MS,
            barge_committing: planted::active(Bug::StmBargeCommitting),
        };
        let me = Me {
            txid: self.txid.clone(),
            age,
            read_point,
        };
        self.point_made = true;
        self.tagged = writes.clone();
        let mut tag = TagMachine::new(&e.root, me, writes.clone(), barging);
        let tagged = match e.run(&mut tag).await {
            Ok(t) => t,
            Err(h) => return Err(self.give_up(h, "").await),
        };
        if tagged.barged > 0 {
            e.barges
                .fetch_add(u64::from(tagged.barged), Ordering::Relaxed);
        }

        let mut lock: Vec<(String, u128)> = writes
            .iter()
            .chain(plan.commutes.iter().map(|c| &c.name))
            .map(|n| (n.clone(), e.zk.new_guid()))
            .collect();
        lock.sort();
        let release_first: Vec<String> = lock
            .iter()
            .filter_map(|(n, _)| self.ensured.remove(n))
            .collect();
        let commute_names: Vec<String> = plan.commutes.iter().map(|c| c.name.clone()).collect();
        let mut prep = PrepareMachine::new(
            &e.root,
            &self.txid,
            age,
            lock,
            commute_names,
            release_first,
            e.session(),
            LOCK_WAIT_MS,
        );
        let prepared = match e.run(&mut prep).await {
            Ok(p) => p,
            Err(h) => {
                self.leftovers.extend(prep.held());
                return Err(self.give_up(h, "").await);
            }
        };
        self.leftovers
            .extend(prepared.locks.iter().map(|(_, n)| Held::Node(n.clone())));

        // The commit record.
        let mut ops = vec![Op::delete(
            l.point(&self.txid),
            Some(prepared.committing_version),
        )];
        let mut deletes: Vec<String> = Vec::new();
        let mut changes = Vec::new();
        let mut probe = None;
        let txid = self.txid.clone();
        let mut add = |ops: &mut Vec<Op>,
                       deletes: &mut Vec<String>,
                       name: &str,
                       version: i32,
                       history: &[String],
                       new: Vec<u8>| {
            let node = l.history_node(name, &txid, version + 1);
            probe.get_or_insert_with(|| node.clone());
            ops.push(Op::create(node, new.clone(), CreateMode::Persistent));
            ops.push(Op::set_data(l.ref_node(name), new, Some(version)));
            deletes.extend(
                layout::trim_after_commit(history, e.config.max_history)
                    .into_iter()
                    .map(|n| crate::path::join(&l.history(name), &n)),
            );
        };
        for ((name, new), base) in plan.writes.iter().zip(&tagged.bases) {
            debug_assert_eq!(*name, base.name);
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
                old: base.value.clone(),
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
        let probe = probe.expect("a writing commit creates a history node");
        if let Err(Error::DataTooLarge { len, .. }) = Op::validate_all(&ops) {
            let name = changes.first().map_or("", |c| c.name.as_str()).to_owned();
            return Err(self.give_up_with(too_large(&name, len)).await);
        }
        let mut lock_nodes: Vec<String> = prepared.locks.iter().map(|(_, n)| n.clone()).collect();
        lock_nodes.extend(self.ensured.values().cloned());
        lock_nodes.extend(deletes);
        let mut write = WriteMachine::new(ops, lock_nodes, &probe, &l.points());
        match e.run(&mut write).await {
            Ok(w) => {
                if w.recovered {
                    e.counters.add(&e.counters.recoveries, 1);
                }
                // The multi removed the point and tags, the deletes the locks.
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

    async fn give_up_with(&mut self, f: Failure) -> TryError {
        let _ = self.cleanup().await;
        TryError::Fail(f)
    }
}

impl<C: Coordination + ?Sized + 'static> Attempt for Try<'_, C> {
    fn read<'a>(&'a mut self, name: &'a str) -> BoxFuture<'a, Result<Vec<u8>, TryError>> {
        Box::pin(async move {
            let l = &self.e.layout;
            let mut m = ReadMachine::new(
                &l.ref_node(name),
                &l.history(name),
                &l.points(),
                self.point,
                !planted::active(Bug::StmNoReadPointCheck),
            );
            match self.e.run(&mut m).await {
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

    fn ensure<'a>(&'a mut self, name: &'a str) -> BoxFuture<'a, Result<(), TryError>> {
        Box::pin(async move {
            let point = match self.point {
                Some(p) => p,
                None => {
                    self.read(name).await?;
                    self.point.expect("read fixed it")
                }
            };
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

    fn commit<'a>(
        &'a mut self,
        plan: CommitPlan<'a>,
    ) -> BoxFuture<'a, Result<Committed, TryError>> {
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
