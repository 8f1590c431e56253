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
//!   exit 1 if any run failed.
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

use std::process::ExitCode;

use avout_scenarios::scenario::Registry;

// glibc's allocator spent about 30% of a list-append check of a million transactions (perf),
// freeing what one thread's parse allocated on another; the simulator allocates per request.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    avout_cli::main_with(Registry::builtins())
}
