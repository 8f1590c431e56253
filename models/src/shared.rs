//! Sharing the parts of states that repeat: a [`Shared`] value is an `Arc` hashed once by its
//! content, and an [`Interner`] keeps one copy of each distinct value (hash-consing, the
//! "collapse" compression of explicit-state checkers such as SPIN).
//!
//! Most of a model's state is the same from one state to the next: a step changes the
//! kernel or one client, never all of them, and the same kernel or client shows up in
//! thousands of states (two Mvcc clients to depth 20: 68,570 states, 184 distinct kernels,
//! 2,596 distinct clients, each kernel 12.6 KB and each client 3.6 KB on the heap). A state
//! that holds its parts as [`Shared`] handles costs a few words, and hashing it (the
//! checker's fingerprint) reads one number per part instead of every node of the tree.
//!
//! Interned parts also make steps cheap to repeat: a [`Memo`] keyed by parts' allocations
//! ([`ByAddress`]) remembers what a step made of them, so the next state that takes the
//! same step on the same parts reuses the result instead of copying, changing and hashing
//! them again.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};
use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError};

/// A value shared between states, compared and hashed by its content.
///
/// Its hash is computed when the value is made (or [`Shared::update`]d), with a fixed-key
/// hasher, so hashing a state that holds it is cheap and the same in every run. Two
/// handles to one allocation are equal without looking inside.
///
/// ```
/// use avout_models::shared::Shared;
/// let a = Shared::new(vec![1, 2]);
/// let mut b = a.clone();
/// assert_eq!(a, b);
/// b.update(|v| v.push(3));
/// assert_ne!(a, b);
/// assert_eq!(*b, [1, 2, 3]);
/// ```
pub struct Shared<T> {
    /// The content's hash, when `fresh`.
    hash: u64,
    /// Whether `hash` is the content's (false after [`Shared::make_mut`] until
    /// [`Shared::rehash`]).
    fresh: bool,
    value: Arc<T>,
}

impl<T: Hash> Shared<T> {
    /// Shares `value`. See [`Shared`].
    pub fn new(value: T) -> Self {
        Shared {
            hash: content_hash(&value),
            fresh: true,
            value: Arc::new(value),
        }
    }

    /// Hashes the value again after [`Shared::make_mut`] (nothing to do otherwise).
    pub fn rehash(&mut self) {
        if !self.fresh {
            self.hash = content_hash(&*self.value);
            self.fresh = true;
        }
    }

    fn current_hash(&self) -> u64 {
        if self.fresh {
            self.hash
        } else {
            content_hash(&*self.value)
        }
    }
}

impl<T: Hash + Clone> Shared<T> {
    /// The value to change: a copy of it if other states share it. Its hash is stale until
    /// [`Shared::rehash`] (hashing meanwhile reads the content).
    ///
    /// ```
    /// use avout_models::shared::Shared;
    /// let a = Shared::new(1u8);
    /// let mut b = a.clone();
    /// *b.make_mut() += 1;
    /// b.rehash();
    /// assert_eq!((*a, *b), (1, 2));
    /// ```
    pub fn make_mut(&mut self) -> &mut T {
        self.fresh = false;
        Arc::make_mut(&mut self.value)
    }

    /// Changes the value (a copy of it if other states share it) and hashes it again; returns
    /// what `change` returned. See [`Shared`].
    pub fn update<R>(&mut self, change: impl FnOnce(&mut T) -> R) -> R {
        let out = change(self.make_mut());
        self.rehash();
        out
    }
}

pub(crate) fn content_hash<T: Hash>(value: &T) -> u64 {
    // SipHash with fixed keys: the same in every run, unlike `RandomState`.
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

impl<T> Deref for Shared<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared {
            hash: self.hash,
            fresh: self.fresh,
            value: Arc::clone(&self.value),
        }
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.value, &other.value)
            || ((!self.fresh || !other.fresh || self.hash == other.hash)
                && *self.value == *other.value)
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: Hash> Hash for Shared<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.current_hash());
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

/// A [`Shared`] value as a key by its allocation, not its content: two keys are equal when
/// they hold the same allocation. The key holds the value, so the allocation cannot be freed
/// and reused for another value while the key is kept. Cheap to hash and compare; with
/// interned values (see [`Interner`]), equal content is the same allocation.
///
/// ```
/// use avout_models::shared::{ByAddress, Shared};
/// let a = Shared::new(1u8);
/// assert!(ByAddress(a.clone()) == ByAddress(a.clone()));
/// assert!(ByAddress(a) != ByAddress(Shared::new(1u8)), "same content, another allocation");
/// ```
#[derive(Clone, Debug)]
pub struct ByAddress<T>(pub Shared<T>);

impl<T> PartialEq for ByAddress<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0.value, &other.0.value)
    }
}

impl<T> Eq for ByAddress<T> {}

impl<T> Hash for ByAddress<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(Arc::as_ptr(&self.0.value) as usize);
    }
}

/// What was computed from a key, kept for the next time the same key comes (see the
/// [module docs](self)). Safe to use from several checker threads; values are kept until
/// [`Memo::clear`].
///
/// ```
/// use avout_models::shared::Memo;
/// let memo = Memo::default();
/// assert_eq!(memo.get_or(3u8, || 9u8), 9);
/// assert_eq!(memo.get_or(3u8, || unreachable!("kept")), 9);
/// assert_eq!(memo.len(), 1);
/// ```
pub struct Memo<K, V> {
    kept: Mutex<HashMap<K, V, BuildHasherDefault<Mixed>>>,
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Memo {
            kept: Mutex::new(HashMap::default()),
        }
    }
}

impl<K: Eq + Hash, V: Clone> Memo<K, V> {
    /// The value kept for `key`, or what `compute` makes of it (then kept). `compute` runs
    /// without the lock held, so two threads may compute the same key; both get equal values.
    pub fn get_or(&self, key: K, compute: impl FnOnce() -> V) -> V {
        if let Some(value) = self.lock().get(&key) {
            return value.clone();
        }
        let value = compute();
        self.lock().insert(key, value.clone());
        value
    }

    /// How many keys are kept. See [`Memo`].
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is kept.
    ///
    /// ```
    /// assert!(avout_models::shared::Memo::<u8, u8>::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every kept value.
    ///
    /// ```
    /// let memo = avout_models::shared::Memo::default();
    /// memo.get_or(1u8, || 2u8);
    /// memo.clear();
    /// assert!(memo.is_empty());
    /// ```
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, V, BuildHasherDefault<Mixed>>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K, V> fmt::Debug for Memo<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kept = self.kept.lock().map_or(0, |k| k.len());
        write!(f, "Memo({kept} kept)")
    }
}

/// A fast hasher for a few words (addresses, flags, small enums): each is mixed in with a
/// multiply, as rustc's FxHasher does, whose rotation at the end it copies too (the product's
/// low bits, which pick the table's bucket, see only the low bits of what was mixed in, and
/// addresses' low bits are zeros). Not for content: [`content_hash`] is for that.
#[derive(Default)]
struct Mixed(u64);

impl Hasher for Mixed {
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A hasher for keys that are already hashes.
#[derive(Default)]
pub(crate) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// One copy of each distinct value: [`Interner::intern`] hands back the copy already kept
/// when there is one, so equal parts of different states share one allocation. Safe to use
/// from several checker threads. Values are kept until the interner is dropped (a check's
/// distinct kernels and clients are few; see the [module docs](self)).
///
/// ```
/// use avout_models::shared::{Interner, Shared};
/// let interner = Interner::default();
/// let a = interner.intern(Shared::new(String::from("x")));
/// let b = interner.intern(Shared::new(String::from("x")));
/// assert!(std::ptr::eq(&*a, &*b));
/// assert_eq!(interner.len(), 1);
/// ```
pub struct Interner<T> {
    kept: Mutex<HashMap<Shared<T>, (), BuildHasherDefault<Prehashed>>>,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            kept: Mutex::new(HashMap::default()),
        }
    }
}

impl<T: Eq + Hash> Interner<T> {
    /// The kept copy equal to `value`, keeping `value` if there is none. See [`Interner`].
    pub fn intern(&self, mut value: Shared<T>) -> Shared<T> {
        value.rehash();
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((copy, ())) = kept.get_key_value(&value) {
            return copy.clone();
        }
        kept.insert(value.clone(), ());
        value
    }

    /// How many distinct values are kept. See [`Interner`].
    pub fn len(&self) -> usize {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Forgets every kept value (values still held elsewhere stay alive).
    ///
    /// ```
    /// let interner = avout_models::shared::Interner::default();
    /// interner.intern(avout_models::shared::Shared::new(1u8));
    /// interner.clear();
    /// assert!(interner.is_empty());
    /// ```
    pub fn clear(&self) {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Whether none is kept.
    ///
    /// ```
    /// assert!(avout_models::shared::Interner::<u8>::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> fmt::Debug for Interner<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kept = self.kept.lock().map_or(0, |k| k.len());
        write!(f, "Interner({kept} kept)")
    }
}
