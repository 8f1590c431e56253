//! Watchers: a session's state ([`StateWatcher`]), one node event ([`OneshotWatcher`]), and
//! a stream of them ([`PersistentWatcher`]), over the simulator's watches.
//!
//! The simulated client fans events out to every watch of a path, as `zookeeper-client`
//! does, and re-arms one-shot watches after a reconnection with what they missed. What this
//! layer adds is `zookeeper-client`'s: paths relative to the client's root, session events in
//! its states, and removal, which asks the server only for the last watcher of a path.

use std::sync::{Arc, Weak};

use avout::task::watch;
use avout::zk::convert::to_zk_event;
use futures::{FutureExt, StreamExt};

use super::path::Chroot;
use super::session::{Session, WatcherKind};
use super::{call_error, Error, EventType, SessionState, WatchedEvent};

/// Tracks a session's state: `SyncConnected`, `Disconnected` while the connection is lost,
/// and one terminal state (`Expired`, `Closed`, `AuthFailed`), after which
/// [`changed`](Self::changed) waits for ever.
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

/// A watcher's place in its session's book of watchers, taken when its watched read is sent
/// (so the session knows a watch may be on its way there), and what removing it does at the
/// server.
///
/// `zookeeper-client` disarms a watch at the server when its last watcher on the path goes
/// (dropped, or [`remove`](OneshotWatcher::remove)d) before it fired: a `removeWatches` of
/// every kind when no watcher and no watched read is left on the path, else only the gone
/// watcher's kind if none of the rest has it. The simulated server removes watches of
/// every kind only, so here the watch is disarmed in the first case, and left armed in the
/// second (it fires to no watcher).
#[derive(Debug)]
pub(crate) struct Registration {
    session: Weak<Session>,
    path: String,
    id: u64,
    /// Whether dropping it disarms the server's watch: set once the watch is armed, cleared
    /// once it fired.
    disarm: bool,
}

impl Registration {
    /// Registers a watcher of `kind` on the server path `path`, whose watch is not armed yet.
    pub(crate) fn new(session: &Arc<Session>, path: &str, kind: WatcherKind) -> Registration {
        Registration {
            session: Arc::downgrade(session),
            path: path.to_owned(),
            id: session.add_watcher(path, kind),
            disarm: false,
        }
    }

    /// The same registration, its watch armed at the server.
    fn armed(mut self) -> Registration {
        self.disarm = true;
        self
    }

    /// Unregisters; the session, and whether this was its last watcher on the path.
    fn unregister(&self) -> Option<(Arc<Session>, bool)> {
        let session = self.session.upgrade()?;
        let last = session.remove_watcher(&self.path, self.id);
        Some((session, last))
    }

    /// `zookeeper-client`'s removal: refused once the session is over, asked of the server
    /// only for the last watcher of the path.
    async fn remove(mut self, fired: bool) -> Result<(), Error> {
        self.disarm = false;
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
        let sent = session.client().remove_watches(&self.path);
        drop(session);
        sent.await.map_err(|e| call_error(&e))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some((session, last)) = self.unregister() else {
            return;
        };
        if self.disarm && last && !session.state().is_terminated() {
            // As the real client's, a removal nobody waits for: its answer (`NoWatcher` if the
            // watch fired meanwhile) goes unheard.
            drop(session.client().remove_watches(&self.path));
        }
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
///
/// A disconnection is no event: the watch is set again when the session reconnects, and
/// reports a change it missed meanwhile. When the session ends (expired, closed, failed
/// authentication) the watcher gets that session event. Dropping it before its event (a
/// cancelled [`changed`](Self::changed) included) removes it, and disarms the watch at the
/// server if it was the session's last watcher on the path.
///
/// ```
/// # async fn demo(client: avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
/// use avout_zookeeper_client::EventType;
/// let (_data, _stat, watcher) = client.get_and_watch_data("/config").await?;
/// match watcher.changed().await.event_type {
///     EventType::Session => println!("the session ended"),
///     other => println!("/config: {other:?}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct OneshotWatcher {
    chroot: Chroot,
    /// Taken by `changed` and `remove`.
    watch: Option<avout::Watch>,
    registration: Option<Registration>,
}

impl OneshotWatcher {
    /// The watcher of a watched read whose reply came with `watch`.
    pub(crate) fn new(
        chroot: Chroot,
        registration: Registration,
        watch: avout::Watch,
    ) -> OneshotWatcher {
        OneshotWatcher {
            chroot,
            watch: Some(watch),
            registration: Some(registration.armed()),
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
    pub async fn changed(mut self) -> WatchedEvent {
        let watch = self
            .watch
            .take()
            .expect("taken only by a method that consumes it");
        let event = watch.await;
        if let Some(registration) = &mut self.registration {
            registration.disarm = false;
        }
        relative(&self.chroot, &event)
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
    pub async fn remove(mut self) -> Result<(), Error> {
        let watch = self
            .watch
            .take()
            .expect("taken only by a method that consumes it");
        let fired = watch.now_or_never().is_some();
        let registration = self.registration.take().expect("registered until removed");
        registration.remove(fired).await
    }
}

impl Drop for OneshotWatcher {
    fn drop(&mut self) {
        // An event already here means the watch fired: nothing is left to disarm.
        let fired = self
            .watch
            .as_mut()
            .is_some_and(|w| w.now_or_never().is_some());
        if let (true, Some(registration)) = (fired, &mut self.registration) {
            registration.disarm = false;
        }
    }
}

/// A stream of node events from a persistent (or recursive) watch, and of the session's
/// state changes.
///
/// A disconnection is reported (`Disconnected`, then `SyncConnected` once the session is
/// back), and changes made meanwhile are not (ZOOKEEPER-4698): read again after
/// `SyncConnected`. The session's end is its last event. Dropping it removes it, and disarms
/// the watch at the server if it was the session's last watcher on the path.
///
/// ```
/// # async fn demo(client: avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
/// use avout_zookeeper_client::{AddWatchMode, EventType, SessionState};
/// let mut watcher = client.watch("/config", AddWatchMode::PersistentRecursive).await?;
/// loop {
///     let event = watcher.changed().await;
///     match (event.event_type, event.session_state) {
///         (EventType::Session, state) if state.is_terminated() => break,
///         (EventType::Session, SessionState::SyncConnected) => println!("re-read /config"),
///         (EventType::Session, _) => {}
///         (kind, _) => println!("{kind:?} {}", event.path),
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct PersistentWatcher {
    chroot: Chroot,
    watch: avout::PersistentWatch,
    registration: Option<Registration>,
}

impl PersistentWatcher {
    /// The watcher of an `addWatch` that armed `watch`.
    pub(crate) fn new(
        chroot: Chroot,
        registration: Registration,
        watch: avout::PersistentWatch,
    ) -> PersistentWatcher {
        PersistentWatcher {
            chroot,
            watch,
            registration: Some(registration.armed()),
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
