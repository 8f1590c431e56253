//! A distributed barrier (ZooKeeper's barrier recipe): processes block while a barrier node
//! exists and proceed once it is deleted.
//!
//! # The algorithm
//!
//! A waiter calls `exists` on the barrier node with a watch, right behind a `sync` (both sent
//! together: one round trip). If the node is missing, the barrier is down and the waiter
//! proceeds; otherwise it waits for the watch and asks again. No polling.
//!
//! The `sync` is what makes the answer trustworthy. ZooKeeper promises no visibility across
//! clients without it: a waiter served by a follower that has not yet applied another
//! client's `set` would find no node and pass a barrier that was raised before it began to
//! wait. avout's `sync` is a quorum round ([`Request::quorum_sync`](crate::Request::quorum_sync)),
//! because ZooKeeper's own `sync` does not order a read on the leader: with it, waiters on a
//! real ensemble's leader passed raised barriers. Behind it, the `exists` is answered from a
//! state that holds every write committed before the wait, so a waiter passes only a barrier
//! that was really down at some moment during its wait. A failed `sync` fails the check with it, whatever the
//! `exists` behind it says. [`Barrier::set`] creates the node (with its
//! parents) and [`Barrier::remove`] deletes it; both are idempotent.
//!
//! # Connection loss, session expiry, cancellation
//!
//! - Connection loss: every request of the recipe is idempotent, so it is sent again once the
//!   session reconnects (or after a short pause). The barrier node is persistent: a holder
//!   losing its connection or session does not lower it.
//! - Session expiry: the barrier node is persistent, so nothing is lost; a wait goes on on
//!   the client's next session, and a `set` or `remove` in flight fails with
//!   [`BarrierError::SessionLost`] (both are idempotent: call again).
//! - Cancelling a wait (dropping its future) is harmless: a wait changes nothing.

use std::time::Duration;

use crate::machine::{
    Machine, Millis, Outbox, Reply, Request, Resumed, Stall, Token, drive, idempotent,
};
use crate::{Client, CoordinationExt, Error, SessionState, WatchedEvent, path};

/// Why a barrier operation failed.
///
/// ```
/// use avout::recipes::barrier::BarrierError;
/// assert!(matches!(BarrierError::from(avout::Error::SessionExpired), BarrierError::SessionLost(_)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum BarrierError {
    /// The session ended.
    #[error("session lost: {0}")]
    SessionLost(Error),
    /// `wait_for` ran out of time.
    #[error("timed out waiting at the barrier")]
    TimedOut,
    /// Another session's node already uses this participant's name.
    #[error("participant node {node} belongs to another session")]
    NameTaken {
        /// The node.
        node: String,
    },
    /// The coordination service refused a request (bad path, no access, …).
    #[error(transparent)]
    Zk(Error),
}

impl From<Error> for BarrierError {
    fn from(error: Error) -> Self {
        if error.is_session_lost() {
            BarrierError::SessionLost(error)
        } else {
            BarrierError::Zk(error)
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// `sync` and then `exists` with a watch are in flight.
    Checking {
        sync: Token,
        exists: Token,
    },
    /// The node exists: waiting for the watch armed by `exists`.
    Waiting {
        exists: Token,
    },
    /// Waiting to ask again after a connection loss (see `stall`).
    Stalled,
    Done,
}

/// Waits until a node does not exist; see the [module docs](self).
///
/// ```
/// use avout::machine::{Machine, Millis, Reply, Request};
/// use avout::recipes::barrier::WaitGoneMachine;
/// use avout::SessionState;
///
/// let mut m = WaitGoneMachine::new("/barrier");
/// m.handle_session(Millis(0), SessionState::Connected);
/// let (sync, request) = m.poll_request().unwrap();
/// assert!(matches!(request, Request::Sync { .. }));
/// let (exists, request) = m.poll_request().unwrap();
/// assert!(matches!(request, Request::Exists { watch: true, .. }));
/// m.handle_reply(Millis(1), sync, Ok(Reply::Synced));
/// m.handle_reply(Millis(1), exists, Ok(Reply::Exists(None)));
/// assert_eq!(m.poll_output(), Some(Ok(())));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WaitGoneMachine {
    path: String,
    phase: Phase,
    stall: Stall<()>,
    outbox: Outbox<Result<(), BarrierError>>,
}

impl WaitGoneMachine {
    /// A machine waiting for `path` to be absent.
    ///
    /// ```
    /// let m = avout::recipes::barrier::WaitGoneMachine::new("/b");
    /// # let _ = m;
    /// ```
    pub fn new(path: &str) -> Self {
        WaitGoneMachine {
            path: path.to_owned(),
            phase: Phase::Done,
            stall: Stall::default(),
            outbox: Outbox::default(),
        }
    }

    fn check(&mut self) {
        let sync = self.outbox.send(Request::Sync {
            path: self.path.clone(),
        });
        let exists = self.outbox.send(Request::Exists {
            path: self.path.clone(),
            watch: true,
        });
        self.phase = Phase::Checking { sync, exists };
    }

    fn fail(&mut self, now: Millis, error: Error) {
        if error.is_indeterminate() {
            self.phase = Phase::Stalled;
            self.stall.start((), now);
        } else {
            self.finish(Err(error.into()));
        }
    }

    fn finish(&mut self, result: Result<(), BarrierError>) {
        self.phase = Phase::Done;
        self.stall.cancel();
        self.outbox.finish(result);
    }
}

impl Machine for WaitGoneMachine {
    type Output = Result<(), BarrierError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        let Phase::Checking { sync, exists } = self.phase else {
            return;
        };
        if token == sync {
            // A failed sync leaves the exists behind it unproven: ask again.
            if let Err(e) = reply {
                self.fail(now, e);
            }
            return;
        }
        if token != exists {
            return;
        }
        match reply {
            Ok(Reply::Exists(None)) => self.finish(Ok(())),
            Ok(Reply::Exists(Some(_))) => self.phase = Phase::Waiting { exists },
            Err(e) => self.fail(now, e),
            Ok(other) => unreachable!("exists replied {other:?}"),
        }
    }

    fn handle_watch(&mut self, _now: Millis, token: Token, _event: WatchedEvent) {
        // Any event (deleted, recreated, data changed, session) means: look again.
        if self.phase == (Phase::Waiting { exists: token }) {
            self.check();
        }
    }

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.outbox.session_stalled(state, &mut self.stall) {
            Resumed::Start => self.check(),
            Resumed::Ended(error) => self.finish(Err(error.into())),
            Resumed::Redo(()) => self.check(),
            Resumed::Quiet => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.stall.due(now).is_some() {
            self.check();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.stall.deadline()
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.outbox.take_output()
    }
}

/// A barrier: a node whose existence holds processes back. See the [module docs](self).
///
/// ```no_run
/// use avout::recipes::barrier::Barrier;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::recipes::barrier::BarrierError> {
/// let gate = Barrier::new(client, "/deploy/gate")?;
/// gate.set().await?;
/// // ... elsewhere, workers call `gate.wait().await?` ...
/// gate.remove().await?; // releases every waiter
/// # Ok(()) }
/// ```
pub struct Barrier {
    client: Client,
    path: String,
}

impl Clone for Barrier {
    fn clone(&self) -> Self {
        Barrier {
            client: self.client.clone(),
            path: self.path.clone(),
        }
    }
}

impl std::fmt::Debug for Barrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Barrier").field("path", &self.path).finish()
    }
}

impl Barrier {
    /// A handle on the barrier node at `path`.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// assert!(avout::recipes::barrier::Barrier::new(client, "bad").is_err());
    /// # }
    /// ```
    pub fn new(client: &Client, path: impl Into<String>) -> Result<Self, BarrierError> {
        let path = path.into();
        path::validate_path(&path, false)?;
        if path == "/" {
            return Err(Error::BadArguments("the root cannot be a barrier".into()).into());
        }
        Ok(Barrier {
            client: client.clone(),
            path,
        })
    }

    /// The barrier node's path.
    ///
    /// ```no_run
    /// # fn demo(b: avout::recipes::barrier::Barrier) {
    /// println!("{}", b.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Raises the barrier (creates its node and any missing parents); raising a raised
    /// barrier is a no-op.
    ///
    /// ```no_run
    /// # async fn demo(b: avout::recipes::barrier::Barrier) -> Result<(), avout::recipes::barrier::BarrierError> {
    /// b.set().await?;
    /// # Ok(()) }
    /// ```
    pub async fn set(&self) -> Result<(), BarrierError> {
        let session = self.client.current_session().await?;
        let zk = &*session;
        idempotent(zk, || zk.ensure_path(&self.path)).await?;
        Ok(())
    }

    /// Lowers the barrier, releasing every waiter; lowering a lowered barrier is a no-op.
    ///
    /// ```no_run
    /// # async fn demo(b: avout::recipes::barrier::Barrier) -> Result<(), avout::recipes::barrier::BarrierError> {
    /// b.remove().await?;
    /// # Ok(()) }
    /// ```
    pub async fn remove(&self) -> Result<(), BarrierError> {
        let session = self.client.current_session().await?;
        let zk = &*session;
        match idempotent(zk, || zk.delete(&self.path, None)).await {
            Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the barrier is raised now.
    ///
    /// ```no_run
    /// # async fn demo(b: avout::recipes::barrier::Barrier) -> Result<(), avout::recipes::barrier::BarrierError> {
    /// if b.is_set().await? { println!("held back"); }
    /// # Ok(()) }
    /// ```
    pub async fn is_set(&self) -> Result<bool, BarrierError> {
        let session = self.client.current_session().await?;
        let zk = &*session;
        // Behind a sync (sent together): another client's set or remove is seen.
        let found = idempotent(zk, || {
            let sync = zk.sync(&self.path);
            let exists = zk.exists(&self.path);
            async move {
                sync.await?;
                exists.await
            }
        })
        .await?;
        Ok(found.is_some())
    }

    /// Waits until the barrier is lowered (returns at once if it is not raised).
    ///
    /// ```no_run
    /// # async fn demo(b: avout::recipes::barrier::Barrier) -> Result<(), avout::recipes::barrier::BarrierError> {
    /// b.wait().await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait(&self) -> Result<(), BarrierError> {
        self.client
            .across_sessions(
                |zk| async move { drive(&*zk, &mut WaitGoneMachine::new(&self.path)).await },
                |e| matches!(e, BarrierError::SessionLost(_)),
            )
            .await
    }

    /// Like [`wait`](Self::wait), for at most `timeout`; [`BarrierError::TimedOut`] after.
    ///
    /// ```no_run
    /// # async fn demo(b: avout::recipes::barrier::Barrier) -> Result<(), avout::recipes::barrier::BarrierError> {
    /// b.wait_for(std::time::Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait_for(&self, timeout: Duration) -> Result<(), BarrierError> {
        tokio::time::timeout(timeout, self.wait())
            .await
            .map_err(|_| BarrierError::TimedOut)?
    }
}

#[cfg(test)]
mod tests;
