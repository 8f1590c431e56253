//! `avout explore | replay | shrink`: many seeds of a scenario, a case file replayed to its
//! event-log hash, a failing case made small.
//!
//! Exit status: 0 every run was valid (a replay: it reached its hash and passed), 1 a run
//! failed, 2 a usage or infrastructure error.

use std::path::PathBuf;

use avout_scenarios::scenario::case::Case;
use avout_scenarios::scenario::explore::explore;
use avout_scenarios::scenario::shrink::shrink;
use avout_scenarios::scenario::{PANICKED, Registry};

use super::runs::{
    RunCmdError, Style, WorkloadArgs, print_report, progress_bar, report_json, write_case,
};

/// Options of `avout explore`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExploreArgs {
    #[command(flatten)]
    common: WorkloadArgs,
    /// The seeds, as A..B (B excluded).
    #[arg(long, value_name = "A..B")]
    seeds: String,
    /// Run every seed and report every failure, instead of stopping at the first.
    #[arg(long)]
    all: bool,
    /// OS threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
}

/// Options of `avout replay`.
#[derive(Debug, clap::Args)]
pub(crate) struct ReplayArgs {
    /// A case file written by `avout run`, `explore` or `shrink`.
    file: PathBuf,
    /// Run a case kept with a planted bug without it, as `avout soak --regressions` does: the
    /// correct code must pass it. Its event log is then not the recorded one (that was the
    /// bug's run), so the hashes are not compared.
    #[arg(long)]
    without_planted: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Options of `avout shrink`.
#[derive(Debug, clap::Args)]
pub(crate) struct ShrinkArgs {
    /// A failing case file.
    file: PathBuf,
    /// Where to write the shrunk case (default: FILE with `.shrunk.json`).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// At most this many candidate runs.
    #[arg(long, default_value_t = 5000)]
    budget: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn parse_seeds(s: &str) -> Result<std::ops::Range<u64>, RunCmdError> {
    let bad = || RunCmdError::Usage(format!("bad seed range {s:?}: expected A..B, e.g. 0..1000"));
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (a, b): (u64, u64) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a >= b {
        return Err(RunCmdError::Usage(format!("seed range {s:?} is empty")));
    }
    Ok(a..b)
}

/// `avout explore`.
pub(crate) fn explore_cmd(registry: &Registry, args: &ExploreArgs) -> Result<(), RunCmdError> {
    let seeds = parse_seeds(&args.seeds)?;
    let w = args.common.workload(registry, seeds.start)?;
    let faults = args.common.faults()?;
    let planted = args.common.planted()?;
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let bar = progress_bar(seeds.end - seeds.start, "seeds", !args.common.json);
    let wall = std::time::Instant::now();
    let found = explore(
        &registry.run(&w).with_faults(&faults).planted(planted),
        seeds.clone(),
        threads,
        args.all,
        &|done| {
            bar.set_position(done);
        },
    )?;
    bar.finish_and_clear();
    let wall = wall.elapsed();
    let style = Style::stdout();
    let mut cases = Vec::new();
    for failure in &found.failures {
        // Re-run the failing seed recording its choices (the same run: runs are a function
        // of their seed), for the case file.
        let case = Case::record_faults(registry, &failure.workload, &faults, planted)?;
        let path = args.common.out.join(format!(
            "{}-seed{}.case.json",
            failure.workload.scenario, failure.workload.seed
        ));
        let page = write_case(registry, &case, &path)?;
        cases.push((failure, path, page));
    }
    if args.common.json {
        let failures: Vec<serde_json::Value> = cases
            .iter()
            .map(|(r, p, page)| {
                report_json(
                    r,
                    serde_json::json!({
                        "case": p.display().to_string(),
                        "page": page.as_ref().map(|p| p.display().to_string()),
                    }),
                )
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "scenario": w.scenario,
                "seeds": [seeds.start, seeds.end],
                "runs": found.runs,
                "threads": threads,
                "requests": found.requests,
                "wall_time_s": wall.as_secs_f64(),
                "failures": failures,
                "seeds_to_first_failure": found.first_failure().map(|r| r.workload.seed - seeds.start + 1),
            })
        );
    } else {
        println!(
            "explored    {} seeds of {}..{} on {threads} threads in {:.2} s ({} simulated requests)",
            found.runs,
            seeds.start,
            seeds.end,
            wall.as_secs_f64(),
            found.requests
        );
        if cases.is_empty() {
            println!("verdict     {}", style.paint("32", "every run valid"));
        }
        for (r, path, page) in &cases {
            println!(
                "{}",
                style.paint(
                    "31;1",
                    &format!(
                        "FAILED      seed {} ({} runs in)",
                        r.workload.seed,
                        r.workload.seed - seeds.start + 1
                    )
                )
            );
            for a in r.verdict.problems().take(3) {
                println!("  - {a}");
            }
            println!("replay      avout replay {}", path.display());
            println!("shrink      avout shrink {}", path.display());
            if let Some(page) = page {
                println!("timeline    {}", page.display());
            }
        }
    }
    if cases.is_empty() {
        Ok(())
    } else {
        Err(RunCmdError::Anomaly(format!(
            "{} of {} seeds failed",
            cases.len(),
            found.runs
        )))
    }
}

/// `avout replay`.
pub(crate) fn replay(registry: &Registry, args: &ReplayArgs) -> Result<(), RunCmdError> {
    let case = Case::load(&args.file)?;
    let unplanted = args.without_planted && case.planted.is_some();
    let report = if unplanted {
        case.rerun(registry, None)?
    } else {
        case.replay(registry)?
    };
    // A run that panicked has no hash: it replays if it panics again.
    let found = report.hash.unwrap_or(PANICKED);
    let same = unplanted || found == case.sim.hash;
    let style = Style::stdout();
    if args.json {
        println!(
            "{}",
            report_json(
                &report,
                serde_json::json!({
                    "recorded_hash": format!("{:#018x}", case.sim.hash),
                    "replayed": same && !unplanted,
                    "without_planted": unplanted,
                })
            )
        );
    } else if unplanted {
        print_report(
            &report,
            "simulator, the file's choices without its planted bug",
            &style,
        );
    } else {
        print_report(
            &report,
            "simulator, replayed from the file's choices",
            &style,
        );
        if same {
            println!(
                "replayed    {}",
                style.paint("32", &format!("same event-log hash {found:#018x}"))
            );
        }
    }
    if !same {
        return Err(RunCmdError::Diverged {
            recorded: case.sim.hash,
            found,
        });
    }
    if report.verdict.is_valid() {
        Ok(())
    } else {
        Err(RunCmdError::Anomaly(
            "the replayed run has the anomaly".into(),
        ))
    }
}

/// `avout shrink`.
pub(crate) fn shrink_cmd(registry: &Registry, args: &ShrinkArgs) -> Result<(), RunCmdError> {
    let case = Case::load(&args.file)?;
    let wall = std::time::Instant::now();
    let shrunk = shrink(registry, &case, args.budget)?;
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args
            .file
            .file_name()
            .and_then(|n| n.to_str())
            .map(|n| n.trim_end_matches(".json").trim_end_matches(".case"))
            .unwrap_or("case");
        args.file.with_file_name(format!("{stem}.shrunk.json"))
    });
    let page = write_case(registry, &shrunk.case, &out)?;
    let w = &shrunk.case.workload;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "file": out.display().to_string(),
                "runs": shrunk.runs,
                "steps_before": shrunk.steps.0,
                "steps_after": shrunk.steps.1,
                "ops_before": shrunk.ops.0,
                "ops_after": shrunk.ops.1,
                "clients": w.clients,
                "ops_per_client": w.ops,
                "faults_fired_before": shrunk.faults.0,
                "faults_scheduled_after": shrunk.faults.1,
                "explicit_schedule": shrunk.scheduled,
                "anomalies": shrunk.case.anomalies,
                "page": page.as_ref().map(|p| p.display().to_string()),
                "wall_time_s": wall.elapsed().as_secs_f64(),
            })
        );
    } else {
        println!(
            "shrunk      {} steps → {} ({} clients × {} ops + {} scheduled faults; {} faults had fired){}, in {} runs ({:.2} s)",
            shrunk.steps.0,
            shrunk.steps.1,
            w.clients,
            w.ops,
            shrunk.faults.1,
            shrunk.faults.0,
            if shrunk.scheduled {
                ""
            } else {
                " (kept as rates: the log's schedule did not reproduce)"
            },
            shrunk.runs,
            wall.elapsed().as_secs_f64()
        );
        for a in shrunk.case.anomalies.iter().take(3) {
            println!("  - {a}");
        }
        println!("written     {}", out.display());
        println!("replay      avout replay {}", out.display());
        if let Some(page) = &page {
            println!("timeline    {}", page.display());
        }
    }
    Ok(())
}
