//! [`Tx`], what a `dosync` body works on, and the retry loop around the body.
//!
//! A try: [`Engine::begin`](super::protocol::Engine::begin), the body (each ref read through
//! the protocol the first time it is touched, then kept here as a value of its type), then a
//! [`CommitPlan`] built from what the body did, validated and encoded, and one
//! [`Attempt::commit`](super::protocol::Attempt::commit). A conflict anywhere starts a new
//! try, up to the retry limit.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::atom::Codec;
use crate::client::Session;

use super::protocol::{Attempt, CommitPlan, Commute, Failure, RetryReason, TryError, TxnSlot};
use super::reference::ErasedRef;
use super::store::glue;
use super::{Abort, Ref, Shared, StmError};

type CommuteFn = Box<dyn Fn(&mut (dyn Any + Send)) + Send>;

/// What a try knows of one ref.
struct Entry {
    erased: Arc<dyn ErasedRef>,
    type_id: TypeId,
    /// The transaction's value of the ref.
    value: Box<dyn Any + Send>,
    /// Read by the body (deref, alter, ensure) before any commute of it.
    observed: bool,
    written: bool,
    ensured: bool,
    commutes: Vec<CommuteFn>,
}

/// A transaction's view of the refs, given to a [`Stm::dosync`](super::Stm::dosync) body.
///
/// Every operation returns [`Abort`] when the try cannot go on (a conflict, or a failure
/// `dosync` will report); propagate it with `?`.
///
/// ```no_run
/// use avout::stm::Abort;
/// # async fn demo(stm: avout::stm::Stm, a: avout::stm::Ref<i64>, b: avout::stm::Ref<i64>) -> Result<(), avout::stm::StmError> {
/// let total = stm.dosync(async |tx| {
///     let x = tx.deref(&a).await?;
///     let y = tx.ensure(&b).await?;
///     tx.commute(&a, |n| n + 1).await?;
///     Ok::<_, Abort>(x + y)
/// }).await?;
/// # Ok(()) }
/// ```
pub struct Tx<'a> {
    shared: &'a Shared,
    attempt: Box<dyn Attempt + 'a>,
    entries: BTreeMap<String, Entry>,
    /// Agent sends, dispatched by the commit's `multi` (nothing if the try does not commit).
    sends: Vec<crate::Op>,
    /// The session of the transaction's tries (GUIDs for the sends' entries).
    zk: &'a Session,
    failure: Option<TryError>,
    /// With a ref store: the values of the pointers this try read, for the watchers.
    /// (Keyed by ref too: the refs one try wrote share its key.)
    resolved: BTreeMap<(String, Vec<u8>), Vec<u8>>,
}

impl std::fmt::Debug for Tx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tx")
            .field("refs", &self.entries.keys().collect::<Vec<_>>())
            .field("failed", &self.failure.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> Tx<'a> {
    /// Records why the try stops (the first reason wins) and returns the [`Abort`] for the
    /// body.
    fn stop(&mut self, e: TryError) -> Abort {
        if self.failure.is_none() {
            self.failure = Some(e);
        }
        Abort(())
    }

    fn fail(&mut self, f: Failure) -> Abort {
        self.stop(TryError::Fail(f))
    }

    /// Makes sure the try has an entry for `r`, reading it through the protocol the first
    /// time.
    async fn touch<T, K>(&mut self, r: &Ref<T, K>) -> Result<(), Abort>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        K: Codec,
    {
        self.touch_for(r, false).await
    }

    /// [`touch`](Self::touch); `for_write`: the body writes `r` next (the protocol's
    /// [`Attempt::read_for_write`]).
    async fn touch_for<T, K>(&mut self, r: &Ref<T, K>, for_write: bool) -> Result<(), Abort>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        K: Codec,
    {
        if self.failure.is_some() {
            return Err(Abort(()));
        }
        if !std::ptr::eq(Arc::as_ptr(r.shared()), self.shared) {
            return Err(self.fail(StmError::ForeignRef {
                name: r.name().to_owned(),
            }));
        }
        if let Some(entry) = self.entries.get(r.name()) {
            if entry.type_id != TypeId::of::<T>() {
                return Err(self.fail(StmError::TypeMismatch {
                    name: r.name().to_owned(),
                }));
            }
            return Ok(());
        }
        let read = if for_write {
            self.attempt.read_for_write(r.name()).await
        } else {
            self.attempt.read(r.name()).await
        };
        let mut bytes = match read {
            Ok(bytes) => bytes,
            Err(e) => return Err(self.stop(e)),
        };
        if let Some(store) = &self.shared.store {
            match glue::resolve(self.shared, store, r.name(), &bytes).await {
                Ok(Some(value)) => {
                    let node = std::mem::replace(&mut bytes, value);
                    self.resolved
                        .insert((r.name().to_owned(), node), bytes.clone());
                }
                Ok(None) => {
                    // Superseded and collected since the protocol read its pointer (or its
                    // cache or a lagging server kept it): the next try must read a newer one.
                    if let Err(f) = self.shared.engine.refresh(self.zk, r.name()).await {
                        return Err(self.fail(f));
                    }
                    let c = &self.shared.counters;
                    c.add(&c.read_faults, 1);
                    let name = r.name().to_owned();
                    return Err(self.stop(TryError::Retry(RetryReason::ReadFault { name })));
                }
                Err(f) => return Err(self.fail(f)),
            }
        }
        let value = match r.decode(&bytes) {
            Ok(v) => v,
            Err(e) => return Err(self.fail(e)),
        };
        self.entries.insert(
            r.name().to_owned(),
            Entry {
                erased: Arc::new(r.clone()),
                type_id: TypeId::of::<T>(),
                value: Box::new(value),
                observed: false,
                written: false,
                ensured: false,
                commutes: Vec::new(),
            },
        );
        Ok(())
    }

    /// Tells the protocol the body writes `name` for the first time in this try.
    async fn owned(&mut self, name: &str) -> Result<(), Abort> {
        match self.attempt.write(name).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.stop(e)),
        }
    }

    /// The ref's value in this transaction: the value read (Clojure's `deref` inside
    /// `dosync`), or the transaction's own since it set it. The read is validated at commit.
    ///
    /// ```no_run
    /// # async fn demo(stm: avout::stm::Stm, r: avout::stm::Ref<u64>) -> Result<(), avout::stm::StmError> {
    /// let v = stm.dosync(async |tx| tx.deref(&r).await).await?;
    /// # Ok(()) }
    /// ```
    pub async fn deref<T, K>(&mut self, r: &Ref<T, K>) -> Result<T, Abort>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        K: Codec,
    {
        self.touch(r).await?;
        let entry = self.entries.get_mut(r.name()).expect("touched");
        // A deref after a commute sees the transaction's value and, as in Clojure, does not
        // make the commuted ref part of what the commit validates.
        entry.observed |= entry.commutes.is_empty();
        Ok(value_of::<T>(entry).clone())
    }

    /// Sets the ref's value (Clojure's `ref-set`). Conflicts with any other transaction
    /// writing the ref. After a [`commute`](Self::commute) of the same ref it fails with
    /// [`StmError::SetAfterCommute`].
    ///
    /// ```no_run
    /// # async fn demo(stm: avout::stm::Stm, r: avout::stm::Ref<u64>) -> Result<(), avout::stm::StmError> {
    /// stm.dosync(async |tx| tx.ref_set(&r, 0).await).await?;
    /// # Ok(()) }
    /// ```
    pub async fn ref_set<T, K>(&mut self, r: &Ref<T, K>, value: T) -> Result<(), Abort>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        K: Codec,
    {
        self.write(r, |entry| entry.value = Box::new(value)).await
    }

    /// Sets the ref to `f(value)` and returns the new value (Clojure's `alter`). The value
    /// read is validated at commit.
    ///
    /// ```no_run
    /// # async fn demo(stm: avout::stm::Stm, r: avout::stm::Ref<u64>) -> Result<(), avout::stm::StmError> {
    /// let n = stm.dosync(async |tx| tx.alter(&r, |n| n + 1).await).await?;
    /// # Ok(()) }
    /// ```
    pub async fn alter<T, K>(&mut self, r: &Ref<T, K>, f: impl FnOnce(&T) -> T) -> Result<T, Abort>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        K: Codec,
    {
        self.write(r, |entry| {
            let new = f(value_of::<T>(entry));
            entry.value = Box::new(new.clone());
            entry.observed = true;
            new
        })
        .await
    }

    /// Writes the ref's entry with `set`, as `ref_set` and `alter` do: refused after a
    /// [`commute`](Self::commute) of the ref; the ref's first write in this try takes it.
    async fn write<T, K, R>(
        &mut self,
        r: &Ref<T, K>,
        set: impl FnOnce(&mut Entry) -> R,
    ) -> Result<R, Abort>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        K: Codec,
    {
        self.touch_for(r, true).await?;
        let entry = self.entries.get_mut(r.name()).expect("touched");
        if !entry.commutes.is_empty() {
            let name = r.name().to_owned();
            return Err(self.fail(StmError::SetAfterCommute { name }));
        }
        let first = !entry.written;
        let out = set(entry);
        entry.written = true;
        if first {
            self.owned(r.name()).await?;
        }
        Ok(out)
    }

    /// Applies `f` to the ref in this transaction and returns the result, and again at
    /// commit to the newest committed value, which is what is written (Clojure's
    /// `commute`). `f` must be commutative with the other updates of the ref: a concurrent
    /// change of the ref never makes this transaction run again; only the commit is redone.
    ///
    /// ```no_run
    /// # async fn demo(stm: avout::stm::Stm, hits: avout::stm::Ref<u64>) -> Result<(), avout::stm::StmError> {
    /// stm.dosync(async |tx| tx.commute(&hits, |n| n + 1).await).await?;
    /// # Ok(()) }
    /// ```
    pub async fn commute<T, K>(
        &mut self,
        r: &Ref<T, K>,
        f: impl Fn(&T) -> T + Send + 'static,
    ) -> Result<T, Abort>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        K: Codec,
    {
        self.touch(r).await?;
        let entry = self.entries.get_mut(r.name()).expect("touched");
        let new = f(value_of::<T>(entry));
        entry.value = Box::new(new.clone());
        entry
            .commutes
            .push(Box::new(move |v: &mut (dyn Any + Send)| {
                let v = v.downcast_mut::<T>().expect("the ref's type");
                *v = f(v);
            }));
        Ok(new)
    }

    /// The ref's value, protected until the commit against other transactions writing it
    /// (Clojure's `ensure`): what prevents write skew when a transaction reads one ref and
    /// writes another.
    ///
    /// ```no_run
    /// # async fn demo(stm: avout::stm::Stm, a: avout::stm::Ref<i64>, b: avout::stm::Ref<i64>) -> Result<(), avout::stm::StmError> {
    /// stm.dosync(async |tx| {
    ///     let other = tx.ensure(&b).await?;
    ///     tx.alter(&a, |x| x - other).await
    /// }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn ensure<T, K>(&mut self, r: &Ref<T, K>) -> Result<T, Abort>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        K: Codec,
    {
        self.touch(r).await?;
        let already = self.entries.get(r.name()).expect("touched").ensured;
        if !already && let Err(e) = self.attempt.ensure(r.name()).await {
            return Err(self.stop(e));
        }
        let entry = self.entries.get_mut(r.name()).expect("touched");
        entry.ensured = true;
        entry.observed |= entry.commutes.is_empty();
        Ok(value_of::<T>(entry).clone())
    }

    /// Sends `action` to `agent` if, and only if, this transaction commits (Clojure's `send`
    /// inside `dosync`): the action's queue entry is created by the commit's `multi`, under
    /// either protocol, so a try that aborts or is retried sends nothing, and the commit
    /// sends it exactly once. Sends of one transaction are queued in the order made.
    ///
    /// A transaction that only sends (writes no ref) still commits through a `multi`; under
    /// [`Protocol::Optimistic`](super::Protocol) the outcome of such a `multi` whose reply is
    /// lost cannot be read back, and `dosync` fails with
    /// [`StmError::Indeterminate`](super::StmError::Indeterminate) (the sends may or may not
    /// have been queued). With a ref written, or under Mvcc, a lost reply is decided as for
    /// any commit.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize)] struct Log(i64);
    /// # impl avout::agent::Action<Vec<i64>> for Log { type Error = String; fn apply(&self, v: &Vec<i64>) -> Result<Vec<i64>, String> { let mut v = v.clone(); v.push(self.0); Ok(v) } }
    /// # async fn demo(stm: avout::stm::Stm, a: avout::stm::Ref<i64>, log: avout::agent::Agent<Vec<i64>, Log>) -> Result<(), avout::stm::StmError> {
    /// stm.dosync(async |tx| {
    ///     let n = tx.alter(&a, |n| n - 10).await?;
    ///     tx.send(&log, Log(n))?;
    ///     Ok(())
    /// })
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub fn send<T, A>(&mut self, agent: &crate::agent::Agent<T, A>, action: A) -> Result<(), Abort>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        A: crate::agent::Action<T>,
    {
        let guid = self.zk.new_guid();
        match agent.send_op(&action, guid) {
            Ok(op) => {
                self.sends.push(op);
                Ok(())
            }
            Err(e) => Err(self.fail(Failure::Encode {
                name: agent.path().to_owned(),
                source: crate::atom::CodecError {
                    codec: "json",
                    message: e.to_string(),
                },
            })),
        }
    }

    /// The plan of the commit and, per ref, the handle that decodes for its watchers.
    #[allow(clippy::type_complexity)]
    fn plan(
        &mut self,
    ) -> Result<(CommitPlan<'static>, BTreeMap<String, Arc<dyn ErasedRef>>), Failure> {
        let mut plan = CommitPlan {
            sends: std::mem::take(&mut self.sends),
            ..CommitPlan::default()
        };
        let mut refs = BTreeMap::new();
        // With a store a commuted value must be put before the commit, so it is written as
        // an alter's would be (see the store module's docs).
        let commute_as_write = self.shared.store.is_some();
        for (name, entry) in std::mem::take(&mut self.entries) {
            refs.insert(name.clone(), entry.erased.clone());
            let commuted = !entry.commutes.is_empty();
            if entry.written || (commuted && (entry.observed || entry.ensured || commute_as_write))
            {
                let bytes = entry.erased.validate_encode(&*entry.value)?;
                plan.writes.push((name, bytes));
            } else if commuted {
                let Entry {
                    erased, commutes, ..
                } = entry;
                plan.commutes.push(Commute {
                    name,
                    recompute: Box::new(move |newest: &[u8]| {
                        let mut value = erased.decode_any(newest)?;
                        for f in &commutes {
                            f(&mut *value);
                        }
                        erased.validate_encode(&*value)
                    }),
                });
            } else if entry.ensured {
                plan.ensures.push(name);
            } else if entry.observed {
                plan.reads.push(name);
            }
        }
        Ok((plan, refs))
    }
}

fn value_of<T: 'static>(entry: &Entry) -> &T {
    entry
        .value
        .downcast_ref::<T>()
        .expect("touch checked the ref's type")
}

/// A ref's revert is a transaction, so it lives with the transactions: refs know nothing of
/// them.
impl<T, K> Ref<T, K>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    K: Codec,
{
    /// Concourse's revert: sets the ref back to its value at commit point `point`, as a
    /// transaction (validators and watchers apply). Returns the value restored.
    /// [`StmError::Unsupported`] without history; [`StmError::NoRef`] if `point` is older
    /// than the history kept.
    ///
    /// ```no_run
    /// # async fn demo(r: avout::stm::Ref<u64>) -> Result<(), avout::stm::StmError> {
    /// let restored = r.revert(42).await?;
    /// # Ok(()) }
    /// ```
    pub async fn revert(&self, point: u64) -> Result<T, StmError>
    where
        T: Clone,
    {
        let Some(value) = self.value_at(point).await? else {
            return Err(StmError::NoRef {
                name: format!("{}@{point}", self.name()),
            });
        };
        let result = run(self.shared(), async |tx| {
            tx.ref_set(self, value.clone()).await?;
            Ok::<_, Abort>(value.clone())
        })
        .await;
        // The body fails only by aborting, and dosync then reports the abort's reason.
        result.map_err(|e| e.map_body(|_| unreachable!("the body fails only by aborting")))
    }
}

/// How a try ended.
enum Ending<R, E> {
    Done(Result<R, StmError<E>>),
    Retry,
}

/// Runs `body` as a transaction: tries until one commits, fails, or the retry limit is
/// passed.
pub(crate) async fn run<R, E, F>(shared: &Shared, mut body: F) -> Result<R, StmError<E>>
where
    F: AsyncFnMut(&mut Tx<'_>) -> Result<R, E>,
{
    let mut slot = TxnSlot::default();
    // Every try on one session: if it ends, the transaction fails rather than start over
    // on the next one (a commit in flight may have been applied).
    let zk = shared.session().await.map_err(Failure::widen)?;
    loop {
        let ending = match one_try(shared, &zk, &mut slot, &mut body).await {
            Ending::Done(Err(StmError::SessionLost(_)))
                if shared
                    .config
                    .planted
                    .contains(crate::planted::Bug::StmSessionLossRetried) =>
            {
                Ending::Retry
            }
            ending => ending,
        };
        match ending {
            Ending::Done(result) => return result,
            Ending::Retry => {
                shared.counters.add(&shared.counters.retries, 1);
                if slot.retries >= shared.config.retry_limit {
                    return Err(StmError::RetryLimit {
                        retries: slot.retries,
                    });
                }
                slot.retries += 1;
            }
        }
    }
}

async fn one_try<R, E, F>(
    shared: &Shared,
    zk: &Session,
    slot: &mut TxnSlot,
    body: &mut F,
) -> Ending<R, E>
where
    F: AsyncFnMut(&mut Tx<'_>) -> Result<R, E>,
{
    let attempt = match shared.engine.begin(zk, slot).await {
        Ok(attempt) => attempt,
        Err(TryError::Retry(reason)) => return retry(shared, reason),
        Err(TryError::Fail(f)) => return Ending::Done(Err(f.widen())),
    };
    let mut tx = Tx {
        shared,
        attempt,
        entries: BTreeMap::new(),
        sends: Vec::new(),
        zk,
        failure: None,
        resolved: BTreeMap::new(),
    };
    let result = body(&mut tx).await;
    if let Some(failure) = tx.failure.take() {
        // The try is doomed whatever the body returned.
        let aborted = tx.attempt.abort().await;
        return match failure {
            TryError::Retry(reason) => match aborted {
                Ok(()) => retry(shared, reason),
                Err(f) => Ending::Done(Err(f.widen())),
            },
            TryError::Fail(f) => Ending::Done(Err(f.widen())),
        };
    }
    let value = match result {
        Ok(value) => value,
        Err(e) => {
            // The body's error is what the caller asked about; a failure to release the
            // try (a lost session) shows on the handle's next use.
            let _ = tx.attempt.abort().await;
            return Ending::Done(Err(StmError::Body(e)));
        }
    };
    let (mut plan, refs) = match tx.plan() {
        Ok(planned) => planned,
        Err(f) => {
            let _ = tx.attempt.abort().await;
            return Ending::Done(Err(f.widen()));
        }
    };
    let mut resolved = std::mem::take(&mut tx.resolved);
    let put = match &shared.store {
        Some(store) if !plan.writes.is_empty() => {
            let values: Vec<Vec<u8>> = plan.writes.iter().map(|(_, v)| v.clone()).collect();
            match glue::put_values(shared, store, zk, &mut plan.writes).await {
                Ok(put) => {
                    plan.sends.push(put.marker_delete());
                    for ((name, node), value) in plan.writes.iter().zip(values) {
                        resolved.insert((name.clone(), node.clone()), value);
                    }
                    Some((store, put))
                }
                Err(f) => {
                    let _ = tx.attempt.abort().await;
                    return Ending::Done(Err(f.widen()));
                }
            }
        }
        _ => None,
    };
    let outcome = tx.attempt.commit(plan).await;
    if let (Some((store, put)), Err(e)) = (&put, &outcome) {
        let refused = match e {
            TryError::Retry(_) => true,
            TryError::Fail(f) => f.is_definite(),
        };
        if refused {
            glue::cleanup(shared, store, zk, put).await;
        }
    }
    match outcome {
        Ok(committed) => {
            shared.counters.add(&shared.counters.commits, 1);
            for change in &committed.changes {
                if let Some(r) = refs.get(&change.name) {
                    let value = |node: &Vec<u8>| {
                        let at = (change.name.clone(), node.clone());
                        resolved.get(&at).unwrap_or(node).clone()
                    };
                    r.notify(&value(&change.old), &value(&change.new));
                }
            }
            Ending::Done(Ok(value))
        }
        Err(TryError::Retry(reason)) => retry(shared, reason),
        Err(TryError::Fail(f)) => Ending::Done(Err(f.widen())),
    }
}

fn retry<R, E>(shared: &Shared, reason: RetryReason) -> Ending<R, E> {
    tracing::trace!(?reason, "stm: retrying the transaction");
    if matches!(reason, RetryReason::Conflict { .. }) {
        shared.counters.add(&shared.counters.conflicts, 1);
    }
    crate::metrics::retried(match reason {
        RetryReason::Conflict { .. } => "conflict",
        RetryReason::ReadFault { .. } => "read_fault",
        RetryReason::Barged => "barged",
        RetryReason::Interrupted => "interrupted",
    });
    Ending::Retry
}
