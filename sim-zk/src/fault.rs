//! Faults: what can go wrong, when, and how often.
//!
//! A message is lost only with its connection, as on TCP: ZooKeeper never drops one request
//! or reply of a session and carries on with the next, so neither does the simulator.
//!
//! A fault is either *scheduled* ([`When::At`] a virtual time, or [`When::Step`]: when the
//! service receives its n-th request) or *drawn* per request at the rates of [`FaultRates`]
//! from the run's fault stream. Drawn session faults hit the session whose request is being
//! processed, so they land where the workload is active.
//!
//! | fault | what happens | what the client observes |
//! |-------|--------------|--------------------------|
//! | [`Fault::RequestLost`] | the request is dropped before the server sees it, with the connection it travelled on | `Disconnected`; it and every call still waiting on that connection fail with `ConnectionLoss`, requests behind it are not applied; `Connected` again shortly after |
//! | [`Fault::ReplyLost`] | the request is applied, then its connection drops before the reply leaves | as for a lost request, but the change is there (watch events still flow) |
//! | [`Fault::Disconnect`] | the connection drops for `duration` | `Disconnected`; in-flight requests fail with `ConnectionLoss` (unapplied if not yet received, applied if only the reply was in flight); new requests wait; then `Connected`, or `Expired` if `duration` outlived the session |
//! | [`Fault::ExpireSession`] | the service expires the session | its ephemerals vanish at once; the client sees `Disconnected`, `Expired`; every call fails with `SessionExpired` |
//! | [`Fault::Pause`] | the client freezes (a GC pause) for `duration` | nothing while frozen (its requests and replies wait); if the pause outlived the session, on waking `Disconnected`, `Expired`, and its ephemerals are gone |
//! | [`Fault::StaleReads`] | the session moves to a follower that applies commits late, for `duration` | reads may be stale but never go back in time; its own writes and `sync` catch the follower up |
//! | [`Fault::Outage`] | the whole service is down for `duration` | every client `Disconnected`, in-flight requests fail; then `Connected`; sessions survive (a new leader renews them) |
//!
//! The six ensemble faults need more than one server; a run that can fire one gets at least
//! three ([`crate::SimConfig::servers`]):
//!
//! | fault | what happens | what the client observes |
//! |-------|--------------|--------------------------|
//! | [`Fault::Partition`] of a client | the client cannot reach its server (both ways, or only server to client) | `Disconnected` (a one-way cut still applies what it sent); it reconnects to another server and its session moves |
//! | [`Fault::Partition`] of a server | a follower is cut off from the leader for `duration` | its sessions still read (ever staler state); their writes and `sync`s hang until the follower notices, then fail with `ConnectionLoss` unapplied and the sessions move to other servers. With a majority cut off (a second follower while the first still is), the leader has no quorum: nothing commits (writes and `sync`s wait) while every server still serves reads, the cut-off ones until they notice; when the leader notices it steps down, the waiting calls fail with `ConnectionLoss` unapplied, and every client is down until a server is back and an election ends |
//! | [`Fault::LeaderElection`] | the leader crashes; no server serves until a new leader is elected, `duration` later; the old one restarts as a follower | every client `Disconnected`, in-flight requests fail (applied or not); sessions survive and reconnect to any server, followers included |
//! | [`Fault::SessionMoved`] | the client's connection moves to another server | requests still travelling on the old connection are refused with `SessionMoved` (unapplied, though the client cannot know it); those already applied fail with `ConnectionLoss` |
//! | [`Fault::ClientFreeze`] | the client *process* stops for `duration`: its network, its tasks and their timers (everything run under its [`avout::task::Gate`]) | nothing, then everything that came due at once; the session expired if the freeze outlived it, which the process finds out only after its code already ran on |
//! | [`Fault::SlowDisk`] | the leader's disk stalls on fsync for `duration`: no request is processed | calls hang, then complete; with this kind drawn, message latency also has a long tail |
//! | [`Fault::LeaderLag`] | the leader falls behind applying what it has committed, for `duration` | its clients read state older than what a follower has already acknowledged, and their `sync` does not help: ZooKeeper's leader answers its own clients' `sync` at once; their writes still read their own (see `avout::Request::quorum_sync` for the real server's evidence) |

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One fault. Clients are named by their index in the run (the builder's clients first,
/// then those connected later, in order).
///
/// ```
/// use std::time::Duration;
/// let f = avout_sim_zk::Fault::Disconnect { client: 0, duration: Duration::from_millis(500) };
/// assert_eq!(f.kind(), avout_sim_zk::FaultKind::Disconnect);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Fault {
    /// The next request (of `client`, or of anyone) is lost before the server sees it, and
    /// its connection with it.
    RequestLost {
        /// Whose request; `None` for the next one of any client.
        client: Option<usize>,
    },
    /// The next request (of `client`, or of anyone) is applied and its reply lost, with its
    /// connection.
    ReplyLost {
        /// Whose request; `None` for the next one of any client.
        client: Option<usize>,
    },
    /// The client's connection drops and comes back after `duration`.
    Disconnect {
        /// The client.
        client: usize,
        /// How long it stays down.
        duration: Duration,
    },
    /// The service expires the client's session.
    ExpireSession {
        /// The client.
        client: usize,
    },
    /// The client process freezes for `duration`.
    Pause {
        /// The client.
        client: usize,
        /// How long.
        duration: Duration,
    },
    /// The client reads from a lagging follower for `duration`.
    StaleReads {
        /// The client.
        client: usize,
        /// How long.
        duration: Duration,
    },
    /// The whole service is unreachable for `duration`.
    Outage {
        /// How long.
        duration: Duration,
    },
    /// A network partition for `duration`.
    Partition {
        /// Who is cut off.
        cut: Cut,
        /// How long.
        duration: Duration,
    },
    /// The leader crashes; a new one is elected after `duration`.
    LeaderElection {
        /// The election window.
        duration: Duration,
    },
    /// The client's session moves to another server.
    SessionMoved {
        /// The client.
        client: usize,
    },
    /// The client process (network, tasks and timers) freezes for `duration`.
    ClientFreeze {
        /// The client.
        client: usize,
        /// How long.
        duration: Duration,
    },
    /// The leader's disk stalls for `duration`.
    SlowDisk {
        /// How long.
        duration: Duration,
    },
    /// The leader lags applying its commits for `duration`.
    LeaderLag {
        /// How long.
        duration: Duration,
    },
}

/// Who a [`Fault::Partition`] cuts off.
///
/// ```
/// let c = avout_sim_zk::Cut::Client { client: 1, one_way: false };
/// assert_ne!(c, avout_sim_zk::Cut::Server { server: 1 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Cut {
    /// A client from the server it is connected to.
    Client {
        /// The client.
        client: usize,
        /// Only the server-to-client direction is cut: what the client sent still arrives.
        one_way: bool,
    },
    /// A server from the others (the leader: an election follows).
    Server {
        /// The server's index.
        server: u8,
    },
}

impl Fault {
    /// The fault's kind, for counting.
    ///
    /// ```
    /// let f = avout_sim_zk::Fault::RequestLost { client: None };
    /// assert_eq!(f.kind(), avout_sim_zk::FaultKind::RequestLost);
    /// ```
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::RequestLost { .. } => FaultKind::RequestLost,
            Fault::ReplyLost { .. } => FaultKind::ReplyLost,
            Fault::Disconnect { .. } => FaultKind::Disconnect,
            Fault::ExpireSession { .. } => FaultKind::SessionExpiry,
            Fault::Pause { .. } => FaultKind::Pause,
            Fault::StaleReads { .. } => FaultKind::StaleReads,
            Fault::Outage { .. } => FaultKind::Outage,
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::LeaderElection { .. } => FaultKind::LeaderElection,
            Fault::SessionMoved { .. } => FaultKind::SessionMoved,
            Fault::ClientFreeze { .. } => FaultKind::ClientFreeze,
            Fault::SlowDisk { .. } => FaultKind::SlowDisk,
            Fault::LeaderLag { .. } => FaultKind::LeaderLag,
        }
    }

    /// The client the fault hits (`None`: any client's next request, or everyone).
    ///
    /// ```
    /// use avout_sim_zk::Fault;
    /// assert_eq!(Fault::ExpireSession { client: 2 }.client(), Some(2));
    /// assert_eq!(Fault::ReplyLost { client: None }.client(), None);
    /// ```
    pub fn client(&self) -> Option<usize> {
        match self {
            Fault::RequestLost { client } | Fault::ReplyLost { client } => *client,
            Fault::Disconnect { client, .. }
            | Fault::ExpireSession { client }
            | Fault::Pause { client, .. }
            | Fault::StaleReads { client, .. }
            | Fault::SessionMoved { client }
            | Fault::ClientFreeze { client, .. }
            | Fault::Partition {
                cut: Cut::Client { client, .. },
                ..
            } => Some(*client),
            Fault::Outage { .. }
            | Fault::Partition { .. }
            | Fault::LeaderElection { .. }
            | Fault::SlowDisk { .. }
            | Fault::LeaderLag { .. } => None,
        }
    }
}

/// The kinds of fault, for counts and reports.
///
/// ```
/// assert_eq!(avout_sim_zk::FaultKind::ReplyLost.name(), "reply-lost");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FaultKind {
    /// [`Fault::RequestLost`].
    RequestLost,
    /// [`Fault::ReplyLost`].
    ReplyLost,
    /// [`Fault::Disconnect`].
    Disconnect,
    /// [`Fault::ExpireSession`].
    SessionExpiry,
    /// [`Fault::Pause`].
    Pause,
    /// [`Fault::StaleReads`].
    StaleReads,
    /// [`Fault::Outage`].
    Outage,
    /// [`Fault::Partition`].
    Partition,
    /// [`Fault::LeaderElection`].
    LeaderElection,
    /// [`Fault::SessionMoved`].
    SessionMoved,
    /// [`Fault::ClientFreeze`].
    ClientFreeze,
    /// [`Fault::SlowDisk`].
    SlowDisk,
    /// [`Fault::LeaderLag`].
    LeaderLag,
}

impl FaultKind {
    /// Every kind, in a fixed order: the [`DEFAULT`](Self::DEFAULT) ones, then the
    /// [`ENSEMBLE`](Self::ENSEMBLE) ones.
    pub const ALL: [FaultKind; 13] = {
        let (one, many) = (FaultKind::DEFAULT, FaultKind::ENSEMBLE);
        let mut all = [FaultKind::RequestLost; 13];
        let mut i = 0;
        while i < all.len() {
            all[i] = if i < one.len() {
                one[i]
            } else {
                many[i - one.len()]
            };
            i += 1;
        }
        all
    };

    /// The kinds `all` draws: the seven one-server kinds. The ensemble kinds are asked for by
    /// name, or all thirteen with `every` (which runs a three-server ensemble, so it is slower;
    /// `avout soak --faults every` soaks every scenario under it).
    pub const DEFAULT: [FaultKind; 7] = [
        FaultKind::RequestLost,
        FaultKind::ReplyLost,
        FaultKind::Disconnect,
        FaultKind::SessionExpiry,
        FaultKind::Pause,
        FaultKind::StaleReads,
        FaultKind::Outage,
    ];

    /// The kinds that need an ensemble of servers.
    pub const ENSEMBLE: [FaultKind; 6] = [
        FaultKind::Partition,
        FaultKind::LeaderElection,
        FaultKind::SessionMoved,
        FaultKind::ClientFreeze,
        FaultKind::SlowDisk,
        FaultKind::LeaderLag,
    ];

    /// The kind named `name` (as [`FaultKind::name`] spells it).
    ///
    /// ```
    /// use avout_sim_zk::FaultKind;
    /// assert_eq!(FaultKind::from_name("client-freeze"), Some(FaultKind::ClientFreeze));
    /// assert_eq!(FaultKind::from_name("gremlins"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// A short kebab-case name.
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::FaultKind::Outage.name(), "outage");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::RequestLost => "request-lost",
            FaultKind::ReplyLost => "reply-lost",
            FaultKind::Disconnect => "disconnect",
            FaultKind::SessionExpiry => "session-expiry",
            FaultKind::Pause => "pause",
            FaultKind::StaleReads => "stale-reads",
            FaultKind::Outage => "outage",
            FaultKind::Partition => "partition",
            FaultKind::LeaderElection => "leader-election",
            FaultKind::SessionMoved => "session-moved",
            FaultKind::ClientFreeze => "client-freeze",
            FaultKind::SlowDisk => "slow-disk",
            FaultKind::LeaderLag => "leader-lag",
        }
    }
}

/// When a scheduled fault fires.
///
/// ```
/// let w = avout_sim_zk::When::Step(10);
/// assert_eq!(w, avout_sim_zk::When::Step(10));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum When {
    /// At this virtual time since the start of the run.
    At(Duration),
    /// Just before the service processes its n-th request (counting from 1).
    Step(u64),
}

/// Per-request probabilities of each fault, drawn from the run's fault stream.
///
/// Durations of drawn faults are fractions of the session timeout: disconnects last 10–50%
/// of it (the session survives), pauses 150–200% (it does not), stale reads 1–3 timeouts,
/// outages 20–60%, partitions of a client 10–60% and of a server 20–150%, election windows 10–60%, client freezes 30–200%
/// (some outlive the session, some do not), disk stalls 5–40%, leader lags 20–100%.
///
/// The ensemble kinds' rates default to zero when a case file written before them is read.
///
/// ```
/// let rates = avout_sim_zk::FaultRates { reply_lost: 0.01, ..Default::default() };
/// assert!(rates.any());
/// assert!(!avout_sim_zk::FaultRates::default().any());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultRates {
    /// [`Fault::RequestLost`].
    pub request_lost: f64,
    /// [`Fault::ReplyLost`].
    pub reply_lost: f64,
    /// [`Fault::Disconnect`] of the requesting client.
    pub disconnect: f64,
    /// [`Fault::ExpireSession`] of the requesting client.
    pub expire: f64,
    /// [`Fault::Pause`] of the requesting client.
    pub pause: f64,
    /// [`Fault::StaleReads`] for the requesting client.
    pub stale_reads: f64,
    /// [`Fault::Outage`].
    pub outage: f64,
    /// [`Fault::Partition`] of the requesting client, or of a server.
    #[serde(default)]
    pub partition: f64,
    /// [`Fault::LeaderElection`].
    #[serde(default)]
    pub leader_election: f64,
    /// [`Fault::SessionMoved`] of the requesting client.
    #[serde(default)]
    pub session_moved: f64,
    /// [`Fault::ClientFreeze`] of the requesting client.
    #[serde(default)]
    pub client_freeze: f64,
    /// [`Fault::SlowDisk`] (and the latency tail that comes with it).
    #[serde(default)]
    pub slow_disk: f64,
    /// [`Fault::LeaderLag`].
    #[serde(default)]
    pub leader_lag: f64,
}

impl FaultRates {
    /// The rate of `kind`, to read or set.
    ///
    /// ```
    /// use avout_sim_zk::{FaultKind, FaultRates};
    /// let mut rates = FaultRates::default();
    /// *rates.rate_mut(FaultKind::SlowDisk) = 0.5;
    /// assert_eq!(rates.slow_disk, 0.5);
    /// ```
    pub fn rate_mut(&mut self, kind: FaultKind) -> &mut f64 {
        match kind {
            FaultKind::RequestLost => &mut self.request_lost,
            FaultKind::ReplyLost => &mut self.reply_lost,
            FaultKind::Disconnect => &mut self.disconnect,
            FaultKind::SessionExpiry => &mut self.expire,
            FaultKind::Pause => &mut self.pause,
            FaultKind::StaleReads => &mut self.stale_reads,
            FaultKind::Outage => &mut self.outage,
            FaultKind::Partition => &mut self.partition,
            FaultKind::LeaderElection => &mut self.leader_election,
            FaultKind::SessionMoved => &mut self.session_moved,
            FaultKind::ClientFreeze => &mut self.client_freeze,
            FaultKind::SlowDisk => &mut self.slow_disk,
            FaultKind::LeaderLag => &mut self.leader_lag,
        }
    }

    /// The rate of `kind`.
    ///
    /// ```
    /// use avout_sim_zk::{FaultKind, FaultRates};
    /// assert_eq!(FaultRates::chaos().rate(FaultKind::Outage), 0.0003);
    /// ```
    pub fn rate(&self, kind: FaultKind) -> f64 {
        let mut copy = *self;
        *copy.rate_mut(kind)
    }

    /// Whether any rate is positive.
    ///
    /// ```
    /// assert!(avout_sim_zk::FaultRates::chaos().any());
    /// ```
    pub fn any(&self) -> bool {
        [
            self.request_lost,
            self.reply_lost,
            self.disconnect,
            self.expire,
            self.pause,
            self.stale_reads,
            self.outage,
        ]
        .iter()
        .any(|&p| p > 0.0)
            || self.any_ensemble()
    }

    /// Whether any ensemble kind's rate is positive (the run then needs several servers).
    ///
    /// ```
    /// let rates = avout_sim_zk::FaultRates { slow_disk: 0.01, ..Default::default() };
    /// assert!(rates.any_ensemble());
    /// ```
    pub fn any_ensemble(&self) -> bool {
        [
            self.partition,
            self.leader_election,
            self.session_moved,
            self.client_freeze,
            self.slow_disk,
            self.leader_lag,
        ]
        .iter()
        .any(|&p| p > 0.0)
    }

    /// A mix of the seven one-server faults, frequent enough that a few thousand requests see
    /// each kind.
    ///
    /// ```
    /// assert!(avout_sim_zk::FaultRates::chaos().reply_lost > 0.0);
    /// ```
    pub fn chaos() -> Self {
        FaultRates {
            request_lost: 0.01,
            reply_lost: 0.01,
            disconnect: 0.003,
            expire: 0.0005,
            pause: 0.0005,
            stale_reads: 0.002,
            outage: 0.0003,
            ..FaultRates::default()
        }
    }

    /// [`FaultRates::chaos`] and the ensemble kinds too.
    ///
    /// ```
    /// assert!(avout_sim_zk::FaultRates::chaos_all().any_ensemble());
    /// assert!(!avout_sim_zk::FaultRates::chaos().any_ensemble());
    /// ```
    pub fn chaos_all() -> Self {
        FaultRates {
            partition: 0.001,
            leader_election: 0.0003,
            session_moved: 0.002,
            client_freeze: 0.0005,
            slow_disk: 0.001,
            leader_lag: 0.001,
            ..FaultRates::chaos()
        }
    }
}
