//! Watching an atom: one-shot ZooKeeper watches turned into a sequence of changes that always
//! ends at the newest value.
//!
//! ZooKeeper reports *that* a node changed, not to what, and a one-shot watch misses the
//! changes made before it is re-armed. So after every event the watcher re-reads the node
//! (arming the next watch with the same read) and reports a change only if the version read is
//! newer than the last one it reported. Several writes between two reads are coalesced into one
//! change, from the last value reported to the newest; no change is ever reported twice or out
//! of order, and once writes stop, the last change a watcher reports carries the final value.

use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::{Stat, Watch};

use super::{AtomError, Codec, Core, Versioned};

/// A change of an atom's value.
///
/// ```
/// let c = avout::atom::Change { old: 1u64, new: 3u64, stat: avout::Stat::default() };
/// assert!(c.new > c.old);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Change<T> {
    /// The value the watcher last reported (or started from).
    pub old: T,
    /// The newest value.
    pub new: T,
    /// The node's metadata for `new`.
    pub stat: Stat,
}

/// Reports an atom's changes; made by [`Atom::watch`](super::Atom::watch). See the
/// [module docs](self).
///
/// Connection loss: the watcher waits for the session to come back and reads again, so
/// changes made meanwhile are reported (coalesced). Session expiry: the watcher reads again on
/// the client's next session, the same way, so the changes made while no watch was armed are
/// reported too (coalesced); it fails only once the client has ended.
/// Cancellation: dropping `changed()`'s future loses nothing; the next call picks up.
///
/// ```no_run
/// # async fn demo(a: avout::atom::Atom<u64>) -> Result<(), avout::atom::AtomError> {
/// let mut w = a.watch().await?;
/// loop {
///     let c = w.changed().await?;
///     println!("{} -> {} (version {})", c.old, c.new, c.stat.version);
/// }
/// # }
/// ```
pub struct AtomWatcher<T, K = super::Json> {
    core: Arc<Core<K>>,
    last: T,
    last_stat: Stat,
    armed: Option<Watch>,
}

impl<T, K> std::fmt::Debug for AtomWatcher<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomWatcher")
            .field("path", &self.core.path)
            .field("version", &self.last_stat.version)
            .finish()
    }
}

enum Read<T> {
    Present(T, Stat, Watch),
    Absent(Watch),
}

impl<T, K> AtomWatcher<T, K>
where
    T: DeserializeOwned + Clone + Send + Sync + 'static,
    K: Codec,
{
    pub(super) async fn start(core: Arc<Core<K>>) -> Result<Self, AtomError> {
        match Self::read(&core).await? {
            Read::Present(value, stat, watch) => Ok(AtomWatcher {
                core,
                last: value,
                last_stat: stat,
                armed: Some(watch),
            }),
            Read::Absent(_) => Err(AtomError::Missing {
                path: core.path.clone(),
            }),
        }
    }

    /// The last value reported (or the starting value).
    ///
    /// ```no_run
    /// # async fn demo(a: avout::atom::Atom<u64>) -> Result<(), avout::atom::AtomError> {
    /// let w = a.watch().await?;
    /// println!("starting at {}", w.last());
    /// # Ok(()) }
    /// ```
    pub fn last(&self) -> &T {
        &self.last
    }

    /// Waits for the value to change and returns the change (from the last value reported to
    /// the newest). Fails once the client has ended, or with a decode error if another
    /// program writes bytes that are not a value (the watcher stays usable).
    ///
    /// ```no_run
    /// # async fn demo(mut w: avout::atom::AtomWatcher<u64>) -> Result<(), avout::atom::AtomError> {
    /// let change = w.changed().await?;
    /// # Ok(()) }
    /// ```
    pub async fn changed(&mut self) -> Result<Change<T>, AtomError> {
        loop {
            if let Some(watch) = self.armed.take() {
                // A session's end fires the watch too: the read below waits for the client's
                // next session, and fails if the client has ended.
                let _event = watch.await;
            }
            let (value, stat, watch) = match Self::read(&self.core).await? {
                Read::Present(value, stat, watch) => (value, stat, watch),
                // Deleted: report the value it is recreated with.
                Read::Absent(watch) => {
                    self.armed = Some(watch);
                    continue;
                }
            };
            self.armed = Some(watch);
            let newer = (stat.czxid, stat.version)
                != (self.last_stat.czxid, self.last_stat.version)
                && stat.mzxid >= self.last_stat.mzxid;
            if newer {
                let old = std::mem::replace(&mut self.last, value.clone());
                self.last_stat = stat;
                return Ok(Change {
                    old,
                    new: value,
                    stat,
                });
            }
        }
    }

    /// Reads the node and arms a watch on it; waits out connection losses.
    async fn read(core: &Core<K>) -> Result<Read<T>, AtomError> {
        loop {
            let zk = core.session().await?;
            let mut states = zk.session_states();
            let result = match zk.get_and_watch_data(&core.path).await {
                Ok((data, stat, watch)) => {
                    match core.load::<T>(Versioned { data, stat }).await? {
                        Some(loaded) => return Ok(Read::Present(loaded.value, stat, watch)),
                        // The value's file was replaced: the watch fires (or has fired).
                        None => {
                            let _ = watch.await;
                            continue;
                        }
                    }
                }
                Err(crate::Error::NoNode { .. }) => zk.exists_and_watch(&core.path).await,
                Err(e) => Err(e),
            };
            match result {
                Ok((None, watch)) => return Ok(Read::Absent(watch)),
                // Created between the two reads: read it.
                Ok((Some(_), _)) => continue,
                Err(e) if e.is_indeterminate() => {
                    // Wait for a state change (reconnection), or retry after a pause; states
                    // that ended leave only the pause (never a retry without one).
                    let pause = tokio::time::sleep(std::time::Duration::from_millis(50));
                    tokio::select! {
                        biased;
                        Some(_) = states.next() => {}
                        () = pause => {}
                    }
                }
                // The session ended: read on the next one.
                Err(e) if e.is_session_lost() && !core.client.has_ended() => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}
