//! Maelstrom's `lin-kv` service on ZooKeeper: a linearizable key-value store with `read`,
//! `write` and `cas` (with `create_if_not_exists`), failing with Maelstrom's error codes.
//!
//! Each key is one node (`<base>/k-<key>`) holding a JSON value through an [`Atom`]:
//!
//! - `read` is a `sync` and a read, sent together: linearizable, one round trip;
//!   a missing key is [`KvError::KeyDoesNotExist`] (code 20).
//! - `write` is an update that always writes: a conditional `set_data` on the version the
//!   handle last saw (or a `create` for a new key), retried on a conflict.
//! - `cas` writes `to` if the value is `from`, else fails with
//!   [`KvError::PreconditionFailed`] (code 22) after confirming the mismatch with a
//!   linearizable read; with `create_if_not_exists`, a missing key is created with `to`.
//!
//! A write whose reply was lost is recognised by its write id and never applied twice (see
//! the [atom module docs](super)); when that cannot be decided the error is indefinite
//! ([`KvError::is_definite`]), as Maelstrom's `info` outcome. Session expiry fails the calls
//! in flight (indefinite if a write was); the next call runs on the client's next session.
//! Cancelling a call may leave its write applied.
//!
//! # The whole database as one value
//!
//! Updating several keys in place is not atomic: two transactions interleave between their
//! reads and writes (Maelstrom's chapter shows the resulting G-single and internal anomalies).
//! Storing the entire database as one value under one key makes every transaction a single
//! compare-and-set of that value, and a linearizable register of databases *is* a strict
//! serializable database. [`transact`] is that technique for the txn-list-append workload, on
//! an `Atom<BTreeMap<u64, Vec<u64>>>`: the transaction is applied to the map it read, and the
//! new map is written only if the map is still the one read.
//!
//! ```no_run
//! use std::collections::BTreeMap;
//! use avout::atom::Atom;
//! use avout::atom::linkv::{transact, MicroOp};
//! # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
//! let db: Atom<BTreeMap<u64, Vec<u64>>, _> = Atom::open(client, "/db/root", BTreeMap::new()).await?;
//! let done = transact(&db, &[MicroOp::Append(9, 11), MicroOp::Read(9, None)]).await?;
//! assert_eq!(done[1], MicroOp::Read(9, Some(vec![11])));
//! # Ok(()) }
//! ```
//!
//! The price is that every transaction conflicts with every other and the value grows with
//! the database (up to the node limit, or use a [`FileStore`](super::FileStore)); the chapter
//! goes on to persistent trees for that.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sync::{Mutex as StdMutex, lock};
use crate::{Client, CoordinationExt, path};

use super::{Atom, AtomError, Codec, Update};

/// A lin-kv failure, with its Maelstrom error code ([`code`](Self::code)).
///
/// ```
/// use avout::atom::linkv::KvError;
/// assert_eq!(KvError::KeyDoesNotExist { key: "x".into() }.code(), 20);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KvError {
    /// The key has no value (code 20, definite).
    #[error("key {key} does not exist")]
    KeyDoesNotExist {
        /// The key.
        key: String,
    },
    /// The value was not `from` (code 22, definite).
    #[error("key {key}: expected {expected}, found {found}")]
    PreconditionFailed {
        /// The key.
        key: String,
        /// The value expected.
        expected: Value,
        /// The value found.
        found: Value,
    },
    /// The key's atom failed.
    #[error(transparent)]
    Atom(#[from] AtomError),
}

impl KvError {
    /// Maelstrom's error code: 20 key-does-not-exist, 22 precondition-failed; for other
    /// failures 12 malformed-request (a value that cannot be stored), 11
    /// temporarily-unavailable (no server could be reached: nothing was sent), 14 abort
    /// (refused, nothing done), 13 crash (the outcome is unknown: the connection or session
    /// was lost with the write in flight; Maelstrom's indefinite error for a crashed node).
    ///
    /// ```
    /// use avout::atom::linkv::KvError;
    /// use avout::atom::AtomError;
    /// assert_eq!(KvError::Atom(AtomError::Zk(avout::Error::SessionExpired)).code(), 13);
    /// ```
    pub fn code(&self) -> u32 {
        match self {
            KvError::KeyDoesNotExist { .. } => 20,
            KvError::PreconditionFailed { .. } => 22,
            KvError::Atom(e) if !e.is_definite() => 13,
            KvError::Atom(AtomError::Zk(crate::Error::Unreachable { .. })) => 11,
            KvError::Atom(
                AtomError::TooLarge { .. } | AtomError::Encode { .. } | AtomError::Invalid { .. },
            ) => 12,
            KvError::Atom(_) => 14,
        }
    }

    /// Whether the operation certainly did not take effect.
    ///
    /// ```
    /// assert!(avout::atom::linkv::KvError::KeyDoesNotExist { key: "k".into() }.is_definite());
    /// ```
    pub fn is_definite(&self) -> bool {
        match self {
            KvError::Atom(e) => e.is_definite(),
            KvError::KeyDoesNotExist { .. } | KvError::PreconditionFailed { .. } => true,
        }
    }
}

/// A lin-kv store under a base path; see the [module docs](self).
///
/// ```no_run
/// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::linkv::KvError> {
/// use avout::atom::linkv::LinKv;
/// use serde_json::json;
/// let kv = LinKv::open(client, "/lin-kv").await?;
/// kv.write("x", json!(1)).await?;
/// kv.cas("x", &json!(1), json!(2), false).await?;
/// assert_eq!(kv.read("x").await?, json!(2));
/// # Ok(()) }
/// ```
pub struct LinKv {
    client: Client,
    base: String,
    keys: StdMutex<BTreeMap<String, Atom<Value>>>,
}

impl std::fmt::Debug for LinKv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinKv").field("base", &self.base).finish()
    }
}

impl LinKv {
    /// The store under `base`, creating the base node if missing.
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::linkv::KvError> {
    /// let kv = avout::atom::linkv::LinKv::open(client, "/kv").await?;
    /// # Ok(()) }
    /// ```
    pub async fn open(client: &Client, base: impl Into<String>) -> Result<Self, KvError> {
        let base = base.into();
        client
            .current_session()
            .await
            .map_err(AtomError::from)?
            .ensure_path(&base)
            .await
            .map_err(AtomError::from)?;
        Ok(LinKv {
            client: client.clone(),
            base,
            keys: StdMutex::new(BTreeMap::new()),
        })
    }

    /// The node that holds `key`: `k-` and the key, with characters outside
    /// `[A-Za-z0-9_.-]` percent-encoded.
    ///
    /// ```no_run
    /// # fn demo(kv: avout::atom::linkv::LinKv) {
    /// assert_eq!(kv.key_path("a/b"), format!("{}/k-a%2Fb", "/lin-kv"));
    /// # }
    /// ```
    pub fn key_path(&self, key: &str) -> String {
        let mut name = String::from("k-");
        for b in key.bytes() {
            if b.is_ascii_alphanumeric() || b"_.-".contains(&b) {
                name.push(b as char);
            } else {
                name.push_str(&format!("%{b:02X}"));
            }
        }
        path::join(&self.base, &name)
    }

    fn atom(&self, key: &str) -> Result<Atom<Value>, KvError> {
        let mut keys = lock(&self.keys);
        if let Some(atom) = keys.get(key) {
            return Ok(atom.clone());
        }
        let atom = Atom::builder(&self.client, self.key_path(key)).connect()?;
        keys.insert(key.to_owned(), atom.clone());
        Ok(atom)
    }

    /// The value of `key` (linearizable); [`KvError::KeyDoesNotExist`] if it has none.
    ///
    /// ```no_run
    /// # async fn demo(kv: avout::atom::linkv::LinKv) -> Result<(), avout::atom::linkv::KvError> {
    /// let v = kv.read("x").await?;
    /// # Ok(()) }
    /// ```
    pub async fn read(&self, key: &str) -> Result<Value, KvError> {
        match self.atom(key)?.deref().await {
            Ok(value) => Ok(value),
            Err(AtomError::Missing { .. }) => Err(KvError::KeyDoesNotExist {
                key: key.to_owned(),
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Sets `key` to `value`, creating it if needed.
    ///
    /// ```no_run
    /// # async fn demo(kv: avout::atom::linkv::LinKv) -> Result<(), avout::atom::linkv::KvError> {
    /// kv.write("x", serde_json::json!([1, 2])).await?;
    /// # Ok(()) }
    /// ```
    pub async fn write(&self, key: &str, value: Value) -> Result<(), KvError> {
        self.atom(key)?
            .update_opt(|_| Update::Write(value.clone(), ()), true)
            .await?;
        Ok(())
    }

    /// Sets `key` to `to` if its value is `from`. A missing key is created with `to` when
    /// `create_if_not_exists`, else is [`KvError::KeyDoesNotExist`]; another value is
    /// [`KvError::PreconditionFailed`].
    ///
    /// ```no_run
    /// # async fn demo(kv: avout::atom::linkv::LinKv) -> Result<(), avout::atom::linkv::KvError> {
    /// use serde_json::json;
    /// match kv.cas("x", &json!(1), json!(2), true).await {
    ///     Ok(()) => {}
    ///     Err(e) if e.code() == 22 => println!("someone else changed x"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn cas(
        &self,
        key: &str,
        from: &Value,
        to: Value,
        create_if_not_exists: bool,
    ) -> Result<(), KvError> {
        self.atom(key)?
            .update_opt(
                |current| match current {
                    None if create_if_not_exists => Update::Write(to.clone(), Ok(())),
                    None => Update::Keep(Err(KvError::KeyDoesNotExist {
                        key: key.to_owned(),
                    })),
                    Some(v) if v == from => Update::Write(to.clone(), Ok(())),
                    Some(v) => Update::Keep(Err(KvError::PreconditionFailed {
                        key: key.to_owned(),
                        expected: from.clone(),
                        found: v.clone(),
                    })),
                },
                true,
            )
            .await?
    }
}

/// One micro-operation of a txn-list-append transaction: read a list, or append to one
/// (Maelstrom's `["r", key, value]` and `["append", key, element]`).
///
/// ```
/// use avout::atom::linkv::MicroOp;
/// let op = MicroOp::Append(1, 5);
/// let json = serde_json::to_string(&op).unwrap();
/// assert_eq!(serde_json::from_str::<MicroOp>(&json).unwrap(), op);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MicroOp {
    /// Read `key`'s list (`None` before the transaction runs, and for a key never appended
    /// to).
    Read(u64, Option<Vec<u64>>),
    /// Append `element` to `key`'s list.
    Append(u64, u64),
}

/// Runs a txn-list-append transaction against a database held as one value; see the
/// [module docs](self). Returns the transaction with its reads filled in.
///
/// Strict serializable: each try applies the whole transaction to the map it read and writes
/// the result only if the map is unchanged; a conflict re-runs it on the newer map.
///
/// ```no_run
/// # use std::collections::BTreeMap;
/// # async fn demo(db: avout::atom::Atom<BTreeMap<u64, Vec<u64>>>) -> Result<(), avout::atom::AtomError> {
/// use avout::atom::linkv::{transact, MicroOp};
/// let done = transact(&db, &[MicroOp::Read(3, None)]).await?;
/// # Ok(()) }
/// ```
pub async fn transact<K>(
    db: &Atom<BTreeMap<u64, Vec<u64>>, K>,
    txn: &[MicroOp],
) -> Result<Vec<MicroOp>, AtomError>
where
    K: Codec,
{
    db.update(|map| {
        let mut next = map.clone();
        let done: Vec<MicroOp> = txn
            .iter()
            .map(|op| match op {
                MicroOp::Read(k, _) => MicroOp::Read(*k, next.get(k).cloned()),
                MicroOp::Append(k, v) => {
                    next.entry(*k).or_default().push(*v);
                    op.clone()
                }
            })
            .collect();
        if next == *map {
            // Read-only: no write, but a linearizable read confirms what was seen.
            Update::Keep(done)
        } else {
            Update::Write(next, done)
        }
    })
    .await
}
