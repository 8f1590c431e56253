//! Sessions as their clients hold them: each client's session and the state its handles see,
//! its calls waiting for answers, its watches, and the process it runs in.
//!
//! The service's side of a session (its ephemerals, whether it is alive) is the kernel's;
//! this part is what the client knows, which lags behind: a session the service expired is
//! still live here until the client hears of it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use avout::{Error, SessionId, SessionInfo, SessionState, SessionStatePublisher};

use super::calls::{Call, Message, Waiter, Watches};

/// One client's session.
struct Session {
    id: SessionId,
    timeout: Duration,
    publisher: SessionStatePublisher,
    /// How the session ended, once the client knows.
    terminal: Option<SessionState>,
    /// The client asked to close it.
    closing: bool,
    next_xid: u64,
    /// The calls waiting for an answer, in xid order (a queue rather than a map: there are
    /// few, answered mostly oldest first, and it keeps its buffer between calls).
    calls: VecDeque<(u64, Call)>,
    watches: Watches,
    /// The service expired it (the client may not know yet).
    server_expired: bool,
    /// The process the client runs in, frozen by [`Fault::ClientFreeze`](crate::Fault).
    gate: Option<avout::task::Gate>,
    frozen_until: Option<u64>,
    /// Its process was killed: the session is never closed, it expires.
    crashed: bool,
    /// The madsim node that opened it (not the run's supervisor).
    #[cfg(madsim)]
    node: Option<madsim::task::NodeId>,
}

/// Every client's session, by client index.
#[derive(Default)]
pub(super) struct Sessions {
    clients: Vec<Session>,
    by_session: BTreeMap<SessionId, usize>,
    /// The last id given to a persistent watch.
    watch_ids: u64,
}

impl Sessions {
    /// A new client's session `id`, connected, of the process under `gate`; returns the
    /// client's index.
    pub(super) fn open(
        &mut self,
        id: SessionId,
        timeout: Duration,
        gate: Option<avout::task::Gate>,
        #[cfg(madsim)] node: Option<madsim::task::NodeId>,
    ) -> usize {
        let index = self.clients.len();
        self.clients.push(Session {
            id,
            timeout,
            publisher: SessionStatePublisher::new(SessionState::Connected),
            terminal: None,
            closing: false,
            next_xid: 0,
            calls: VecDeque::new(),
            watches: Watches::default(),
            server_expired: false,
            gate,
            frozen_until: None,
            crashed: false,
            #[cfg(madsim)]
            node,
        });
        self.by_session.insert(id, index);
        index
    }

    /// How many clients there are.
    pub(super) fn len(&self) -> usize {
        self.clients.len()
    }

    pub(super) fn client_of(&self, session: SessionId) -> Option<usize> {
        self.by_session.get(&session).copied()
    }

    pub(super) fn id(&self, client: usize) -> SessionId {
        self.clients[client].id
    }

    pub(super) fn timeout(&self, client: usize) -> Duration {
        self.clients[client].timeout
    }

    pub(super) fn info(&self, client: usize) -> SessionInfo {
        let s = &self.clients[client];
        SessionInfo {
            id: s.id,
            timeout: s.timeout,
        }
    }

    pub(super) fn publisher(&self, client: usize) -> &SessionStatePublisher {
        &self.clients[client].publisher
    }

    /// How the session ended, if the client knows it did.
    pub(super) fn terminal(&self, client: usize) -> Option<SessionState> {
        self.clients[client].terminal
    }

    /// Neither ended nor closing.
    pub(super) fn is_live(&self, client: usize) -> bool {
        let s = &self.clients[client];
        s.terminal.is_none() && !s.closing
    }

    /// Whether the last handle going away should close it: it is live and its process is.
    pub(super) fn wants_close(&self, client: usize) -> bool {
        self.is_live(client) && !self.clients[client].crashed
    }

    /// Why a new call of `client` fails at once, if it does.
    pub(super) fn refusal(&self, client: usize) -> Option<Error> {
        let s = &self.clients[client];
        match s.terminal {
            Some(state) => Some(state.terminal_error().expect("terminal state has an error")),
            None => s.closing.then_some(Error::Closed),
        }
    }

    /// Registers a call carrying `message`; returns its xid. A close marks the session
    /// closing.
    pub(super) fn add_call(&mut self, client: usize, message: &Message, waiter: Waiter) -> u64 {
        let s = &mut self.clients[client];
        s.next_xid += 1;
        s.calls.push_back((s.next_xid, Call::new(message, waiter)));
        if matches!(message, Message::Close) {
            s.closing = true;
        }
        s.next_xid
    }

    pub(super) fn take_call(&mut self, client: usize, xid: u64) -> Option<Call> {
        let calls = &mut self.clients[client].calls;
        let i = calls.binary_search_by_key(&xid, |(x, _)| *x).ok()?;
        calls.remove(i).map(|(_, call)| call)
    }

    /// Every call still waiting, by xid.
    pub(super) fn take_calls(&mut self, client: usize) -> Vec<(u64, Call)> {
        self.clients[client].calls.drain(..).collect()
    }

    /// The calls still waiting except those in `keep`, by xid.
    pub(super) fn take_calls_but(
        &mut self,
        client: usize,
        keep: &BTreeSet<u64>,
    ) -> Vec<(u64, Call)> {
        let calls = &mut self.clients[client].calls;
        let (gone, kept): (Vec<_>, Vec<_>) = calls.drain(..).partition(|(x, _)| !keep.contains(x));
        calls.extend(kept);
        gone
    }

    pub(super) fn watches_mut(&mut self, client: usize) -> &mut Watches {
        &mut self.clients[client].watches
    }

    /// Publishes `state` to the client's handles; returns whether it was news (not the
    /// current state, nor after the end).
    pub(super) fn publish(&mut self, client: usize, state: SessionState) -> bool {
        let p = &self.clients[client].publisher;
        if p.current() == state || p.current().is_terminal() {
            return false;
        }
        p.publish(state);
        true
    }

    /// Records how the session ended; `false` if the client already knew it had.
    pub(super) fn end(&mut self, client: usize, state: SessionState) -> bool {
        let s = &mut self.clients[client];
        if s.terminal.is_some() {
            return false;
        }
        s.terminal = Some(state);
        true
    }

    pub(super) fn mark_server_expired(&mut self, client: usize) {
        self.clients[client].server_expired = true;
    }

    pub(super) fn server_expired(&self, client: usize) -> bool {
        self.clients[client].server_expired
    }

    /// A fresh id for a persistent watch.
    pub(super) fn next_watch_id(&mut self) -> u64 {
        self.watch_ids += 1;
        self.watch_ids
    }

    /// Freezes the client's process until `until`.
    pub(super) fn freeze(&mut self, client: usize, until: u64) {
        let s = &mut self.clients[client];
        s.frozen_until = Some(until);
        if let Some(gate) = &s.gate {
            gate.freeze();
        }
    }

    /// The client's freeze is over: returns its process's gate if no other session of the
    /// process is frozen past `now` (then the process wakes).
    pub(super) fn thaw(&mut self, client: usize, now: u64) -> Option<avout::task::Gate> {
        let gate = self.clients[client].gate.clone()?;
        self.clients[client].frozen_until = None;
        let still = self.clients.iter().any(|s| {
            s.frozen_until.is_some_and(|u| u > now)
                && s.gate.as_ref().is_some_and(|g| g.same(&gate))
        });
        (!still).then_some(gate)
    }

    /// The client's process died; `false` if its session was over, closing, or already
    /// crashed.
    #[cfg(madsim)]
    pub(super) fn crash(&mut self, client: usize) -> bool {
        if !self.wants_close(client) {
            return false;
        }
        self.clients[client].crashed = true;
        true
    }

    /// Whether the client's process died (or let go of its session: detached).
    #[cfg(madsim)]
    pub(super) fn crashed(&self, client: usize) -> bool {
        self.clients[client].crashed
    }

    /// A process takes up the crashed (detached) session again: it runs under `gate`, on
    /// madsim node `node`.
    #[cfg(madsim)]
    pub(super) fn resume(
        &mut self,
        client: usize,
        gate: Option<avout::task::Gate>,
        node: Option<madsim::task::NodeId>,
    ) {
        let s = &mut self.clients[client];
        s.crashed = false;
        s.gate = gate;
        s.node = node;
    }

    /// The clients opened by madsim node `node`.
    #[cfg(madsim)]
    pub(super) fn clients_of(&self, node: madsim::task::NodeId) -> Vec<usize> {
        (0..self.clients.len())
            .filter(|&c| self.clients[c].node == Some(node))
            .collect()
    }

    /// The node of the client's process, if a madsim node opened it.
    #[cfg(madsim)]
    pub(super) fn node(&self, client: usize) -> Option<madsim::task::NodeId> {
        self.clients[client].node
    }
}

#[cfg(test)]
mod tests {
    use avout::{Request, Stat};
    use tokio::sync::oneshot;

    use super::*;

    /// Opens session `id` of a process under `gate` (and of no madsim node).
    fn open(s: &mut Sessions, id: i64, gate: Option<avout::task::Gate>) -> usize {
        #[cfg(not(madsim))]
        let index = s.open(SessionId(id), Duration::from_secs(5), gate);
        #[cfg(madsim)]
        let index = s.open(SessionId(id), Duration::from_secs(5), gate, None);
        index
    }

    fn sessions(n: i64) -> Sessions {
        let mut s = Sessions::default();
        for id in 0..n {
            open(&mut s, 100 + id, None);
        }
        s
    }

    fn get(path: &str, watch: bool) -> Message {
        Message::Request(Request::GetData {
            path: path.into(),
            watch,
        })
    }

    #[test]
    fn clients_are_found_by_session_and_numbered_in_order() {
        let s = sessions(3);
        assert_eq!(s.len(), 3);
        assert_eq!(s.client_of(SessionId(101)), Some(1));
        assert_eq!(s.client_of(SessionId(7)), None);
        assert_eq!(s.info(2).id, SessionId(102));
        assert_eq!(s.publisher(0).current(), SessionState::Connected);
    }

    #[test]
    fn calls_are_numbered_and_a_close_refuses_what_follows() {
        let mut s = sessions(1);
        let (tx, _rx) = oneshot::channel();
        assert_eq!(s.add_call(0, &get("/a", false), Waiter::Request(tx)), 1);
        assert!(s.refusal(0).is_none());
        let (tx, _rx) = oneshot::channel();
        assert_eq!(s.add_call(0, &Message::Close, Waiter::Close(tx)), 2);
        assert_eq!(s.refusal(0), Some(Error::Closed));
        assert!(!s.is_live(0) && !s.wants_close(0));
        let keep = BTreeSet::from([2]);
        let lost: Vec<u64> = s
            .take_calls_but(0, &keep)
            .into_iter()
            .map(|(x, _)| x)
            .collect();
        assert_eq!(lost, [1]);
        assert!(s.take_call(0, 2).is_some_and(|c| c.is_close()));
        assert!(s.take_calls(0).is_empty());
    }

    #[test]
    fn an_ended_session_refuses_with_its_terminal_error_and_publishes_nothing_more() {
        let mut s = sessions(1);
        assert!(s.publish(0, SessionState::Disconnected));
        assert!(!s.publish(0, SessionState::Disconnected), "no news");
        assert!(s.end(0, SessionState::Expired));
        assert!(!s.end(0, SessionState::Closed), "it ended once");
        assert!(s.publish(0, SessionState::Expired));
        assert!(
            !s.publish(0, SessionState::Connected),
            "nothing after the end"
        );
        assert_eq!(s.refusal(0), Some(Error::SessionExpired));
    }

    #[test]
    fn an_answer_arms_the_watch_its_read_asked_for() {
        let mut s = sessions(1);
        let (tx, rx) = oneshot::channel();
        let xid = s.add_call(0, &get("/w", true), Waiter::Request(tx));
        let call = s.take_call(0, xid).unwrap();
        let reply = avout::Reply::Data {
            data: b"x".to_vec(),
            stat: Stat::default(),
        };
        call.complete(Ok(Some(reply)), s.watches_mut(0));
        let (_, watch) = futures::executor::block_on(rx).unwrap().unwrap();
        let watch = watch.expect("the read armed a watch");
        s.watches_mut(0).fire(
            avout::WatchedEvent {
                kind: avout::EventKind::NodeDataChanged,
                path: "/w".into(),
                state: SessionState::Connected,
            },
            false,
        );
        let event = futures::executor::block_on(watch);
        assert_eq!(event.kind, avout::EventKind::NodeDataChanged);
    }

    #[test]
    fn a_process_wakes_when_its_last_frozen_session_thaws() {
        let mut s = Sessions::default();
        let gate = avout::task::Gate::new();
        for id in 0..2 {
            open(&mut s, id, Some(gate.clone()));
        }
        s.freeze(0, 100);
        s.freeze(1, 200);
        assert!(s.thaw(0, 100).is_none(), "session 1 holds it until 200");
        assert!(s.thaw(1, 200).is_some_and(|g| g.same(&gate)));
        assert!(
            sessions(1).thaw(0, 0).is_none(),
            "no process, nothing to wake"
        );
    }
}
