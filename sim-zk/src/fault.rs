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
            | Fault::StaleReads { client, .. } => Some(*client),
            Fault::Outage { .. } => None,
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
}

impl FaultKind {
    /// Every kind, in a fixed order.
    pub const ALL: [FaultKind; 7] = [
        FaultKind::RequestLost,
        FaultKind::ReplyLost,
        FaultKind::Disconnect,
        FaultKind::SessionExpiry,
        FaultKind::Pause,
        FaultKind::StaleReads,
        FaultKind::Outage,
    ];

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
/// outages 20–60%.
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
}

impl FaultRates {
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
    }

    /// A mix of every fault, frequent enough that a few thousand requests see each kind.
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
        }
    }
}
