//! Routing connections and what reaches clients: links going down and coming back
//! ([`Network`]), sessions timing out at the service (the [`Ensemble`]'s kernel), messages
//! delivered to a client or held while its link is down, and the session's end reported to
//! its calls and watches ([`Sessions`]).
//!
//! [`Network`]: super::Network
//! [`Ensemble`]: super::Ensemble
//! [`Sessions`]: super::Sessions

use avout::{Error, SessionState};

use super::{ClientMsg, Down, Pending, SESSION_CHECK_WHILE_CLOSING, State, World, nanos, outcome};
use crate::kernel::Fired;
use crate::latency::RequestClass;
use crate::log::{LogEvent, canon_watch};

impl World {
    /// The connection a request or reply was lost with dies, as a TCP connection does: every
    /// call still waiting on it fails with `ConnectionLoss`, whether or not the service has
    /// applied it, and requests still in flight on it are never applied. The client is back
    /// on a new connection of the same session shortly after. Losing one message while the
    /// connection carries on would let a request pipelined behind a lost `sync` read a state
    /// the `sync` was meant to rule out, which ZooKeeper never does.
    pub(super) fn break_connection(&mut self, client: usize) {
        if self.sessions.terminal(client).is_some() {
            return;
        }
        match self.net.state(client) {
            State::Up => {
                let timeout = nanos(self.sessions.timeout(client));
                let back = self.ensemble.reconnect_delay(timeout);
                let until = self.time.clock() + back;
                self.go_down(client, Down::Disconnect, until);
            }
            State::Down { .. } => {
                // Already cut off (a paused client's requests still reach the service): the
                // connection it had dies too, and it comes back when the link does.
                self.net.break_while_down(client);
                self.publish(client, SessionState::Disconnected);
                self.fail_calls(client, &Error::ConnectionLoss);
            }
        }
    }

    pub(super) fn is_live_and_up(&self, client: usize) -> bool {
        self.sessions.is_live(client) && self.net.is_up(client)
    }

    pub(super) fn go_down(&mut self, client: usize, why: Down, until: u64) {
        let now = self.time.clock();
        if self.net.go_down(client, why, now, until) {
            self.publish(client, SessionState::Disconnected);
            self.fail_calls(client, &Error::ConnectionLoss);
        }
        match why {
            Down::Outage => {}
            Down::Disconnect | Down::Pause => {
                let timeout = nanos(self.sessions.timeout(client));
                self.time
                    .schedule(now + timeout, Pending::SessionCheck { client, since: now });
                self.time
                    .schedule(until, Pending::LinkUp { client, since: now });
            }
        }
    }

    pub(super) fn link_up(&mut self, client: usize) {
        let State::Down { why, .. } = self.net.state(client) else {
            return;
        };
        if self.sessions.terminal(client).is_some() {
            self.net.come_up(client);
            return;
        }
        if let Some(until) = self.ensemble.outage_until()
            && why != Down::Outage
        {
            // Back from a disconnect or a pause into an outage: still cut off.
            self.go_down(client, Down::Outage, until);
            return;
        }
        self.net.come_up(client);
        let session = self.sessions.id(client);
        if self.sessions.server_expired(client) || !self.ensemble.kernel().is_alive(session) {
            self.terminate(client, SessionState::Expired);
            return;
        }
        if why != Down::Pause {
            self.reconnect(client);
            self.publish(client, SessionState::Connected);
        }
        let held = self.net.take_held(client);
        for (epoch, msg) in held {
            // Held across a broken connection: persistent watches never hear of it.
            self.deliver(client, epoch, msg, why != Down::Pause);
        }
    }

    /// The client is back on a (possibly new) connection: with several servers, to any of
    /// them, and the session moves there.
    pub(super) fn reconnect(&mut self, client: usize) {
        let session = self.sessions.id(client);
        if !self.ensemble.is_ensemble() || !self.ensemble.kernel().is_alive(session) {
            return;
        }
        let server = self.ensemble.reconnect(client);
        self.attach_to(client, server);
    }

    /// Connects `client`'s session to `server` (see [`Ensemble::attach`](super::Ensemble)).
    pub(super) fn attach_to(&mut self, client: usize, server: u8) {
        let session = self.sessions.id(client);
        let events = self.ensemble.attach(client, session, server);
        self.route(events);
    }

    pub(super) fn session_check(&mut self, client: usize, since: u64) {
        let silent = match self.net.state(client) {
            _ if since == SESSION_CHECK_WHILE_CLOSING => true,
            State::Down {
                why: Down::Disconnect | Down::Pause,
                since: s,
                ..
            } => s == since,
            _ => false,
        };
        if silent && self.ensemble.kernel().is_alive(self.sessions.id(client)) {
            self.timer("session-timeout");
            self.expire(client);
        }
    }

    pub(super) fn expire(&mut self, client: usize) {
        let session = self.sessions.id(client);
        let now_ms = self.time.now_ms();
        let events = self.ensemble.kernel_mut().expire_session(now_ms, session);
        self.route(events);
        self.arm_follower();
        self.sessions.mark_server_expired(client);
        if self.is_live_and_up(client) {
            self.send_to_client(client, ClientMsg::Expired);
        }
    }

    pub(super) fn route(&mut self, events: Vec<Fired>) {
        for fired in events {
            if let Some(client) = self.sessions.client_of(fired.session) {
                self.send_to_client(client, ClientMsg::Event(fired.event));
            }
        }
    }

    pub(super) fn send_to_client(&mut self, client: usize, msg: ClientMsg) {
        let (at, epoch) = self.net.send_to_client(client, self.time.clock());
        self.time
            .schedule(at, Pending::ToClient { client, epoch, msg });
    }

    /// Sends the reply to a request of `class`, after its service time (see
    /// [`Network::send_reply`](super::network::Network)).
    pub(super) fn send_reply(&mut self, client: usize, msg: ClientMsg, class: RequestClass) {
        let (at, epoch) = self.net.send_reply(client, self.time.clock(), class);
        self.time
            .schedule(at, Pending::ToClient { client, epoch, msg });
    }

    pub(super) fn at_client(&mut self, client: usize, epoch: u64, msg: ClientMsg) {
        if self.sessions.terminal(client).is_some() {
            return;
        }
        if !self.net.is_up(client) {
            self.net.hold(client, epoch, msg);
            return;
        }
        self.deliver(client, epoch, msg, false);
    }

    fn deliver(&mut self, client: usize, epoch: u64, msg: ClientMsg, held: bool) {
        let t = self.time.clock();
        let current = epoch == self.net.epoch(client);
        match msg {
            ClientMsg::Reply { xid, result } => {
                if !current {
                    self.log.dropped(t, client, xid);
                    return;
                }
                let Some(call) = self.sessions.take_call(client, xid) else {
                    return;
                };
                self.log_reply(client, xid, outcome(&result));
                let close = call.is_close();
                call.complete(result, self.sessions.watches_mut(client));
                if close {
                    self.terminate(client, SessionState::Closed);
                }
            }
            ClientMsg::Event(event) => {
                self.log.push_with(
                    |h| canon_watch(h, t, client, event.kind, &event.path),
                    || LogEvent::Watch {
                        t,
                        client,
                        kind: event.kind,
                        path: event.path.clone(),
                    },
                );
                self.sessions
                    .watches_mut(client)
                    .fire(event, held || !current);
                #[cfg(madsim)]
                self.after_event(client);
            }
            ClientMsg::Expired => self.terminate(client, SessionState::Expired),
        }
    }

    pub(super) fn publish(&mut self, client: usize, state: SessionState) {
        if !self.sessions.publish(client, state) {
            return;
        }
        let t = self.time.clock();
        self.log.push(LogEvent::State { t, client, state }, |_| {});
        if !state.is_terminal() {
            self.sessions.watches_mut(client).tell(state);
        }
    }

    /// The client learns that its session is over: every call fails with the terminal
    /// error, every watch fires with the session event, later calls fail at once.
    pub(super) fn terminate(&mut self, client: usize, state: SessionState) {
        if self.sessions.terminal(client).is_some() {
            return;
        }
        if state == SessionState::Expired {
            self.publish(client, SessionState::Disconnected);
        }
        self.sessions.end(client, state);
        self.publish(client, state);
        let error = state.terminal_error().expect("terminal state has an error");
        self.fail_calls(client, &error);
        self.net.take_held(client);
        self.sessions.watches_mut(client).end(state);
    }
}
