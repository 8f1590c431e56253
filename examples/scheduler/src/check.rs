//! The scheduler's checker: every job done exactly once, one leader per term.

use std::collections::{BTreeMap, BTreeSet};

use avout_check::history::{EventType, History};
use avout_scenarios::scenario::{Verdict, Workload, pairs};

use crate::scenario::job;

/// Judges a history of the scheduler scenario of `w` (`w.ops` jobs).
///
/// ```
/// use avout_check::history::{Event, F, History};
/// use avout_scenarios::scenario::{registry, Workload};
/// use serde_json::json;
/// let w = { let mut w = Workload::new(registry::register(avout_example_scheduler::SchedulerScenario), 0); w.ops = 1; w };
/// let h: History = [
///     Event::invoke(9, F::from("read".to_owned()), json!(null)),
///     Event::ok(9, F::from("read".to_owned()), json!({"job-0": [1, 2]})),
/// ].into_iter().collect();
/// let v = avout_example_scheduler::check(&w, &h);
/// assert!(!v.valid && v.anomalies[0].contains("2 times"), "{v}");
/// ```
pub fn check(w: &Workload, history: &History) -> Verdict {
    let ops = pairs(history);
    let mut anomalies = Vec::new();
    let mut leaders: BTreeMap<i64, BTreeSet<u64>> = BTreeMap::new();
    for op in ops
        .iter()
        .filter(|o| o.f == "lead" && o.end == EventType::Ok)
    {
        if let Some(term) = op.output.as_i64() {
            leaders.entry(term).or_default().insert(op.process);
        }
    }
    for (term, who) in &leaders {
        if who.len() > 1 {
            anomalies.push(format!(
                "term {term:#x} had {} leaders: workers {who:?}",
                who.len()
            ));
        }
    }
    let read = ops
        .iter()
        .rev()
        .find(|o| o.f == "read" && o.end == EventType::Ok);
    let Some(read) = read else {
        anomalies.push("no final read of the completions".into());
        return Verdict::new("scheduler", anomalies);
    };
    let done: BTreeMap<String, Vec<u64>> =
        serde_json::from_value(read.output.clone()).unwrap_or_default();
    let assigned: BTreeMap<String, u64> = ops
        .iter()
        .filter(|o| o.f == "assign" && o.end == EventType::Ok)
        .filter_map(|o| Some((o.output[0].as_str()?.to_owned(), o.output[1].as_u64()?)))
        .collect();
    for i in 0..w.ops {
        let name = job(i);
        match done.get(&name).map_or(0, Vec::len) {
            1 => {}
            0 => anomalies.push(match assigned.get(&name) {
                Some(to) => format!("{name} was handed to worker {to} but never recorded done"),
                None => format!("{name} was never done"),
            }),
            n => anomalies.push(format!(
                "{name} was done {n} times, by workers {:?}",
                done[&name]
            )),
        }
    }
    for name in done.keys() {
        if !(0..w.ops).any(|i| job(i) == *name) {
            anomalies.push(format!("{name} was done but never submitted"));
        }
    }
    Verdict::new("scheduler", anomalies)
}

#[cfg(test)]
mod tests {
    use avout_check::history::{Event, F, History};
    use avout_scenarios::scenario::{Workload, registry};
    use serde_json::{Value, json};

    use super::check;

    fn w(jobs: usize) -> Workload {
        let mut w = Workload::new(registry::register(crate::SchedulerScenario), 0);
        w.ops = jobs;
        w
    }

    fn history(leads: &[(u64, i64)], read: Value) -> History {
        let mut events = Vec::new();
        for &(p, term) in leads {
            events.push(Event::invoke(p, F::from("lead".to_owned()), Value::Null));
            events.push(Event::ok(p, F::from("lead".to_owned()), term.into()));
        }
        events.push(Event::invoke(9, F::from("read".to_owned()), Value::Null));
        events.push(Event::ok(9, F::from("read".to_owned()), read));
        events.into_iter().collect()
    }

    #[test]
    fn every_job_once_and_one_leader_per_term_is_valid() {
        let h = history(&[(0, 5), (1, 7)], json!({"job-0": [0], "job-1": [1]}));
        assert!(check(&w(2), &h).valid);
    }

    #[test]
    fn a_job_never_recorded_is_an_anomaly() {
        let v = check(&w(2), &history(&[], json!({"job-0": [0]})));
        assert_eq!(v.anomalies, vec!["job-1 was never done".to_owned()]);
    }

    #[test]
    fn a_job_done_twice_is_an_anomaly() {
        let v = check(&w(1), &history(&[], json!({"job-0": [0, 1]})));
        assert!(v.anomalies[0].contains("done 2 times"), "{v}");
    }

    #[test]
    fn two_leaders_of_one_term_are_an_anomaly() {
        let v = check(&w(1), &history(&[(0, 5), (1, 5)], json!({"job-0": [0]})));
        assert!(v.anomalies[0].contains("2 leaders"), "{v}");
    }

    #[test]
    fn a_job_never_submitted_and_a_missing_read_are_anomalies() {
        let v = check(&w(0), &history(&[], json!({"job-7": [0]})));
        assert!(v.anomalies[0].contains("never submitted"), "{v}");
        let none: History = Vec::<Event>::new().into_iter().collect();
        assert!(check(&w(0), &none).anomalies[0].contains("no final read"));
    }
}
