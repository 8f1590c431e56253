//! The command line of `avout`, as a library: [`main_with`] runs it over a registry of
//! scenarios, so that a user's binary gets avout's tools for their own scenarios.
//!
//! - `avout demo [--seed N] [--json]` runs a seeded scenario on the embedded simulated
//!   ZooKeeper (no server needed): clients doing sequential creates and versioned updates under
//!   injected faults, then the same seed again, to show that the run replays to the same
//!   event-log hash.
//! - `avout zk start|stop|status` runs a local ZooKeeper (standalone or an ensemble) in the
//!   background, to try the real backend without installing a service; with `--tls` it also
//!   serves TLS, and every command that takes `--zk` takes the TLS and SASL settings beside it
//!   (`--zk-tls-ca`, `--zk-sasl-user`, …: `cmd::zk_auth`).
//! - `avout bench ops` measures single operations through the real backend against a running
//!   ZooKeeper, next to a minimal raw `zookeeper-client` loop.
//! - `avout bench lock-cycle|lock-contended|rwlock-read|counter|counter-contended` runs the
//!   recipe workloads of the Curator and kazoo peers (`../shared/peers`) and prints their JSON
//!   line.
//! - `avout bench cache-lag` times a subtree cache's initial load and its lag behind a
//!   writer setting random nodes at a fixed rate (the Curator peer: `scenarios/peers/`).
//! - `avout lock hold` takes an exclusive lock (Curator-compatible) for interop checks.
//! - `avout run SCENARIO`, `avout explore SCENARIO --seeds A..B`, `avout replay FILE` and
//!   `avout shrink FILE` run the scenario registry (`avout_scenarios::scenario`) on the
//!   simulator or on real ZooKeeper, judge each history, and find, replay and shrink failures.
//! - `avout endure [--scenarios LIST] [--duration 30m] [--kill-every 2s]` runs every scenario at
//!   once on a real 3-member ensemble of its own under every nemesis, sampling the client's
//!   memory and tasks and the ensemble's nodes, ephemerals, watches and connections; fails on
//!   an anomaly, a hang or growth (`reports/endurance.md`).
//! - `avout soak [--seeds N] [--base B] [--faults LIST] [--per-kind] [--pairs]` runs every
//!   scenario on N seeds under each fault configuration and ends with a table of failures;
//!   exit 1 if any run failed. `--shard I/N --json` runs one slice of the seeds, and
//!   `avout soak-merge SLICE.json...` folds the slices into the whole soak.
//! - `avout view CASE|HISTORY [--out FILE.html] [--model M]` writes a run's timeline as one
//!   self-contained HTML page with the checker's verdict drawn on it; failing runs of `run`,
//!   `explore`, `soak` and `shrink` get one beside their case file.
//! - `avout check FILE --model register|cas-register|list-append|bank|mutex|two-phase-commit
//!   [--json]` judges a recorded history: exit 0 valid, 1 anomaly, 2 bad input.
//! - `avout model mutex|rwlock|election|atom|stm|mvcc|mvcc-bank|agent [--clients N] [--faults F]
//!   [--kinds K,...] [--depth D] [--dfs | --walks W [--seed S]] [--max-states N]
//!   [--max-memory SIZE] [--json] [--explorer ADDR]` model-checks the production protocol
//!   machines (stateright, or seeded random walks), within its budgets: exit 0 if every
//!   property comes out as wanted, 1 (with a counterexample trace) if not, 3 if it did not
//!   cover everything (a budget, a depth bound, walks) and an example is missing.
//!
//! A failed benchmark check (two lock holders, a wrong counter total) prints `FAIL: …` to
//! stderr and exits with status 1, as the peers do. Every other failure prints one `avout: …`
//! line to stderr and exits with status 2.

mod cmd;
mod panic;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use avout_scenarios::scenario::Registry;

use cmd::{bench, check, demo, explore, lock, model, run, runs, soak, view, watch, zk};

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
    Demo(demo::DemoArgs),
    /// Run a local ZooKeeper (Debian's 3.8) in the background.
    #[command(subcommand)]
    Zk(zk::ZkCommand),
    /// Benchmarks against a running ZooKeeper.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Distributed locks from the shell.
    #[command(subcommand)]
    Lock(lock::LockCommand),
    /// Print a node's (or, with --recursive, a subtree's) events as they happen.
    Watch(watch::WatchArgs),
    /// Print a subtree with its stats.
    Tree(watch::TreeArgs),
    /// Judge a history (Jepsen's JSON lines) with a checker; exit 1 if it finds an anomaly.
    Check(check::CheckArgs),
    /// Check a protocol model within budgets (stateright, or random walks): what it covered, verdicts.
    Model(model::ModelArgs),
    /// Run a scenario (simulator by default, or real ZooKeeper) and judge its history.
    Run(run::RunArgs),
    /// Run a scenario under many seeds on every core; stop at the first failure.
    Explore(explore::ExploreArgs),
    /// Re-run a case file from its recorded choices and confirm its event-log hash.
    Replay(explore::ReplayArgs),
    /// Minimise a failing case: a few scheduled faults, fewer clients and operations.
    Shrink(explore::ShrinkArgs),
    /// Run every scenario on many seeds under each fault configuration; a table of failures.
    Soak(soak::SoakArgs),
    /// Fold the JSON of a soak's slices (`avout soak --shard I/N --json`, every shard once)
    /// into the whole soak's table and case files; exit 1 if any run failed.
    SoakMerge(soak::MergeArgs),
    /// Run every scenario at once on a real ensemble of our own under every nemesis for a
    /// long time, sampling memory, tasks, nodes and watches; fails on an anomaly, a hang or
    /// a leak (reports/endurance.md).
    Endure(cmd::chaos::endure::EndureArgs),
    /// Write a run's timeline (a case file or any history) as one self-contained HTML page,
    /// the checker's verdict drawn on it.
    View(view::ViewArgs),
    /// Research reports (simulated sweeps, benchmarks beside the peers) written to reports/.
    #[command(subcommand)]
    Report(crate::report::ReportCommand),
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error(transparent)]
    Zk(#[from] zk::ZkCmdError),
    #[error(transparent)]
    Bench(#[from] bench::BenchError),
    #[error(transparent)]
    Lock(#[from] lock::LockCmdError),
    #[error(transparent)]
    Watch(#[from] watch::WatchCmdError),
    #[error(transparent)]
    Demo(#[from] demo::DemoError),
    #[error(transparent)]
    Check(#[from] check::CheckCmdError),
    #[error(transparent)]
    Model(#[from] avout_models::ModelError),
    /// The checker found an anomaly (already reported on stdout).
    #[error("the {model} checker found an anomaly")]
    Anomaly { model: String },
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    RunCmd(#[from] runs::RunCmdError),
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    #[error(transparent)]
    View(#[from] crate::view::ViewError),
}

/// The `avout` command line over `registry`: `run`, `explore`, `replay`, `shrink`, `soak`,
/// `view` and the rest take the names of its scenarios (the built-ins and the user's) and
/// of every scenario registered before. Call it from a binary of your own to get avout's
/// tools for your scenarios; `avout` itself is
/// `main_with(Registry::builtins())`.
///
/// ```no_run
/// use avout_scenarios::scenario::Registry;
/// # use avout_scenarios::scenario::Described as MyScenario;
/// # const MY_SCENARIO: MyScenario = avout_scenarios::builtin::counter::SCENARIO;
/// fn main() -> std::process::ExitCode {
///     avout_cli::main_with(Registry::builtins().with(MyScenario { name: "mine", ..MY_SCENARIO }))
/// }
/// ```
pub fn main_with(registry: Registry) -> ExitCode {
    // SIGPIPE stays ignored (Rust's default): with its default action restored, as this
    // used to do for `avout run bank | head`, any write to a socket whose peer had gone (a
    // killed member's connection, through a vectored write that cannot ask not to be
    // signalled) killed the whole process without a word, and with it the run and its
    // verdict. A reader that stops early is handled by the panic hook instead.
    panic::install();
    match dispatch(Cli::parse(), &registry) {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Bench(bench::BenchError::Violation(what))) => {
            eprintln!("FAIL: {what}");
            ExitCode::from(1)
        }
        Err(e @ (CliError::Anomaly { .. } | CliError::RunCmd(runs::RunCmdError::Anomaly(_)))) => {
            eprintln!("avout: {e}");
            ExitCode::from(1)
        }
        Err(CliError::RunCmd(runs::RunCmdError::Interrupted(signal))) => {
            eprintln!("avout: the run was ended by {}", signal.name());
            ExitCode::from(signal.exit_status())
        }
        Err(e) => {
            eprintln!("avout: {e}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(cli: Cli, registry: &Registry) -> Result<(), CliError> {
    match cli.command {
        Command::Run(args) => Ok(run::run(registry, &args)?),
        Command::Model(args) => Ok(model::run(&args)?),
        Command::Explore(args) => Ok(explore::explore_cmd(registry, &args)?),
        Command::Replay(args) => Ok(explore::replay(registry, &args)?),
        Command::Shrink(args) => Ok(explore::shrink_cmd(registry, &args)?),
        Command::Soak(args) => Ok(soak::run(registry, &args)?),
        Command::SoakMerge(args) => Ok(soak::merge_cmd(registry, &args)?),
        Command::Endure(args) => Ok(cmd::chaos::endure::run(registry, &args)?),
        Command::View(args) => Ok(view::run(registry, &args)?),
        Command::Report(command) => crate::report::run(&command).map(drop).map_err(Into::into),
        Command::Check(args) => match check::run(&args)? {
            true => Ok(()),
            false => Err(CliError::Anomaly {
                model: args.model_name().to_owned(),
            }),
        },
        Command::Demo(args) => Ok(demo::run(&args)?),
        Command::Zk(command) => Ok(zk::run(command)?),
        Command::Bench(bench::BenchCommand::Sim(args)) => Ok(bench::sim::run(&args)?),
        Command::Bench(command) => {
            Ok(cmd::block_on(bench::run(command)).map_err(CliError::Runtime)??)
        }
        Command::Watch(args) => {
            Ok(
                cmd::block_on(async move { watch::watch(&args, &mut std::io::stdout()).await })
                    .map_err(CliError::Runtime)??,
            )
        }
        Command::Tree(args) => {
            Ok(
                cmd::block_on(async move { watch::tree(&args, &mut std::io::stdout()).await })
                    .map_err(CliError::Runtime)??,
            )
        }
        Command::Lock(lock::LockCommand::Hold(args)) => {
            Ok(
                cmd::block_on(async move { lock::hold(&args, &mut std::io::stdout()).await })
                    .map_err(CliError::Runtime)??,
            )
        }
    }
}
