//! `avout run | explore | replay | shrink`: scenarios from the shell.
//!
//! Exit status: 0 the run (or every run) was valid, 1 a run failed (an anomaly, or on the
//! simulator an error the workload gave up with, which is recorded as a case file like an
//! anomaly), 2 a usage or infrastructure error (bad arguments, an unreachable server, an
//! unreadable file).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::view::{Page, page_path};
use avout::planted::Bug;
use avout_scenarios::scenario::case::{Case, CaseError};
use avout_scenarios::scenario::explore::explore;
use avout_scenarios::scenario::shrink::{ShrinkError, shrink};
use avout_scenarios::scenario::{
    FaultPlan, PANICKED, Protocol, Registry, Report, RunError, Workload,
};
use avout_sim_zk::FaultKind;

use super::chaos;

/// Options shared by `run` and `explore`: what runs, and under which faults.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkloadArgs {
    /// The scenario: counter, lin-kv, mutex, rwlock, election, queue, barrier, bank,
    /// list-append, lock-table, two-phase-commit, sessions, agents or cache.
    scenario: String,
    /// Concurrent clients (default: the scenario's).
    #[arg(long)]
    clients: Option<usize>,
    /// Operations per client (default: the scenario's).
    #[arg(long)]
    ops: Option<usize>,
    /// Fault kinds on the simulator, comma-separated: request-lost, reply-lost, disconnect,
    /// session-expiry, pause, stale-reads, outage, and the ensemble's partition,
    /// leader-election, session-moved, client-freeze, slow-disk; or `all` (the default: the
    /// first seven), `every` (all twelve) or `none`.
    #[arg(long, value_name = "LIST")]
    faults: Option<String>,
    /// The chance that a request draws some fault (split over the kinds as in the chaos mix).
    #[arg(long, value_name = "R")]
    fault_rate: Option<f64>,
    /// The STM protocol of transactional scenarios.
    #[arg(long, default_value = "mvcc")]
    protocol: String,
    /// Where transactional scenarios keep their refs' values: zk (the nodes), memory (an
    /// in-process store; the simulator's) or postgres (real ZooKeeper only, with --pg).
    #[arg(long, default_value = "zk", value_name = "STORE")]
    ref_store: String,
    /// Pad each bank account's value to this size: bytes, or with KiB or MiB (e.g. 2MiB,
    /// twice what a ZooKeeper node holds: needs --ref-store memory or postgres).
    #[arg(long, value_name = "SIZE")]
    value_size: Option<String>,
    /// Switch on a planted bug (needs a build with `--features planted-bugs`):
    /// lock-no-guid-recovery, atom-unchecked-write, stm-no-read-point-check,
    /// stm-barge-committing, stm-session-loss-retried, lock-handoff-without-recheck.
    #[arg(long, value_name = "BUG")]
    planted: Option<String>,
    /// Where histories and case files go.
    #[arg(long, default_value = "avout-runs", value_name = "DIR")]
    out: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

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

/// Why a scenario command failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunCmdError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Case(#[from] CaseError),
    #[error(transparent)]
    Shrink(#[from] ShrinkError),
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    History(#[from] avout_check::history::HistoryError),
    #[error(
        "the replay diverged: event-log hash {found:#018x}, the file recorded {recorded:#018x} \
         (the code or the simulator changed since it was recorded)"
    )]
    Diverged { recorded: u64, found: u64 },
    #[error(transparent)]
    Chaos(#[from] chaos::ChaosError),

    /// An anomaly was found (already reported).
    #[error("{0}")]
    Anomaly(String),
}

pub(crate) struct Style {
    colour: bool,
}

impl Style {
    pub(crate) fn stdout() -> Self {
        Style {
            colour: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    pub(crate) fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

fn parse_duration(s: &str) -> Result<Duration, RunCmdError> {
    super::parse_duration(s).map_err(RunCmdError::Usage)
}

/// A size: bytes, or a number with `KiB` or `MiB`.
fn parse_size(s: &str) -> Result<usize, RunCmdError> {
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => s.split_at(at),
        None => (s, ""),
    };
    let scale = match unit {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        _ => {
            return Err(RunCmdError::Usage(format!(
                "--value-size {s}: expected bytes, KiB or MiB (e.g. 2MiB)"
            )));
        }
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| RunCmdError::Usage(format!("--value-size {s} is not a size")))
}

pub(crate) fn parse_kind(s: &str) -> Result<FaultKind, RunCmdError> {
    FaultKind::ALL
        .into_iter()
        .find(|k| k.name() == s)
        .ok_or_else(|| {
            RunCmdError::Usage(format!(
                "unknown fault kind {s:?}; known: {}, or all (the first seven), every, none",
                FaultKind::ALL.map(|k| k.name()).join(", ")
            ))
        })
}

impl WorkloadArgs {
    fn workload(&self, registry: &Registry, seed: u64) -> Result<Workload, RunCmdError> {
        let mut w = registry
            .workload(&self.scenario, seed)
            .map_err(|e| RunCmdError::Usage(e.to_string()))?;
        if let Some(c) = self.clients {
            if c == 0 {
                return Err(RunCmdError::Usage("--clients must be at least 1".into()));
            }
            w.clients = c;
        }
        if let Some(n) = self.ops {
            w.ops = n;
        }
        w.protocol = self
            .protocol
            .parse::<Protocol>()
            .map_err(RunCmdError::Usage)?;
        w.ref_store = self.ref_store.parse().map_err(RunCmdError::Usage)?;
        if let Some(size) = &self.value_size {
            w.value_size = parse_size(size)?;
        }
        Ok(w)
    }

    fn plan(&self) -> Result<FaultPlan, RunCmdError> {
        if let Some(r) = self.fault_rate
            && !(0.0..=1.0).contains(&r)
        {
            return Err(RunCmdError::Usage(format!(
                "--fault-rate {r} is not a probability between 0 and 1"
            )));
        }
        let kinds: Vec<FaultKind> = match self.faults.as_deref() {
            None | Some("all") => FaultKind::DEFAULT.to_vec(),
            Some("every") => FaultKind::ALL.to_vec(),
            Some("none") => Vec::new(),
            Some(list) => list
                .split(',')
                .map(|s| parse_kind(s.trim()))
                .collect::<Result<_, _>>()?,
        };
        Ok(FaultPlan::kinds(&kinds, self.fault_rate))
    }

    fn planted(&self) -> Result<Option<Bug>, RunCmdError> {
        self.planted
            .as_deref()
            .map(|s| s.parse::<Bug>())
            .transpose()
            .map_err(|e| RunCmdError::Usage(e.to_string()))
    }
}

fn create_dir(dir: &Path) -> Result<(), RunCmdError> {
    std::fs::create_dir_all(dir).map_err(|source| RunCmdError::Write {
        path: dir.display().to_string(),
        source,
    })
}

/// Writes `case` to `path` and, when it failed, its timeline page beside it
/// ([`page_path`]); returns the page's path. A page that cannot be made is reported on
/// stderr and skipped: the case file is what the failure needs.
pub(crate) fn write_case(
    registry: &Registry,
    case: &Case,
    path: &Path,
) -> Result<Option<PathBuf>, RunCmdError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir(dir)?;
    }
    case.save(path)?;
    if case.anomalies.is_empty() {
        return Ok(None);
    }
    let page = page_path(path);
    let written = Page::of_case(registry, case).and_then(|mut p| {
        p.about
            .push(format!("replay: avout replay {}", path.display()));
        p.write(&page)
    });
    match written {
        Ok(()) => Ok(Some(page)),
        Err(e) => {
            eprintln!("avout: no timeline page for {}: {e}", path.display());
            Ok(None)
        }
    }
}

fn report_json(r: &Report, extra: serde_json::Value) -> serde_json::Value {
    let mut v = serde_json::json!({
        "scenario": r.workload.scenario,
        "seed": r.workload.seed,
        "clients": r.workload.clients,
        "ops_per_client": r.workload.ops,
        "ref_store": r.workload.ref_store.name(),
        "value_size": r.workload.value_size,
        "planted": r.planted.map(|b| b.name()),
        "operations": r.counts,
        "retries": r.retries,
        "faults": r.faults,
        "virtual_time_s": r.virtual_time.map(|t| t.as_secs_f64()),
        "wall_time_s": r.wall_time.as_secs_f64(),
        "hash": r.hash.map(|h| format!("{h:#018x}")),
        "requests": r.requests,
        "valid": r.verdict.is_valid(),
        "checker": r.verdict.checker,
        "anomalies": r.verdict.problems().collect::<Vec<_>>(),
    });
    if let (Some(obj), serde_json::Value::Object(more)) = (v.as_object_mut(), extra) {
        obj.extend(more);
    }
    v
}

/// ", ref store memory, values of 2097152 bytes" when the run does not keep its values in
/// the nodes or pads them.
fn store_note(w: &Workload) -> String {
    let mut note = String::new();
    if !w.ref_store.is_default() {
        note += &format!(", ref store {}", w.ref_store.name());
    }
    if w.value_size > 0 {
        note += &format!(", values of {} bytes", w.value_size);
    }
    note
}

fn print_report(r: &Report, backend: &str, style: &Style) {
    let w = &r.workload;
    println!(
        "scenario    {} ({} clients × {} ops, seed {}, {backend}){}{}",
        w.scenario,
        w.clients,
        w.ops,
        w.seed,
        store_note(w),
        r.planted
            .map(|b| format!(", planted bug {b}"))
            .unwrap_or_default()
    );
    let c = r.counts;
    println!(
        "operations  {} invoked: {} ok, {} fail, {} info; {} retries",
        c.invoked, c.ok, c.fail, c.info, r.retries
    );
    println!("faults      {}", fault_list(&r.faults));
    match r.virtual_time {
        Some(v) => println!(
            "time        {:.3} s virtual, {:.3} s wall",
            v.as_secs_f64(),
            r.wall_time.as_secs_f64()
        ),
        None => println!("time        {:.3} s wall", r.wall_time.as_secs_f64()),
    }
    if let (Some(h), Some(n)) = (r.hash, r.requests) {
        println!("event log   hash {h:#018x}, {n} requests");
    }
    let verdict = r.verdict.to_string();
    let verdict = if r.verdict.is_valid() {
        style.paint("32", &verdict)
    } else {
        style.paint("31;1", &verdict)
    };
    print!("verdict     {verdict}");
    if r.verdict.is_valid() {
        println!();
    }
}

/// `avout run`.
pub(crate) fn run(registry: &Registry, args: &RunArgs) -> Result<(), RunCmdError> {
    let w = args.common.workload(registry, args.seed)?;
    let planted = args.common.planted()?;
    let style = Style::stdout();
    let out = &args.common.out;
    let history_path = args
        .history
        .clone()
        .unwrap_or_else(|| out.join(format!("{}-seed{}.jsonl", w.scenario, w.seed)));
    let mut rounds_json = serde_json::Value::Null;
    let (report, backend, case) = if args.zk.is_some() || args.zk_ensemble.is_some() {
        let kill_every = args.kill_every.as_deref().map(parse_duration).transpose()?;
        let duration = match args.duration.as_deref().map(parse_duration).transpose()? {
            Some(d) => Some(d),
            None => kill_every.map(|every| every * 10),
        };
        // Refused before an ensemble is started; the run plants it in its handles.
        avout::planted::Bugs::plant(planted).map_err(RunError::from)?;
        let target = match (&args.zk, args.zk_ensemble) {
            (Some(connect), _) => chaos::Target::Server(connect.clone()),
            (None, Some(n)) => chaos::Target::Ensemble {
                size: n,
                kill_every,
            },
            (None, None) => unreachable!("checked above"),
        };
        let label = match &target {
            chaos::Target::Server(c) => format!("ZooKeeper at {c}"),
            chaos::Target::Ensemble { size, kill_every } => format!(
                "own ensemble of {size}{}",
                kill_every
                    .map(|d| format!(", a member killed or a session expired every {d:?}"))
                    .unwrap_or_default()
            ),
        };
        let mut rounds =
            chaos::run_real(registry, &target, &w, planted, args.pg.as_deref(), duration)?;
        let report = rounds.pop().expect("at least one round");
        if !rounds.is_empty() {
            rounds_json = print_rounds(&rounds, &report, args.common.json);
        }
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
        let plan = args.common.plan()?;
        let report = registry
            .run(&w)
            .faults(&plan)
            .planted(planted)
            .recorded()
            .sim()?;
        let case = (!report.verdict.is_valid()).then(|| Case::from_report(&report, &plan));
        (report, "simulator".to_owned(), case)
    };
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
    if report.verdict.is_valid() {
        Ok(())
    } else {
        Err(RunCmdError::Anomaly(format!(
            "{} failed with seed {}",
            w.scenario, w.seed
        )))
    }
}

/// The rounds of a run with `--duration`: `earlier` ones and the `last` (reported in full
/// after this), one line each and the totals, in text unless `json`; returned as JSON.
fn print_rounds(earlier: &[Report], last: &Report, json: bool) -> serde_json::Value {
    let all: Vec<&Report> = earlier.iter().chain([last]).collect();
    let mut faults: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &all {
        for (k, n) in &r.faults {
            *faults.entry(k).or_default() += n;
        }
    }
    let ops: u64 = all.iter().map(|r| r.counts.invoked).sum();
    if !json {
        for (k, r) in all.iter().enumerate() {
            println!(
                "round {:<5} seed {}, {} operations, faults {}, {}",
                k + 1,
                r.workload.seed,
                r.counts.invoked,
                fault_list(&r.faults),
                if r.verdict.is_valid() {
                    "valid"
                } else {
                    "INVALID"
                }
            );
        }
        let list: Vec<String> = faults.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!(
            "rounds      {}, {ops} operations in all; nemesis events: {}; the last round:",
            all.len(),
            if list.is_empty() {
                "none".to_owned()
            } else {
                list.join(", ")
            }
        );
    }
    serde_json::json!({
        "count": all.len(),
        "operations": ops,
        "faults": faults,
        "each": all.iter().map(|r| serde_json::json!({
            "seed": r.workload.seed,
            "operations": r.counts.invoked,
            "faults": r.faults,
            "valid": r.verdict.is_valid(),
        })).collect::<Vec<_>>(),
    })
}

fn fault_list(faults: &BTreeMap<String, u64>) -> String {
    if faults.is_empty() {
        return "none".to_owned();
    }
    let list: Vec<String> = faults.iter().map(|(k, n)| format!("{k} {n}")).collect();
    list.join(", ")
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

/// A progress bar of `len` runs on stderr, when it is a terminal and `show`.
pub(crate) fn progress_bar(len: u64, unit: &str, show: bool) -> indicatif::ProgressBar {
    if !(show && std::io::stderr().is_terminal()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {{pos}}/{{len}} {unit} [{{bar:30}}] {{per_sec}} {{eta}} left"
        ))
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar
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
    let plan = args.common.plan()?;
    let planted = args.common.planted()?;
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let bar = progress_bar(seeds.end - seeds.start, "seeds", !args.common.json);
    let wall = std::time::Instant::now();
    let found = explore(
        &registry.run(&w).faults(&plan).planted(planted),
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
        let case = Case::record(registry, &failure.workload, &plan, planted)?;
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
    let report = case.replay(registry)?;
    // A run that panicked has no hash: it replays if it panics again.
    let found = report.hash.unwrap_or(PANICKED);
    let same = found == case.sim.hash;
    let style = Style::stdout();
    if args.json {
        println!(
            "{}",
            report_json(
                &report,
                serde_json::json!({"recorded_hash": format!("{:#018x}", case.sim.hash), "replayed": same})
            )
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
