//! A handle's value watches ([`Atom::add_watch`](crate::atom::Atom::add_watch),
//! [`Agent::add_watch`](crate::agent::Agent::add_watch)): one task per key, aborted when its
//! key is taken by another, when it is removed, and when the last handle is dropped.

use std::collections::BTreeMap;

use crate::sync::{Mutex, lock};

/// The watch tasks of one handle, by key; see the [module docs](self).
pub(crate) struct WatchTasks(Mutex<BTreeMap<String, tokio::task::JoinHandle<()>>>);

impl Default for WatchTasks {
    fn default() -> Self {
        WatchTasks(Mutex::new(BTreeMap::new()))
    }
}

impl WatchTasks {
    /// Keeps `task` under `key`, aborting the one it replaces.
    pub(crate) fn insert(&self, key: String, task: tokio::task::JoinHandle<()>) {
        if let Some(old) = lock(&self.0).insert(key, task) {
            old.abort();
        }
    }

    /// Aborts the task under `key`; `false` if there was none.
    pub(crate) fn remove(&self, key: &str) -> bool {
        match lock(&self.0).remove(key) {
            Some(task) => {
                task.abort();
                true
            }
            None => false,
        }
    }
}

impl Drop for WatchTasks {
    fn drop(&mut self) {
        for (_, task) in std::mem::take(&mut *lock(&self.0)) {
            task.abort();
        }
    }
}
