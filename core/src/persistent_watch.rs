//! Persistent watches (ZooKeeper 3.6's `addWatch`): [`PersistentWatch`], a stream of events
//! that stays armed after it fires.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use crate::{EventKind, Result, SessionState, WatchedEvent};

/// Whether a persistent watch covers its node only or its whole subtree.
///
/// ```
/// assert_ne!(avout::AddWatchMode::Persistent, avout::AddWatchMode::PersistentRecursive);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum AddWatchMode {
    /// The node's data, existence and children, as the three one-shot watches would.
    Persistent,
    /// The node and every descendant: creations, data changes and deletions.
    PersistentRecursive,
}

impl AddWatchMode {
    /// Whether the mode covers descendants.
    ///
    /// ```
    /// assert!(avout::AddWatchMode::PersistentRecursive.is_recursive());
    /// ```
    pub fn is_recursive(self) -> bool {
        self == AddWatchMode::PersistentRecursive
    }
}

/// Removes a persistent watch at the service; what [`PersistentWatch::remove`] runs.
pub type Remover = Box<dyn FnOnce() -> BoxFuture<'static, Result<()>> + Send>;

/// A persistent watch (ZooKeeper 3.6's `addWatch`): a [`Stream`] of [`WatchedEvent`]s that,
/// unlike a one-shot [`Watch`](crate::Watch), stays armed after it fires.
///
/// A watch in mode [`AddWatchMode::Persistent`] reports what a data watch, an
/// exists watch and a child watch on its node would (`NodeCreated`, `NodeDataChanged`,
/// `NodeDeleted`, `NodeChildrenChanged`), every time; in mode
/// [`AddWatchMode::PersistentRecursive`] it reports `NodeCreated`, `NodeDataChanged` and
/// `NodeDeleted` for its node and every descendant, with the changed node's path, and never
/// `NodeChildrenChanged` (a child's creation is reported as the child's `NodeCreated`).
///
/// The stream also carries the session's connection changes as [`EventKind::Session`] events:
/// `Disconnected`, then `Connected` when the session is back on a connection. **Changes made
/// while the session was disconnected are not reported** (ZooKeeper re-arms persistent
/// watches on reconnection without reporting what they missed, ZOOKEEPER-4698): a consumer that
/// keeps a view must re-read what it watches after a `Connected` event. The stream ends after a
/// terminal session event (`Expired`, `Closed`, `AuthFailed`), or once the watch is removed
/// ([`PersistentWatch::remove`]): removal itself reports nothing.
///
/// Dropping it stops delivery to it (the backend may keep the watch armed at the service
/// until the session ends); [`remove`](Self::remove) also disarms it there.
///
/// Like a one-shot watch's, an event reaches the stream before the reply of any later
/// request that reflects the change, so a consumer that reads after an event sees at least
/// that change.
///
/// ```
/// use avout::{AddWatchMode, EventKind, PersistentWatch, SessionState, WatchedEvent};
/// use futures::StreamExt;
///
/// let (tx, mut watch) = PersistentWatch::channel("/a", AddWatchMode::Persistent, None);
/// let changed = WatchedEvent { kind: EventKind::NodeDataChanged, state: SessionState::Connected, path: "/a".into() };
/// tx.send(changed.clone());
/// tx.end(SessionState::Closed);
/// futures::executor::block_on(async {
///     assert_eq!(watch.next().await, Some(changed));
///     assert_eq!(watch.next().await.unwrap().state, SessionState::Closed);
///     assert_eq!(watch.next().await, None);
/// });
/// ```
#[must_use = "a persistent watch reports nothing unless polled"]
pub struct PersistentWatch {
    path: String,
    mode: AddWatchMode,
    /// `None` once removed.
    events: Option<BoxStream<'static, WatchedEvent>>,
    remover: Option<Remover>,
    ended: bool,
    /// Armed, not yet ended nor removed: counted in [`crate::metrics::WATCHES`].
    held: bool,
}

impl fmt::Debug for PersistentWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PersistentWatch")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("ended", &self.ended)
            .finish()
    }
}

impl PersistentWatch {
    /// A persistent watch on `path` and the sender that feeds it; for backends. `remover`
    /// disarms it at the service (`None`: removal is local only).
    ///
    /// ```
    /// let (tx, w) = avout::PersistentWatch::channel("/a", avout::AddWatchMode::PersistentRecursive, None);
    /// assert_eq!(w.path(), "/a");
    /// assert!(!tx.is_closed());
    /// ```
    pub fn channel(
        path: &str,
        mode: AddWatchMode,
        remover: Option<Remover>,
    ) -> (PersistentSender, PersistentWatch) {
        let (tx, rx) = mpsc::unbounded();
        let watch = Self::from_stream(path, mode, rx.boxed(), remover);
        (PersistentSender { tx }, watch)
    }

    /// A persistent watch on `path` over a backend's own stream of events, which must end
    /// (or report a terminal session event) when the session does; for backends. Removing
    /// the watch drops the stream, then runs `remover`.
    ///
    /// ```
    /// use futures::StreamExt;
    /// let events = futures::stream::iter([avout::WatchedEvent::session_ended(avout::SessionState::Closed)]);
    /// let mut w = avout::PersistentWatch::from_stream("/a", avout::AddWatchMode::Persistent, events.boxed(), None);
    /// assert!(futures::executor::block_on(w.next()).is_some());
    /// ```
    pub fn from_stream(
        path: &str,
        mode: AddWatchMode,
        events: BoxStream<'static, WatchedEvent>,
        remover: Option<Remover>,
    ) -> PersistentWatch {
        crate::metrics::watch_held("persistent", 1.0);
        PersistentWatch {
            path: path.to_owned(),
            mode,
            events: Some(events),
            remover,
            ended: false,
            held: true,
        }
    }

    fn release(&mut self) {
        if std::mem::take(&mut self.held) {
            crate::metrics::watch_held("persistent", -1.0);
        }
    }

    /// The watched path.
    ///
    /// ```
    /// let (_, w) = avout::PersistentWatch::channel("/x", avout::AddWatchMode::Persistent, None);
    /// assert_eq!(w.path(), "/x");
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The watch's mode.
    ///
    /// ```
    /// let (_, w) = avout::PersistentWatch::channel("/x", avout::AddWatchMode::Persistent, None);
    /// assert_eq!(w.mode(), avout::AddWatchMode::Persistent);
    /// ```
    pub fn mode(&self) -> AddWatchMode {
        self.mode
    }

    /// Disarms the watch at the service, and ends the stream at once (events not yet taken
    /// are dropped), reporting nothing for its own removal. Fails as a request does (after
    /// `ConnectionLoss` the service may still hold the watch until the session ends; this
    /// handle reports nothing more either way). Removing it again, or after the session
    /// ended, does nothing.
    ///
    /// ```
    /// use futures::StreamExt;
    /// let (_, mut w) = avout::PersistentWatch::channel("/x", avout::AddWatchMode::Persistent, None);
    /// futures::executor::block_on(async {
    ///     assert!(w.remove().await.is_ok());
    ///     assert_eq!(w.next().await, None);
    /// });
    /// ```
    pub fn remove(&mut self) -> BoxFuture<'static, Result<()>> {
        self.events = None;
        self.release();
        match self.remover.take() {
            Some(remover) if !self.ended => remover(),
            _ => Box::pin(futures::future::ready(Ok(()))),
        }
    }
}

impl Stream for PersistentWatch {
    type Item = WatchedEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchedEvent>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let Some(events) = self.events.as_mut() else {
            return Poll::Ready(None);
        };
        match events.poll_next_unpin(cx) {
            Poll::Ready(Some(event)) => {
                if event.kind == EventKind::Session && event.state.is_terminal() {
                    self.ended = true;
                    self.release();
                }
                Poll::Ready(Some(event))
            }
            Poll::Ready(None) => {
                self.ended = true;
                self.release();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for PersistentWatch {
    fn drop(&mut self) {
        self.release();
    }
}

/// Feeds a [`PersistentWatch`] made by [`PersistentWatch::channel`].
#[derive(Debug, Clone)]
pub struct PersistentSender {
    tx: mpsc::UnboundedSender<WatchedEvent>,
}

impl PersistentSender {
    /// Delivers an event; returns `false` if the watch was dropped or removed (the sender
    /// can then be forgotten).
    ///
    /// ```
    /// let (tx, w) = avout::PersistentWatch::channel("/x", avout::AddWatchMode::Persistent, None);
    /// drop(w);
    /// assert!(!tx.send(avout::WatchedEvent::session_ended(avout::SessionState::Closed)));
    /// ```
    pub fn send(&self, event: WatchedEvent) -> bool {
        self.tx.unbounded_send(event).is_ok()
    }

    /// Ends the stream with the end of the session.
    ///
    /// ```
    /// let (tx, _w) = avout::PersistentWatch::channel("/x", avout::AddWatchMode::Persistent, None);
    /// tx.end(avout::SessionState::Expired);
    /// ```
    pub fn end(self, state: SessionState) {
        self.send(WatchedEvent::session_ended(state));
    }

    /// Reports a connection change (`Disconnected`, `Connected`) without ending the stream.
    ///
    /// ```
    /// let (tx, _w) = avout::PersistentWatch::channel("/x", avout::AddWatchMode::Persistent, None);
    /// assert!(tx.connection(avout::SessionState::Disconnected));
    /// ```
    pub fn connection(&self, state: SessionState) -> bool {
        self.send(WatchedEvent::session_ended(state))
    }

    /// Whether the watch was dropped or removed.
    ///
    /// ```
    /// let (tx, w) = avout::PersistentWatch::channel("/x", avout::AddWatchMode::Persistent, None);
    /// drop(w);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}
