//! One-shot watches, returned as values by the reads that arm them.
//!
//! A watch fires exactly once: when the node changes as its kind describes, or with a
//! [`EventKind::Session`] event when the session ends (expired or closed), since then no change
//! will ever be reported. A disconnect does not fire it: the client re-arms its watches when it
//! reconnects within the session, and ZooKeeper guarantees that a client sees a watch event
//! before any reply that reflects the change.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::SessionState;

/// What a watch event reports.
///
/// ```
/// assert_ne!(avout::EventKind::NodeCreated, avout::EventKind::NodeDeleted);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum EventKind {
    /// The node was created (an `exists` watch on a missing node).
    NodeCreated,
    /// The node was deleted.
    NodeDeleted,
    /// The node's data changed.
    NodeDataChanged,
    /// A child was added or removed.
    NodeChildrenChanged,
    /// The session ended; see [`WatchedEvent::state`].
    Session,
}

/// A fired watch.
///
/// ```
/// use avout::{EventKind, SessionState, WatchedEvent};
/// let e = WatchedEvent { kind: EventKind::NodeDeleted, state: SessionState::Connected, path: "/a".into() };
/// assert_eq!(e.to_string(), "NodeDeleted /a");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WatchedEvent {
    /// What happened.
    pub kind: EventKind,
    /// The session's state when the event was delivered.
    pub state: SessionState,
    /// The watched path (empty for session events).
    pub path: String,
}

impl WatchedEvent {
    /// The event a watch fires with when its session ends in `state`.
    ///
    /// ```
    /// let e = avout::WatchedEvent::session_ended(avout::SessionState::Expired);
    /// assert_eq!(e.kind, avout::EventKind::Session);
    /// ```
    pub fn session_ended(state: SessionState) -> Self {
        WatchedEvent {
            kind: EventKind::Session,
            state,
            path: String::new(),
        }
    }
}

impl fmt::Display for WatchedEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            EventKind::Session => write!(f, "Session {:?}", self.state),
            kind => write!(f, "{kind:?} {}", self.path),
        }
    }
}

/// A one-shot watch: a future that resolves to the event that fired it.
///
/// Dropping it is fine; the event, if it comes, is discarded.
///
/// ```
/// use avout::{EventKind, SessionState, Watch, WatchedEvent};
/// let (tx, watch) = Watch::channel();
/// tx.fire(WatchedEvent { kind: EventKind::NodeDataChanged, state: SessionState::Connected, path: "/a".into() });
/// let event = futures::executor::block_on(watch);
/// assert_eq!(event.kind, EventKind::NodeDataChanged);
/// ```
#[must_use = "a watch reports nothing unless awaited"]
pub struct Watch {
    inner: BoxFuture<'static, WatchedEvent>,
    /// Armed and not yet fired: counted in [`crate::metrics::WATCHES`].
    held: bool,
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Watch")
    }
}

impl Watch {
    /// A watch that resolves when `event` does; for backends.
    ///
    /// ```
    /// let w = avout::Watch::new(async { avout::WatchedEvent::session_ended(avout::SessionState::Closed) });
    /// assert_eq!(futures::executor::block_on(w).state, avout::SessionState::Closed);
    /// ```
    pub fn new(event: impl Future<Output = WatchedEvent> + Send + 'static) -> Self {
        crate::metrics::watch_held("one_shot", 1.0);
        Watch {
            inner: event.boxed(),
            held: true,
        }
    }

    fn release(&mut self) {
        if std::mem::take(&mut self.held) {
            crate::metrics::watch_held("one_shot", -1.0);
        }
    }

    /// A watch and the sender that fires it; for backends. If the sender is dropped unfired,
    /// the watch resolves as if the session had been closed.
    ///
    /// ```
    /// let (tx, w) = avout::Watch::channel();
    /// drop(tx);
    /// assert_eq!(futures::executor::block_on(w).kind, avout::EventKind::Session);
    /// ```
    pub fn channel() -> (WatchSender, Watch) {
        let (tx, rx) = futures::channel::oneshot::channel();
        let watch = Watch::new(async move {
            rx.await
                .unwrap_or_else(|_| WatchedEvent::session_ended(SessionState::Closed))
        });
        (WatchSender { tx }, watch)
    }
}

impl Future for Watch {
    type Output = WatchedEvent;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WatchedEvent> {
        let event = self.inner.as_mut().poll(cx);
        if event.is_ready() {
            self.release();
        }
        event
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.release();
    }
}

/// Fires a [`Watch`] made by [`Watch::channel`].
#[derive(Debug)]
pub struct WatchSender {
    tx: futures::channel::oneshot::Sender<WatchedEvent>,
}

impl WatchSender {
    /// Fires the watch; a no-op if the watch was dropped.
    ///
    /// ```
    /// let (tx, w) = avout::Watch::channel();
    /// drop(w);
    /// tx.fire(avout::WatchedEvent::session_ended(avout::SessionState::Expired));
    /// ```
    pub fn fire(self, event: WatchedEvent) {
        // The receiver may be gone: a watch nobody awaits is allowed to be dropped.
        let _ = self.tx.send(event);
    }
}
