//! The speed benchmark behind `avout bench sim`: how many ZooKeeper operations the simulator
//! processes per wall-clock second.
//!
//! The workload is 16 clients (by default), each in its own task, issuing a random mix of
//! creates (persistent, ephemeral and sequential), versioned and unversioned `set_data`,
//! deletes, `get_data`, `exists` and `get_children` on a few nested paths, one call at a
//! time, with every fault kind drawn at rates scaled from one number ([`rates`]). A client
//! whose session ends (expired by a fault or a long pause) is replaced by a new session, so
//! the load stays at the configured number of clients.
//!
//! This module only runs simulations; timing them is the caller's business (the simulator
//! itself never reads the wall clock).

use std::time::Duration;

use avout::{Coordination, CreateMode};

use crate::rng::{Rng, Stream};
use crate::{FaultKind, FaultRates, RunSummary, Sim, SimClient, SimConfig, SimCtx};

/// What to run.
///
/// ```
/// let p = avout_sim_zk::bench::BenchParams::default();
/// assert_eq!(p.clients, 16);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct BenchParams {
    /// Concurrent clients.
    pub clients: usize,
    /// Operations per client per run.
    pub ops_per_client: usize,
    /// The base fault rate (see [`rates`]).
    pub fault_rate: f64,
    /// A three-server ensemble, with its five fault kinds drawn too (see [`ensemble_rates`]).
    pub ensemble: bool,
    /// Only this fault kind, at the rate it has among the others (`None`: all of them).
    pub only: Option<FaultKind>,
}

impl Default for BenchParams {
    fn default() -> Self {
        BenchParams {
            clients: 16,
            ops_per_client: 2_000,
            fault_rate: 0.01,
            ensemble: false,
            only: None,
        }
    }
}

impl BenchParams {
    /// The fault rates of a run: [`rates`] or [`ensemble_rates`], narrowed to
    /// [`only`](Self::only).
    ///
    /// ```
    /// use avout_sim_zk::{FaultKind, bench::BenchParams};
    /// let p = BenchParams { ensemble: true, only: Some(FaultKind::Partition), ..Default::default() };
    /// assert!(p.rates().rate(FaultKind::Partition) > 0.0);
    /// assert_eq!(p.rates().rate(FaultKind::ReplyLost), 0.0);
    /// ```
    pub fn rates(&self) -> FaultRates {
        let all = if self.ensemble {
            ensemble_rates(self.fault_rate)
        } else {
            rates(self.fault_rate)
        };
        match self.only {
            None => all,
            Some(kind) => {
                let mut one = FaultRates::default();
                *one.rate_mut(kind) = all.rate(kind);
                one
            }
        }
    }
}

/// Every fault kind at a rate scaled from `r`, the per-request probability of a lost request
/// and of a lost reply: disconnects and stale-read spells at `r / 5`, outages, expiries and
/// pauses at `r / 50`.
///
/// ```
/// let rates = avout_sim_zk::bench::rates(0.01);
/// assert_eq!(rates.reply_lost, 0.01);
/// assert!(rates.outage > 0.0);
/// assert!(!avout_sim_zk::bench::rates(0.0).any());
/// ```
pub fn rates(r: f64) -> FaultRates {
    FaultRates {
        request_lost: r,
        reply_lost: r,
        disconnect: r / 5.0,
        expire: r / 50.0,
        pause: r / 50.0,
        stale_reads: r / 5.0,
        outage: r / 50.0,
        ..FaultRates::default()
    }
}

/// [`rates`] and the ensemble's kinds: moved sessions and partitions at `r / 5` and
/// `r / 10`, slow disks and leader lags at `r / 10`, elections and client freezes at `r / 50`.
///
/// ```
/// use avout_sim_zk::FaultKind;
/// let rates = avout_sim_zk::bench::ensemble_rates(0.01);
/// assert!(FaultKind::ALL.iter().all(|&k| rates.rate(k) > 0.0));
/// ```
pub fn ensemble_rates(r: f64) -> FaultRates {
    FaultRates {
        partition: r / 10.0,
        leader_election: r / 50.0,
        session_moved: r / 5.0,
        client_freeze: r / 50.0,
        slow_disk: r / 10.0,
        leader_lag: r / 10.0,
        ..rates(r)
    }
}

/// What the clients of one run saw.
///
/// ```
/// let p = avout_sim_zk::bench::BenchParams { clients: 2, ops_per_client: 50, ..Default::default() };
/// let (o, _) = avout_sim_zk::bench::run_once(1, &p);
/// assert_eq!(o.calls, 100);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BenchOutcome {
    /// Calls made by the clients.
    pub calls: u64,
    /// Calls that returned an error (ZooKeeper's, or a fault's).
    pub errors: u64,
    /// Sessions replaced after they ended.
    pub sessions_replaced: u64,
}

/// The simulation of one run.
///
/// ```
/// let sim = avout_sim_zk::bench::sim(3, &Default::default());
/// assert_eq!(sim.config().clients, 16);
/// ```
pub fn sim(seed: u64, params: &BenchParams) -> Sim {
    Sim::builder()
        .config(SimConfig {
            seed,
            clients: params.clients,
            session_timeout: Duration::from_secs(2),
            rates: params.rates(),
            servers: if params.ensemble { 3 } else { 1 },
            keep_log: false,
            ..SimConfig::default()
        })
        .build()
}

/// One run of the benchmark workload.
///
/// ```
/// let p = avout_sim_zk::bench::BenchParams { clients: 2, ops_per_client: 20, ..Default::default() };
/// let (_, a) = avout_sim_zk::bench::run_once(9, &p);
/// let (_, b) = avout_sim_zk::bench::run_once(9, &p);
/// assert_eq!(a.hash, b.hash);
/// assert!(a.requests >= 40);
/// ```
pub fn run_once(seed: u64, params: &BenchParams) -> (BenchOutcome, RunSummary) {
    let ops = params.ops_per_client;
    sim(seed, params).run(|ctx| workload(ctx, ops))
}

/// The workload: `ops` calls per client of the run.
///
/// ```
/// use avout_sim_zk::{bench, Sim};
/// let (o, _) = Sim::builder().seed(2).clients(3).build().run(|ctx| bench::workload(ctx, 10));
/// assert_eq!(o.calls, 30);
/// ```
pub async fn workload(mut ctx: SimCtx, ops: usize) -> BenchOutcome {
    let mut tasks = Vec::new();
    for client in std::mem::take(&mut ctx.clients) {
        let rng = Rng::new(ctx.rng.next_u64(), Stream::Workload);
        tasks.push(tokio::spawn(worker(ctx.zk.clone(), client, rng, ops)));
    }
    let mut total = BenchOutcome::default();
    for t in tasks {
        let o = t.await.expect("a bench worker panicked");
        total.calls += o.calls;
        total.errors += o.errors;
        total.sessions_replaced += o.sessions_replaced;
    }
    total
}

const PATHS: [&str; 6] = ["/a", "/b", "/a/x", "/a/y", "/b/z", "/c"];

async fn worker(zk: crate::SimZk, mut client: SimClient, mut rng: Rng, ops: usize) -> BenchOutcome {
    let mut out = BenchOutcome::default();
    // Sequential nodes this client made, deleted oldest first, so that no child list grows
    // without bound (which would make the benchmark measure list copying).
    let mut sequential = std::collections::VecDeque::new();
    for i in 0..ops {
        let path = PATHS[rng.below(PATHS.len() as u64) as usize];
        let result = match rng.below(10) {
            0 | 1 => {
                let mode = match rng.below(4) {
                    0 => CreateMode::Ephemeral,
                    1 => CreateMode::PersistentSequential,
                    _ => CreateMode::Persistent,
                };
                match client.create(path, b"x", &mode.into()).await {
                    Ok((made, _)) if mode.is_sequential() => {
                        sequential.push_back(made);
                        Ok(())
                    }
                    other => other.map(drop),
                }
            }
            2 => {
                let version = rng.below(3).checked_sub(1).map(|v| v as i32);
                client
                    .set_data(path, &(i as u64).to_le_bytes(), version)
                    .await
                    .map(drop)
            }
            3 => match sequential.len() {
                0..=2 => client.delete(path, None).await,
                _ => {
                    let oldest = sequential.pop_front().expect("more than two");
                    client.delete(&oldest, None).await
                }
            },
            4 | 5 => client.get_data(path).await.map(drop),
            6 | 7 => client.exists(path).await.map(drop),
            _ => client.get_children(path).await.map(drop),
        };
        out.calls += 1;
        if let Err(e) = result {
            out.errors += 1;
            if e.is_session_lost() {
                client = zk.connect();
                out.sessions_replaced += 1;
            }
        }
    }
    out
}
