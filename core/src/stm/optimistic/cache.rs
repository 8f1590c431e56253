//! The newest node an Optimistic [`Stm`](crate::stm::Stm) handle has seen of each ref.
//!
//! One cache serves every transaction of the handle, so tasks on several threads read and
//! update it concurrently ([`RefCache`], a [`RefMap`] behind `crate::sync`'s mutex, which
//! loom can explore). Updates land in any order; [`RefMap::remember`] keeps the newer node
//! by version (a recreated node, with another `czxid`, restarts its versions), so a slow
//! read finishing after a fast commit does not put an older version back. A stale entry
//! only costs a refused commit and a retry: every read the cache serves is validated by the
//! commit's version checks.

use std::collections::BTreeMap;

use super::Node;
use crate::sync::{Mutex, lock};

/// Ref name → the newest node seen; the cache's logic, without the lock (the model of the
/// protocol in `avout-models` keeps one per client in its states).
///
/// ```
/// use avout::Stat;
/// use avout::stm::optimistic::{Node, RefMap};
/// let at = |version| Node { data: vec![], stat: Stat { version, ..Stat::default() } };
/// let mut m = RefMap::default();
/// m.remember([("a".to_string(), Some(at(2)))]);
/// m.remember([("a".to_string(), Some(at(1)))]); // older: ignored
/// assert_eq!(m.get("a").unwrap().stat.version, 2);
/// m.forget([&"a".to_string()]);
/// assert!(m.get("a").is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RefMap {
    nodes: BTreeMap<String, Node>,
}

impl RefMap {
    /// The node seen of ref `name`, if any. See [`RefMap`] for an example.
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.nodes.get(name)
    }

    /// Records nodes as read: a node replaces the entry unless the entry is a newer version
    /// of the same node; `None` (the ref was not found) drops the entry. See [`RefMap`].
    pub fn remember(&mut self, nodes: impl IntoIterator<Item = (String, Option<Node>)>) {
        for (name, node) in nodes {
            match node {
                Some(node) => {
                    // A recreated node (another czxid) restarts its versions.
                    let newer = self.nodes.get(&name).is_none_or(|old| {
                        old.stat.czxid != node.stat.czxid || old.stat.version <= node.stat.version
                    });
                    if newer {
                        self.nodes.insert(name, node);
                    }
                }
                None => {
                    self.nodes.remove(&name);
                }
            }
        }
    }

    /// Drops the entries of `names` (after a failure that leaves them in doubt: the next
    /// try reads). See [`RefMap`] for an example.
    pub fn forget<'n>(&mut self, names: impl IntoIterator<Item = &'n String>) {
        for name in names {
            self.nodes.remove(name);
        }
    }
}

/// A [`RefMap`] shared by the handle's transactions.
pub(super) struct RefCache {
    map: Mutex<RefMap>,
}

impl RefCache {
    pub(super) fn new() -> Self {
        RefCache {
            map: Mutex::new(RefMap::default()),
        }
    }

    pub(super) fn get(&self, name: &str) -> Option<Node> {
        lock(&self.map).get(name).cloned()
    }

    pub(super) fn remember(&self, nodes: impl IntoIterator<Item = (String, Option<Node>)>) {
        lock(&self.map).remember(nodes);
    }

    /// Runs `f` on the map, locked.
    pub(super) fn with<T>(&self, f: impl FnOnce(&mut RefMap) -> T) -> T {
        f(&mut lock(&self.map))
    }
}

#[cfg(all(test, avout_loom))]
mod loom_tests {
    //! loom checks of the ref cache shared by an Optimistic handle's transactions: concurrent
    //! reads and commits keep the newest version, and a failed commit forgetting a ref races
    //! a read remembering it without leaving the version both replaced.

    use loom::thread;

    use super::RefCache;
    use crate::Stat;
    use crate::stm::optimistic::Node;
    use crate::sync::Arc;

    fn at(version: i32) -> Option<Node> {
        Some(Node {
            data: vec![version as u8],
            stat: Stat {
                czxid: 7,
                version,
                ..Stat::default()
            },
        })
    }

    fn version(cache: &RefCache, name: &str) -> Option<i32> {
        cache.get(name).map(|n| n.stat.version)
    }

    #[test]
    fn loom_concurrent_reads_and_commits_keep_the_newest_version() {
        loom::model(|| {
            let cache = Arc::new(RefCache::new());
            cache.remember([("a".to_string(), at(1))]);
            let threads: Vec<_> = [3, 2]
                .into_iter()
                .map(|v| {
                    let cache = cache.clone();
                    // Both refs in one call, as a commit's written nodes are remembered.
                    thread::spawn(move || {
                        cache.remember([("a".to_string(), at(v)), ("b".to_string(), at(v))])
                    })
                })
                .collect();
            // A try reading meanwhile never sees a ref go back.
            let first = version(&cache, "a").unwrap();
            let second = version(&cache, "a").unwrap();
            assert!(first <= second, "read {first} then {second}");
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(version(&cache, "a"), Some(3));
            assert_eq!(version(&cache, "b"), Some(3));
            assert_eq!(cache.get("a").unwrap().data, [3]);
        });
    }

    #[test]
    fn loom_a_failed_commit_forgets_and_a_racing_read_is_kept_or_forgotten() {
        loom::model(|| {
            let cache = Arc::new(RefCache::new());
            cache.remember([("a".to_string(), at(1))]);
            let failed = {
                let cache = cache.clone();
                thread::spawn(move || cache.with(|m| m.forget([&"a".to_string()])))
            };
            let read = {
                let cache = cache.clone();
                thread::spawn(move || cache.remember([("a".to_string(), at(2))]))
            };
            failed.join().unwrap();
            read.join().unwrap();
            // Never the version both calls replaced.
            let now = version(&cache, "a");
            assert!(matches!(now, None | Some(2)), "{now:?}");
        });
    }
}
