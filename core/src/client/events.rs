//! The managed client's connection events, in Curator's vocabulary.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde::{Deserialize, Serialize};

use crate::SessionId;
use crate::fanout::Subscription;

/// What happened to the client's connection (Curator's `ConnectionState`).
///
/// ```
/// use avout::client::ConnectionState;
/// assert!(ConnectionState::Closed.is_final());
/// assert!(!ConnectionState::Lost.is_final());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ConnectionState {
    /// The client's first session was established (once per client).
    Connected,
    /// The connection dropped. The session may still be alive on the service, with its
    /// ephemerals and watches; whether it is, only its reconnection or expiry tells. A lock
    /// holder should stop acting on the lock until it hears which.
    Suspended,
    /// Connected again: to the same session after [`Suspended`](Self::Suspended) (the
    /// generation is unchanged; ephemerals and watches survived), or to a new session after
    /// [`Lost`](Self::Lost) (the generation went up; ephemerals and watches of the old one
    /// are gone).
    Reconnected,
    /// The session expired (or was otherwise ended by the service): its ephemerals, watches,
    /// locks and leadership are gone. The client is opening a new session.
    Lost,
    /// The client was closed, or gave up opening a new session; nothing follows.
    Closed,
}

impl ConnectionState {
    /// Whether nothing follows this state.
    ///
    /// ```
    /// assert!(!avout::client::ConnectionState::Suspended.is_final());
    /// ```
    pub fn is_final(self) -> bool {
        self == ConnectionState::Closed
    }
}

/// One transition of the client's connection, with the session it concerns.
///
/// ```
/// use avout::client::{ConnectionEvent, ConnectionState};
/// let e = ConnectionEvent {
///     state: ConnectionState::Reconnected,
///     generation: 2,
///     session: avout::SessionId(7),
///     new_session: true,
/// };
/// assert!(e.is_new_session());
/// assert_eq!(e.to_string(), "reconnected to a new session (0x7, generation 2)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ConnectionEvent {
    /// What happened.
    pub state: ConnectionState,
    /// Which of the client's sessions it concerns: 1 for the first, one more for each new
    /// session after an expiry.
    pub generation: u64,
    /// The id of that session.
    pub session: SessionId,
    /// Set on the [`ConnectionState::Reconnected`] that follows a [`ConnectionState::Lost`]:
    /// the session is a new one.
    pub new_session: bool,
}

impl ConnectionEvent {
    /// Whether this event is the first of a session that replaced an expired one (a
    /// [`ConnectionState::Reconnected`] right after [`ConnectionState::Lost`]): the
    /// application's ephemerals and watches must be made again.
    ///
    /// ```
    /// use avout::client::{ConnectionEvent, ConnectionState};
    /// let e = ConnectionEvent { state: ConnectionState::Reconnected, generation: 2, session: avout::SessionId(7), new_session: false };
    /// assert!(!e.is_new_session());
    /// ```
    pub fn is_new_session(&self) -> bool {
        self.state == ConnectionState::Reconnected && self.new_session
    }
}

impl fmt::Display for ConnectionEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            ConnectionState::Connected => "connected",
            ConnectionState::Suspended => "suspended",
            ConnectionState::Reconnected => "reconnected",
            ConnectionState::Lost => "lost",
            ConnectionState::Closed => "closed",
        };
        let new = if self.new_session {
            " to a new session"
        } else {
            ""
        };
        write!(
            f,
            "{state}{new} ({}, generation {})",
            self.session, self.generation
        )
    }
}

/// The stream of a client's [`ConnectionEvent`]s; ends after [`ConnectionState::Closed`].
///
/// Every subscriber sees every event published after it subscribed, in order (a brief
/// suspension is never coalesced away). Obtained from
/// [`Client::connection_events`](super::Client::connection_events); also a
/// [`futures::Stream`].
#[must_use = "a subscription does nothing unless polled"]
pub struct ConnectionEvents {
    pub(super) sub: Subscription<ConnectionEvent>,
}

impl fmt::Debug for ConnectionEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionEvents")
            .field("current", self.sub.current())
            .finish()
    }
}

impl ConnectionEvents {
    /// The last event received (or the client's latest when subscribing).
    pub fn current(&self) -> ConnectionEvent {
        *self.sub.current()
    }

    /// The next event, or `None` after [`ConnectionState::Closed`].
    pub async fn next(&mut self) -> Option<ConnectionEvent> {
        std::future::poll_fn(|cx| self.sub.poll_next(cx)).await
    }
}

impl futures::Stream for ConnectionEvents {
    type Item = ConnectionEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ConnectionEvent>> {
        self.get_mut().sub.poll_next(cx)
    }
}
