//! `avout soak`: every scenario on many seeds, a table of failures, exit 1 if any.
//!
//! The grid and its runs are [`avout_scenarios::scenario::soak`]'s; this module parses the
//! options, picks the base seed, draws the progress bar, prints the table and writes the
//! lowest failing seed of each failing row as a case file, then the coverage marks reached.
//! `avout soak --shard I/N --json` runs a slice of the seeds; `avout soak-merge` folds the
//! slices' JSON into the whole soak's table and case files.

use std::collections::BTreeMap;
use std::path::PathBuf;

use avout::coverage::Mark;
use avout_scenarios::scenario::soak::{
    FaultConfig, Row, Shard, Soak, SoakReport, SoakSlice, merge, rerun_kept, soak,
};
use avout_scenarios::scenario::{Protocol, Registry};

use super::runs::{RunCmdError, Style, parse_kind, progress_bar, write_case};

/// Options of `avout soak`.
#[derive(Debug, clap::Args)]
pub(crate) struct SoakArgs {
    /// Seeds per scenario and fault configuration.
    #[arg(long, default_value_t = 10_000)]
    seeds: u64,
    /// The first seed (runs use BASE..BASE+N). Default: the clock's seconds since the Unix
    /// epoch, printed so the soak can be run again.
    #[arg(long, value_name = "B")]
    base: Option<u64>,
    /// Fault kinds drawn together, comma-separated (as for `avout run`), or `all` (the 7
    /// one-server kinds; the default unless --per-kind or --pairs is given), `every` (all 13,
    /// the ensemble's 6 too) or `none`.
    #[arg(long, value_name = "LIST")]
    faults: Option<String>,
    /// Each of the 13 fault kinds alone, N seeds each.
    #[arg(long)]
    per_kind: bool,
    /// Every pair of fault kinds (78), N seeds each.
    #[arg(long)]
    pairs: bool,
    /// Swarm testing: in every fault configuration, each seed draws which of its kinds are
    /// on and their rates from wide ranges (rows are named `swarm:CONFIG`).
    #[arg(long)]
    swarm: bool,
    /// Scenarios, comma-separated (default: every built-in scenario, then those a user's
    /// binary registered).
    #[arg(long, value_name = "LIST")]
    scenarios: Option<String>,
    /// Operations per client (default: each scenario's).
    #[arg(long)]
    ops: Option<usize>,
    /// Every row on a distant ensemble: a fixed one-way latency in milliseconds (at most
    /// 500), in place of the one distant row (`bank+60ms`) soaked by default.
    #[arg(long, value_name = "MS")]
    latency_ms: Option<u64>,
    /// The STM protocol of the transactional scenarios (bank, list-append and rw-register
    /// also run under the other one, in rows of their own: `bank+optimistic`).
    #[arg(long, default_value = "mvcc")]
    protocol: String,
    /// Switch on a planted bug (needs a build with `--features planted-bugs`).
    #[arg(long, value_name = "BUG")]
    planted: Option<String>,
    /// OS threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Where the case files of failing seeds go.
    #[arg(long, default_value = "avout-runs", value_name = "DIR")]
    out: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Run the first N seeds of every row twice and fail when a seed's two event logs differ
    /// (a run that draws from outside its seed cannot be replayed).
    #[arg(long, value_name = "N", default_value_t = avout_scenarios::scenario::soak::REPEAT)]
    repeat: u64,
    /// Before the grid, run every kept regression case in this directory (e.g.
    /// scenarios/regressions) again, a case kept with a planted bug without it (the correct
    /// code must pass it); any that fails fails the soak.
    #[arg(long, value_name = "DIR")]
    regressions: Option<PathBuf>,
    /// Run only slice I of N (from 0) of every row's seeds: the offsets I, I+N, I+2N, ...
    /// from the base. `avout soak-merge` folds the slices' `--json` outputs into one soak.
    #[arg(long, value_name = "I/N", default_value_t = Shard::WHOLE)]
    shard: Shard,
}

/// Options of `avout soak-merge`.
#[derive(Debug, clap::Args)]
pub(crate) struct MergeArgs {
    /// The slices' JSON, as `avout soak --shard I/N --json` printed them, every shard once.
    #[arg(required = true, value_name = "SLICE.json")]
    slices: Vec<PathBuf>,
    /// Where the merged soak's case files go.
    #[arg(long, default_value = "avout-runs", value_name = "DIR")]
    out: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

impl SoakArgs {
    fn soak(&self, registry: &Registry) -> Result<Soak, RunCmdError> {
        let usage = |m: String| RunCmdError::Usage(m);
        let scenarios = match self.scenarios.as_deref() {
            // Every soaked scenario of the registry: the built-ins, then a user's binary's.
            None | Some("all") => registry.soaked().into_iter().map(str::to_owned).collect(),
            Some(list) => list
                .split(',')
                .map(|s| registry.get(s.trim()).map(|s| s.name().to_owned()))
                .collect::<Result<_, _>>()
                .map_err(|e| usage(e.to_string()))?,
        };
        let mut faults = Vec::new();
        if self.faults.is_some() || !(self.per_kind || self.pairs) {
            faults.push(match self.faults.as_deref() {
                None | Some("all") => FaultConfig::all(),
                Some("every") => FaultConfig::every(),
                Some("none") => FaultConfig::none(),
                Some(list) => FaultConfig::of(
                    &list
                        .split(',')
                        .map(|s| parse_kind(s.trim()))
                        .collect::<Result<Vec<_>, _>>()?,
                ),
            });
        }
        if self.per_kind {
            faults.extend(FaultConfig::per_kind());
        }
        if self.pairs {
            faults.extend(FaultConfig::pairs());
        }
        if self.swarm {
            faults = faults.into_iter().map(FaultConfig::swarm).collect();
        }
        if self.seeds == 0 {
            return Err(usage("--seeds must be at least 1".into()));
        }
        let base = self.base.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
        if base.checked_add(self.seeds).is_none() {
            return Err(usage(format!(
                "--base {base} + --seeds {} overflows",
                self.seeds
            )));
        }
        let mut s = Soak::new(scenarios, faults, base, self.seeds);
        s.protocol = self.protocol.parse::<Protocol>().map_err(usage)?;
        s.ops = self.ops;
        if let Some(ms) = self.latency_ms {
            let ms = super::runs::check_latency(ms).map_err(usage)?;
            s.latency_ms = Some(ms);
            s.latency_rows.clear();
            // A lone client stays a row of its own, as far away as the rest.
            for row in &mut s.lone_rows {
                row.1 = ms;
            }
        }
        s.planted = self
            .planted
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e: avout::planted::PlantedError| usage(e.to_string()))?;
        if let Some(t) = self.threads {
            s.threads = t.max(1);
        }
        s.repeat = self.repeat;
        s.shard = self.shard;
        Ok(s)
    }
}

fn case_path(out: &std::path::Path, row: &Row, seed: u64) -> PathBuf {
    out.join(format!(
        "{}-{}-seed{seed}.case.json",
        row.label(),
        row.faults.name
    ))
}

/// `avout soak`.
pub(crate) fn run(registry: &Registry, args: &SoakArgs) -> Result<(), RunCmdError> {
    let s = args.soak(registry)?;
    let rows = s.rows();
    let line = format!(
        "soak        base seed {} (seeds {}..{}{}): {} scenario(s) × {} fault configuration(s) × {} \
         seeds on {} threads{}",
        s.base,
        s.base,
        s.base + s.seeds,
        if s.shard == Shard::WHOLE {
            String::new()
        } else {
            format!(", slice {} of every {}", s.shard.index(), s.shard.count())
        },
        s.scenario_rows(),
        s.faults.len(),
        s.shard.seeds_of(s.seeds),
        s.threads,
        s.planted
            .map(|b| format!(", planted bug {b}"))
            .unwrap_or_default()
    );
    if args.json {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
    let mut kept_failed = 0;
    if let Some(dir) = &args.regressions {
        let kept = rerun_kept(registry, dir)?;
        let style = Style::stdout();
        for k in kept.iter().filter(|k| !k.report.verdict.is_valid()) {
            kept_failed += 1;
            let first = k.report.verdict.problems().next().unwrap_or_default();
            // A case kept with a planted bug ran without it: its replay must too.
            let (with, flag) = match k.planted {
                Some(bug) => (
                    format!(", with {bug} planted; run without it"),
                    " --without-planted",
                ),
                None => (String::new(), ""),
            };
            let line = format!(
                "REGRESSED   {} (kept for: {}{with}): {}\nreplay      avout replay {}{flag}",
                k.path.display(),
                k.anomaly.lines().next().unwrap_or_default(),
                first.lines().next().unwrap_or_default(),
                k.path.display()
            );
            if args.json {
                eprintln!("{line}");
            } else {
                println!("{}", style.paint("31;1", &line));
            }
        }
        let line = format!(
            "regressions {} kept case(s) of {} run first: {}",
            kept.len(),
            dir.display(),
            if kept_failed == 0 {
                "every one valid".to_owned()
            } else {
                format!("{kept_failed} failed")
            }
        );
        if args.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    let bar = progress_bar(rows as u64 * s.shard.seeds_of(s.seeds), "runs", !args.json);
    let report = soak(registry, &s, &|done| bar.set_position(done))?;
    bar.finish_and_clear();
    show(
        registry,
        &SoakSlice::of(&s, &report),
        &report,
        s.threads,
        &args.out,
        args.json,
    )?;
    if kept_failed > 0 {
        return Err(RunCmdError::Anomaly(format!(
            "{kept_failed} kept regression case(s) failed"
        )));
    }
    verdict(&report, s.base)
}

/// Exit 1 (an anomaly, already reported) if any run failed.
fn verdict(report: &SoakReport, base: u64) -> Result<(), RunCmdError> {
    if !report.failed() {
        return Ok(());
    }
    let failed: u64 = report.rows.iter().map(|r| r.failed.len() as u64).sum();
    let unrepeatable: usize = report.rows.iter().map(|r| r.unrepeatable.len()).sum();
    Err(RunCmdError::Anomaly(format!(
        "{failed} of {} runs failed and {unrepeatable} seed(s) ran differently twice \
         (base seed {base})",
        report.runs
    )))
}

/// `avout soak-merge`: the slices read, checked to be one soak's, folded, the lowest failing
/// seed of each row recorded again; printed and exited as that soak would have been.
pub(crate) fn merge_cmd(registry: &Registry, args: &MergeArgs) -> Result<(), RunCmdError> {
    let slices = args
        .slices
        .iter()
        .map(|path| {
            let bad = |e: String| {
                RunCmdError::Usage(format!("{}: not a soak slice: {e}", path.display()))
            };
            let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
            serde_json::from_str::<SoakSlice>(&text).map_err(|e| bad(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut merged = merge(&slices).map_err(|e| RunCmdError::Usage(e.to_string()))?;
    merged.record_first(registry)?;
    let report = merged.report();
    let line = format!(
        "soak-merge  {} slice(s) of base seed {} (seeds {}..{}): {} runs",
        slices.len(),
        merged.base,
        merged.base,
        merged.base + merged.seeds,
        merged.runs
    );
    if args.json {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
    show(registry, &merged, &report, 0, &args.out, args.json)?;
    verdict(&report, merged.base)
}

/// Writes each failing row's case file (and page) to `out`, then prints the table and the
/// coverage marks, or the JSON.
fn show(
    registry: &Registry,
    slice: &SoakSlice,
    report: &SoakReport,
    threads: usize,
    out: &std::path::Path,
    json: bool,
) -> Result<(), RunCmdError> {
    let mut paths = Vec::new();
    for row in &report.rows {
        let path = match (&row.first, row.failed.first()) {
            (Some(case), Some(&seed)) => {
                let path = case_path(out, row, seed);
                let page = write_case(registry, case, &path)?;
                Some((path, page))
            }
            _ => None,
        };
        paths.push(path);
    }
    if json {
        print_json(slice, threads, report, &paths);
    } else {
        print_table(report, &paths);
        print_coverage(report);
    }
    Ok(())
}

/// A failing row's case file and its timeline page, as written.
type Written = Option<(PathBuf, Option<PathBuf>)>;

fn print_table(report: &SoakReport, paths: &[Written]) {
    let style = Style::stdout();
    let width = |f: &dyn Fn(&Row) -> usize, title: &str| {
        report
            .rows
            .iter()
            .map(f)
            .max()
            .unwrap_or(0)
            .max(title.len())
    };
    let ws = width(&|r| r.label().len(), "scenario");
    let wf = width(&|r| r.faults.name.len(), "faults");
    println!(
        "{:ws$}  {:wf$}  {:>7}  {:>8}  first failing seed, and its replay",
        "scenario", "faults", "seeds", "failures"
    );
    for (row, path) in report.rows.iter().zip(paths) {
        let first = match (row.failed.first(), path) {
            (Some(seed), Some((path, _))) => style.paint(
                "31;1",
                &format!("seed {seed}: avout replay {}", path.display()),
            ),
            _ => "-".to_owned(),
        };
        println!(
            "{:ws$}  {:wf$}  {:>7}  {:>8}  {first}",
            row.label(),
            row.faults.name,
            row.seeds,
            row.failed.len()
        );
    }
    let failing: Vec<_> = report
        .rows
        .iter()
        .zip(paths)
        .filter(|(r, _)| !r.failed.is_empty() || !r.unrepeatable.is_empty())
        .collect();
    println!(
        "soaked      {} runs in {:.1} s ({} simulated requests): {}",
        report.runs,
        report.wall_time.as_secs_f64(),
        report.requests,
        if failing.is_empty() {
            style.paint("32", "every run valid")
        } else {
            style.paint(
                "31;1",
                &format!("{} of {} rows failed", failing.len(), report.rows.len()),
            )
        }
    );
    for row in &report.rows {
        for u in &row.unrepeatable {
            println!(
                "{}",
                style.paint(
                    "31;1",
                    &format!(
                        "UNREPEATABLE {} ({}) seed {}: two runs logged {} and {}: something \
                         in the run draws from outside its seed",
                        row.label(),
                        row.faults.name,
                        u.seed,
                        logged(u.first),
                        logged(u.second)
                    )
                )
            );
        }
    }
    for (row, path) in failing {
        let (Some(case), Some((path, page))) = (&row.first, path) else {
            continue;
        };
        let w = &case.workload;
        println!(
            "FAILED      {} ({}) seed {}: {} of {} seeds failed{}",
            row.label(),
            row.faults.name,
            w.seed,
            row.failed.len(),
            row.seeds,
            match row.failed.get(1..6) {
                Some(more) if !more.is_empty() => format!(
                    " (also {}{})",
                    more.iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    if row.failed.len() > 6 { ", …" } else { "" }
                ),
                _ => String::new(),
            }
        );
        for a in case.anomalies.iter().take(2) {
            println!("  - {}", a.lines().next().unwrap_or_default());
        }
        println!("replay      avout replay {}", path.display());
        println!("shrink      avout shrink {}", path.display());
        if let Some(page) = page {
            println!("timeline    {}", page.display());
        }
    }
}

/// The coverage marks: for each, the runs that reached it and the scenarios they were of;
/// a mark no run reached is a finding, shown as such.
fn print_coverage(report: &SoakReport) {
    let style = Style::stdout();
    let all = report.coverage();
    let width = Mark::ALL.iter().map(|m| m.name().len()).max().unwrap_or(0);
    println!(
        "coverage    {} of {} marks reached in {} runs (runs reaching each, and where):",
        Mark::ALL.len() - all.unreached().count(),
        Mark::ALL.len(),
        all.runs
    );
    for &mark in Mark::ALL {
        let reached = all.get(mark);
        if reached.runs == 0 {
            println!(
                "  {:width$}  {}",
                mark.name(),
                style.paint("33;1", "NEVER REACHED")
            );
            continue;
        }
        let mut by_scenario: BTreeMap<String, u64> = BTreeMap::new();
        for row in &report.rows {
            let n = row.coverage.get(mark).runs;
            if n > 0 {
                *by_scenario.entry(row.label()).or_default() += n;
            }
        }
        let wheres: Vec<String> = by_scenario
            .iter()
            .map(|(scenario, n)| format!("{scenario} {n}"))
            .collect();
        println!(
            "  {:width$}  {:>7} runs  {:>8} times  {}",
            mark.name(),
            reached.runs,
            reached.times,
            wheres.join(", ")
        );
    }
}

/// A run's event-log hash and request count as the table prints them.
fn logged((hash, requests): (Option<u64>, Option<u64>)) -> String {
    format!(
        "hash {} after {} requests",
        hash.map_or("-".into(), |h| format!("{h:016x}")),
        requests.map_or("-".into(), |r| r.to_string())
    )
}

/// The slice (what `soak-merge` reads back), with what people and scripts read besides.
fn print_json(slice: &SoakSlice, threads: usize, report: &SoakReport, paths: &[Written]) {
    let mut value = serde_json::to_value(slice).expect("a slice serializes");
    value["threads"] = threads.into();
    value["failed"] = report.failed().into();
    value["unreached"] = report
        .coverage()
        .unreached()
        .map(Mark::name)
        .collect::<Vec<_>>()
        .into();
    let rows = value["rows"].as_array_mut().expect("rows are an array");
    for ((json, row), path) in rows.iter_mut().zip(&report.rows).zip(paths) {
        json["failures"] = row.failed.len().into();
        json["first_failure"] = serde_json::json!(row.first.as_ref().map(|case| serde_json::json!({
            "seed": case.workload.seed,
            "anomalies": case.anomalies,
            "case": path.as_ref().map(|(p, _)| p.display().to_string()),
            "replay": path.as_ref().map(|(p, _)| format!("avout replay {}", p.display())),
            "page": path.as_ref().and_then(|(_, page)| page.as_ref()).map(|p| p.display().to_string()),
        })));
    }
    println!("{value}");
}
