//! `avout`: the command-line tool of the avout project.
//!
//! - `avout demo [--seed N] [--json]` runs a seeded scenario on the embedded simulated
//!   ZooKeeper (no server needed): clients doing sequential creates and versioned updates under
//!   injected faults, then the same seed again, to show that the run replays to the same
//!   event-log hash.
//! - `avout zk start|stop|status` runs a local ZooKeeper (standalone or an ensemble) in the
//!   background, to try the real backend without installing a service.
//! - `avout bench ops` measures single operations through the real backend against a running
//!   ZooKeeper, next to a minimal raw `zookeeper-client` loop.
//! - `avout bench lock-cycle|lock-contended|rwlock-read|counter|counter-contended` runs the
//!   recipe workloads of the Curator and kazoo peers (`../shared/peers`) and prints their JSON
//!   line.
//! - `avout lock hold` takes an exclusive lock (Curator-compatible) for interop checks.
//! - `avout run SCENARIO`, `avout explore SCENARIO --seeds A..B`, `avout replay FILE` and
//!   `avout shrink FILE` run the scenario registry (`avout_scenarios::scenario`) on the
//!   simulator or on real ZooKeeper, judge each history, and find, replay and shrink failures.
//! - `avout soak [--seeds N] [--base B] [--faults LIST] [--per-kind] [--pairs]` runs every
//!   scenario on N seeds under each fault configuration and ends with a table of failures;
//!   exit 1 if any run failed.
//! - `avout check FILE --model register|cas-register|list-append|bank|mutex|two-phase-commit
//!   [--json]` judges a recorded history: exit 0 valid, 1 anomaly, 2 bad input.
//! - `avout model mutex|rwlock|election|atom|stm|mvcc [--clients N] [--depth D] [--json]
//!   [--explorer ADDR]` model-checks the production protocol machines (stateright): exit 0 if every property
//!   comes out as wanted, 1 (with a counterexample trace) if not.
//!
//! A failed benchmark check (two lock holders, a wrong counter total) prints `FAIL: …` to
//! stderr and exits with status 1, as the peers do. Every other failure prints one `avout: …`
//! line to stderr and exits with status 2.

mod bench;
mod chaos;
mod checkcmd;
mod lockcmd;
mod modelcmd;
mod runcmd;
mod soakcmd;
mod zkcmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Distributed atoms, refs and locks on ZooKeeper: local servers and benchmarks.
#[derive(Debug, Parser)]
#[command(name = "avout", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A seeded run on the embedded simulated ZooKeeper under faults, replayed to the same hash.
    Demo(DemoArgs),
    /// Run a local ZooKeeper (Debian's 3.8) in the background.
    #[command(subcommand)]
    Zk(zkcmd::ZkCommand),
    /// Benchmarks against a running ZooKeeper.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Distributed locks from the shell.
    #[command(subcommand)]
    Lock(lockcmd::LockCommand),
    /// Judge a history (Jepsen's JSON lines) with a checker; exit 1 if it finds an anomaly.
    Check(checkcmd::CheckArgs),
    /// Check a protocol model exhaustively (stateright): states, time, each property's verdict.
    Model(modelcmd::ModelArgs),
    /// Run a scenario (simulator by default, or real ZooKeeper) and judge its history.
    Run(runcmd::RunArgs),
    /// Run a scenario under many seeds on every core; stop at the first failure.
    Explore(runcmd::ExploreArgs),
    /// Re-run a case file from its recorded choices and confirm its event-log hash.
    Replay(runcmd::ReplayArgs),
    /// Minimise a failing case: a few scheduled faults, fewer clients and operations.
    Shrink(runcmd::ShrinkArgs),
    /// Run every scenario on many seeds under each fault configuration; a table of failures.
    Soak(soakcmd::SoakArgs),
    /// Research reports (simulated sweeps, benchmarks beside the peers) written to reports/.
    #[command(subcommand)]
    Report(avout_scenarios::report::ReportCommand),
}

/// Options of `avout demo`.
#[derive(Debug, clap::Args)]
struct DemoArgs {
    /// The run's seed: the same seed gives the same run, bit for bit.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Print the report as one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error(transparent)]
    Zk(#[from] zkcmd::ZkCmdError),
    #[error(transparent)]
    Bench(#[from] bench::BenchError),
    #[error(transparent)]
    Lock(#[from] lockcmd::LockCmdError),
    #[error(
        "seed {seed} did not replay to the same event-log hash ({hash:#018x} then {replay:#018x}); rerun with `avout demo --seed {seed}`"
    )]
    NotReplayed { seed: u64, hash: u64, replay: u64 },
    #[error(transparent)]
    Check(#[from] checkcmd::CheckCmdError),
    #[error(transparent)]
    Model(#[from] avout_models::ModelError),
    /// The checker found an anomaly (already reported on stdout).
    #[error("the {model} checker found an anomaly")]
    Anomaly { model: String },
    #[error("cannot encode the report: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    RunCmd(#[from] runcmd::RunCmdError),
    #[error(transparent)]
    Report(#[from] avout_scenarios::report::ReportError),
}

fn main() -> ExitCode {
    // A reader that stops early (`avout run bank | head`) ends the process quietly, as it
    // does other Unix tools, instead of a panic in the next `println!`.
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any other thread exists; restoring the
    // default disposition of SIGPIPE has no other effect on this process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Bench(bench::BenchError::Violation(what))) => {
            eprintln!("FAIL: {what}");
            ExitCode::from(1)
        }
        Err(e @ (CliError::Anomaly { .. } | CliError::RunCmd(runcmd::RunCmdError::Anomaly(_)))) => {
            eprintln!("avout: {e}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("avout: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Run(args) => Ok(runcmd::run(&args)?),
        Command::Model(args) => Ok(modelcmd::run(&args)?),
        Command::Explore(args) => Ok(runcmd::explore_cmd(&args)?),
        Command::Replay(args) => Ok(runcmd::replay(&args)?),
        Command::Shrink(args) => Ok(runcmd::shrink_cmd(&args)?),
        Command::Soak(args) => Ok(soakcmd::run(&args)?),
        Command::Report(command) => avout_scenarios::report::run(&command)
            .map(drop)
            .map_err(Into::into),
        Command::Check(args) => match checkcmd::run(&args)? {
            true => Ok(()),
            false => Err(CliError::Anomaly {
                model: args.model_name().to_owned(),
            }),
        },
        Command::Demo(args) => {
            let report = avout_sim_zk::demo::run(args.seed);
            if args.json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                println!("{report}");
            }
            if !report.replayed_identically() {
                return Err(CliError::NotReplayed {
                    seed: report.seed,
                    hash: report.hash,
                    replay: report.replay_hash,
                });
            }
            Ok(())
        }
        Command::Zk(command) => Ok(zkcmd::run(command)?),
        Command::Bench(bench::BenchCommand::Sim(args)) => Ok(bench::sim::run(&args)?),
        Command::Bench(command) => {
            let runtime = runtime()?;
            // The bench runs as a task on a worker thread, beside the clients' connection tasks:
            // a reply then wakes it on the same thread instead of waking the main thread (a
            // futex round trip per request, which on a loaded 2-core machine costs throughput).
            let bench = match command.stm() {
                Ok((workload, args)) => runtime.spawn(bench::stm::run(workload, args)),
                Err(command) => match command.recipe() {
                    Ok((workload, args)) => runtime.spawn(bench::recipes::run(workload, args)),
                    Err(args) => runtime.spawn(bench::run_ops(args)),
                },
            };
            match runtime.block_on(bench) {
                Ok(result) => Ok(result?),
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        }
        Command::Lock(lockcmd::LockCommand::Hold(args)) => {
            let runtime = runtime()?;
            let hold = runtime.spawn(async move {
                let mut stdout = std::io::stdout();
                lockcmd::hold(&args, &mut stdout).await
            });
            match runtime.block_on(hold) {
                Ok(result) => Ok(result?),
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        }
    }
}

/// The runtime for commands that talk to a real ZooKeeper: the client's connection task gets
/// a thread of its own.
fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)
}
