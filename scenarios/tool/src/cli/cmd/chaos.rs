//! Scenarios on real ZooKeeper: a given server, or an ensemble of our own with a nemesis.
//!
//! Each run works under a fresh chroot (`/avout-runs/<scenario>-<uuid>`), so runs against
//! one server never see each other's nodes. With `--zk-ensemble N --kill-every D` the run
//! starts N members through the test kit and, every D, does the next of five things in
//! turn: kill a member and restart it, freeze a member with SIGSTOP for a second and resume
//! it, cut a member off from the others for a second and heal, cut the clients off from a
//! member for a second and heal (both through the test kit's relays), expire a client's
//! current session (`ZkClient::expire_session`; its managed client opens
//! the next one by itself). With `--duration` the workload runs again and again, each round
//! under its own chroot and judged on its own, until the time is up; the nemesis runs across
//! the rounds, and each round's report counts the nemesis events during it. The members are
//! stopped when the run ends. The checker judges each history as on the simulator.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::planted::Bug;
use avout::stm::store::{PostgresStore, RefStore};
use avout::zk::ZkConfig;
use avout::{Client, CoordinationExt};
use avout_scenarios::scenario::env::ZkCluster;
use avout_scenarios::scenario::store::RefStoreKind;
use avout_scenarios::scenario::{Registry, Report, RunError, Workload};
use avout_testkit::server::ZkEnsemble;

/// The session timeout of real-server runs (ZooKeeper's minimum with its default tick).
const SESSION_TIMEOUT: Duration = Duration::from_secs(4);

/// Where a real run goes.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// A running server or ensemble, reached with this configuration (TLS, SASL).
    Server(Box<ZkConfig>),
    /// An ensemble started for the run, with a nemesis every `kill_every`.
    Ensemble {
        size: usize,
        kill_every: Option<Duration>,
    },
}

/// Why a real run could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChaosError {
    #[error("cannot reach ZooKeeper at {connect}: {reason}")]
    Unreachable { connect: String, reason: String },
    #[error("cannot start a ZooKeeper ensemble of {size}: {source}")]
    Ensemble {
        size: usize,
        source: avout_testkit::server::TestkitError,
    },
    #[error("--zk-ensemble needs at least 1 member")]
    NoMembers,
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("ref store: {0}")]
    Store(String),
    #[error(transparent)]
    Run(#[from] RunError),
}

async fn chroot(config: &ZkConfig, scenario: &str) -> Result<String, ChaosError> {
    let unreachable = |reason: String| ChaosError::Unreachable {
        connect: config.connect.clone(),
        reason,
    };
    let config = config.clone().with_session_timeout(SESSION_TIMEOUT);
    let zk = tokio::time::timeout(Duration::from_secs(15), Client::connect(config))
        .await
        .map_err(|_| unreachable("no session within 15 s".into()))?
        .map_err(|e| match e {
            // Already says it could not reach the servers: only the wait is news.
            avout::Error::Unreachable { timeout, .. } => {
                unreachable(format!("no session within {timeout:?}"))
            }
            e => unreachable(e.to_string()),
        })?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let base = format!("/avout-runs/{scenario}-{stamp}-{}", std::process::id());
    zk.ensure_path(&base)
        .await
        .map_err(|e| unreachable(format!("cannot create {base}: {e}")))?;
    let _ = zk.close().await;
    Ok(base)
}

fn runtime() -> Result<tokio::runtime::Runtime, ChaosError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ChaosError::Runtime)
}

async fn nemesis_loop(
    ensemble: Arc<ZkEnsemble>,
    cluster: Arc<Mutex<ZkCluster>>,
    every: Duration,
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
) {
    let n = ensemble.members().len();
    let count = |what: &str| {
        *counts
            .lock()
            .expect("not poisoned")
            .entry(what.to_owned())
            .or_default() += 1;
    };
    for round in 0usize.. {
        tokio::time::sleep(every).await;
        let member = (round / 5) % n;
        match round % 5 {
            0..=3 => {
                let what = [
                    "member-kill",
                    "member-sigstop",
                    "member-partition",
                    "client-partition",
                ][round % 5];
                count(what);
                let e = ensemble.clone();
                // Blocking (the test kit waits for processes): off the runtime's threads.
                // (Deprecated under madsim, where real ensembles do not run.)
                #[cfg_attr(madsim, allow(deprecated))]
                let back = tokio::task::spawn_blocking(move || {
                    let down = match what {
                        "member-kill" => {
                            e.kill(member);
                            Ok(())
                        }
                        "member-sigstop" => e.pause(member),
                        "member-partition" => e.partition(&[member]),
                        _ => e.cut_clients(member),
                    };
                    if down.is_err() {
                        return false;
                    }
                    std::thread::sleep(Duration::from_secs(1));
                    match what {
                        "member-kill" => e.restart(member).is_ok(),
                        "member-sigstop" => e.resume(member).is_ok(),
                        _ => {
                            e.heal();
                            true
                        }
                    }
                })
                .await
                .unwrap_or(false);
                if !back {
                    count("member-restart-failed");
                }
            }
            _ => {
                // The current round's clients.
                let live = cluster.lock().expect("not poisoned").sessions();
                if let Some(c) = live.get(round % live.len().max(1)) {
                    count("session-expiry");
                    if c.expire_session().await.is_err() {
                        count("session-expiry-failed");
                    }
                }
            }
        }
    }
}

/// The store a real run keeps its refs' values in: PostgreSQL at `pg` (scoped by the run's
/// chroot, so runs sharing a table never collect each other's values), a fresh in-process
/// one, or none.
async fn ref_store(
    w: &Workload,
    pg: Option<&str>,
    scope: &str,
) -> Result<Option<Arc<dyn RefStore>>, ChaosError> {
    match (w.ref_store, pg) {
        (RefStoreKind::Postgres, Some(url)) => {
            let store = PostgresStore::connect(url)
                .await
                .map_err(|e| ChaosError::Store(e.to_string()))?;
            Ok(Some(Arc::new(store.scoped(scope))))
        }
        (RefStoreKind::Postgres, None) => Err(ChaosError::Store(
            "--ref-store postgres needs --pg URL".into(),
        )),
        (kind, Some(_)) => Err(ChaosError::Store(format!(
            "--pg is for --ref-store postgres, not {}",
            kind.name()
        ))),
        (kind, None) => Ok(kind.in_process()),
    }
}

/// Runs `w` on real ZooKeeper: once, or with `duration`, round after round until it has
/// passed. Each round works under its own chroot with seed `w.seed + k` and is judged on its
/// own (rounds share no nodes, so one history across them would mean nothing); the nemesis
/// runs across all of them. A round judged invalid ends the run. Each report's `faults` are
/// the nemesis events of its round.
pub(crate) fn run_real(
    registry: &Registry,
    target: &Target,
    w: &Workload,
    planted: Option<Bug>,
    pg: Option<&str>,
    duration: Option<Duration>,
) -> Result<Vec<Report>, ChaosError> {
    let (ensemble, config, every) = match target {
        Target::Server(config) => (None, (**config).clone(), None),
        Target::Ensemble { size, kill_every } => {
            if *size == 0 {
                return Err(ChaosError::NoMembers);
            }
            let e = ZkEnsemble::builder()
                .size(*size)
                .partitionable(true)
                .start()
                .map_err(|source| ChaosError::Ensemble {
                    size: *size,
                    source,
                })?;
            let config = ZkConfig::new(e.connect_string());
            (Some(Arc::new(e)), config, *kill_every)
        }
    };
    let rt = runtime()?;
    let result = rt.block_on(async {
        let counts = Arc::new(Mutex::new(BTreeMap::new()));
        let mut nemesis = None;
        let mut current: Option<Arc<Mutex<ZkCluster>>> = None;
        let started = std::time::Instant::now();
        let mut reports = Vec::new();
        for round in 0u64.. {
            let mut w = w.clone();
            w.seed = w.seed.wrapping_add(round);
            let base = chroot(&config, &w.scenario).await?;
            let connect = format!("{}{base}", config.connect);
            let store = ref_store(&w, pg, &connect).await?;
            let cluster = ZkCluster::new(
                ZkConfig {
                    connect,
                    ..config.clone()
                }
                .with_session_timeout(SESSION_TIMEOUT),
            )
            .with_ref_store(store);
            match &current {
                Some(c) => *c.lock().expect("not poisoned") = cluster.clone(),
                None => current = Some(Arc::new(Mutex::new(cluster.clone()))),
            }
            if let (None, Some(e), Some(every), Some(c)) = (&nemesis, &ensemble, every, &current) {
                nemesis = Some(tokio::spawn(nemesis_loop(
                    e.clone(),
                    c.clone(),
                    every,
                    counts.clone(),
                )));
            }
            let before = counts.lock().expect("not poisoned").clone();
            let report = registry.run(&w).planted(planted).zk(&cluster).await;
            let mut report = match report {
                Ok(r) => r,
                Err(e) => {
                    stop(nemesis).await;
                    return Err(e.into());
                }
            };
            report.faults = since(&before, &counts.lock().expect("not poisoned"));
            let valid = report.verdict.is_valid();
            reports.push(report);
            if !valid || duration.is_none_or(|d| started.elapsed() >= d) {
                break;
            }
        }
        stop(nemesis).await;
        Ok::<_, ChaosError>(reports)
    });
    drop(rt);
    if let Some(e) = ensemble {
        // Restart anything the nemesis left down, then stop every member.
        if let Ok(e) = Arc::try_unwrap(e) {
            drop(e);
        }
    }
    result
}

async fn stop(nemesis: Option<tokio::task::JoinHandle<()>>) {
    if let Some(n) = nemesis {
        n.abort();
        let _ = n.await;
    }
}

/// The counts in `now` less those in `before`, leaving out kinds that did not change.
fn since(before: &BTreeMap<String, u64>, now: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    now.iter()
        .filter_map(|(k, &n)| {
            let d = n - before.get(k).copied().unwrap_or(0);
            (d > 0).then(|| (k.clone(), d))
        })
        .collect()
}
