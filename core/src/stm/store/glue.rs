//! What the frontend does with a [`RefStore`]: put a try's values behind a marker, resolve the
//! pointers the protocols read, clean up after a refused try, collect garbage. The protocols
//! never see a store: they commit and read pointers as they would values.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::client::Session;
use crate::machine::RETRY_PAUSE_MS;
use crate::{CreateMode, CreateOptions, Error, ErrorClass, Op};

use super::super::protocol::Failure;
use super::super::{Shared, StmError};
use super::{
    Collected, RefStore, StoreError, StoreOp, StoredValue, ValueId, key_of, new_key, pointer,
};

/// The node under which a root's markers live.
pub(crate) fn marker_dir(root: &str) -> String {
    format!("{root}/refstore")
}

fn store_failure(op: StoreOp) -> impl FnOnce(StoreError) -> Failure {
    move |source| StmError::Store { op, source }
}

/// Runs an idempotent ZooKeeper step, again after each indeterminate error (a bounded number
/// of times), counting each request.
async fn retry_lost<T, F, Fut>(shared: &Shared, mut step: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = crate::Result<T>>,
{
    let mut lost = 0;
    loop {
        count_request(shared);
        match step().await {
            Err(e) if e.class() == ErrorClass::Indeterminate && lost < 100 => {
                lost += 1;
                tokio::time::sleep(std::time::Duration::from_millis(RETRY_PAUSE_MS)).await;
            }
            out => return out,
        }
    }
}

/// Counts one request (and its round trip) sent outside the protocols' machines.
fn count_request(shared: &Shared) {
    let c = &shared.counters;
    c.add(&c.requests, 1);
    c.add(&c.round_trips, 1);
}

/// Values a try put, and its marker.
pub(crate) struct PutTry {
    ids: Vec<ValueId>,
    marker: String,
}

impl PutTry {
    /// The op the commit's `multi` carries: the marker's delete.
    pub(crate) fn marker_delete(&self) -> Op {
        Op::delete(self.marker.clone(), None)
    }
}

/// Puts `writes`' values under a new key (behind a new marker) and replaces each with its
/// pointer.
pub(crate) async fn put_values(
    shared: &Shared,
    store: &Arc<dyn RefStore>,
    zk: &Session,
    writes: &mut [(String, Vec<u8>)],
) -> Result<PutTry, Failure> {
    let key = new_key(zk.new_guid());
    let marker = format!("{}/{key}", marker_dir(&shared.root));
    // The marker's name is the try's own: after a lost reply, "exists" means it was made.
    let mut sent = false;
    let created = retry_lost(shared, || {
        let again = std::mem::replace(&mut sent, true);
        let marker = &marker;
        async move {
            match zk
                .create(marker, &[], &CreateOptions::new(CreateMode::Ephemeral))
                .await
            {
                Err(Error::NodeExists { .. }) if again => Ok(()),
                out => out.map(|_| ()),
            }
        }
    })
    .await;
    created.map_err(StmError::from_zk)?;
    let values: Vec<StoredValue> = writes
        .iter()
        .map(|(name, value)| StoredValue {
            root: shared.root.clone(),
            name: name.clone(),
            key: key.clone(),
            value: value.clone(),
        })
        .collect();
    let ids = values.iter().map(StoredValue::id).collect();
    let put = PutTry { ids, marker };
    if let Err(e) = store.put(&values).await {
        // Nothing was committed; the values the store may hold are collected once the marker
        // is gone.
        cleanup(shared, store, zk, &put).await;
        return Err(store_failure(StoreOp::Put)(e));
    }
    for (_, bytes) in writes.iter_mut() {
        *bytes = pointer(&key);
    }
    Ok(put)
}

/// Removes what a try that certainly did not commit put. A failure leaves garbage for
/// [`collect`] (the marker, ephemeral, at the latest when the session ends): it is logged,
/// and does not change the transaction's outcome, which is already decided.
pub(crate) async fn cleanup(
    shared: &Shared,
    store: &Arc<dyn RefStore>,
    zk: &Session,
    put: &PutTry,
) {
    if let Err(e) = store.remove(&put.ids).await {
        tracing::warn!(error = %e, "ref store: a refused try's values stay until collected");
    }
    match retry_lost(shared, || zk.delete(&put.marker, None)).await {
        Ok(()) | Err(Error::NoNode { .. }) => {}
        Err(e) => tracing::warn!(error = %e, "ref store: a refused try's marker stays"),
    }
}

/// The value a ref's node bytes point at; `None` if it is no longer in the store (superseded
/// and collected since the pointer was read).
pub(crate) async fn resolve(
    shared: &Shared,
    store: &Arc<dyn RefStore>,
    name: &str,
    node: &[u8],
) -> Result<Option<Vec<u8>>, Failure> {
    let key = key_of(name, node).map_err(store_failure(StoreOp::Get))?;
    let id = ValueId {
        root: shared.root.clone(),
        name: name.to_owned(),
        key,
    };
    store.get(&id).await.map_err(store_failure(StoreOp::Get))
}

/// See [`Stm::collect_garbage`](super::super::Stm::collect_garbage).
pub(crate) async fn collect(
    shared: &Shared,
    store: &Arc<dyn RefStore>,
) -> Result<Collected, Failure> {
    let zk = shared.session().await?;
    let ids = store
        .list(&shared.root)
        .await
        .map_err(store_failure(StoreOp::Collect))?;
    // Markers after the keys: a key listed without a marker belongs to a try that had ended.
    // The sync first: this session's server may lag behind the marker's creation (acknowledged
    // before the put that made the key) and behind the commits the kept values are read from.
    let dir = marker_dir(&shared.root);
    retry_lost(shared, || zk.sync(&dir))
        .await
        .map_err(StmError::from_zk)?;
    let markers: BTreeSet<String> = match retry_lost(shared, || zk.get_children(&dir)).await {
        Ok((children, _)) => children.into_iter().collect(),
        Err(Error::NoNode { .. }) => BTreeSet::new(),
        Err(e) => return Err(StmError::from_zk(e)),
    };
    let names: BTreeSet<&str> = ids.iter().map(|id| id.name.as_str()).collect();
    let mut held: BTreeSet<(String, String)> = BTreeSet::new();
    for name in names {
        for node in kept_values(shared, &zk, name).await? {
            if let Ok(key) = key_of(name, &node) {
                held.insert((name.to_owned(), key));
            }
        }
    }
    let garbage: Vec<ValueId> = ids
        .iter()
        .filter(|id| {
            !markers.contains(&id.key) && !held.contains(&(id.name.clone(), id.key.clone()))
        })
        .cloned()
        .collect();
    let removed = if garbage.is_empty() {
        0
    } else {
        store
            .remove(&garbage)
            .await
            .map_err(store_failure(StoreOp::Collect))?
    };
    Ok(Collected {
        listed: ids.len() as u64,
        kept: (ids.len() - garbage.len()) as u64,
        removed,
    })
}

/// The node bytes a ref still holds: its history (the current value first), or its current
/// value under a protocol without history; none if the ref does not exist.
async fn kept_values(shared: &Shared, zk: &Session, name: &str) -> Result<Vec<Vec<u8>>, Failure> {
    match shared.engine.history(zk, name).await {
        Ok(entries) => Ok(entries.into_iter().map(|e| e.value).collect()),
        Err(StmError::NoRef { .. }) => Ok(Vec::new()),
        Err(StmError::Unsupported { .. }) => match shared.engine.read_latest(zk, name).await {
            Ok(v) => Ok(vec![v]),
            Err(StmError::NoRef { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// Makes ref `name` with `initial` put in the store, if it does not exist.
pub(crate) async fn create_ref(
    shared: &Shared,
    store: &Arc<dyn RefStore>,
    zk: &Session,
    name: &str,
    initial: Vec<u8>,
) -> Result<(), Failure> {
    let mut writes = [(name.to_owned(), initial)];
    let put = put_values(shared, store, zk, &mut writes).await?;
    let [(_, node)] = writes;
    let created = shared.engine.create_ref(zk, name, &node).await;
    // An existing ref keeps its value: the one put is garbage once the marker is gone.
    let unmarked = match retry_lost(shared, || zk.delete(&put.marker, None)).await {
        Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
        Err(e) => Err(StmError::from_zk(e)),
    };
    created?;
    unmarked
}
