//! The monitor of a held node: watches an ephemeral node of this session — a lock's, a
//! leader's, a lease's — and finishes, saying why, once the node is lost.
//!
//! # Algorithm
//!
//! `exists` with a watch on the node. If the node is gone, it is lost
//! ([`LockError::NodeDeleted`]); if it is there, the watch stands and the machine waits. Any
//! event on the node (deleted, data changed) is answered by the same `exists` again, which
//! says whether the node is gone and re-arms the watch if it is not: one watch at a time, and
//! no event is trusted to mean more than "look again". A terminal session state, reported by
//! the session or by the watch, ends it with [`LockError::SessionLost`] (the session's
//! ephemerals, the node among them, are gone with it).
//!
//! A failed `exists` (a connection loss) is sent again at once when the session reconnects,
//! else after a short pause, so a monitor whose request was lost without a disconnect is not
//! left deaf; a reconnection while watching looks again too, since the node may have gone
//! while the connection was down. A disconnection alone changes nothing: the watch survives
//! a reconnection within the session, and a request would only fail.
//!
//! [`Leadership`](crate::recipes::election::Leadership) runs it from the moment it is
//! elected (its `lost` and `is_leader` read the outcome), as do the lock guards' and
//! semaphore leases' `lost`; the election model runs it too.

use crate::machine::{Machine, Millis, Outbox, Reply, Request, SessionEvent, Stall, Token};
use crate::{EventKind, SessionState, WatchedEvent};

use super::LockError;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Not started: the driver's first session report starts it.
    Idle,
    /// `exists` with a watch in flight.
    Asking { exists: Token },
    /// The node is there; the watch armed by `exists` stands.
    Watching { exists: Token },
    /// `exists` failed; the stall asks again.
    Paused,
    /// Finished.
    Done,
}

/// Watches a held node until it is lost; see the module docs.
///
/// ```
/// use avout::lock::{LockError, MonitorMachine};
/// use avout::machine::{Machine, Millis, Reply, Request};
/// use avout::SessionState;
///
/// let mut m = MonitorMachine::new("/e/_c_x-latch-0000000001");
/// m.handle_session(Millis(0), SessionState::Connected);
/// let (token, request) = m.poll_request().unwrap();
/// assert!(matches!(request, Request::Exists { watch: true, .. }));
/// m.handle_reply(Millis(1), token, Ok(Reply::Exists(None)));
/// assert!(matches!(m.poll_output(), Some(LockError::NodeDeleted { .. })));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MonitorMachine {
    node: String,
    phase: Phase,
    out: Outbox<LockError>,
    stall: Stall<()>,
}

impl MonitorMachine {
    /// A monitor of `node`, an ephemeral node of this session (full path).
    ///
    /// ```
    /// let m = avout::lock::MonitorMachine::new("/lock/_c_x-lock-0000000003");
    /// assert_eq!(m.node(), "/lock/_c_x-lock-0000000003");
    /// ```
    pub fn new(node: &str) -> Self {
        MonitorMachine {
            node: node.to_owned(),
            phase: Phase::Idle,
            out: Outbox::default(),
            stall: Stall::default(),
        }
    }

    /// The node it watches.
    ///
    /// ```
    /// assert_eq!(avout::lock::MonitorMachine::new("/a").node(), "/a");
    /// ```
    pub fn node(&self) -> &str {
        &self.node
    }

    fn ask(&mut self) {
        self.stall.cancel();
        let exists = self.out.send(Request::Exists {
            path: self.node.clone(),
            watch: true,
        });
        self.phase = Phase::Asking { exists };
    }

    fn finish(&mut self, reason: LockError) {
        self.phase = Phase::Done;
        self.stall.cancel();
        self.out.finish(reason);
    }
}

impl Machine for MonitorMachine {
    type Output = LockError;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.out.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        let Phase::Asking { exists } = self.phase else {
            return;
        };
        if token != exists {
            return;
        }
        match reply {
            Ok(Reply::Exists(None)) => self.finish(LockError::NodeDeleted {
                node: self.node.clone(),
            }),
            Ok(Reply::Exists(Some(_))) => self.phase = Phase::Watching { exists },
            Err(e) if e.is_session_lost() => self.finish(LockError::SessionLost(e)),
            Err(_) => {
                self.phase = Phase::Paused;
                self.stall.start((), now);
            }
            Ok(other) => unreachable!("exists replied {other:?}"),
        }
    }

    fn handle_watch(&mut self, _now: Millis, token: Token, event: WatchedEvent) {
        let Phase::Watching { exists } = self.phase else {
            return;
        };
        if token != exists {
            // A watch of an earlier `exists`, superseded after a reconnection.
            return;
        }
        match event.state.terminal_error() {
            Some(error) if event.kind == EventKind::Session => {
                self.finish(LockError::SessionLost(error))
            }
            _ => self.ask(),
        }
    }

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.out.session(state) {
            // The driver's first report: start, connected or not (a request made while
            // disconnected fails and is retried).
            SessionEvent::Start => self.ask(),
            SessionEvent::Ended(error) => self.finish(LockError::SessionLost(error)),
            SessionEvent::Reconnected
                if matches!(self.phase, Phase::Watching { .. } | Phase::Paused) =>
            {
                self.ask()
            }
            _ => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.stall.due(now).is_some() {
            self.ask();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.stall.deadline()
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.out.take_output()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::testing::drain;
    use crate::{Error, Stat};

    const NODE: &str = "/e/_c_x-latch-0000000001";

    fn started() -> (MonitorMachine, Token) {
        let mut m = MonitorMachine::new(NODE);
        m.handle_session(Millis(0), SessionState::Connected);
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[..], [(_, Request::Exists { path, watch: true })] if path == NODE),
            "{sent:?}"
        );
        (m, sent[0].0)
    }

    fn armed() -> (MonitorMachine, Token) {
        let (mut m, exists) = started();
        m.handle_reply(Millis(1), exists, Ok(Reply::Exists(Some(Stat::default()))));
        assert!(drain(&mut m).is_empty());
        assert_eq!(m.poll_output(), None);
        (m, exists)
    }

    fn event(kind: EventKind, state: SessionState) -> WatchedEvent {
        WatchedEvent {
            kind,
            state,
            path: NODE.into(),
        }
    }

    /// A deletion event is not trusted alone: `exists` says the node is gone.
    #[test]
    fn a_deleted_node_is_reported_after_looking_again() {
        let (mut m, exists) = armed();
        m.handle_watch(
            Millis(5),
            exists,
            event(EventKind::NodeDeleted, SessionState::Connected),
        );
        let sent = drain(&mut m);
        assert!(matches!(
            &sent[..],
            [(_, Request::Exists { watch: true, .. })]
        ));
        assert_eq!(m.poll_output(), None);
        m.handle_reply(Millis(6), sent[0].0, Ok(Reply::Exists(None)));
        assert_eq!(
            m.poll_output(),
            Some(LockError::NodeDeleted { node: NODE.into() })
        );
    }

    #[test]
    fn a_data_change_re_arms_the_watch() {
        let (mut m, exists) = armed();
        m.handle_watch(
            Millis(5),
            exists,
            event(EventKind::NodeDataChanged, SessionState::Connected),
        );
        let sent = drain(&mut m);
        m.handle_reply(
            Millis(6),
            sent[0].0,
            Ok(Reply::Exists(Some(Stat::default()))),
        );
        assert_eq!(m.poll_output(), None, "still held");
    }

    #[test]
    fn session_expiry_ends_it_from_the_session_or_the_watch() {
        let (mut m, _) = armed();
        m.handle_session(Millis(5), SessionState::Disconnected);
        assert!(
            drain(&mut m).is_empty(),
            "a disconnection alone asks nothing"
        );
        m.handle_session(Millis(6), SessionState::Expired);
        assert_eq!(
            m.poll_output(),
            Some(LockError::SessionLost(Error::SessionExpired))
        );

        let (mut m, exists) = armed();
        m.handle_watch(
            Millis(5),
            exists,
            event(EventKind::Session, SessionState::Expired),
        );
        assert_eq!(
            m.poll_output(),
            Some(LockError::SessionLost(Error::SessionExpired))
        );

        let (mut m, exists) = started();
        m.handle_reply(Millis(1), exists, Err(Error::SessionExpired));
        assert_eq!(
            m.poll_output(),
            Some(LockError::SessionLost(Error::SessionExpired))
        );

        let mut m = MonitorMachine::new(NODE);
        m.handle_session(Millis(0), SessionState::Closed);
        assert!(drain(&mut m).is_empty());
        assert_eq!(m.poll_output(), Some(LockError::SessionLost(Error::Closed)));
    }

    /// After a connection loss: at once on reconnection, else after the pause.
    #[test]
    fn a_failed_exists_is_asked_again() {
        let (mut m, exists) = started();
        m.handle_reply(Millis(1), exists, Err(Error::ConnectionLoss));
        assert!(drain(&mut m).is_empty());
        assert_eq!(m.poll_timer(), Some(Millis(21)));
        m.handle_timer(Millis(21));
        let sent = drain(&mut m);
        assert!(matches!(
            &sent[..],
            [(_, Request::Exists { watch: true, .. })]
        ));
        m.handle_reply(Millis(22), sent[0].0, Err(Error::ConnectionLoss));
        m.handle_session(Millis(23), SessionState::Disconnected);
        assert!(drain(&mut m).is_empty());
        m.handle_session(Millis(24), SessionState::Connected);
        let sent = drain(&mut m);
        assert!(matches!(
            &sent[..],
            [(_, Request::Exists { watch: true, .. })]
        ));
        assert_eq!(m.poll_timer(), None);
        m.handle_reply(Millis(25), sent[0].0, Ok(Reply::Exists(None)));
        assert!(matches!(
            m.poll_output(),
            Some(LockError::NodeDeleted { .. })
        ));
    }

    /// A reconnection looks again (the node may have gone meanwhile); the old watch's event
    /// is then ignored.
    #[test]
    fn a_reconnection_while_watching_looks_again() {
        let (mut m, old) = armed();
        m.handle_session(Millis(5), SessionState::Disconnected);
        m.handle_session(Millis(6), SessionState::Connected);
        let sent = drain(&mut m);
        assert!(matches!(
            &sent[..],
            [(_, Request::Exists { watch: true, .. })]
        ));
        m.handle_reply(
            Millis(7),
            sent[0].0,
            Ok(Reply::Exists(Some(Stat::default()))),
        );
        m.handle_watch(
            Millis(8),
            old,
            event(EventKind::NodeDeleted, SessionState::Connected),
        );
        assert!(drain(&mut m).is_empty(), "superseded watch");
        m.handle_watch(
            Millis(8),
            sent[0].0,
            event(EventKind::NodeDeleted, SessionState::Connected),
        );
        assert_eq!(drain(&mut m).len(), 1);
    }
}
