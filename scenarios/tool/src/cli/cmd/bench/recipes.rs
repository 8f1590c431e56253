//! `avout bench lock-cycle|lock-contended|rwlock-read|counter|counter-contended`: the recipe
//! workloads of the Curator and kazoo peers (`../shared/peers`), run by avout.
//!
//! Everything that decides a figure matches the peers, so their lines can be read beside ours:
//! the node paths (`/bench/avout/<workload>`, deleted first), the 10 s session timeout, the
//! untimed warm-up (`--warmup` cycles for one client; 200 per client when contended), the
//! clock (one client: the timed loop; contended: from a barrier every client has reached to the
//! last client's finish), one session per client, and the JSON line, which carries no latency
//! quantiles because the peers print none.
//!
//! Checks, as the peers make them: `lock-contended` counts holders in-process and fails on a
//! second one; `counter-contended` retries without limit (the atom's optimistic loop has no
//! bound) and checks the final value is `CLIENTS*(N+200)`. A failed check is a
//! [`BenchError::Violation`], which the tool reports as `FAIL: …` with exit status 1.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::cli::cmd::zk_auth::ZkAuth;
use avout::atom::Atom;
use avout::lock::{Mutex, RwLock};
use avout::{Client, CoordinationExt};
use clap::{Args, ValueEnum};

use super::clock::{self, warm_then_time};
use super::{BenchError, connect};

/// Untimed cycles per client before a contended run, as the peers do.
pub(crate) const CONTENDED_WARMUP: u64 = 200;

/// The peers' recipe workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Workload {
    /// Exclusive lock acquire + release, one client.
    LockCycle,
    /// The same on one lock, `--clients` sessions at once.
    LockContended,
    /// Read-lock acquire + release, one client.
    RwlockRead,
    /// Atom increment, one client.
    Counter,
    /// Atom increments on one atom, `--clients` sessions at once.
    CounterContended,
}

impl Workload {
    /// The subcommand name, which is also the JSON `workload` and the last path element.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::LockCycle => "lock-cycle",
            Workload::LockContended => "lock-contended",
            Workload::RwlockRead => "rwlock-read",
            Workload::Counter => "counter",
            Workload::CounterContended => "counter-contended",
        }
    }

    fn contended(self) -> bool {
        matches!(self, Workload::LockContended | Workload::CounterContended)
    }
}

/// Options of the recipe workloads.
#[derive(Clone, Debug, Args)]
pub(crate) struct RecipeArgs {
    /// ZooKeeper connect string, e.g. 127.0.0.1:2181 (see `avout zk start`).
    #[arg(long, value_name = "CONNECT")]
    pub(crate) zk: String,
    #[command(flatten)]
    pub(crate) zk_auth: Box<ZkAuth>,
    /// Sessions working at once in the `*-contended` workloads (ignored by the others).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) clients: u32,
    /// Timed operations per client.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) n: u64,
    /// Untimed operations first in the one-client workloads (the peers' `WARMUP`); contended
    /// clients always do 200 each, as the peers' do.
    #[arg(long, default_value_t = 2000)]
    pub(crate) warmup: u64,
}

/// One figure in the peers' format.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Line {
    pub(crate) workload: &'static str,
    pub(crate) clients: u32,
    pub(crate) ops: u64,
    pub(crate) elapsed: Duration,
}

impl Line {
    /// The peers' JSON line: fixed key order, no spaces, no quantiles.
    pub(crate) fn json(&self) -> String {
        self.json_with("")
    }

    /// The peers' JSON line with `extra` (`,"key":value` pairs) before its closing brace.
    pub(crate) fn json_with(&self, extra: &str) -> String {
        let secs = self.elapsed.as_secs_f64();
        format!(
            "{{\"peer\":\"avout\",\"workload\":\"{}\",\"clients\":{},\"ops\":{},\"secs\":{:.3},\"ops_per_sec\":{:.1}{extra}}}",
            self.workload,
            self.clients,
            self.ops,
            secs,
            self.ops as f64 / secs,
        )
    }
}

pub(super) fn op_error(workload: &'static str, e: impl std::fmt::Display) -> BenchError {
    BenchError::op("avout", workload, e)
}

/// Runs one workload and prints its JSON line.
pub(crate) async fn run(workload: Workload, args: RecipeArgs) -> Result<(), BenchError> {
    let line = measure(workload, &args).await?;
    println!("{}", line.json());
    Ok(())
}

/// Runs one workload and returns its figure (the tests call this directly).
pub(crate) async fn measure(workload: Workload, args: &RecipeArgs) -> Result<Line, BenchError> {
    let admin = connect(&args.zk, &args.zk_auth).await?;
    let path = format!("/bench/avout/{}", workload.name());
    admin
        .delete_recursive(&path)
        .await
        .map_err(|e| op_error(workload.name(), e))?;
    let line = if workload.contended() {
        contended(workload, args, &path, &admin).await?
    } else {
        single(workload, args, &path, &admin).await?
    };
    // Closing drops the sessions now rather than at their timeout, which would leave
    // ephemeral nodes (and server work) behind for the next workload.
    let _ = admin.close().await;
    Ok(line)
}

/// One client on the admin session, as the peers' single-client workloads run on theirs.
async fn single(
    workload: Workload,
    args: &RecipeArgs,
    path: &str,
    zk: &Client,
) -> Result<Line, BenchError> {
    let err = |e: &dyn std::fmt::Display| op_error(workload.name(), e);
    let (warmup, n) = (args.warmup, args.n);
    let elapsed = match workload {
        Workload::LockCycle => {
            let mutex = &Mutex::new(zk, path).map_err(|e| err(&e))?;
            warm_then_time(warmup, n, || async move {
                let guard = mutex.lock().await.map_err(|e| err(&e))?;
                guard.unlock().await.map_err(|e| err(&e))
            })
            .await?
        }
        Workload::RwlockRead => {
            let rw = &RwLock::new(zk, path).map_err(|e| err(&e))?;
            warm_then_time(warmup, n, || async move {
                let guard = rw.read().await.map_err(|e| err(&e))?;
                guard.unlock().await.map_err(|e| err(&e))
            })
            .await?
        }
        Workload::Counter => {
            let atom: &Atom<u64> = &Atom::open(zk, path, 0).await.map_err(|e| err(&e))?;
            warm_then_time(warmup, n, || async move {
                atom.swap(|n| n + 1).await.map(drop).map_err(|e| err(&e))
            })
            .await?
        }
        Workload::LockContended | Workload::CounterContended => {
            unreachable!("contended workloads run in `contended`")
        }
    };
    Ok(Line {
        workload: workload.name(),
        clients: 1,
        ops: args.n,
        elapsed,
    })
}

/// What one contended client does per operation.
enum Worker {
    Lock {
        mutex: Mutex,
        holders: Arc<AtomicUsize>,
        path: String,
    },
    Counter(Atom<u64>),
}

impl Worker {
    async fn op(&self, workload: Workload) -> Result<(), BenchError> {
        match self {
            Worker::Lock {
                mutex,
                holders,
                path,
            } => {
                let guard = mutex
                    .lock()
                    .await
                    .map_err(|e| op_error(workload.name(), e))?;
                if holders.fetch_add(1, Ordering::SeqCst) != 0 {
                    return Err(BenchError::Violation(format!(
                        "mutual exclusion violated on {path}"
                    )));
                }
                // Gives another holder, if the lock let one in, the chance to show itself.
                tokio::task::yield_now().await;
                if holders.fetch_sub(1, Ordering::SeqCst) != 1 {
                    return Err(BenchError::Violation(format!(
                        "mutual exclusion violated on {path}"
                    )));
                }
                guard
                    .unlock()
                    .await
                    .map_err(|e| op_error(workload.name(), e))
            }
            Worker::Counter(atom) => atom
                .swap(|n| n + 1)
                .await
                .map(drop)
                .map_err(|e| op_error(workload.name(), e)),
        }
    }
}

/// `--clients` tasks, each with its own client, `n` operations each after 200 untimed ones.
async fn contended(
    workload: Workload,
    args: &RecipeArgs,
    path: &str,
    admin: &Client,
) -> Result<Line, BenchError> {
    let clients = args.clients as usize;
    let holders = Arc::new(AtomicUsize::new(0));
    if workload == Workload::CounterContended {
        // Created once here, so no client's open races another's create.
        Atom::<u64>::open(admin, path, 0)
            .await
            .map_err(|e| op_error(workload.name(), e))?;
    }
    let prepare = |_| {
        let (connect_to, auth) = (args.zk.clone(), args.zk_auth.clone());
        let (path, holders) = (path.to_owned(), holders.clone());
        async move {
            let zk = connect(&connect_to, &auth).await?;
            let worker = match workload {
                Workload::LockContended => Worker::Lock {
                    mutex: Mutex::new(&zk, path.clone())
                        .map_err(|e| op_error(workload.name(), e))?,
                    holders,
                    path,
                },
                _ => Worker::Counter(
                    Atom::open(&zk, path, 0)
                        .await
                        .map_err(|e| op_error(workload.name(), e))?,
                ),
            };
            for _ in 0..CONTENDED_WARMUP {
                worker.op(workload).await?;
            }
            Ok((zk, worker))
        }
    };
    let n = args.n;
    let (elapsed, outcomes) = clock::contended(clients, prepare, move |(zk, worker)| async move {
        for _ in 0..n {
            worker.op(workload).await?;
        }
        drop(worker);
        // The session is closed after the clock stops, as the peers close theirs.
        Ok::<_, BenchError>(zk)
    })
    .await;
    let mut first_error = None;
    for outcome in outcomes {
        match outcome {
            Ok(zk) => {
                let _ = zk.close().await;
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    if workload == Workload::CounterContended {
        let atom: Atom<u64> = Atom::open(admin, path, 0)
            .await
            .map_err(|e| op_error(workload.name(), e))?;
        let got = atom
            .deref()
            .await
            .map_err(|e| op_error(workload.name(), e))?;
        let want = args.clients as u64 * (args.n + CONTENDED_WARMUP);
        if got != want {
            return Err(BenchError::Violation(format!(
                "counter is {got}, expected {want}"
            )));
        }
    }
    Ok(Line {
        workload: workload.name(),
        clients: args.clients,
        ops: args.clients as u64 * args.n,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_the_peers_lines() {
        let line = Line {
            workload: Workload::LockContended.name(),
            clients: 4,
            ops: 2000,
            elapsed: Duration::from_millis(3810),
        };
        assert_eq!(
            line.json(),
            "{\"peer\":\"avout\",\"workload\":\"lock-contended\",\"clients\":4,\"ops\":2000,\"secs\":3.810,\"ops_per_sec\":524.9}"
        );
    }

    #[test]
    fn workload_names_are_the_subcommands() {
        for w in Workload::value_variants() {
            let value = w.to_possible_value().expect("every workload is a value");
            assert_eq!(value.get_name(), w.name());
        }
    }
}
