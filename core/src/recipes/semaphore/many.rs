//! Several leases in one acquisition, all or nothing: see the [module docs](super).

use super::*;
use crate::lock::{AcquireMachine, LockKind, acquire_node};

/// The semaphore's mutex, held by a quantity acquisition; released when dropped (in the
/// background) unless [`release`](Self::release)d first.
struct MutexHold {
    zk: Session,
    node: Option<String>,
}

impl MutexHold {
    async fn release(mut self) -> Result<(), LockError> {
        let node = self.node.take().expect("released once");
        delete_idempotent(&*self.zk, &node).await?;
        Ok(())
    }
}

impl Drop for MutexHold {
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            let zk = self.zk.clone();
            spawn_cleanup(async move { delete_idempotent(&*zk, &node).await });
        }
    }
}

/// What is left of a deadline, as a machine's patience.
fn remaining(patience: Patience, deadline: Option<tokio::time::Instant>) -> Patience {
    match (patience, deadline) {
        (Patience::Millis(_), Some(deadline)) => {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            Patience::Millis(u64::try_from(left.as_millis()).unwrap_or(u64::MAX))
        }
        (other, _) => other,
    }
}

impl Semaphore {
    /// Waits for `n` leases, all or nothing. Fails with [`Error::BadArguments`], having done
    /// nothing, if `n` is 0 or more than [`max_leases`](Self::max_leases); otherwise only
    /// when the session is lost or a request is refused (releasing the leases it had).
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::semaphore::Semaphore) -> Result<(), avout::lock::LockError> {
    /// let leases = s.acquire_many(3).await?;
    /// assert_eq!(leases.len(), 3);
    /// for lease in leases { lease.release().await?; }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_many(&self, n: u32) -> Result<Vec<Lease>, LockError> {
        self.run_many(n, Patience::Forever).await
    }

    /// Takes `n` leases if they are free now (and no other process is acquiring); `Ok(None)`
    /// otherwise, having released any it took.
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::semaphore::Semaphore) -> Result<(), avout::lock::LockError> {
    /// if let Some(leases) = s.try_acquire_many(2).await? { drop(leases); }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_many(&self, n: u32) -> Result<Option<Vec<Lease>>, LockError> {
        match self.run_many(n, Patience::None).await {
            Err(LockError::WouldBlock) => Ok(None),
            other => other.map(Some),
        }
    }

    /// Waits at most `timeout` for `n` leases; `Ok(None)` if they were not all acquired in
    /// time (those taken are released, and every node created removed, before returning).
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::semaphore::Semaphore) -> Result<(), avout::lock::LockError> {
    /// let leases = s.try_acquire_many_for(2, std::time::Duration::from_secs(1)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_many_for(
        &self,
        n: u32,
        timeout: Duration,
    ) -> Result<Option<Vec<Lease>>, LockError> {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        match self.run_many(n, Patience::Millis(ms)).await {
            Err(LockError::TimedOut) => Ok(None),
            other => other.map(Some),
        }
    }

    async fn run_many(&self, n: u32, patience: Patience) -> Result<Vec<Lease>, LockError> {
        if n == 0 || n > self.max_leases {
            return Err(LockError::Zk(Error::BadArguments(format!(
                "cannot take {n} leases of a semaphore of {}",
                self.max_leases
            ))));
        }
        let deadline = match patience {
            Patience::Millis(ms) => Some(tokio::time::Instant::now() + Duration::from_millis(ms)),
            Patience::Forever | Patience::None => None,
        };
        let zk = self.client.current_session().await?;
        let session = zk.session().id.0;
        let lock_path = path::join(&self.path, "locks");
        let machine = AcquireMachine::new(
            &lock_path,
            LockKind::Exclusive,
            zk.new_guid(),
            session,
            patience,
            Vec::new(),
        )
        .planted(self.planted);
        let held = acquire_node(&zk, machine, &lock_path).await?;
        let mutex = MutexHold {
            zk: zk.clone(),
            node: Some(held.node),
        };
        let mut leases = Vec::new();
        for _ in 0..n {
            let patience = remaining(patience, deadline);
            let machine = SemaphoreMachine::new(
                &self.path,
                self.max_leases,
                zk.new_guid(),
                session,
                patience,
            )
            .planted(self.planted)
            .prelocked();
            match self.drive_lease(zk.clone(), machine).await {
                Ok(lease) => leases.push(lease),
                Err(e) => {
                    // Give back what was taken, newest first, before the mutex.
                    for lease in leases.into_iter().rev() {
                        if let Err(release) = lease.release().await {
                            tracing::warn!(error = %release, "returning a partial acquisition's lease failed");
                        }
                    }
                    if let Err(release) = mutex.release().await {
                        tracing::warn!(error = %release, "releasing the semaphore's mutex failed");
                    }
                    return Err(e);
                }
            }
        }
        mutex.release().await?;
        Ok(leases)
    }
}
