//! [`Ref`]: a named, typed handle on one of an STM root's refs, with its validator and
//! watchers.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::atom::{Codec, Json};
use crate::sync::{Mutex, lock};

use super::protocol::{Failure, HistoryEntry};
use super::store::{StoreError, StoreOp, glue};
use super::{Shared, StmError};

/// How many pointers in a row [`Ref::deref`] reads before giving up on a ref whose values are
/// collected faster than it reads them.
const READ_TURNS: usize = 64;

type Validator<T> = Arc<dyn Fn(&T) -> bool + Send + Sync>;
type Watcher<T> = Arc<dyn Fn(&T, &T) + Send + Sync>;

/// Checks that `name` can name a ref: one non-empty path segment.
pub(crate) fn validate_name(name: &str) -> Result<(), Failure> {
    let bad = |reason| {
        Err(StmError::BadName {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return bad("empty");
    }
    if name.contains('/') {
        return bad("contains '/'");
    }
    if name == "." || name == ".." {
        return bad("'.' and '..' are not node names");
    }
    if crate::path::validate_path(&format!("/{name}"), false).is_err() {
        return bad("not a valid ZooKeeper node name");
    }
    Ok(())
}

struct Inner<T, K> {
    shared: Arc<Shared>,
    name: String,
    codec: K,
    validator: Mutex<Option<Validator<T>>>,
    watchers: Mutex<BTreeMap<String, Watcher<T>>>,
}

/// A transactional reference: a named value under an [`Stm`](super::Stm)'s root, changed
/// only inside [`Stm::dosync`](super::Stm::dosync) (or by [`Ref::revert`], a transaction too).
///
/// Clones share the validator and watchers; handles made separately (another
/// [`Stm::make_ref`](super::Stm::make_ref) call, another process) have their own, as they
/// are local to the handle, like Clojure's.
///
/// ```no_run
/// # async fn demo(stm: avout::stm::Stm) -> Result<(), avout::stm::StmError> {
/// let r = stm.make_ref("counter", 0u64).await?;
/// r.set_validator(|n| *n < 1_000);
/// r.add_watch("log", |old, new| println!("{old} -> {new}"));
/// stm.dosync(async |tx| tx.alter(&r, |n| n + 1).await).await?;
/// # Ok(()) }
/// ```
pub struct Ref<T, K = Json> {
    inner: Arc<Inner<T, K>>,
}

impl<T, K> Clone for Ref<T, K> {
    fn clone(&self) -> Self {
        Ref {
            inner: self.inner.clone(),
        }
    }
}

impl<T, K> std::fmt::Debug for Ref<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ref")
            .field("root", &self.inner.shared.root)
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl<T, K> Ref<T, K>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    K: Codec,
{
    pub(crate) fn new(shared: Arc<Shared>, name: String, codec: K) -> Self {
        Ref {
            inner: Arc::new(Inner {
                shared,
                name,
                codec,
                validator: Mutex::new(None),
                watchers: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// The ref's name.
    ///
    /// ```no_run
    /// # fn demo(r: avout::stm::Ref<u64>) {
    /// println!("{}", r.name());
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// The newest committed value, outside any transaction (each protocol documents how
    /// fresh it is; both make it linearizable).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::stm::Ref<u64>) -> Result<(), avout::stm::StmError> {
    /// let now = r.deref().await?;
    /// # Ok(()) }
    /// ```
    pub async fn deref(&self) -> Result<T, StmError> {
        let shared = &self.inner.shared;
        let zk = shared.session().await?;
        let Some(store) = &shared.store else {
            let bytes = shared.engine.read_latest(&zk, &self.inner.name).await?;
            return self.decode(&bytes);
        };
        // A value gone when read was superseded and collected in between: a newer one is
        // there to read. Each turn means another commit landed, so this ends unless the ref
        // is rewritten and collected faster than it can be read, which is reported.
        for _ in 0..READ_TURNS {
            let node = shared.engine.read_latest(&zk, &self.inner.name).await?;
            if let Some(value) = glue::resolve(shared, store, &self.inner.name, &node).await? {
                return self.decode(&value);
            }
        }
        Err(StmError::Store {
            op: StoreOp::Get,
            source: StoreError::Backend {
                store: store.name(),
                detail: format!(
                    "ref {}: {READ_TURNS} pointers in a row were collected before being read",
                    self.inner.name
                ),
            },
        })
    }

    /// Sets the function every value a transaction would commit to this ref must pass
    /// (through this handle or its clones); a rejection fails the transaction with
    /// [`StmError::Invalid`] and writes nothing. Replaces the previous validator.
    ///
    /// ```no_run
    /// # fn demo(r: avout::stm::Ref<i64>) {
    /// r.set_validator(|balance| *balance >= 0);
    /// # }
    /// ```
    pub fn set_validator(&self, valid: impl Fn(&T) -> bool + Send + Sync + 'static) {
        *lock(&self.inner.validator) = Some(Arc::new(valid));
    }

    /// Removes the validator.
    ///
    /// ```no_run
    /// # fn demo(r: avout::stm::Ref<i64>) {
    /// r.clear_validator();
    /// # }
    /// ```
    pub fn clear_validator(&self) {
        *lock(&self.inner.validator) = None;
    }

    /// Calls `f(old, new)` after each transaction that commits a change of this ref through
    /// this handle (or a clone), in the committing task, after the commit. Replaces the
    /// watcher of the same key.
    ///
    /// ```no_run
    /// # fn demo(r: avout::stm::Ref<i64>) {
    /// r.add_watch("audit", |old, new| eprintln!("{old} -> {new}"));
    /// # }
    /// ```
    pub fn add_watch(&self, key: impl Into<String>, f: impl Fn(&T, &T) + Send + Sync + 'static) {
        lock(&self.inner.watchers).insert(key.into(), Arc::new(f));
    }

    /// Removes the watcher of `key`; whether there was one.
    ///
    /// ```no_run
    /// # fn demo(r: avout::stm::Ref<i64>) {
    /// assert!(!r.remove_watch("none"));
    /// # }
    /// ```
    pub fn remove_watch(&self, key: &str) -> bool {
        lock(&self.inner.watchers).remove(key).is_some()
    }

    /// The ref's values at past commit points, newest first (the current value first), as
    /// far back as the protocol keeps them. [`StmError::Unsupported`] for a protocol that
    /// keeps no history.
    ///
    /// ```no_run
    /// # async fn demo(r: avout::stm::Ref<u64>) -> Result<(), avout::stm::StmError> {
    /// for (point, value) in r.history().await? {
    ///     println!("{point}: {value}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn history(&self) -> Result<Vec<(u64, T)>, StmError> {
        let shared = &self.inner.shared;
        let zk = shared.session().await?;
        let entries = self.resolved_history(&zk).await?;
        entries
            .into_iter()
            .map(|e| Ok((e.point, self.decode(&e.value)?)))
            .collect()
    }

    /// The protocol's history, with a store's pointers replaced by their values (values
    /// collected since are left out: they were trimmed in between).
    async fn resolved_history(
        &self,
        zk: &crate::client::Session,
    ) -> Result<Vec<HistoryEntry>, StmError> {
        let shared = &self.inner.shared;
        let entries = shared.engine.history(zk, &self.inner.name).await?;
        let Some(store) = &shared.store else {
            return Ok(entries);
        };
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            if let Some(value) = glue::resolve(shared, store, &self.inner.name, &e.value).await? {
                out.push(HistoryEntry {
                    point: e.point,
                    value,
                });
            }
        }
        Ok(out)
    }

    /// The value the ref had at commit point `point` (the newest commit at or before it),
    /// `None` if that is older than the history kept.
    ///
    /// ```no_run
    /// # async fn demo(r: avout::stm::Ref<u64>) -> Result<(), avout::stm::StmError> {
    /// let then = r.value_at(42).await?;
    /// # Ok(()) }
    /// ```
    pub async fn value_at(&self, point: u64) -> Result<Option<T>, StmError> {
        let shared = &self.inner.shared;
        let zk = shared.session().await?;
        let entries = self.resolved_history(&zk).await?;
        match entries.into_iter().find(|e| e.point <= point) {
            Some(e) => Ok(Some(self.decode(&e.value)?)),
            None => Ok(None),
        }
    }

    pub(crate) fn decode(&self, bytes: &[u8]) -> Result<T, StmError> {
        self.inner
            .codec
            .decode(bytes)
            .map_err(|source| StmError::Decode {
                name: self.inner.name.clone(),
                source,
            })
    }
}

/// A ref with its type erased, as a transaction keeps it.
pub(crate) trait ErasedRef: Send + Sync {
    /// Decodes bytes into a `T`.
    fn decode_any(&self, bytes: &[u8]) -> Result<Box<dyn Any + Send>, Failure>;
    /// Validates a `T` and encodes it.
    fn validate_encode(&self, value: &(dyn Any + Send)) -> Result<Vec<u8>, Failure>;
    /// Calls the watchers with decoded values; bytes that do not decode are skipped (the
    /// commit is done; a watcher cannot be told about what it cannot read).
    fn notify(&self, old: &[u8], new: &[u8]);
}

impl<T, K> ErasedRef for Ref<T, K>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    K: Codec,
{
    fn decode_any(&self, bytes: &[u8]) -> Result<Box<dyn Any + Send>, Failure> {
        Ok(Box::new(self.decode(bytes)?))
    }

    fn validate_encode(&self, value: &(dyn Any + Send)) -> Result<Vec<u8>, Failure> {
        let value: &T = value
            .downcast_ref()
            .expect("a transaction keeps each ref's values as the ref's type");
        let validator = lock(&self.inner.validator).clone();
        if validator.is_some_and(|valid| !valid(value)) {
            return Err(StmError::Invalid {
                name: self.inner.name.clone(),
            });
        }
        self.inner
            .codec
            .encode(value)
            .map_err(|source| StmError::Encode {
                name: self.inner.name.clone(),
                source,
            })
    }

    fn notify(&self, old: &[u8], new: &[u8]) {
        let watchers: Vec<Watcher<T>> = lock(&self.inner.watchers).values().cloned().collect();
        if watchers.is_empty() {
            return;
        }
        if let (Ok(old), Ok(new)) = (self.decode(old), self.decode(new)) {
            for w in watchers {
                w(&old, &new);
            }
        }
    }
}
