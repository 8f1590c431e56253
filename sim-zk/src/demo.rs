//! The demo behind README's main job: several clients doing sequential creates and versioned
//! updates under every kind of fault, run twice from one seed to show the replay.
//!
//! Each client, in its own task, repeats a random mix of:
//!
//! - **enqueue**: a sequential create under `/demo/queue`, named with a GUID-like prefix
//!   (`c<client>-<n>-`). After an indeterminate error it looks for its prefix among the
//!   children before trying again: the recipe that exists because a create can succeed while
//!   its reply is lost;
//! - **increment**: read `/demo/counter`, write it back plus one with the version it read,
//!   retrying on `BadVersion`;
//! - **register**: (re)create its ephemeral `/demo/members/c<client>`.
//!
//! A session that ends (expired by a fault or a long pause) is replaced by a new one. At the
//! end the demo checks what the faults allow: every acknowledged enqueue is in the queue
//! exactly once, and the counter is at least the number of acknowledged increments and at
//! most that plus the indeterminate ones.

use std::collections::BTreeMap;
use std::time::Duration;

use avout::{Coordination, CoordinationExt, CreateMode, Error};
use serde::Serialize;

use crate::rng::{Rng, Stream};
use crate::{FaultKind, FaultRates, RunSummary, Sim, SimClient, SimConfig, SimCtx, SimZk};

/// How big the demo is.
///
/// ```
/// let p = avout_sim_zk::demo::DemoParams::default();
/// assert_eq!(p.clients, 4);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DemoParams {
    /// Concurrent clients.
    pub clients: usize,
    /// Operations per client.
    pub ops_per_client: usize,
    /// Fault rates.
    pub rates: FaultRates,
}

impl Default for DemoParams {
    fn default() -> Self {
        // Rates high enough that one run shows most fault kinds.
        DemoParams {
            clients: 4,
            ops_per_client: 100,
            rates: FaultRates {
                request_lost: 0.02,
                reply_lost: 0.02,
                disconnect: 0.01,
                expire: 0.003,
                pause: 0.003,
                stale_reads: 0.01,
                outage: 0.002,
                ..FaultRates::default()
            },
        }
    }
}

/// What one demo run observed.
///
/// ```
/// let o = avout_sim_zk::demo::run_once(1, &Default::default()).0;
/// assert!(o.counter >= o.acked_increments);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DemoOutcome {
    /// Final value of `/demo/counter`.
    pub counter: u64,
    /// Increments acknowledged by the service.
    pub acked_increments: u64,
    /// Increments whose fate was unknown to their client.
    pub indeterminate_increments: u64,
    /// Nodes in `/demo/queue` at the end.
    pub queue_len: usize,
    /// Enqueues acknowledged (directly, or found by prefix after an indeterminate error).
    pub acked_enqueues: u64,
    /// Sessions that ended and were replaced.
    pub sessions_replaced: u64,
}

/// The demo's report: fault counts, the run's hash, and the hash of its replay.
///
/// ```
/// let r = avout_sim_zk::demo::run(7);
/// assert!(r.replayed_identically());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DemoReport {
    /// The seed.
    pub seed: u64,
    /// Faults that fired, by kind name.
    pub faults: BTreeMap<String, u64>,
    /// The event-log hash of the first run.
    pub hash: u64,
    /// The event-log hash of the second run of the same seed.
    pub replay_hash: u64,
    /// Requests the service processed.
    pub requests: u64,
    /// Entries in the event log.
    pub log_len: u64,
    /// Virtual time the run took, milliseconds.
    pub virtual_ms: u64,
    /// What the workload saw.
    pub outcome: DemoOutcome,
}

impl DemoReport {
    /// Whether the replay gave the same hash.
    ///
    /// ```
    /// assert!(avout_sim_zk::demo::run(2).replayed_identically());
    /// ```
    pub fn replayed_identically(&self) -> bool {
        self.hash == self.replay_hash
    }
}

impl std::fmt::Display for DemoReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "seed {}", self.seed)?;
        writeln!(
            f,
            "{} requests, {} log entries, {} ms of virtual time",
            self.requests, self.log_len, self.virtual_ms
        )?;
        writeln!(f, "faults:")?;
        for (kind, n) in &self.faults {
            writeln!(f, "  {kind:<15} {n}")?;
        }
        let o = &self.outcome;
        writeln!(
            f,
            "counter {} (acknowledged increments {}, indeterminate {}); queue {} (acknowledged {}); sessions replaced {}",
            o.counter,
            o.acked_increments,
            o.indeterminate_increments,
            o.queue_len,
            o.acked_enqueues,
            o.sessions_replaced
        )?;
        write!(
            f,
            "event-log hash {:#018x}; replay {:#018x}: {}",
            self.hash,
            self.replay_hash,
            if self.replayed_identically() {
                "identical"
            } else {
                "DIFFERENT"
            }
        )
    }
}

/// Runs the demo with seed `seed` twice and reports.
///
/// # Panics
///
/// If the workload's checks fail (a bug in the simulator or the recipe), after printing the
/// seed.
///
/// ```
/// let report = avout_sim_zk::demo::run(1);
/// assert_eq!(report.hash, report.replay_hash);
/// println!("{report}");
/// ```
pub fn run(seed: u64) -> DemoReport {
    let params = DemoParams::default();
    let (outcome, first) = run_once(seed, &params);
    let (_, second) = run_once(seed, &params);
    DemoReport {
        seed,
        faults: FaultKind::ALL
            .iter()
            .map(|k| (k.name().to_owned(), first.fault_count(*k)))
            .collect(),
        hash: first.hash,
        replay_hash: second.hash,
        requests: first.requests,
        log_len: first.log_len,
        virtual_ms: first.virtual_time.as_millis() as u64,
        outcome,
    }
}

/// The simulation the demo runs for `seed`.
///
/// ```
/// assert_eq!(avout_sim_zk::demo::sim(3, &Default::default()).config().clients, 4);
/// ```
pub fn sim(seed: u64, params: &DemoParams) -> Sim {
    Sim::builder()
        .config(SimConfig {
            seed,
            clients: params.clients,
            session_timeout: Duration::from_secs(2),
            rates: params.rates,
            keep_log: false,
            ..SimConfig::default()
        })
        .build()
}

/// Runs the demo once and returns what it saw and the run's summary.
///
/// ```
/// let (_, a) = avout_sim_zk::demo::run_once(5, &Default::default());
/// let (_, b) = avout_sim_zk::demo::run_once(5, &Default::default());
/// assert_eq!(a.hash, b.hash);
/// ```
pub fn run_once(seed: u64, params: &DemoParams) -> (DemoOutcome, RunSummary) {
    let ops = params.ops_per_client;
    sim(seed, params).run(|ctx| workload(ctx, ops))
}

/// The demo's workload, for running on any [`Sim`] (a replay, say): `ops` operations per
/// client of the run, then the checks.
///
/// ```
/// use avout_sim_zk::{demo, Sim};
/// let (outcome, _) = Sim::builder().seed(4).clients(2).build().run(|ctx| demo::workload(ctx, 5));
/// assert_eq!(outcome.sessions_replaced, 0);
/// ```
pub async fn workload(mut ctx: SimCtx, ops: usize) -> DemoOutcome {
    {
        let zk = ctx.zk.clone();
        retry(&zk, |c| async move { c.ensure_path("/demo/queue").await }).await;
        retry(&zk, |c| async move { c.ensure_path("/demo/members").await }).await;
        retry(&zk, |c| async move {
            match c.create("/demo/counter", b"0", &Default::default()).await {
                Err(Error::NodeExists { .. }) => Ok(()),
                other => other.map(|_| ()),
            }
        })
        .await;
        let mut tasks = Vec::new();
        for (i, client) in ctx.clients.iter().enumerate() {
            let rng = Rng::new(ctx.rng.next_u64(), Stream::Workload);
            tasks.push(tokio::spawn(worker(
                i,
                ctx.zk.clone(),
                client.clone(),
                rng,
                ops,
            )));
        }
        let mut outcome = DemoOutcome::default();
        for t in tasks {
            let o = t.await.expect("a demo worker panicked");
            outcome.acked_increments += o.acked_increments;
            outcome.indeterminate_increments += o.indeterminate_increments;
            outcome.acked_enqueues += o.acked_enqueues;
            outcome.sessions_replaced += o.sessions_replaced;
        }
        let (data, queue) = retry(&zk, |c| async move {
            c.sync("/").await?;
            let (data, _) = c.get_data("/demo/counter").await?;
            Ok((data, c.get_children("/demo/queue").await?.0))
        })
        .await;
        outcome.counter = parse(&data);
        outcome.queue_len = queue.len();
        assert!(
            outcome.counter >= outcome.acked_increments
                && outcome.counter <= outcome.acked_increments + outcome.indeterminate_increments,
            "counter {} outside [{}, {}]",
            outcome.counter,
            outcome.acked_increments,
            outcome.acked_increments + outcome.indeterminate_increments
        );
        assert_eq!(
            outcome.queue_len as u64, outcome.acked_enqueues,
            "every enqueue is acknowledged or found by its prefix, exactly once"
        );
        outcome
    }
}

fn parse(data: &[u8]) -> u64 {
    std::str::from_utf8(data)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("counter holds {data:?}"))
}

/// Retries an idempotent step (the setup's and checker's are) across connection loss, on a
/// new session if the session ends.
async fn retry<T, F, Fut>(zk: &SimZk, mut step: F) -> T
where
    F: FnMut(SimClient) -> Fut,
    Fut: Future<Output = avout::Result<T>>,
{
    let mut client = zk.connect();
    loop {
        match step(client.clone()).await {
            Ok(v) => {
                let _ = client.close().await;
                return v;
            }
            Err(e) if e.is_indeterminate() => continue,
            Err(e) if e.is_session_lost() => client = zk.connect(),
            Err(e) => panic!("demo step failed: {e}"),
        }
    }
}

use std::future::Future;

async fn worker(
    index: usize,
    zk: SimZk,
    mut client: SimClient,
    mut rng: Rng,
    ops: usize,
) -> DemoOutcome {
    let mut out = DemoOutcome::default();
    let mut n = 0u64;
    caught_up(&client).await;
    for _ in 0..ops {
        let mut enqueued = None;
        let step = match rng.below(3) {
            0 => {
                n += 1;
                let prefix = format!("c{index}-{n}-");
                enqueued = Some(prefix.clone());
                enqueue(&client, &prefix, &mut out).await
            }
            1 => increment(&client, &mut out).await,
            _ => register(&client, index).await,
        };
        if let Err(e) = step {
            assert!(e.is_session_lost(), "unexpected error {e}");
            out.sessions_replaced += 1;
            client = zk.connect();
            caught_up(&client).await;
            if let Some(prefix) = enqueued {
                // The create may have been applied before the session ended.
                if find_prefix(&zk, &mut client, &prefix, &mut out).await {
                    out.acked_enqueues += 1;
                }
            }
        }
    }
    // Leave nothing behind but the data: close the session (its member node goes).
    let _ = client.close().await;
    out
}

async fn find_prefix(
    zk: &SimZk,
    client: &mut SimClient,
    prefix: &str,
    out: &mut DemoOutcome,
) -> bool {
    loop {
        match client.get_children("/demo/queue").await {
            Ok((children, _)) => return children.iter().any(|c| c.starts_with(prefix)),
            Err(e) if e.is_indeterminate() => continue,
            Err(e) => {
                assert!(e.is_session_lost(), "unexpected error {e}");
                out.sessions_replaced += 1;
                *client = zk.connect();
            }
        }
    }
}

async fn enqueue(client: &SimClient, prefix: &str, out: &mut DemoOutcome) -> avout::Result<()> {
    let path = format!("/demo/queue/{prefix}");
    loop {
        match client
            .create(&path, b"job", &CreateMode::PersistentSequential.into())
            .await
        {
            Ok(_) => {
                out.acked_enqueues += 1;
                return Ok(());
            }
            Err(e) if e.is_indeterminate() => {
                // Did it happen? Look for our prefix before creating another.
                loop {
                    match client.get_children("/demo/queue").await {
                        Ok((children, _)) => {
                            if children.iter().any(|c| c.starts_with(prefix)) {
                                out.acked_enqueues += 1;
                                return Ok(());
                            }
                            break;
                        }
                        Err(e) if e.is_indeterminate() => continue,
                        Err(e) => return Err(e),
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// A new session may be on a follower that has not seen the setup yet (or, after a
/// reconnect, this worker's own writes of its last session): it syncs before its first read.
/// A session lost here shows up at the next step.
async fn caught_up(client: &SimClient) {
    while let Err(e) = client.sync("/demo").await {
        if !e.is_indeterminate() {
            return;
        }
    }
}

async fn increment(client: &SimClient, out: &mut DemoOutcome) -> avout::Result<()> {
    loop {
        let (data, stat) = match client.get_data("/demo/counter").await {
            Ok(found) => found,
            Err(e) if e.is_indeterminate() => continue,
            Err(e) => return Err(e),
        };
        let next = (parse(&data) + 1).to_string();
        match client
            .set_data("/demo/counter", next.as_bytes(), Some(stat.version))
            .await
        {
            Ok(_) => {
                out.acked_increments += 1;
                return Ok(());
            }
            Err(Error::BadVersion { .. }) => continue,
            Err(e) if e.is_indeterminate() => {
                // A versioned write is safe to leave: either it happened once or not at all.
                out.indeterminate_increments += 1;
                return Ok(());
            }
            Err(e) => {
                if e.is_session_lost() {
                    // It may have been applied before the session ended.
                    out.indeterminate_increments += 1;
                }
                return Err(e);
            }
        }
    }
}

async fn register(client: &SimClient, index: usize) -> avout::Result<()> {
    let path = format!("/demo/members/c{index}");
    loop {
        match client
            .create(&path, b"", &CreateMode::Ephemeral.into())
            .await
        {
            Ok(_) | Err(Error::NodeExists { .. }) => return Ok(()),
            Err(e) if e.is_indeterminate() => continue,
            Err(e) => return Err(e),
        }
    }
}
