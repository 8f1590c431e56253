//! `avout report`: research reports generated from measurements, written to
//! `reports/<name>.md` with SVG plots, each headed by the command that regenerates it.
//!
//! - `avout report protocols`: [`Protocol::Mvcc`] against [`Protocol::Optimistic`] on the same
//!   workloads.
//! - `avout report max-history`: Mvcc's MAX-HISTORY swept under long readers and short writers.
//! - `avout report barge`: Mvcc's BARGE-WAIT swept against contention.
//! - `avout report bench`: avout's benchmarks beside the Curator and kazoo peers on one real
//!   server, as a table of ratios.
//!
//! The STM reports run a sweep of (parameter point × seed) on the simulator
//! ([`sweep::run_sweep`], one simulation per OS thread at a time), and give each quantity as
//! the mean over seeds with its 95% confidence interval ([`stats`]). The simulator's clock is
//! virtual, so every figure (throughput per virtual second, latencies, counts) is a function
//! of the command: the same command writes the same report, on any machine. With `--zk
//! CONNECT` a subset of the points also runs on a real ZooKeeper, in real time, and the report
//! compares the two. A report's findings section is computed from its data.
//!
//! [`Protocol::Mvcc`]: avout::stm::Protocol::Mvcc
//! [`Protocol::Optimistic`]: avout::stm::Protocol::Optimistic

mod barge;
mod barge_model;
mod bench;
mod calibrate;
mod deploy;
mod figures;
mod latency;
mod max_history;
mod protocols;
mod real;
pub(crate) mod render;
pub mod stats;
pub mod stm_stats;
pub mod sweep;
mod workload;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use avout::zk::ZkConfig;
use avout::{Client, CoordinationExt};

use figures::{Pick, conclude, deployments_para, identical_runs, plot, plots, sections, table};
use stats::Estimate;
use workload::{Mix, Outcome};

/// The reports.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum ReportCommand {
    /// Mvcc against Optimistic: throughput, retries, read-only transactions, round trips.
    Protocols(SweepArgs),
    /// Mvcc's MAX-HISTORY under long read-only transactions and short writers.
    MaxHistory(SweepArgs),
    /// Mvcc's BARGE-WAIT against contention: throughput, retries, starvation, livelock.
    Barge(SweepArgs),
    /// avout's benchmarks and the Curator and kazoo peers on one real server: ratios.
    Bench(bench::BenchArgs),
    /// Round trips of a real server and a real ensemble by class of request, and the
    /// simulator latency models fitted from them (the fitted deployments read these).
    Latency(latency::LatencyArgs),
}

/// Options of the sweeps.
#[derive(Clone, Debug, clap::Args)]
pub struct SweepArgs {
    /// Seeds (independent simulated runs) per point.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// The measured window of each run, in milliseconds (virtual time on the simulator).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(100..))]
    window_ms: u64,
    /// Threads running simulations (default: one per core). Does not change the numbers.
    #[arg(long)]
    threads: Option<usize>,
    /// Directory the report and its plots are written to.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Also run a subset of the points on this ZooKeeper (wall-clock time, so those numbers
    /// are not reproducible) and compare.
    #[arg(long, value_name = "CONNECT")]
    zk: Option<String>,
    /// Start a standalone server and an ensemble of this many members (temporary
    /// directories, free ports, stopped at the end), and run the compared points on both
    /// (with `--zk`, that server stands for the standalone one).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..))]
    zk_ensemble: Option<u8>,
    /// Runs per point on the real ZooKeeper.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    zk_runs: u64,
    /// The directory of the latency models fitted from real servers (`avout report latency`
    /// writes them), from which the fitted deployments are simulated.
    #[arg(long, value_name = "DIR", default_value = "reports/latency")]
    fitted: PathBuf,
    /// Leave out the model check a report confirms its findings with (`barge`: half a
    /// minute of checking).
    #[arg(long)]
    no_model: bool,
}

impl SweepArgs {
    /// The command line that regenerates a report (`--threads` changes nothing, so it is left
    /// out).
    fn command(&self, name: &str) -> String {
        let mut c = format!(
            "avout report {name} --seeds {} --window-ms {}",
            self.seeds, self.window_ms
        );
        if self.out != std::path::Path::new("reports") {
            c.push_str(&format!(" --out {}", self.out.display()));
        }
        if self.fitted != std::path::Path::new("reports/latency") {
            c.push_str(&format!(" --fitted {}", self.fitted.display()));
        }
        if let Some(zk) = &self.zk {
            c.push_str(&format!(" --zk {zk}"));
        }
        if let Some(n) = self.zk_ensemble {
            c.push_str(&format!(" --zk-ensemble {n}"));
        }
        if self.zk.is_some() || self.zk_ensemble.is_some() {
            c.push_str(&format!(" --zk-runs {}", self.zk_runs));
        }
        if self.no_model {
            c.push_str(" --no-model");
        }
        c
    }

    fn window(&self) -> Duration {
        Duration::from_millis(self.window_ms)
    }

    fn threads(&self) -> usize {
        self.threads.unwrap_or_else(sweep::default_threads)
    }
}

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A plot could not be drawn.
    #[error("cannot draw the plot {0}")]
    Plot(String),
    /// A run could not set up its STM (opening the root, making the refs).
    #[error("run {what}: {detail}")]
    Setup {
        /// Which run.
        what: String,
        /// What failed.
        detail: String,
    },
    /// The real ZooKeeper could not be reached.
    #[error("cannot connect to ZooKeeper at {connect}: {source}")]
    Connect {
        /// The connect string.
        connect: String,
        /// Why.
        #[source]
        source: avout::Error,
    },
    /// A benchmark or peer could not be run.
    #[error("bench: {0}")]
    Bench(String),
}

/// Runs a report and prints the path of the file it wrote.
///
/// ```no_run
/// use clap::Parser;
/// #[derive(Parser)]
/// struct Cli {
///     #[command(subcommand)]
///     report: avout_cli::report::ReportCommand,
/// }
/// let cli = Cli::parse_from(["avout", "protocols", "--seeds", "2", "--out", "/tmp/r"]);
/// avout_cli::report::run(&cli.report).unwrap();
/// ```
pub fn run(command: &ReportCommand) -> Result<PathBuf, ReportError> {
    let path = match command {
        ReportCommand::Protocols(args) => protocols::run(args)?,
        ReportCommand::MaxHistory(args) => max_history::run(args)?,
        ReportCommand::Barge(args) => barge::run(args)?,
        ReportCommand::Bench(args) => bench::run(args)?,
        ReportCommand::Latency(args) => latency::run(args)?,
    };
    println!("wrote {}", path.display());
    Ok(path)
}

/// One point of a sweep: where it goes in the tables and plots, and what it runs.
#[derive(Clone, Debug)]
struct Point {
    /// The x position's label (the swept value).
    x: String,
    /// The line it belongs to.
    series: String,
    mix: Mix,
    /// Whether the real servers run it too, and the calibration deployments.
    on_zk: bool,
}

/// A point's runs on one deployment.
#[derive(Clone)]
struct Measured {
    point: Point,
    sim: Vec<Outcome>,
    /// The runs on the real servers this deployment is compared with.
    zk: Vec<Outcome>,
}

/// A deployment's points.
struct Deployed {
    deployment: deploy::Deployment,
    measured: Vec<Measured>,
}

/// Runs every point: all seeds on each simulated deployment (the calibration deployments only
/// the `on_zk` points), and the `on_zk` points `--zk-runs` times on each real server
/// (`--zk`, `--zk-ensemble`).
fn measure(name: &str, points: Vec<Point>, args: &SweepArgs) -> Result<Vec<Deployed>, ReportError> {
    let deployments = deploy::deployments(&args.fitted)?;
    let pairs: Vec<(usize, usize)> = deployments
        .iter()
        .enumerate()
        .flat_map(|(d, dep)| {
            points
                .iter()
                .enumerate()
                .filter(move |(_, p)| dep.every_point || p.on_zk)
                .map(move |(i, _)| (d, i))
        })
        .collect();
    let mut runs = sweep::run_sweep(name, &pairs, args.seeds, args.threads(), |&(d, i), seed| {
        on_sim(&deployments[d], &points[i].mix, seed)
    })
    .into_iter();
    let real = real::Servers::start(args)?;
    let mut zk: Vec<Vec<(deploy::Real, Vec<Outcome>)>> = Vec::new();
    for (i, point) in points.iter().enumerate() {
        let mut here = Vec::new();
        if point.on_zk {
            for (which, connect) in real.targets() {
                let mut outs = Vec::new();
                for r in 0..args.zk_runs {
                    eprintln!(
                        "{name}: {} {} on {which:?} at {connect}, run {}",
                        point.series,
                        point.x,
                        r + 1
                    );
                    let root = format!("/avout-report/{name}/{}-{i}-{r}", unique());
                    outs.push(on_zk(connect, &point.mix, &root, r + 1)?);
                }
                here.push((which, outs));
            }
        }
        zk.push(here);
    }
    drop(real);
    let mut out = Vec::new();
    for deployment in deployments {
        let mut measured = Vec::new();
        for (i, point) in points.iter().enumerate() {
            if !(deployment.every_point || point.on_zk) {
                continue;
            }
            let sim = runs
                .next()
                .expect("a result per pair")
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ReportError::Setup {
                    what: format!("{name} {} {} on {}", point.series, point.x, deployment.name),
                    detail: e.to_string(),
                })?;
            let zk = zk[i]
                .iter()
                .find(|(which, _)| Some(*which) == deployment.real)
                .map(|(_, outs)| outs.clone())
                .unwrap_or_default();
            measured.push(Measured {
                point: point.clone(),
                sim,
                zk,
            });
        }
        out.push(Deployed {
            deployment,
            measured,
        });
    }
    Ok(out)
}

/// One simulated run.
fn on_sim(
    deployment: &deploy::Deployment,
    mix: &Mix,
    seed: u64,
) -> Result<Outcome, workload::SetupError> {
    let sim = deployment.sim(seed, mix.clients(), mix.window + Duration::from_secs(3600));
    let (out, _summary) = sim.run(|mut ctx| async move {
        // Managed clients on the run's sessions, opening later ones from the service.
        let clients: Vec<Client> = ctx
            .clients
            .iter()
            .map(|c| Client::builder(ctx.zk.clone()).adopt(Arc::new(c.clone())))
            .collect();
        let seed = ctx.rng.next_u64();
        workload::run(&clients, "/report", mix, seed).await
    });
    out
}

/// A prefix that keeps real-ZooKeeper runs of different invocations apart.
fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos}", std::process::id())
}

/// One run on a real ZooKeeper, in a runtime of its own.
fn on_zk(connect: &str, mix: &Mix, root: &str, seed: u64) -> Result<Outcome, ReportError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ReportError::Setup {
            what: "runtime".into(),
            detail: e.to_string(),
        })?;
    runtime.block_on(async {
        let config = ZkConfig::new(connect)
            .with_session_timeout(Duration::from_secs(10))
            .with_connect_timeout(Duration::from_secs(10));
        let mut clients = Vec::new();
        for _ in 0..mix.clients() {
            let client =
                Client::connect(config.clone())
                    .await
                    .map_err(|source| ReportError::Connect {
                        connect: connect.to_owned(),
                        source,
                    })?;
            clients.push(client);
        }
        let parent = &root[..root.rfind('/').expect("an absolute root")];
        clients[0]
            .ensure_path(parent)
            .await
            .map_err(|e| ReportError::Setup {
                what: format!("{root} on {connect}"),
                detail: e.to_string(),
            })?;
        let out = workload::run(&clients, root, mix, seed)
            .await
            .map_err(|e| ReportError::Setup {
                what: format!("{root} on {connect}"),
                detail: e.to_string(),
            })?;
        for c in clients {
            // Closing is best effort: the run is over and its numbers are taken.
            let _ = c.close().await;
        }
        Ok(out)
    })
}

/// A quantity taken from each run.
#[derive(Clone, Copy)]
struct Metric {
    name: &'static str,
    decimals: usize,
    of: fn(&Outcome) -> f64,
}

impl Metric {
    const fn new(name: &'static str, decimals: usize, of: fn(&Outcome) -> f64) -> Metric {
        Metric { name, decimals, of }
    }

    /// The estimate on each of `rows`' simulated runs.
    fn over(&self, rows: &[Measured]) -> Vec<Estimate> {
        rows.iter().map(|r| self.estimate(&r.sim)).collect()
    }

    /// The estimate over runs; a run where the quantity is undefined (NaN: a latency with no
    /// committed transaction) is left out, and with none left the mean is NaN.
    fn estimate(&self, runs: &[Outcome]) -> Estimate {
        let values: Vec<f64> = runs.iter().map(self.of).filter(|v| !v.is_nan()).collect();
        if values.is_empty() {
            return Estimate {
                mean: f64::NAN,
                half_width: 0.0,
                n: 0,
            };
        }
        Estimate::of(&values)
    }
}

/// Committed transactions of a run (within the window or not).
fn committed(o: &Outcome) -> f64 {
    (o.writers.latencies_us.len() + o.readers.latencies_us.len()) as f64
}

fn per_commit(n: u64, o: &Outcome) -> f64 {
    let c = committed(o);
    if c == 0.0 { 0.0 } else { n as f64 / c }
}

/// A latency percentile in milliseconds; NaN without latencies.
fn pct_ms(sorted: &[u64], p: f64) -> f64 {
    stats::percentile(sorted, p).map_or(f64::NAN, |us| us as f64 / 1000.0)
}

/// The metrics every STM report can show.
mod metrics {
    use super::{Metric, Outcome, pct_ms, per_commit};

    fn secs(o: &Outcome) -> f64 {
        o.window.as_secs_f64()
    }

    pub(super) const COMMITS_PER_SEC: Metric = Metric::new("commits/s", 1, |o| o.commits_per_sec());
    pub(super) const WRITER_COMMITS_PER_SEC: Metric = Metric::new("writer commits/s", 1, |o| {
        o.writers.commits as f64 / secs(o)
    });
    pub(super) const READER_COMMITS_PER_SEC: Metric = Metric::new("reader commits/s", 2, |o| {
        o.readers.commits as f64 / secs(o)
    });
    pub(super) const RETRIES_PER_COMMIT: Metric = Metric::new("retries/commit", 2, |o| {
        per_commit(o.writers.retries + o.readers.retries, o)
    });
    pub(super) const READER_RETRIES_PER_COMMIT: Metric =
        Metric::new("reader retries/commit", 2, |o| {
            let c = o.readers.latencies_us.len() as f64;
            if c == 0.0 {
                o.readers.retries as f64
            } else {
                o.readers.retries as f64 / c
            }
        });
    pub(super) const READ_FAULTS_PER_SEC: Metric = Metric::new("read faults/s", 1, |o| {
        o.stats().read_faults as f64 / secs(o)
    });
    pub(super) const REQUESTS_PER_COMMIT: Metric =
        Metric::new("requests/commit", 1, |o| per_commit(o.stats().requests, o));
    pub(super) const ROUND_TRIPS_PER_COMMIT: Metric = Metric::new("round trips/commit", 1, |o| {
        per_commit(o.stats().round_trips, o)
    });
    pub(super) const WRITER_P50: Metric = Metric::new("writer p50 ms", 1, |o| {
        pct_ms(&o.writers.latencies_us, 50.0)
    });
    pub(super) const WRITER_P99: Metric = Metric::new("writer p99 ms", 1, |o| {
        pct_ms(&o.writers.latencies_us, 99.0)
    });
    pub(super) const READER_P50: Metric = Metric::new("reader p50 ms", 1, |o| {
        pct_ms(&o.readers.latencies_us, 50.0)
    });
    pub(super) const READER_P99: Metric = Metric::new("reader p99 ms", 1, |o| {
        pct_ms(&o.readers.latencies_us, 99.0)
    });
    pub(super) const MAX_RETRIES: Metric = Metric::new("max retries", 1, |o| {
        o.writers.max_retries.max(o.readers.max_retries) as f64
    });
    pub(super) const GAVE_UP: Metric = Metric::new("retry-limit failures", 1, |o| {
        (o.writers.gave_up + o.readers.gave_up) as f64
    });
    pub(super) const STALLS: Metric =
        Metric::new("stalled 100 ms windows", 1, |o| o.stalled_windows as f64);
    pub(super) const BARGES_PER_SEC: Metric =
        Metric::new("barges/s", 1, |o| o.stats().barges as f64 / secs(o));
    pub(super) const KILLED_PER_COMMIT: Metric = Metric::new("tries killed/commit", 2, |o| {
        per_commit(o.stats().killed, o)
    });
    pub(super) const LONG_COMMITS_PER_SEC: Metric =
        Metric::new("long commits/s", 2, |o| o.readers.commits as f64 / secs(o));
    pub(super) const LONG_MAX_RETRIES: Metric =
        Metric::new("long max retries", 1, |o| o.readers.max_retries as f64);
    pub(super) const LONG_GAVE_UP: Metric =
        Metric::new("long retry-limit failures", 1, |o| o.readers.gave_up as f64);
    pub(super) const NODES: Metric = Metric::new("nodes held", 0, |o| o.nodes as f64);
}
