//! Leadership as a cancellable task (Curator's `LeaderSelector`), and a stream of leaders
//! (etcd's `Observe`).

use std::future::Future;

use crate::task::watch;
use futures::FutureExt;
use futures::channel::oneshot;

use super::{Election, Leader, Leadership};
use crate::lock::{LockError, LockKind};
use crate::recipes::cache::{Cache, CacheEvent, CacheScope};
use crate::{Error, path};

/// Runs a task each time its participant is elected, cancelling it (dropping its future)
/// the moment the leadership is lost, and standing again when the task ends or is cancelled
/// (Curator's `LeaderSelector` with `autoRequeue`).
///
/// # Sessions
///
/// - **Connection loss**: the leadership is in doubt but not lost; the task keeps running
///   (fence its writes with the term it was given; [`Leadership::status`] semantics).
/// - **Session expiry**: the candidate node goes with the session; the leadership is lost, the
///   task is cancelled, and the selector stands again on the managed client's next session.
///   If the client has ended, the selector stops and [`error`](Self::error) says why.
/// - **Cancellation**: [`close`](Self::close) (or dropping the selector) cancels a running
///   task and resigns (the candidate node is deleted).
///
/// ```no_run
/// # async fn demo(client: &avout::Client) -> Result<(), avout::lock::LockError> {
/// use avout::recipes::election::{Election, LeaderSelector};
/// let election = Election::new(client, "/services/billing/leader")?;
/// let selector = LeaderSelector::start(election, |term| async move {
///     println!("leading in term {term}");
///     // Lead, fencing writes with `term`; returning gives the leadership up.
///     tokio::time::sleep(std::time::Duration::from_secs(60)).await;
/// });
/// // …
/// selector.close().await;
/// # Ok(()) }
/// ```
pub struct LeaderSelector {
    term: watch::Receiver<Option<i64>>,
    error: watch::Receiver<Option<LockError>>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for LeaderSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderSelector")
            .field("term", &*self.term.borrow())
            .finish_non_exhaustive()
    }
}

impl LeaderSelector {
    /// Stands for leadership in `election`, running `lead(term)` each time it is elected.
    /// MUST be called within a tokio runtime.
    pub fn start<F, Fut>(election: Election, lead: F) -> LeaderSelector
    where
        F: FnMut(i64) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (term_tx, term) = watch::channel(None);
        let (error_tx, error) = watch::channel(None);
        let (stop, stopped) = oneshot::channel();
        let task = crate::task::spawn(select(election, lead, term_tx, error_tx, stopped));
        LeaderSelector {
            term,
            error,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// The term of the leadership whose task is running now, if any.
    pub fn leading(&self) -> Option<i64> {
        *self.term.borrow()
    }

    /// Why the selector stopped standing, if it did (its client ended, a request refused).
    pub fn error(&self) -> Option<LockError> {
        self.error.borrow().clone()
    }

    /// Cancels a running task, resigns, and stops standing.
    pub async fn close(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for LeaderSelector {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The selector's task: campaign, run the leader's task until it ends or the leadership is
/// lost, resign, and stand again.
async fn select<F, Fut>(
    election: Election,
    mut lead: F,
    term: watch::Sender<Option<i64>>,
    error: watch::Sender<Option<LockError>>,
    mut stopped: oneshot::Receiver<()>,
) where
    F: FnMut(i64) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let client = election.client.clone();
    loop {
        let elected = tokio::select! {
            biased;
            _ = &mut stopped => return,
            elected = election.campaign() => elected,
        };
        let leadership: Leadership = match elected {
            Ok(leadership) => leadership,
            Err(LockError::SessionLost(_)) if !client.has_ended() => continue,
            Err(why) => {
                error.send_replace(Some(why));
                return;
            }
        };
        term.send_replace(Some(leadership.term()));
        let task = lead(leadership.term()).fuse();
        let stop = tokio::select! {
            biased;
            _ = &mut stopped => true,
            _ = leadership.lost() => false,
            () = task => false,
        };
        term.send_replace(None);
        // Dropping the leadership resigns it in the background; resign here so the next
        // candidate is not kept waiting on a task's end that already happened.
        if let Err(e) = leadership.resign().await {
            tracing::debug!(error = %e, "resigning after a leadership (it may be gone already)");
        }
        if stop {
            return;
        }
        if client.has_ended() {
            error.send_replace(Some(LockError::SessionLost(Error::Closed)));
            return;
        }
    }
}

/// The leaders of an election as they change (etcd's `Observe`), followed by a cache of the
/// election's candidates: [`next`](Self::next) first gives the leader now, then each new
/// one, or `None` while there is no candidate.
///
/// # Sessions
///
/// The cache follows across connection losses and, on a managed client, session expiry;
/// leaders that came and went while disconnected are not seen (only the one found on
/// reconnection). Dropping it stops following.
///
/// ```no_run
/// # async fn demo(e: avout::recipes::election::Election) -> avout::Result<()> {
/// let mut leaders = e.observe().await?;
/// while let Some(leader) = leaders.next().await {
///     println!("leader now: {:?}", leader.map(|l| l.term));
/// }
/// # Ok(()) }
/// ```
pub struct LeaderObserver {
    root: String,
    cache: Cache,
    loaded: bool,
    last: Option<Option<Leader>>,
}

impl std::fmt::Debug for LeaderObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderObserver")
            .field("root", &self.root)
            .field("last", &self.last)
            .finish()
    }
}

impl Election {
    /// Follows who leads this election; see [`LeaderObserver`].
    ///
    /// Errors: the cache's initial load's (a lost session with no next one, `NoAuth`, …).
    pub async fn observe(&self) -> crate::Result<LeaderObserver> {
        let cache = Cache::start(
            std::sync::Arc::new(self.client.clone()),
            &self.path,
            CacheScope::Children,
        )
        .await?;
        Ok(LeaderObserver {
            root: self.path.clone(),
            cache,
            loaded: false,
            last: None,
        })
    }
}

impl LeaderObserver {
    /// The leader as the cache holds it now.
    pub fn leader(&self) -> Option<Leader> {
        let nodes = self.cache.snapshot();
        nodes
            .iter()
            .filter_map(|(p, e)| {
                let name = path::name(p);
                name.contains(LockKind::Latch.marker())
                    .then(|| Some((path::sequence(name)?, p, e)))?
            })
            .min_by_key(|(seq, _, _)| *seq)
            .map(|(_, p, e)| Leader {
                node: p.clone(),
                id: e.data.clone(),
                term: e.stat.czxid,
            })
    }

    /// The leader now (on the first call), then each time it changes; `None` once the cache
    /// stopped (see [`error`](Self::error)).
    pub async fn next(&mut self) -> Option<Option<Leader>> {
        loop {
            if self.loaded {
                let now = self.leader();
                if self.last.as_ref() != Some(&now) {
                    self.last = Some(now.clone());
                    return Some(now);
                }
            }
            if self.cache.next_event().await? == CacheEvent::Initialized {
                self.loaded = true;
            }
        }
    }

    /// Why the observer stopped following, if it did.
    pub fn error(&self) -> Option<Error> {
        self.cache.error()
    }

    /// Stops following.
    pub async fn close(self) {
        self.cache.close().await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_latch_marker_names_candidates() {
        let name = format!("_c_x{}0000000003", super::LockKind::Latch.marker());
        assert_eq!(crate::path::sequence(&name), Some(3));
    }
}
