//! All or nothing over several mutexes (Curator's `InterProcessMultiLock`).
//!
//! # Algorithm
//!
//! A [`MultiLock`] is a [`Mutex`] per path. It acquires them one after the other in one
//! canonical order — the paths sorted, duplicates removed — and releases them in the reverse
//! order (each as [`MutexGuard::unlock`] releases: a member's delete may be deferred). If an acquisition fails or times out part-way, the locks already taken are released
//! (newest first) before the error is returned, so a caller holds either all of them or none.
//!
//! Why sorted, where Curator keeps the order it was given: two multi-locks over overlapping
//! sets, say `[a, b]` and `[b, a]`, acquired in their given order can each take their first
//! lock and wait for ever for the other's. With one global order every process waits only
//! for a lock "after" all those it holds, so no cycle of waiters can form. (A process holding
//! some other lock outside the multi-lock can of course still deadlock; that is the caller's.)
//!
//! The nodes are the [`Mutex`]'s (Curator's names), so each member lock excludes a Java
//! `InterProcessMutex` on the same path too. Reentrancy is the [`Mutex`]'s, per handle: a
//! clone of a [`MultiLock`] shares its members, so locking it while a guard of the other is
//! alive re-enters at once; give each task that must be excluded its own handle.
//!
//! # Connection loss, session expiry, cancellation
//!
//! - A connection loss is recovered inside each member's acquisition, as for [`Mutex`].
//! - A session expiry ends every member hold: [`MultiLockGuard::status`] reports
//!   [`LockStatus::Lost`] and [`MultiLockGuard::lost`] resolves. An acquisition during which
//!   the session changes (a managed client opened a new one) would hold members on two
//!   sessions; it releases them all and fails with [`LockError::SessionLost`]. The same
//!   handle's next acquisition runs on the client's next session. Fence with the members'
//!   [tokens](MultiLockGuard::fencing_tokens).
//! - Dropping an acquisition future releases the members already taken and removes the node
//!   of the one being acquired (in the background); dropping a guard releases every member,
//!   in reverse order, like [`MultiLockGuard::unlock`].

use std::time::Duration;

use super::{LockError, LockStatus, Mutex, MutexGuard};
use crate::{Client, Error};

/// A lock over several paths, all or nothing; see the module docs.
///
/// ```no_run
/// use avout::lock::MultiLock;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::lock::LockError> {
/// let transfer = MultiLock::new(client, ["/accounts/7", "/accounts/3"])?;
/// let guard = transfer.lock().await?;
/// // ... both accounts are ours; guard.fencing_tokens() fences each ...
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct MultiLock {
    /// One mutex per distinct path, in sorted path order.
    members: Vec<Mutex>,
}

impl MultiLock {
    /// A handle on the locks at `paths` (each created with its parents on first use).
    ///
    /// Fails for an invalid path, or no path at all.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// use avout::lock::MultiLock;
    /// assert!(MultiLock::new(client, Vec::<String>::new()).is_err());
    /// let m = MultiLock::new(client, ["/b", "/a", "/b"]).unwrap();
    /// assert_eq!(m.paths(), ["/a", "/b"]);
    /// # }
    /// ```
    pub fn new<I, P>(client: &Client, paths: I) -> Result<Self, LockError>
    where
        I: IntoIterator<Item = P>,
        P: Into<String>,
    {
        let mut paths: Vec<String> = paths.into_iter().map(Into::into).collect();
        paths.sort();
        paths.dedup();
        if paths.is_empty() {
            return Err(LockError::Zk(Error::BadArguments(
                "a multi-lock needs at least one path".into(),
            )));
        }
        let members = paths
            .into_iter()
            .map(|p| Mutex::new(client, p))
            .collect::<Result<_, _>>()?;
        Ok(MultiLock { members })
    }

    /// The member paths, in the order they are acquired (sorted, without duplicates).
    ///
    /// ```no_run
    /// # fn demo(m: avout::lock::MultiLock) {
    /// for path in m.paths() { println!("{path}"); }
    /// # }
    /// ```
    pub fn paths(&self) -> Vec<&str> {
        self.members.iter().map(Mutex::path).collect()
    }

    /// Waits until every member lock is held. Fails only when the session is lost or a
    /// request is refused, having released what it took.
    ///
    /// ```no_run
    /// # async fn demo(m: avout::lock::MultiLock) -> Result<(), avout::lock::LockError> {
    /// let guard = m.lock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock(&self) -> Result<MultiLockGuard, LockError> {
        self.acquire(|m| Box::pin(async move { m.lock().await.map(Some) }))
            .await
            .map(|g| g.expect("an unbounded lock returns a guard"))
    }

    /// Takes every member lock if all are free now; `Ok(None)` otherwise (nothing held).
    ///
    /// ```no_run
    /// # async fn demo(m: avout::lock::MultiLock) -> Result<(), avout::lock::LockError> {
    /// if let Some(guard) = m.try_lock().await? { guard.unlock().await?; }
    /// # Ok(()) }
    /// ```
    pub async fn try_lock(&self) -> Result<Option<MultiLockGuard>, LockError> {
        self.acquire(|m| Box::pin(m.try_lock())).await
    }

    /// Waits at most `timeout` (for all members together); `Ok(None)` if not all were
    /// acquired in time (those taken are released first).
    ///
    /// ```no_run
    /// # async fn demo(m: avout::lock::MultiLock) -> Result<(), avout::lock::LockError> {
    /// let guard = m.try_lock_for(std::time::Duration::from_secs(1)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_for(
        &self,
        timeout: Duration,
    ) -> Result<Option<MultiLockGuard>, LockError> {
        let deadline = tokio::time::Instant::now() + timeout;
        self.acquire(|m| {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            Box::pin(m.try_lock_for(left))
        })
        .await
    }

    async fn acquire<'a, F>(&'a self, mut one: F) -> Result<Option<MultiLockGuard>, LockError>
    where
        F: FnMut(
            &'a Mutex,
        ) -> std::pin::Pin<
            Box<dyn Future<Output = Result<Option<MutexGuard>, LockError>> + Send + 'a>,
        >,
    {
        // Held so far; dropping it (cancellation) releases them in reverse order.
        let mut taken = MultiLockGuard { held: Vec::new() };
        for member in &self.members {
            match one(member).await {
                Ok(Some(guard)) => taken.held.push(guard),
                Ok(None) => {
                    taken.unlock().await?;
                    return Ok(None);
                }
                Err(e) => {
                    if let Err(release) = taken.unlock().await {
                        tracing::warn!(error = %release, "releasing a partial multi-lock failed");
                    }
                    return Err(e);
                }
            }
        }
        let first = taken.held[0].zk().session().id;
        let one_session = taken.held.iter().all(|g| g.zk().session().id == first);
        if !one_session || taken.status() == LockStatus::Lost {
            // A member was taken on a session that has ended: the set is not held.
            if let Err(release) = taken.unlock().await {
                tracing::debug!(error = %release, "releasing a multi-lock split by an expiry");
            }
            return Err(LockError::SessionLost(Error::SessionExpired));
        }
        Ok(Some(taken))
    }
}

/// Proof of holding every lock of a [`MultiLock`]. Release with [`unlock`](Self::unlock);
/// dropping the guard releases every member in the background, in reverse order.
///
/// ```no_run
/// # async fn demo(m: avout::lock::MultiLock) -> Result<(), avout::lock::LockError> {
/// let guard = m.lock().await?;
/// for (path, token) in guard.fencing_tokens() { println!("{path}: {token}"); }
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard releases the locks"]
#[derive(Debug)]
pub struct MultiLockGuard {
    /// The member guards, in acquisition (sorted path) order.
    held: Vec<MutexGuard>,
}

impl MultiLockGuard {
    /// The member guards, in acquisition order.
    ///
    /// ```no_run
    /// # fn demo(g: avout::lock::MultiLockGuard) {
    /// for member in g.members() { println!("{}", member.node()); }
    /// # }
    /// ```
    pub fn members(&self) -> &[MutexGuard] {
        &self.held
    }

    /// Each member's lock path and fencing token (its node's creation zxid), in acquisition
    /// order. A resource guarded by one member refuses a token below the largest it has seen.
    ///
    /// ```no_run
    /// # fn demo(g: avout::lock::MultiLockGuard) {
    /// let tokens: Vec<(String, i64)> = g.fencing_tokens();
    /// # }
    /// ```
    pub fn fencing_tokens(&self) -> Vec<(String, i64)> {
        self.held
            .iter()
            .map(|g| {
                let node = g.node();
                let lock = &node[..node.rfind('/').unwrap_or(0)];
                (lock.to_owned(), g.fencing_token())
            })
            .collect()
    }

    /// The worst member status: [`LockStatus::Lost`] if any is lost, else
    /// [`LockStatus::Suspended`] if any is suspended, else held.
    ///
    /// ```no_run
    /// # fn demo(g: avout::lock::MultiLockGuard) {
    /// use avout::lock::LockStatus;
    /// if g.status() != LockStatus::Held { /* stop */ }
    /// # }
    /// ```
    pub fn status(&self) -> LockStatus {
        let statuses: Vec<_> = self.held.iter().map(MutexGuard::status).collect();
        if statuses.contains(&LockStatus::Lost) {
            LockStatus::Lost
        } else if statuses.contains(&LockStatus::Suspended) {
            LockStatus::Suspended
        } else {
            LockStatus::Held
        }
    }

    /// Resolves when any member is lost (its session ended or its node was deleted).
    ///
    /// ```no_run
    /// # async fn demo(g: avout::lock::MultiLockGuard) {
    /// eprintln!("lost: {}", g.lost().await);
    /// # }
    /// ```
    pub async fn lost(&self) -> LockError {
        let all = self.held.iter().map(|g| Box::pin(g.lost()));
        futures::future::select_all(all).await.0
    }

    /// Releases every member, newest first (each as [`MutexGuard::unlock`]). Every member is
    /// released even if one fails; the first failure is returned.
    ///
    /// ```no_run
    /// # async fn demo(g: avout::lock::MultiLockGuard) -> Result<(), avout::lock::LockError> {
    /// g.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn unlock(mut self) -> Result<(), LockError> {
        let mut first = None;
        while let Some(guard) = self.held.pop() {
            if let Err(e) = guard.unlock().await {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for MultiLockGuard {
    fn drop(&mut self) {
        // Each guard's drop releases it in the background; newest first.
        while let Some(guard) = self.held.pop() {
            drop(guard);
        }
    }
}
