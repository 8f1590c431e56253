//! Runs: a seed, a configuration and a workload, executed on a fresh paused tokio runtime.
//!
//! [`Sim::run`] builds a current-thread runtime whose clock starts paused (virtual time jumps
//! to the next timer whenever every task is idle), opens the configured sessions, and polls
//! the workload and the network driver together, the workload first, until the workload
//! returns. Everything that could vary between two runs of one seed is removed: no wall
//! clock, no OS randomness, no threads, no unordered collections, no unbiased `select!`.
//! So the run is a function of its [`SimConfig`] and workload, and the hash of its event log
//! says so.
//!
//! A run that panics (an assertion of the workload, a broken kernel invariant, the virtual
//! time limit) prints its seed and how to replay it before the panic continues.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::client::{SimClient, SimZk};
use crate::log::LogEvent;
use crate::rng::{Rng, Stream};
use crate::world::{Shared, Stop, drive};
use crate::{Choices, FaultKind, REPLAY_FORMAT, ReplayFile};

mod config;

pub use config::{Builder, SimConfig};

/// The environment variable [`Builder::seed_from_env`] reads.
pub const SEED_ENV: &str = "AVOUT_SIM_SEED";

/// The environment variable naming a replay file that a simulation built with
/// [`Builder::seed_from_env`] runs instead of its own configuration: how a failing test's
/// replay file is re-run without editing the test.
pub const REPLAY_ENV: &str = "AVOUT_SIM_REPLAY";

/// The environment variable naming the directory failing runs write their replay files to
/// (default: `avout-sim-replays` in the system's temporary directory).
pub const REPLAY_DIR_ENV: &str = "AVOUT_SIM_REPLAY_DIR";

/// Where a failing run writes its replay file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum FailureFiles {
    /// `AVOUT_SIM_REPLAY_DIR`, else the temporary directory.
    #[default]
    Default,
    Dir(PathBuf),
    Off,
}

/// A configured simulation; [`run`](Self::run) it with a workload.
///
/// ```
/// use avout::Coordination;
/// let sim = avout_sim_zk::Sim::builder().seed(3).clients(2).build();
/// let work = |ctx: avout_sim_zk::SimCtx| async move {
///     ctx.clients[0].create("/a", b"1", &Default::default()).await.unwrap();
///     ctx.clients[1].get_data("/a").await.unwrap().0
/// };
/// let (data, first) = sim.run(work);
/// let (_, second) = sim.run(work);
/// assert_eq!(data, b"1");
/// assert_eq!(first.hash, second.hash);
/// ```
#[derive(Clone, Debug)]
pub struct Sim {
    config: SimConfig,
    record: bool,
    tapes: Option<Choices>,
    failure_files: FailureFiles,
}

/// What a workload gets: the service, the clients opened for it, and its own random stream.
#[derive(Debug)]
pub struct SimCtx {
    /// The service.
    pub zk: SimZk,
    /// The clients, in index order.
    pub clients: Vec<SimClient>,
    /// The workload's random stream (independent of latencies and faults).
    pub rng: Rng,
    /// The run's seed.
    pub seed: u64,
}

/// The outcome of a run.
#[derive(Clone, Debug)]
pub struct RunSummary {
    /// The seed.
    pub seed: u64,
    /// The stable hash of the event log.
    pub hash: u64,
    /// The log (empty unless the configuration kept it).
    pub log: Vec<LogEvent>,
    /// How many entries the log has (kept or not).
    pub log_len: u64,
    /// Faults that fired, by kind.
    pub faults: std::collections::BTreeMap<FaultKind, u64>,
    /// Requests the service processed (lost ones excluded).
    pub requests: u64,
    /// Virtual time the run took.
    pub virtual_time: Duration,
    /// The replay file, if the run recorded its choices.
    pub replay: Option<ReplayFile>,
    /// How many times a buggify point fired (0 unless the configuration enables buggify).
    pub buggified: u64,
    /// For a run from a replay file: whether it needed more choices than the file held
    /// (it was edited, or the code changed), and so went on with fresh ones.
    pub tapes_exhausted: bool,
}

impl RunSummary {
    /// How many faults of `kind` fired.
    ///
    /// ```
    /// let (_, s) = avout_sim_zk::Sim::builder().build().run(|_| async {});
    /// assert_eq!(s.fault_count(avout_sim_zk::FaultKind::Outage), 0);
    /// ```
    pub fn fault_count(&self, kind: FaultKind) -> u64 {
        self.faults.get(&kind).copied().unwrap_or(0)
    }

    /// The log, one entry per line.
    ///
    /// ```
    /// let (_, s) = avout_sim_zk::Sim::builder().clients(1).build().run(|_| async {});
    /// assert!(s.log_text().contains("connected"));
    /// ```
    pub fn log_text(&self) -> String {
        let mut out = String::new();
        for e in &self.log {
            out.push_str(&e.to_string());
            out.push('\n');
        }
        out
    }
}

impl Sim {
    /// A builder with the default configuration.
    ///
    /// ```
    /// let sim = avout_sim_zk::Sim::builder().seed(1).clients(2).build();
    /// assert_eq!(sim.config().clients, 2);
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The simulation a replay file describes: its configuration, taking its choices from the
    /// file's tapes. Run it with the workload of the recorded run (see [`ReplayFile`]).
    ///
    /// ```
    /// let (_, s) = avout_sim_zk::Sim::builder().record_choices(true).build().run(|_| async {});
    /// let replay = avout_sim_zk::Sim::from_replay(s.replay.as_ref().unwrap());
    /// assert_eq!(replay.run(|_| async {}).1.hash, s.hash);
    /// ```
    pub fn from_replay(file: &ReplayFile) -> Sim {
        Sim {
            config: file.config.clone(),
            record: false,
            tapes: Some(file.choices.clone()),
            failure_files: FailureFiles::Default,
        }
    }

    /// The same simulation writing a failing run's replay file to `dir` (`None`: none);
    /// see [`Builder::failure_replay_dir`].
    ///
    /// ```
    /// let (_, s) = avout_sim_zk::Sim::builder().record_choices(true).build().run(|_| async {});
    /// let replay = avout_sim_zk::Sim::from_replay(s.replay.as_ref().unwrap())
    ///     .with_failure_replay_dir(None);
    /// assert_eq!(replay.run(|_| async {}).1.hash, s.hash);
    /// ```
    pub fn with_failure_replay_dir(mut self, dir: Option<PathBuf>) -> Sim {
        self.failure_files = match dir {
            Some(dir) => FailureFiles::Dir(dir),
            None => FailureFiles::Off,
        };
        self
    }

    /// The configuration.
    ///
    /// ```
    /// assert_eq!(avout_sim_zk::Sim::builder().seed(5).build().config().seed, 5);
    /// ```
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// Runs `workload` to completion and returns its output and the run's summary.
    ///
    /// # Panics
    ///
    /// If the workload panics, a kernel invariant breaks, or the workload is still running
    /// at the time limit (a deadlock in virtual time). First the run writes a replay file
    /// (its configuration, every choice it made up to the failure, and the event-log hash at
    /// that point; see [`Builder::failure_replay_dir`]) and, if it kept its event log, the
    /// log up to the failure beside it (`.log`), and prints its seed, the files' paths and how
    /// to replay it.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("avout-doc-{}", std::process::id()));
    /// let sim = avout_sim_zk::Sim::builder().seed(4).failure_replay_dir(Some(dir.clone())).build();
    /// let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
    ///     sim.run(|_| async { panic!("boom") })
    /// }));
    /// assert!(failed.is_err());
    /// let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    /// let file = files.iter().find(|p| p.extension().is_some_and(|e| e == "json")).unwrap();
    /// let replay = avout_sim_zk::ReplayFile::load(file).unwrap();
    /// assert_eq!(replay.config.seed, 4);
    /// // The run kept its event log (the default), so the log up to the failure is beside it.
    /// assert!(std::fs::read_to_string(file.with_extension("log")).unwrap().contains("connected"));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn run<F, Fut, T>(&self, workload: F) -> (T, RunSummary)
    where
        F: FnOnce(SimCtx) -> Fut,
        Fut: Future<Output = T>,
    {
        let seed = self.config.seed;
        let mut world = None;
        let result =
            std::panic::catch_unwind(AssertUnwindSafe(|| self.run_inner(workload, &mut world)));
        match result {
            Ok(out) => out,
            Err(panic) => {
                let written = world.and_then(|shared| self.write_failure(&shared));
                // Under libtest and nextest the thread is named after the test.
                let test = std::thread::current()
                    .name()
                    .filter(|n| *n != "main")
                    .map(str::to_owned);
                let rerun = match &test {
                    Some(name) => format!("cargo test -- --exact {name}"),
                    None => "<the same command>".to_owned(),
                };
                let file = match &written {
                    Some(Ok(path)) => format!(
                        "\n  replay file: {0}\n  replay it:   {REPLAY_ENV}={0} {rerun} (tests \
                         built with Builder::seed_from_env), or run \
                         Sim::from_replay(&ReplayFile::load(path)?) on the same workload{1}",
                        path.display(),
                        Some(path.with_extension("log"))
                            .filter(|log| log.exists())
                            .map(|log| format!("\n  event log:   {}", log.display()))
                            .unwrap_or_default()
                    ),
                    Some(Err(e)) => format!("\n  (could not write a replay file: {e})"),
                    None => String::new(),
                };
                eprintln!(
                    "avout-sim-zk: simulated run failed with seed {seed} ({seed:#x}){}.{file}\n  \
                     or by its seed: {SEED_ENV}={seed} {rerun}, or Sim::builder().seed({seed}) \
                     with the same configuration",
                    test.map(|t| format!(" in test {t}")).unwrap_or_default()
                );
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// Writes the replay file of a failed run; `None` if files are off.
    fn write_failure(&self, shared: &Shared) -> Option<Result<PathBuf, crate::ReplayError>> {
        let dir = match &self.failure_files {
            FailureFiles::Off => return None,
            FailureFiles::Dir(dir) => dir.clone(),
            FailureFiles::Default => std::env::var_os(REPLAY_DIR_ENV)
                .map(PathBuf::from)
                .unwrap_or_else(|| std::env::temp_dir().join("avout-sim-replays")),
        };
        // The world may be poisoned by the very panic being reported; its choices are intact.
        let w = shared.world_even_if_poisoned();
        let file = ReplayFile {
            format: REPLAY_FORMAT,
            config: self.config.clone(),
            choices: w.choices_so_far(),
            hash: w.log.hash(),
        };
        // A run that kept its event log leaves it beside the replay file: the entries up to
        // the failure are what shows a deadlock, which has no history to draw.
        let log: String = w.log.entries().iter().map(|e| format!("{e}\n")).collect();
        drop(w);
        let path = dir.join(format!("seed-{}-{:016x}.json", self.config.seed, file.hash));
        let io = |path: &Path, source| crate::ReplayError::Io {
            path: path.display().to_string(),
            source,
        };
        let written = std::fs::create_dir_all(&dir)
            .map_err(|source| io(&dir, source))
            .and_then(|()| file.save(&path))
            .and_then(|()| {
                let text = path.with_extension("log");
                if log.is_empty() {
                    return Ok(());
                }
                std::fs::write(&text, log).map_err(|source| io(&text, source))
            });
        Some(written.map(|()| path))
    }

    fn run_inner<F, Fut, T>(&self, workload: F, world: &mut Option<Arc<Shared>>) -> (T, RunSummary)
    where
        F: FnOnce(SimCtx) -> Fut,
        Fut: Future<Output = T>,
    {
        #[cfg(not(madsim))]
        let parks = crate::world::Parks::default();
        #[cfg(not(madsim))]
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .on_thread_unpark({
                let parks = parks.clone();
                move || parks.unparked()
            })
            .build()
            .expect("a current-thread runtime builds");
        // Under `--cfg madsim` the run is a madsim simulation of its own, seeded by the run's
        // seed: madsim's clock is the virtual clock and its scheduler picks the task order.
        #[cfg(madsim)]
        let rt = madsim::runtime::Runtime::with_seed_and_config(
            self.config.seed,
            madsim::Config::default(),
        );
        // madsim's clock is its own business: it is read every time.
        #[cfg(madsim)]
        let parks = None;
        #[cfg(not(madsim))]
        let parks = Some(parks);
        let config = self.config.clone();
        let (tapes, record) = (self.tapes.clone(), self.record);
        rt.block_on(async move {
            let shared = Shared::new(
                config.clone(),
                tokio::time::Instant::now(),
                tapes,
                record,
                parks,
            );
            *world = Some(shared.clone());
            // For this thread, while the run lasts (the guard also goes on a panic).
            let _buggify = config.buggify.then(|| {
                let shared = shared.clone();
                avout::buggify::install(Box::new(move |site| {
                    // Reached while the world is locked (from inside the simulator): no.
                    shared.world_if_free().is_some_and(|mut w| w.buggify(site))
                }))
            });
            let zk = SimZk {
                shared: shared.clone(),
            };
            let clients = (0..config.clients).map(|_| zk.connect()).collect();
            let ctx = SimCtx {
                zk,
                clients,
                rng: Rng::new(config.seed, Stream::Workload),
                seed: config.seed,
            };
            let work = workload(ctx);
            let driver = drive(shared.clone());
            let output = tokio::select! {
                biased;
                out = work => out,
                stop = driver => match stop {
                    Stop::TimeLimit(limit) => panic!(
                        "the workload was still running after {limit:?} of virtual time \
                         (waiting for something that never happens?)"
                    ),
                },
            };
            let mut w = shared.world();
            let virtual_time = Duration::from_nanos(w.now());
            let replay = record.then(|| ReplayFile {
                format: REPLAY_FORMAT,
                config: config.clone(),
                choices: w.take_choices(),
                hash: w.log.hash(),
            });
            let summary = RunSummary {
                replay,
                tapes_exhausted: w.tapes_exhausted(),
                seed: config.seed,
                hash: w.log.hash(),
                log_len: w.log.len(),
                log: w.log.take(),
                faults: w.fault_counts().clone(),
                requests: w.requests,
                buggified: w.buggified(),
                virtual_time,
            };
            (output, summary)
        })
    }
}

#[cfg(test)]
mod tests {
    use avout::{Coordination, CreateMode};

    use super::*;
    use crate::FaultRates;

    /// A small random workload: every client pipelines a few random operations.
    async fn random_ops(mut ctx: SimCtx) -> Vec<String> {
        let mut outcomes = Vec::new();
        let paths = ["/a", "/b", "/a/x", "/b/y"];
        for round in 0..8 {
            for c in &ctx.clients {
                let path = paths[ctx.rng.below(paths.len() as u64) as usize];
                let outcome = match ctx.rng.below(4) {
                    0 => c
                        .create(path, b"v", &CreateMode::Persistent.into())
                        .await
                        .map(|(p, _)| p),
                    1 => c
                        .set_data(path, &[round], None)
                        .await
                        .map(|s| s.version.to_string()),
                    2 => c.delete(path, None).await.map(|()| "deleted".into()),
                    _ => c
                        .get_children("/")
                        .await
                        .map(|(children, _)| children.join(",")),
                };
                outcomes.push(format!("{outcome:?}"));
            }
        }
        outcomes
    }

    #[test]
    fn two_hundred_seeds_replay_to_the_same_hash() {
        for seed in 0..200 {
            let sim = Sim::builder()
                .seed(seed)
                .clients(3)
                .rates(FaultRates::chaos())
                .keep_log(false)
                .build();
            let (a_out, a) = sim.run(random_ops);
            let (b_out, b) = sim.run(random_ops);
            assert_eq!(a.hash, b.hash, "seed {seed}");
            assert_eq!(a_out, b_out, "seed {seed}");
        }
    }

    #[test]
    fn the_workload_stream_ignores_the_fault_configuration() {
        let calm = Sim::builder().seed(5).clients(2).build();
        let stormy = Sim::builder()
            .seed(5)
            .clients(2)
            .rates(FaultRates::chaos())
            .build();
        let draws = |ctx: SimCtx| async move {
            let mut rng = ctx.rng;
            (0..10).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(calm.run(draws).0, stormy.run(draws).0);
    }
}
