//! Distributed atoms: Clojure's `atom` (`deref`, `reset!`, `swap!`, `compare-and-set!`,
//! validators, watches) for serde values held in a ZooKeeper node.
//!
//! # The algorithm
//!
//! An [`Atom`] is optimistic compare-and-set on the node's version, with a cache:
//!
//! 1. Take the cached `(value, version)` (reading the node when there is none yet).
//! 2. Compute the new value (`swap`'s function, `reset`'s value, …), validate and encode it.
//! 3. `set_data(path, bytes, version)`. With a current cache an uncontended `swap` is this one
//!    round trip.
//! 4. On `BadVersion` someone else won: read the node, refresh the cache and go to 2. The
//!    function is called again with the newer value, so it must be free of side effects.
//!
//! With [`AtomBuilder::promote_after`] an update that lost `n` times in a row takes a
//! distributed [`Mutex`] beside the atom (`<path>/_lock`) before its next
//! tries, as Curator's `DistributedAtomicValue` does with `PromotedToLock`: promoted writers
//! queue fairly instead of racing, which bounds starvation under contention. The tries are
//! still conditional on the version (writers that are not promoted need no lock), so the lock
//! never affects correctness. [`Atom::stats`] counts optimistic and promoted tries.
//!
//! The node holds a small header, the latest write id of each of the last 32 writers (a
//! writer is an atom handle, which sends its writes one at a time) and the value (see
//! [`StateContainer`] for values kept elsewhere); the header is what makes recovery after a
//! lost reply exact (below). A node holding bare bytes (another program wrote it) reads as
//! a value with no header; bytes the [`Codec`] cannot decode are an [`AtomError::Decode`].
//!
//! Reads that return a value ([`Atom::deref`], and an update that decides not to write, such
//! as a failed [`Atom::compare_and_set`]) `sync` first, so they are linearizable; the `sync`
//! and the read are sent together, one round trip.
//!
//! # Connection loss, session expiry, cancellation
//!
//! - **Connection loss** while a write is in flight makes its outcome unknown. The atom waits
//!   for the session to reconnect, reads the node and looks up its writer's entry: if it names
//!   the lost write, the update is done (it is *not* applied again); if not, it retries as
//!   after a conflict. However many writes happened meanwhile, this is exact unless more than
//!   32 other writers wrote since (or another program overwrote the header), and then it
//!   fails with [`AtomError::Indeterminate`] rather than guess. See [`CasMachine`].
//! - **Session expiry** fails the operation with [`AtomError::Zk`] (session lost); an update
//!   in flight at that moment may or may not have been applied ([`AtomError::is_definite`]
//!   says `false`). The node is persistent, so nothing else is lost: the handle's next
//!   operation runs on the client's next session (see [`Client`]), with the same cache and
//!   writer id, and a watcher goes on reporting changes from there.
//! - **Cancellation**: dropping an operation's future stops it; a write already sent may
//!   still take effect (the next read will show it). A promoted update's lock is released
//!   in the background. A [`FileStore`] value put by a cancelled write may stay behind as an
//!   unreferenced file.
//!
//! # Example
//!
//! ```no_run
//! use avout::atom::Atom;
//! # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
//! let hits: Atom<u64> = Atom::open(client, "/stats/hits", 0).await?;
//! let now = hits.swap(|n| n + 1).await?;
//! assert!(hits.deref().await? >= now);
//! # Ok(()) }
//! ```

mod builder;
mod cache;
pub mod codec;
mod envelope;
mod error;
pub mod linkv;
pub mod machine;
pub mod record;
pub mod store;
pub mod watcher;

pub use builder::AtomBuilder;
pub use codec::{Codec, CodecError, Json, Postcard};
pub use error::AtomError;
pub use machine::{CasMachine, Outcome, Step, StepError, Versioned};
pub use store::{FileStore, StateContainer, StoreError, ZkNode};
pub use watcher::{AtomWatcher, Change};

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::Session;
use crate::lock::Mutex;
use crate::machine::drive;
use crate::planted::Bugs;
use crate::sync::{Mutex as StdMutex, lock};
use crate::{Client, Coordination, CoordinationExt, MAX_DATA_LEN, Stat, path};

use cache::Cache;
use envelope::{Body, Envelope};

/// The node data an atom handle writes: the encoded `value`, inline, recorded as write
/// `write_id` of `writer`, replacing the node data `previous` (`None` when creating the node).
/// The same bytes [`Atom`]'s updates write, for code that steps a [`CasMachine`] by hand, such
/// as the model checker.
///
/// ```
/// let first = avout::atom::payload(7, 1, None, b"0".to_vec());
/// let second = avout::atom::payload(7, 2, Some(&first), b"1".to_vec());
/// assert_eq!(avout::atom::payload_value(&second), Some(b"1".to_vec()));
/// ```
pub fn payload(writer: u64, write_id: u64, previous: Option<&[u8]>, value: Vec<u8>) -> Vec<u8> {
    let previous = previous.map(Envelope::parse);
    Envelope::next(writer, write_id, previous.as_ref(), Body::Inline(value)).to_bytes()
}

/// The encoded value in an atom node's data; `None` if it is kept in a [`StateContainer`].
///
/// ```
/// assert_eq!(avout::atom::payload_value(b"42"), Some(b"42".to_vec()));
/// ```
pub fn payload_value(data: &[u8]) -> Option<Vec<u8>> {
    match Envelope::parse(data).body {
        Body::Inline(value) => Some(value),
        Body::Blob(_) => None,
    }
}

/// What an [`Atom::update`] function decides.
///
/// ```
/// use avout::atom::Update;
/// let u: Update<u64, bool> = Update::Keep(false);
/// assert!(matches!(u, Update::Keep(false)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Update<T, R> {
    /// Write this value, and return `R` once it is written.
    Write(T, R),
    /// Write nothing and return `R` (confirmed against a linearizable read first).
    Keep(R),
}

/// Counts of an atom handle's tries; see [`Atom::stats`].
///
/// ```
/// let s = avout::atom::AtomStats::default();
/// assert_eq!(s.optimistic_tries + s.promoted_tries, 0);
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct AtomStats {
    /// Conditional writes sent without the promotion lock.
    pub optimistic_tries: u64,
    /// Conditional writes sent while holding the promotion lock.
    pub promoted_tries: u64,
    /// Updates that took the promotion lock.
    pub promotions: u64,
    /// Writes that lost to another writer (or were found not applied after a recovery).
    pub conflicts: u64,
    /// Writes whose outcome was decided by a read after a connection loss (either way).
    pub recoveries: u64,
    /// Updates that wrote.
    pub writes: u64,
}

#[derive(Default)]
struct Counters {
    optimistic_tries: AtomicU64,
    promoted_tries: AtomicU64,
    promotions: AtomicU64,
    conflicts: AtomicU64,
    recoveries: AtomicU64,
    writes: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// A node's value, decoded, with what a writer replacing it needs.
#[derive(Clone, Debug)]
struct Loaded<T> {
    value: T,
    envelope: Envelope,
    stat: Stat,
}

/// What the handle knows of the node.
#[derive(Clone, Debug)]
enum Known<T> {
    Unknown,
    Absent,
    Present(Loaded<T>),
}

type Validator<T> = Arc<dyn Fn(&T) -> bool + Send + Sync>;

/// What an atom and its watchers share: where the node is and how to read it.
struct Core<K> {
    client: Client,
    path: String,
    codec: K,
    store: Arc<dyn StateContainer>,
    /// The bugs planted in this atom's machines.
    planted: Bugs,
}

impl<K: Codec> Core<K> {
    /// The session this operation runs on (see [`Client::current_session`]).
    async fn session(&self) -> Result<Session, AtomError> {
        Ok(self.client.current_session().await?)
    }

    /// Decodes a node read; `Ok(None)` if its value is in a store file that has been replaced
    /// since (the node changed: read it again).
    async fn load<T: DeserializeOwned>(
        &self,
        node: crate::atom::Versioned,
    ) -> Result<Option<Loaded<T>>, AtomError> {
        let envelope = Envelope::parse(&node.data);
        let bytes = match &envelope.body {
            Body::Inline(bytes) => std::borrow::Cow::Borrowed(bytes.as_slice()),
            Body::Blob(key) => match self.store.get(&self.path, key).await {
                Ok(Some(bytes)) => std::borrow::Cow::Owned(bytes),
                Ok(None) => return Ok(None),
                Err(source) => {
                    return Err(AtomError::Store {
                        path: self.path.clone(),
                        source,
                    });
                }
            },
        };
        let value = self
            .codec
            .decode(&bytes)
            .map_err(|source| AtomError::Decode {
                path: self.path.clone(),
                source,
            })?;
        Ok(Some(Loaded {
            value,
            envelope,
            stat: node.stat,
        }))
    }

    /// Reads and decodes the node, linearizably with `sync`.
    async fn read<T: DeserializeOwned>(
        &self,
        zk: &dyn Coordination,
        sync: bool,
    ) -> Result<Known<T>, AtomError> {
        loop {
            let outcome = drive(
                zk,
                &mut CasMachine::new(&self.path, Step::Read { sync }).planted(self.planted),
            )
            .await
            .map_err(AtomError::from_step)?;
            let Outcome::NotApplied { current } = outcome else {
                unreachable!("a read writes nothing")
            };
            match current {
                None => return Ok(Known::Absent),
                Some(node) => {
                    if let Some(loaded) = self.load(node).await? {
                        return Ok(Known::Present(loaded));
                    }
                }
            }
        }
    }

    /// Removes a store file no version refers to any more; failures only leak a file.
    async fn discard(&self, body: &Body) {
        if let Body::Blob(key) = body
            && let Err(e) = self.store.remove(&self.path, key).await
        {
            tracing::warn!(atom = %self.path, error = %e, "could not remove a replaced value");
        }
    }
}

struct Inner<T, K> {
    core: Arc<Core<K>>,
    known: Cache<T>,
    validator: StdMutex<Option<Validator<T>>>,
    promote_after: Option<u32>,
    mutex: Option<Mutex>,
    /// This handle's writer id, and the lock that keeps one write of it in flight at a time
    /// (what makes its entry in the node's header decide a lost write).
    writer: u64,
    writing: tokio::sync::Mutex<()>,
    counters: Counters,
    watches: StdMutex<BTreeMap<String, tokio::task::JoinHandle<()>>>,
}

impl<T, K> Drop for Inner<T, K> {
    fn drop(&mut self) {
        for (_, task) in std::mem::take(&mut *lock(&self.watches)) {
            task.abort();
        }
    }
}

/// A distributed atom holding a `T` in a ZooKeeper node, encoded with codec `K`; see the
/// [module docs](self) for the algorithm and its behaviour on connection loss, expiry and
/// cancellation.
///
/// Handles are cheap to clone and share their cache, validator, watches and stats. Each
/// process (or task that wants its own promotion lock hold) opens its own.
///
/// ```no_run
/// use avout::atom::{Atom, Postcard};
/// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
/// let seats: Atom<u32, Postcard> = Atom::builder(client, "/show/seats")
///     .codec(Postcard)
///     .validator(|n: &u32| *n <= 500)
///     .promote_after(4)
///     .open(0)
///     .await?;
/// seats.swap(|n| n + 2).await?;
/// # Ok(()) }
/// ```
pub struct Atom<T, K = Json> {
    inner: Arc<Inner<T, K>>,
}

impl<T, K> Clone for Atom<T, K> {
    fn clone(&self) -> Self {
        Atom {
            inner: self.inner.clone(),
        }
    }
}

impl<T, K> std::fmt::Debug for Atom<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Atom")
            .field("path", &self.inner.core.path)
            .finish()
    }
}

impl<T> Atom<T, Json>
where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
{
    /// A builder for the atom at `path` (JSON, values in the node, no validator, no
    /// promotion).
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
    /// let a: avout::atom::Atom<u64> = avout::atom::Atom::builder(client, "/n").open(0).await?;
    /// # Ok(()) }
    /// ```
    pub fn builder(client: &Client, path: impl Into<String>) -> AtomBuilder<T, Json> {
        AtomBuilder {
            client: client.clone(),
            path: path.into(),
            codec: Json,
            store: Arc::new(ZkNode),
            validator: None,
            promote_after: None,
            lock_path: None,
            planted: Bugs::NONE,
            _value: PhantomData,
        }
    }

    /// Opens the JSON atom at `path`, creating it with `initial` if missing.
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
    /// let a: avout::atom::Atom<u64> = avout::atom::Atom::open(client, "/n", 0).await?;
    /// # Ok(()) }
    /// ```
    pub async fn open(
        client: &Client,
        path: impl Into<String>,
        initial: T,
    ) -> Result<Self, AtomError> {
        Self::builder(client, path).open(initial).await
    }
}

impl<T, K> Atom<T, K>
where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
    K: Codec,
{
    /// The atom's path.
    ///
    /// ```no_run
    /// # fn demo(a: avout::atom::Atom<u64>) {
    /// println!("{}", a.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.inner.core.path
    }

    /// The current value, by a linearizable read (`sync` and read, one round trip).
    ///
    /// ```no_run
    /// # async fn demo(a: avout::atom::Atom<u64>) -> Result<(), avout::atom::AtomError> {
    /// let n = a.deref().await?;
    /// # Ok(()) }
    /// ```
    pub async fn deref(&self) -> Result<T, AtomError> {
        let core = &*self.inner.core;
        let session = core.session().await?;
        let known = core.read(&*session, true).await?;
        self.remember(known.clone());
        match known {
            Known::Present(loaded) => Ok(loaded.value),
            Known::Absent | Known::Unknown => Err(self.missing()),
        }
    }

    /// The value this handle last saw, without asking ZooKeeper (`None` before the first
    /// read or write).
    ///
    /// ```no_run
    /// # fn demo(a: avout::atom::Atom<u64>) {
    /// if let Some(n) = a.cached() { println!("about {n}"); }
    /// # }
    /// ```
    pub fn cached(&self) -> Option<T> {
        self.inner.known.value()
    }

    /// Sets the value regardless of the current one (Clojure's `reset!`). One round trip with
    /// a current cache.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::atom::Atom<u64>) -> Result<(), avout::atom::AtomError> {
    /// a.reset(0).await?;
    /// # Ok(()) }
    /// ```
    pub async fn reset(&self, value: T) -> Result<(), AtomError> {
        self.update(|_| Update::Write(value.clone(), ())).await
    }

    /// Replaces the value with `f(value)` atomically and returns the new value (Clojure's
    /// `swap!`). `f` may be called several times (once per try) and MUST NOT have side
    /// effects.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::atom::Atom<Vec<u32>>) -> Result<(), avout::atom::AtomError> {
    /// let after = a.swap(|v| { let mut v = v.clone(); v.push(7); v }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn swap(&self, mut f: impl FnMut(&T) -> T) -> Result<T, AtomError> {
        self.update(|current| {
            let new = f(current);
            Update::Write(new.clone(), new)
        })
        .await
    }

    /// Sets the value to `new` if it equals `expected`; `false` (nothing written) if not.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::atom::Atom<u64>) -> Result<(), avout::atom::AtomError> {
    /// if a.compare_and_set(&0, 1).await? { println!("claimed"); }
    /// # Ok(()) }
    /// ```
    pub async fn compare_and_set(&self, expected: &T, new: T) -> Result<bool, AtomError>
    where
        T: PartialEq,
    {
        self.update(|current| {
            if current == expected {
                Update::Write(new.clone(), true)
            } else {
                Update::Keep(false)
            }
        })
        .await
    }

    /// The general update that `swap`, `reset` and `compare_and_set` are made of: `f` sees
    /// the value and decides to write a new one or keep it, and what to return. Each try is
    /// one conditional write that fails when the value it was computed from has changed; a
    /// `Keep` decision is confirmed against a linearizable read.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::atom::Atom<u64>) -> Result<(), avout::atom::AtomError> {
    /// use avout::atom::Update;
    /// // Take one ticket if any are left; report what was there.
    /// let before = a.update(|n| if *n > 0 { Update::Write(n - 1, *n) } else { Update::Keep(0) }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn update<R>(&self, mut f: impl FnMut(&T) -> Update<T, R>) -> Result<R, AtomError> {
        self.update_opt(
            |current| match current {
                Some(value) => f(value),
                None => unreachable!("update_opt reports a missing node without calling f"),
            },
            false,
        )
        .await
    }

    /// Sets the validator (Clojure's `set-validator!`): every value a later update would
    /// write must pass it, or the update fails with [`AtomError::Invalid`] and writes
    /// nothing. Replaces the previous one; the current value is not checked. The same call
    /// as [`Ref::set_validator`](crate::stm::Ref::set_validator).
    ///
    /// ```no_run
    /// # fn demo(a: avout::atom::Atom<u64>) {
    /// a.set_validator(|n| *n < 100);
    /// # }
    /// ```
    pub fn set_validator(&self, valid: impl Fn(&T) -> bool + Send + Sync + 'static) {
        *lock(&self.inner.validator) = Some(Arc::new(valid) as Validator<T>);
    }

    /// Removes the validator (Clojure's `(set-validator! a nil)`), as
    /// [`Ref::clear_validator`](crate::stm::Ref::clear_validator) does for a ref.
    ///
    /// ```no_run
    /// # fn demo(a: avout::atom::Atom<u64>) {
    /// a.clear_validator();
    /// # }
    /// ```
    pub fn clear_validator(&self) {
        *lock(&self.inner.validator) = None;
    }

    /// Counts of this handle's tries since it was opened.
    ///
    /// ```no_run
    /// # fn demo(a: avout::atom::Atom<u64>) {
    /// let s = a.stats();
    /// println!("{} optimistic, {} promoted", s.optimistic_tries, s.promoted_tries);
    /// # }
    /// ```
    pub fn stats(&self) -> AtomStats {
        let c = &self.inner.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        AtomStats {
            optimistic_tries: get(&c.optimistic_tries),
            promoted_tries: get(&c.promoted_tries),
            promotions: get(&c.promotions),
            conflicts: get(&c.conflicts),
            recoveries: get(&c.recoveries),
            writes: get(&c.writes),
        }
    }

    /// A watcher of this atom's changes, starting from the current value; see
    /// [`AtomWatcher`].
    ///
    /// ```no_run
    /// # async fn demo(a: avout::atom::Atom<u64>) -> Result<(), avout::atom::AtomError> {
    /// let mut w = a.watch().await?;
    /// let change = w.changed().await?;
    /// println!("{} -> {}", change.old, change.new);
    /// # Ok(()) }
    /// ```
    pub async fn watch(&self) -> Result<AtomWatcher<T, K>, AtomError> {
        AtomWatcher::start(self.inner.core.clone()).await
    }

    /// Calls `f(old, new)` on every change from now on (Clojure's `add-watch`), from a
    /// background task, replacing any watch with the same key. Changes that come faster than
    /// they are read are coalesced, but the last call always has the newest value. The watch
    /// ends with the session, or on [`remove_watch`](Self::remove_watch), or when every
    /// handle of the atom is dropped.
    ///
    /// MUST be called within a tokio runtime.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::atom::Atom<u64>) -> Result<(), avout::atom::AtomError> {
    /// a.add_watch("log", |old, new| println!("{old} -> {new}")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_watch(
        &self,
        key: impl Into<String>,
        f: impl Fn(&T, &T) + Send + 'static,
    ) -> Result<(), AtomError> {
        let key = key.into();
        let mut watcher = self.watch().await?;
        let path = self.path().to_owned();
        let task = crate::task::spawn(async move {
            loop {
                match watcher.changed().await {
                    Ok(change) => f(&change.old, &change.new),
                    Err(e) => {
                        tracing::warn!(atom = %path, error = %e, "atom watch ended");
                        return;
                    }
                }
            }
        });
        if let Some(old) = lock(&self.inner.watches).insert(key, task) {
            old.abort();
        }
        Ok(())
    }

    /// Stops the watch added under `key`; `false` if there was none.
    ///
    /// ```no_run
    /// # fn demo(a: avout::atom::Atom<u64>) {
    /// a.remove_watch("log");
    /// # }
    /// ```
    pub fn remove_watch(&self, key: &str) -> bool {
        match lock(&self.inner.watches).remove(key) {
            Some(task) => {
                task.abort();
                true
            }
            None => false,
        }
    }

    fn missing(&self) -> AtomError {
        AtomError::Missing {
            path: self.path().to_owned(),
        }
    }

    fn check(&self, value: &T) -> Result<(), AtomError> {
        let validator = lock(&self.inner.validator).clone();
        match validator {
            Some(valid) if !valid(value) => Err(AtomError::Invalid {
                path: self.path().to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// Keeps what was read or written, unless the handle already knows a newer state.
    fn remember(&self, known: Known<T>) {
        self.inner.known.remember(known);
    }

    /// The update loop; see the [module docs](self). With `create`, a missing node is given
    /// to `f` as `None` and a `Write` creates it; without, a missing node is an error.
    pub(crate) async fn update_opt<R>(
        &self,
        mut f: impl FnMut(Option<&T>) -> Update<T, R>,
        create: bool,
    ) -> Result<R, AtomError> {
        let core = &*self.inner.core;
        // One session for the whole update: if it ends, the update fails with its error.
        let session = core.session().await?;
        let zk = &*session;
        let mut known = self.inner.known.get();
        // Whether `known` comes from a linearizable read made during this call.
        let mut linearized = false;
        let mut failures = 0u32;
        let mut guard = None;
        let result = loop {
            if let Known::Unknown = known {
                known = core.read(zk, false).await?;
                self.remember(known.clone());
            }
            let current = match &known {
                Known::Present(loaded) => Some(&loaded.value),
                Known::Absent if !create && linearized => break Err(self.missing()),
                Known::Absent if !create => {
                    known = core.read(zk, true).await?;
                    linearized = true;
                    self.remember(known.clone());
                    continue;
                }
                Known::Absent => None,
                Known::Unknown => unreachable!("read above"),
            };
            let (value, ret) = match f(current) {
                Update::Keep(ret) if linearized => break Ok(ret),
                Update::Keep(_) => {
                    known = core.read(zk, true).await?;
                    linearized = true;
                    self.remember(known.clone());
                    continue;
                }
                Update::Write(value, ret) => (value, ret),
            };
            self.check(&value)?;
            if guard.is_none()
                && let (Some(limit), Some(mutex)) = (self.inner.promote_after, &self.inner.mutex)
                && failures >= limit
            {
                guard = Some(mutex.lock().await.map_err(AtomError::Lock)?);
                bump(&self.inner.counters.promotions);
            }
            bump(if guard.is_some() {
                &self.inner.counters.promoted_tries
            } else {
                &self.inner.counters.optimistic_tries
            });
            let (step, body, replaced) = self.prepare(zk, &known, &value).await?;
            let mut machine = CasMachine::new(&core.path, step).planted(core.planted);
            let outcome = {
                let _one_in_flight = self.inner.writing.lock().await;
                drive(zk, &mut machine).await
            };
            if machine.recovered() {
                bump(&self.inner.counters.recoveries);
            }
            match outcome {
                Ok(Outcome::Applied { current, recovered }) => {
                    bump(&self.inner.counters.writes);
                    if recovered {
                        // A later state than ours may have been read: decode it for the cache.
                        let fresh = match core.load(current).await {
                            Ok(Some(loaded)) => Known::Present(loaded),
                            _ => Known::Unknown,
                        };
                        self.inner.known.replace(fresh);
                    } else {
                        self.remember(Known::Present(Loaded {
                            value,
                            envelope: Envelope::parse(&current.data),
                            stat: current.stat,
                        }));
                    }
                    if let Some(replaced) = replaced {
                        core.discard(&replaced).await;
                    }
                    break Ok(ret);
                }
                Ok(Outcome::NotApplied { current }) => {
                    bump(&self.inner.counters.conflicts);
                    crate::metrics::retried("conflict");
                    failures += 1;
                    linearized = false;
                    core.discard(&body).await;
                    known = match current {
                        None => Known::Absent,
                        Some(node) => match core.load(node).await? {
                            Some(loaded) => Known::Present(loaded),
                            None => Known::Unknown,
                        },
                    };
                    self.remember(known.clone());
                }
                Err(e) => {
                    self.inner.known.replace(Known::Unknown);
                    break Err(AtomError::from_step(e));
                }
            }
        };
        if let Some(guard) = guard
            && let Err(e) = guard.unlock().await
        {
            tracing::warn!(atom = %core.path, error = %e, "could not release the promotion lock");
        }
        result
    }

    /// Encodes `value` and stores it: the write step, the body written (to discard if the
    /// write loses) and the body replaced (to discard if it wins).
    async fn prepare(
        &self,
        zk: &dyn Coordination,
        known: &Known<T>,
        value: &T,
    ) -> Result<(Step, Body, Option<Body>), AtomError> {
        let core = &*self.inner.core;
        let bytes = core
            .codec
            .encode(value)
            .map_err(|source| AtomError::Encode {
                path: core.path.clone(),
                source,
            })?;
        let limit = core.store.max_value_len();
        if bytes.len() > limit {
            return Err(AtomError::TooLarge {
                path: core.path.clone(),
                len: bytes.len(),
                limit,
            });
        }
        let write_id = zk.new_guid() as u64;
        let body = if core.store.inline(bytes.len()) {
            Body::Inline(bytes)
        } else {
            let key = core
                .store
                .put(&core.path, write_id, &bytes)
                .await
                .map_err(|source| AtomError::Store {
                    path: core.path.clone(),
                    source,
                })?;
            Body::Blob(key)
        };
        let previous = match known {
            Known::Present(loaded) => Some(&loaded.envelope),
            Known::Absent | Known::Unknown => None,
        };
        let replaced = previous.map(|p| p.body.clone());
        let data = Envelope::next(self.inner.writer, write_id, previous, body.clone()).to_bytes();
        if data.len() > MAX_DATA_LEN {
            return Err(AtomError::TooLarge {
                path: core.path.clone(),
                len: data.len(),
                limit: MAX_DATA_LEN,
            });
        }
        let step = match known {
            Known::Present(loaded) => Step::Set {
                data,
                writer: self.inner.writer,
                write_id,
                version: loaded.stat.version,
                czxid: loaded.stat.czxid,
            },
            Known::Absent | Known::Unknown => Step::Create {
                data,
                writer: self.inner.writer,
                write_id,
            },
        };
        let replaced = replaced.filter(|r| matches!(r, Body::Blob(_)));
        Ok((step, body, replaced))
    }
}
