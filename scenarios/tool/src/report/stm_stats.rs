//! Sums and differences of [`StmStats`], which has no arithmetic of its own: the reports'
//! workload and `avout bench stm-*` both take each client's counts over its timed part (the
//! handle's counts after, less those before) and add the clients' together.

use avout::stm::StmStats;

/// `a + b`, count by count.
///
/// ```
/// use avout::stm::StmStats;
/// use avout_cli::report::stm_stats;
///
/// let a = StmStats { commits: 2, retries: 1, ..StmStats::default() };
/// let b = StmStats { commits: 3, ..StmStats::default() };
/// assert_eq!(stm_stats::sum(a, b).commits, 5);
/// assert_eq!(stm_stats::difference(stm_stats::sum(a, b), b), a);
/// ```
pub fn sum(a: StmStats, b: StmStats) -> StmStats {
    zip(a, b, |x, y| x + y)
}

/// `after - before`, count by count: what happened between two reads of a handle's counts.
///
/// # Panics
///
/// If a count of `after` is below `before`'s (counts only grow, so the reads were swapped).
pub fn difference(after: StmStats, before: StmStats) -> StmStats {
    zip(after, before, |x, y| x - y)
}

/// Applies `f` to each pair of counts (the one place that names every field).
fn zip(a: StmStats, b: StmStats, f: impl Fn(u64, u64) -> u64) -> StmStats {
    StmStats {
        commits: f(a.commits, b.commits),
        retries: f(a.retries, b.retries),
        conflicts: f(a.conflicts, b.conflicts),
        read_faults: f(a.read_faults, b.read_faults),
        commit_redos: f(a.commit_redos, b.commit_redos),
        requests: f(a.requests, b.requests),
        round_trips: f(a.round_trips, b.round_trips),
        recoveries: f(a.recoveries, b.recoveries),
        barges: f(a.barges, b.barges),
        killed: f(a.killed, b.killed),
    }
}
