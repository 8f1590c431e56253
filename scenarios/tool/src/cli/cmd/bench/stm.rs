//! `avout bench stm-alter|stm-transfer`: STM transactions against a running ZooKeeper.
//!
//! - `stm-alter`: every client runs `alter(counter, +1)` transactions on one shared ref
//!   (uncontended with `--clients 1`, the figure to compare with `avout bench ops`'
//!   sequential `set`); the final value is checked to be `clients × (n + warmup)`.
//! - `stm-transfer`: every client moves a random amount between two random accounts of
//!   `--accounts` (two refs read and written per transaction, validators forbidding negative
//!   balances; a transfer the validator refuses counts as an operation too, as it is a
//!   finished transaction). Money is checked to be conserved.
//!
//! Each client has its own managed client and [`Stm`] handle (so its own cache); warm-up
//! transactions are untimed; the clock runs from a barrier every client has reached to the
//! last client's finish. The line is the peers' JSON (`../shared/peers`) with the protocol and
//! the STM's counts per operation appended: retries, requests and round trips.

use crate::cli::cmd::zk_auth::ZkAuth;
use crate::report::stm_stats;
use avout::stm::{Protocol, Ref, Stm, StmConfig, StmError, StmStats};
use avout::{Client, CoordinationExt};
use clap::Args;

use super::recipes::{self, Line};
use super::{BenchError, clock, connect};

/// The STM workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StmWorkload {
    /// `alter` of one shared ref.
    Alter,
    /// Transfers between accounts.
    Transfer,
}

impl StmWorkload {
    /// The subcommand name and JSON `workload`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            StmWorkload::Alter => "stm-alter",
            StmWorkload::Transfer => "stm-transfer",
        }
    }
}

/// Options of the STM workloads.
#[derive(Clone, Debug, Args)]
pub(crate) struct StmArgs {
    /// ZooKeeper connect string, e.g. 127.0.0.1:2181 (see `avout zk start`).
    #[arg(long, value_name = "CONNECT")]
    pub(crate) zk: String,
    #[command(flatten)]
    pub(crate) zk_auth: Box<ZkAuth>,
    /// Sessions running transactions at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) clients: u32,
    /// Timed transactions per client.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) n: u64,
    /// Untimed transactions per client first.
    #[arg(long, default_value_t = 500)]
    pub(crate) warmup: u64,
    /// The STM protocol: mvcc or optimistic.
    #[arg(long, default_value = "optimistic")]
    pub(crate) protocol: Protocol,
    /// Accounts of `stm-transfer`.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(2..))]
    pub(crate) accounts: u32,
}

/// One figure: the recipe workloads' line, with the protocol and the STM's counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct StmLine {
    pub(crate) line: Line,
    pub(crate) protocol: Protocol,
    /// The timed transactions' counts, summed over clients.
    pub(crate) stats: StmStats,
}

impl StmLine {
    /// The peers' JSON line, then the protocol and per-operation counts.
    pub(crate) fn json(&self) -> String {
        let per = |n: u64| n as f64 / self.line.ops as f64;
        self.line.json_with(&format!(
            ",\"protocol\":\"{}\",\"retries_per_op\":{:.3},\"requests_per_op\":{:.3},\"round_trips_per_op\":{:.3}",
            self.protocol.name(),
            per(self.stats.retries),
            per(self.stats.requests),
            per(self.stats.round_trips),
        ))
    }
}

fn op_error(workload: StmWorkload, e: impl std::fmt::Display) -> BenchError {
    recipes::op_error(workload.name(), e)
}

/// Runs one workload and prints its JSON line.
pub(crate) async fn run(workload: StmWorkload, args: StmArgs) -> Result<(), BenchError> {
    let line = measure(workload, &args).await?;
    println!("{}", line.json());
    Ok(())
}

const INITIAL_BALANCE: i64 = 1_000;

/// What one bench client works on.
struct Worker {
    zk: Client,
    stm: Stm,
    refs: Vec<Ref<i64>>,
    /// Its own random stream (no shared state between clients).
    rng: u64,
}

impl Worker {
    fn below(&mut self, n: u64) -> u64 {
        self.rng = self
            .rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.rng >> 33) % n
    }

    async fn op(&mut self, workload: StmWorkload) -> Result<(), BenchError> {
        match workload {
            StmWorkload::Alter => {
                let counter = self.refs[0].clone();
                self.stm
                    .dosync(async move |tx| tx.alter(&counter, |n| n + 1).await)
                    .await
                    .map(drop)
                    .map_err(|e| op_error(workload, e))
            }
            StmWorkload::Transfer => {
                let n = self.refs.len() as u64;
                let from = self.below(n) as usize;
                let to = (from + 1 + self.below(n - 1) as usize) % n as usize;
                let amount = 1 + self.below(INITIAL_BALANCE as u64 / 4) as i64;
                let (a, b) = (self.refs[from].clone(), self.refs[to].clone());
                let out = self
                    .stm
                    .dosync(async move |tx| {
                        tx.alter(&a, move |x| x - amount).await?;
                        tx.alter(&b, move |x| x + amount).await?;
                        Ok(())
                    })
                    .await;
                match out {
                    Ok(()) | Err(StmError::Invalid { .. }) => Ok(()),
                    Err(e) => Err(op_error(workload, e)),
                }
            }
        }
    }
}

async fn open_worker(
    workload: StmWorkload,
    args: &StmArgs,
    root: &str,
    index: u64,
) -> Result<Worker, BenchError> {
    let zk = connect(&args.zk, &args.zk_auth).await?;
    let config = StmConfig::with_protocol(args.protocol);
    let stm = Stm::open(&zk, root, config)
        .await
        .map_err(|e| op_error(workload, e))?;
    let mut refs = Vec::new();
    match workload {
        StmWorkload::Alter => refs.push(
            stm.make_ref("counter", 0i64)
                .await
                .map_err(|e| op_error(workload, e))?,
        ),
        StmWorkload::Transfer => {
            for i in 0..args.accounts {
                let r = stm
                    .make_ref(&format!("acct{i}"), INITIAL_BALANCE)
                    .await
                    .map_err(|e| op_error(workload, e))?;
                r.set_validator(|b| *b >= 0);
                refs.push(r);
            }
        }
    }
    Ok(Worker {
        zk,
        stm,
        refs,
        rng: 0x5eed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15),
    })
}

/// Runs one workload and returns its figure.
pub(crate) async fn measure(workload: StmWorkload, args: &StmArgs) -> Result<StmLine, BenchError> {
    let admin = connect(&args.zk, &args.zk_auth).await?;
    let root = format!("/bench/avout/{}-{}", workload.name(), args.protocol.name());
    admin
        .delete_recursive(&root)
        .await
        .map_err(|e| op_error(workload, e))?;
    let prepare = |index: usize| {
        let (args, root) = (args.clone(), root.clone());
        async move {
            let mut client = open_worker(workload, &args, &root, index as u64).await?;
            for _ in 0..args.warmup {
                client.op(workload).await?;
            }
            Ok(client)
        }
    };
    let n = args.n;
    let (elapsed, outcomes) = clock::contended(
        args.clients as usize,
        prepare,
        move |mut client| async move {
            let before = client.stm.stats();
            for _ in 0..n {
                client.op(workload).await?;
            }
            let stats = stm_stats::difference(client.stm.stats(), before);
            Ok::<_, BenchError>((client, stats))
        },
    )
    .await;
    let mut stats = StmStats::default();
    let mut first_error = None;
    let mut checker = None;
    for outcome in outcomes {
        match outcome {
            Ok((client, s)) => {
                stats = stm_stats::sum(stats, s);
                checker.get_or_insert(client);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let checker = checker.expect("at least one client");
    check(workload, args, &checker).await?;
    let _ = checker.zk.close().await;
    let _ = admin.close().await;
    Ok(StmLine {
        line: Line {
            workload: workload.name(),
            clients: args.clients,
            ops: args.clients as u64 * args.n,
            elapsed,
        },
        protocol: args.protocol,
        stats,
    })
}

/// The workload's invariant, read in one transaction.
async fn check(workload: StmWorkload, args: &StmArgs, client: &Worker) -> Result<(), BenchError> {
    // Owned captures (`async move`): a body capturing references makes a future the compiler
    // cannot prove `Send`, and this one runs in a spawned task.
    let refs = client.refs.clone();
    let values = client
        .stm
        .dosync(async move |tx| {
            let mut all = Vec::new();
            for r in &refs {
                all.push(tx.deref(r).await?);
            }
            Ok(all)
        })
        .await
        .map_err(|e| op_error(workload, e))?;
    let (got, want) = match workload {
        StmWorkload::Alter => (
            values[0],
            (args.clients as u64 * (args.n + args.warmup)) as i64,
        ),
        StmWorkload::Transfer => {
            if let Some(neg) = values.iter().find(|b| **b < 0) {
                return Err(BenchError::Violation(format!(
                    "a negative balance {neg} despite the validators"
                )));
            }
            (
                values.iter().sum(),
                INITIAL_BALANCE * i64::from(args.accounts),
            )
        }
    };
    if got != want {
        return Err(BenchError::Violation(format!(
            "{}: total is {got}, expected {want}",
            workload.name()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn lines_are_the_peers_lines_with_the_stm_counts() {
        let line = StmLine {
            line: Line {
                workload: StmWorkload::Alter.name(),
                clients: 1,
                ops: 1000,
                elapsed: Duration::from_millis(2000),
            },
            protocol: Protocol::Optimistic,
            stats: StmStats {
                retries: 5,
                requests: 1000,
                round_trips: 1000,
                ..StmStats::default()
            },
        };
        assert_eq!(
            line.json(),
            "{\"peer\":\"avout\",\"workload\":\"stm-alter\",\"clients\":1,\"ops\":1000,\"secs\":2.000,\"ops_per_sec\":500.0,\"protocol\":\"optimistic\",\"retries_per_op\":0.005,\"requests_per_op\":1.000,\"round_trips_per_op\":1.000}"
        );
    }
}
