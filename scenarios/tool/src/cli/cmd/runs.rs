//! What the scenario commands (`run`, `explore`, `replay`, `shrink`, `soak`) share: a workload
//! and its faults from the command line, their error, a report printed, case files written
//! with their timeline pages.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::view::{Page, page_path};
use avout::planted::Bug;
use avout_scenarios::scenario::case::{Case, CaseError};
use avout_scenarios::scenario::shrink::ShrinkError;
use avout_scenarios::scenario::{
    FaultPlan, Faults, MAX_LATENCY_MS, Protocol, Registry, Report, RunError, Swarm, Workload,
};
use avout_sim_zk::FaultKind;

use super::chaos;

/// Options shared by `run` and `explore`: what runs, and under which faults.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkloadArgs {
    /// The scenario: counter, lin-kv, mutex, rwlock, election, queue, barrier, bank,
    /// list-append, lock-table, two-phase-commit, sessions, agents, cache, semaphore,
    /// double-barrier, latch, work-queue or rw-register.
    scenario: String,
    /// Concurrent clients (default: the scenario's).
    #[arg(long)]
    clients: Option<usize>,
    /// Operations per client (default: the scenario's).
    #[arg(long)]
    ops: Option<usize>,
    /// Fault kinds on the simulator, comma-separated: request-lost, reply-lost, disconnect,
    /// session-expiry, pause, stale-reads, outage, and the ensemble's partition,
    /// leader-election, session-moved, client-freeze, slow-disk, leader-lag; or `all` (the
    /// default: the first seven), `every` (all thirteen) or `none`.
    #[arg(long, value_name = "LIST")]
    faults: Option<String>,
    /// The chance that a request draws some fault (split over the kinds as in the chaos mix).
    #[arg(long, value_name = "R")]
    fault_rate: Option<f64>,
    /// Swarm testing: each seed draws which of the --faults kinds are on, and their rates
    /// from wide ranges (the case file records the mix, so it replays as it ran).
    #[arg(long, conflicts_with = "fault_rate")]
    swarm: bool,
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
    /// A fixed one-way network latency on the simulator, in milliseconds (at most 500): a
    /// distant ensemble, whose round trips outlast the protocols' short waits.
    #[arg(long, value_name = "MS")]
    latency_ms: Option<u64>,
    /// Switch on a planted bug (needs a build with `--features planted-bugs`):
    /// lock-no-guid-recovery, atom-unchecked-write, stm-no-read-point-check,
    /// stm-barge-committing, stm-session-loss-retried, lock-handoff-without-recheck; avout's
    /// own fixed mvcc-lock-wait-from-first-request; or one of the museum's (reports/museum.md):
    /// kazoo-649, curator-621, kazoo-732, curator-335, curator-462, curator-gh-1290,
    /// zookeeper-1011, curator-358, curator-16, curator-202, curator-623, curator-476,
    /// curator-311.
    #[arg(long, value_name = "BUG")]
    planted: Option<String>,
    /// Where histories and case files go.
    #[arg(long, default_value = "avout-runs", value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

impl WorkloadArgs {
    pub(crate) fn workload(&self, registry: &Registry, seed: u64) -> Result<Workload, RunCmdError> {
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
        if let Some(ms) = self.latency_ms {
            w.latency_ms = Some(check_latency(ms).map_err(RunCmdError::Usage)?);
        }
        Ok(w)
    }

    /// The faults: a fixed plan, or with `--swarm` each seed's own mix of the kinds.
    pub(crate) fn faults(&self) -> Result<Faults, RunCmdError> {
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
        Ok(if self.swarm {
            Faults::Swarm(Swarm::of(&kinds))
        } else {
            Faults::Plan(FaultPlan::kinds(&kinds, self.fault_rate))
        })
    }

    pub(crate) fn planted(&self) -> Result<Option<Bug>, RunCmdError> {
        self.planted
            .as_deref()
            .map(|s| s.parse::<Bug>())
            .transpose()
            .map_err(|e| RunCmdError::Usage(e.to_string()))
    }
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
    /// A signal ended a real run early (its rounds so far already reported).
    #[error("the run was ended by {}", .0.name())]
    Interrupted(chaos::Interrupt),
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

pub(crate) fn parse_duration(s: &str) -> Result<Duration, RunCmdError> {
    super::parse_duration(s).map_err(RunCmdError::Usage)
}

/// A one-way latency the simulator can run: at most [`MAX_LATENCY_MS`].
pub(crate) fn check_latency(ms: u64) -> Result<u64, String> {
    if ms > MAX_LATENCY_MS {
        return Err(format!(
            "--latency-ms {ms} is over {MAX_LATENCY_MS}: the simulated sessions (4 s) would expire"
        ));
    }
    Ok(ms)
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

pub(crate) fn create_dir(dir: &Path) -> Result<(), RunCmdError> {
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

pub(crate) fn report_json(r: &Report, extra: serde_json::Value) -> serde_json::Value {
    let mut v = serde_json::json!({
        "scenario": r.workload.scenario,
        "seed": r.workload.seed,
        "clients": r.workload.clients,
        "ops_per_client": r.workload.ops,
        "ref_store": r.workload.ref_store.name(),
        "value_size": r.workload.value_size,
        "latency_ms": r.workload.latency_ms,
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
    if let Some(ms) = w.latency_ms {
        note += &format!(", {ms} ms one-way latency");
    }
    note
}

pub(crate) fn print_report(r: &Report, backend: &str, style: &Style) {
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

pub(crate) fn fault_list(faults: &BTreeMap<String, u64>) -> String {
    if faults.is_empty() {
        return "none".to_owned();
    }
    let list: Vec<String> = faults.iter().map(|(k, n)| format!("{k} {n}")).collect();
    list.join(", ")
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
