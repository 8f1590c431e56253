//! The network and its links: one pair of FIFO links per client (to the service, and back),
//! each up or down, the latencies drawn from the run's network stream.
//!
//! A message is delivered no earlier than the previous one on its link, which gives
//! ZooKeeper's guarantees for free: one session's requests are applied in the order they were
//! made, and a watch event queued for a client before a reply reaches it before that reply.
//!
//! Each time a connection breaks the link starts a new *epoch*; messages stamped with an older
//! one belong to a dead connection. What the service does with those depends on how the old
//! connection ended ([`OldConn`]). Messages for a client whose link is down are held here and
//! handed back when it comes up.

use std::collections::{BTreeMap, VecDeque};

use super::nanos;
use crate::SimConfig;
use crate::latency::{RequestClass, ServiceTimes};
use crate::rng::Rng;

/// Why a link is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Down {
    /// The connection broke; it comes back at `until` (a new epoch).
    Disconnect,
    /// The client is paused: its connection survives, but nothing moves until it wakes.
    Pause,
    /// The service is unreachable (an outage or an election).
    Outage,
}

/// A link's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Up,
    Down { why: Down, since: u64, until: u64 },
}

/// An old connection the service may still receive requests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OldConn {
    /// The session moved: the server refuses them with `SessionMoved`.
    Moved,
    /// Only server-to-client was cut: the server applies them, the replies are lost.
    Deaf,
}

/// One client's pair of links; `M` is what travels to the client.
struct Link<M> {
    state: State,
    epoch: u64,
    /// When the last message to the service is delivered (the next one is not earlier).
    to_server_last: u64,
    /// When the last message to the client is delivered.
    to_client_last: u64,
    /// Messages that reached the client while its link was down, with their epochs.
    held: VecDeque<(u64, M)>,
    /// What became of the connections of older epochs that the server may still hear from.
    old_conns: BTreeMap<u64, OldConn>,
}

/// The links of every client, and the latencies of the messages on them.
pub(super) struct Network<M> {
    rng: Rng,
    min_latency: u64,
    max_latency: u64,
    /// A slow disk comes with a long tail of message latencies.
    long_tail: bool,
    /// Service times of a fitted latency model, drawn from this stream only when set.
    service: Option<ServiceTimes>,
    links: Vec<Link<M>>,
}

impl<M> Network<M> {
    /// The network of a run of `config`, its latencies drawn from `rng`.
    pub(super) fn new(rng: Rng, config: &SimConfig) -> Self {
        Network {
            rng,
            min_latency: nanos(config.min_latency),
            max_latency: nanos(config.max_latency),
            long_tail: config.rates.slow_disk > 0.0,
            service: config.service.clone(),
            links: Vec::new(),
        }
    }

    /// The network stream (for its tape).
    pub(super) fn rng(&self) -> &Rng {
        &self.rng
    }

    pub(super) fn rng_mut(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// Links for a new client, up; returns its index.
    pub(super) fn add(&mut self) -> usize {
        self.links.push(Link {
            state: State::Up,
            epoch: 0,
            to_server_last: 0,
            to_client_last: 0,
            held: VecDeque::new(),
            old_conns: BTreeMap::new(),
        });
        self.links.len() - 1
    }

    /// A one-way latency.
    pub(super) fn latency(&mut self) -> u64 {
        let lo = self.min_latency;
        let hi = self.max_latency.max(lo);
        let base = self.rng.between(lo, hi);
        // One message in a hundred takes 5 to 50 times as long (drawn only when the long
        // tail is on, so other runs keep their draws).
        if self.long_tail && self.rng.chance(0.01) {
            base * self.rng.between(5, 50)
        } else {
            base
        }
    }

    pub(super) fn state(&self, client: usize) -> State {
        self.links[client].state
    }

    pub(super) fn is_up(&self, client: usize) -> bool {
        self.links[client].state == State::Up
    }

    /// When the client's link went down, if it is down.
    pub(super) fn down_since(&self, client: usize) -> Option<u64> {
        match self.links[client].state {
            State::Up => None,
            State::Down { since, .. } => Some(since),
        }
    }

    /// The client's current connection.
    pub(super) fn epoch(&self, client: usize) -> u64 {
        self.links[client].epoch
    }

    /// Sends a message to the service from `client` at `now`, to leave no earlier than
    /// `not_before` (an outage) nor before its link is back; returns when it arrives and
    /// the connection it travels on.
    pub(super) fn send_to_server(
        &mut self,
        client: usize,
        now: u64,
        not_before: u64,
    ) -> (u64, u64) {
        let base = match self.links[client].state {
            State::Up => now,
            State::Down { until, .. } => now.max(until),
        };
        let base = base.max(not_before);
        let latency = self.latency();
        let link = &mut self.links[client];
        let at = (base + latency).max(link.to_server_last);
        link.to_server_last = at;
        (at, link.epoch)
    }

    /// Sends a message from the service to `client` at `now`; returns when it arrives and the
    /// connection it travels on.
    pub(super) fn send_to_client(&mut self, client: usize, now: u64) -> (u64, u64) {
        let latency = self.latency();
        let link = &mut self.links[client];
        let at = (now + latency).max(link.to_client_last);
        link.to_client_last = at;
        (at, link.epoch)
    }

    /// Sends the reply to a request of `class` to `client` at `now`: after the request's
    /// service time, if the run has a fitted latency model. Returns as
    /// [`send_to_client`](Self::send_to_client) does.
    pub(super) fn send_reply(
        &mut self,
        client: usize,
        now: u64,
        class: RequestClass,
    ) -> (u64, u64) {
        let service = match &self.service {
            Some(times) => times.of(class).draw(&mut self.rng),
            None => 0,
        };
        self.send_to_client(client, now + service)
    }

    /// Takes the client's link down from `since` until `until`. Unless it is only paused,
    /// its connection dies (a new epoch): returns whether it did.
    pub(super) fn go_down(&mut self, client: usize, why: Down, since: u64, until: u64) -> bool {
        let link = &mut self.links[client];
        link.state = State::Down { why, since, until };
        let broke = why != Down::Pause;
        if broke {
            link.epoch += 1;
        }
        broke
    }

    /// The connection of a client whose link is already down dies too: a new epoch, and a
    /// paused client is now disconnected (it comes back when its link does).
    pub(super) fn break_while_down(&mut self, client: usize) {
        let link = &mut self.links[client];
        link.epoch += 1;
        if let State::Down {
            why: Down::Pause,
            since,
            until,
        } = link.state
        {
            link.state = State::Down {
                why: Down::Disconnect,
                since,
                until,
            };
        }
    }

    /// The link is up again; returns why it was down (`None` if it was up).
    pub(super) fn come_up(&mut self, client: usize) -> Option<Down> {
        let link = &mut self.links[client];
        let State::Down { why, .. } = link.state else {
            return None;
        };
        link.state = State::Up;
        Some(why)
    }

    /// Leaves the current connection behind as `how` (the service may still hear from it) and
    /// starts a new one.
    pub(super) fn leave(&mut self, client: usize, how: OldConn) {
        let link = &mut self.links[client];
        link.old_conns.insert(link.epoch, how);
        if how == OldConn::Moved {
            link.epoch += 1;
        }
    }

    /// How the connection of `epoch` ended, if it is an old one the service still hears from.
    pub(super) fn old_conn(&self, client: usize, epoch: u64) -> Option<OldConn> {
        let link = &self.links[client];
        (link.epoch != epoch)
            .then(|| link.old_conns.get(&epoch).copied())
            .flatten()
    }

    /// Keeps a message that reached `client` while its link was down.
    pub(super) fn hold(&mut self, client: usize, epoch: u64, msg: M) {
        self.links[client].held.push_back((epoch, msg));
    }

    /// The messages held for `client`, oldest first.
    pub(super) fn take_held(&mut self, client: usize) -> VecDeque<(u64, M)> {
        std::mem::take(&mut self.links[client].held)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::rng::Stream;

    fn network(config: &SimConfig) -> Network<&'static str> {
        Network::new(Rng::new(config.seed, Stream::Network), config)
    }

    #[test]
    fn latencies_stay_within_bounds_and_follow_the_network_stream() {
        let config = SimConfig {
            min_latency: Duration::from_micros(100),
            max_latency: Duration::from_micros(300),
            ..SimConfig::default()
        };
        let mut net = network(&config);
        let mut same = Rng::new(config.seed, Stream::Network);
        for _ in 0..1_000 {
            let l = net.latency();
            assert!((100_000..=300_000).contains(&l), "{l}");
            assert_eq!(l, same.between(100_000, 300_000));
        }
    }

    #[test]
    fn a_long_tail_only_with_a_slow_disk() {
        let mut config = SimConfig::default();
        config.rates.slow_disk = 0.01;
        let max = nanos(config.max_latency);
        let mut net = network(&config);
        let longest = (0..2_000).map(|_| net.latency()).max().unwrap();
        assert!(
            longest > max,
            "a message in a hundred is 5 to 50 times slower"
        );
        assert!(longest <= max * 50);
    }

    #[test]
    fn messages_on_a_link_never_overtake_each_other() {
        let mut net = network(&SimConfig::default());
        let c = net.add();
        let mut last = 0;
        for now in [0, 0, 10, 10, 10, 20] {
            let (at, epoch) = net.send_to_server(c, now, 0);
            assert!(at >= last && at > now);
            assert_eq!(epoch, 0);
            last = at;
        }
        let (back, _) = net.send_to_client(c, 0);
        assert!(back > 0, "the way back is a link of its own");
    }

    #[test]
    fn a_message_sent_while_down_leaves_when_the_link_is_back() {
        let mut net = network(&SimConfig::default());
        let c = net.add();
        assert!(net.go_down(c, Down::Disconnect, 5, 1_000_000_000));
        assert_eq!(net.epoch(c), 1, "a broken connection is a new epoch");
        assert_eq!(net.down_since(c), Some(5));
        let (at, epoch) = net.send_to_server(c, 10, 0);
        assert!(at > 1_000_000_000);
        assert_eq!(epoch, 1);
        let (at, _) = net.send_to_server(c, 10, 5_000_000_000);
        assert!(at > 5_000_000_000, "nor before an outage ends");
        assert_eq!(net.come_up(c), Some(Down::Disconnect));
        assert!(net.is_up(c));
        assert_eq!(net.come_up(c), None);
    }

    #[test]
    fn a_pause_keeps_the_connection_until_it_breaks() {
        let mut net = network(&SimConfig::default());
        let c = net.add();
        assert!(!net.go_down(c, Down::Pause, 0, 100));
        assert_eq!(net.epoch(c), 0);
        net.break_while_down(c);
        assert_eq!(net.epoch(c), 1);
        assert_eq!(
            net.state(c),
            State::Down {
                why: Down::Disconnect,
                since: 0,
                until: 100
            }
        );
    }

    #[test]
    fn old_connections_are_remembered_by_how_they_ended() {
        let mut net = network(&SimConfig::default());
        let c = net.add();
        net.leave(c, OldConn::Deaf);
        assert_eq!(
            net.epoch(c),
            0,
            "a one-way cut keeps the connection until it breaks"
        );
        assert_eq!(
            net.old_conn(c, 0),
            None,
            "the current connection is not an old one"
        );
        assert!(net.go_down(c, Down::Disconnect, 0, 10));
        assert_eq!(net.old_conn(c, 0), Some(OldConn::Deaf));
        net.leave(c, OldConn::Moved);
        assert_eq!(net.epoch(c), 2);
        assert_eq!(net.old_conn(c, 1), Some(OldConn::Moved));
        assert_eq!(net.old_conn(c, 7), None);
    }

    #[test]
    fn held_messages_come_back_in_order() {
        let mut net = network(&SimConfig::default());
        let c = net.add();
        net.hold(c, 0, "a");
        net.hold(c, 1, "b");
        assert_eq!(Vec::from(net.take_held(c)), [(0, "a"), (1, "b")]);
        assert!(net.take_held(c).is_empty());
    }
}
