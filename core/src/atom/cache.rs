//! The handle's cache: what it last knew of the node (value, envelope, `Stat`), shared by
//! every clone of an [`Atom`](super::Atom) handle and so by every task and thread using one.
//!
//! Reads and writes of concurrent calls land in any order; the cache keeps the newest state
//! by `mzxid` ([`Cache::remember`]), so a slow read finishing after a fast write does not put
//! an older version back. Two events override that order ([`Cache::replace`]): a write whose
//! outcome was settled by a recovery read (the read is the newest state the handle saw), and
//! a failed call, which forgets what it knew (the next call reads). A stale cache only costs
//! a refused conditional write and a retry; it never lands a write on the wrong version.

use super::Known;
use crate::sync::{Mutex, lock};

pub(super) struct Cache<T> {
    slot: Mutex<Known<T>>,
}

impl<T: Clone> Cache<T> {
    pub(super) fn new() -> Self {
        Cache {
            slot: Mutex::new(Known::Unknown),
        }
    }

    /// What the handle knows now.
    pub(super) fn get(&self) -> Known<T> {
        lock(&self.slot).clone()
    }

    /// The cached value, if the node is known to exist.
    pub(super) fn value(&self) -> Option<T> {
        match &*lock(&self.slot) {
            Known::Present(loaded) => Some(loaded.value.clone()),
            Known::Absent | Known::Unknown => None,
        }
    }

    /// Keeps what was read or written, unless the handle already knows a newer state.
    pub(super) fn remember(&self, known: Known<T>) {
        let mut slot = lock(&self.slot);
        let newer = match (&*slot, &known) {
            (Known::Present(old), Known::Present(new)) => new.stat.mzxid >= old.stat.mzxid,
            _ => true,
        };
        if newer {
            *slot = known;
        }
    }

    /// Replaces what the handle knows, newer or not (see the [module docs](self)).
    pub(super) fn replace(&self, known: Known<T>) {
        *lock(&self.slot) = known;
    }
}

#[cfg(all(test, avout_loom))]
mod loom_tests {
    //! loom checks of the cache shared by an atom's handles: concurrent reads and writes keep
    //! the newest state, and nobody sees the cache go back while only `remember` runs.

    use loom::thread;

    use super::Cache;
    use crate::Stat;
    use crate::atom::envelope::Envelope;
    use crate::atom::{Known, Loaded};
    use crate::sync::Arc;

    fn at(mzxid: i64) -> Known<u64> {
        Known::Present(Loaded {
            value: mzxid as u64,
            envelope: Envelope::parse(b""),
            stat: Stat {
                mzxid,
                ..Stat::default()
            },
        })
    }

    fn mzxid(known: &Known<u64>) -> Option<i64> {
        match known {
            Known::Present(loaded) => Some(loaded.stat.mzxid),
            Known::Absent | Known::Unknown => None,
        }
    }

    #[test]
    fn loom_concurrent_reads_and_writes_keep_the_newest_state() {
        loom::model(|| {
            let cache = Arc::new(Cache::new());
            cache.remember(at(1));
            let threads: Vec<_> = [3, 2]
                .into_iter()
                .map(|z| {
                    let cache = cache.clone();
                    thread::spawn(move || cache.remember(at(z)))
                })
                .collect();
            // A reader meanwhile never sees the cache go back.
            let first = mzxid(&cache.get()).unwrap();
            let second = mzxid(&cache.get()).unwrap();
            assert!(first <= second, "read {first} then {second}");
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(mzxid(&cache.get()), Some(3));
            assert_eq!(cache.value(), Some(3));
        });
    }

    #[test]
    fn loom_a_failed_call_forgets_and_a_racing_write_is_kept_or_forgotten() {
        loom::model(|| {
            let cache = Arc::new(Cache::new());
            cache.remember(at(1));
            let failed = {
                let cache = cache.clone();
                thread::spawn(move || cache.replace(Known::Unknown))
            };
            let wrote = {
                let cache = cache.clone();
                thread::spawn(move || cache.remember(at(2)))
            };
            failed.join().unwrap();
            wrote.join().unwrap();
            // Never the state both calls replaced.
            let now = mzxid(&cache.get());
            assert!(matches!(now, None | Some(2)), "{now:?}");
        });
    }
}
