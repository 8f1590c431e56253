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
//!    schedule is kept if the run still fails with it, else its first 1, 2, 4, … faults
//!    (those that fired after the failure began, through a stall, only spoil its replay);
//!    if none fails, the rates stay and the conversion is tried again after every round
//!    below.
//! 3. **Until nothing more can go** (a fixpoint): the faults by delta debugging (Zeller's
//!    ddmin, ending with every single fault tried out); then fewer clients, then fewer
//!    operations per client, each smaller count tried from 1 up. A smaller workload shifts
//!    the steps, so each count is tried with the faults (a) where they were, (b) re-derived
//!    from a fresh log of the smaller run: each fault is anchored to the request it hit
//!    (its client and that client's n-th request to reach the service) and placed, one at a
//!    time in firing order, where that request arrives in the smaller run, and (c) in a
//!    small run (`SWEEP_OPS` operations, `SWEEP_FAULTS` faults), with the first fault
//!    at each request of the fault-free smaller run in turn and the others at their
//!    distances in time from it (a pause and the outage its client wakes into stay
//!    together). When neither count can go alone, both are tried at once, down to the
//!    sizes (c) covers.
//!
//! 4. **A race.** Other seeds are tried (a seed chooses the network's latencies, and so the
//!    interleaving): round after round, the next seed under every workload with fewer
//!    steps than the smallest failing one found yet, for up to `SEED_ROUNDS` seeds or the
//!    budget, with the schedule's fault kinds drawn at a small rate (`SEARCH_RATE`), or
//!    with no fault when none is left (the failure is an interleaving, as the planted STM
//!    bugs' are) or when faults drawn at rates could not be made a schedule (a race that
//!    the faults only happened to bring about: CURATOR-621's downgrade). The smallest found
//!    is shrunk again by step 3 under its seed, and kept if it is smaller, or if the case
//!    had no schedule before.
//!
//! The result is 1-minimal: removing any one fault, one client or one operation per client
//! makes it pass (or change its failure's class), within the run budget. It is recorded
//! (with its choices) as a new [`Case`], whose seed step 4 may have changed.

use std::collections::BTreeMap;

use avout_sim_zk::{FaultKind, FaultRates};

mod schedule;
mod search;
#[cfg(test)]
mod tests;

pub use schedule::{fault_client, schedule_from_log};
use search::{SWEEP_OPS, Search, ddmin, rate_of, smallest};

use super::case::Case;
use super::explore::explore_runs;
use super::{ERROR_PREFIX, FaultPlan, Registry, RunError, Workload};

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

/// A case's steps: clients × operations per client + scheduled faults (see the module docs).
fn steps(w: &Workload, plan: &FaultPlan) -> usize {
    w.clients * w.ops + plan.scheduled.len()
}

/// Shrinks a failing case, its scenario found in `registry`, within `budget` candidate runs.
pub fn shrink(registry: &Registry, case: &Case, budget: u64) -> Result<Shrunk, ShrinkError> {
    let mut w = case.workload.clone();
    let mut plan = case.plan.clone();
    let first = case.rerun(registry, case.planted)?;
    let Some(class) = first.verdict.problems().next().map(Class::of) else {
        return Err(ShrinkError::NotFailing);
    };
    let mut search = Search {
        registry,
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
    // the kinds the schedule has left; what fails goes through 2 and 3 again. Faults still
    // drawn at rates (no schedule reproduced them) are left out: the search is for the race
    // alone, whose case, fault-free, is replayable and small.
    if !search.spent() {
        let before = (w.clone(), plan.clone(), scheduled);
        if other_seeds(&mut search, &mut w, &mut plan) {
            scheduled = minimise(&mut search, &mut w, &mut plan);
            let smaller = steps(&w, &plan) < steps(&before.0, &before.1);
            if !scheduled || (before.2 && !smaller) {
                (w, plan, scheduled) = before;
            }
        }
    }
    let shrunk = Case::record(registry, &w, &plan, case.planted)?;
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
        let (planted, class, registry) = (search.case.planted, &search.class, search.registry);
        // A run "fails" here only with the original failure's class.
        let hit = explore_runs(cands.len() as u64, threads, false, &|_| {}, &|i| {
            let mut r = registry
                .run(&cands[i as usize])
                .faults(&search_plan)
                .planted(planted)
                .sim()?;
            if !r.verdict.problems().any(|a| Class::of(a) == *class) {
                // Another failure is no failure here: the run counts as valid.
                r.verdict.anomalies.clear();
                r.verdict.undecided.clear();
            }
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
