//! The ensemble: which server each client is connected to, what each server can do, and the
//! faults that only an ensemble has (partitions, elections, moved sessions, frozen client
//! processes, stalled disks).
//!
//! The kernel holds the committed state (what the leader serves) and one lagging replica
//! per server; server `s` serves reads from replica `s` unless it leads. Which server leads
//! is the world's business: after an election the new leader's replica has caught up (ZAB
//! elects a server with every committed transaction), and so has the old leader's.

use std::time::Duration;

use avout::{Error, SessionState};

use super::{ClientMsg, Down, OldConn, Pending, World, nanos};
use crate::kernel::Server;
use crate::log::LogEvent;
use crate::{Cut, FaultKind};

impl World {
    /// Whether the run has more than one server.
    pub(super) fn is_ensemble(&self) -> bool {
        self.servers > 1
    }

    /// The server `client` is connected to (0 with one server).
    pub(crate) fn server_of(&self, client: usize) -> u8 {
        self.clients[client].server
    }

    /// The server that leads now (0 with one server).
    pub(crate) fn leader(&self) -> u8 {
        self.leader
    }

    pub(super) fn is_cut_off(&self, server: u8) -> bool {
        self.is_ensemble()
            && self
                .cut_off
                .get(usize::from(server))
                .is_some_and(Option::is_some)
    }

    /// The kernel replica server `s` reads from.
    fn role(&self, s: u8) -> Server {
        if s == self.leader {
            Server::Leader
        } else {
            Server::Follower(s)
        }
    }

    /// Connects `client`'s session to `server` (its replica catches up first, so the session
    /// never goes back in time).
    pub(super) fn attach_to(&mut self, client: usize, server: u8) {
        let session = self.clients[client].session;
        let role = if self.is_ensemble() {
            self.clients[client].server = server;
            self.role(server)
        } else {
            Server::Leader
        };
        let events = self.kernel.attach(session, role);
        self.route(events);
    }

    /// A server a reconnecting client reaches: any that is not cut off, other than `avoid`
    /// when there is a choice.
    fn pick_server(&mut self, avoid: Option<u8>) -> u8 {
        let open = self.open_servers(avoid);
        if open.is_empty() {
            return self.leader;
        }
        let i = self.reconnects.below(open.len() as u64);
        open[usize::try_from(i).expect("small")]
    }

    /// The servers a client can reach: not cut off, other than `avoid`.
    fn open_servers(&self, avoid: Option<u8>) -> Vec<u8> {
        (0..self.servers)
            .filter(|&s| !self.is_cut_off(s) && Some(s) != avoid)
            .collect()
    }

    /// The server a new session connects to: any that is not cut off.
    pub(super) fn place(&mut self) -> u8 {
        let open = self.open_servers(None);
        if open.is_empty() {
            return self.leader;
        }
        let i = self.placement.below(open.len() as u64);
        open[usize::try_from(i).expect("small")]
    }

    /// The client is back on a (possibly new) connection: with several servers, to any of
    /// them, and the session moves there.
    pub(super) fn reconnect(&mut self, client: usize) {
        if !self.is_ensemble() || !self.kernel.is_alive(self.clients[client].session) {
            return;
        }
        let avoid = self.clients[client].avoid.take();
        let server = self.pick_server(avoid);
        self.clients[client].stuck = false;
        self.attach_to(client, server);
    }

    /// Whether a request from `client` must wait for the leader, which its server cannot
    /// reach: then it is held (dropped, since the server drops the connection when it
    /// notices) and so is everything after it.
    pub(super) fn held_by_cut(&mut self, client: usize, needs_leader: bool) -> bool {
        if self.no_quorum && needs_leader {
            // Nothing commits: the request waits, and so does everything after it, until the
            // leader steps down and every connection breaks with it.
            self.clients[client].stuck = true;
        }
        if self.no_quorum && self.clients[client].stuck {
            return true;
        }
        let c_server = self.clients[client].server;
        if !self.is_cut_off(c_server) || c_server == self.leader {
            return false;
        }
        if needs_leader {
            self.clients[client].stuck = true;
        }
        let stuck = self.clients[client].stuck;
        if stuck && self.noticed[usize::from(c_server)] {
            // The server already knows it is cut off: it drops the connection at once.
            self.clients[client].avoid = Some(c_server);
            self.break_connection(client);
        }
        stuck
    }

    pub(super) fn fire_partition(&mut self, cut: Cut, duration: Duration) {
        if !self.is_ensemble() {
            return;
        }
        let now = self.clock;
        match cut {
            Cut::Client { client, one_way } => {
                if !self.is_live_and_up(client) {
                    return;
                }
                self.count_lasting(FaultKind::Partition, Some(client), Some(duration));
                let c = &mut self.clients[client];
                c.avoid = Some(c.server);
                if one_way {
                    let epoch = c.epoch;
                    c.old_conns.insert(epoch, OldConn::Deaf);
                }
                // The client gives up on its server after `duration` and tries another.
                self.go_down(client, Down::Disconnect, now + nanos(duration));
            }
            Cut::Server { server } => {
                let server = server % self.servers;
                if self.is_cut_off(server) || self.outage_until.is_some() {
                    return;
                }
                self.count_lasting(FaultKind::Partition, None, Some(duration));
                if server == self.leader {
                    // A leader cut off from its quorum steps down: an election.
                    self.start_election(duration / 4);
                    return;
                }
                let until = now + nanos(duration);
                self.cut_off[usize::from(server)] = Some(until);
                // A follower notices the leader is gone after a while (syncLimit ticks);
                // until then it serves reads from what it has.
                let notice = nanos(self.config.session_timeout) / 3;
                self.schedule(
                    now + notice.min(nanos(duration)),
                    Pending::Notice { server },
                );
                self.schedule(until, Pending::Heal { server });
                self.check_quorum();
            }
        }
    }

    /// With a majority cut off, the leader has no quorum. Until it notices (as a cut-off
    /// follower does, or when the first server is back, if sooner) it commits nothing: writes
    /// and `sync`s wait, while every server, the cut-off followers included until they notice,
    /// still serves reads from what it has. Then it steps down (an election that cannot end
    /// before a server is back), and the waiting calls fail with `ConnectionLoss`, unapplied.
    fn check_quorum(&mut self) {
        let reachable = (0..self.servers).filter(|&s| !self.is_cut_off(s)).count();
        if self.no_quorum || reachable > usize::from(self.servers) / 2 {
            return;
        }
        let Some(back) = self.cut_off.iter().flatten().copied().min() else {
            return;
        };
        self.timer("quorum-lost");
        self.no_quorum = true;
        let notice = self.clock + nanos(self.config.session_timeout) / 3;
        self.schedule(notice.min(back), Pending::StepDown);
    }

    /// The leader without a quorum gives up leading. The election ends a little after the
    /// first cut-off server is back (at once if one already is); a real leader whose quorum
    /// returned within its sync limit would carry on, which the simulator does not model.
    pub(super) fn step_down(&mut self) {
        if !self.no_quorum {
            return;
        }
        self.no_quorum = false;
        self.timer("leader-steps-down");
        let back = self
            .cut_off
            .iter()
            .flatten()
            .copied()
            .min()
            .unwrap_or(self.clock);
        let window = back.saturating_sub(self.clock) + nanos(self.config.session_timeout) / 8;
        for client in 0..self.clients.len() {
            // A client that is not up (a frozen one) finds its connection dead on waking: its
            // waiting calls fail then, not never.
            if self.clients[client].stuck && !self.is_live_and_up(client) {
                self.break_connection(client);
            }
        }
        if let Some(until) = self.outage_until {
            // Already down (an outage): the election runs on past it.
            let until = until.max(self.clock + window);
            self.outage_until = Some(until);
            self.electing = true;
            self.schedule(until, Pending::OutageEnd);
            return;
        }
        self.start_election(Duration::from_nanos(window));
    }

    /// A cut-off follower notices: it drops its clients, which reconnect elsewhere.
    pub(super) fn notice_cut_off(&mut self, server: u8) {
        if !self.is_cut_off(server) {
            return;
        }
        self.timer("follower-notices");
        self.noticed[usize::from(server)] = true;
        for client in 0..self.clients.len() {
            let c = &self.clients[client];
            if c.server != server || c.terminal.is_some() {
                continue;
            }
            self.clients[client].avoid = Some(server);
            // Its connection dies whether the client is there to see it or not (a paused
            // client finds it dead on waking, and reconnects elsewhere).
            self.break_connection(client);
        }
    }

    pub(super) fn heal(&mut self, server: u8) {
        if self.cut_off[usize::from(server)].is_some_and(|u| u <= self.clock) {
            self.timer("partition-heals");
            self.cut_off[usize::from(server)] = None;
            self.noticed[usize::from(server)] = false;
            self.arm_follower_of(server);
        }
    }

    /// The leader goes away; nobody serves for `duration`, then another server leads.
    pub(super) fn start_election(&mut self, duration: Duration) {
        if self.outage_until.is_some() || !self.is_ensemble() {
            return;
        }
        let until = self.clock + nanos(duration);
        self.outage_until = Some(until);
        self.electing = true;
        for client in 0..self.clients.len() {
            if self.is_live_and_up(client) {
                self.go_down(client, Down::Outage, until);
            }
        }
        self.schedule(until, Pending::OutageEnd);
    }

    /// The election is over: a server that was not cut off leads, with every committed
    /// transaction; the old leader rejoins as a follower, also up to date.
    pub(super) fn elect(&mut self) {
        self.electing = false;
        let old = self.leader;
        let new = self.pick_server(Some(old));
        self.leader = new;
        self.timer("leader-elected");
        for s in [old, new] {
            let events = self.kernel.sync_follower_of(s);
            self.route(events);
        }
        // Sessions stay where they are; what their server reads from changed.
        for client in 0..self.clients.len() {
            let server = self.clients[client].server;
            if self.kernel.is_alive(self.clients[client].session) {
                self.attach_to(client, server);
            }
        }
    }

    pub(super) fn fire_session_moved(&mut self, client: usize) {
        if !self.is_ensemble() || !self.is_live_and_up(client) {
            return;
        }
        self.count(FaultKind::SessionMoved, Some(client));
        // Requests still on their way to the old server are refused there; calls whose
        // request it already applied lose their reply with the old connection.
        let on_the_way = self.queue.requests_on(client, self.clients[client].epoch);
        let c = &mut self.clients[client];
        c.old_conns.insert(c.epoch, OldConn::Moved);
        c.epoch += 1;
        let lost: Vec<u64> = c
            .calls
            .keys()
            .copied()
            .filter(|xid| !on_the_way.contains(xid))
            .collect();
        for xid in lost {
            if let Some(call) = self.clients[client].calls.remove(&xid) {
                let t = self.clock;
                self.log.push(
                    LogEvent::Reply {
                        t,
                        client,
                        xid,
                        outcome: Error::ConnectionLoss.name().into(),
                    },
                    |_| {},
                );
                call.fail(Error::ConnectionLoss);
            }
        }
        self.publish(client, SessionState::Disconnected);
        self.publish(client, SessionState::Connected);
        let from = self.clients[client].server;
        self.clients[client].avoid = Some(from);
        self.reconnect(client);
    }

    /// A request on a connection the session moved away from: refused, not applied.
    pub(super) fn refuse_moved(&mut self, client: usize, xid: u64) {
        self.send_to_client(
            client,
            ClientMsg::Reply {
                xid,
                result: Err(Error::SessionMoved),
            },
        );
    }

    pub(super) fn fire_freeze(&mut self, client: usize, duration: Duration) {
        if !self.is_live_and_up(client) {
            return;
        }
        self.count_lasting(FaultKind::ClientFreeze, Some(client), Some(duration));
        let until = self.clock + nanos(duration);
        self.go_down(client, Down::Pause, until);
        let c = &mut self.clients[client];
        c.frozen_until = Some(until);
        if let Some(gate) = &c.gate {
            gate.freeze();
        }
        // A client of a madsim node: the whole node stops, whatever spawned its tasks.
        #[cfg(madsim)]
        if let Some(node) = c.node {
            self.hold_node(node, until);
        }
        self.schedule(until, Pending::Thaw { client });
    }

    /// The process wakes, unless another of its sessions froze it for longer.
    pub(super) fn thaw(&mut self, client: usize) {
        let now = self.clock;
        let Some(gate) = self.clients[client].gate.clone() else {
            return;
        };
        self.clients[client].frozen_until = None;
        let still = self.clients.iter().any(|c| {
            c.frozen_until.is_some_and(|u| u > now)
                && c.gate.as_ref().is_some_and(|g| g.same(&gate))
        });
        if !still {
            self.timer("thaw");
            gate.thaw();
        }
    }

    pub(super) fn fire_slow_disk(&mut self, duration: Duration) {
        if self.stall_until.is_some_and(|u| u > self.clock) {
            return;
        }
        self.count_lasting(FaultKind::SlowDisk, None, Some(duration));
        self.stall_until = Some(self.clock + nanos(duration));
    }

    /// When the stalled disk lets requests through again, if it is stalled now.
    pub(super) fn stalled_until(&self) -> Option<u64> {
        self.stall_until.filter(|&u| u > self.clock)
    }
}
