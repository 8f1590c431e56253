//! Faults drawn at rates turned into a schedule read from a run's log (step 2 of the
//! shrinker), and faults moved between runs of different sizes.

use std::collections::BTreeMap;
use std::time::Duration;

use avout_sim_zk::{Cut, Fault, FaultKind, LogEvent, When};

/// A request's arrival at the service, in a run's log.
#[derive(Clone, Copy, Debug)]
pub(super) struct Arrival {
    /// Its step (counting from 1).
    pub(super) step: u64,
    /// When.
    pub(super) t: u64,
    /// Whose.
    pub(super) client: usize,
    /// Which of that client's arrivals (counting from 1).
    pub(super) nth: u64,
}

/// The arrivals of a log, in order: every request the service received (applied or lost).
pub(super) fn arrivals(log: &[LogEvent]) -> Vec<Arrival> {
    let mut per_client: BTreeMap<usize, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for e in log {
        let (t, client) = match e {
            LogEvent::Applied { t, client, .. } => (*t, *client),
            LogEvent::Fault {
                t,
                kind: FaultKind::RequestLost,
                client: Some(client),
                ..
            } => (*t, *client),
            _ => continue,
        };
        let nth = per_client.entry(client).or_default();
        *nth += 1;
        out.push(Arrival {
            step: out.len() as u64 + 1,
            t,
            client,
            nth: *nth,
        });
    }
    out
}

/// A session fault of `kind` on `client` lasting `duration` (or, from a log that did not
/// record it, a typical one: the middle of the range the simulator draws from).
pub(super) fn with_duration(
    kind: FaultKind,
    client: Option<usize>,
    duration: Option<Duration>,
    timeout: Duration,
) -> Option<Fault> {
    let pct = |p: u32| duration.unwrap_or(timeout * p / 100);
    Some(match (kind, client) {
        (FaultKind::Disconnect, Some(client)) => Fault::Disconnect {
            client,
            duration: pct(30),
        },
        (FaultKind::Pause, Some(client)) => Fault::Pause {
            client,
            duration: pct(175),
        },
        (FaultKind::StaleReads, Some(client)) => Fault::StaleReads {
            client,
            duration: pct(200),
        },
        (FaultKind::SessionExpiry, Some(client)) => Fault::ExpireSession { client },
        (FaultKind::Outage, _) => Fault::Outage { duration: pct(40) },
        // The log keeps who a partition cut off only for a client; a server cut becomes
        // one of the first follower.
        (FaultKind::Partition, Some(client)) => Fault::Partition {
            cut: Cut::Client {
                client,
                one_way: false,
            },
            duration: pct(35),
        },
        (FaultKind::Partition, None) => Fault::Partition {
            cut: Cut::Server { server: 1 },
            duration: pct(85),
        },
        (FaultKind::LeaderElection, _) => Fault::LeaderElection { duration: pct(35) },
        (FaultKind::SessionMoved, Some(client)) => Fault::SessionMoved { client },
        (FaultKind::ClientFreeze, Some(client)) => Fault::ClientFreeze {
            client,
            duration: pct(115),
        },
        (FaultKind::SlowDisk, _) => Fault::SlowDisk { duration: pct(22) },
        (FaultKind::LeaderLag, _) => Fault::LeaderLag { duration: pct(60) },
        _ => return None,
    })
}

/// The faults of a run's log as an explicit schedule (see the module docs).
///
/// ```
/// use avout_sim_zk::{FaultKind, LogEvent, When, Fault};
/// use std::time::Duration;
/// let log = vec![
///     LogEvent::Applied { t: 10, client: 0, xid: 1, zxid: 1, outcome: "ok".into() },
///     LogEvent::Fault { t: 20, kind: FaultKind::RequestLost, client: Some(1), duration: None },
///     LogEvent::Fault { t: 20, kind: FaultKind::Pause, client: Some(1), duration: Some(7_000) },
/// ];
/// let s = avout_scenarios::scenario::shrink::schedule_from_log(&log, Duration::from_secs(4));
/// assert_eq!(s, vec![
///     (When::Step(2), Fault::RequestLost { client: None }),
///     (When::At(Duration::from_nanos(21)), Fault::Pause { client: 1, duration: Duration::from_nanos(6_999) }),
/// ]);
/// ```
pub fn schedule_from_log(log: &[LogEvent], timeout: Duration) -> Vec<(When, Fault)> {
    let arrived = arrivals(log);
    let mut step = 0u64;
    let mut out = Vec::new();
    for e in log {
        match e {
            LogEvent::Applied { .. } => step += 1,
            LogEvent::Fault {
                kind: FaultKind::RequestLost,
                ..
            } => {
                step += 1;
                out.push((When::Step(step), Fault::RequestLost { client: None }));
            }
            LogEvent::Fault {
                kind: FaultKind::ReplyLost,
                ..
            } => out.push((When::Step(step), Fault::ReplyLost { client: None })),
            LogEvent::Fault {
                t,
                kind,
                client,
                duration,
            } => {
                // Before the next request if it arrived at the same instant (requests
                // pipelined together); else one nanosecond later and one shorter, so that
                // it ends when the drawn one did.
                let next = arrived.get(step as usize).filter(|a| a.t == *t);
                let (when, duration) = match next {
                    Some(a) => (When::Step(a.step), duration.map(Duration::from_nanos)),
                    None => (
                        When::At(Duration::from_nanos(t + 1)),
                        duration.map(|d| Duration::from_nanos(d.saturating_sub(1))),
                    ),
                };
                if let Some(f) = with_duration(*kind, *client, duration, timeout) {
                    out.push((when, f));
                }
            }
            _ => {}
        }
    }
    out
}

/// The client a fault hits ([`Fault::client`]; `None`: any client's next request, or everyone).
///
/// ```
/// use avout_sim_zk::Fault;
/// assert_eq!(avout_scenarios::scenario::shrink::fault_client(&Fault::ExpireSession { client: 2 }), Some(2));
/// ```
pub fn fault_client(f: &Fault) -> Option<usize> {
    f.client()
}

/// `f` aimed at `client` instead (an outage hits everyone; a lost message is the one at its
/// step, whoever sent it).
pub(super) fn retarget(f: &Fault, client: usize) -> Fault {
    let mut f = f.clone();
    match &mut f {
        Fault::RequestLost { client: c } | Fault::ReplyLost { client: c } => *c = None,
        Fault::Disconnect { client: c, .. }
        | Fault::ExpireSession { client: c }
        | Fault::Pause { client: c, .. }
        | Fault::StaleReads { client: c, .. }
        | Fault::SessionMoved { client: c }
        | Fault::ClientFreeze { client: c, .. }
        | Fault::Partition {
            cut: Cut::Client { client: c, .. },
            ..
        } => *c = client,
        Fault::Outage { .. }
        | Fault::Partition { .. }
        | Fault::LeaderElection { .. }
        | Fault::SlowDisk { .. }
        | Fault::LeaderLag { .. } => {}
    }
    f
}

/// The simulator's client `c` of a run of `from` clients, in a run of `to` (fewer) clients:
/// the workload's own clients keep their index, later sessions (reconnections, a final
/// reader) move down; a removed client's is `None`.
pub(super) fn map_client(c: usize, from: usize, to: usize) -> Option<usize> {
    if c < to {
        Some(c)
    } else if c < from {
        None
    } else {
        Some(c - (from - to))
    }
}
