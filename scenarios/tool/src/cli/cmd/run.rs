//! `avout run`: one scenario run from the shell, on the simulator or on real ZooKeeper.
//!
//! Exit status: 0 the run (or every run) was valid, 1 a run failed (an anomaly, or on the
//! simulator an error the workload gave up with, which is recorded as a case file like an
//! anomaly), 2 a usage or infrastructure error (bad arguments, an unreachable server, an
//! unreadable file).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::view::{Page, page_path};
use avout_scenarios::scenario::case::Case;
use avout_scenarios::scenario::{Registry, Report, RunError};

use super::chaos;
use super::runs::{
    RunCmdError, Style, WorkloadArgs, create_dir, fault_list, parse_duration, print_report,
    report_json, write_case,
};
use super::zk_auth::ZkAuth;

/// Options of `avout run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    common: WorkloadArgs,
    /// The seed: the same seed gives the same simulated run, bit for bit.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run on a real ZooKeeper at this connect string instead of the simulator.
    #[arg(long, value_name = "CONNECT", conflicts_with = "zk_ensemble")]
    zk: Option<String>,
    #[command(flatten)]
    zk_auth: Box<ZkAuth>,
    /// Start a ZooKeeper ensemble of this many members for the run (Debian's ZooKeeper),
    /// and stop it afterwards.
    #[arg(long, value_name = "N")]
    zk_ensemble: Option<usize>,
    /// With --zk-ensemble: every this often (e.g. 5s, 500ms), the next nemesis event in turn:
    /// kill and restart a member, SIGSTOP and resume one, cut one off from the others, cut the
    /// clients off from one (each healed after a second), expire a client's session.
    #[arg(long, value_name = "DURATION", requires = "zk_ensemble")]
    kill_every: Option<String>,
    /// On real ZooKeeper: repeat the workload, round after round (each under its own chroot
    /// with the next seed, each judged on its own), until this much time has passed (e.g. 30s,
    /// 2m). Default with --kill-every D: 10 × D, about ten nemesis events; otherwise one round.
    #[arg(long, value_name = "DURATION")]
    duration: Option<String>,
    /// With --ref-store postgres: the PostgreSQL to keep values in (a tokio-postgres
    /// configuration: `host=127.0.0.1 port=5432 user=avout dbname=avout`, or a
    /// `postgresql://` URL). The run's values go under its own scope in the table.
    #[arg(long, value_name = "URL")]
    pg: Option<String>,
    /// Write the history here (default: DIR/SCENARIO-seedN.jsonl).
    #[arg(long, value_name = "FILE")]
    history: Option<PathBuf>,
}

/// `avout run`.
pub(crate) fn run(registry: &Registry, args: &RunArgs) -> Result<(), RunCmdError> {
    let w = args.common.workload(registry, args.seed)?;
    let planted = args.common.planted()?;
    let style = Style::stdout();
    let out = &args.common.out;
    let mut rounds_json = serde_json::Value::Null;
    let mut interrupted = None;
    let (report, backend, case) = if args.zk.is_some() || args.zk_ensemble.is_some() {
        let kill_every = args.kill_every.as_deref().map(parse_duration).transpose()?;
        let duration = match args.duration.as_deref().map(parse_duration).transpose()? {
            Some(d) => Some(d),
            None => kill_every.map(|every| every * 10),
        };
        // Refused before an ensemble is started; the run plants it in its handles.
        avout::planted::Bugs::plant(planted).map_err(RunError::from)?;
        let target = match (&args.zk, args.zk_ensemble) {
            (Some(connect), _) => chaos::Target::Server(Box::new(
                args.zk_auth
                    .config(connect)
                    .map_err(|e| RunCmdError::Usage(e.to_string()))?,
            )),
            (None, Some(n)) => chaos::Target::Ensemble {
                size: n,
                kill_every,
            },
            (None, None) => unreachable!("checked above"),
        };
        let label = target.label();
        let run = chaos::run_real(registry, &target, &w, planted, args.pg.as_deref(), duration)?;
        rounds_json = print_rounds(&run, args.common.json);
        interrupted = run.interrupted;
        let Some(report) = run.rounds.into_iter().rev().find_map(|r| match r.outcome {
            chaos::Outcome::Judged(report) => Some(*report),
            chaos::Outcome::Unjudged { .. } => None,
        }) else {
            // Only an interrupted run can end without a judged round (`run_real` fails
            // otherwise).
            let signal = interrupted.expect("a run without a verdict fails in run_real");
            return Err(RunCmdError::Interrupted(signal));
        };
        (report, label, None)
    } else {
        if args.duration.is_some() {
            return Err(RunCmdError::Usage(
                "--duration needs real ZooKeeper (--zk or --zk-ensemble); on the simulator \
                 use --ops"
                    .into(),
            ));
        }
        if args.pg.is_some() {
            return Err(RunCmdError::Usage(
                "--pg needs real ZooKeeper (--zk or --zk-ensemble)".into(),
            ));
        }
        let faults = args.common.faults()?;
        let report = registry
            .run(&w)
            .with_faults(&faults)
            .planted(planted)
            .recorded()
            .sim()?;
        let case = (!report.verdict.is_valid()).then(|| Case::from_report(&report, &report.plan));
        (report, "simulator".to_owned(), case)
    };
    // Named by the reported round's seed: the last judged round of a real run, not the first.
    let history_path = args
        .history
        .clone()
        .unwrap_or_else(|| out.join(format!("{}-seed{}.jsonl", w.scenario, report.workload.seed)));
    if let Some(dir) = history_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir(dir)?;
    }
    report.history.write_file(&history_path)?;
    let case_path = out.join(format!("{}-seed{}.case.json", w.scenario, w.seed));
    let page = match &case {
        Some(case) => write_case(registry, case, &case_path)?,
        // A failing run on real ZooKeeper has no case file: its page goes beside its history.
        None if !report.verdict.is_valid() => real_page(&report, &backend, &history_path),
        None => None,
    };
    if args.common.json {
        let extra = serde_json::json!({
            "backend": backend,
            "history": history_path.display().to_string(),
            "case": case.as_ref().map(|_| case_path.display().to_string()),
            "page": page.as_ref().map(|p| p.display().to_string()),
            "rounds": rounds_json,
        });
        println!("{}", report_json(&report, extra));
    } else {
        print_report(&report, &backend, &style);
        println!("history     {}", history_path.display());
        if case.is_some() {
            println!("replay      avout replay {}", case_path.display());
            println!("shrink      avout shrink {}", case_path.display());
        }
        if let Some(page) = &page {
            println!("timeline    {}", page.display());
        }
    }
    if let (true, Some(signal)) = (report.verdict.is_valid(), interrupted) {
        Err(RunCmdError::Interrupted(signal))
    } else if report.verdict.is_valid() {
        Ok(())
    } else {
        Err(RunCmdError::Anomaly(format!(
            "{} failed with seed {}",
            w.scenario, w.seed
        )))
    }
}

/// The rounds of a real run, one line each (those without a verdict with their reason) and
/// the totals, in text unless `json`, before the last judged round is reported in full;
/// returned as JSON. A run of one judged round prints nothing here.
fn print_rounds(run: &chaos::RealRun, json: bool) -> serde_json::Value {
    let mut faults: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &run.rounds {
        for (k, n) in &r.faults {
            *faults.entry(k).or_default() += n;
        }
    }
    let judged: Vec<&Report> = run.rounds.iter().filter_map(chaos::Round::report).collect();
    let unjudged = run.rounds.len() - judged.len();
    let ops: u64 = judged.iter().map(|r| r.counts.invoked).sum();
    let each = |r: &chaos::Round| match &r.outcome {
        chaos::Outcome::Judged(report) => serde_json::json!({
            "seed": r.seed,
            "operations": report.counts.invoked,
            "faults": r.faults,
            "valid": report.verdict.is_valid(),
        }),
        chaos::Outcome::Unjudged { stage, reason } => serde_json::json!({
            "seed": r.seed,
            "faults": r.faults,
            "verdict": null,
            "stage": stage.name(),
            "reason": reason,
        }),
    };
    let quiet = run.rounds.len() == 1 && run.interrupted.is_none();
    if !json && !quiet {
        for (k, r) in run.rounds.iter().enumerate() {
            let status = match &r.outcome {
                chaos::Outcome::Judged(report) => format!(
                    "{} operations, faults {}, {}",
                    report.counts.invoked,
                    fault_list(&r.faults),
                    if report.verdict.is_valid() {
                        "valid"
                    } else {
                        "INVALID"
                    }
                ),
                chaos::Outcome::Unjudged { stage, reason } => format!(
                    "faults {}, no verdict: {}: {reason}",
                    fault_list(&r.faults),
                    stage.name()
                ),
            };
            println!("round {:<5} seed {}, {status}", k + 1, r.seed);
        }
        let list: Vec<String> = faults.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!(
            "rounds      {}, {} judged, {unjudged} without a verdict{}; {ops} operations in all; \
             nemesis events: {}; the last judged round:",
            run.rounds.len(),
            judged.len(),
            run.interrupted
                .map(|s| format!("; ended by {}", s.name()))
                .unwrap_or_default(),
            if list.is_empty() {
                "none".to_owned()
            } else {
                list.join(", ")
            }
        );
    }
    serde_json::json!({
        "count": run.rounds.len(),
        "judged": judged.len(),
        "without_verdict": unjudged,
        "interrupted": run.interrupted.map(|s| s.name()),
        "operations": ops,
        "faults": faults,
        "each": run.rounds.iter().map(each).collect::<Vec<_>>(),
    })
}

/// The page of a failing run on real ZooKeeper, beside its history; reported on stderr and
/// skipped if it cannot be written.
fn real_page(report: &Report, backend: &str, history: &Path) -> Option<PathBuf> {
    let path = page_path(history);
    let written = Page::of_report(report, backend).and_then(|mut p| {
        p.about.push(format!("history: {}", history.display()));
        p.write(&path)
    });
    match written {
        Ok(()) => Some(path),
        Err(e) => {
            eprintln!("avout: no timeline page for {}: {e}", history.display());
            None
        }
    }
}
