//! `avout bench`: benchmarks against a running ZooKeeper.
//!
//! The recipe workloads (`lock-cycle`, `lock-contended`, `rwlock-read`, `counter`,
//! `counter-contended`) are in [`recipes`], the cache's lag behind a writer in [`cache_lag`];
//! this module is `avout bench ops`, the cost of single
//! ZooKeeper operations through avout's real backend.
//!
//! Two figures matter. *Sequential* operations (one outstanding request) measure the round
//! trip and avout's per-call overhead, which the same run isolates by also timing a minimal loop
//! over the raw `zookeeper-client` handle (peer `zookeeper-client`): the difference between the
//! two `create-seq` lines is what avout's layer costs. *Pipelined* operations measure
//! throughput: the [`Coordination`] contract says a request is sent when the method is called,
//! so issuing up to `--depth` calls before awaiting the oldest keeps that many requests in
//! flight on one session, and ZooKeeper answers them in order; a raw `set-pipelined` line shows
//! what the server and connection allow. Latency is per request, from the call to its reply.
//!
//! Every figure is one JSON line on stdout (`--json`), in the peers' format plus `p50_us` and
//! `p99_us`. The nodes live under `/bench/avout/ops`, which is deleted before and after the run.

use std::collections::VecDeque;
use std::fmt::Display;
use std::future::Future;
use std::io::Write;
use std::ops::Range;
use std::pin::Pin;
use std::time::{Duration, Instant};

use crate::cli::cmd::zk_auth::ZkAuth;
use avout::Client;
use avout::zk::ZkConfig;
use avout::{Coordination, CoordinationExt, CreateOptions};
use clap::{Args, Subcommand};
use zookeeper_client as zk;

pub(crate) mod cache_lag;
mod clock;
mod lag;
pub(crate) mod recipes;
pub(crate) mod sim;
pub(crate) mod stm;

pub(crate) use recipes::{RecipeArgs, Workload};

/// The `avout bench` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Create/get/set/delete, sequential and pipelined, on one session to a real ZooKeeper.
    Ops(OpsArgs),
    /// Exclusive lock acquire + release cycles, one client (the peers' `lock-cycle`).
    LockCycle(RecipeArgs),
    /// Exclusive lock cycles on one lock from `--clients` sessions, mutual exclusion checked.
    LockContended(RecipeArgs),
    /// Read-lock acquire + release cycles, one client.
    RwlockRead(RecipeArgs),
    /// Atom increments, one client, through the optimistic (one round trip) path.
    Counter(RecipeArgs),
    /// Atom increments on one atom from `--clients` sessions; the final value is checked.
    CounterContended(RecipeArgs),
    /// How far a cache of a 10,000-node subtree trails a writer at 1,000 sets/s.
    CacheLag(cache_lag::CacheLagArgs),
    /// Simulated ZooKeeper operations per wall-clock second (16 clients, faults on).
    Sim(sim::SimArgs),
    /// STM transactions altering one ref, from `--clients` sessions (see `bench::stm`).
    StmAlter(stm::StmArgs),
    /// STM transfers between accounts, from `--clients` sessions; money is checked.
    StmTransfer(stm::StmArgs),
}

impl BenchCommand {
    /// The STM workload and its options, for `stm-alter` and `stm-transfer`.
    pub(crate) fn stm(self) -> Result<(stm::StmWorkload, stm::StmArgs), BenchCommand> {
        match self {
            BenchCommand::StmAlter(args) => Ok((stm::StmWorkload::Alter, args)),
            BenchCommand::StmTransfer(args) => Ok((stm::StmWorkload::Transfer, args)),
            other => Err(other),
        }
    }

    /// The recipe workload and its options, for every subcommand but `ops`.
    pub(crate) fn recipe(self) -> Result<(Workload, RecipeArgs), OpsArgs> {
        match self {
            BenchCommand::Ops(args) => Err(args),
            BenchCommand::LockCycle(args) => Ok((Workload::LockCycle, args)),
            BenchCommand::LockContended(args) => Ok((Workload::LockContended, args)),
            BenchCommand::RwlockRead(args) => Ok((Workload::RwlockRead, args)),
            BenchCommand::Counter(args) => Ok((Workload::Counter, args)),
            BenchCommand::CounterContended(args) => Ok((Workload::CounterContended, args)),
            BenchCommand::Sim(_) => unreachable!("`bench sim` runs without a ZooKeeper (main.rs)"),
            BenchCommand::StmAlter(_) | BenchCommand::StmTransfer(_) => {
                unreachable!("the STM workloads are dispatched by `stm` first (main.rs)")
            }
            BenchCommand::CacheLag(_) => {
                unreachable!("`cache-lag` is dispatched before the recipes (`run`)")
            }
        }
    }
}

/// Options of `avout bench ops`.
#[derive(Debug, Args)]
pub(crate) struct OpsArgs {
    /// ZooKeeper connect string, e.g. 127.0.0.1:2181 (see `avout zk start`).
    #[arg(long, value_name = "CONNECT")]
    zk: String,
    #[command(flatten)]
    zk_auth: Box<ZkAuth>,
    /// Operations per figure.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u32).range(1..))]
    n: u32,
    /// Requests in flight in the pipelined workloads.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    depth: u32,
    /// Untimed create+delete pairs first, so the server's JIT is warm for every figure.
    #[arg(long, default_value_t = 2000)]
    warmup: u32,
    /// Print one JSON line per figure instead of a table.
    #[arg(long)]
    json: bool,
}

/// Why the benchmark failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BenchError {
    /// No session could be established.
    #[error("connecting to {connect}: {source}")]
    Connect {
        /// The connect string.
        connect: String,
        /// Why.
        #[source]
        source: avout::Error,
    },
    /// The raw client could not connect (after avout's client did).
    #[error("cannot connect the raw zookeeper-client to {connect}: {source}")]
    RawConnect {
        /// The connect string.
        connect: String,
        /// Why.
        #[source]
        source: zk::Error,
    },
    /// A workload's check failed: two lock holders at once, or a wrong counter total.
    #[error("{0}")]
    Violation(String),
    /// An operation failed mid-run.
    #[error("{peer} {workload}: {detail}")]
    Op {
        /// Whose operation.
        peer: &'static str,
        /// Which workload.
        workload: &'static str,
        /// The operation's error.
        detail: String,
    },
}

impl BenchError {
    /// `peer`'s operation in `workload` failed with `e`.
    fn op(peer: &'static str, workload: &'static str, e: impl Display) -> BenchError {
        BenchError::Op {
            peer,
            workload,
            detail: e.to_string(),
        }
    }
}

const ROOT: &str = "/bench/avout/ops";
/// Small values: the figures are about round trips, not bandwidth.
const DATA: &[u8] = b"avout-bench-value-0123456789abcd";
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How many alternating blocks the raw and avout loops of one workload run in.
const BLOCKS: usize = 10;

/// One timed workload.
struct Figure {
    peer: &'static str,
    workload: &'static str,
    secs: f64,
    /// Per-operation latencies, sorted.
    latencies: Vec<Duration>,
}

impl Figure {
    fn new(
        peer: &'static str,
        workload: &'static str,
        elapsed: Duration,
        mut latencies: Vec<Duration>,
    ) -> Figure {
        latencies.sort_unstable();
        Figure {
            peer,
            workload,
            secs: elapsed.as_secs_f64(),
            latencies,
        }
    }

    fn empty(peer: &'static str, workload: &'static str) -> Figure {
        Figure {
            peer,
            workload,
            secs: 0.0,
            latencies: Vec::new(),
        }
    }

    /// Adds another run of the same workload: its time and its latencies.
    fn merge(&mut self, other: Figure) {
        self.secs += other.secs;
        self.latencies.extend(other.latencies);
        self.latencies.sort_unstable();
    }

    fn ops(&self) -> usize {
        self.latencies.len()
    }

    fn ops_per_sec(&self) -> f64 {
        self.ops() as f64 / self.secs
    }

    /// The `q` quantile in microseconds (nearest rank).
    fn quantile_us(&self, q: f64) -> u128 {
        let rank = ((q * self.ops() as f64).ceil() as usize).clamp(1, self.ops());
        self.latencies[rank - 1].as_micros()
    }

    /// The figure as both outputs give it: peer, workload, ops, secs, ops/s, p50 and p99 in
    /// microseconds.
    fn values(&self) -> [String; 7] {
        [
            self.peer.to_owned(),
            self.workload.to_owned(),
            self.ops().to_string(),
            format!("{:.3}", self.secs),
            format!("{:.1}", self.ops_per_sec()),
            self.quantile_us(0.5).to_string(),
            self.quantile_us(0.99).to_string(),
        ]
    }

    /// The peers' JSON line: fixed key order, no spaces.
    fn json(&self) -> String {
        let [peer, workload, ops, secs, ops_per_sec, p50, p99] = self.values();
        format!(
            "{{\"peer\":\"{peer}\",\"workload\":\"{workload}\",\"clients\":1,\"ops\":{ops},\"secs\":{secs},\"ops_per_sec\":{ops_per_sec},\"p50_us\":{p50},\"p99_us\":{p99}}}"
        )
    }
}

/// The table's header.
const HEADER: [&str; 7] = [
    "peer", "workload", "ops", "secs", "ops/s", "p50 us", "p99 us",
];

/// A line of the table: the header's names or a figure's [`Figure::values`], in columns.
fn table_row(cells: [&str; 7]) -> String {
    let [peer, workload, ops, secs, ops_per_sec, p50, p99] = cells;
    format!("{peer:<17} {workload:<17} {ops:>7} {secs:>8} {ops_per_sec:>11} {p50:>8} {p99:>8}")
}

/// A managed client of the server under test, with the benches' timeouts (one per client,
/// like the peers: each holds one session at a time).
pub(crate) async fn connect(connect: &str, auth: &ZkAuth) -> Result<Client, BenchError> {
    Client::connect(config(connect, auth)?)
        .await
        .map_err(|source| BenchError::Connect {
            connect: connect.to_owned(),
            source,
        })
}

/// `--zk` and its TLS and SASL options, with the benches' timeouts.
fn config(connect: &str, auth: &ZkAuth) -> Result<ZkConfig, BenchError> {
    let config = auth.config(connect).map_err(|source| BenchError::Connect {
        connect: connect.to_owned(),
        source,
    })?;
    Ok(config
        .with_session_timeout(SESSION_TIMEOUT)
        .with_connect_timeout(CONNECT_TIMEOUT))
}

/// Runs a benchmark against a real ZooKeeper (every subcommand but `sim`).
pub(crate) async fn run(command: BenchCommand) -> Result<(), BenchError> {
    if let BenchCommand::CacheLag(args) = command {
        return cache_lag::run(args).await;
    }
    match command.stm() {
        Ok((workload, args)) => stm::run(workload, args).await,
        Err(command) => match command.recipe() {
            Ok((workload, args)) => recipes::run(workload, args).await,
            Err(args) => run_ops(args).await,
        },
    }
}

/// Runs `avout bench ops`.
pub(crate) async fn run_ops(args: OpsArgs) -> Result<(), BenchError> {
    let client = connect(&args.zk, &args.zk_auth).await?;
    // The raw loop gets its own session, like any other peer, so neither shares a queue.
    let raw = connect_raw(&config(&args.zk, &args.zk_auth)?).await?;
    let n = args.n as usize;
    let depth = args.depth as usize;
    let setup = |e: avout::Error| BenchError::op("avout", "setup", e);
    client.delete_recursive(ROOT).await.map_err(setup)?;
    for dir in ["warmup", "raw", "seq", "pipe"] {
        client
            .ensure_path(&format!("{ROOT}/{dir}"))
            .await
            .map_err(setup)?;
    }

    let mut out = Output::new(args.json);
    let create = CreateOptions::default();
    let warm = |i: usize| format!("{ROOT}/warmup/n-{i:08}");
    let warmup = args.warmup as usize;
    pipelined("avout", "warmup", 0..warmup, depth, |i| {
        client.create(&warm(i), DATA, &create)
    })
    .await?;
    pipelined("avout", "warmup", 0..warmup, depth, |i| {
        client.delete(&warm(i), None)
    })
    .await?;

    // The raw loop and avout's create-seq alternate in blocks, so that drift in the server's
    // state (its JIT, its log, the load on the machine) weighs on both alike.
    let raw_path = |i: usize| format!("{ROOT}/raw/n-{i:08}");
    let seq = |i: usize| format!("{ROOT}/seq/n-{i:08}");
    let raw_opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let (raw_ref, raw_opts) = (&raw, &raw_opts);
    let mut raw_create = Figure::empty("zookeeper-client", "create-seq");
    let mut avout_create = Figure::empty("avout", "create-seq");
    for (k, block) in blocks(n, BLOCKS).enumerate() {
        // Who goes first alternates too: the second of a pair meets a server the first warmed.
        for turn in [k % 2, 1 - k % 2] {
            if turn == 0 {
                raw_create.merge(
                    sequential("zookeeper-client", "create-seq", block.clone(), |i| {
                        // The raw create future borrows the path, so the path moves into it.
                        let path = raw_path(i);
                        async move { raw_ref.create(&path, DATA, raw_opts).await }
                    })
                    .await?,
                );
            } else {
                avout_create.merge(
                    sequential("avout", "create-seq", block.clone(), |i| {
                        client.create(&seq(i), DATA, &create)
                    })
                    .await?,
                );
            }
        }
    }
    out.emit(&raw_create);
    out.emit(&avout_create);
    pipelined("avout", "cleanup", 0..n, depth, |i| {
        client.delete(&raw_path(i), None)
    })
    .await?;

    out.emit(&sequential("avout", "get-seq", 0..n, |i| client.get_data(&seq(i))).await?);
    out.emit(
        &sequential("avout", "set-seq", 0..n, |i| {
            client.set_data(&seq(i), DATA, None)
        })
        .await?,
    );
    out.emit(
        &sequential("avout", "delete-seq", 0..n, |i| {
            client.delete(&seq(i), None)
        })
        .await?,
    );

    let pipe = |i: usize| format!("{ROOT}/pipe/n-{i:08}");
    out.emit(
        &pipelined("avout", "create-pipelined", 0..n, depth, |i| {
            client.create(&pipe(i), DATA, &create)
        })
        .await?,
    );
    out.emit(
        &pipelined("avout", "get-pipelined", 0..n, depth, |i| {
            client.get_data(&pipe(i))
        })
        .await?,
    );
    // The raw client's pipelined set, on the same nodes, says what the server and connection
    // allow, so avout's set-pipelined figure can be read against it. They alternate in blocks,
    // like the create-seq loops.
    let mut raw_set = Figure::empty("zookeeper-client", "set-pipelined");
    let mut set = Figure::empty("avout", "set-pipelined");
    for (k, block) in blocks(n, BLOCKS).enumerate() {
        for turn in [k % 2, 1 - k % 2] {
            if turn == 0 {
                raw_set.merge(
                    pipelined(
                        "zookeeper-client",
                        "set-pipelined",
                        block.clone(),
                        depth,
                        |i| {
                            // This future owns what it needs: the request was serialized at the call.
                            raw_ref.set_data(&pipe(i), DATA, None)
                        },
                    )
                    .await?,
                );
            } else {
                set.merge(
                    pipelined("avout", "set-pipelined", block.clone(), depth, |i| {
                        client.set_data(&pipe(i), DATA, None)
                    })
                    .await?,
                );
            }
        }
    }
    out.emit(&raw_set);
    out.emit(&set);
    out.emit(
        &pipelined("avout", "delete-pipelined", 0..n, depth, |i| {
            client.delete(&pipe(i), None)
        })
        .await?,
    );

    client.delete_recursive(ROOT).await.map_err(setup)?;
    // Closing tells the server to drop the sessions now rather than at their timeout.
    let _ = client.close().await;
    drop(raw);

    let ratio = avout_create.quantile_us(0.5) as f64 / raw_create.quantile_us(0.5).max(1) as f64;
    eprintln!(
        "avout create-seq p50 is {ratio:.2}x the raw zookeeper-client loop's (target <= 1.3); \
         pipelined set at depth {depth}: {:.0} ops/s (target >= 10000; the raw client: {:.0})",
        set.ops_per_sec(),
        raw_set.ops_per_sec(),
    );
    Ok(())
}

/// The raw loop's client, over TLS too when `config` has it (avout's connector, so both
/// clients reach the server the same way).
async fn connect_raw(config: &ZkConfig) -> Result<zk::Client, BenchError> {
    let connect = config.connect.as_str();
    let connector = config.connector().map_err(|source| BenchError::Connect {
        connect: connect.to_owned(),
        source,
    })?;
    let secure = config.tls.is_some();
    let connecting = async move {
        match secure {
            true => connector.secure_connect(connect).await,
            false => connector.connect(connect).await,
        }
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(source)) => Err(BenchError::RawConnect {
            connect: connect.to_owned(),
            source,
        }),
        Err(_) => Err(BenchError::RawConnect {
            connect: connect.to_owned(),
            source: zk::Error::Timeout,
        }),
    }
}

/// `0..n` cut into `count` consecutive ranges (fewer if `n < count`).
fn blocks(n: usize, count: usize) -> impl Iterator<Item = Range<usize>> {
    let size = n.div_ceil(count.max(1)).max(1);
    (0..n).step_by(size).map(move |lo| lo..(lo + size).min(n))
}

/// Where figures go: JSON lines, or a table with a header.
struct Output {
    json: bool,
    header_done: bool,
}

impl Output {
    fn new(json: bool) -> Output {
        Output {
            json,
            header_done: false,
        }
    }

    fn emit(&mut self, figure: &Figure) {
        let mut stdout = std::io::stdout().lock();
        if self.json {
            let _ = writeln!(stdout, "{}", figure.json());
        } else {
            if !self.header_done {
                let _ = writeln!(stdout, "{}", table_row(HEADER));
                self.header_done = true;
            }
            let _ = writeln!(
                stdout,
                "{}",
                table_row(figure.values().each_ref().map(String::as_str))
            );
        }
        // Figures appear as they are measured, also through a pipe.
        let _ = stdout.flush();
    }
}

/// Runs `op(i)` for each `i` in `range`, one at a time.
async fn sequential<F, T, E>(
    peer: &'static str,
    workload: &'static str,
    range: Range<usize>,
    mut op: impl FnMut(usize) -> F,
) -> Result<Figure, BenchError>
where
    F: Future<Output = Result<T, E>>,
    E: Display,
{
    let mut latencies = Vec::with_capacity(range.len());
    let start = Instant::now();
    for i in range {
        let issued = Instant::now();
        op(i).await.map_err(|e| BenchError::op(peer, workload, e))?;
        latencies.push(issued.elapsed());
    }
    Ok(Figure::new(peer, workload, start.elapsed(), latencies))
}

/// Runs `op(i)` for each `i` in `range` with up to `depth` requests in flight. Each call sends its request (the
/// trait's contract), so the queue holds requests already on the wire; ZooKeeper answers one
/// session in order, so awaiting the oldest first loses nothing.
async fn pipelined<F, T, E>(
    peer: &'static str,
    workload: &'static str,
    range: Range<usize>,
    depth: usize,
    mut op: impl FnMut(usize) -> F,
) -> Result<Figure, BenchError>
where
    F: Future<Output = Result<T, E>>,
    E: Display,
{
    let (mut next, end) = (range.start, range.end);
    let mut latencies = Vec::with_capacity(range.len());
    let mut in_flight: VecDeque<(Instant, Pin<Box<F>>)> = VecDeque::with_capacity(depth);
    let start = Instant::now();
    while next < end || !in_flight.is_empty() {
        while next < end && in_flight.len() < depth {
            in_flight.push_back((Instant::now(), Box::pin(op(next))));
            next += 1;
        }
        let (issued, reply) = in_flight
            .pop_front()
            .expect("the loop keeps a request in flight");
        reply.await.map_err(|e| BenchError::op(peer, workload, e))?;
        latencies.push(issued.elapsed());
    }
    Ok(Figure::new(peer, workload, start.elapsed(), latencies))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_have_the_peers_format_and_rows_the_tables() {
        let latencies = (1..=100).map(Duration::from_micros).collect();
        let f = Figure::new(
            "avout",
            "set-pipelined",
            Duration::from_millis(12_345),
            latencies,
        );
        assert_eq!(
            f.json(),
            "{\"peer\":\"avout\",\"workload\":\"set-pipelined\",\"clients\":1,\"ops\":100,\"secs\":12.345,\"ops_per_sec\":8.1,\"p50_us\":50,\"p99_us\":99}"
        );
        // The table's columns line up with its header's.
        assert_eq!(
            table_row(HEADER),
            "peer              workload              ops     secs       ops/s   p50 us   p99 us"
        );
        assert_eq!(
            table_row(f.values().each_ref().map(String::as_str)),
            "avout             set-pipelined         100   12.345         8.1       50       99"
        );
    }

    #[test]
    fn blocks_cover_the_range_once() {
        let all: Vec<usize> = blocks(23, 10).flatten().collect();
        assert_eq!(all, (0..23).collect::<Vec<_>>());
        assert_eq!(blocks(3, 10).count(), 3);
        assert_eq!(blocks(0, 10).count(), 0);
    }

    #[test]
    fn quantiles_of_one_sample_are_that_sample() {
        let f = Figure::new(
            "avout",
            "get-seq",
            Duration::from_secs(1),
            vec![Duration::from_micros(7)],
        );
        assert_eq!((f.quantile_us(0.5), f.quantile_us(0.99)), (7, 7));
    }
}
