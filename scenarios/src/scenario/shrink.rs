//! Shrinking a failing case to a small, 1-minimal failing one.
//!
//! The size of a case is its number of **steps**: clients × operations per client, plus its
//! scheduled faults (for a plan that still draws faults at rates, the faults that fired).
//! The counter's final read and each scenario's setup are not counted: they are not the
//! workload's to choose.
//!
//! A candidate *still fails* when one of its anomalies is of the original failure's class
//! (Hypothesis keeps a failure's origin the same way): a workload error (`error: …`), a
//! panic with the same message up to its first colon, a missed deadline (`liveness: …`),
//! or a checker's anomaly. So a safety violation never shrinks into a mere stall, nor a
//! panic of the protocol into the simulator's complaint about a fault that names a client
//! the smaller run never opens. Every candidate is a fresh, seeded run (same seed: runs are
//! a function of seed, workload and plan), remembered so it is never run twice.
//!
//! 1. **Rates.** A plan that draws faults at rates is first tried with no faults, then with
//!    each kind switched off, then with fewer clients and fewer operations (under rates the
//!    n-th request draws the same faults whatever the workload).
//! 2. **Rates become a schedule** read from the run's event log ([`schedule_from_log`]): a
//!    lost request or reply at the step (the n-th request the service received) where it
//!    happened, for the client it hit; a disconnect, pause, stale-read period, expiry or
//!    outage just after the request that drew it: before the next request if that arrived
//!    at the same instant (pipelined with it), else one nanosecond later (a scheduled fault
//!    at the same instant would fire before the request) and one nanosecond shorter than
//!    the log recorded, so that it ends when the drawn one did. (Not exact in one case: a
//!    drawn fault that cut off requests pipelined behind the one that drew it, arriving at
//!    the same instant; no `When` fires between two arrivals of one instant.) The
//!    schedule is kept if the run still fails with it; else the rates stay and the
//!    conversion is tried again after every round below.
//! 3. **Until nothing more can go** (a fixpoint): the faults by delta debugging (Zeller's
//!    ddmin, ending with every single fault tried out); then fewer clients, then fewer
//!    operations per client, each smaller count tried from 1 up. A smaller workload shifts
//!    the steps, so each count is tried with the faults (a) where they were, (b) re-derived
//!    from a fresh log of the smaller run: each fault is anchored to the request it hit
//!    (its client and that client's n-th request to reach the service) and placed, one at a
//!    time in firing order, where that request arrives in the smaller run, and (c) in a
//!    small run ([`SWEEP_OPS`] operations, [`SWEEP_FAULTS`] faults), with the first fault
//!    at each request of the fault-free smaller run in turn and the others at their
//!    distances in time from it (a pause and the outage its client wakes into stay
//!    together). When neither count can go alone, both are tried at once, down to the
//!    sizes (c) covers.
//!
//! 4. **A race.** When no fault is left (the failure is an interleaving, as the planted STM
//!    bugs' are), other seeds are tried (a seed chooses the network's latencies, and so the
//!    interleaving): round after round, the next seed under every workload with fewer
//!    steps than the smallest failing one found yet, for up to [`SEED_ROUNDS`] seeds or the
//!    budget; the smallest found is shrunk again by step 3 under its seed.
//!
//! The result is 1-minimal: removing any one fault, one client or one operation per client
//! makes it pass (or change its failure's class), within the run budget. It is recorded
//! (with its choices) as a new [`Case`], whose seed step 4 may have changed.

use std::collections::BTreeMap;
use std::time::Duration;

use avout_sim_zk::{Fault, FaultKind, FaultRates, LogEvent, When};

use super::case::Case;
use super::explore::explore_runs;
use super::{
    ERROR_PREFIX, FaultPlan, Report, RunError, SIM_SESSION_TIMEOUT, Workload, run_sim,
    run_sim_inner,
};

/// What shrinking did.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The smallest failing case found.
    pub case: Case,
    /// Candidate runs made.
    pub runs: u64,
    /// Steps (see the module docs) before and after.
    pub steps: (usize, usize),
    /// Operations (clients × ops per client) before and after.
    pub ops: (usize, usize),
    /// Faults that fired in the original run, and scheduled faults in the shrunk one.
    pub faults: (u64, usize),
    /// Whether the faults could be turned into an explicit schedule.
    pub scheduled: bool,
}

/// Why a case could not be shrunk.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShrinkError {
    /// The case does not fail when re-run from its seed.
    #[error("the case does not fail when re-run from its seed and fault plan: nothing to shrink")]
    NotFailing,
    /// A run could not be made.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// The class of a failure (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Class {
    Error,
    Panic(String),
    Liveness,
    Anomaly,
}

/// Whether anomaly `b` is a failure of the same class as anomaly `a` (see the module docs):
/// what the shrinker asks of every candidate.
///
/// ```
/// use avout_scenarios::scenario::shrink::same_failure;
/// assert!(same_failure("error: the final read never succeeded", "error: set failed 100 times"));
/// assert!(!same_failure("holds overlap: …", "liveness: process 1's acquire …"));
/// ```
pub fn same_failure(a: &str, b: &str) -> bool {
    Class::of(a) == Class::of(b)
}

impl Class {
    fn of(anomaly: &str) -> Class {
        if anomaly.starts_with(ERROR_PREFIX) {
            Class::Error
        } else if let Some(message) = anomaly.strip_prefix("the run panicked: ") {
            let head = message.split(':').next().unwrap_or_default();
            Class::Panic(head.chars().filter(|c| !c.is_ascii_digit()).collect())
        } else if anomaly.starts_with("liveness: ") {
            Class::Liveness
        } else {
            Class::Anomaly
        }
    }
}

/// A request's arrival at the service, in a run's log.
#[derive(Clone, Copy, Debug)]
struct Arrival {
    /// Its step (counting from 1).
    step: u64,
    /// When.
    t: u64,
    /// Whose.
    client: usize,
    /// Which of that client's arrivals (counting from 1).
    nth: u64,
}

/// The arrivals of a log, in order: every request the service received (applied or lost).
fn arrivals(log: &[LogEvent]) -> Vec<Arrival> {
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
fn with_duration(
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

/// The client a fault hits (`None`: any client's next request, or everyone).
///
/// ```
/// use avout_sim_zk::Fault;
/// assert_eq!(avout_scenarios::scenario::shrink::fault_client(&Fault::ExpireSession { client: 2 }), Some(2));
/// ```
pub fn fault_client(f: &Fault) -> Option<usize> {
    match f {
        Fault::RequestLost { client } | Fault::ReplyLost { client } => *client,
        Fault::Disconnect { client, .. }
        | Fault::ExpireSession { client }
        | Fault::Pause { client, .. }
        | Fault::StaleReads { client, .. } => Some(*client),
        Fault::Outage { .. } => None,
    }
}

/// `f` aimed at `client` instead (an outage hits everyone; a lost message is the one at its
/// step, whoever sent it).
fn retarget(f: &Fault, client: usize) -> Fault {
    let mut f = f.clone();
    match &mut f {
        Fault::RequestLost { client: c } | Fault::ReplyLost { client: c } => *c = None,
        Fault::Disconnect { client: c, .. }
        | Fault::ExpireSession { client: c }
        | Fault::Pause { client: c, .. }
        | Fault::StaleReads { client: c, .. } => *c = client,
        Fault::Outage { .. } => {}
    }
    f
}

/// The simulator's client `c` of a run of `from` clients, in a run of `to` (fewer) clients:
/// the workload's own clients keep their index, later sessions (reconnections, a final
/// reader) move down; a removed client's is `None`.
fn map_client(c: usize, from: usize, to: usize) -> Option<usize> {
    if c < to {
        Some(c)
    } else if c < from {
        None
    } else {
        Some(c - (from - to))
    }
}

/// Delta debugging: a sublist of `items` for which `fails` holds and from which no single
/// item can be removed (1-minimal), as far as `fails` answers (a spent budget says no).
fn ddmin<T: Clone>(mut items: Vec<T>, mut fails: impl FnMut(&[T]) -> bool) -> Vec<T> {
    if items.is_empty() || fails(&[]) {
        return Vec::new();
    }
    let mut n = 2usize;
    while items.len() >= 2 {
        let chunk = items.len().div_ceil(n);
        let removable = (0..n)
            .map(|i| i * chunk)
            .take_while(|&lo| lo < items.len())
            .find_map(|lo| {
                let hi = (lo + chunk).min(items.len());
                let complement: Vec<T> = items[..lo].iter().chain(&items[hi..]).cloned().collect();
                fails(&complement).then_some(complement)
            });
        if let Some(complement) = removable {
            items = complement;
            n = (n - 1).max(2);
        } else {
            if n >= items.len() {
                break;
            }
            n = (n * 2).min(items.len());
        }
    }
    items
}

/// The smallest count in `1..current` for which `fails` holds, trying each from 1 up
/// (failure need not be monotone in a count); `current` if none does.
fn smallest(current: usize, mut fails: impl FnMut(usize) -> bool) -> usize {
    (1..current).find(|&k| fails(k)).unwrap_or(current)
}

fn rate_of(rates: &mut FaultRates, kind: FaultKind) -> &mut f64 {
    match kind {
        FaultKind::RequestLost => &mut rates.request_lost,
        FaultKind::ReplyLost => &mut rates.reply_lost,
        FaultKind::Disconnect => &mut rates.disconnect,
        FaultKind::SessionExpiry => &mut rates.expire,
        FaultKind::Pause => &mut rates.pause,
        FaultKind::StaleReads => &mut rates.stale_reads,
        FaultKind::Outage => &mut rates.outage,
    }
}

/// A candidate's identity, for the memo.
fn key(w: &Workload, plan: &FaultPlan) -> String {
    serde_json::to_string(&(w, plan)).expect("workloads and plans serialise")
}

/// A fault of the current schedule, where it hit and when it fired.
#[derive(Clone, Debug)]
struct Anchored {
    anchor: Anchor,
    fault: Fault,
    /// When it fired (virtual nanoseconds).
    fired: u64,
}

/// Where a fault of the current schedule hit, so it can be placed in a smaller run.
#[derive(Clone, Debug)]
enum Anchor {
    /// At (`At`: `after` nanoseconds after) the `nth` arrival of `client`.
    Arrival {
        client: usize,
        nth: u64,
        after: Option<u64>,
    },
    /// At a time no request preceded.
    Time(Duration),
}

struct Search<'a> {
    case: &'a Case,
    class: Class,
    runs: u64,
    budget: u64,
    memo: BTreeMap<String, bool>,
}

impl Search<'_> {
    fn spent(&self) -> bool {
        self.runs >= self.budget
    }

    /// One run (counted), keeping its log if `keep_log`.
    fn run(
        &mut self,
        w: &Workload,
        plan: &FaultPlan,
        keep_log: bool,
    ) -> Option<(Report, Vec<LogEvent>)> {
        if !self.safe(w, plan) {
            return None;
        }
        self.run_unchecked(w, plan, keep_log)
    }

    fn run_unchecked(
        &mut self,
        w: &Workload,
        plan: &FaultPlan,
        keep_log: bool,
    ) -> Option<(Report, Vec<LogEvent>)> {
        if self.spent() {
            return None;
        }
        self.runs += 1;
        run_sim_inner(w, plan, self.case.planted, false, None, keep_log).ok()
    }

    /// Whether every scheduled fault of `plan` names a client that exists when it fires.
    ///
    /// The simulator refuses (panics on) a fault aimed at a session not yet opened, and a
    /// smaller candidate may not open a later session (a reconnection) in time, or at all.
    /// The workload's own clients open first, at once; for a fault on a later session the
    /// run without that fault (itself checked first) is the same run up to the moment it
    /// fires, and its log says whether the session was open by then.
    fn safe(&mut self, w: &Workload, plan: &FaultPlan) -> bool {
        let key = format!("safe {}", key(w, plan));
        if let Some(&known) = self.memo.get(&key) {
            return known;
        }
        let mut safe = true;
        for (i, (when, f)) in plan.scheduled.iter().enumerate() {
            let Some(c) = fault_client(f).filter(|&c| c >= w.clients) else {
                continue;
            };
            let mut without = plan.clone();
            without.scheduled.remove(i);
            let log = match self.safe(w, &without) {
                true => self.run_unchecked(w, &without, true).map(|(_, log)| log),
                false => None,
            };
            let Some(log) = log else {
                safe = false;
                break;
            };
            let opened = log.iter().find_map(|e| match e {
                LogEvent::Connect { t, client, .. } if *client == c => Some(*t),
                _ => None,
            });
            let end = log.last().map_or(0, LogEvent::time);
            let fires = match when {
                When::At(at) => Some(at.as_nanos() as u64).filter(|&t| t <= end),
                When::Step(n) => arrivals(&log).get(*n as usize - 1).map(|a| a.t),
            };
            if fires.is_some_and(|t| opened.is_none_or(|o| o >= t)) {
                safe = false;
                break;
            }
        }
        self.memo.insert(key, safe);
        safe
    }

    fn still_fails(&self, report: &Report) -> bool {
        report
            .verdict
            .anomalies
            .iter()
            .any(|a| Class::of(a) == self.class)
    }

    /// Whether `w` under `plan` fails with the original failure's class.
    fn fails(&mut self, w: &Workload, plan: &FaultPlan) -> bool {
        let key = key(w, plan);
        if let Some(&known) = self.memo.get(&key) {
            return known;
        }
        let Some((report, _)) = self.run(w, plan, false) else {
            return false;
        };
        let fails = self.still_fails(&report);
        self.memo.insert(key, fails);
        fails
    }

    /// The log of `w` under `plan` (`None` once the budget is spent).
    fn log(&mut self, w: &Workload, plan: &FaultPlan) -> Option<Vec<LogEvent>> {
        self.run(w, plan, true).map(|(_, log)| log)
    }

    /// Anchors of `plan`'s scheduled faults in the log of their run.
    fn anchors(&mut self, w: &Workload, plan: &FaultPlan) -> Option<Vec<Anchored>> {
        let log = self.log(w, plan)?;
        let arrived = arrivals(&log);
        let anchors = plan
            .scheduled
            .iter()
            .map(|(when, f)| {
                let anchor = match when {
                    When::Step(n) => arrived.get(*n as usize - 1).map(|a| Anchor::Arrival {
                        client: a.client,
                        nth: a.nth,
                        after: None,
                    }),
                    When::At(at) => {
                        let at = at.as_nanos() as u64;
                        arrived
                            .iter()
                            .rev()
                            .find(|a| a.t < at)
                            .map(|a| Anchor::Arrival {
                                client: a.client,
                                nth: a.nth,
                                after: Some(at - a.t),
                            })
                    }
                };
                let anchor = anchor.unwrap_or(match when {
                    When::At(at) => Anchor::Time(*at),
                    When::Step(_) => Anchor::Time(Duration::ZERO),
                });
                let fired = match when {
                    When::At(at) => at.as_nanos() as u64,
                    When::Step(n) => arrived.get(*n as usize - 1).map_or(0, |a| a.t),
                };
                Anchored {
                    anchor,
                    fault: f.clone(),
                    fired,
                }
            })
            .collect();
        Some(anchors)
    }

    /// The faults anchored in a run of `from` clients, placed in a run of `w` (see the
    /// module docs, 3b): one run per fault, in firing order.
    fn place(
        &mut self,
        w: &Workload,
        rates: FaultRates,
        anchors: &[Anchored],
        from: usize,
    ) -> Option<FaultPlan> {
        let mut plan = FaultPlan {
            rates,
            scheduled: Vec::new(),
        };
        for Anchored {
            anchor, fault: f, ..
        } in anchors
        {
            let target = fault_client(f).map(|c| map_client(c, from, w.clients));
            if target == Some(None) {
                continue;
            }
            let placed = match anchor {
                Anchor::Time(at) => Some(When::At(*at)),
                Anchor::Arrival { client, nth, after } => {
                    let Some(client) = map_client(*client, from, w.clients) else {
                        continue;
                    };
                    let log = self.log(w, &plan)?;
                    arrivals(&log)
                        .into_iter()
                        .find(|a| a.client == client && a.nth == *nth)
                        .map(|a| match after {
                            None => When::Step(a.step),
                            Some(d) => When::At(Duration::from_nanos(a.t + d)),
                        })
                }
            };
            if let Some(when) = placed {
                let f = match target.flatten() {
                    Some(c) => retarget(f, c),
                    None => f.clone(),
                };
                plan.scheduled.push((when, f));
            }
        }
        Some(plan)
    }

    /// `w` fails with `plan`'s faults carried over from a run of `from` clients, tried as
    /// in the module docs (3a–c); the plan that fails, if one does.
    fn carried(
        &mut self,
        w: &Workload,
        plan: &FaultPlan,
        anchors: &[Anchored],
        from: usize,
    ) -> Option<FaultPlan> {
        // (a) Where they were.
        let same = FaultPlan {
            rates: plan.rates,
            scheduled: plan
                .scheduled
                .iter()
                .filter(|(_, f)| fault_client(f).is_none_or(|c| c < w.clients))
                .cloned()
                .collect(),
        };
        if self.fails(w, &same) {
            return Some(same);
        }
        if plan.scheduled.is_empty() {
            return None;
        }
        // (b) Re-derived from the smaller run's log.
        if let Some(placed) = self.place(w, plan.rates, anchors, from)
            && placed != same
            && self.fails(w, &placed)
        {
            return Some(placed);
        }
        // (c) The faults at their distances in time, the first at each request of a small
        // fault-free run in turn.
        if anchors.len() <= SWEEP_FAULTS && w.clients * w.ops <= SWEEP_OPS {
            let bare = FaultPlan {
                rates: plan.rates,
                scheduled: Vec::new(),
            };
            let log = self.log(w, &bare)?;
            let mut order: Vec<&Anchored> = anchors.iter().collect();
            order.sort_by_key(|a| a.fired);
            let first = order[0];
            for a in arrivals(&log) {
                let cand = FaultPlan {
                    rates: plan.rates,
                    scheduled: swept(&order, first, a, from, w.clients),
                };
                if self.fails(w, &cand) {
                    return Some(cand);
                }
                if self.spent() {
                    return None;
                }
            }
        }
        None
    }

    /// Replaces `plan`'s rates by the schedule its run's log shows, if that still fails.
    fn rates_to_schedule(&mut self, w: &Workload, plan: &mut FaultPlan) -> bool {
        let Some(log) = self.log(w, plan) else {
            return false;
        };
        // The log shows every fault that fired, scheduled ones included.
        let explicit = FaultPlan {
            rates: FaultRates::default(),
            scheduled: schedule_from_log(&log, SIM_SESSION_TIMEOUT),
        };
        if self.fails(w, &explicit) {
            *plan = explicit;
            return true;
        }
        false
    }
}

/// Workloads of at most this many operations get the sweep (3c)…
const SWEEP_OPS: usize = 8;

/// … of at most this many faults.
const SWEEP_FAULTS: usize = 4;

/// The faults of `order` (by firing time) moved so that `first` hits arrival `a` and the
/// others keep their distance in time from it, in a run of `to` clients (from `from`): the
/// client `first` hit and the one that sent `a` swap roles.
fn swept(
    order: &[&Anchored],
    first: &Anchored,
    a: Arrival,
    from: usize,
    to: usize,
) -> Vec<(When, Fault)> {
    let hit = fault_client(&first.fault).and_then(|c| map_client(c, from, to));
    let swap = |c: usize| match hit {
        Some(h) if c == h => a.client,
        Some(h) if c == a.client => h,
        _ => c,
    };
    let base = match first.fault {
        Fault::RequestLost { .. } | Fault::ReplyLost { .. } => a.t,
        _ => a.t + 1,
    };
    order
        .iter()
        .filter_map(|x| {
            let f = match fault_client(&x.fault) {
                Some(c) => retarget(&x.fault, swap(map_client(c, from, to)?)),
                None => x.fault.clone(),
            };
            let when = if std::ptr::eq(*x, first)
                && matches!(f, Fault::RequestLost { .. } | Fault::ReplyLost { .. })
            {
                When::Step(a.step)
            } else {
                When::At(Duration::from_nanos(base + (x.fired - first.fired)))
            };
            Some((when, f))
        })
        .collect()
}

/// A case's steps: clients × operations per client + scheduled faults (see the module docs).
fn steps(w: &Workload, plan: &FaultPlan) -> usize {
    w.clients * w.ops + plan.scheduled.len()
}

/// Shrinks a failing case within `budget` candidate runs.
pub fn shrink(case: &Case, budget: u64) -> Result<Shrunk, ShrinkError> {
    let mut w = case.workload.clone();
    let mut plan = case.plan.clone();
    let first = run_sim_inner(&w, &plan, case.planted, false, None, false)?.0;
    let Some(class) = first.verdict.anomalies.first().map(|a| Class::of(a)) else {
        return Err(ShrinkError::NotFailing);
    };
    let mut search = Search {
        case,
        class,
        runs: 1,
        budget,
        memo: BTreeMap::new(),
    };
    let fired: u64 = first.faults.values().sum();
    let ops_before = w.clients * w.ops;
    let steps_before = ops_before
        + if plan.rates.any() {
            fired as usize
        } else {
            plan.scheduled.len()
        };

    // 1. Rates: none at all, fewer kinds, a smaller workload under them.
    if plan.rates.any() {
        if search.fails(&w, &FaultPlan::none()) {
            plan = FaultPlan::none();
        } else {
            for kind in FaultKind::ALL {
                let mut fewer = plan.clone();
                let slot = rate_of(&mut fewer.rates, kind);
                if *slot > 0.0 {
                    *slot = 0.0;
                    if search.fails(&w, &fewer) {
                        plan = fewer;
                    }
                }
            }
            shrink_workload(&mut search, &mut w, &mut plan);
        }
    }
    // 2 and 3.
    let mut scheduled = minimise(&mut search, &mut w, &mut plan);
    // 4. Smaller workloads under other seeds: for a race as it is, for faults at rates of
    // the kinds that are left; what fails goes through 2 and 3 again.
    if scheduled && !search.spent() {
        let before = (w.clone(), plan.clone());
        if other_seeds(&mut search, &mut w, &mut plan) {
            scheduled = minimise(&mut search, &mut w, &mut plan);
            if !scheduled || steps(&w, &plan) >= steps(&before.0, &before.1) {
                (w, plan) = before;
                scheduled = true;
            }
        }
    }
    let shrunk = Case::record(&w, &plan, case.planted)?;
    assert!(
        shrunk
            .anomalies
            .iter()
            .any(|a| Class::of(a) == search.class),
        "the shrunk case passed when recorded: runs are not deterministic"
    );
    Ok(Shrunk {
        steps: (steps_before, steps(&w, &plan)),
        ops: (ops_before, w.clients * w.ops),
        faults: (fired, plan.scheduled.len()),
        case: shrunk,
        runs: search.runs,
        scheduled,
    })
}

/// Steps 2 and 3 (see the module docs); whether the faults are a schedule.
fn minimise(search: &mut Search<'_>, w: &mut Workload, plan: &mut FaultPlan) -> bool {
    // 2. The faults as a schedule.
    let mut scheduled = !plan.rates.any() || search.rates_to_schedule(w, plan);
    // 3. Faults, clients, operations, until nothing more can go.
    loop {
        let size = (w.clients, w.ops, plan.scheduled.len());
        if !plan.scheduled.is_empty() {
            let rates = plan.rates;
            plan.scheduled = ddmin(plan.scheduled.clone(), |s| {
                let cand = FaultPlan {
                    rates,
                    scheduled: s.to_vec(),
                };
                search.fails(w, &cand)
            });
        }
        shrink_workload(search, w, plan);
        if !scheduled {
            scheduled = search.rates_to_schedule(w, plan);
        }
        if (w.clients, w.ops, plan.scheduled.len()) == size || search.spent() {
            return scheduled;
        }
    }
}

/// Fewer clients, then fewer operations per client, else both at once down to sizes the
/// sweep covers; the faults carried over (3a–c).
fn shrink_workload(search: &mut Search<'_>, w: &mut Workload, plan: &mut FaultPlan) {
    let anchors = if plan.scheduled.is_empty() {
        Vec::new()
    } else {
        match search.anchors(w, plan) {
            Some(a) => a,
            None => return,
        }
    };
    let from = w.clients;
    let mut found = None;
    let clients = smallest(w.clients, |k| {
        let cand = Workload {
            clients: k,
            ..w.clone()
        };
        found = search.carried(&cand, plan, &anchors, from);
        found.is_some()
    });
    if let Some(p) = found.take() {
        w.clients = clients;
        *plan = p;
    }
    if w.ops <= 1 {
        return;
    }
    let anchors = if clients == from || plan.scheduled.is_empty() {
        anchors
    } else {
        match search.anchors(w, plan) {
            Some(a) => a,
            None => return,
        }
    };
    let ops = smallest(w.ops, |n| {
        let cand = Workload {
            ops: n,
            ..w.clone()
        };
        found = search.carried(&cand, plan, &anchors, w.clients);
        found.is_some()
    });
    if let Some(p) = found.take() {
        w.ops = ops;
        *plan = p;
        return;
    }
    if clients != from || plan.scheduled.is_empty() {
        return;
    }
    // Neither count alone could go: both at once, to sizes small enough for the sweep.
    let mut sizes: Vec<(usize, usize)> = (1..=w.clients)
        .flat_map(|k| (1..=w.ops).map(move |n| (k, n)))
        .filter(|&(k, n)| k * n <= SWEEP_OPS && k < w.clients && n < w.ops)
        .collect();
    sizes.sort_by_key(|&(k, n)| (k * n, k));
    for (clients, ops) in sizes {
        let cand = Workload {
            clients,
            ops,
            ..w.clone()
        };
        if let Some(p) = search.carried(&cand, plan, &anchors, from) {
            *w = cand;
            *plan = p;
            return;
        }
        if search.spent() {
            return;
        }
    }
}

/// Seeds step 4 tries at most.
const SEED_ROUNDS: u64 = 256;

/// The chance per request of each fault kind left, in step 4: about one of each in a small
/// run.
const SEARCH_RATE: f64 = 0.03;

/// Step 4 (see the module docs): round after round, the next seed under every workload
/// with fewer steps than the smallest failing one yet, on every core. Replaces `w` and
/// `plan` by the smallest found (its plan: none, or rates), if any.
fn other_seeds(search: &mut Search<'_>, w: &mut Workload, plan: &mut FaultPlan) -> bool {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let mut rates = FaultRates::default();
    for (_, f) in &plan.scheduled {
        *rate_of(&mut rates, f.kind()) = SEARCH_RATE;
    }
    let search_plan = FaultPlan {
        rates,
        scheduled: Vec::new(),
    };
    // A run with faults needs at least one: a smaller one has fewer operations than this.
    let faults = usize::from(rates.any());
    let (max_clients, max_ops) = (w.clients, w.ops);
    let mut limit = steps(w, plan);
    let mut found = None;
    for round in 1..=SEED_ROUNDS {
        let mut sizes: Vec<(usize, usize)> = (1..=max_clients)
            .flat_map(|k| (1..=max_ops).map(move |n| (k, n)))
            .filter(|(k, n)| k * n + faults < limit)
            .collect();
        sizes.sort_by_key(|&(k, n)| (k * n, k));
        let left = search.budget.saturating_sub(search.runs);
        sizes.truncate(left as usize);
        if sizes.is_empty() {
            break;
        }
        let seed = w.seed.wrapping_add(round);
        let cands: Vec<Workload> = sizes
            .into_iter()
            .map(|(clients, ops)| Workload {
                clients,
                ops,
                seed,
                ..w.clone()
            })
            .collect();
        let (planted, class) = (search.case.planted, &search.class);
        // A run "fails" here only with the original failure's class.
        let hit = explore_runs(cands.len() as u64, threads, false, &|_| {}, &|i| {
            let mut r = run_sim(&cands[i as usize], &search_plan, planted, false, None)?;
            r.verdict.valid = !r.verdict.anomalies.iter().any(|a| Class::of(a) == *class);
            Ok(r)
        });
        let Ok(hit) = hit else { break };
        search.runs += hit.runs;
        if let Some((i, _)) = hit.failures.first() {
            let cand = cands[*i as usize].clone();
            limit = cand.clients * cand.ops + faults;
            found = Some(cand);
        }
    }
    match found {
        Some(smaller) => {
            *w = smaller;
            *plan = search_plan;
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sublist of `items` from which one item is removed.
    fn one_less(items: &[u32]) -> impl Iterator<Item = Vec<u32>> + '_ {
        (0..items.len()).map(move |i| {
            let mut v = items.to_vec();
            v.remove(i);
            v
        })
    }

    #[test]
    fn ddmin_reaches_a_one_minimal_sublist() {
        // Failing needs 3 and 7 together, or 11 alone with 2: several minima.
        let fails =
            |s: &[u32]| (s.contains(&3) && s.contains(&7)) || (s.contains(&11) && s.contains(&2));
        for items in [
            (0..16).collect::<Vec<u32>>(),
            (0..16).rev().collect(),
            vec![3, 7],
            vec![7, 1, 1, 3, 9, 9, 11],
        ] {
            let mut calls = 0;
            let min = ddmin(items.clone(), |s| {
                calls += 1;
                fails(s)
            });
            assert!(fails(&min), "{items:?} gave {min:?}");
            for smaller in one_less(&min) {
                assert!(!fails(&smaller), "{min:?} is not 1-minimal");
            }
            assert!(calls <= items.len() * items.len() + 1);
        }
        assert_eq!(ddmin(vec![1, 2], |_| true), Vec::<u32>::new());
    }

    #[test]
    fn smallest_finds_the_least_failing_count_even_when_failure_is_not_monotone() {
        // 5 and 9 fail; 6, 7, 8 do not (a smaller run is another interleaving).
        let fails = |k: usize| k == 5 || k >= 9;
        assert_eq!(smallest(12, fails), 5);
        assert_eq!(smallest(5, fails), 5);
        assert_eq!(smallest(4, fails), 4);
        assert_eq!(smallest(1, |_| true), 1);
    }

    #[test]
    fn failures_keep_their_class() {
        assert_eq!(Class::of("error: gave up"), Class::Error);
        assert_eq!(
            Class::of("liveness: process 1's acquire …"),
            Class::Liveness
        );
        assert_eq!(
            Class::of("the run panicked: Mvcc protocol violation: t-0001"),
            Class::of("the run panicked: Mvcc protocol violation: t-0992")
        );
        assert_ne!(
            Class::of("the run panicked: Mvcc protocol violation: x"),
            Class::of("the run panicked: Pause { client: 3 } names client 3")
        );
        assert_eq!(Class::of("holds overlap: …"), Class::Anomaly);
    }

    #[test]
    fn arrivals_count_lost_requests_and_number_each_clients_own() {
        let applied = |t, client| LogEvent::Applied {
            t,
            client,
            xid: 0,
            zxid: 0,
            outcome: "ok".into(),
        };
        let log = vec![
            applied(1, 0),
            applied(2, 1),
            LogEvent::Fault {
                t: 3,
                kind: FaultKind::RequestLost,
                client: Some(0),
                duration: None,
            },
            LogEvent::Fault {
                t: 3,
                kind: FaultKind::Pause,
                client: Some(0),
                duration: Some(5),
            },
            applied(4, 0),
        ];
        let a: Vec<(u64, usize, u64)> = arrivals(&log)
            .iter()
            .map(|a| (a.step, a.client, a.nth))
            .collect();
        assert_eq!(a, vec![(1, 0, 1), (2, 1, 1), (3, 0, 2), (4, 0, 3)]);
        assert_eq!(map_client(5, 4, 2), Some(3));
        assert_eq!(map_client(3, 4, 2), None);
        assert_eq!(map_client(1, 4, 2), Some(1));
    }
}
