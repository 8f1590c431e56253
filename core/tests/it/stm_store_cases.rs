//! The STM with its values in a [`RefStore`], written once for any backend and any store:
//! large values, watchers, history and collection; a client killed between its put and its
//! commit; store failures reported as typed errors.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use avout::Client;
use avout::atom::Postcard;
use avout::stm::store::{MemoryStore, RefStore, StoreError, StoreOp, StoredValue, ValueId};
use avout::stm::{Abort, Protocol, Stm, StmConfig, StmError};
use futures::future::BoxFuture;

/// Opens `root` with `store`, keeping 3 values of history (so a few commits trim some).
pub(crate) async fn open(zk: &Client, root: &str, p: Protocol, store: Arc<dyn RefStore>) -> Stm {
    let config = StmConfig {
        max_history: 3,
        ..StmConfig::with_protocol(p)
    };
    Stm::open_with_store(zk, root, config, store).await.unwrap()
}

/// The store holds exactly `held` values for the root (what its refs' histories hold,
/// after a collection with no try in flight).
pub(crate) async fn assert_no_leak(stm: &Stm, store: &dyn RefStore, held: usize) {
    let listed = store.list(stm.root()).await.unwrap();
    assert_eq!(listed.len(), held, "{}: store holds {listed:?}", stm.root());
}

/// Values of `size` bytes (2 MiB: above a node's limit) round-trip through transactions;
/// watchers see values, not pointers; commutes work; history is resolved; collection removes
/// superseded, trimmed and never-held values and nothing else.
pub(crate) async fn large_values(
    zk: &Client,
    root: &str,
    p: Protocol,
    store: Arc<dyn RefStore>,
    size: usize,
) {
    let stm = open(zk, root, p, store.clone()).await;
    let blob = stm
        .make_ref_with("blob", vec![0u8; size], Postcard)
        .await
        .unwrap();
    let n = stm.make_ref("n", 0i64).await.unwrap();
    // An existing ref keeps its value; the one put for it is garbage.
    let again = stm.make_ref("n", 99i64).await.unwrap();
    assert_eq!(again.deref().await.unwrap(), 0);
    let seen: Arc<Mutex<Vec<(u8, u8, usize)>>> = Arc::default();
    let log = seen.clone();
    blob.add_watch("log", move |old: &Vec<u8>, new: &Vec<u8>| {
        log.lock().unwrap().push((old[0], new[0], new.len()))
    });
    for i in 1..=5u8 {
        let out = stm
            .dosync(async |tx| {
                let b = tx
                    .alter(&blob, |b| {
                        let mut b = b.clone();
                        b[0] = i;
                        b[size - 1] = i;
                        b
                    })
                    .await?;
                tx.commute(&n, |x| x + 1).await?;
                Ok::<_, Abort>(b.len())
            })
            .await
            .unwrap();
        assert_eq!(out, size);
    }
    let now = blob.deref().await.unwrap();
    assert_eq!((now.len(), now[0], now[size - 1]), (size, 5, 5));
    assert_eq!(n.deref().await.unwrap(), 5);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        (1..=5u8).map(|i| (i - 1, i, size)).collect::<Vec<_>>(),
        "{p:?}: watchers see the values"
    );
    let history = n.history().await.unwrap();
    assert_eq!(
        history.iter().map(|(_, v)| *v).collect::<Vec<_>>()[..3],
        [5, 4, 3],
        "{p:?}: history resolved"
    );
    let before = store.list(root).await.unwrap().len();
    let collected = stm.collect_garbage().await.unwrap();
    assert!(collected.removed > 0, "{p:?}: {collected:?}");
    assert_eq!(collected.listed as usize, before);
    assert_eq!(collected.listed, collected.kept + collected.removed);
    let held = blob.history().await.unwrap().len() + history.len();
    assert!(held >= 4, "{p:?}: history kept");
    assert_no_leak(&stm, &*store, held).await;
    // Still readable after collection.
    assert_eq!(blob.deref().await.unwrap()[0], 5);
    assert_eq!(stm.collect_garbage().await.unwrap().removed, 0);
}

/// A store that, once armed, parks every put after storing it: the try can then never reach
/// its commit, as a client killed between the two.
pub(crate) struct Stall {
    inner: Arc<dyn RefStore>,
    armed: AtomicBool,
    put: Mutex<Vec<ValueId>>,
    parked: tokio::sync::Notify,
}

impl Stall {
    pub(crate) fn new(inner: Arc<dyn RefStore>) -> Arc<Self> {
        Arc::new(Stall {
            inner,
            armed: AtomicBool::new(false),
            put: Mutex::default(),
            parked: tokio::sync::Notify::new(),
        })
    }
}

impl RefStore for Stall {
    fn name(&self) -> &'static str {
        "stall"
    }

    fn put<'a>(&'a self, values: &'a [StoredValue]) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.inner.put(values).await?;
            if self.armed.load(Ordering::SeqCst) {
                self.put
                    .lock()
                    .unwrap()
                    .extend(values.iter().map(StoredValue::id));
                self.parked.notify_one();
                futures::future::pending::<()>().await;
            }
            Ok(())
        })
    }

    fn get<'a>(&'a self, id: &'a ValueId) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        self.inner.get(id)
    }

    fn list<'a>(&'a self, root: &'a str) -> BoxFuture<'a, Result<Vec<ValueId>, StoreError>> {
        self.inner.list(root)
    }

    fn remove<'a>(&'a self, ids: &'a [ValueId]) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.inner.remove(ids)
    }
}

/// `victim` puts a new value and dies (its session closed) before committing: `survivor`
/// still reads the old value, a collection while the victim's session lives keeps its value
/// (the try might still commit), and one after removes every value the dead try put.
pub(crate) async fn killed_between_put_and_commit(
    victim: &Client,
    survivor: &Client,
    root: &str,
    p: Protocol,
    store: Arc<dyn RefStore>,
) {
    let alive = open(survivor, root, p, store.clone()).await;
    let acct = alive.make_ref("acct", 1i64).await.unwrap();
    let stall = Stall::new(store.clone());
    let doomed = open(victim, root, p, stall.clone()).await;
    let mine = doomed.get_ref::<i64>("acct").unwrap();
    stall.armed.store(true, Ordering::SeqCst);
    tokio::select! {
        biased;
        out = doomed.dosync(async |tx| tx.alter(&mine, |v| v + 1).await) => {
            panic!("{p:?}: the stalled try finished: {out:?}")
        }
        () = stall.parked.notified() => {}
    }
    let put: BTreeSet<ValueId> = stall.put.lock().unwrap().iter().cloned().collect();
    assert_eq!(put.len(), 1, "{p:?}: the try put its value");
    let listed = |ids: Vec<ValueId>| ids.into_iter().filter(|id| put.contains(id)).count();
    assert_eq!(acct.deref().await.unwrap(), 1, "{p:?}: no visible trace");
    alive.collect_garbage().await.unwrap();
    assert_eq!(
        listed(store.list(root).await.unwrap()),
        1,
        "{p:?}: a try that may still commit keeps its values"
    );
    victim.close().await.unwrap();
    assert_eq!(acct.deref().await.unwrap(), 1, "{p:?}: no visible trace");
    let collected = alive.collect_garbage().await.unwrap();
    assert!(collected.removed >= 1, "{p:?}: {collected:?}");
    assert_eq!(
        listed(store.list(root).await.unwrap()),
        0,
        "{p:?}: nothing of the dead try is left"
    );
    // The survivor carries on (under Mvcc, the dead try's point and tags went with it).
    alive
        .dosync(async |tx| tx.alter(&acct, |v| v + 10).await)
        .await
        .unwrap();
    assert_eq!(acct.deref().await.unwrap(), 11);
    alive.collect_garbage().await.unwrap();
    let held = acct.history().await.unwrap().len();
    assert_no_leak(&alive, &*store, held).await;
}

/// Whether `err` is the store failing at `op`.
fn failed_at(err: &StmError, op: StoreOp) -> bool {
    matches!(err, StmError::Store { op: failed, .. } if *failed == op)
}

/// A failing store: a put fails the transaction with a typed "rejected" error and commits
/// nothing; a get fails the read.
pub(crate) async fn store_failures(zk: &Client, root: &str, p: Protocol) {
    let store = Arc::new(MemoryStore::new());
    let stm = open(zk, root, p, store.clone()).await;
    let a = stm.make_ref("a", 1i64).await.unwrap();
    store.set_failing(&[StoreOp::Put]);
    let bump = || stm.dosync(async |tx| tx.alter(&a, |v| v + 1).await);
    let err = bump().await.unwrap_err();
    assert!(
        failed_at(&err, StoreOp::Put) && err.is_definite(),
        "{p:?}: {err:?}"
    );
    assert_eq!(a.deref().await.unwrap(), 1, "{p:?}: nothing committed");
    store.set_failing(&[StoreOp::Get]);
    let err = a.deref().await.unwrap_err();
    assert!(failed_at(&err, StoreOp::Get), "{p:?}: {err:?}");
    let err = bump().await.unwrap_err();
    assert!(failed_at(&err, StoreOp::Get), "{p:?}: {err:?}");
    store.set_failing(&[]);
    assert_eq!(a.deref().await.unwrap(), 1, "{p:?}: nothing committed");
    stm.collect_garbage().await.unwrap();
    assert_no_leak(&stm, &*store, 1).await;
}
