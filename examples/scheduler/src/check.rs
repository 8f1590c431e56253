//! The scheduler's checker: every job done exactly once, one leader per term.

use std::collections::{BTreeMap, BTreeSet};

use avout_check::history::{EventType, History, pairs};
use avout_check::{Anomaly, CheckError, Checker, Verdict};

use crate::scenario::job;

/// The scheduler's checker, for a run of `jobs` jobs: every job done exactly once, one leader
/// per term.
///
/// ```
/// use avout_check::Checker;
/// use avout_check::history::{Event, F, History};
/// use serde_json::json;
/// let h: History = [
///     Event::invoke(9, F::from("read".to_owned()), json!(null)),
///     Event::ok(9, F::from("read".to_owned()), json!({"job-0": [1, 2]})),
/// ].into_iter().collect();
/// let v = avout_example_scheduler::SchedulerChecker { jobs: 1 }.check(&h).unwrap();
/// assert!(!v.is_valid() && v.anomalies[0].message.contains("2 times"), "{v}");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SchedulerChecker {
    /// How many jobs were submitted (`job-0`, `job-1`, …).
    pub jobs: usize,
}

impl Checker for SchedulerChecker {
    fn name(&self) -> String {
        "scheduler".to_owned()
    }

    fn check(&self, history: &History) -> Result<Verdict, CheckError> {
        Ok(Verdict::new(self.name(), "", judge(self.jobs, history)))
    }
}

fn judge(jobs: usize, history: &History) -> Vec<Anomaly> {
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
            anomalies.push(Anomaly::new(
                "two-leaders",
                format!("term {term:#x} had {} leaders: workers {who:?}", who.len()),
            ));
        }
    }
    let read = ops
        .iter()
        .rev()
        .find(|o| o.f == "read" && o.end == EventType::Ok);
    let Some(read) = read else {
        anomalies.push(Anomaly::new(
            "no-final-read",
            "no final read of the completions",
        ));
        return anomalies;
    };
    let done: BTreeMap<String, Vec<u64>> =
        serde_json::from_value(read.output.clone()).unwrap_or_default();
    let assigned: BTreeMap<String, u64> = ops
        .iter()
        .filter(|o| o.f == "assign" && o.end == EventType::Ok)
        .filter_map(|o| Some((o.output[0].as_str()?.to_owned(), o.output[1].as_u64()?)))
        .collect();
    for i in 0..jobs {
        let name = job(i);
        let (kind, message) = match done.get(&name).map_or(0, Vec::len) {
            1 => continue,
            0 => (
                "never-done",
                match assigned.get(&name) {
                    Some(to) => format!("{name} was handed to worker {to} but never recorded done"),
                    None => format!("{name} was never done"),
                },
            ),
            n => (
                "done-twice",
                format!("{name} was done {n} times, by workers {:?}", done[&name]),
            ),
        };
        anomalies.push(Anomaly::new(kind, message));
    }
    for name in done.keys() {
        if !(0..jobs).any(|i| job(i) == *name) {
            anomalies.push(Anomaly::new(
                "never-submitted",
                format!("{name} was done but never submitted"),
            ));
        }
    }
    anomalies
}

#[cfg(test)]
mod tests {
    use avout_check::history::{Event, F, History};
    use avout_check::{Checker, Verdict};
    use serde_json::{Value, json};

    use super::SchedulerChecker;

    /// The verdict on `h` of a run of `jobs` jobs.
    fn check(jobs: usize, h: &History) -> Verdict {
        SchedulerChecker { jobs }.check(h).unwrap()
    }

    /// Its anomalies' messages.
    fn anomalies(jobs: usize, h: &History) -> Vec<String> {
        check(jobs, h)
            .anomalies
            .into_iter()
            .map(|a| a.message)
            .collect()
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
        assert!(check(2, &h).is_valid());
    }

    #[test]
    fn a_job_never_recorded_is_an_anomaly() {
        let v = anomalies(2, &history(&[], json!({"job-0": [0]})));
        assert_eq!(v, vec!["job-1 was never done".to_owned()]);
    }

    #[test]
    fn a_job_done_twice_is_an_anomaly() {
        let v = anomalies(1, &history(&[], json!({"job-0": [0, 1]})));
        assert!(v[0].contains("done 2 times"), "{v:?}");
    }

    #[test]
    fn two_leaders_of_one_term_are_an_anomaly() {
        let v = anomalies(1, &history(&[(0, 5), (1, 5)], json!({"job-0": [0]})));
        assert!(v[0].contains("2 leaders"), "{v:?}");
    }

    #[test]
    fn a_job_never_submitted_and_a_missing_read_are_anomalies() {
        let v = anomalies(0, &history(&[], json!({"job-7": [0]})));
        assert!(v[0].contains("never submitted"), "{v:?}");
        let none: History = Vec::<Event>::new().into_iter().collect();
        assert!(anomalies(0, &none)[0].contains("no final read"));
    }
}
