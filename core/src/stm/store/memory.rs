//! [`MemoryStore`]: values in a map in this process, for the simulator and tests.

use std::collections::BTreeMap;

use futures::future::BoxFuture;

use crate::sync::{Mutex, lock};

use super::{RefStore, StoreError, StoreOp, StoredValue, ValueId};

#[derive(Default)]
struct State {
    values: BTreeMap<ValueId, Vec<u8>>,
    /// The operations that fail (what a test uses to see store failures reported).
    failing: Vec<StoreOp>,
}

/// A [`RefStore`] in this process: a sorted map behind a mutex. Deterministic (nothing in it
/// depends on time or hashing), so simulated runs that use it replay; shared by the
/// simulated clients of one run, as a database would be. Its values die with the process.
///
/// ```
/// use avout::stm::store::{MemoryStore, RefStore, StoredValue};
/// # futures::executor::block_on(async {
/// let store = MemoryStore::new();
/// let v = StoredValue { root: "/r".into(), name: "a".into(), key: "k".into(), value: vec![7] };
/// store.put(std::slice::from_ref(&v)).await.unwrap();
/// assert_eq!(store.list("/r").await.unwrap(), vec![v.id()]);
/// assert_eq!(store.len(), 1);
/// # });
/// ```
#[derive(Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("values", &self.len())
            .finish()
    }
}

impl MemoryStore {
    /// An empty store.
    ///
    /// ```
    /// assert!(avout::stm::store::MemoryStore::new().is_empty());
    /// ```
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// How many values it holds.
    ///
    /// ```
    /// assert_eq!(avout::stm::store::MemoryStore::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        lock(&self.state).values.len()
    }

    /// Whether it holds no value.
    ///
    /// ```
    /// assert!(avout::stm::store::MemoryStore::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids of every value it holds, sorted.
    ///
    /// ```
    /// assert!(avout::stm::store::MemoryStore::new().ids().is_empty());
    /// ```
    pub fn ids(&self) -> Vec<ValueId> {
        lock(&self.state).values.keys().cloned().collect()
    }

    /// Makes the operations in `ops` fail from now on (puts: [`StoreOp::Put`], gets:
    /// [`StoreOp::Get`], lists and removes: [`StoreOp::Collect`]), as an unreachable or
    /// refusing database would; `&[]` makes everything work again.
    ///
    /// ```
    /// use avout::stm::store::{MemoryStore, RefStore, StoreOp, ValueId};
    /// # futures::executor::block_on(async {
    /// let store = MemoryStore::new();
    /// store.set_failing(&[StoreOp::Get]);
    /// let id = ValueId { root: "/r".into(), name: "a".into(), key: "k".into() };
    /// assert!(store.get(&id).await.is_err());
    /// assert!(store.list("/r").await.is_ok());
    /// # });
    /// ```
    pub fn set_failing(&self, ops: &[StoreOp]) {
        lock(&self.state).failing = ops.to_vec();
    }

    fn with<R>(&self, op: StoreOp, f: impl FnOnce(&mut State) -> R) -> Result<R, StoreError> {
        let mut state = lock(&self.state);
        if state.failing.contains(&op) {
            return Err(StoreError::Backend {
                store: "memory",
                detail: "set to fail".into(),
            });
        }
        Ok(f(&mut state))
    }
}

impl RefStore for MemoryStore {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn put<'a>(&'a self, values: &'a [StoredValue]) -> BoxFuture<'a, Result<(), StoreError>> {
        let out = self.with(StoreOp::Put, |state| {
            for v in values {
                state.values.insert(v.id(), v.value.clone());
            }
        });
        Box::pin(async move { out })
    }

    fn get<'a>(&'a self, id: &'a ValueId) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        let out = self.with(StoreOp::Get, |state| state.values.get(id).cloned());
        Box::pin(async move { out })
    }

    fn list<'a>(&'a self, root: &'a str) -> BoxFuture<'a, Result<Vec<ValueId>, StoreError>> {
        let out = self.with(StoreOp::Collect, |state| {
            state
                .values
                .keys()
                .filter(|id| id.root == root)
                .cloned()
                .collect()
        });
        Box::pin(async move { out })
    }

    fn remove<'a>(&'a self, ids: &'a [ValueId]) -> BoxFuture<'a, Result<u64, StoreError>> {
        let out = self.with(StoreOp::Collect, |state| {
            ids.iter()
                .filter(|id| state.values.remove(id).is_some())
                .count() as u64
        });
        Box::pin(async move { out })
    }
}
