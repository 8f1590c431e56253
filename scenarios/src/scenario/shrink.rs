//! Shrinking a failing case to a smallest still-failing one.
//!
//! 1. **Faults as a schedule.** Faults drawn at rates are turned into an explicit list, read
//!    from the run's event log: a lost request or reply at the step (the n-th request the
//!    service received) where it happened, for the client it hit; a disconnect, pause,
//!    stale-read period, expiry or outage just after the moment it fired, with a typical
//!    duration. The schedule is kept only if the run still fails with it (the durations are
//!    not recorded in the log, so it need not), else the rates stay and fault kinds are
//!    switched off one at a time instead.
//! 2. **Fewer clients, fewer operations**: the smallest count of each that still fails
//!    (scheduled faults naming a client that no longer exists are dropped).
//! 3. **Fewer faults**: delta debugging (Zeller's ddmin, removing complements of ever
//!    smaller chunks) over the schedule.
//!
//! Steps 2 and 3 repeat while either makes progress. Every candidate is a fresh, seeded run
//! judged by the scenario's checker; any anomaly counts as still failing, as in proptest.
//! The result is recorded (with its choices) as a new [`Case`].

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use avout_sim_zk::{Fault, FaultKind, FaultRates, LogEvent, When};

use super::case::Case;
use super::{FaultPlan, RunError, SIM_SESSION_TIMEOUT, Workload, run_sim, run_sim_inner};

/// What shrinking did.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The smallest failing case found.
    pub case: Case,
    /// Candidate runs made.
    pub runs: u64,
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

struct Search<'a> {
    case: &'a Case,
    runs: u64,
    budget: u64,
}

impl Search<'_> {
    /// Whether `w` under `plan` fails (a panicking run, e.g. a fault naming a client that
    /// the smaller workload never opens, does not count).
    fn fails(&mut self, w: &Workload, plan: &FaultPlan) -> bool {
        if self.runs >= self.budget {
            return false;
        }
        self.runs += 1;
        let planted = self.case.planted;
        let run =
            std::panic::catch_unwind(AssertUnwindSafe(|| run_sim(w, plan, planted, false, None)));
        matches!(run, Ok(Ok(report)) if !report.verdict.valid)
    }
}

fn typical(kind: FaultKind, client: Option<usize>, timeout: Duration) -> Option<Fault> {
    let pct = |p: u32| timeout * p / 100;
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
/// let log = vec![
///     LogEvent::Applied { t: 10, client: 0, xid: 1, zxid: 1, outcome: "ok".into() },
///     LogEvent::Fault { t: 20, kind: FaultKind::RequestLost, client: Some(1) },
/// ];
/// let s = avout_scenarios::scenario::shrink::schedule_from_log(&log, std::time::Duration::from_secs(4));
/// assert_eq!(s, vec![(When::Step(2), Fault::RequestLost { client: Some(1) })]);
/// ```
pub fn schedule_from_log(log: &[LogEvent], timeout: Duration) -> Vec<(When, Fault)> {
    let mut step = 0u64;
    let mut out = Vec::new();
    for e in log {
        match e {
            LogEvent::Applied { .. } => step += 1,
            LogEvent::Fault {
                kind: FaultKind::RequestLost,
                client,
                ..
            } => {
                step += 1;
                out.push((When::Step(step), Fault::RequestLost { client: *client }));
            }
            LogEvent::Fault {
                kind: FaultKind::ReplyLost,
                client,
                ..
            } => out.push((When::Step(step), Fault::ReplyLost { client: *client })),
            LogEvent::Fault { t, kind, client } => {
                if let Some(f) = typical(*kind, *client, timeout) {
                    out.push((When::At(Duration::from_nanos(t + 1)), f));
                }
            }
            _ => {}
        }
    }
    out
}

fn fault_client(f: &Fault) -> Option<usize> {
    match f {
        Fault::RequestLost { client } | Fault::ReplyLost { client } => *client,
        Fault::Disconnect { client, .. }
        | Fault::ExpireSession { client }
        | Fault::Pause { client, .. }
        | Fault::StaleReads { client, .. } => Some(*client),
        Fault::Outage { .. } => None,
    }
}

/// The plan restricted to faults on clients a workload of `clients` opens first.
fn for_clients(plan: &FaultPlan, clients: usize) -> FaultPlan {
    FaultPlan {
        rates: plan.rates,
        scheduled: plan
            .scheduled
            .iter()
            .filter(|(_, f)| fault_client(f).is_none_or(|c| c < clients))
            .cloned()
            .collect(),
    }
}

/// Delta debugging: a smallest sublist of `items` for which `fails` holds (1-minimal as
/// far as the budget allows).
fn ddmin<T: Clone>(mut items: Vec<T>, mut fails: impl FnMut(&[T]) -> bool) -> Vec<T> {
    if fails(&[]) {
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

/// The smallest value in `1..current` for which `fails` holds, trying small ones first
/// (doubling, then bisecting); `current` if none does.
fn smallest(current: usize, mut fails: impl FnMut(usize) -> bool) -> usize {
    let mut hi = current; // known to fail
    let mut lo = 0; // known not to fail (0 is never tried)
    let mut probe = 1;
    while probe < hi {
        if fails(probe) {
            hi = probe;
            break;
        }
        lo = probe;
        probe *= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fails(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
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

/// Replaces `plan`'s rates by the schedule its run's log shows, if that still fails.
fn to_schedule(
    search: &mut Search<'_>,
    w: &Workload,
    plan: &mut FaultPlan,
) -> Result<bool, RunError> {
    let (_, log) = run_sim_inner(w, plan, search.case.planted, false, None, true)?;
    search.runs += 1;
    // The log shows every fault that fired, scheduled ones included.
    let explicit = FaultPlan {
        rates: FaultRates::default(),
        scheduled: schedule_from_log(&log, SIM_SESSION_TIMEOUT),
    };
    if search.fails(w, &explicit) {
        *plan = explicit;
        return Ok(true);
    }
    Ok(false)
}

/// Shrinks a failing case within `budget` candidate runs.
pub fn shrink(case: &Case, budget: u64) -> Result<Shrunk, ShrinkError> {
    let mut search = Search {
        case,
        runs: 0,
        budget,
    };
    let mut w = case.workload.clone();
    let mut plan = case.plan.clone();
    let first = run_sim(&w, &plan, case.planted, false, None)?;
    search.runs += 1;
    if first.verdict.valid {
        return Err(ShrinkError::NotFailing);
    }
    let fired: u64 = first.faults.values().sum();
    let before = w.clients * w.ops;

    // 1. No faults at all; else fewer kinds; then the faults as an explicit schedule.
    let mut scheduled = !plan.rates.any();
    if !plan.is_empty() && search.fails(&w, &FaultPlan::none()) {
        plan = FaultPlan::none();
        scheduled = true;
    }
    if plan.rates.any() {
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
    }
    // 2 and 3, while they make progress.
    loop {
        let size = (w.clients, w.ops, plan.scheduled.len());
        let clients = smallest(w.clients, |k| {
            let cand = Workload {
                clients: k,
                ..w.clone()
            };
            search.fails(&cand, &for_clients(&plan, k))
        });
        plan = for_clients(&plan, clients);
        w.clients = clients;
        let ops = smallest(w.ops, |n| {
            let cand = Workload {
                ops: n,
                ..w.clone()
            };
            search.fails(&cand, &plan)
        });
        w.ops = ops;
        if !plan.scheduled.is_empty() {
            let rates = plan.rates;
            let kept = ddmin(plan.scheduled.clone(), |s| {
                search.fails(
                    &w,
                    &FaultPlan {
                        rates,
                        scheduled: s.to_vec(),
                    },
                )
            });
            plan.scheduled = kept;
        }
        if !scheduled && to_schedule(&mut search, &w, &mut plan)? {
            scheduled = true;
            continue;
        }
        if (w.clients, w.ops, plan.scheduled.len()) == size || search.runs >= budget {
            break;
        }
    }
    let shrunk = Case::record(&w, &plan, case.planted)?;
    if shrunk.anomalies.is_empty() {
        // Every candidate accepted failed; a recording run is the same run.
        unreachable!("the shrunk case passed when recorded: runs are not deterministic");
    }
    Ok(Shrunk {
        ops: (before, w.clients * w.ops),
        faults: (fired, plan.scheduled.len()),
        case: shrunk,
        runs: search.runs,
        scheduled,
    })
}
