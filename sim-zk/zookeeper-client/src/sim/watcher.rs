//! Watchers: a session's state ([`StateWatcher`]), one node event ([`OneshotWatcher`]), and
//! a stream of them ([`PersistentWatcher`]), over the simulator's watches.
//!
//! The simulated client fans events out to every watch of a path, as `zookeeper-client`
//! does, and re-arms one-shot watches after a reconnection with what they missed. What this
//! layer adds is `zookeeper-client`'s: paths relative to the client's root, session events in
//! its states, and removal, which asks the server only for the last watcher of a path.

use std::sync::{Arc, Weak};

use avout::zk::convert::to_zk_event;
use avout::Request;
use futures::{FutureExt, StreamExt};
use tokio::sync::watch;

use super::path::Chroot;
use super::session::{Session, WatcherKind};
use super::{call_error, Error, EventType, SessionState, WatchedEvent};

/// Tracks a session's state.
///
/// ```
/// # async fn demo(client: avout_zookeeper_client::Client) {
/// let mut states = client.state_watcher();
/// let next = states.changed().await;
/// println!("now {next}");
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct StateWatcher {
    receiver: watch::Receiver<SessionState>,
}

impl StateWatcher {
    pub(crate) fn new(receiver: watch::Receiver<SessionState>) -> StateWatcher {
        StateWatcher { receiver }
    }

    /// The latest state, which it consumes.
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) {
    /// let state = client.state_watcher().state();
    /// # let _ = state;
    /// # }
    /// ```
    pub fn state(&mut self) -> SessionState {
        *self.receiver.borrow_and_update()
    }

    /// Waits for the state to change and returns it, consumed. After a terminal state
    /// (`Expired`, `Closed`, `AuthFailed`) is consumed it waits for ever.
    ///
    /// ```
    /// # async fn demo(client: avout_zookeeper_client::Client) {
    /// let mut states = client.state_watcher();
    /// drop(client);
    /// assert_eq!(states.changed().await, avout_zookeeper_client::SessionState::Closed);
    /// # }
    /// ```
    pub async fn changed(&mut self) -> SessionState {
        match self.receiver.changed().await {
            Ok(()) => *self.receiver.borrow_and_update(),
            // The terminal state was sent before the sender went.
            Err(_) => std::future::pending().await,
        }
    }

    /// The latest state, left unconsumed.
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) {
    /// let state = client.state_watcher().peek_state();
    /// # let _ = state;
    /// # }
    /// ```
    pub fn peek_state(&self) -> SessionState {
        *self.receiver.borrow()
    }
}

/// What a watcher needs of its session to be removed.
#[derive(Debug)]
struct Registration {
    session: Weak<Session>,
    path: String,
    id: u64,
}

impl Registration {
    fn new(session: &Arc<Session>, path: &str, kind: WatcherKind) -> Registration {
        Registration {
            session: Arc::downgrade(session),
            path: path.to_owned(),
            id: session.add_watcher(path, kind),
        }
    }

    /// Unregisters; the session, and whether this was its last watcher on the path.
    fn unregister(&self) -> Option<(Arc<Session>, bool)> {
        let session = self.session.upgrade()?;
        let last = session.remove_watcher(&self.path, self.id);
        Some((session, last))
    }

    /// `zookeeper-client`'s removal: refused once the session is over, asked of the server
    /// only for the last watcher of the path.
    async fn remove(self, fired: bool) -> Result<(), Error> {
        let Some((session, last)) = self.unregister() else {
            return Err(Error::ClientClosed);
        };
        let state = session.state();
        if state.is_terminated() {
            return Err(terminal_error(state));
        }
        if fired || !last {
            return Ok(());
        }
        let sent = session.client().send(Request::RemoveWatches {
            path: self.path.clone(),
        });
        drop(session);
        sent.await.map(drop).map_err(|e| call_error(&e))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.unregister();
    }
}

/// The error of a call on a session in a terminal `state`.
pub(crate) fn terminal_error(state: SessionState) -> Error {
    match state {
        SessionState::Expired => Error::SessionExpired,
        SessionState::AuthFailed => Error::AuthFailed,
        SessionState::Closed => Error::ClientClosed,
        other => Error::UnexpectedError(format!("expect error state, got {other:?}")),
    }
}

/// A node event as the watcher's client names it: relative to its root.
fn relative(chroot: &Chroot, event: &avout::WatchedEvent) -> WatchedEvent {
    let mut event = to_zk_event(event);
    if event.event_type != EventType::Session {
        if let Ok(path) = chroot.client_path(&event.path) {
            event.path = path;
        }
    }
    event
}

/// Waits for one node event (data, children, creation, deletion) or the session's end.
#[derive(Debug)]
pub struct OneshotWatcher {
    chroot: Chroot,
    watch: avout::Watch,
    registration: Registration,
}

impl OneshotWatcher {
    pub(crate) fn new(
        session: &Arc<Session>,
        chroot: Chroot,
        path: &str,
        kind: WatcherKind,
        watch: avout::Watch,
    ) -> OneshotWatcher {
        OneshotWatcher {
            chroot,
            watch,
            registration: Registration::new(session, path, kind),
        }
    }

    /// Waits for the node event, or the session's end (`Expired`, `Closed`, `AuthFailed`).
    /// A disconnection is no event: the watch is set again on reconnection and reports what
    /// it missed.
    ///
    /// ```
    /// # async fn demo(client: avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let (_stat, watcher) = client.check_and_watch_stat("/config").await?;
    /// let event = watcher.changed().await;
    /// println!("{:?} {}", event.event_type, event.path);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn changed(self) -> WatchedEvent {
        let OneshotWatcher {
            chroot,
            watch,
            registration,
        } = self;
        let event = watch.await;
        drop(registration);
        relative(&chroot, &event)
    }

    /// Removes the watcher. Errors: `ClientClosed` or `SessionExpired` once the session is
    /// over, `NoWatcher` if the server had already fired the watch (its event on its way).
    ///
    /// ```
    /// # async fn demo(client: avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let (_stat, watcher) = client.check_and_watch_stat("/config").await?;
    /// #[allow(deprecated)]
    /// watcher.remove().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[deprecated(since = "0.10.0", note = "Rust has Drop")]
    pub async fn remove(self) -> Result<(), Error> {
        let OneshotWatcher {
            watch,
            registration,
            ..
        } = self;
        let fired = watch.now_or_never().is_some();
        registration.remove(fired).await
    }
}

/// A stream of node events from a persistent (or recursive) watch, and of the session's
/// state changes.
#[derive(Debug)]
pub struct PersistentWatcher {
    chroot: Chroot,
    watch: avout::PersistentWatch,
    registration: Option<Registration>,
}

impl PersistentWatcher {
    pub(crate) fn new(
        session: &Arc<Session>,
        chroot: Chroot,
        path: &str,
        watch: avout::PersistentWatch,
    ) -> PersistentWatcher {
        PersistentWatcher {
            chroot,
            watch,
            registration: Some(Registration::new(session, path, WatcherKind::Persistent)),
        }
    }

    /// Waits for the next event: a node event, or the session's (`Disconnected`,
    /// `SyncConnected`, and the terminal one). Events while disconnected are not reported
    /// (ZOOKEEPER-4698): after `SyncConnected`, read again what matters.
    ///
    /// # Panics
    ///
    /// After the terminal session event was returned.
    ///
    /// ```
    /// # async fn demo(client: avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::AddWatchMode;
    /// let mut watcher = client.watch("/config", AddWatchMode::PersistentRecursive).await?;
    /// let event = watcher.changed().await;
    /// println!("{:?} {}", event.event_type, event.path);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn changed(&mut self) -> WatchedEvent {
        let event = self
            .watch
            .next()
            .await
            .expect("a persistent watcher is not polled after its session's terminal event");
        relative(&self.chroot, &event)
    }

    /// Removes the watcher (best effort, as ZooKeeper removes a session's persistent watches
    /// on a path together). Errors: `ClientClosed` or `SessionExpired` once the session is
    /// over.
    ///
    /// ```
    /// # async fn demo(client: avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::AddWatchMode;
    /// let watcher = client.watch("/config", AddWatchMode::Persistent).await?;
    /// #[allow(deprecated)]
    /// watcher.remove().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[deprecated(since = "0.10.0", note = "Rust has Drop")]
    pub async fn remove(mut self) -> Result<(), Error> {
        let registration = self.registration.take().expect("registered until removed");
        let Some((session, last)) = registration.unregister() else {
            return Err(Error::ClientClosed);
        };
        let state = session.state();
        if state.is_terminated() {
            return Err(terminal_error(state));
        }
        drop(session);
        if !last {
            return Ok(());
        }
        self.watch.remove().await.map_err(|e| call_error(&e))
    }
}
