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
//! # History
//!
//! Each record keeps, beside its keys' values, a bounded history of each key: every write
//! adds a revision stamped with the record's *time*, the count of the record's writes (see
//! [`history`] for why that and not ZooKeeper's zxid). [`Records::history`],
//! [`Records::get_at`] and [`Records::revert`] are Concourse's `audit`/`chronicle`, `get …
//! at timestamp` and `revert key in record to timestamp`; `revert` is one conditional write
//! like every other operation, and adds a revision (history is never rewritten). A key keeps
//! its last [`DEFAULT_HISTORY_LIMIT`] revisions unless the handle says otherwise
//! ([`Records::history_limit`]); asking for a time older than what is kept is
//! [`RecordError::HistoryTrimmed`], never an answer from the wrong revision.
//!
//! ```no_run
//! use avout::atom::record::{Records, Value};
//! # async fn demo(client: &avout::Client) -> Result<(), avout::atom::record::RecordError> {
//! let records = Records::new(client, "/concourse");
//! records.set("name", Value::from("Ada"), 1).await?;
//! records.set("visits", Value::Int(0), 1).await?;
//! let before = records.get_and_increment("visits", 1).await?;
//! assert_eq!(before, Value::Int(0));
//! // The record's time 2 is after the second write: visits was 0 then.
//! assert_eq!(records.get_at("visits", 2, 1).await?, [Value::Int(0)].into());
//! records.revert("visits", 2, 1).await?;
//! # Ok(()) }
//! ```
//!
//! ```no_run
//! # use avout::atom::record::{Records, Value};
//! # async fn demo(client: &avout::Client) -> Result<(), avout::atom::record::RecordError> {
//! // Keep only the last 8 revisions of each key written through this handle.
//! let records = Records::new(client, "/concourse").history_limit(8);
//! for revision in records.history("visits", 1).await?.revisions {
//!     println!("{}: {:?}", revision.time, revision.values);
//! }
//! # Ok(()) }
//! ```

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::Client;
use crate::sync::{Mutex as StdMutex, lock};

use super::{Atom, AtomError, Update};

pub mod history;

pub use history::{DEFAULT_HISTORY_LIMIT, History, RecordState, Revision, TimeError};

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
    /// use avout::atom::record::Value;
    /// assert!(Value::Float(1.5).is_number() && Value::Int(-2).is_number());
    /// assert!(!Value::from("7").is_number() && !Value::Bool(true).is_number());
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
    /// The revision of `key` in force at `time` was dropped to keep the history within its
    /// bound; `oldest` is the oldest time still answerable. Nothing was written.
    #[error("{key} in record {record} keeps no history before time {oldest}, asked for {time}")]
    HistoryTrimmed {
        /// The key.
        key: String,
        /// The record.
        record: u64,
        /// The time asked for.
        time: u64,
        /// The time of the oldest kept revision.
        oldest: u64,
    },
    /// Record `record` has not reached `time` yet (its time is `now`); nothing was written.
    #[error("record {record} is at time {now}, asked about {key} at {time}")]
    NotYet {
        /// The key.
        key: String,
        /// The record.
        record: u64,
        /// The time asked for.
        time: u64,
        /// The record's time.
        now: u64,
    },
    /// The record's atom failed.
    #[error(transparent)]
    Atom(#[from] AtomError),
}

impl RecordError {
    /// Whether the operation certainly changed nothing (`false` only when a write may have
    /// taken effect: see [`AtomError::is_definite`]).
    ///
    /// ```
    /// use avout::atom::record::RecordError;
    /// assert!(RecordError::Overflow { key: "k".into(), record: 1 }.is_definite());
    /// ```
    pub fn is_definite(&self) -> bool {
        match self {
            RecordError::Atom(e) => e.is_definite(),
            _ => true,
        }
    }

    fn at_time(key: &str, record: u64, time: u64, e: TimeError) -> RecordError {
        let key = key.to_owned();
        match e {
            TimeError::Trimmed { oldest } => RecordError::HistoryTrimmed {
                key,
                record,
                time,
                oldest,
            },
            TimeError::NotYet { now } => RecordError::NotYet {
                key,
                record,
                time,
                now,
            },
        }
    }
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
    limit: usize,
    atoms: StdMutex<BTreeMap<u64, Atom<RecordState>>>,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("base", &self.base)
            .field("limit", &self.limit)
            .finish()
    }
}

impl Records {
    /// Records under `base` (created on first use), keeping [`DEFAULT_HISTORY_LIMIT`]
    /// revisions of each key.
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
            limit: DEFAULT_HISTORY_LIMIT,
            atoms: StdMutex::new(BTreeMap::new()),
        }
    }

    /// Keep at most `limit` revisions of each key this handle writes (at least 1: the last
    /// revision is the key's current values). A write trims the key it writes; handles with
    /// different limits on one record each trim to their own.
    ///
    /// The whole record, history included, is one node: with ZooKeeper's 1 MiB limit, keys
    /// times revisions times value size must stay well under it.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// let records = avout::atom::record::Records::new(client, "/db").history_limit(8);
    /// # }
    /// ```
    pub fn history_limit(mut self, limit: usize) -> Self {
        self.limit = limit.max(1);
        self
    }

    /// The atom holding `record` (created empty, at time 0, if missing).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// let atom = r.atom(1).await?;
    /// println!("{} at time {}", atom.path(), atom.deref().await?.time());
    /// # Ok(()) }
    /// ```
    pub async fn atom(&self, record: u64) -> Result<Atom<RecordState>, RecordError> {
        if let Some(atom) = lock(&self.atoms).get(&record) {
            return Ok(atom.clone());
        }
        let path = crate::path::join(&self.base, &format!("r{record}"));
        let atom = Atom::open(&self.client, path, RecordState::default()).await?;
        Ok(lock(&self.atoms).entry(record).or_insert(atom).clone())
    }

    /// The record's current values and history (linearizable).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// let state = r.state(1).await?;
    /// println!("time {}: {:?}", state.time(), state.record());
    /// # Ok(()) }
    /// ```
    pub async fn state(&self, record: u64) -> Result<RecordState, RecordError> {
        Ok(self.atom(record).await?.deref().await?)
    }

    /// The values of `key` in `record` (linearizable).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// for v in r.fetch("tags", 1).await? { println!("{v:?}"); }
    /// # Ok(()) }
    /// ```
    pub async fn fetch(&self, key: &str, record: u64) -> Result<BTreeSet<Value>, RecordError> {
        Ok(self.state(record).await?.values(key))
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

    /// The kept revisions of `key` in `record`, oldest first, and the record's time
    /// (linearizable; Concourse's `chronicle`).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// let h = r.history("status", 1).await?;
    /// if h.trimmed { println!("older revisions were dropped"); }
    /// # Ok(()) }
    /// ```
    pub async fn history(&self, key: &str, record: u64) -> Result<History, RecordError> {
        Ok(self.state(record).await?.history(key))
    }

    /// The values `key` had in `record` at `time` (Concourse's `get … at timestamp`), read
    /// linearizably: [`RecordError::NotYet`] for a time the record has not reached,
    /// [`RecordError::HistoryTrimmed`] for one older than the kept history.
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// let then = r.get_at("status", 3, 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn get_at(
        &self,
        key: &str,
        time: u64,
        record: u64,
    ) -> Result<BTreeSet<Value>, RecordError> {
        self.state(record)
            .await?
            .at(key, time)
            .map_err(|e| RecordError::at_time(key, record, time, e))
    }

    /// `REVERT key IN record TO time`: gives `key` the values it had at `time`, as a new
    /// revision, in one conditional write, and returns the new revision's time; `None`,
    /// with nothing written, if the key already holds those values. Errors as
    /// [`get_at`](Self::get_at), with nothing written.
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// if let Some(since) = r.revert("status", 3, 1).await? {
    ///     assert_eq!(r.get_at("status", since, 1).await?, r.get_at("status", 3, 1).await?);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn revert(
        &self,
        key: &str,
        time: u64,
        record: u64,
    ) -> Result<Option<u64>, RecordError> {
        let atom = self.atom(record).await?;
        atom.update(|state| match state.at(key, time) {
            Err(e) => Update::Keep(Err(RecordError::at_time(key, record, time, e))),
            Ok(then) if then == state.values(key) => Update::Keep(Ok(None)),
            Ok(then) => {
                let next = state.with(key, then, self.limit);
                let since = next.time();
                Update::Write(next, Ok(Some(since)))
            }
        })
        .await?
    }

    /// Adds `value` to `key` in `record`; `false` if it was already there (nothing written).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// r.add("tags", "rust".into(), 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add(&self, key: &str, value: Value, record: u64) -> Result<bool, RecordError> {
        self.change(key, record, |values| {
            if values.contains(&value) {
                return Update::Keep(false);
            }
            let mut next = values.clone();
            next.insert(value.clone());
            Update::Write(next, true)
        })
        .await
    }

    /// Removes `value` from `key` in `record`; `false` if it was not there.
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// r.remove("tags", &"rust".into(), 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn remove(&self, key: &str, value: &Value, record: u64) -> Result<bool, RecordError> {
        self.change(key, record, |values| {
            if !values.contains(value) {
                return Update::Keep(false);
            }
            let mut next = values.clone();
            next.remove(value);
            Update::Write(next, true)
        })
        .await
    }

    /// `SET key AS value IN record`: `value` becomes the key's only value (every other value
    /// removed in the same write; nothing written if it already is).
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// r.set("status", "active".into(), 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set(&self, key: &str, value: Value, record: u64) -> Result<(), RecordError> {
        let only = BTreeSet::from([value]);
        self.change(key, record, |values| {
            if *values == only {
                return Update::Keep(());
            }
            Update::Write(only.clone(), ())
        })
        .await
    }

    /// `CLEAR key IN record`: removes every value of `key`; `false` if it had none.
    ///
    /// ```no_run
    /// # async fn demo(r: avout::atom::record::Records) -> Result<(), avout::atom::record::RecordError> {
    /// r.clear("status", 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn clear(&self, key: &str, record: u64) -> Result<bool, RecordError> {
        self.change(key, record, |values| {
            if values.is_empty() {
                return Update::Keep(false);
            }
            Update::Write(BTreeSet::new(), true)
        })
        .await
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
        self.change(key, record, |values| {
            if !values.contains(expected) {
                return Update::Keep(false);
            }
            let mut next = values.clone();
            next.remove(expected);
            next.insert(replacement.clone());
            Update::Write(next, true)
        })
        .await
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
        self.change(key, record, |values| {
            let first = values.first().cloned();
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
            let mut next = values.clone();
            next.remove(&old);
            next.insert(next_value);
            Update::Write(next, Ok(old))
        })
        .await?
    }

    /// One conditional write of `key`'s values in `record`: `f` sees the current values and
    /// decides the next ones (a new revision, stamped one time later) or to keep them.
    async fn change<R>(
        &self,
        key: &str,
        record: u64,
        mut f: impl FnMut(&BTreeSet<Value>) -> Update<BTreeSet<Value>, R>,
    ) -> Result<R, RecordError> {
        let atom = self.atom(record).await?;
        Ok(atom
            .update(|state| match f(&state.values(key)) {
                Update::Keep(r) => Update::Keep(r),
                Update::Write(values, r) => Update::Write(state.with(key, values, self.limit), r),
            })
            .await?)
    }
}
