//! The shrinker's search: delta debugging, the memo of candidate runs, and the faults of a
//! schedule anchored to the requests they hit, so that a smaller run can be given them.

use std::collections::BTreeMap;
use std::time::Duration;

use avout_sim_zk::{Fault, FaultKind, FaultRates, LogEvent, When};

use super::schedule::{Arrival, arrivals, fault_client, map_client, retarget, schedule_from_log};
use super::{Case, Class, FaultPlan, Workload};
use crate::scenario::Registry;
use crate::scenario::{Report, SIM_SESSION_TIMEOUT};

/// Delta debugging: a sublist of `items` for which `fails` holds and from which no single
/// item can be removed (1-minimal), as far as `fails` answers (a spent budget says no).
pub(super) fn ddmin<T: Clone>(mut items: Vec<T>, mut fails: impl FnMut(&[T]) -> bool) -> Vec<T> {
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
pub(super) fn smallest(current: usize, mut fails: impl FnMut(usize) -> bool) -> usize {
    (1..current).find(|&k| fails(k)).unwrap_or(current)
}

pub(super) fn rate_of(rates: &mut FaultRates, kind: FaultKind) -> &mut f64 {
    rates.rate_mut(kind)
}

/// A candidate's identity, for the memo.
pub(super) fn key(w: &Workload, plan: &FaultPlan) -> String {
    serde_json::to_string(&(w, plan)).expect("workloads and plans serialise")
}

/// A fault of the current schedule, where it hit and when it fired.
#[derive(Clone, Debug)]
pub(super) struct Anchored {
    pub(super) anchor: Anchor,
    pub(super) fault: Fault,
    /// When it fired (virtual nanoseconds).
    pub(super) fired: u64,
}

/// Where a fault of the current schedule hit, so it can be placed in a smaller run.
#[derive(Clone, Debug)]
pub(super) enum Anchor {
    /// At (`At`: `after` nanoseconds after) the `nth` arrival of `client`.
    Arrival {
        client: usize,
        nth: u64,
        after: Option<u64>,
    },
    /// At a time no request preceded.
    Time(Duration),
}

pub(super) struct Search<'a> {
    pub(super) registry: &'a Registry,
    pub(super) case: &'a Case,
    pub(super) class: Class,
    pub(super) runs: u64,
    pub(super) budget: u64,
    pub(super) memo: BTreeMap<String, bool>,
}

impl Search<'_> {
    pub(super) fn spent(&self) -> bool {
        self.runs >= self.budget
    }

    /// One run (counted), keeping its log if `keep_log`.
    pub(super) fn run(
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

    pub(super) fn run_unchecked(
        &mut self,
        w: &Workload,
        plan: &FaultPlan,
        keep_log: bool,
    ) -> Option<(Report, Vec<LogEvent>)> {
        if self.spent() {
            return None;
        }
        self.runs += 1;
        let run = self.registry.run(w).faults(plan).planted(self.case.planted);
        let mut report = if keep_log { run.logged() } else { run }.sim().ok()?;
        let log = std::mem::take(&mut report.log);
        Some((report, log))
    }

    /// Whether every scheduled fault of `plan` names a client that exists when it fires.
    ///
    /// The simulator refuses (panics on) a fault aimed at a session not yet opened, and a
    /// smaller candidate may not open a later session (a reconnection) in time, or at all.
    /// The workload's own clients open first, at once; for a fault on a later session the
    /// run without that fault (itself checked first) is the same run up to the moment it
    /// fires, and its log says whether the session was open by then.
    pub(super) fn safe(&mut self, w: &Workload, plan: &FaultPlan) -> bool {
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

    pub(super) fn still_fails(&self, report: &Report) -> bool {
        report
            .verdict
            .problems()
            .any(|a| Class::of(a) == self.class)
    }

    /// Whether `w` under `plan` fails with the original failure's class.
    pub(super) fn fails(&mut self, w: &Workload, plan: &FaultPlan) -> bool {
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
    pub(super) fn log(&mut self, w: &Workload, plan: &FaultPlan) -> Option<Vec<LogEvent>> {
        self.run(w, plan, true).map(|(_, log)| log)
    }

    /// Anchors of `plan`'s scheduled faults in the log of their run.
    pub(super) fn anchors(&mut self, w: &Workload, plan: &FaultPlan) -> Option<Vec<Anchored>> {
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
    pub(super) fn place(
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
    pub(super) fn carried(
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
    pub(super) fn rates_to_schedule(&mut self, w: &Workload, plan: &mut FaultPlan) -> bool {
        let Some(log) = self.log(w, plan) else {
            return false;
        };
        // The log shows every fault that fired, scheduled ones included, in firing order.
        let all = schedule_from_log(&log, SIM_SESSION_TIMEOUT);
        // Every fault, else the first 1, 2, 4, …: the faults that fired after the failure
        // began (through a stall, the run's longest part) can only spoil its replay, as a
        // placement a little off does, and the fewer faults placed the fewer can be off.
        let prefixes = std::iter::successors(Some(1), |k: &usize| k.checked_mul(2))
            .take_while(|&k| k < all.len());
        for k in std::iter::once(all.len()).chain(prefixes) {
            let explicit = FaultPlan {
                rates: FaultRates::default(),
                scheduled: all[..k].to_vec(),
            };
            if self.fails(w, &explicit) {
                *plan = explicit;
                return true;
            }
        }
        false
    }
}

/// Workloads of at most this many operations get the sweep (3c)…
pub(super) const SWEEP_OPS: usize = 8;

/// … of at most this many faults.
pub(super) const SWEEP_FAULTS: usize = 4;

/// The faults of `order` (by firing time) moved so that `first` hits arrival `a` and the
/// others keep their distance in time from it, in a run of `to` clients (from `from`): the
/// client `first` hit and the one that sent `a` swap roles.
pub(super) fn swept(
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
