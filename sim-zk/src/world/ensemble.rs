//! The ensemble and its replicas: the servers, which one leads, which are cut off, whether the
//! service is down (an outage or an election) or its disk stalled, and which server each
//! session is attached to.
//!
//! The kernel holds the committed state (what the leader serves) and one lagging replica
//! per server; server `s` serves reads from replica `s` unless it leads. Which server leads
//! is the ensemble's business: after an election the new leader's replica has caught up (ZAB
//! elects a server with every committed transaction), and so has the old leader's.

use avout::SessionId;

use crate::SimConfig;
use crate::kernel::{Fired, Kernel, Server};
use crate::rng::Rng;

/// Where one client's session is attached, as the ensemble sees it.
#[derive(Clone, Copy, Debug, Default)]
struct Seat {
    /// The server the client is connected to (always 0 with one server).
    server: u8,
    /// A server its next reconnect avoids (one it was partitioned from).
    avoid: Option<u8>,
    /// Its server is cut off and it sent a write: everything it sends waits (and is lost
    /// when the server notices and drops it), as ZooKeeper keeps a session's order.
    stuck: bool,
    /// Until when it reads from a lagging follower (a stale-reads fault).
    stale_until: Option<u64>,
}

/// What becomes of a request that needs the leader, or follows one that did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Held {
    /// It goes through.
    No,
    /// It waits, as does everything after it.
    Yes,
    /// It waits, and its server already knows it is cut off: the connection drops now.
    Break,
}

/// The servers, their replicas (in the kernel), and where each session sits.
pub(super) struct Ensemble {
    kernel: Kernel,
    /// How many servers; with more than one, server `s` reads from kernel follower `s`
    /// unless it leads.
    servers: u8,
    leader: u8,
    /// Until when each server is cut off from the others.
    cut_off: Vec<Option<u64>>,
    /// Whether each cut-off server has noticed (and drops its clients' connections).
    noticed: Vec<bool>,
    /// The leader has lost its quorum and not noticed yet: it commits nothing (writes and
    /// `sync`s wait), every server still serves reads.
    no_quorum: bool,
    /// Nobody serves until then (an outage, or an election window).
    outage_until: Option<u64>,
    /// The outage is an election window: a new leader takes over when it ends.
    electing: bool,
    /// Until when the leader's disk stalls.
    stall_until: Option<u64>,
    /// Until when the leader lags applying its own commits (its clients then read from its
    /// replica, and their `sync` flushes nothing).
    leader_lag_until: Option<u64>,
    /// When each follower's pending timer fires, if one is pending.
    follower_timers: Vec<Option<u64>>,
    /// When the next TTL check is due (nanoseconds), if one is scheduled.
    ttl_timer: Option<u64>,
    /// How far follower 0 trails the leader, in milliseconds.
    lag_ms: i64,
    epoch_ms: i64,
    /// How long reconnecting takes and which server it reaches (see
    /// [`Stream::Reconnects`](crate::rng::Stream::Reconnects)); who leads after an election.
    reconnects: Rng,
    /// Where new sessions connect (see [`Stream::Placement`](crate::rng::Stream::Placement)).
    placement: Rng,
    seats: Vec<Seat>,
}

impl Ensemble {
    /// The servers of a run of `config`, server 0 leading.
    pub(super) fn new(config: &SimConfig, reconnects: Rng, placement: Rng) -> Self {
        let servers = config.servers();
        let mut kernel = if servers > 1 {
            Kernel::with_followers(servers)
        } else if config.needs_follower() {
            Kernel::with_follower()
        } else {
            Kernel::new()
        };
        kernel.set_features(config.features);
        let slots = usize::from(kernel.followers());
        Ensemble {
            kernel,
            servers,
            leader: 0,
            cut_off: vec![None; usize::from(servers)],
            noticed: vec![false; usize::from(servers)],
            no_quorum: false,
            outage_until: None,
            electing: false,
            stall_until: None,
            leader_lag_until: None,
            follower_timers: vec![None; slots],
            ttl_timer: None,
            lag_ms: config.follower_lag().as_millis() as i64,
            epoch_ms: config.epoch_ms,
            reconnects,
            placement,
            seats: Vec::new(),
        }
    }

    pub(super) fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    pub(super) fn kernel_mut(&mut self) -> &mut Kernel {
        &mut self.kernel
    }

    /// A seat for a new client, on the leader.
    pub(super) fn seat(&mut self) {
        self.seats.push(Seat {
            server: self.leader,
            ..Seat::default()
        });
    }

    /// Whether the run has more than one server.
    pub(super) fn is_ensemble(&self) -> bool {
        self.servers > 1
    }

    pub(super) fn servers(&self) -> u8 {
        self.servers
    }

    /// The server that leads now (0 with one server).
    pub(super) fn leader(&self) -> u8 {
        self.leader
    }

    /// The server `client` is connected to (0 with one server).
    pub(super) fn server_of(&self, client: usize) -> u8 {
        self.seats[client].server
    }

    pub(super) fn is_cut_off(&self, server: u8) -> bool {
        self.is_ensemble()
            && self
                .cut_off
                .get(usize::from(server))
                .is_some_and(Option::is_some)
    }

    /// The kernel replica server `s` reads from: the leader's is the committed state, unless
    /// it lags applying it.
    fn role(&self, s: u8) -> Server {
        if s == self.leader && self.leader_lag_until.is_none() {
            Server::Leader
        } else {
            Server::Follower(s)
        }
    }

    /// Connects `client`'s `session` to `server` (its replica catches up first, so the
    /// session never goes back in time); returns the watch events that catching up fired.
    pub(super) fn attach(&mut self, client: usize, session: SessionId, server: u8) -> Vec<Fired> {
        let role = if self.is_ensemble() {
            self.seats[client].server = server;
            self.role(server)
        } else {
            Server::Leader
        };
        self.kernel.attach(session, role)
    }

    /// The servers a client can reach: not cut off, other than `avoid`.
    fn open_servers(&self, avoid: Option<u8>) -> Vec<u8> {
        (0..self.servers)
            .filter(|&s| !self.is_cut_off(s) && Some(s) != avoid)
            .collect()
    }

    /// A server a reconnecting client reaches: any that is not cut off, other than `avoid`
    /// when there is a choice.
    pub(super) fn pick_server(&mut self, avoid: Option<u8>) -> u8 {
        let open = self.open_servers(avoid);
        if open.is_empty() {
            return self.leader;
        }
        let i = self.reconnects.below(open.len() as u64);
        open[usize::try_from(i).expect("small")]
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

    /// How long a broken connection of a session with `timeout` (ns) takes to come back:
    /// 2 to 10 % of the timeout, from the reconnect stream.
    pub(super) fn reconnect_delay(&mut self, timeout: u64) -> u64 {
        timeout / 100 * self.reconnects.between(2, 10)
    }

    /// The server `client`'s next reconnect avoids, taken (and its stuck requests with the
    /// connection they waited on): the server it reconnects to.
    pub(super) fn reconnect(&mut self, client: usize) -> u8 {
        let avoid = self.seats[client].avoid.take();
        let server = self.pick_server(avoid);
        self.seats[client].stuck = false;
        server
    }

    /// `client`'s next reconnect avoids `server`.
    pub(super) fn avoid(&mut self, client: usize, server: u8) {
        self.seats[client].avoid = Some(server);
    }

    /// Whether a request from `client` must wait for the leader, which its server cannot
    /// reach (or which has no quorum): then it is held, and so is everything after it.
    pub(super) fn holds(&mut self, client: usize, needs_leader: bool) -> Held {
        let seat = &mut self.seats[client];
        if self.no_quorum {
            // Nothing commits: the request waits, and so does everything after it, until the
            // leader steps down and every connection breaks with it.
            seat.stuck |= needs_leader;
            if seat.stuck {
                return Held::Yes;
            }
        }
        let server = seat.server;
        if !self.is_cut_off(server) || server == self.leader {
            return Held::No;
        }
        let seat = &mut self.seats[client];
        seat.stuck |= needs_leader;
        match (seat.stuck, self.noticed[usize::from(server)]) {
            (false, _) => Held::No,
            (true, false) => Held::Yes,
            (true, true) => {
                seat.avoid = Some(server);
                Held::Break
            }
        }
    }

    /// Whether `client` has requests waiting for a leader it cannot reach.
    pub(super) fn is_stuck(&self, client: usize) -> bool {
        self.seats[client].stuck
    }

    /// Cuts `server` off from the others until `until`.
    pub(super) fn cut(&mut self, server: u8, until: u64) {
        self.cut_off[usize::from(server)] = Some(until);
    }

    /// A cut-off server notices; `false` if it is not cut off.
    pub(super) fn notice(&mut self, server: u8) -> bool {
        if !self.is_cut_off(server) {
            return false;
        }
        self.noticed[usize::from(server)] = true;
        true
    }

    /// `server`'s cut heals if it is due by `now`; returns whether it did.
    pub(super) fn heal(&mut self, server: u8, now: u64) -> bool {
        let s = usize::from(server);
        if self.cut_off[s].is_none_or(|u| u > now) {
            return false;
        }
        self.cut_off[s] = None;
        self.noticed[s] = false;
        true
    }

    /// When the first cut-off server is back, if any is cut off.
    fn first_back(&self) -> Option<u64> {
        self.cut_off.iter().flatten().copied().min()
    }

    /// With a majority cut off the leader has lost its quorum (until it notices): returns
    /// when the first cut-off server is back, if it has just lost it.
    pub(super) fn lose_quorum(&mut self) -> Option<u64> {
        let reachable = (0..self.servers).filter(|&s| !self.is_cut_off(s)).count();
        if self.no_quorum || reachable > usize::from(self.servers) / 2 {
            return None;
        }
        let back = self.first_back()?;
        self.no_quorum = true;
        Some(back)
    }

    /// The leader without a quorum notices and steps down; returns when the first cut-off
    /// server is back (`now` if none still is), or `None` if it had its quorum.
    pub(super) fn step_down(&mut self, now: u64) -> Option<u64> {
        if !self.no_quorum {
            return None;
        }
        self.no_quorum = false;
        Some(self.first_back().unwrap_or(now))
    }

    /// Until when the service is down, if it is.
    pub(super) fn outage_until(&self) -> Option<u64> {
        self.outage_until
    }

    /// Nobody serves until `until`; an election then, if `electing`.
    pub(super) fn go_down(&mut self, until: u64, electing: bool) {
        self.outage_until = Some(until);
        self.electing |= electing;
    }

    /// The outage ends if it is due by `now`; returns whether it did.
    pub(super) fn come_up(&mut self, now: u64) -> bool {
        if self.outage_until.is_none_or(|u| u > now) {
            return false;
        }
        self.outage_until = None;
        true
    }

    pub(super) fn is_electing(&self) -> bool {
        self.electing
    }

    /// The leader lags applying its commits until `until` (its clients' reads trail, their
    /// `sync`s flush nothing), unless it already lags or the service is down; returns
    /// whether it started. The caller moves the leader's sessions onto its replica.
    pub(super) fn lag_leader(&mut self, until: u64) -> bool {
        if !self.is_ensemble() || self.leader_lag_until.is_some() || self.outage_until.is_some() {
            return false;
        }
        self.set_leader_lag(Some(until));
        true
    }

    /// The leader's lag ends if it is due by `now`; returns whether it did. The caller moves
    /// the leader's sessions back onto the committed state.
    pub(super) fn end_leader_lag(&mut self, now: u64) -> bool {
        if self.leader_lag_until.is_none_or(|u| u > now) {
            return false;
        }
        self.set_leader_lag(None);
        true
    }

    /// The leader lags until `until` (`None`: it does not); its replica stands for its apply
    /// queue in the kernel meanwhile.
    fn set_leader_lag(&mut self, until: Option<u64>) {
        self.leader_lag_until = until;
        self.kernel.set_leader_queue(until.map(|_| self.leader));
    }

    /// The election is over: a server that was not cut off leads. Returns the old leader
    /// and the new one (both replicas catch up: the caller syncs them). A lagging leader's
    /// lag ends with its leadership.
    pub(super) fn elect(&mut self) -> (u8, u8) {
        self.electing = false;
        self.set_leader_lag(None);
        let old = self.leader;
        let new = self.pick_server(Some(old));
        self.leader = new;
        (old, new)
    }

    /// The leader's disk stalls until `until`, unless it already is stalled at `now`;
    /// returns whether it was not.
    pub(super) fn stall(&mut self, now: u64, until: u64) -> bool {
        if self.stall_until.is_some_and(|u| u > now) {
            return false;
        }
        self.stall_until = Some(until);
        true
    }

    /// When the stalled disk lets requests through again, if it is stalled at `now`.
    pub(super) fn stalled_until(&self, now: u64) -> Option<u64> {
        self.stall_until.filter(|&u| u > now)
    }

    /// The follower a stale-reads fault moves a session to: the most lagging one that leads
    /// nothing and is not cut off.
    pub(super) fn stalest_follower(&self) -> Option<u8> {
        (0..self.servers)
            .rev()
            .find(|&s| s != self.leader && !self.is_cut_off(s))
    }

    pub(super) fn stale_until(&self, client: usize) -> Option<u64> {
        self.seats[client].stale_until
    }

    pub(super) fn set_stale_until(&mut self, client: usize, until: Option<u64>) {
        self.seats[client].stale_until = until;
    }

    /// How far follower `i` trails the leader: each one more than the last, so that moving
    /// between followers can go back in time unless the move catches up (it does).
    fn lag_ms(&self, i: u8) -> i64 {
        self.lag_ms * (i64::from(i) + 1)
    }

    /// Arms follower `i`'s timer for its oldest pending transaction, to fire once it is its
    /// lag old (not before `now`), unless one is armed or the follower is cut off; returns
    /// when it fires. One timer per follower, not one per write.
    pub(super) fn arm_follower(&mut self, i: u8, now: u64) -> Option<u64> {
        if self.follower_timers[usize::from(i)].is_some() || self.is_cut_off(i) {
            return None;
        }
        let oldest_ms = self.kernel.next_ms_of(i)?;
        let due_ms = oldest_ms - self.epoch_ms + self.lag_ms(i) + 1;
        let at = (u64::try_from(due_ms).unwrap_or(0) * 1_000_000).max(now);
        self.follower_timers[usize::from(i)] = Some(at);
        Some(at)
    }

    /// Follower `i`'s timer fires at ZooKeeper time `now_ms`: unless it is cut off, it applies
    /// what is its lag old; returns the watch events that fired.
    pub(super) fn advance_follower(&mut self, i: u8, now_ms: i64) -> Option<Vec<Fired>> {
        self.follower_timers[usize::from(i)] = None;
        if self.is_cut_off(i) {
            // A follower cut off from the leader receives nothing new.
            return None;
        }
        let lag = self.lag_ms(i);
        Some(self.kernel.advance_follower_of(i, now_ms - lag))
    }

    /// Schedules the next TTL check for the next node to fall due (not before `after`),
    /// unless an earlier one is scheduled; returns when.
    pub(super) fn arm_ttl(&mut self, after: u64) -> Option<u64> {
        let due_ms = self.kernel.next_ttl_ms()?;
        let since_start = u64::try_from(due_ms - self.epoch_ms).unwrap_or(0);
        let at = since_start.saturating_mul(1_000_000).max(after);
        if self.ttl_timer.is_some_and(|t| t <= at) {
            return None;
        }
        self.ttl_timer = Some(at);
        Some(at)
    }

    /// The TTL check fires at `now`; returns whether it is the one armed.
    pub(super) fn ttl_due(&mut self, now: u64) -> bool {
        if self.ttl_timer.is_none_or(|at| at > now) {
            return false;
        }
        self.ttl_timer = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::rng::Stream;

    fn ensemble(servers: u8) -> Ensemble {
        let config = SimConfig {
            servers,
            ..SimConfig::default()
        };
        Ensemble::new(
            &config,
            Rng::new(1, Stream::Reconnects),
            Rng::new(1, Stream::Placement),
        )
    }

    #[test]
    fn one_server_is_no_ensemble_and_always_leads() {
        let mut e = ensemble(1);
        assert!(!e.is_ensemble());
        assert_eq!(e.place(), 0);
        e.cut(0, 100);
        assert!(!e.is_cut_off(0), "one server is never cut off");
        e.seat();
        assert_eq!(e.server_of(0), 0);
    }

    #[test]
    fn reconnects_avoid_cut_off_servers_and_the_one_asked() {
        let mut e = ensemble(3);
        e.cut(1, 1_000);
        for _ in 0..50 {
            let s = e.pick_server(Some(0));
            assert_eq!(s, 2, "0 avoided, 1 cut off");
            assert_ne!(e.place(), 1);
        }
        e.cut(2, 1_000);
        assert_eq!(e.pick_server(Some(0)), 0, "no choice: the open one");
        e.cut(0, 1_000);
        assert_eq!(e.place(), e.leader(), "nothing open: the leader");
    }

    #[test]
    fn a_majority_cut_off_loses_the_quorum_until_the_leader_steps_down() {
        let mut e = ensemble(3);
        e.cut(1, 500);
        assert_eq!(e.lose_quorum(), None, "two of three still reach each other");
        e.cut(2, 300);
        assert_eq!(e.lose_quorum(), Some(300), "the first one back");
        assert_eq!(e.lose_quorum(), None, "lost once");
        e.seat();
        assert_eq!(e.holds(0, false), Held::No, "reads still served");
        assert_eq!(e.holds(0, true), Held::Yes, "writes wait");
        assert_eq!(e.holds(0, false), Held::Yes, "and so does all after them");
        assert!(e.is_stuck(0));
        assert!(e.heal(2, 300));
        assert!(!e.heal(1, 300), "not due yet");
        assert_eq!(e.step_down(400), Some(500));
        assert_eq!(e.step_down(400), None);
        e.reconnect(0);
        assert!(
            !e.is_stuck(0),
            "a new connection carries nothing that waits"
        );
    }

    #[test]
    fn a_cut_off_follower_drops_waiting_clients_once_it_notices() {
        let mut e = ensemble(3);
        e.seat();
        let follower = (0..3).find(|&s| s != e.leader()).unwrap();
        let session = e.kernel_mut().create_session(0, Duration::from_secs(5));
        let _ = e.attach(0, session, follower);
        assert_eq!(e.server_of(0), follower);
        e.cut(follower, 1_000);
        assert_eq!(e.holds(0, false), Held::No);
        assert_eq!(e.holds(0, true), Held::Yes);
        assert!(e.notice(follower));
        assert_eq!(e.holds(0, false), Held::Break);
        assert_ne!(e.reconnect(0), follower, "the reconnect avoids it");
    }

    #[test]
    fn an_election_hands_leadership_to_another_server() {
        let mut e = ensemble(3);
        e.go_down(100, true);
        assert!(e.is_electing() && !e.come_up(99));
        assert!(e.come_up(100));
        assert_eq!(e.outage_until(), None);
        let (old, new) = e.elect();
        assert_eq!((old, e.leader()), (0, new));
        assert_ne!(new, old);
        assert!(!e.is_electing());
    }

    #[test]
    fn a_stalled_disk_stalls_once_at_a_time() {
        let mut e = ensemble(3);
        assert!(e.stall(0, 100));
        assert!(!e.stall(50, 200), "already stalled");
        assert_eq!(e.stalled_until(50), Some(100));
        assert_eq!(e.stalled_until(100), None);
        assert!(e.stall(100, 200));
    }

    #[test]
    fn followers_trail_each_by_one_lag_more_than_the_last() {
        let e = ensemble(3);
        assert_eq!(e.lag_ms(0), 50);
        assert_eq!(e.lag_ms(2), 150);
        assert_eq!(e.stalest_follower(), Some(2));
    }
}
