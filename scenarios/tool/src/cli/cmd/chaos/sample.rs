//! What an endurance run samples, and how it decides that something leaks.
//!
//! The client: its resident memory (`VmRSS` of `/proc/self/status`) and the tokio tasks
//! alive. The ensemble, from each running member's `mntr`: nodes and ephemeral nodes (the
//! largest count among the members, which agree once in sync), watches and client
//! connections (summed: each member holds its own clients' watches).

use avout_testkit::server::ZkEnsemble;

/// One sample.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub(super) struct Sample {
    /// Seconds since the run started.
    pub(super) at: f64,
    pub(super) rss_mib: f64,
    pub(super) tasks: f64,
    pub(super) znodes: f64,
    pub(super) ephemerals: f64,
    pub(super) watches: f64,
    pub(super) connections: f64,
}

/// A sampled figure: how to read it, its name, its slack.
pub(super) type Metric = (fn(&Sample) -> f64, &'static str, f64);

/// What is sampled: the field, its name in the report, and the growth allowed beyond
/// noise (an absolute slack: a few rounds' worth of work in flight at the moment of a
/// sample).
pub(super) const METRICS: [Metric; 6] = [
    (|s| s.rss_mib, "client resident memory (MiB)", 24.0),
    (|s| s.tasks, "client tokio tasks alive", 200.0),
    (|s| s.znodes, "ZooKeeper nodes", 400.0),
    (|s| s.ephemerals, "ZooKeeper ephemeral nodes", 100.0),
    (|s| s.watches, "ZooKeeper watches", 200.0),
    (|s| s.connections, "ZooKeeper client connections", 40.0),
];

/// Takes a sample now (blocking: it talks to the members).
pub(super) fn take(at: f64, ensemble: &ZkEnsemble) -> Sample {
    let mut s = Sample {
        at,
        rss_mib: rss_kib().unwrap_or(0) as f64 / 1024.0,
        tasks: alive_tasks(),
        ..Sample::default()
    };
    for member in ensemble.members() {
        if !member.is_running() || member.is_paused() {
            continue;
        }
        let Ok(mntr) = member.four_letter_word("mntr") else {
            continue;
        };
        let field = |name: &str| -> f64 {
            mntr.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
                .unwrap_or(0.0)
        };
        s.znodes = s.znodes.max(field("zk_znode_count"));
        s.ephemerals = s.ephemerals.max(field("zk_ephemerals_count"));
        s.watches += field("zk_watch_count");
        s.connections += field("zk_num_alive_connections");
    }
    s
}

/// The tokio tasks alive in the current runtime (none outside one). Real ensembles do not run
/// under madsim, whose runtime has no such count.
fn alive_tasks() -> f64 {
    #[cfg(not(madsim))]
    return tokio::runtime::Handle::try_current()
        .map(|h| h.metrics().num_alive_tasks() as f64)
        .unwrap_or(0.0);
    #[cfg(madsim)]
    0.0
}

fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How a metric moved over a run: the median of its second quarter (after the warm-up)
/// against the median of its last quarter.
#[derive(Clone, Debug)]
pub(super) struct Trend {
    pub(super) early: f64,
    pub(super) late: f64,
    pub(super) slack: f64,
}

impl Trend {
    pub(super) fn of(samples: &[Sample], metric: fn(&Sample) -> f64, slack: f64) -> Trend {
        let n = samples.len();
        let median = |part: &[Sample]| -> f64 {
            let mut v: Vec<f64> = part.iter().map(metric).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        Trend {
            early: median(&samples[n / 4..(n / 2).max(n / 4 + 1).min(n)]),
            late: median(&samples[(3 * n / 4).min(n.saturating_sub(1))..]),
            slack,
        }
    }

    /// Whether it grew: by more than its slack and more than a fifth.
    pub(super) fn leaks(&self) -> bool {
        let growth = self.late - self.early;
        growth > self.slack && growth > self.early * 0.2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(rss: impl Fn(usize) -> f64) -> Vec<Sample> {
        (0..40)
            .map(|i| Sample {
                at: i as f64,
                rss_mib: rss(i),
                ..Sample::default()
            })
            .collect()
    }

    #[test]
    fn a_flat_metric_with_noise_does_not_leak() {
        let s = samples(|i| 100.0 + (i % 3) as f64 * 5.0);
        assert!(!Trend::of(&s, |s| s.rss_mib, 24.0).leaks());
    }

    #[test]
    fn a_metric_that_keeps_growing_leaks() {
        let s = samples(|i| 100.0 + i as f64 * 4.0);
        let t = Trend::of(&s, |s| s.rss_mib, 24.0);
        assert!(t.leaks(), "{t:?}");
    }

    #[test]
    fn a_warm_up_is_not_a_leak() {
        // Steep over the first quarter, flat after it.
        let s = samples(|i| if i < 10 { i as f64 * 30.0 } else { 300.0 });
        assert!(!Trend::of(&s, |s| s.rss_mib, 24.0).leaks());
    }

    #[test]
    fn the_process_reads_its_own_resident_memory() {
        assert!(rss_kib().is_some_and(|k| k > 0));
    }
}
