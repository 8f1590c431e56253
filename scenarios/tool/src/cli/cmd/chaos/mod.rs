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
//!
//! # Every run ends with a verdict
//! A run on an ensemble of our own meets its nemesis in places the simulator never reaches:
//! starting the ensemble, and each round's set-up.
//! - **Start-up** waits until every member serves, and the first round's set-up waits
//!   (within [`SETUP_PATIENCE`]) until a session can be opened.
//! - **A round's set-up** (a session, its chroot, the workload's clients) tries again while
//!   the service cannot be reached or loses the connection: opening a session and
//!   `ensure_path` are safe to repeat. Nothing the set-up does is not.
//! - **A round that cannot start**, or whose workload gives up (a call it cannot do without
//!   failed even after its patience), is counted and reported with its seed and reason, and
//!   the run goes on to the next round. A run in which no round ended with a verdict fails
//!   with the reasons.
//! - **However the run ends** (a verdict, an error, a panic, Ctrl-C, a `kill`), the servers it
//!   started are stopped: SIGINT and SIGTERM end it by its own path (the rounds so far
//!   reported, exit status 130 or 143), and the test kit ties its servers to this process
//!   (`PR_SET_PDEATHSIG`), so not even a `kill -9` leaves a JVM behind.
//! - **A panic** prints its message, then the run's seed and the command that runs it again
//!   (`cli::panic`).

pub(crate) mod endure;
mod nemesis;
mod sample;
mod setup;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::planted::Bug;
use avout::zk::ZkConfig;
use avout_scenarios::scenario::{Registry, Report, RunError, Workload};
use avout_testkit::backend::ZkBackend;
use avout_testkit::server::ZkEnsemble;

pub(crate) use setup::Interrupt;

/// The session timeout of real-server runs (ZooKeeper's minimum with its default tick).
const SESSION_TIMEOUT: Duration = Duration::from_secs(4);

/// How long a round's set-up on an ensemble of our own keeps trying to open a session and
/// make its chroot while the nemesis has the service down: longer than an election after a
/// member is killed (a few seconds) and a frozen member's second.
pub(crate) const SETUP_PATIENCE: Duration = Duration::from_secs(30);

/// How long one connection attempt waits for a member's answer in a run on our own
/// ensemble: a frozen member accepts the connection and never answers, and the next member
/// should be tried well within the session timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

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
    #[error("no round ended with a verdict: {}", reasons.join("; "))]
    NoVerdict { reasons: Vec<String> },
}

/// How one round of a real run ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Its history was judged.
    Judged(Box<Report>),
    /// It ended without a verdict.
    Unjudged {
        /// Whether it never started (its set-up failed) or its workload gave up.
        stage: Stage,
        /// Why.
        reason: String,
    },
}

/// Where a round without a verdict stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Its session or chroot could not be made within [`SETUP_PATIENCE`].
    NotStarted,
    /// The workload gave up: a call it cannot do without (opening a client or a handle, a
    /// final read) failed.
    GaveUp,
}

impl Stage {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stage::NotStarted => "could not start",
            Stage::GaveUp => "the workload gave up",
        }
    }
}

/// One round of a real run.
#[derive(Debug)]
pub(crate) struct Round {
    /// Its workload's seed.
    pub(crate) seed: u64,
    /// The nemesis events during it, by kind.
    pub(crate) faults: BTreeMap<String, u64>,
    pub(crate) outcome: Outcome,
}

impl Round {
    /// Its report, if it was judged.
    pub(crate) fn report(&self) -> Option<&Report> {
        match &self.outcome {
            Outcome::Judged(r) => Some(r),
            Outcome::Unjudged { .. } => None,
        }
    }
}

/// What a real run did: its rounds in order, and the signal that ended it early, if one did.
#[derive(Debug)]
pub(crate) struct RealRun {
    pub(crate) rounds: Vec<Round>,
    pub(crate) interrupted: Option<Interrupt>,
}

/// Runs `w` on real ZooKeeper: once, or with `duration`, round after round until it has
/// passed. Each round works under its own chroot with seed `w.seed + k` and is judged on its
/// own (rounds share no nodes, so one history across them would mean nothing); the nemesis
/// runs across all of them. A round judged invalid ends the run, and so does SIGINT or
/// SIGTERM. Each round's `faults` are the nemesis events during it.
///
/// Fails only when the run cannot be made at all (no ensemble, no runtime, a bad ref
/// store, an unknown scenario), or when no round ended with a verdict.
pub(crate) fn run_real(
    registry: &Registry,
    target: &Target,
    w: &Workload,
    planted: Option<Bug>,
    pg: Option<&str>,
    duration: Option<Duration>,
) -> Result<RealRun, ChaosError> {
    // The runtime first: from here on SIGINT and SIGTERM are ours, so the ensemble below is
    // stopped by its own `Drop` whatever ends the run.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ChaosError::Runtime)?;
    let mut signals = rt.block_on(async { setup::Signals::catch() })?;
    let (ensemble, config, every, patience) = match target {
        Target::Server(config) => (None, (**config).clone(), None, Duration::ZERO),
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
            let config = ZkConfig::new(e.connect_string()).with_connect_timeout(CONNECT_TIMEOUT);
            (Some(Arc::new(e)), config, *kill_every, SETUP_PATIENCE)
        }
    };
    let label = target.label();
    let result = rt.block_on(async {
        let counts: nemesis::Counts = Arc::default();
        let mut nemesis = None;
        let mut current: Option<Arc<Mutex<ZkBackend>>> = None;
        let started = std::time::Instant::now();
        let mut run = RealRun {
            rounds: Vec::new(),
            interrupted: None,
        };
        for k in 0u64.. {
            let mut w = w.clone();
            w.seed = w.seed.wrapping_add(k);
            crate::cli::panic::set(format!(
                "{} with seed {} (round {} on {label}); again: avout run {} --seed {} {}",
                w.scenario,
                w.seed,
                k + 1,
                w.scenario,
                w.seed,
                target.flags()
            ));
            let before = counts.lock().expect("not poisoned").clone();
            let round = async {
                let base = match setup::chroot(&config, &w.scenario, patience).await {
                    Ok(base) => base,
                    Err(e @ ChaosError::Unreachable { .. }) => {
                        return Ok(Outcome::Unjudged {
                            stage: Stage::NotStarted,
                            reason: e.to_string(),
                        });
                    }
                    Err(e) => return Err(e),
                };
                let backend = setup::backend(&config, &base, patience);
                let store = setup::ref_store(&w, pg, &backend.config().connect).await?;
                match &current {
                    Some(c) => *c.lock().expect("not poisoned") = backend.clone(),
                    None => current = Some(Arc::new(Mutex::new(backend.clone()))),
                }
                if let (None, Some(e), Some(every), Some(c)) =
                    (&nemesis, &ensemble, every, &current)
                {
                    nemesis = Some(tokio::spawn(nemesis::nemesis_loop(
                        e.clone(),
                        nemesis::sessions_of(c.clone()),
                        every,
                        counts.clone(),
                    )));
                }
                let report = registry
                    .run(&w)
                    .planted(planted)
                    .ref_store(store)
                    .zk(&backend)
                    .await;
                match report {
                    Ok(r) => Ok(Outcome::Judged(Box::new(r))),
                    Err(RunError::Workload(e)) => Ok(Outcome::Unjudged {
                        stage: Stage::GaveUp,
                        reason: e.to_string(),
                    }),
                    Err(e) => Err(ChaosError::Run(e)),
                }
            };
            let outcome = tokio::select! {
                biased;
                signal = signals.next() => {
                    run.interrupted = Some(signal);
                    break;
                }
                outcome = round => outcome,
            };
            let outcome = match outcome {
                Ok(o) => o,
                Err(e) => {
                    stop(nemesis).await;
                    return Err(e);
                }
            };
            let invalid = matches!(&outcome, Outcome::Judged(r) if !r.verdict.is_valid());
            run.rounds.push(Round {
                seed: w.seed,
                faults: since(&before, &counts.lock().expect("not poisoned")),
                outcome,
            });
            if invalid || duration.is_none_or(|d| started.elapsed() >= d) {
                break;
            }
        }
        stop(nemesis).await;
        Ok::<_, ChaosError>(run)
    });
    crate::cli::panic::clear();
    // Nothing of the run is left on the runtime (blocking nemesis steps included) once it is
    // dropped; then the ensemble's last handle goes and its members are stopped.
    drop(rt);
    drop(ensemble);
    let run = result?;
    if run.interrupted.is_none() && run.rounds.iter().all(|r| r.report().is_none()) {
        return Err(ChaosError::NoVerdict {
            reasons: run
                .rounds
                .iter()
                .filter_map(|r| match &r.outcome {
                    Outcome::Unjudged { stage, reason } => {
                        Some(format!("seed {}: {}: {reason}", r.seed, stage.name()))
                    }
                    Outcome::Judged(_) => None,
                })
                .collect(),
        });
    }
    Ok(run)
}

impl Target {
    /// How the run's report names where it ran.
    pub(crate) fn label(&self) -> String {
        match self {
            Target::Server(c) => format!("ZooKeeper at {}", c.connect),
            Target::Ensemble { size, kill_every } => format!(
                "own ensemble of {size}{}",
                kill_every
                    .map(|d| format!(", a member killed or a session expired every {d:?}"))
                    .unwrap_or_default()
            ),
        }
    }

    /// The `avout run` flags that run a round on this target again.
    fn flags(&self) -> String {
        match self {
            Target::Server(c) => format!("--zk {}", c.connect),
            Target::Ensemble { size, kill_every } => format!(
                "--zk-ensemble {size}{}",
                kill_every
                    .map(|d| format!(" --kill-every {}ms", d.as_millis()))
                    .unwrap_or_default()
            ),
        }
    }
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
