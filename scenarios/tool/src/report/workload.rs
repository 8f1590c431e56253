//! The STM workload the reports measure: `writers` clients running short `alter`
//! transactions beside `readers` clients running long read-only ones, on a few refs, for a
//! window of time.
//!
//! It is written once against the managed [`Client`], so the same code runs on the simulator
//! (virtual time: a paused tokio clock, every figure a function of the seed) and on a real
//! ZooKeeper (`--zk`, wall-clock time). Each client has its own [`Client`] and [`Stm`] handle
//! (its own cache). Time comes only from `tokio::time`, so on the simulator nothing in the
//! outcome depends on the machine running it.
//!
//! - A **writer** transaction picks `write_refs` distinct refs at random (before the
//!   transaction, so its retries touch the same refs) and `alter`s each by +1, pausing
//!   `write_gap` after each touch: the pause is the transaction's length, the window in
//!   which another writer can conflict with it.
//! - A **reader** transaction `deref`s the first `read_refs` refs, pausing `read_gap` after
//!   each: a long read-only transaction, which a protocol either serves from a snapshot
//!   (Mvcc, while the history still holds the value) or validates at commit (Optimistic).
//!
//! Every client starts its transactions until the window closes; a transaction that commits
//! after the window still counts in latencies and retries but not in the throughput.

use std::collections::BTreeMap;
use std::time::Duration;

use avout::stm::{Ref, Stm, StmConfig, StmError, StmStats};
use avout::{Client, Coordination};
use tokio::time::Instant;

use super::stm_stats;

/// What to run (besides the seed and the backend).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Mix {
    /// Protocol, BARGE-WAIT, MAX-HISTORY, retry limit.
    pub(crate) config: StmConfig,
    /// Refs the clients share.
    pub(crate) refs: usize,
    /// Clients running writer transactions.
    pub(crate) writers: usize,
    /// Refs a writer transaction alters.
    pub(crate) write_refs: usize,
    /// Pause after each of a writer's touches.
    pub(crate) write_gap: Duration,
    /// Clients running read-only transactions.
    pub(crate) readers: usize,
    /// Refs a reader transaction reads.
    pub(crate) read_refs: usize,
    /// Pause after each of a reader's reads.
    pub(crate) read_gap: Duration,
    /// Whether the reader clients alter the refs they read (+1 each) instead: long writers
    /// beside the short ones, to see whether they starve.
    pub(crate) long_writers: bool,
    /// The measured window.
    pub(crate) window: Duration,
}

impl Mix {
    /// `refs` refs and no clients yet: add them with [`Mix::writers`] and [`Mix::readers`].
    pub(crate) fn new(config: StmConfig, refs: usize, window: Duration) -> Mix {
        Mix {
            config,
            refs,
            writers: 0,
            write_refs: 0,
            write_gap: Duration::ZERO,
            readers: 0,
            read_refs: 0,
            read_gap: Duration::ZERO,
            long_writers: false,
            window,
        }
    }

    /// With `clients` writers, each transaction altering `refs` refs and pausing `gap` after
    /// each.
    pub(crate) fn writers(self, clients: usize, refs: usize, gap: Duration) -> Mix {
        Mix {
            writers: clients,
            write_refs: refs,
            write_gap: gap,
            ..self
        }
    }

    /// With `clients` readers, each transaction reading `refs` refs and pausing `gap` after
    /// each.
    pub(crate) fn readers(self, clients: usize, refs: usize, gap: Duration) -> Mix {
        Mix {
            readers: clients,
            read_refs: refs,
            read_gap: gap,
            ..self
        }
    }

    /// Makes the reader clients long writers: each transaction alters the refs it would
    /// have read, pausing after each.
    pub(crate) fn long_writers(self) -> Mix {
        Mix {
            long_writers: true,
            ..self
        }
    }

    /// Clients in all.
    pub(crate) fn clients(&self) -> usize {
        self.writers + self.readers
    }
}

/// What one class of clients (writers or readers) did.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Class {
    /// Transactions committed within the window.
    pub(crate) commits: u64,
    /// Transactions that finished (committed or gave up), at any time.
    pub(crate) finished: u64,
    /// Latency of each committed transaction, in microseconds, sorted.
    pub(crate) latencies_us: Vec<u64>,
    /// Retries of all its transactions.
    pub(crate) retries: u64,
    /// The most retries one transaction needed.
    pub(crate) max_retries: u64,
    /// Transactions that hit the retry limit.
    pub(crate) gave_up: u64,
    /// The STM's counts for its clients.
    pub(crate) stats: StmStats,
}

/// What one run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Outcome {
    /// The writer clients.
    pub(crate) writers: Class,
    /// The reader clients.
    pub(crate) readers: Class,
    /// Windows of [`STALL_WINDOW`] inside the measured window with no commit at all.
    pub(crate) stalled_windows: u64,
    /// Nodes under the STM root after the run.
    pub(crate) nodes: u64,
    /// Failures other than the retry limit, by kind (none expected without faults).
    pub(crate) failures: BTreeMap<String, u64>,
    /// The measured window as it ran (virtual time on the simulator).
    pub(crate) window: Duration,
}

/// The granularity at which a stall (no commit by anyone) is counted: a sign of livelock.
pub(crate) const STALL_WINDOW: Duration = Duration::from_millis(100);

impl Outcome {
    /// Commits per second of the window, both classes.
    pub(crate) fn commits_per_sec(&self) -> f64 {
        (self.writers.commits + self.readers.commits) as f64 / self.window.as_secs_f64()
    }

    /// The counts of both classes summed.
    pub(crate) fn stats(&self) -> StmStats {
        stm_stats::sum(self.writers.stats, self.readers.stats)
    }
}

/// A small deterministic generator (SplitMix64) for the clients' choices.
struct Rand(u64);

impl Rand {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// `k` distinct indices below `n`, in random order.
    fn pick(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..n).collect();
        for i in 0..k.min(n) {
            let j = i + self.below(n - i);
            all.swap(i, j);
        }
        all.truncate(k.min(n));
        all
    }
}

/// What a client reports.
struct ClientRun {
    class: Class,
    commit_times: Vec<Duration>,
}

/// Why a run could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SetupError {
    #[error("cannot open the STM at {root}: {source}")]
    Open {
        root: String,
        #[source]
        source: StmError,
    },
    #[error("cannot make ref {name}: {source}")]
    MakeRef {
        name: String,
        #[source]
        source: StmError,
    },
}

/// Runs `mix` with one workload client per client of `clients` (`mix.clients()` of them),
/// under `root`, with `seed` for the clients' choices.
pub(crate) async fn run(
    clients: &[Client],
    root: &str,
    mix: &Mix,
    seed: u64,
) -> Result<Outcome, SetupError> {
    assert_eq!(
        clients.len(),
        mix.clients(),
        "one client per workload client"
    );
    let mut stms = Vec::new();
    for zk in clients {
        let stm = Stm::open(zk, root, mix.config.clone())
            .await
            .map_err(|source| SetupError::Open {
                root: root.to_owned(),
                source,
            })?;
        stms.push(stm);
    }
    let names: Vec<String> = (0..mix.refs).map(|i| format!("r{i}")).collect();
    for name in &names {
        stms[0]
            .make_ref(name, 0i64)
            .await
            .map_err(|source| SetupError::MakeRef {
                name: name.clone(),
                source,
            })?;
    }
    let mut runs = Vec::new();
    let start = Instant::now();
    let deadline = start + mix.window;
    for (i, stm) in stms.iter().enumerate() {
        let refs: Vec<Ref<i64>> = names
            .iter()
            .map(|n| stm.get_ref(n).expect("a valid name"))
            .collect();
        let rand = Rand(seed ^ (i as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f));
        let reader = i >= mix.writers;
        runs.push(client(stm, refs, rand, reader, mix, start, deadline));
    }
    // One task polls every client: no `Send` bound on the transactions, and on the
    // simulator a fixed polling order.
    let runs = futures::future::join_all(runs).await;
    let mut out = Outcome {
        window: mix.window,
        ..Outcome::default()
    };
    let mut commit_times = Vec::new();
    for (i, (run, failures)) in runs.into_iter().enumerate() {
        let class = if i >= mix.writers {
            &mut out.readers
        } else {
            &mut out.writers
        };
        merge(class, run.class);
        commit_times.extend(run.commit_times);
        for (k, n) in failures {
            *out.failures.entry(k).or_default() += n;
        }
    }
    out.writers.latencies_us.sort_unstable();
    out.readers.latencies_us.sort_unstable();
    out.stalled_windows = stalls(&commit_times, mix.window);
    out.nodes = count_nodes(&clients[0], root).await;
    Ok(out)
}

fn merge(into: &mut Class, from: Class) {
    into.commits += from.commits;
    into.finished += from.finished;
    into.latencies_us.extend(from.latencies_us);
    into.retries += from.retries;
    into.max_retries = into.max_retries.max(from.max_retries);
    into.gave_up += from.gave_up;
    into.stats = stm_stats::sum(into.stats, from.stats);
}

/// Windows of [`STALL_WINDOW`] within `window` in which nothing committed.
fn stalls(commit_times: &[Duration], window: Duration) -> u64 {
    let n = (window.as_micros() / STALL_WINDOW.as_micros()).max(1) as usize;
    let mut busy = vec![false; n];
    for t in commit_times {
        let i = (t.as_micros() / STALL_WINDOW.as_micros()) as usize;
        if i < n {
            busy[i] = true;
        }
    }
    busy.iter().filter(|b| !**b).count() as u64
}

/// Nodes in the subtree under `root` (the root excluded); 0 if it cannot be read.
async fn count_nodes<C: Coordination + ?Sized>(zk: &C, root: &str) -> u64 {
    let mut count = 0;
    let mut stack = vec![root.to_owned()];
    while let Some(path) = stack.pop() {
        let Ok((children, _)) = zk.get_children(&path).await else {
            continue;
        };
        for c in children {
            count += 1;
            stack.push(format!("{path}/{c}"));
        }
    }
    count
}

async fn client(
    stm: &Stm,
    refs: Vec<Ref<i64>>,
    mut rand: Rand,
    reader: bool,
    mix: &Mix,
    start: Instant,
    deadline: Instant,
) -> (ClientRun, BTreeMap<String, u64>) {
    let before = stm.stats();
    let mut run = ClientRun {
        class: Class::default(),
        commit_times: Vec::new(),
    };
    let mut failures = BTreeMap::new();
    while Instant::now() < deadline {
        let began = Instant::now();
        let mut tries = 0u64;
        let result = if reader && mix.long_writers {
            let touched = &refs[..mix.read_refs.min(refs.len())];
            let gap = mix.read_gap;
            stm.dosync(async |tx| {
                tries += 1;
                for r in touched {
                    tx.alter(r, |v| v + 1).await?;
                    if !gap.is_zero() {
                        tokio::time::sleep(gap).await;
                    }
                }
                Ok(0)
            })
            .await
        } else if reader {
            let reads = &refs[..mix.read_refs.min(refs.len())];
            let gap = mix.read_gap;
            stm.dosync(async |tx| {
                tries += 1;
                let mut sum = 0i64;
                for r in reads {
                    sum += tx.deref(r).await?;
                    if !gap.is_zero() {
                        tokio::time::sleep(gap).await;
                    }
                }
                Ok(sum)
            })
            .await
        } else {
            let picked: Vec<&Ref<i64>> = rand
                .pick(refs.len(), mix.write_refs)
                .into_iter()
                .map(|i| &refs[i])
                .collect();
            let gap = mix.write_gap;
            stm.dosync(async |tx| {
                tries += 1;
                for r in &picked {
                    tx.alter(r, |v| v + 1).await?;
                    if !gap.is_zero() {
                        tokio::time::sleep(gap).await;
                    }
                }
                Ok(0)
            })
            .await
        };
        let done = Instant::now();
        let retries = tries.saturating_sub(1);
        run.class.finished += 1;
        run.class.retries += retries;
        run.class.max_retries = run.class.max_retries.max(retries);
        match result {
            Ok(_) => {
                run.class
                    .latencies_us
                    .push((done - began).as_micros() as u64);
                if done <= deadline {
                    run.class.commits += 1;
                    run.commit_times.push(done - start);
                }
            }
            Err(StmError::RetryLimit { .. }) => run.class.gave_up += 1,
            // Counted, and the client goes on: a transaction cut off by a lost session is
            // not retried, and the next one runs on the client's next session.
            Err(e) => *failures.entry(kind(&e)).or_default() += 1,
        }
    }
    run.class.stats = stm_stats::difference(stm.stats(), before);
    (run, failures)
}

fn kind(e: &StmError) -> String {
    let s = format!("{e:?}");
    s.split(['(', ' ', '{'])
        .next()
        .unwrap_or("other")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_are_distinct_and_in_range() {
        let mut r = Rand(7);
        for _ in 0..100 {
            let p = r.pick(5, 3);
            assert_eq!(p.len(), 3);
            assert!(p.iter().all(|i| *i < 5));
            let mut q = p.clone();
            q.sort_unstable();
            q.dedup();
            assert_eq!(q.len(), 3);
        }
        assert_eq!(r.pick(2, 5).len(), 2);
    }

    #[test]
    fn stalls_count_empty_windows() {
        let ms = Duration::from_millis;
        assert_eq!(stalls(&[ms(50), ms(250)], ms(400)), 2);
        assert_eq!(stalls(&[], ms(400)), 4);
        assert_eq!(stalls(&[ms(500)], ms(400)), 4);
    }
}
