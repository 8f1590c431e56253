//! Connections and sessions as clients see them: links going down and coming back, sessions
//! timing out, messages delivered to a client (or held while its link is down), and the
//! session's end reported to its calls and watches.

use avout::{Error, SessionState};

use super::{ClientMsg, Down, Link, Pending, SESSION_CHECK_WHILE_CLOSING, World, nanos, outcome};
use crate::kernel::Fired;
use crate::log::{LogEvent, canon_watch};

impl World {
    /// The connection a request or reply was lost with dies, as a TCP connection does: every
    /// call still waiting on it fails with `ConnectionLoss`, whether or not the service has
    /// applied it, and requests still in flight on it are never applied. The client is back
    /// on a new connection of the same session shortly after. Losing one message while the
    /// connection carries on would let a request pipelined behind a lost `sync` read a state
    /// the `sync` was meant to rule out, which ZooKeeper never does.
    pub(super) fn break_connection(&mut self, client: usize) {
        let c = &self.clients[client];
        if c.terminal.is_some() {
            return;
        }
        match c.link {
            Link::Up => {
                let timeout = nanos(c.timeout);
                let back = timeout / 100 * self.reconnects.between(2, 10);
                self.go_down(client, Down::Disconnect, self.clock + back);
            }
            Link::Down { why, since, until } => {
                // Already cut off (a paused client's requests still reach the service): the
                // connection it had dies too, and it comes back when the link does.
                let c = &mut self.clients[client];
                c.epoch += 1;
                if why == Down::Pause {
                    c.link = Link::Down {
                        why: Down::Disconnect,
                        since,
                        until,
                    };
                }
                self.publish(client, SessionState::Disconnected);
                self.fail_calls(client, &Error::ConnectionLoss);
            }
        }
    }

    pub(super) fn is_live_and_up(&self, client: usize) -> bool {
        let c = &self.clients[client];
        c.terminal.is_none() && !c.closing && c.link == Link::Up
    }

    pub(super) fn go_down(&mut self, client: usize, why: Down, until: u64) {
        let now = self.clock;
        let c = &mut self.clients[client];
        c.link = Link::Down {
            why,
            since: now,
            until,
        };
        if why != Down::Pause {
            c.epoch += 1;
            self.publish(client, SessionState::Disconnected);
            self.fail_calls(client, &Error::ConnectionLoss);
        }
        match why {
            Down::Outage => {}
            Down::Disconnect | Down::Pause => {
                let timeout = nanos(self.clients[client].timeout);
                self.schedule(now + timeout, Pending::SessionCheck { client, since: now });
                self.schedule(until, Pending::LinkUp { client, since: now });
            }
        }
    }

    pub(super) fn link_up(&mut self, client: usize) {
        let Link::Down { why, .. } = self.clients[client].link else {
            return;
        };
        if self.clients[client].terminal.is_some() {
            self.clients[client].link = Link::Up;
            return;
        }
        if let Some(until) = self.outage_until
            && why != Down::Outage
        {
            // Back from a disconnect or a pause into an outage: still cut off.
            self.go_down(client, Down::Outage, until);
            return;
        }
        self.clients[client].link = Link::Up;
        let session = self.clients[client].session;
        if self.clients[client].server_expired || !self.kernel.is_alive(session) {
            self.terminate(client, SessionState::Expired);
            return;
        }
        if why != Down::Pause {
            self.reconnect(client);
            self.publish(client, SessionState::Connected);
        }
        let held = std::mem::take(&mut self.clients[client].held);
        for (epoch, msg) in held {
            // Held across a broken connection: persistent watches never hear of it.
            self.deliver(client, epoch, msg, why != Down::Pause);
        }
    }

    pub(super) fn session_check(&mut self, client: usize, since: u64) {
        let c = &self.clients[client];
        let silent = match c.link {
            _ if since == SESSION_CHECK_WHILE_CLOSING => true,
            Link::Down {
                why: Down::Disconnect | Down::Pause,
                since: s,
                ..
            } => s == since,
            _ => false,
        };
        if silent && self.kernel.is_alive(c.session) {
            self.timer("session-timeout");
            self.expire(client);
        }
    }

    pub(super) fn expire(&mut self, client: usize) {
        let session = self.clients[client].session;
        let events = self.kernel.expire_session(self.now_ms(), session);
        self.route(events);
        self.arm_follower();
        let c = &mut self.clients[client];
        c.server_expired = true;
        if c.terminal.is_none() && c.link == Link::Up && !c.closing {
            self.send_to_client(client, ClientMsg::Expired);
        }
    }

    pub(super) fn route(&mut self, events: Vec<Fired>) {
        for fired in events {
            if let Some(client) = self.client_of(fired.session) {
                self.send_to_client(client, ClientMsg::Event(fired.event));
            }
        }
    }

    pub(super) fn send_to_client(&mut self, client: usize, msg: ClientMsg) {
        let latency = self.latency();
        let c = &mut self.clients[client];
        let at = (self.clock + latency).max(c.to_client_last);
        c.to_client_last = at;
        let epoch = c.epoch;
        self.schedule(at, Pending::ToClient { client, epoch, msg });
    }

    pub(super) fn at_client(&mut self, client: usize, epoch: u64, msg: ClientMsg) {
        if self.clients[client].terminal.is_some() {
            return;
        }
        if self.clients[client].link != Link::Up {
            self.clients[client].held.push_back((epoch, msg));
            return;
        }
        self.deliver(client, epoch, msg, false);
    }

    pub(super) fn deliver(&mut self, client: usize, epoch: u64, msg: ClientMsg, held: bool) {
        let t = self.clock;
        match msg {
            ClientMsg::Reply { xid, result } => {
                if epoch != self.clients[client].epoch {
                    self.log.push(
                        LogEvent::Dropped {
                            t,
                            client,
                            xid: Some(xid),
                        },
                        |_| {},
                    );
                    return;
                }
                let Some(call) = self.clients[client].calls.remove(&xid) else {
                    return;
                };
                self.log.push(
                    LogEvent::Reply {
                        t,
                        client,
                        xid,
                        outcome: outcome(&result),
                    },
                    |_| {},
                );
                let close = call.is_close();
                self.complete(client, call, result);
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
                let lost = held || epoch != self.clients[client].epoch;
                self.fire_watches(client, event, lost);
                #[cfg(madsim)]
                self.after_event(client);
            }
            ClientMsg::Expired => self.terminate(client, SessionState::Expired),
        }
    }

    pub(super) fn publish(&mut self, client: usize, state: SessionState) {
        let c = &self.clients[client];
        if c.publisher.current() == state || c.publisher.current().is_terminal() {
            return;
        }
        c.publisher.publish(state);
        let t = self.clock;
        self.log.push(LogEvent::State { t, client, state }, |_| {});
        if !state.is_terminal() {
            self.tell_persistent(client, state);
        }
    }

    /// The client learns that its session is over: every call fails with the terminal
    /// error, every watch fires with the session event, later calls fail at once.
    pub(super) fn terminate(&mut self, client: usize, state: SessionState) {
        if self.clients[client].terminal.is_some() {
            return;
        }
        if state == SessionState::Expired {
            self.publish(client, SessionState::Disconnected);
        }
        self.clients[client].terminal = Some(state);
        self.publish(client, state);
        let error = state.terminal_error().expect("terminal state has an error");
        self.fail_calls(client, &error);
        let c = &mut self.clients[client];
        c.held.clear();
        let watches = std::mem::take(&mut c.watches);
        for (_, set) in watches {
            set.end(state);
        }
    }
}
