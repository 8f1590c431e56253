//! Concourse's record operations over atoms: each record is an atom holding a map from keys to
//! sets of values, and `set`, `clear`, `verify_and_swap` and `get_and_increment` are each a
//! retry loop over one optimistic operation.
//!
//! Concourse's `AtomicOperation` reads what it needs, buffers its writes and commits only if
//! nothing it read has changed (it "fails fast" on a version change), and the built-in
//! functions loop until a commit succeeds. Here the record's node version is that check: an
//! operation computes the record's next value from the one it read and writes it conditional
//! on the version ([`Atom::update`]); a concurrent change fails the write at once and the
//! operation runs again on the new record. An operation that decides to write nothing (a
//! `verify_and_swap` whose expected value is absent, a `get_and_increment` on a non-number)
//! is confirmed against a linearizable read first, so its answer is never based on a stale
//! copy.
//!
//! Connection loss, session expiry and cancellation behave as for [`Atom`] (see the
//! [atom module docs](super)): a write whose reply was lost is recognised by its write id and
//! never applied twice.
//!
//! Revert to a past point needs the history that the STM keeps, and lives with it.
//!
//! ```no_run
//! use avout::atom::record::{Records, Value};
//! # async fn demo(client: &avout::Client) -> Result<(), avout::atom::record::RecordError> {
//! let records = Records::new(client, "/concourse");
//! records.set("name", Value::from("Ada"), 1).await?;
//! records.set("visits", Value::Int(0), 1).await?;
//! let before = records.get_and_increment("visits", 1).await?;
//! assert_eq!(before, Value::Int(0));
//! # Ok(()) }
//! ```

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::Client;
use crate::sync::{Mutex as StdMutex, lock};

use super::{Atom, AtomError, Update};

/// A value in a record (Concourse's `TObject`).
///
/// Values are totally ordered (floats by IEEE 754 `totalOrder`), so a record's sets are
/// `BTreeSet`s and iterate in a deterministic order; "the first value" of a key is the
/// smallest.
///
/// ```
/// use avout::atom::record::Value;
/// assert!(Value::Int(1) < Value::Int(2));
/// assert_eq!(Value::from("x"), Value::Str("x".into()));
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Value {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
}

impl Value {
    fn rank(&self) -> u8 {
        match self {
            Value::Bool(_) => 0,
            Value::Int(_) => 1,
            Value::Float(_) => 2,
            Value::Str(_) => 3,
        }
    }

    /// Whether the value is a number (`Int` or `Float`).
    ///
    /// ```
    /// assert!(avout::atom::record::Value::Float(1.5).is_number());
    /// ```
    pub fn is_number(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Float(_))
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(s.to_owned())
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}

/// A record: each key maps to a set of values.
///
/// ```
/// use avout::atom::record::{Record, Value};
/// let mut r = Record::new();
/// r.entry("tags".into()).or_default().insert(Value::from("a"));
/// assert_eq!(r["tags"].len(), 1);
/// ```
pub type Record = BTreeMap<String, BTreeSet<Value>>;

/// Why a record operation failed.
///
/// ```
/// use avout::atom::record::{RecordError, Value};
/// let e = RecordError::NotANumber { key: "name".into(), record: 1, found: Some(Value::from("Ada")) };
/// assert!(e.to_string().contains("not a number"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// `get_and_increment` found no number as the key's first value; nothing was written.
    #[error("the first value of {key} in record {record} is not a number: {found:?}")]
    NotANumber {
        /// The key.
        key: String,
        /// The record.
        record: u64,
        /// The first value, if any.
        found: Option<Value>,
    },
    /// `get_and_increment` would overflow an `Int`; nothing was written.
    #[error("incrementing {key} in record {record} overflows")]
    Overflow {
        /// The key.
        key: String,
        /// The record.
        record: u64,
    },
    /// The record's atom failed.
    #[error(transparent)]
    Atom(#[from] AtomError),
}

/// Records as atoms under a base path (`<base>/r<record>`); see the [module docs](self).
///
/// ```no_run
/// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::record::RecordError> {
/// let records = avout::atom::record::Records::new(client, "/db");
/// records.clear("tags", 7).await?;
/// # Ok(()) }
/// ```
pub struct Records {
    client: Client,
    base: String,
    atoms: StdMutex<BTreeMap<u64, Atom<Record>>>,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records").field("base", &self.base).finish()
    }
}

impl Records {
    /// Records under `base` (created on first use).
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// let records = avout::atom::record::Records::new(client, "/db");
    /// # }
    /// ```
    pub fn new(client: &Client, base: impl Into<String>) -> Self {
        Records {
            client: client.clone(),
            base: base.into(),
            atoms: StdMutex::new(BTreeMap::new()),
        }
    }

    /// The atom holding `record` (created empty if missing).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// let atom = r.atom(1).await?;
    /// println!("{}", atom.path());
    /// # Ok(()) }
    /// ```
    pub async fn atom(&self, record: u64) -> Result<Atom<Record>, RecordError> {
        if let Some(atom) = lock(&self.atoms).get(&record) {
            return Ok(atom.clone());
        }
        let path = crate::path::join(&self.base, &format!("r{record}"));
        let atom = Atom::open(&self.client, path, Record::new()).await?;
        Ok(lock(&self.atoms).entry(record).or_insert(atom).clone())
    }

    /// The values of `key` in `record` (linearizable).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// for v in r.fetch("tags", 1).await? { println!("{v:?}"); }
    /// # Ok(()) }
    /// ```
    pub async fn fetch(&self, key: &str, record: u64) -> Result<BTreeSet<Value>, RecordError> {
        let rec = self.atom(record).await?.deref().await?;
        Ok(rec.get(key).cloned().unwrap_or_default())
    }

    /// Whether `value` is among the values of `key` in `record` (linearizable).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// use avout::atom::record::Value;
    /// let admin = r.verify("role", &Value::from("admin"), 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn verify(&self, key: &str, value: &Value, record: u64) -> Result<bool, RecordError> {
        Ok(self.fetch(key, record).await?.contains(value))
    }

    /// Adds `value` to `key` in `record`; `false` if it was already there (nothing written).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// r.add("tags", "rust".into(), 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add(&self, key: &str, value: Value, record: u64) -> Result<bool, RecordError> {
        let atom = self.atom(record).await?;
        Ok(atom
            .update(|rec| {
                if rec.get(key).is_some_and(|vs| vs.contains(&value)) {
                    return Update::Keep(false);
                }
                let mut next = rec.clone();
                next.entry(key.to_owned())
                    .or_default()
                    .insert(value.clone());
                Update::Write(next, true)
            })
            .await?)
    }

    /// Removes `value` from `key` in `record`; `false` if it was not there.
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// r.remove("tags", &"rust".into(), 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn remove(&self, key: &str, value: &Value, record: u64) -> Result<bool, RecordError> {
        let atom = self.atom(record).await?;
        Ok(atom
            .update(|rec| {
                if !rec.get(key).is_some_and(|vs| vs.contains(value)) {
                    return Update::Keep(false);
                }
                let mut next = rec.clone();
                remove_value(&mut next, key, value);
                Update::Write(next, true)
            })
            .await?)
    }

    /// `SET key AS value IN record`: `value` becomes the key's only value (every other value
    /// removed in the same write).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// r.set("status", "active".into(), 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set(&self, key: &str, value: Value, record: u64) -> Result<(), RecordError> {
        let atom = self.atom(record).await?;
        atom.update(|rec| {
            let mut next = rec.clone();
            next.insert(key.to_owned(), BTreeSet::from([value.clone()]));
            Update::Write(next, ())
        })
        .await?;
        Ok(())
    }

    /// `CLEAR key IN record`: removes every value of `key`; `false` if it had none.
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// r.clear("status", 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn clear(&self, key: &str, record: u64) -> Result<bool, RecordError> {
        let atom = self.atom(record).await?;
        Ok(atom
            .update(|rec| {
                if !rec.contains_key(key) {
                    return Update::Keep(false);
                }
                let mut next = rec.clone();
                next.remove(key);
                Update::Write(next, true)
            })
            .await?)
    }

    /// `VERIFY key AS expected IN record AND SWAP WITH replacement`: if `expected` is a value
    /// of `key`, replaces it with `replacement` (other values stay) and returns `true`;
    /// returns `false`, writing nothing, if it is not.
    ///
    /// Concourse leaves the retry to the caller because its commit cannot tell a lost race
    /// from a failed verification; here a lost race re-verifies against the new record, so
    /// `false` always means the expected value was absent.
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// use avout::atom::record::Value;
    /// let moved = r.verify_and_swap("state", &Value::from("draft"), 1, Value::from("published")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn verify_and_swap(
        &self,
        key: &str,
        expected: &Value,
        record: u64,
        replacement: Value,
    ) -> Result<bool, RecordError> {
        let atom = self.atom(record).await?;
        Ok(atom
            .update(|rec| {
                if !rec.get(key).is_some_and(|vs| vs.contains(expected)) {
                    return Update::Keep(false);
                }
                let mut next = rec.clone();
                remove_value(&mut next, key, expected);
                next.entry(key.to_owned())
                    .or_default()
                    .insert(replacement.clone());
                Update::Write(next, true)
            })
            .await?)
    }

    /// `GET key IN record AND INCREMENT`: replaces the key's first value, which must be a
    /// number, with itself plus one, and returns it as it was. An `Int` is incremented
    /// exactly (overflow is [`RecordError::Overflow`]); a `Float` by `1.0`. A missing or
    /// non-numeric first value is [`RecordError::NotANumber`], and nothing is written.
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// let ticket = r.get_and_increment("next_ticket", 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn get_and_increment(&self, key: &str, record: u64) -> Result<Value, RecordError> {
        let atom = self.atom(record).await?;
        atom.update(|rec| {
            let first = rec.get(key).and_then(|vs| vs.first()).cloned();
            let next_value = match &first {
                Some(Value::Int(n)) => match n.checked_add(1) {
                    Some(m) => Value::Int(m),
                    None => {
                        return Update::Keep(Err(RecordError::Overflow {
                            key: key.to_owned(),
                            record,
                        }));
                    }
                },
                Some(Value::Float(x)) => Value::Float(x + 1.0),
                _ => {
                    return Update::Keep(Err(RecordError::NotANumber {
                        key: key.to_owned(),
                        record,
                        found: first,
                    }));
                }
            };
            let old = first.expect("a number was found");
            let mut next = rec.clone();
            remove_value(&mut next, key, &old);
            next.entry(key.to_owned()).or_default().insert(next_value);
            Update::Write(next, Ok(old))
        })
        .await?
    }
}

/// Removes one value, and the key with its last value.
fn remove_value(rec: &mut Record, key: &str, value: &Value) {
    if let Some(values) = rec.get_mut(key) {
        values.remove(value);
        if values.is_empty() {
            rec.remove(key);
        }
    }
}
