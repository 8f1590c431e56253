//! Sessions: identity, timeout, and the stream of state changes every handle offers.
//!
//! A handle of a [`Coordination`](crate::Coordination) backend *is* one ZooKeeper session. Its
//! state moves between [`SessionState::Connected`] and [`SessionState::Disconnected`] while the
//! client fails over between servers, and ends in one terminal state ([`SessionState::Expired`],
//! [`SessionState::Closed`] or [`SessionState::AuthFailed`]). Every subscriber sees every
//! transition, in order: a brief disconnect is never coalesced away, because a lock holder must
//! learn that it may have been cut off.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fanout::{Fanout, Subscription};

/// A session's id, as the server assigned it.
///
/// ```
/// assert_eq!(avout::SessionId(0x1f).to_string(), "0x1f");
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct SessionId(pub i64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A session's identity and negotiated timeout.
///
/// ```
/// use std::time::Duration;
/// let s = avout::SessionInfo { id: avout::SessionId(1), timeout: Duration::from_secs(10) };
/// assert_eq!(s.timeout.as_secs(), 10);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session id.
    pub id: SessionId,
    /// The timeout the server granted: silent longer than this, the session expires.
    pub timeout: Duration,
}

/// The state of a session.
///
/// ```
/// use avout::SessionState;
/// assert!(SessionState::Expired.is_terminal());
/// assert!(!SessionState::Disconnected.is_terminal());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum SessionState {
    /// Connected to a server; requests flow.
    Connected,
    /// Connection lost; the client is trying other servers. The session may still be alive on
    /// the service: ephemerals persist until the session times out.
    Disconnected,
    /// The service expired the session: its ephemerals and watches are gone.
    Expired,
    /// The handle was closed by its owner.
    Closed,
    /// Authentication failed.
    AuthFailed,
}

impl SessionState {
    /// Whether no further transition can happen.
    ///
    /// ```
    /// assert!(avout::SessionState::Closed.is_terminal());
    /// ```
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SessionState::Expired | SessionState::Closed | SessionState::AuthFailed
        )
    }

    /// The error a request on a session in this terminal state fails with.
    ///
    /// ```
    /// use avout::{Error, SessionState};
    /// assert_eq!(SessionState::Expired.terminal_error(), Some(Error::SessionExpired));
    /// assert_eq!(SessionState::Connected.terminal_error(), None);
    /// ```
    pub fn terminal_error(self) -> Option<crate::Error> {
        match self {
            SessionState::Expired => Some(crate::Error::SessionExpired),
            SessionState::Closed => Some(crate::Error::Closed),
            SessionState::AuthFailed => Some(crate::Error::AuthFailed),
            SessionState::Connected | SessionState::Disconnected => None,
        }
    }
}

/// The sending side of session states, for backends: every [`SessionStates`] subscribed from
/// it receives every transition published after it subscribed.
///
/// ```
/// use avout::{SessionState, SessionStatePublisher};
/// let publisher = SessionStatePublisher::new(SessionState::Connected);
/// let mut states = publisher.subscribe();
/// publisher.publish(SessionState::Disconnected);
/// publisher.publish(SessionState::Connected);
/// # tokio_test_block_on(async move {
/// assert_eq!(states.next().await, Some(SessionState::Disconnected));
/// assert_eq!(states.next().await, Some(SessionState::Connected));
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output { futures::executor::block_on(f) }
/// ```
#[derive(Clone)]
pub struct SessionStatePublisher {
    fanout: Fanout<SessionState>,
}

impl fmt::Debug for SessionStatePublisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionStatePublisher")
            .field("current", &self.current())
            .finish()
    }
}

impl SessionStatePublisher {
    /// A publisher whose current state is `initial`.
    ///
    /// ```
    /// let p = avout::SessionStatePublisher::new(avout::SessionState::Connected);
    /// assert_eq!(p.current(), avout::SessionState::Connected);
    /// ```
    pub fn new(initial: SessionState) -> Self {
        let fanout = Fanout::new(initial);
        if initial.is_terminal() {
            fanout.publish_if(initial, true, |_| true);
        }
        SessionStatePublisher { fanout }
    }

    /// The latest published state.
    ///
    /// ```
    /// let p = avout::SessionStatePublisher::new(avout::SessionState::Connected);
    /// p.publish(avout::SessionState::Closed);
    /// assert_eq!(p.current(), avout::SessionState::Closed);
    /// ```
    pub fn current(&self) -> SessionState {
        self.fanout.current()
    }

    /// Publishes a transition. Repeats of the current state and anything after a terminal
    /// state are ignored, so backends may report loosely.
    ///
    /// ```
    /// use avout::{SessionState, SessionStatePublisher};
    /// let p = SessionStatePublisher::new(SessionState::Connected);
    /// p.publish(SessionState::Expired);
    /// p.publish(SessionState::Connected);
    /// assert_eq!(p.current(), SessionState::Expired);
    /// ```
    pub fn publish(&self, state: SessionState) {
        self.fanout
            .publish_if(state, state.is_terminal(), |current| *current != state);
    }

    /// A new subscription, starting from the current state.
    ///
    /// ```
    /// let p = avout::SessionStatePublisher::new(avout::SessionState::Connected);
    /// assert_eq!(p.subscribe().current(), avout::SessionState::Connected);
    /// ```
    pub fn subscribe(&self) -> SessionStates {
        SessionStates {
            sub: self.fanout.subscribe(),
        }
    }
}

/// A stream of a session's state transitions; ends after a terminal state.
///
/// Obtained from [`Coordination::session_states`](crate::Coordination::session_states). It is
/// also a [`futures::Stream`].
#[must_use = "a subscription does nothing unless polled"]
pub struct SessionStates {
    sub: Subscription<SessionState>,
}

impl fmt::Debug for SessionStates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionStates")
            .field("current", self.sub.current())
            .finish()
    }
}

impl SessionStates {
    /// The state after the last transition this subscriber received.
    ///
    /// ```
    /// let p = avout::SessionStatePublisher::new(avout::SessionState::Disconnected);
    /// assert_eq!(p.subscribe().current(), avout::SessionState::Disconnected);
    /// ```
    pub fn current(&self) -> SessionState {
        *self.sub.current()
    }

    /// The next transition, or `None` once a terminal state has been delivered.
    ///
    /// ```
    /// use avout::{SessionState, SessionStatePublisher};
    /// let p = SessionStatePublisher::new(SessionState::Connected);
    /// let mut s = p.subscribe();
    /// p.publish(SessionState::Closed);
    /// futures::executor::block_on(async {
    ///     assert_eq!(s.next().await, Some(SessionState::Closed));
    ///     assert_eq!(s.next().await, None);
    /// });
    /// ```
    pub async fn next(&mut self) -> Option<SessionState> {
        std::future::poll_fn(|cx| self.sub.poll_next(cx)).await
    }

    /// Waits until the session reaches a terminal state and returns it.
    ///
    /// ```
    /// use avout::{SessionState, SessionStatePublisher};
    /// let p = SessionStatePublisher::new(SessionState::Connected);
    /// let mut s = p.subscribe();
    /// p.publish(SessionState::Disconnected);
    /// p.publish(SessionState::Expired);
    /// assert_eq!(futures::executor::block_on(s.terminated()), SessionState::Expired);
    /// ```
    pub async fn terminated(&mut self) -> SessionState {
        while self.next().await.is_some() {}
        self.current()
    }
}

impl futures::Stream for SessionStates {
    type Item = SessionState;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<SessionState>> {
        self.get_mut().sub.poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_subscriber_of_a_terminated_session_ends_at_once() {
        let p = SessionStatePublisher::new(SessionState::Connected);
        p.publish(SessionState::Expired);
        let mut s = p.subscribe();
        assert_eq!(s.current(), SessionState::Expired);
        assert_eq!(futures::executor::block_on(s.next()), None);
    }

    #[test]
    fn every_subscriber_sees_every_transition() {
        let p = SessionStatePublisher::new(SessionState::Connected);
        let mut a = p.subscribe();
        let mut b = p.subscribe();
        p.publish(SessionState::Disconnected);
        p.publish(SessionState::Connected);
        p.publish(SessionState::Closed);
        for s in [&mut a, &mut b] {
            let seen: Vec<_> =
                futures::executor::block_on(futures::StreamExt::collect::<Vec<_>>(s));
            assert_eq!(
                seen,
                [
                    SessionState::Disconnected,
                    SessionState::Connected,
                    SessionState::Closed
                ]
            );
        }
    }
}
