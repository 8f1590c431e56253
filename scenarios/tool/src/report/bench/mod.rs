//! `avout report bench`: avout's benchmarks beside the Curator and kazoo peers
//! (`../shared/peers`) against one throwaway standalone ZooKeeper, in one run, as a table of
//! ratios (`reports/bench.md`).
//!
//! The approach of `reports/bench-locks.sh`: rounds in which every workload runs for every
//! peer in an order that rotates per round, so the per-round ratios compare neighbours in
//! time; the table gives medians over rounds. Beside the recipe workloads it runs
//! `avout bench ops` (avout against a raw `zookeeper-client` loop) and the STM workloads
//! `stm-alter` and `stm-transfer` under both protocols, and `avout bench sim` on one simulated
//! server and on the simulated ensemble (simulated operations per CPU-second; with
//! `--sim-baseline BIN`, the same runs of another build beside it, round by round). These are
//! wall-clock figures: the report says when and under what load they were taken, and is not
//! reproducible bit for bit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{ReportError, render};

/// Options of `avout report bench`.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// Rounds (every workload for every peer once per round).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Operations per figure (`--n` of every benchmark).
    #[arg(long, default_value_t = 500)]
    n: u64,
    /// Clients of the contended workloads.
    #[arg(long, default_value_t = 4)]
    clients: u32,
    /// Further client counts at which `lock-contended` runs for every peer (issue 40 sets
    /// its target at 4, 8, 16 and 32); a count equal to `--clients` runs once.
    #[arg(long, value_delimiter = ',', default_values_t = [8u32, 16, 32])]
    more_clients: Vec<u32>,
    /// The port of the throwaway server.
    #[arg(long, default_value_t = 24291)]
    port: u16,
    /// The peers' directory (Peers.java, peers_kazoo.py, zk-standalone.sh).
    #[arg(long, default_value = "../shared/peers")]
    peers: PathBuf,
    /// Directory the report is written to.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Seeds per `avout bench sim` figure.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    sim_runs: u64,
    /// Another build of `avout` (e.g. of an earlier commit) whose `bench sim` runs beside this
    /// one's in every round: the simulator's speed is quoted as a ratio to it.
    #[arg(long)]
    sim_baseline: Option<PathBuf>,
}

const RECIPES: [&str; 5] = [
    "lock-cycle",
    "lock-contended",
    "rwlock-read",
    "counter",
    "counter-contended",
];

fn fail(what: impl std::fmt::Display) -> ReportError {
    ReportError::Bench(what.to_string())
}

/// Runs a command and returns its stdout; a failure names the command and its stderr.
fn output(cmd: &mut Command) -> Result<String, ReportError> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| fail(format!("{shown}: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!(
            "{shown} exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The server, stopped when dropped.
struct Server {
    script: PathBuf,
    port: u16,
    connect: String,
}

impl Server {
    fn start(peers: &Path, port: u16) -> Result<Server, ReportError> {
        let script = peers.join("zk-standalone.sh");
        let out = output(Command::new(&script).args(["start", &port.to_string()]))?;
        let connect = out
            .lines()
            .last()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| fail("zk-standalone.sh printed no connect string"))?
            .to_owned();
        Ok(Server {
            script,
            port,
            connect,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Best effort on the way out: a server left running would be reported by the script
        // on the next start (it refuses a busy port).
        let _ = Command::new(&self.script)
            .args(["stop", &self.port.to_string()])
            .output();
    }
}

/// One JSON line of a benchmark, with its round.
#[derive(Clone, Debug)]
struct Line {
    peer: String,
    workload: String,
    variant: String,
    clients: u64,
    round: u32,
    ops_per_sec: f64,
    /// `bench sim`'s schedule hash: two builds with the same one simulated the same runs.
    schedule: String,
}

fn parse(stdout: &str, round: u32) -> Result<Vec<Line>, ReportError> {
    let mut v = Vec::new();
    for l in stdout.lines().filter(|l| l.trim_start().starts_with('{')) {
        let j: serde_json::Value =
            serde_json::from_str(l).map_err(|e| fail(format!("bad JSON line {l:?}: {e}")))?;
        let s = |k: &str| j.get(k).and_then(|x| x.as_str()).unwrap_or("").to_owned();
        v.push(Line {
            peer: s("peer"),
            workload: s("workload"),
            variant: s("protocol"),
            clients: j.get("clients").and_then(|x| x.as_u64()).unwrap_or(1),
            round,
            ops_per_sec: j.get("ops_per_sec").and_then(|x| x.as_f64()).unwrap_or(0.0),
            schedule: String::new(),
        });
    }
    Ok(v)
}

/// `avout bench sim --json`'s line as a figure of `peer` (this build, or the baseline):
/// simulated operations per CPU-second (per wall-clock second where the CPU time is not
/// known), workload `sim` or `sim-ensemble`.
fn parse_sim(stdout: &str, round: u32, peer: &str) -> Result<Vec<Line>, ReportError> {
    let mut v = parse(stdout, round)?;
    for (line, text) in v
        .iter_mut()
        .zip(stdout.lines().filter(|l| l.trim_start().starts_with('{')))
    {
        let j: serde_json::Value = serde_json::from_str(text).map_err(|e| fail(e.to_string()))?;
        line.peer = peer.to_owned();
        if j.get("servers").and_then(|x| x.as_u64()) == Some(3) {
            line.workload = "sim-ensemble".into();
        }
        if let Some(cpu) = j.get("ops_per_cpu_sec").and_then(|x| x.as_f64()) {
            line.ops_per_sec = cpu;
        }
        line.schedule = j
            .get("schedule_hash")
            .and_then(|x| x.as_str())
            .unwrap_or("")
            .to_owned();
    }
    Ok(v)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

pub(super) fn run(args: &BenchArgs) -> Result<PathBuf, ReportError> {
    let avout = std::env::current_exe().map_err(|e| fail(format!("own path: {e}")))?;
    let build = std::env::temp_dir().join(format!("avout-report-bench-{}", std::process::id()));
    std::fs::create_dir_all(&build).map_err(|e| fail(format!("{}: {e}", build.display())))?;
    let jars = "/usr/share/java";
    let cp = format!(
        "{jars}/curator-client.jar:{jars}/curator-framework.jar:{jars}/curator-recipes.jar"
    );
    output(
        Command::new("javac")
            .args(["-Xlint:-path", "-d"])
            .arg(&build)
            .args(["-cp", &cp])
            .arg(args.peers.join("Peers.java")),
    )?;
    let server = Server::start(&args.peers, args.port)?;
    let connect = server.connect.clone();
    let (n, clients) = (args.n.to_string(), args.clients.to_string());
    let run_cp = format!(
        "{jars}/curator-recipes.jar:{jars}/slf4j-nop.jar:{}",
        build.display()
    );
    let peer_cmd = |peer: &str, w: &str, clients: &str| -> Command {
        let mut sizes = Vec::new();
        if w.ends_with("-contended") {
            sizes.push(clients.to_owned());
        }
        sizes.push(n.clone());
        match peer {
            "curator" => {
                let mut c = Command::new("java");
                c.args(["-cp", &run_cp, "Peers", w, &connect]).args(&sizes);
                c
            }
            "kazoo" => {
                let mut c = Command::new("/usr/bin/python3");
                c.arg(args.peers.join("peers_kazoo.py"))
                    .args([w, &connect])
                    .args(&sizes);
                c
            }
            _ => {
                let mut c = Command::new(&avout);
                c.args(["bench", w, "--zk", &connect, "--n", &n]);
                if w.ends_with("-contended") {
                    c.args(["--clients", clients]);
                }
                c
            }
        }
    };
    let started = wall_stamp();
    // Warm the server's JIT; the result is discarded, as in bench-locks.sh.
    output(&mut peer_cmd("kazoo", "lock-cycle", &clients))?;
    let orders = [
        ["curator", "kazoo", "avout"],
        ["avout", "curator", "kazoo"],
        ["kazoo", "avout", "curator"],
    ];
    let mut lines = Vec::new();
    let mut loads = Vec::new();
    for round in 1..=args.rounds {
        loads.push(load());
        eprintln!("report bench: round {round}/{}", args.rounds);
        let runs = RECIPES
            .iter()
            .map(|w| (*w, args.clients))
            .chain(more_contended(args).map(|k| ("lock-contended", k)));
        for (w, k) in runs {
            for peer in orders[(round as usize - 1) % 3] {
                let out = output(&mut peer_cmd(peer, w, &k.to_string()))?;
                lines.extend(parse(&out, round)?);
            }
        }
        lines.extend(parse(
            &output(
                Command::new(&avout).args(["bench", "ops", "--json", "--zk", &connect, "--n", &n]),
            )?,
            round,
        )?);
        // The contended STM workloads, then one client altering one ref: the figure issue 6
        // sets against the sequential set_data rate of `bench ops`.
        let mut stm = vec![
            ("stm-alter", clients.as_str()),
            ("stm-transfer", clients.as_str()),
        ];
        if args.clients != 1 {
            stm.push(("stm-alter", "1"));
        }
        for (w, k) in stm {
            for protocol in ["optimistic", "mvcc"] {
                let out = output(Command::new(&avout).args([
                    "bench",
                    w,
                    "--zk",
                    &connect,
                    "--n",
                    &n,
                    "--clients",
                    k,
                    "--protocol",
                    protocol,
                ]))?;
                lines.extend(parse(&out, round)?);
            }
        }
        // The simulator needs no server: this build's runs and the baseline's, in turn.
        let runs = args.sim_runs.to_string();
        let builds = std::iter::once((avout.as_path(), "avout"))
            .chain(args.sim_baseline.as_deref().map(|b| (b, "baseline")));
        for (bin, peer) in builds {
            for servers in [&[][..], &["--ensemble"][..]] {
                let out = output(
                    Command::new(bin)
                        .args(["bench", "sim", "--json", "--runs", &runs])
                        .args(servers),
                )?;
                lines.extend(parse_sim(&out, round, peer)?);
            }
        }
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&build);
    write(args, &lines, &started, &loads)
}

/// The client counts of `--more-clients` not already run as `--clients`, once each.
fn more_contended(args: &BenchArgs) -> impl Iterator<Item = u32> + '_ {
    let mut seen = std::collections::BTreeSet::from([args.clients]);
    args.more_clients
        .iter()
        .copied()
        .filter(move |k| seen.insert(*k))
}

fn counts(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The date and time, for the report's header (these figures are wall-clock ones).
fn wall_stamp() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().next().unwrap_or("?").to_owned())
        .unwrap_or_else(|_| "?".into())
}

fn write(
    args: &BenchArgs,
    lines: &[Line],
    started: &str,
    loads: &[String],
) -> Result<PathBuf, ReportError> {
    render(args, lines, started, loads).write(&args.out)
}

/// One figure of a run: a workload of a peer, under a protocol (`""` for none), from a number
/// of clients (`None`: whatever the workload's only figure used).
#[derive(Clone, Copy)]
struct Fig<'a> {
    workload: &'a str,
    peer: &'a str,
    variant: &'a str,
    clients: Option<u64>,
}

fn fig<'a>(workload: &'a str, peer: &'a str) -> Fig<'a> {
    Fig {
        workload,
        peer,
        variant: "",
        clients: None,
    }
}

fn stm<'a>(workload: &'a str, protocol: &'a str, clients: u64) -> Fig<'a> {
    Fig {
        workload,
        peer: "avout",
        variant: protocol,
        clients: Some(clients),
    }
}

/// The recipe figures of a run, one row each: a label, the workload and its client count
/// (`None` for the one-client workloads). `lock-contended` has a row per client count.
fn recipe_rows(args: &BenchArgs) -> Vec<(String, &'static str, Option<u64>)> {
    let contended = |w: &'static str, k: u32| (format!("{w}, {k} clients"), w, Some(u64::from(k)));
    let mut rows = Vec::new();
    for w in RECIPES {
        if !w.ends_with("-contended") {
            rows.push((w.to_owned(), w, None));
            continue;
        }
        rows.push(contended(w, args.clients));
        if w == "lock-contended" {
            rows.extend(more_contended(args).map(|k| contended(w, k)));
        }
    }
    rows
}

fn at<'a>(workload: &'a str, peer: &'a str, clients: Option<u64>) -> Fig<'a> {
    Fig {
        clients,
        ..fig(workload, peer)
    }
}

/// A speed target an issue sets, as a ratio of two figures taken in the same round.
struct Target<'a> {
    what: String,
    issue: u32,
    num: Fig<'a>,
    den: Fig<'a>,
    at_least: f64,
}

impl Target<'_> {
    fn verdict(&self, median: f64) -> &'static str {
        match median {
            m if m.is_nan() => "not measured",
            m if m >= self.at_least => "met",
            _ => "missed",
        }
    }
}

fn render(args: &BenchArgs, lines: &[Line], started: &str, loads: &[String]) -> render::Doc {
    let rounds: Vec<u32> = (1..=args.rounds).collect();
    let rate = |f: Fig<'_>, r: u32| {
        lines
            .iter()
            .find(|l| {
                l.workload == f.workload
                    && l.peer == f.peer
                    && l.variant == f.variant
                    && f.clients.is_none_or(|c| l.clients == c)
                    && l.round == r
            })
            .map(|l| l.ops_per_sec)
    };
    let per_round = |a: Fig<'_>, b: Fig<'_>| -> Vec<f64> {
        rounds
            .iter()
            .filter_map(|r| Some(rate(a, *r)? / rate(b, *r)?))
            .collect()
    };
    let med = |f: Fig<'_>| median(rounds.iter().filter_map(|r| rate(f, *r)).collect());
    let fmt_ratios = |v: &[f64]| {
        format!(
            "{} (median **{:.2}×**)",
            v.iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(" "),
            median(v.to_vec())
        )
    };
    let mut doc = render::Doc::measured(
        "bench",
        "Benchmarks: avout beside Curator and kazoo, one server, one run",
        &format!(
            "avout report bench --rounds {} --n {} --clients {} --more-clients {}",
            args.rounds,
            args.n,
            args.clients,
            counts(&args.more_clients)
        ),
    );
    doc.para(&format!(
        "Taken {started}, load average at the start of each round {}. One throwaway \
         standalone ZooKeeper (`{}/zk-standalone.sh`, port {}, fsync on), N={} operations per \
         figure, {} clients for the contended workloads{}, {} rounds in rotating peer order (the \
         approach of `reports/bench-locks.sh`). Needs the release build (`cargo build \
         --release -p avout-cli`, then `target/release/avout report bench`), Debian's \
         zookeeper, python3-kazoo and libcurator-*-java. Ratios are per round (neighbours in \
         time), then their median.",
        loads.join(", "),
        args.peers.display(),
        args.port,
        args.n,
        args.clients,
        match counts(&more_contended(args).collect::<Vec<_>>()) {
            more if more.is_empty() => more,
            more => format!(" (lock-contended also at {more})"),
        },
        args.rounds
    ));
    doc.heading("Targets");
    let rows = recipe_rows(args);
    // Issue 40's lock targets: lock-cycle, every contended client count, rwlock-read.
    let lock_target = |(what, w, k): &(String, &'static str, Option<u64>), at_least: f64| Target {
        what: format!("{what} ≥ {at_least}× Curator"),
        issue: 40,
        num: at(w, "avout", *k),
        den: at(w, "curator", *k),
        at_least,
    };
    let mut targets: Vec<Target<'_>> = rows
        .iter()
        .filter_map(|row| match row.1 {
            "lock-cycle" => Some(lock_target(row, 2.5)),
            "lock-contended" | "rwlock-read" => Some(lock_target(row, 2.0)),
            _ => None,
        })
        .collect();
    targets.extend([
        Target {
            what: "stm-alter, Optimistic, 1 client ≥ 0.5× set-seq".into(),
            issue: 6,
            num: stm("stm-alter", "optimistic", 1),
            den: fig("set-seq", "avout"),
            at_least: 0.5,
        },
        Target {
            what: "stm-alter, Mvcc, 1 client ≥ 0.2× set-seq".into(),
            issue: 6,
            num: stm("stm-alter", "mvcc", 1),
            den: fig("set-seq", "avout"),
            at_least: 0.2,
        },
        Target {
            what: "stm-alter, Mvcc, 1 client ≥ 0.33× set-seq".into(),
            issue: 40,
            num: stm("stm-alter", "mvcc", 1),
            den: fig("set-seq", "avout"),
            at_least: 0.33,
        },
        Target {
            what: format!(
                "stm-alter, Mvcc, {} clients ≥ 0.3× Optimistic",
                args.clients
            ),
            issue: 40,
            num: stm("stm-alter", "mvcc", u64::from(args.clients)),
            den: stm("stm-alter", "optimistic", u64::from(args.clients)),
            at_least: 0.3,
        },
        Target {
            what: "simulator, the ensemble ≥ 0.9× one server".into(),
            issue: 40,
            num: fig("sim-ensemble", "avout"),
            den: fig("sim", "avout"),
            at_least: 0.9,
        },
    ]);
    if args.sim_baseline.is_some() {
        targets.push(Target {
            what: "simulator, one server ≥ 1.6× the baseline build".into(),
            issue: 40,
            num: fig("sim", "avout"),
            den: fig("sim", "baseline"),
            at_least: 1.6,
        });
    }
    let mut t = render::Table::new(["target", "issue", "per round", "verdict"]);
    for target in &targets {
        let v = per_round(target.num, target.den);
        let verdict = target.verdict(median(v.clone()));
        t.row(vec![
            target.what.clone(),
            format!("#{}", target.issue),
            fmt_ratios(&v),
            if verdict == "missed" {
                "**missed**".to_owned()
            } else {
                verdict.to_owned()
            },
        ]);
    }
    doc.table(&t);
    doc.heading("Recipes: avout against Curator and kazoo");
    let mut t = render::Table::new([
        "workload",
        "avout ops/s",
        "Curator ops/s",
        "kazoo ops/s",
        "avout/Curator per round",
        "avout/kazoo per round",
    ]);
    for (what, w, k) in &rows {
        t.row(vec![
            what.clone(),
            format!("{:.1}", med(at(w, "avout", *k))),
            format!("{:.1}", med(at(w, "curator", *k))),
            format!("{:.1}", med(at(w, "kazoo", *k))),
            fmt_ratios(&per_round(at(w, "avout", *k), at(w, "curator", *k))),
            fmt_ratios(&per_round(at(w, "avout", *k), at(w, "kazoo", *k))),
        ]);
    }
    doc.table(&t);
    doc.heading("Single operations: avout against the raw client");
    let mut ops: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in lines.iter().filter(|l| {
        l.peer != "avout"
            && !RECIPES.contains(&l.workload.as_str())
            && l.variant.is_empty()
            && !l.workload.starts_with("sim")
    }) {
        let peers = ops.entry(l.workload.clone()).or_default();
        if !peers.contains(&l.peer) {
            peers.push(l.peer.clone());
        }
    }
    let mut t = render::Table::new([
        "operation",
        "avout ops/s",
        "raw ops/s",
        "avout/raw per round",
    ]);
    for (w, peers) in &ops {
        for p in peers {
            t.row(vec![
                format!("{w} (vs {p})"),
                format!("{:.1}", med(fig(w, "avout"))),
                format!("{:.1}", med(fig(w, p))),
                fmt_ratios(&per_round(fig(w, "avout"), fig(w, p))),
            ]);
        }
    }
    doc.table(&t);
    doc.heading("STM: the two protocols, and against the atomic counter");
    let mut t = render::Table::new([
        "workload",
        "optimistic ops/s",
        "mvcc ops/s",
        "mvcc/optimistic per round",
        "optimistic / avout counter-contended per round",
    ]);
    let counter = fig("counter-contended", "avout");
    for (w, k) in [
        ("stm-alter", 1),
        ("stm-alter", u64::from(args.clients)),
        ("stm-transfer", u64::from(args.clients)),
    ] {
        if k == 1 && w == "stm-alter" && args.clients == 1 {
            continue; // the next row is the same figure
        }
        t.row(vec![
            format!("{w} ({k} client{})", if k == 1 { "" } else { "s" }),
            format!("{:.1}", med(stm(w, "optimistic", k))),
            format!("{:.1}", med(stm(w, "mvcc", k))),
            fmt_ratios(&per_round(stm(w, "mvcc", k), stm(w, "optimistic", k))),
            fmt_ratios(&per_round(stm(w, "optimistic", k), counter)),
        ]);
    }
    doc.table(&t);
    sim_table(&mut doc, args, lines, &med, &per_round, &fmt_ratios);
    doc.heading("Findings");
    let mut f = Vec::new();
    for target in &targets {
        let m = median(per_round(target.num, target.den));
        f.push(format!(
            "{} (issue {}): median {m:.2}×, {}.",
            target.what,
            target.issue,
            target.verdict(m)
        ));
    }
    for (what, w, k) in &rows {
        let c = median(per_round(at(w, "avout", *k), at(w, "curator", *k)));
        let z = median(per_round(at(w, "avout", *k), at(w, "kazoo", *k)));
        f.push(format!(
            "{what}: avout {c:.2}× Curator, {z:.2}× kazoo (medians of per-round ratios)."
        ));
    }
    let k = u64::from(args.clients);
    for w in ["stm-alter", "stm-transfer"] {
        let r = median(per_round(stm(w, "mvcc", k), stm(w, "optimistic", k)));
        f.push(format!(
            "{w} ({k} clients): Mvcc runs at {r:.2}× Optimistic's rate on a real server ({}).",
            if r < 1.0 {
                "Optimistic stays the better default"
            } else {
                "Mvcc is not slower here"
            }
        ));
    }
    doc.bullets(&f);
    doc
}

#[cfg(test)]
mod tests;

/// The simulator's figures: this build's (and the baseline's) simulated operations per
/// CPU-second on one server and on the ensemble, and whether the two builds simulated the
/// same runs (their schedule hashes agree: a like-for-like speed).
fn sim_table(
    doc: &mut render::Doc,
    args: &BenchArgs,
    lines: &[Line],
    med: &dyn Fn(Fig<'_>) -> f64,
    per_round: &dyn Fn(Fig<'_>, Fig<'_>) -> Vec<f64>,
    fmt_ratios: &dyn Fn(&[f64]) -> String,
) {
    doc.heading("Simulator: simulated operations per CPU-second");
    let baseline = args.sim_baseline.is_some();
    let mut head = vec!["servers", "this build", "ensemble/one server per round"];
    if baseline {
        head.extend(["baseline", "this/baseline per round", "same schedules"]);
    }
    let mut t = render::Table::new(head);
    for (what, w) in [("one", "sim"), ("three (ensemble)", "sim-ensemble")] {
        let mut row = vec![
            what.to_owned(),
            format!("{:.0}", med(fig(w, "avout"))),
            match w {
                "sim" => String::new(),
                _ => fmt_ratios(&per_round(fig(w, "avout"), fig("sim", "avout"))),
            },
        ];
        if baseline {
            let hashes = |peer: &str| -> Vec<&str> {
                lines
                    .iter()
                    .filter(|l| l.workload == w && l.peer == peer)
                    .map(|l| l.schedule.as_str())
                    .collect()
            };
            row.extend([
                format!("{:.0}", med(fig(w, "baseline"))),
                fmt_ratios(&per_round(fig(w, "avout"), fig(w, "baseline"))),
                if hashes("avout") == hashes("baseline") {
                    "yes"
                } else {
                    "**no**"
                }
                .to_owned(),
            ]);
        }
        t.row(row);
    }
    doc.table(&t);
    doc.para(&format!(
        "`avout bench sim --runs {}` (16 clients, every fault kind at the default rates), with \
         `--ensemble` for three servers; CPU time of the simulating thread.{}",
        args.sim_runs,
        match &args.sim_baseline {
            Some(b) => format!(" Baseline: `{}`.", b.display()),
            None => String::new(),
        }
    ));
}
