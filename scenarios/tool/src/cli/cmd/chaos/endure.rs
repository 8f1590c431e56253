//! `avout endure`: every scenario at once, round after round, on one real ensemble of our
//! own under every nemesis for a long time, while the client's memory and tasks and the
//! ensemble's nodes, ephemerals, watches and connections are sampled. A round judged
//! invalid, a round that hangs, or a sampled figure that keeps growing fails the run.
//!
//! Each scenario's rounds work under chroots of their own, deleted once the round has
//! ended, so a flat node count means nothing is left behind. The nemesis is `avout run`'s
//! (`--kill-every`): a member killed, frozen, cut off from the others, the clients cut off
//! from one, a session of any scenario's current round expired.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use avout::CoordinationExt;
use avout::zk::ZkConfig;
use avout_scenarios::scenario::{Registry, RunError};
use avout_testkit::backend::{Backend, ZkBackend};
use avout_testkit::server::ZkEnsemble;

use super::sample::{self, METRICS, Sample, Trend};
use super::{CONNECT_TIMEOUT, ChaosError, SETUP_PATIENCE, nemesis, setup};
use crate::cli::cmd::runs::{RunCmdError, parse_duration};
use crate::report::render::{Doc, Plot, Series, Shape, Table};
use crate::report::stats::Estimate;

/// Options of `avout endure`.
#[derive(Debug, clap::Args)]
pub(crate) struct EndureArgs {
    /// The scenarios, comma-separated (default: every one the soak runs).
    #[arg(long, value_delimiter = ',')]
    scenarios: Vec<String>,
    /// How long (e.g. 30m, 90s).
    #[arg(long, default_value = "30m")]
    duration: String,
    /// The nemesis's next event every this often.
    #[arg(long, default_value = "2s")]
    kill_every: String,
    /// Sample the client and the ensemble every this often.
    #[arg(long, default_value = "10s")]
    sample_every: String,
    /// A round still running after this long is a hang.
    #[arg(long, default_value = "180s")]
    hang_after: String,
    /// Where the report (`endurance.md`, its plots and samples) goes; an invalid round's
    /// history goes to `DIR/endurance/`.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
}

/// How one scenario's rounds went.
#[derive(Debug, Default)]
struct Tally {
    rounds: u64,
    valid: u64,
    operations: u64,
    invalid: Vec<u64>,
    unjudged: Vec<(u64, String)>,
    hangs: Vec<u64>,
    /// Chroots not deleted yet (a nemesis event got in the way); tried again.
    leftover: Vec<String>,
}

/// `avout endure`.
pub(crate) fn run(registry: &Registry, args: &EndureArgs) -> Result<(), RunCmdError> {
    let duration = parse_duration(&args.duration)?;
    let every = parse_duration(&args.kill_every)?;
    let sample_every = parse_duration(&args.sample_every)?;
    let hang_after = parse_duration(&args.hang_after)?;
    let names: Vec<String> = if args.scenarios.is_empty() {
        registry.soaked().into_iter().map(str::to_owned).collect()
    } else {
        args.scenarios.clone()
    };
    for name in &names {
        registry.get(name).map_err(RunError::from)?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ChaosError::Runtime)?;
    let mut signals = rt.block_on(async { setup::Signals::catch() })?;
    let ensemble = Arc::new(
        ZkEnsemble::builder()
            .size(3)
            .partitionable(true)
            .start()
            .map_err(|source| ChaosError::Ensemble { size: 3, source })?,
    );
    let config = ZkConfig::new(ensemble.connect_string()).with_connect_timeout(CONNECT_TIMEOUT);
    let history_dir = args.out.join("endurance");
    let started = Instant::now();
    let (tallies, samples, counts, interrupted) = rt.block_on(async {
        let current: Arc<Mutex<BTreeMap<String, ZkBackend>>> = Arc::default();
        let live: nemesis::Live = {
            let current = current.clone();
            Arc::new(move || {
                let current = current.lock().expect("not poisoned");
                current.values().flat_map(ZkBackend::sessions).collect()
            })
        };
        let counts: nemesis::Counts = Arc::default();
        let nemesis = tokio::spawn(nemesis::nemesis_loop(
            ensemble.clone(),
            live,
            every,
            counts.clone(),
        ));
        let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
        let sampler = tokio::spawn({
            let (ensemble, samples) = (ensemble.clone(), samples.clone());
            async move {
                loop {
                    let e = ensemble.clone();
                    let at = started.elapsed().as_secs_f64();
                    // Talks to the members, and blocks: off the runtime's threads.
                    #[cfg_attr(madsim, allow(deprecated))]
                    if let Ok(s) = tokio::task::spawn_blocking(move || sample::take(at, &e)).await {
                        samples.lock().expect("not poisoned").push(s);
                    }
                    tokio::time::sleep(sample_every).await;
                }
            }
        });
        let deadline = started + duration;
        let loops = names.iter().map(|name| {
            scenario_loop(
                registry,
                name,
                &config,
                deadline,
                hang_after,
                &current,
                &history_dir,
            )
        });
        let mut interrupted = None;
        let tallies = tokio::select! {
            biased;
            signal = signals.next() => {
                interrupted = Some(signal);
                Vec::new()
            }
            t = futures::future::join_all(loops) => t,
        };
        nemesis.abort();
        sampler.abort();
        let _ = (nemesis.await, sampler.await);
        let samples = samples.lock().expect("not poisoned").clone();
        let counts = counts.lock().expect("not poisoned").clone();
        (tallies, samples, counts, interrupted)
    });
    drop(rt);
    drop(ensemble);
    if let Some(signal) = interrupted {
        return Err(RunCmdError::Interrupted(signal));
    }
    let tallies: Vec<(String, Tally)> = names.into_iter().zip(tallies).collect();
    let (path, failures) = write_report(args, &tallies, &samples, &counts, started.elapsed())?;
    println!("report      {}", path.display());
    if failures.is_empty() {
        Ok(())
    } else {
        Err(RunCmdError::Anomaly(format!(
            "the endurance run failed: {}",
            failures.join("; ")
        )))
    }
}

/// Rounds of `name` until `deadline`, each under a fresh chroot that is deleted after it.
async fn scenario_loop(
    registry: &Registry,
    name: &str,
    config: &ZkConfig,
    deadline: Instant,
    hang_after: Duration,
    current: &Mutex<BTreeMap<String, ZkBackend>>,
    history_dir: &std::path::Path,
) -> Tally {
    let mut tally = Tally::default();
    let root = setup::backend(config, "", SETUP_PATIENCE);
    let mut cleaner = None;
    for seed in 1u64.. {
        if Instant::now() >= deadline {
            break;
        }
        tally.rounds += 1;
        let w = registry
            .workload(name, seed)
            .expect("checked before the run");
        let base = match setup::chroot(config, name, SETUP_PATIENCE).await {
            Ok(base) => base,
            Err(e) => {
                tally.unjudged.push((seed, e.to_string()));
                continue;
            }
        };
        let backend = setup::backend(config, &base, SETUP_PATIENCE);
        current
            .lock()
            .expect("not poisoned")
            .insert(name.to_owned(), backend.clone());
        match tokio::time::timeout(hang_after, registry.run(&w).zk(&backend)).await {
            Err(_) => tally.hangs.push(seed),
            Ok(Ok(report)) => {
                tally.operations += report.counts.invoked;
                if report.verdict.is_valid() {
                    tally.valid += 1;
                } else {
                    tally.invalid.push(seed);
                    let path = history_dir.join(format!("{name}-seed{seed}.jsonl"));
                    let _ = std::fs::create_dir_all(history_dir);
                    if let Err(e) = report.history.write_file(&path) {
                        eprintln!("avout: cannot keep {}: {e}", path.display());
                    }
                }
            }
            Ok(Err(e)) => tally.unjudged.push((seed, e.to_string())),
        }
        current.lock().expect("not poisoned").remove(name);
        drop(backend);
        tally.leftover.push(base);
        if cleaner.is_none() {
            cleaner = root.client().await.ok();
        }
        if let Some(c) = &cleaner {
            let mut kept = Vec::new();
            for base in std::mem::take(&mut tally.leftover) {
                if c.delete_recursive(&base).await.is_err() {
                    kept.push(base);
                }
            }
            tally.leftover = kept;
        }
    }
    if let Some(c) = cleaner {
        let _ = c.close().await;
    }
    tally
}

/// Writes `endurance.md` (tables, trends, plots) and `endurance-samples.json`; returns its
/// path and what failed.
fn write_report(
    args: &EndureArgs,
    tallies: &[(String, Tally)],
    samples: &[Sample],
    counts: &BTreeMap<String, u64>,
    took: Duration,
) -> Result<(PathBuf, Vec<String>), RunCmdError> {
    let command = format!(
        "avout endure --duration {} --kill-every {} --sample-every {} --hang-after {}{}",
        args.duration,
        args.kill_every,
        args.sample_every,
        args.hang_after,
        if args.scenarios.is_empty() {
            String::new()
        } else {
            format!(" --scenarios {}", args.scenarios.join(","))
        }
    );
    let mut doc = Doc::measured(
        "endurance",
        "Endurance on a real ensemble under every nemesis",
        &command,
    );
    let events: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    doc.para(&format!(
        "Every scenario at once, round after round, for {:.1} minutes on one 3-member ensemble \
         of Debian's ZooKeeper 3.8 of our own, with a nemesis event every {} in turn: {}.",
        took.as_secs_f64() / 60.0,
        args.kill_every,
        events.join(", ")
    ));
    let mut failures = Vec::new();
    let mut t = Table::new([
        "scenario",
        "rounds",
        "valid",
        "invalid",
        "hangs",
        "without a verdict",
        "operations",
        "chroots left",
    ]);
    for (name, tally) in tallies {
        t.row(vec![
            name.clone(),
            tally.rounds.to_string(),
            tally.valid.to_string(),
            tally.invalid.len().to_string(),
            tally.hangs.len().to_string(),
            tally.unjudged.len().to_string(),
            tally.operations.to_string(),
            tally.leftover.len().to_string(),
        ]);
        if !tally.invalid.is_empty() {
            failures.push(format!("{name} invalid at seeds {:?}", tally.invalid));
        }
        if !tally.hangs.is_empty() {
            failures.push(format!("{name} hung at seeds {:?}", tally.hangs));
        }
        if tally.valid == 0 {
            failures.push(format!("{name}: no round judged valid"));
        }
    }
    doc.heading("Rounds");
    doc.table(&t);
    let unjudged: Vec<String> = tallies
        .iter()
        .flat_map(|(name, t)| {
            t.unjudged
                .iter()
                .map(move |(seed, why)| format!("{name} seed {seed}: {why}"))
        })
        .collect();
    if !unjudged.is_empty() {
        doc.para("Rounds without a verdict:");
        doc.bullets(&unjudged);
    }
    doc.heading("Resources");
    doc.para(&format!(
        "{} samples, one every {}. A figure leaks when the median of the last quarter of the \
         run exceeds the median of the second quarter (after the warm-up) by more than its \
         slack and by more than a fifth.",
        samples.len(),
        args.sample_every
    ));
    let mut r = Table::new([
        "figure",
        "second quarter",
        "last quarter",
        "slack",
        "verdict",
    ]);
    let step = samples.len().div_ceil(30).max(1);
    let shown: Vec<&Sample> = samples.iter().step_by(step).collect();
    let xs: Vec<String> = shown
        .iter()
        .map(|s| format!("{:.0}", s.at / 60.0))
        .collect();
    for (i, (metric, title, slack)) in METRICS.iter().enumerate() {
        let trend = Trend::of(samples, *metric, *slack);
        let leaks = trend.leaks();
        r.row(vec![
            (*title).to_owned(),
            format!("{:.1}", trend.early),
            format!("{:.1}", trend.late),
            format!("{slack}"),
            if leaks { "GROWS" } else { "flat" }.to_owned(),
        ]);
        if leaks {
            failures.push(format!(
                "{title} grew from {:.1} to {:.1}",
                trend.early, trend.late
            ));
        }
        let series = [Series {
            name: (*title).to_owned(),
            values: shown.iter().map(|s| Estimate::of(&[metric(s)])).collect(),
        }];
        doc.plot(
            &format!("resource-{i}"),
            &Plot {
                title,
                x_desc: "minutes into the run",
                y_desc: title,
                xs: &xs,
                series: &series,
                shape: Shape::Lines,
            },
        )
        .map_err(|e| RunCmdError::Usage(e.to_string()))?;
    }
    doc.table(&r);
    doc.para(&format!(
        "Verdict: {}.",
        if failures.is_empty() {
            "every round judged valid, no hang, nothing grew".to_owned()
        } else {
            failures.join("; ")
        }
    ));
    let path = doc
        .write(&args.out)
        .map_err(|e| RunCmdError::Usage(e.to_string()))?;
    let json = args.out.join("endurance-samples.json");
    std::fs::write(
        &json,
        serde_json::to_string_pretty(samples).expect("samples serialise"),
    )
    .map_err(|source| RunCmdError::Write {
        path: json.display().to_string(),
        source,
    })?;
    Ok((path, failures))
}
