//! Protocol [`Mvcc`](super::Protocol::Mvcc): Avout's ZooKeeper recipe for a distributed MVCC
//! STM, with its defects fixed and its round trips cut from ~18 sequential ones (46 requests,
//! measured) to 3.
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
//! 1. **Read** (first touch of each ref): the clock (first read only) and the ref node, in
//!    one round trip ([`ReadMachine`]). A try's first read fixes its read point, after a
//!    `sync` — except on a transaction's first try when the body writes the ref next
//!    (`alter`, `ref_set`): the tagging of step 3 is a write, ordered after every commit
//!    acknowledged before the try began, and its read of the ref node rejects a commit after
//!    the read point, so it validates the read and the first round trip writes nothing
//!    ([`TryMachine::read_for_write`]). Until then a later read treats a ref committed after
//!    the point as a conflict rather than read its history, and a try that never tags that
//!    ref is retried with a synced point. Later reads send no `sync`: the session's server
//!    has applied at least up to the point. A value no longer in the history is a read
//!    fault: the try is retried and the fault counted.
//! 2. **Ensure**: the ref's read lock, held until the try ends, then a check that nothing was
//!    committed to it after the read point ([`EnsureMachine`]).
//! 3. **Tag** (the first write of each ref, [`TagMachine`]): when the body first writes a ref
//!    (`ref_set`, `alter`; as Clojure takes a ref's write ownership), the transaction's point
//!    `RUNNING` (first write only), a tag on the ref, the ref node (the read-point check: a
//!    commit after the read point is a conflict), its history and the tags of others are
//!    *sent* and the body goes on: the requests travel with the body's next read or with the
//!    commit's first burst, and their replies are handled there (`protocol::Started`).
//!    Another live owner's tag: an older transaction barges a younger `RUNNING` one once it
//!    has run for BARGE-WAIT (compare-and-set to `KILLED`); a `COMMITTING` one is never
//!    killed; otherwise the try is blocked — it removes its nodes, waits for the owner's point
//!    to change ([`WaitMachine`], at most the lock wait) and retries.
//! 4. **Prepare** ([`PrepareMachine`]): compare-and-set of the point to `COMMITTING` (failing
//!    if an older transaction barged this one: the try retries), sent with the write-lock
//!    requests of every written and commuted ref — right behind the last tagging, in the same
//!    round trip, when its replies are not in yet; then the commuted refs' newest values are
//!    read under their locks and recomputed.
//! 5. **Write** (one round trip, [`WriteMachine`]): one `multi` deleting the point (at its
//!    `COMMITTING` version: `COMMITTED`), creating the history nodes, setting the ref nodes at
//!    the versions read when tagging, deleting the tags and the lock nodes and trimming the
//!    history: nothing trails the commit (a trailing delete would delay this session's next
//!    transaction behind its own write).
//!
//! The whole of a try is one sans-IO machine, [`TryMachine`], which sequences these steps
//! (the engine's async `Try` only drives it): the model checker (`avout model mvcc`) runs the
//! same protocol as production.
//!
//! A single-ref `alter` is thus 3 round trips (read; tag and prepare; write), the first
//! writing nothing; a read-only transaction of any size is one per ref read and nothing at
//! commit.
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
//!   written. A connection loss does not start the try over: reads are sent again, a
//!   tagging is sent again and finds its own nodes (their names are the try's alone: ids are
//!   GUIDs), a lost compare-and-set to `COMMITTING` is decided by reading the point, lock
//!   nodes are found by their GUIDs, and a lost commit reply is decided by whether the
//!   transaction's point still exists. A try given up removes whatever it created, by exact
//!   name.
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
//! | transaction | requests | round trips | logged writes (fsyncs, measured) | before |
//! |---|---|---|---|---|
//! | read-only, one ref | 3 | 1 | 1 | 3 requests, 1 round trip, 1 write |
//! | read-only, two refs | 4 | 2 | 1 | 5, 2; 2 writes |
//! | alter one ref | 10 | 3 | 4 (3.37) | 11, 3; 5 writes (4.81) |
//! | alter two refs (transfer) | 17 | 4 | 6 | 19, 4; 8 writes |
//! | commute one ref | 10 | 4 | 5 | 10, 4; 5 writes |
//!
//! ("Before": until the first read for writing skipped its `sync` and later reads sent none.
//! Avout, measured: 46 requests for a single-ref `alter`, 83 for a transfer, all sequential.
//! Before tagging moved to write time, tagging at commit: 13, 22 and 11 requests in 4, 5 and 5
//! round trips.)
//! A first read is `sync` + clock + get (clock + get when the body writes the ref next), a
//! later one a get; a one-ref `alter` adds the tag (a `multi` creating the point and the tag,
//! the tags, the ref node, the history) and the prepare (`COMMITTING`, lock node, lock
//! children) in one burst, then the commit `multi`. A transfer's first tag travels with its
//! second read.
//!
//! Every `sync` is a logged write (`crate::quorum_sync`), so what a transaction costs on
//! the server is its logged writes more than its round trips: ZooKeeper fsyncs a write as
//! soon as it finds its queue empty, so writes pipelined behind one another are mostly
//! fsynced apart. Counted with ZooKeeper's `mntr` (`zk_cnt_fsynctime` before and after
//! `avout bench stm-alter --protocol mvcc`, 2,500 transactions): 3.37 fsyncs per `alter`,
//! 4.81 before; an Optimistic `alter` is 1.0, a `set_data` 1. The next step is to fold the
//! tagging, the move to `COMMITTING` and the lock node into one `multi` (1 write in the
//! second round trip instead of 3).
//!
//! Speed, measured on one standalone server (`avout zk start`, fsync on, a quiet 2-core
//! machine), rounds of `avout bench ops --json` then `avout bench stm-alter --protocol mvcc`
//! with the build before the unsynced read for writing and with it, in turn. One run: 545,
//! 570 and 600 `alter`s/s before, 812, 844 and 823 after, against sequential `set_data` at
//! 3587, 3224 and 3584 ops/s (0.15–0.18× before, 0.23–0.26× after). Another, five rounds:
//! after ÷ before 0.98, 1.45, 1.10, 1.12 and 1.13 (median 1.12×), after ÷ `set_data` median
//! 0.19× (before 0.17×). The server's fsync latency swings more than the change; the fsync
//! count above does not. Issue 40's goal is 0.33×.
//!
//! Earlier, on one standalone server (`avout zk start`, fsync on, a loaded 2-core
//! machine, load average 2.5–3) with `avout bench ops --json` then `avout bench stm-alter
//! --protocol mvcc` (2000 transactions after 500 of warm-up), in turn, each ratio from one
//! round: 406, 428, 763, 670, 514 and 610 single-ref `alter`s/s against sequential `set_data`
//! at 2627, 1981, 3751, 2494, 2398 and 2415 ops/s — 0.15×, 0.22×, 0.20×, 0.27×, 0.21× and
//! 0.25× (11 requests in 3 round trips per transaction, no retries; `set_data` swings with the
//! disk's fsync latency more than the transactions do). With the point and the first tag
//! created separately (12 requests): 0.12–0.27×, median 0.22×; with the lock deletes and the
//! history trim sent after the commit `multi` instead of inside it (14): 0.05–0.2×.

mod attempt;
mod commit;
mod ensure;
mod io;
mod layout;
mod locks;
mod read;
mod tag;
mod try_machine;
mod wait;

pub use commit::{Newest, PrepareMachine, Prepared, WriteMachine, Written};
pub use ensure::{CleanupMachine, EnsureMachine};
pub use layout::State;
pub use locks::Held;
pub use read::{ReadMachine, ReadOut};
pub use tag::{Barging, Base, Me, TagMachine, Tagged};
pub use try_machine::{CommitOrder, Outcome, TryConfig, TryMachine, TryStats};
pub use wait::WaitMachine;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;

use crate::client::Session;
use crate::{CoordinationExt, CreateMode, Error, ErrorClass, MAX_DATA_LEN, Op};

use super::protocol::{
    Attempt, Counters, Engine, EngineContext, Failure, HistoryEntry, TryError, TxnSlot, run_machine,
};
use super::{Protocol, StmConfig, StmError};

use attempt::{Try, halt_to_try};
use layout::Layout;

/// How long a commit waits for a write lock (or `ensure` for a read lock), and a blocked
/// transaction for its blocker, before giving the try up: Clojure's LOCK_WAIT_MSECS. A lock's
/// wait counts only while someone else holds it ([`AcquireMachine::blocked_patience`]), so
/// a server whose round trips outlast it is slow, not contended.
///
/// [`AcquireMachine::blocked_patience`]: crate::lock::AcquireMachine::blocked_patience
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
    /// Another live transaction owns a ref this one writes and may not be barged (it is
    /// older, `COMMITTING`, or BARGE-WAIT has not passed): step aside, wait for its point
    /// (`blocker`, its id) to change, retry.
    Blocked {
        /// The owner's transaction id.
        blocker: String,
        /// The ref, when known.
        name: Option<String>,
    },
    /// A connection loss interrupted a step that cannot simply be re-sent; nothing was
    /// committed.
    Interrupted,
    /// The session is gone.
    SessionLost(Error),
    /// A request was refused unexpectedly.
    Zk(Error),
    /// The protocol's invariant was broken (a `COMMITTING` transaction was killed).
    Violation(String),
    /// A value to commit is over the largest a ref can hold.
    TooLarge {
        /// The ref.
        name: String,
        /// The value's length in bytes.
        len: usize,
    },
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

/// The two directories an Mvcc STM at `root` needs before its first ref: the clock (where
/// transaction points live) and the refs' parent.
///
/// ```
/// assert_eq!(avout::stm::mvcc::root_paths("/bank"), ["/bank/stm/history".to_string(), "/bank/refs".to_string()]);
/// ```
pub fn root_paths(root: &str) -> [String; 2] {
    let layout = Layout::new(root);
    [layout.points(), layout.refs()]
}

/// The `multi` that creates ref `name` with `initial` bytes in the Mvcc STM at `root`: the
/// ref node, its lock, history and tag directories, the initial value's history node, and a
/// tick of the clock (so a read point taken afterwards sees the initial value).
///
/// ```
/// let ops = avout::stm::mvcc::create_ref_ops("/bank", "alice", b"10");
/// assert_eq!(ops[0].path(), "/bank/refs/alice");
/// assert_eq!(ops.len(), 6);
/// ```
pub fn create_ref_ops(root: &str, name: &str, initial: &[u8]) -> Vec<Op> {
    let l = Layout::new(root);
    vec![
        Op::create(l.ref_node(name), initial.to_vec(), CreateMode::Persistent),
        Op::create(l.lock(name), vec![], CreateMode::Persistent),
        Op::create(l.history(name), vec![], CreateMode::Persistent),
        Op::create(l.txn(name), vec![], CreateMode::Persistent),
        Op::create(
            crate::path::join(&l.history(name), &layout::initial_history_name()),
            initial.to_vec(),
            CreateMode::Persistent,
        ),
        // Moves the clock past the ref's creation, so a read point taken after this sees
        // the initial value.
        Op::set_data(l.points(), vec![], None),
    ]
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
pub(crate) struct Mvcc {
    root: String,
    layout: Layout,
    config: StmConfig,
    counters: Arc<Counters>,
}

impl Mvcc {
    /// Prepares the root (`<root>/stm/history`, `<root>/refs`).
    pub(crate) async fn open(cx: EngineContext) -> Result<Self, Failure> {
        let layout = Layout::new(&cx.root);
        let [points, refs] = root_paths(&cx.root);
        retry_lost(|| cx.zk.ensure_path(&points)).await?;
        retry_lost(|| cx.zk.ensure_path(&refs)).await?;
        Ok(Mvcc {
            root: cx.root,
            layout,
            config: cx.config,
            counters: cx.counters,
        })
    }

    async fn run<M: crate::machine::Machine>(&self, zk: &Session, m: &mut M) -> M::Output {
        run_machine(&**zk, &self.counters, m).await
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

impl Engine for Mvcc {
    fn protocol(&self) -> Protocol {
        Protocol::Mvcc
    }

    fn create_ref<'a>(
        &'a self,
        zk: &'a Session,
        name: &'a str,
        initial: &'a [u8],
    ) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(async move {
            if initial.len() > max_value_len() {
                return Err(too_large(name, initial.len()));
            }
            let ops = create_ref_ops(&self.root, name, initial);
            retry_lost(|| async {
                match zk.multi(&ops).await {
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

    fn read_latest<'a>(
        &'a self,
        zk: &'a Session,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<u8>, Failure>> {
        Box::pin(async move {
            let l = &self.layout;
            let mut m = ReadMachine::new(
                &l.ref_node(name),
                &l.history(name),
                &l.points(),
                Some(i64::MAX),
                true,
            );
            match self.run(zk, &mut m).await {
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
        zk: &'a Session,
        slot: &'a mut TxnSlot,
    ) -> BoxFuture<'a, Result<Box<dyn Attempt + 'a>, TryError>> {
        Box::pin(async move {
            if slot.state.as_ref().is_none_or(|s| !s.is::<Slot>()) {
                slot.state = Some(Box::new(Slot {
                    age: None,
                    started: tokio::time::Instant::now(),
                }));
            }
            let guid = zk.new_guid();
            let attempt: Box<dyn Attempt + 'a> = Box::new(Try::new(self, zk, slot, guid));
            Ok(attempt)
        })
    }

    fn history<'a>(
        &'a self,
        zk: &'a Session,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<HistoryEntry>, Failure>> {
        Box::pin(async move {
            let dir = self.layout.history(name);
            let (children, _) =
                retry_lost(|| zk.get_children(&dir))
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
                .map(|n| zk.get_data(&crate::path::join(&dir, n)))
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
