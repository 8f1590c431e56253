//! Where a ref's value bytes live: in its ZooKeeper nodes (the default), or in a [`RefStore`]
//! (Avout's `ReferenceData`), with only a small pointer in the nodes.
//!
//! # Where values live
//!
//! Without a store ([`Stm::open`](super::Stm::open)) a ref's value is the data of its
//! ZooKeeper nodes, as each protocol lays them out: this is the ZooKeeper node store, and its
//! requests and round trips are exactly the protocol's (the pinned counts in
//! [`stm`](super)'s docs). Values are then limited to what one node holds (about 1 MiB).
//!
//! With a store ([`Stm::open_with_store`](super::Stm::open_with_store)) every value the STM
//! commits is first **put** in the store under a key unique to the try (the try's GUID) and
//! the ref's name; the protocol then commits, in its nodes, only a pointer naming that key
//! (a few dozen bytes), so the protocols run unchanged and values can be as large as the
//! store allows. A read gets the pointer from ZooKeeper through the protocol, then the value
//! from the store. Every handle on a root must use the same store (a pointer read by a handle
//! without one decodes as garbage, and bytes that are not a pointer read by a handle with
//! one fail with [`StoreError::NotAPointer`]).
//!
//! A try that writes:
//!
//! 1. creates an ephemeral **marker** `<root>/refstore/<key>` (one request), which says
//!    "this try may still commit values put under `<key>`";
//! 2. puts its values (one call, [`RefStore::put`]);
//! 3. commits through the protocol, whose commit `multi` also deletes the marker: the
//!    pointers become visible and the marker disappears atomically;
//! 4. if the commit is definitely refused (a conflict, a validator...), removes its values and
//!    its marker.
//!
//! Commuted refs are written as `alter`s: their values must be put before the commit, and a
//! commute's recompute at commit cannot wait on a store. Two transactions commuting one ref
//! then conflict (one runs again) instead of only redoing the commit.
//!
//! # Garbage
//!
//! [`Stm::collect_garbage`](super::Stm::collect_garbage) removes from the store every value
//! of the root that no try can still commit (its marker is gone) and that no ref still holds
//! (neither its current value nor one in its history): values of tries that never committed,
//! of clients that died between put and commit, and values superseded or trimmed from
//! history. It lists the store's keys, then the markers, then each ref's kept values: a key
//! listed with no marker was put by a try that had ended, committed or not, before the
//! markers were read, so the kept values read afterwards include it if it is still held.
//!
//! # Connection loss, expiry, cancellation
//!
//! - A store failure during put: the transaction fails with [`StmError::Store`](super::StmError)
//!   with [`StoreOp::Put`]: rejected, nothing committed (the protocol was never asked).
//! - A store failure during get: the read fails with [`StoreOp::Get`]; nothing was written.
//! - A value gone from the store when read (superseded, then collected) is a read fault: the
//!   try runs again, as for a trimmed history value.
//! - ZooKeeper connection loss or session expiry: as without a store (the protocol decides
//!   the commit). A try whose session expires leaves its values in the store; its marker,
//!   ephemeral, goes with the session, and the next collection removes them.
//! - A dropped (cancelled) `dosync` future leaves whatever it put, and its marker until its
//!   session ends or the commit it sent lands; collection removes what is not committed.

pub(crate) mod glue;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;

pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresStore, TABLE};

use futures::future::BoxFuture;

/// One value to put: the ref (its root and name), the try's key, the bytes.
///
/// ```
/// let v = avout::stm::store::StoredValue { root: "/bank".into(), name: "alice".into(), key: "k1".into(), value: b"100".to_vec() };
/// assert_eq!(v.id().name, "alice");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoredValue {
    /// The STM root.
    pub root: String,
    /// The ref's name.
    pub name: String,
    /// The key of the try that put it (unique per try).
    pub key: String,
    /// The value's bytes, as the ref's codec wrote them.
    pub value: Vec<u8>,
}

impl StoredValue {
    /// Where the value is kept.
    ///
    /// ```
    /// let v = avout::stm::store::StoredValue { root: "/r".into(), name: "a".into(), key: "k".into(), value: vec![] };
    /// assert_eq!(v.id().key, "k");
    /// ```
    pub fn id(&self) -> ValueId {
        ValueId {
            root: self.root.clone(),
            name: self.name.clone(),
            key: self.key.clone(),
        }
    }
}

/// Where one value is kept: the ref's root and name, and the key of the try that put it.
///
/// ```
/// let id = avout::stm::store::ValueId { root: "/r".into(), name: "a".into(), key: "k".into() };
/// assert_eq!(id.to_string(), "/r/a@k");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId {
    /// The STM root.
    pub root: String,
    /// The ref's name.
    pub name: String,
    /// The key of the try that put it.
    pub key: String,
}

impl std::fmt::Display for ValueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}@{}", self.root, self.name, self.key)
    }
}

/// Which store operation failed (what [`StmError::Store`](super::StmError) reports).
///
/// ```
/// assert_eq!(avout::stm::store::StoreOp::Put.to_string(), "put (rejected, nothing committed)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreOp {
    /// Putting a try's values before its commit: the transaction is rejected and nothing is
    /// committed.
    Put,
    /// Getting a value for a read: the read failed; nothing was written.
    Get,
    /// Listing or removing values (collection, or a refused try's cleanup): nothing
    /// committed depends on it.
    Collect,
}

impl std::fmt::Display for StoreOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoreOp::Put => "put (rejected, nothing committed)",
            StoreOp::Get => "get (read failed)",
            StoreOp::Collect => "collect",
        })
    }
}

/// A store's failure.
///
/// ```
/// use avout::stm::store::StoreError;
/// let e = StoreError::Backend { store: "postgres", detail: "connection refused".into() };
/// assert_eq!(e.to_string(), "the postgres store failed: connection refused");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store could not do what was asked (unreachable, refused, a failed query).
    #[error("the {store} store failed: {detail}")]
    Backend {
        /// The store's name.
        store: &'static str,
        /// What it said.
        detail: String,
    },
    /// A ref's node holds bytes that are not a pointer into a store: the root was written by
    /// a handle without this store.
    #[error(
        "ref {name} holds {len} bytes that are not a value pointer (was the root written without a store?)"
    )]
    NotAPointer {
        /// The ref's name.
        name: String,
        /// The node's value length.
        len: usize,
    },
}

/// Storage for ref values outside ZooKeeper, keyed by (root, ref name, try key); see the
/// [module docs](self).
///
/// Implementations must make `put` atomic (all the values or none) and durable before it
/// returns, and `get` see every value whose `put` returned. They are shared by all the
/// transactions of an [`Stm`](super::Stm) and called concurrently.
///
/// ```
/// use std::sync::Arc;
/// use avout::stm::store::{MemoryStore, RefStore, StoredValue};
/// # futures::executor::block_on(async {
/// let store = MemoryStore::new();
/// let v = StoredValue { root: "/r".into(), name: "a".into(), key: "k".into(), value: b"1".to_vec() };
/// store.put(std::slice::from_ref(&v)).await.unwrap();
/// assert_eq!(store.get(&v.id()).await.unwrap(), Some(b"1".to_vec()));
/// assert_eq!(store.remove(&[v.id()]).await.unwrap(), 1);
/// # });
/// ```
pub trait RefStore: Send + Sync + 'static {
    /// The store's name, for errors.
    fn name(&self) -> &'static str;

    /// Stores `values`, all or none. A key is never put twice.
    fn put<'a>(&'a self, values: &'a [StoredValue]) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The value kept at `id`, `None` if there is none (never put, or removed).
    fn get<'a>(&'a self, id: &'a ValueId) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>>;

    /// Every value kept for refs of `root`, sorted.
    fn list<'a>(&'a self, root: &'a str) -> BoxFuture<'a, Result<Vec<ValueId>, StoreError>>;

    /// Removes the values at `ids` (missing ones are ignored); how many were removed.
    fn remove<'a>(&'a self, ids: &'a [ValueId]) -> BoxFuture<'a, Result<u64, StoreError>>;
}

/// What a ref's node holds when its value lives in a store.
const POINTER_PREFIX: &[u8] = b"avout-ref-store:";

/// The node bytes pointing at key `key`.
pub(crate) fn pointer(key: &str) -> Vec<u8> {
    let mut p = POINTER_PREFIX.to_vec();
    p.extend_from_slice(key.as_bytes());
    p
}

/// The key a ref's node bytes point at.
pub(crate) fn key_of(name: &str, node: &[u8]) -> Result<String, StoreError> {
    node.strip_prefix(POINTER_PREFIX)
        .and_then(|k| std::str::from_utf8(k).ok())
        .map(str::to_owned)
        .ok_or_else(|| StoreError::NotAPointer {
            name: name.to_owned(),
            len: node.len(),
        })
}

/// A try's key: its GUID, in hex.
pub(crate) fn new_key(guid: u128) -> String {
    format!("{guid:032x}")
}

/// How many values [`Stm::collect_garbage`](super::Stm::collect_garbage) found and removed.
///
/// ```
/// let c = avout::stm::store::Collected::default();
/// assert_eq!(c.removed, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Collected {
    /// Values in the store for the root when the collection started.
    pub listed: u64,
    /// Values kept: held by a ref, or put by a try that may still commit.
    pub kept: u64,
    /// Values removed.
    pub removed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_round_trip_and_foreign_bytes_are_refused() {
        assert_eq!(key_of("a", &pointer("00ff")).unwrap(), "00ff");
        assert_eq!(
            key_of("a", b"100"),
            Err(StoreError::NotAPointer {
                name: "a".into(),
                len: 3
            })
        );
    }
}
