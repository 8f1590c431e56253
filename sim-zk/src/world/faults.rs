//! Routing a fault as it fires: what it does to the links ([`Network`]), the servers
//! ([`Ensemble`]) and the sessions ([`Sessions`]), counted and logged by the [`FaultPlan`].
//!
//! [`Network`]: super::Network
//! [`Ensemble`]: super::Ensemble
//! [`Sessions`]: super::Sessions
//! [`FaultPlan`]: super::FaultPlan

use std::collections::BTreeSet;
use std::time::Duration;

use avout::{Error, SessionState};

use super::network::OldConn;
use super::{Down, Pending, World, nanos};
use crate::kernel::Server;
use crate::log::LogEvent;
use crate::{Cut, Fault, FaultKind};

impl World {
    pub(super) fn fire_fault(&mut self, fault: Fault) {
        let now = self.time.clock();
        if let Some(client) = fault.client() {
            assert!(
                client < self.sessions.len(),
                "{fault:?} names client {client}, but the run has {} clients",
                self.sessions.len()
            );
        }
        match fault {
            Fault::RequestLost { client } => self.plan.arm_request_loss(client),
            Fault::ReplyLost { client } => self.plan.arm_reply_loss(client),
            Fault::Disconnect { client, duration } => {
                if self.is_live_and_up(client) {
                    self.count_lasting(FaultKind::Disconnect, Some(client), Some(duration));
                    self.go_down(client, Down::Disconnect, now + nanos(duration));
                }
            }
            Fault::Pause { client, duration } => {
                if self.is_live_and_up(client) {
                    self.count_lasting(FaultKind::Pause, Some(client), Some(duration));
                    self.go_down(client, Down::Pause, now + nanos(duration));
                }
            }
            Fault::ExpireSession { client } => {
                if self.ensemble.kernel().is_alive(self.sessions.id(client)) {
                    self.count(FaultKind::SessionExpiry, Some(client));
                    self.expire(client);
                }
            }
            Fault::StaleReads { client, duration } => self.fire_stale_reads(client, duration),
            Fault::Outage { duration } => {
                if self.ensemble.outage_until().is_none() {
                    self.count_lasting(FaultKind::Outage, None, Some(duration));
                    self.take_service_down(now + nanos(duration), false);
                }
            }
            Fault::Partition { cut, duration } => self.fire_partition(cut, duration),
            Fault::LeaderElection { duration } => {
                if self.ensemble.is_ensemble() && self.ensemble.outage_until().is_none() {
                    self.count_lasting(FaultKind::LeaderElection, None, Some(duration));
                    self.start_election(duration);
                }
            }
            Fault::SessionMoved { client } => self.fire_session_moved(client),
            Fault::ClientFreeze { client, duration } => self.fire_freeze(client, duration),
            Fault::SlowDisk { duration } => {
                if self.ensemble.stall(now, now + nanos(duration)) {
                    self.count_lasting(FaultKind::SlowDisk, None, Some(duration));
                }
            }
            Fault::LeaderLag { duration } => {
                let until = now + nanos(duration);
                if self.ensemble.lag_leader(until) {
                    self.count_lasting(FaultKind::LeaderLag, None, Some(duration));
                    self.reseat_leaders_clients();
                    self.time.schedule(until, Pending::LeaderLagEnd);
                }
            }
        }
    }

    /// The leader's lag is over, if it is due: its clients read the committed state again.
    pub(super) fn end_leader_lag(&mut self) {
        if self.ensemble.end_leader_lag(self.time.clock()) {
            self.timer("leader-catches-up");
            self.reseat_leaders_clients();
        }
    }

    /// The live sessions connected to the leader read from what it now reads from (its
    /// replica catches up first, so none of them goes back in time).
    fn reseat_leaders_clients(&mut self) {
        let leader = self.ensemble.leader();
        for client in 0..self.sessions.len() {
            if self.ensemble.server_of(client) == leader
                && self.ensemble.kernel().is_alive(self.sessions.id(client))
            {
                self.attach_to(client, leader);
            }
        }
    }

    pub(super) fn count(&mut self, kind: FaultKind, client: Option<usize>) {
        self.count_lasting(kind, client, None);
    }

    /// Counts and logs a fault; the log keeps its `duration`.
    fn count_lasting(
        &mut self,
        kind: FaultKind,
        client: Option<usize>,
        duration: Option<Duration>,
    ) {
        self.plan.count(kind);
        let t = self.time.clock();
        let duration = duration.map(nanos);
        self.log.push(
            LogEvent::Fault {
                t,
                kind,
                client,
                duration,
            },
            |_| {},
        );
    }

    /// Nobody serves until `until` (then an election, if `electing`): every live client's
    /// link goes down with the service.
    fn take_service_down(&mut self, until: u64, electing: bool) {
        self.ensemble.go_down(until, electing);
        for client in 0..self.sessions.len() {
            if self.is_live_and_up(client) {
                self.go_down(client, Down::Outage, until);
            }
        }
        self.time.schedule(until, Pending::OutageEnd);
    }

    /// The outage is over, if it is due: an election ends with a new leader, and every
    /// client it held is back.
    pub(super) fn end_outage(&mut self) {
        if !self.ensemble.come_up(self.time.clock()) {
            return;
        }
        self.timer("outage-end");
        if self.ensemble.is_electing() {
            self.elect();
        }
        for client in 0..self.sessions.len() {
            if matches!(
                self.net.state(client),
                super::State::Down {
                    why: Down::Outage,
                    ..
                }
            ) {
                self.link_up(client);
            }
        }
    }

    /// The session moves to a lagging follower for `duration` (with one server, the lagging
    /// follower the run was given for it).
    fn fire_stale_reads(&mut self, client: usize, duration: Duration) {
        let now = self.time.clock();
        let session = self.sessions.id(client);
        let fresh =
            self.ensemble.kernel().is_alive(session) && self.ensemble.stale_until(client).is_none();
        if self.ensemble.is_ensemble() {
            if !fresh {
                return;
            }
            let Some(server) = self.ensemble.stalest_follower() else {
                return;
            };
            self.count_lasting(FaultKind::StaleReads, Some(client), Some(duration));
            let until = now + nanos(duration);
            self.ensemble.set_stale_until(client, Some(until));
            self.attach_to(client, server);
            self.time.schedule(until, Pending::StaleEnd { client });
            return;
        }
        if !self.ensemble.kernel().has_follower() {
            panic!(
                "a StaleReads fault needs a lagging follower: configure the run with \
                 Builder::follower_lag or a stale_reads rate"
            );
        }
        if fresh {
            self.count_lasting(FaultKind::StaleReads, Some(client), Some(duration));
            let until = now + nanos(duration);
            self.ensemble.set_stale_until(client, Some(until));
            let events = self
                .ensemble
                .kernel_mut()
                .attach(session, Server::Follower(0));
            self.route(events);
            self.time.schedule(until, Pending::StaleEnd { client });
        }
    }

    fn fire_partition(&mut self, cut: Cut, duration: Duration) {
        if !self.ensemble.is_ensemble() {
            return;
        }
        let now = self.time.clock();
        match cut {
            Cut::Client { client, one_way } => {
                if !self.is_live_and_up(client) {
                    return;
                }
                self.count_lasting(FaultKind::Partition, Some(client), Some(duration));
                let server = self.ensemble.server_of(client);
                self.ensemble.avoid(client, server);
                if one_way {
                    self.net.leave(client, OldConn::Deaf);
                }
                // The client gives up on its server after `duration` and tries another.
                self.go_down(client, Down::Disconnect, now + nanos(duration));
            }
            Cut::Server { server } => {
                let server = server % self.ensemble.servers();
                if self.ensemble.is_cut_off(server) || self.ensemble.outage_until().is_some() {
                    return;
                }
                self.count_lasting(FaultKind::Partition, None, Some(duration));
                if server == self.ensemble.leader() {
                    // A leader cut off from its quorum steps down: an election.
                    self.start_election(duration / 4);
                    return;
                }
                let until = now + nanos(duration);
                self.ensemble.cut(server, until);
                // A follower notices the leader is gone after a while (syncLimit ticks);
                // until then it serves reads from what it has.
                let notice = nanos(self.config.session_timeout) / 3;
                self.time.schedule(
                    now + notice.min(nanos(duration)),
                    Pending::Notice { server },
                );
                self.time.schedule(until, Pending::Heal { server });
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
        let Some(back) = self.ensemble.lose_quorum() else {
            return;
        };
        self.timer("quorum-lost");
        let notice = self.time.clock() + nanos(self.config.session_timeout) / 3;
        self.time.schedule(notice.min(back), Pending::StepDown);
    }

    /// The leader without a quorum gives up leading. The election ends a little after the
    /// first cut-off server is back (at once if one already is); a real leader whose quorum
    /// returned within its sync limit would carry on, which the simulator does not model.
    pub(super) fn step_down(&mut self) {
        let now = self.time.clock();
        let Some(back) = self.ensemble.step_down(now) else {
            return;
        };
        self.timer("leader-steps-down");
        let window = back.saturating_sub(now) + nanos(self.config.session_timeout) / 8;
        for client in 0..self.sessions.len() {
            // A client that is not up (a frozen one) finds its connection dead on waking: its
            // waiting calls fail then, not never.
            if self.ensemble.is_stuck(client) && !self.is_live_and_up(client) {
                self.break_connection(client);
            }
        }
        if let Some(until) = self.ensemble.outage_until() {
            // Already down (an outage): the election runs on past it.
            let until = until.max(now + window);
            self.ensemble.go_down(until, true);
            self.time.schedule(until, Pending::OutageEnd);
            return;
        }
        self.start_election(Duration::from_nanos(window));
    }

    /// A cut-off follower notices: it drops its clients, which reconnect elsewhere.
    pub(super) fn notice_cut_off(&mut self, server: u8) {
        if !self.ensemble.notice(server) {
            return;
        }
        self.timer("follower-notices");
        for client in 0..self.sessions.len() {
            if self.ensemble.server_of(client) != server || self.sessions.terminal(client).is_some()
            {
                continue;
            }
            self.ensemble.avoid(client, server);
            // Its connection dies whether the client is there to see it or not (a paused
            // client finds it dead on waking, and reconnects elsewhere).
            self.break_connection(client);
        }
    }

    pub(super) fn heal(&mut self, server: u8) {
        if self.ensemble.heal(server, self.time.clock()) {
            self.timer("partition-heals");
            self.arm_follower_of(server);
        }
    }

    /// The leader goes away; nobody serves for `duration`, then another server leads.
    fn start_election(&mut self, duration: Duration) {
        if self.ensemble.outage_until().is_some() || !self.ensemble.is_ensemble() {
            return;
        }
        let until = self.time.clock() + nanos(duration);
        self.take_service_down(until, true);
    }

    /// The election is over: a server that was not cut off leads, with every committed
    /// transaction; the old leader rejoins as a follower, also up to date.
    fn elect(&mut self) {
        let (old, new) = self.ensemble.elect();
        self.timer("leader-elected");
        for s in [old, new] {
            let events = self.ensemble.kernel_mut().sync_follower_of(s);
            self.route(events);
        }
        // Sessions stay where they are; what their server reads from changed.
        for client in 0..self.sessions.len() {
            let server = self.ensemble.server_of(client);
            if self.ensemble.kernel().is_alive(self.sessions.id(client)) {
                self.attach_to(client, server);
            }
        }
    }

    fn fire_session_moved(&mut self, client: usize) {
        if !self.ensemble.is_ensemble() || !self.is_live_and_up(client) {
            return;
        }
        self.count(FaultKind::SessionMoved, Some(client));
        // Requests still on their way to the old server are refused there; calls whose
        // request it already applied lose their reply with the old connection.
        let epoch = self.net.epoch(client);
        let on_the_way: BTreeSet<u64> = self
            .time
            .pending()
            .filter_map(|p| match p {
                Pending::ToServer {
                    client: c,
                    epoch: e,
                    xid,
                    ..
                } if *c == client && *e == epoch => Some(*xid),
                _ => None,
            })
            .collect();
        self.net.leave(client, OldConn::Moved);
        for (xid, call) in self.sessions.take_calls_but(client, &on_the_way) {
            self.log_reply(client, xid, Error::ConnectionLoss.name().into());
            call.fail(Error::ConnectionLoss);
        }
        self.publish(client, SessionState::Disconnected);
        self.publish(client, SessionState::Connected);
        let from = self.ensemble.server_of(client);
        self.ensemble.avoid(client, from);
        self.reconnect(client);
    }

    pub(super) fn fire_freeze(&mut self, client: usize, duration: Duration) {
        if !self.is_live_and_up(client) {
            return;
        }
        self.count_lasting(FaultKind::ClientFreeze, Some(client), Some(duration));
        let until = self.time.clock() + nanos(duration);
        self.go_down(client, Down::Pause, until);
        self.sessions.freeze(client, until);
        // A client of a madsim node: the whole node stops, whatever spawned its tasks.
        #[cfg(madsim)]
        if let Some(node) = self.sessions.node(client) {
            self.hold_node(node, until);
        }
        self.time.schedule(until, Pending::Thaw { client });
    }

    /// The process wakes, unless another of its sessions froze it for longer.
    pub(super) fn thaw(&mut self, client: usize) {
        if let Some(gate) = self.sessions.thaw(client, self.time.clock()) {
            self.timer("thaw");
            gate.thaw();
        }
    }
}
