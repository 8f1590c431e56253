//! Which workload client each simulator session belongs to.
//!
//! A simulator client is a *session* (a connection index); a workload client opens a new one
//! after its session ends. Nothing in the history names its sessions, so they are matched by
//! time. Client code runs on tokio's paused clock, which moves in whole milliseconds (its
//! timer resolution), while the simulator times its messages to the nanosecond. So an
//! operation is invoked on some tick and its first request goes out on that very tick; and it
//! completes on the first tick after the reply (or session change) that ended it arrived.
//! Every operation thus names the sessions that could have run it: those sending a request
//! the tick it began and hearing back within the tick before it ended (or, if nobody heard
//! anything then, it ended on a timer: those sending when it began). Its client's session
//! is always among them, another client's only when both coincide, which with several clients
//! on one clock happens, but not often twice. Each operation gives its lane one vote, split
//! among its candidate sessions, and a session goes to the lane with strictly the most votes,
//! if they add up to at least one (a session that ran nothing may share one coincidence).
//! (That a lane merely had an operation open when a session spoke is no sign: busy clients
//! always have one.)
//!
//! A session that expired before its client's first operation has no votes. It is matched
//! through the session its client opened on the first tick after hearing of the expiry (a
//! connection is rare enough that its tick names it). Any session left is drawn in a lane of
//! its own: unmatched, rather than guessed.

use std::collections::{BTreeMap, BTreeSet};

use avout::SessionState;
use avout_sim_zk::LogEvent;

use super::timeline::Op;

/// The paused clock's step, in nanoseconds.
const TICK: u64 = 1_000_000;

/// The first tick at or after `t`.
fn tick_after(t: u64) -> u64 {
    t.div_ceil(TICK) * TICK
}

/// Each matched session's lane.
pub(crate) fn match_sessions(log: &[LogEvent], ops: &[Op], lanes: usize) -> BTreeMap<usize, usize> {
    // Per session: the ticks it sent requests on, the times it heard (replies, state changes).
    let mut sent: BTreeMap<u64, BTreeSet<usize>> = BTreeMap::new();
    let mut heard: Vec<(u64, usize)> = Vec::new();
    for entry in log {
        match entry {
            LogEvent::Request { t, client, .. } => {
                sent.entry(*t).or_default().insert(*client);
            }
            LogEvent::Reply { t, client, .. } | LogEvent::State { t, client, .. } => {
                heard.push((*t, *client));
            }
            _ => {}
        }
    }
    heard.sort_unstable();
    let mut votes: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for op in ops {
        let Some(starters) = sent.get(&op.start) else {
            continue;
        };
        let candidates: Vec<usize> = match op.end {
            Some(end) => {
                let from = heard.partition_point(|&(t, _)| t + TICK <= end);
                let to = heard.partition_point(|&(t, _)| t <= end);
                let enders: BTreeSet<usize> = heard[from..to].iter().map(|&(_, c)| c).collect();
                if enders.is_empty() {
                    // Nothing arrived just before: it ended on a timer (a deadline).
                    starters.iter().copied().collect()
                } else {
                    starters.intersection(&enders).copied().collect()
                }
            }
            None => starters.iter().copied().collect(),
        };
        for &session in &candidates {
            votes.entry(session).or_insert_with(|| vec![0.0; lanes])[op.lane] +=
                1.0 / candidates.len() as f64;
        }
    }
    let mut matched: BTreeMap<usize, usize> = votes
        .into_iter()
        .filter_map(|(session, row)| {
            let best = row.iter().copied().fold(0.0, f64::max);
            let mut at = row.iter().enumerate().filter(|&(_, &v)| v == best);
            let (lane, _) = at.next()?;
            (best >= 1.0 && at.next().is_none()).then_some((session, lane))
        })
        .collect();
    hand_over(log, &mut matched);
    matched
}

/// Matches sessions without votes through the session opened on the tick after they ended,
/// or the session that ended on the tick before they opened.
fn hand_over(log: &[LogEvent], matched: &mut BTreeMap<usize, usize>) {
    let mut ended: BTreeMap<usize, u64> = BTreeMap::new();
    let mut opened: BTreeMap<usize, u64> = BTreeMap::new();
    for entry in log {
        match entry {
            LogEvent::Connect { t, client, .. } => {
                opened.insert(*client, *t);
            }
            // Expiry, not closing: a client renews a session that expired under it.
            LogEvent::State { t, client, state } if *state == SessionState::Expired => {
                ended.entry(*client).or_insert(tick_after(*t));
            }
            _ => {}
        }
    }
    let sessions: BTreeSet<usize> = ended.keys().chain(opened.keys()).copied().collect();
    loop {
        let mut changed = false;
        for &s in &sessions {
            if matched.contains_key(&s) {
                continue;
            }
            let lanes: BTreeSet<usize> = matched
                .iter()
                .filter(|&(other, _)| {
                    let next = ended.get(&s).is_some_and(|t| opened.get(other) == Some(t));
                    let prev = opened.get(&s).is_some_and(|t| ended.get(other) == Some(t));
                    next || prev
                })
                .map(|(_, &lane)| lane)
                .collect();
            if let [lane] = lanes.into_iter().collect::<Vec<_>>()[..] {
                matched.insert(s, lane);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}
