//! Protocol [`Optimistic`](super::Protocol::Optimistic): version checks and conditional
//! writes in one `multi` per commit.
//!
//! # Layout
//!
//! Each ref is one persistent node, `<root>/refs/<name>`, whose data is a small header (the
//! ids of the last commits that wrote it, see [lost replies](self#lost-replies)), the ref's
//! previous values (see [history](self#history)) and the value.
//!
//! # The algorithm
//!
//! - **Read**: the first time a try touches a ref it takes the handle's cached node (data and
//!   version) or, without one, reads the node after a `sync` sent with it (one round trip).
//!   Reads within a try are repeatable.
//! - **Commit**: one `multi` — a `check` of the version read for every ref read or ensured
//!   and not written, a `set_data` conditional on the version read for every written ref, and
//!   last a `set_data` for every commuted ref, its value recomputed from the newest version
//!   the handle knows. ZooKeeper applies the `multi` atomically, so the try commits exactly
//!   if nothing it read or wrote changed since it read it: every committed transaction is
//!   equivalent to running alone at its commit, which lies within the `multi`'s round trip
//!   through the leader: strictly serializable.
//! - **Read-only**: validated too, by a `multi` of checks — unless the try read a single ref
//!   from the server (not the cache), when the synced read itself is the transaction and
//!   nothing is sent. The `sync` is what keeps this case strictly serializable: without it a
//!   lagging server could answer with a version older than a commit that had already
//!   returned to its caller (a stale read; regression case
//!   `list-append-optimistic-unsynced-single-read`).
//! - **Conflict**: the `multi` fails at the first operation that does not hold; nothing was
//!   written. The refs of the try are read again in the same step (one round trip) into the
//!   cache, and the body runs again. If the failing operation is a commuted ref's write, the
//!   checks and writes before it held: only that ref moved, so the commuted values are
//!   recomputed on the newest versions and the commit is sent again (the body is not run
//!   again; counted in [`StmStats::commit_redos`](super::StmStats)).
//! - **Ensure** is a read validated at commit: a concurrent writer of an ensured ref makes
//!   one of the two retry, so write skew cannot happen (nor does it without `ensure`: every
//!   read is validated).
//!
//! # Lost replies
//!
//! Every commit `multi` carries a fresh id (from [`crate::Coordination::new_guid`]), which each
//! written node records in its header beside the ids of the last 32 commits that wrote it.
//! When the reply of a writing `multi` is lost, it is never sent again: after the session
//! reconnects the handle syncs and reads the written refs. Finding its id means it was
//! applied (watchers fire, the result is returned); versions since accounted for by other
//! commits' ids mean it was not (the body runs again). If more than 32 commits, or a
//! foreign write, hide the answer, the transaction fails with
//! [`StmError::Indeterminate`](super::StmError) rather than guess.
//!
//! # History
//!
//! A commit copies the value it replaces, with that version's commit point (its `mzxid`:
//! ZooKeeper's zxids order every commit), into the node it writes, keeping
//! `max_history - 1` previous values (fewer when they would not fit in the node's 1 MiB).
//! So [`Ref::history`](super::Ref::history) is one read, [`Ref::value_at`](super::Ref::value_at)
//! answers for any point back to the oldest value kept, and
//! [`Ref::revert`](super::Ref::revert) is a transaction writing that value. Each write
//! carries the history, which costs bytes, not requests: set `max_history` to 1 to keep none.
//!
//! # Costs
//!
//! With a warm cache a single-ref `alter` is one request and one round trip; reading a ref
//! outside a transaction ([`Ref::deref`](super::Ref::deref)) is a `sync` and a read sent
//! together (one round trip, linearizable). See the table in the [module docs](super).

mod cache;
mod commit;
mod envelope;
mod read;

pub use cache::RefMap;
pub use commit::{CommitMachine, CommitOutcome, CommitSpec, Settled};
pub use read::{Node, ReadMachine};

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::client::Session;
use crate::{CoordinationExt, Error, ErrorClass, MAX_DATA_LEN, Op};

use super::protocol::{
    Attempt, Change, CommitPlan, Committed, Counters, Engine, EngineContext, Failure, HistoryEntry,
    RetryReason, TryError, TxnSlot, run_machine,
};
use super::{Protocol, StmError};
use cache::RefCache;
use envelope::Envelope;

/// The Optimistic protocol's engine for one [`Stm`](super::Stm) handle; see the
/// [module docs](self).
pub struct Optimistic {
    refs: String,
    counters: Arc<Counters>,
    /// Previous values kept in each node (`max_history - 1`).
    keep: usize,
    /// The newest node the handle has seen of each ref. Serves reads; every read it serves
    /// is validated by the commit.
    cache: RefCache,
}

impl std::fmt::Debug for Optimistic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Optimistic")
            .field("refs", &self.refs)
            .finish_non_exhaustive()
    }
}

/// The largest value a ref can hold under this protocol.
pub fn max_value_len() -> usize {
    MAX_DATA_LEN - Envelope::overhead()
}

/// A new ref's node data holding `value` (what creating a ref writes).
///
/// ```
/// use avout::stm::optimistic::{initial_data, value_of};
/// assert_eq!(value_of(&initial_data(b"7")), b"7");
/// ```
pub fn initial_data(value: &[u8]) -> Vec<u8> {
    Envelope::initial(value.to_vec()).to_bytes()
}

/// The value in a ref's node data (the header and history stripped; bytes written by another
/// program are the value itself).
///
/// ```
/// assert_eq!(avout::stm::optimistic::value_of(b"plain"), b"plain");
/// ```
pub fn value_of(data: &[u8]) -> Vec<u8> {
    Envelope::parse(data).body
}

impl Optimistic {
    /// Prepares the root (`<root>/refs`).
    pub(crate) async fn open(cx: EngineContext) -> Result<Self, Failure> {
        let refs = format!("{}/refs", cx.root);
        retry_lost(|| cx.zk.ensure_path(&refs)).await?;
        Ok(Optimistic {
            refs,
            counters: cx.counters,
            keep: cx.config.max_history.saturating_sub(1),
            cache: RefCache::new(),
        })
    }

    fn path(&self, name: &str) -> String {
        format!("{}/{name}", self.refs)
    }

    fn name_of<'p>(&self, path: &'p str) -> &'p str {
        path.strip_prefix(&self.refs)
            .and_then(|p| p.strip_prefix('/'))
            .unwrap_or(path)
    }

    fn cached(&self, name: &str) -> Option<Node> {
        self.cache.get(name)
    }

    /// Records nodes as read (newer versions only; `None` drops the entry).
    fn remember(&self, nodes: impl IntoIterator<Item = (String, Option<Node>)>) {
        self.cache.remember(nodes);
    }

    async fn read_nodes(
        &self,
        zk: &Session,
        names: &[&str],
        sync: bool,
    ) -> Result<Vec<Option<Node>>, Failure> {
        let paths = names.iter().map(|n| self.path(n)).collect();
        let mut m = ReadMachine::new(paths, sync);
        let nodes = run_machine(&**zk, &self.counters, &mut m)
            .await
            .map_err(StmError::from_zk)?;
        self.remember(
            names
                .iter()
                .map(|n| n.to_string())
                .zip(nodes.iter().cloned()),
        );
        Ok(nodes)
    }
}

/// Retries an idempotent step after indeterminate errors (a bounded number of times).
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
                tokio::time::sleep(std::time::Duration::from_millis(read::RETRY_PAUSE_MS)).await;
            }
            Err(e) => return Err(StmError::from_zk(e)),
        }
    }
}

fn too_large(name: &str, len: usize) -> Failure {
    StmError::TooLarge {
        name: name.to_owned(),
        len,
        limit: max_value_len(),
    }
}

impl Engine for Optimistic {
    fn protocol(&self) -> Protocol {
        Protocol::Optimistic
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
            let path = self.path(name);
            let data = initial_data(initial);
            retry_lost(|| async {
                match zk.create(&path, &data, &Default::default()).await {
                    Ok(_) | Err(Error::NodeExists { .. }) => Ok(()),
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
            match self.read_nodes(zk, &[name], true).await?.pop().flatten() {
                Some(node) => Ok(Envelope::parse(&node.data).body),
                None => Err(StmError::NoRef {
                    name: name.to_owned(),
                }),
            }
        })
    }

    fn refresh<'a>(&'a self, zk: &'a Session, name: &'a str) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(async move {
            // After a sync: the cache keeps the newer node, and a lagging server has caught up.
            self.cache.with(|cache| cache.forget([&name.to_owned()]));
            self.read_nodes(zk, &[name], true).await.map(|_| ())
        })
    }

    fn history<'a>(
        &'a self,
        zk: &'a Session,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<HistoryEntry>, Failure>> {
        Box::pin(async move {
            let Some(node) = self.read_nodes(zk, &[name], true).await?.pop().flatten() else {
                return Err(StmError::NoRef {
                    name: name.to_owned(),
                });
            };
            let envelope = Envelope::parse(&node.data);
            let current = HistoryEntry {
                point: node.stat.mzxid as u64,
                value: envelope.body,
            };
            Ok(std::iter::once(current)
                .chain(
                    envelope
                        .history
                        .into_iter()
                        .map(|(point, value)| HistoryEntry { point, value }),
                )
                .collect())
        })
    }

    fn begin<'a>(
        &'a self,
        zk: &'a Session,
        _slot: &'a mut TxnSlot,
    ) -> BoxFuture<'a, Result<Box<dyn Attempt + 'a>, TryError>> {
        Box::pin(async move {
            let attempt: Box<dyn Attempt + 'a> = Box::new(Try {
                engine: self,
                zk,
                seen: BTreeMap::new(),
            });
            Ok(attempt)
        })
    }
}

/// What a try saw of a ref.
#[derive(Clone, Debug)]
struct Seen {
    node: Node,
    /// Read from the server in this try (not served by the cache).
    fresh: bool,
}

/// One try under Optimistic.
struct Try<'a> {
    engine: &'a Optimistic,
    /// The session of the transaction's tries.
    zk: &'a Session,
    seen: BTreeMap<String, Seen>,
}

impl Try<'_> {
    /// The ops of a commit and the commit's id; the written refs' old and new values.
    #[allow(clippy::type_complexity)]
    fn build(
        &self,
        plan: &mut CommitPlan<'_>,
        txn: u128,
    ) -> Result<(CommitSpec, Vec<(String, Node, Vec<u8>)>), Failure> {
        let e = self.engine;
        let checks = merge_sorted(&plan.reads, &plan.ensures)
            .into_iter()
            .map(|name| (e.path(name), self.seen[name].node.stat.version))
            .collect();
        let sized = |name: &str, base: Node, body: Vec<u8>| {
            if body.len() > max_value_len() {
                return Err(too_large(name, body.len()));
            }
            Ok((name.to_owned(), base, body))
        };
        let mut writes = Vec::new();
        for (name, body) in &plan.writes {
            writes.push(sized(name, self.seen[name].node.clone(), body.clone())?);
        }
        let mut commuted = Vec::new();
        for c in &mut plan.commutes {
            // The newest version the handle knows: the cache, refreshed by a refused commit.
            let base = e
                .cached(&c.name)
                .filter(|n| n.stat.version >= self.seen[&c.name].node.stat.version)
                .unwrap_or_else(|| self.seen[&c.name].node.clone());
            let body = (c.recompute)(&Envelope::parse(&base.data).body)?;
            commuted.push(sized(&c.name, base, body)?);
        }
        let at_paths = |all: &[(String, Node, Vec<u8>)]| -> Vec<(String, Node, Vec<u8>)> {
            all.iter()
                .map(|(name, base, body)| (e.path(name), base.clone(), body.clone()))
                .collect()
        };
        let refresh = self.seen.keys().map(|n| e.path(n)).collect();
        let spec = CommitSpec::of(
            txn,
            e.keep,
            checks,
            at_paths(&writes),
            at_paths(&commuted),
            refresh,
        )
        .with_sends(plan.sends.clone());
        writes.extend(commuted);
        Ok((spec, writes))
    }
}

/// The union of two sorted lists of names.
fn merge_sorted<'n>(a: &'n [String], b: &'n [String]) -> Vec<&'n String> {
    let mut all: Vec<&String> = a.iter().chain(b).collect();
    all.sort();
    all.dedup();
    all
}

impl Attempt for Try<'_> {
    fn read<'a>(&'a mut self, name: &'a str) -> BoxFuture<'a, Result<Vec<u8>, TryError>> {
        Box::pin(async move {
            if let Some(seen) = self.seen.get(name) {
                return Ok(Envelope::parse(&seen.node.data).body);
            }
            let (node, fresh) = match self.engine.cached(name) {
                Some(node) => (node, false),
                None => {
                    // Synced: a try that reads one ref from the server and writes nothing
                    // sends no commit, so this read is its whole transaction and must see
                    // every commit that finished before it began (a lagging server would
                    // serve an older version). The sync travels with the read: no extra
                    // round trip. It also makes a missing node a missing ref.
                    let node = self
                        .engine
                        .read_nodes(self.zk, &[name], true)
                        .await?
                        .pop()
                        .flatten();
                    match node {
                        Some(node) => (node, true),
                        None => {
                            return Err(TryError::Fail(StmError::NoRef {
                                name: name.to_owned(),
                            }));
                        }
                    }
                }
            };
            let body = Envelope::parse(&node.data).body;
            self.seen.insert(name.to_owned(), Seen { node, fresh });
            Ok(body)
        })
    }

    fn ensure<'a>(&'a mut self, _name: &'a str) -> BoxFuture<'a, Result<(), TryError>> {
        // An ensured ref is checked at commit like any read: nothing to do now.
        Box::pin(async { Ok(()) })
    }

    fn commit<'a>(
        &'a mut self,
        mut plan: CommitPlan<'a>,
    ) -> BoxFuture<'a, Result<Committed, TryError>> {
        Box::pin(async move {
            let e = self.engine;
            if plan.is_read_only() {
                let checked = merge_sorted(&plan.reads, &plan.ensures);
                let single_fresh = checked.len() == 1 && self.seen[checked[0]].fresh;
                if checked.is_empty() || single_fresh {
                    return Ok(Committed::default());
                }
            }
            loop {
                let txn = self.zk.new_guid();
                let (spec, writes) = self.build(&mut plan, txn)?;
                Op::validate_all(&spec.ops).map_err(|err| match err {
                    Error::DataTooLarge { path, len, .. } => too_large(e.name_of(&path), len),
                    other => StmError::Zk(other),
                })?;
                let ops = spec.ops.clone();
                let mut m = CommitMachine::new(spec);
                let outcome = run_machine(&**self.zk, &e.counters, &mut m).await;
                let touched: Vec<String> = self.seen.keys().cloned().collect();
                let settled = e
                    .cache
                    .with(|cache| outcome.settle(cache, &ops, &touched, |p| e.name_of(p).into()));
                if matches!(
                    outcome,
                    CommitOutcome::Applied {
                        recovered: Some(_),
                        ..
                    } | CommitOutcome::NotApplied { .. }
                        | CommitOutcome::Unknown { .. }
                ) {
                    e.counters.add(&e.counters.recoveries, 1);
                }
                let refused_at = |index: usize| e.name_of(ops[index].path()).to_owned();
                match (settled, outcome) {
                    (Settled::Committed, _) => {
                        let changes = writes
                            .into_iter()
                            .map(|(name, base, new)| Change {
                                name,
                                old: Envelope::parse(&base.data).body,
                                new,
                            })
                            .collect();
                        return Ok(Committed { changes });
                    }
                    (Settled::Recompute { read }, _) => {
                        e.counters.add(&e.counters.commit_redos, 1);
                        if read {
                            // The refresh failed: read the commuted refs before recomputing.
                            let names: Vec<&str> =
                                plan.commutes.iter().map(|c| c.name.as_str()).collect();
                            e.read_nodes(self.zk, &names, false).await?;
                        }
                    }
                    (Settled::Deleted, CommitOutcome::Conflict { index, .. }) => {
                        // A ref was deleted under the transaction.
                        let name = refused_at(index);
                        return Err(TryError::Fail(StmError::NoRef { name }));
                    }
                    (Settled::Retry, CommitOutcome::Conflict { index, .. }) => {
                        return Err(TryError::Retry(RetryReason::Conflict {
                            name: Some(refused_at(index)),
                        }));
                    }
                    (Settled::Retry, CommitOutcome::NotApplied { .. }) => {
                        return Err(TryError::Retry(RetryReason::Interrupted));
                    }
                    (Settled::Retry, _) => {
                        return Err(TryError::Retry(RetryReason::Conflict { name: None }));
                    }
                    (Settled::Unknown, CommitOutcome::Unknown { detail }) => {
                        return Err(TryError::Fail(StmError::Indeterminate { detail }));
                    }
                    (Settled::Failed, CommitOutcome::Failed(err)) => {
                        return Err(TryError::Fail(StmError::from_zk(err)));
                    }
                    (settled, outcome) => unreachable!("{outcome:?} settled as {settled:?}"),
                }
            }
        })
    }

    fn abort(&mut self) -> BoxFuture<'_, Result<(), Failure>> {
        // Nothing is held between a try's reads and its commit.
        Box::pin(async { Ok(()) })
    }
}
