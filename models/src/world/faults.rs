//! [`Faults`]: which faults the environment may inject, and how many in one run.

use std::fmt;
use std::str::FromStr;

use stateright::{Model, Property};

use super::{Agent, World};

/// A kind of fault the model ZooKeeper can inject (see [`crate::world::Action`]).
///
/// ```
/// use avout_models::world::FaultKind;
/// assert_eq!("stale-read".parse::<FaultKind>(), Ok(FaultKind::StaleRead));
/// assert_eq!(FaultKind::Outage.to_string(), "outage");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// A request lost before the server sees it, with its connection.
    RequestLost,
    /// A request applied and its reply lost, with its connection.
    ReplyLost,
    /// A session expired by the server.
    Expiry,
    /// A connection broken while nothing is on its way to the server (replies on their way
    /// back are lost with it); the client reconnects within its session.
    Disconnect,
    /// A session moved to a lagging follower: its reads see the tree as the follower has it
    /// (monotonic, its own writes included) until the follower catches up.
    StaleRead,
    /// The whole service unreachable: every client's connection breaks at once.
    Outage,
}

impl FaultKind {
    /// Every kind, in a fixed order.
    pub const ALL: [FaultKind; 6] = [
        FaultKind::RequestLost,
        FaultKind::ReplyLost,
        FaultKind::Expiry,
        FaultKind::Disconnect,
        FaultKind::StaleRead,
        FaultKind::Outage,
    ];

    /// The kinds every model draws on unless told otherwise: the faults every property is
    /// about (a lost request, a lost reply, an expired session). The others are asked for
    /// by name: they enlarge the state space, and matter to some properties only.
    pub const CLASSIC: [FaultKind; 3] = [
        FaultKind::RequestLost,
        FaultKind::ReplyLost,
        FaultKind::Expiry,
    ];

    /// The kind's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::RequestLost => "request-lost",
            FaultKind::ReplyLost => "reply-lost",
            FaultKind::Expiry => "expiry",
            FaultKind::Disconnect => "disconnect",
            FaultKind::StaleRead => "stale-read",
            FaultKind::Outage => "outage",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FaultKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let known: Vec<_> = FaultKind::ALL.iter().map(|k| k.name()).collect();
                format!("no fault kind {s:?} (known: {})", known.join(", "))
            })
    }
}

/// Which faults the environment may inject, and how many in one run.
///
/// ```
/// use avout_models::world::{FaultKind, Faults};
/// assert!(Faults::classic(2).reply_lost);
/// assert!(!Faults::classic(2).stale_read);
/// assert!(Faults::of(1, &[FaultKind::Outage]).outage);
/// assert_eq!(Faults::NONE.budget, 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Faults {
    /// At most this many faults per run.
    pub budget: u8,
    /// A request lost before the server sees it.
    pub request_lost: bool,
    /// A request applied and its reply lost.
    pub reply_lost: bool,
    /// A session expired by the server.
    pub expiry: bool,
    /// A connection broken with nothing on its way to the server.
    pub disconnect: bool,
    /// A session moved to a lagging follower.
    pub stale_read: bool,
    /// Every connection broken at once.
    pub outage: bool,
}

impl Faults {
    /// No faults. See [`Faults`] for an example.
    pub const NONE: Faults = Faults {
        budget: 0,
        request_lost: false,
        reply_lost: false,
        expiry: false,
        disconnect: false,
        stale_read: false,
        outage: false,
    };

    /// The [`FaultKind::CLASSIC`] kinds, at most `budget` of them per run. See [`Faults`].
    pub fn classic(budget: u8) -> Faults {
        Faults::of(budget, &FaultKind::CLASSIC)
    }

    /// `kinds`, at most `budget` of them per run. See [`Faults`].
    pub fn of(budget: u8, kinds: &[FaultKind]) -> Faults {
        let has = |k| budget > 0 && kinds.contains(&k);
        Faults {
            budget,
            request_lost: has(FaultKind::RequestLost),
            reply_lost: has(FaultKind::ReplyLost),
            expiry: has(FaultKind::Expiry),
            disconnect: has(FaultKind::Disconnect),
            stale_read: has(FaultKind::StaleRead),
            outage: has(FaultKind::Outage),
        }
    }
}

/// The `sometimes` properties that show the faults beyond the classic ones are reached (a
/// model passes no check vacuously): each model adds them to its own.
pub(crate) fn examples<M, A>(faults: &Faults) -> Vec<Property<M>>
where
    M: Model<State = World<A>>,
    A: Agent,
{
    let mut examples = Vec::new();
    if faults.stale_read {
        examples.push(Property::sometimes(
            "a stale read served",
            |_: &M, s: &World<A>| s.clients.iter().any(|c| c.read_stale),
        ));
    }
    if faults.disconnect || faults.outage {
        examples.push(Property::sometimes(
            "a cut connection restored",
            |_: &M, s: &World<A>| s.clients.iter().any(|c| c.cut && c.connected),
        ));
    }
    examples
}
