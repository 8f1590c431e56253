//! `avout report barge`: Mvcc's BARGE-WAIT swept against contention.

use std::path::PathBuf;
use std::time::Duration;

use avout::stm::{Protocol, StmConfig};

use super::workload::Mix;
use super::{Measured, Pick, Point, ReportError, SweepArgs, metrics as m, render};

const WAITS_MS: [u64; 5] = [0, 1, 10, 100, 1000];

/// A contention level.
struct Level {
    name: &'static str,
    what: &'static str,
    clients: usize,
    refs: usize,
}

const LEVELS: [Level; 2] = [
    Level {
        name: "low: 4 clients, 8 refs",
        what: "4 writers on 8 refs",
        clients: 4,
        refs: 8,
    },
    Level {
        name: "high: 8 clients, 2 refs",
        what: "8 writers on 2 refs",
        clients: 8,
        refs: 2,
    },
];

/// The series of long transactions beside short ones.
const LONG: &str = "long beside short: 1 + 4 clients, 2 refs";
/// Its long transaction's pause after each of its two writes, and its retry limit.
const LONG_GAP_MS: u64 = 20;
const LONG_RETRY_LIMIT: u32 = 20;

fn config(wait_ms: u64, retry_limit: u32) -> StmConfig {
    StmConfig {
        barge_wait: Duration::from_millis(wait_ms),
        retry_limit,
        ..StmConfig::with_protocol(Protocol::Mvcc)
    }
}

fn mix(wait_ms: u64, level: &Level, window: Duration) -> Mix {
    Mix::new(config(wait_ms, 1000), level.refs, window).writers(
        level.clients,
        2,
        Duration::from_millis(5),
    )
}

/// One long writer altering both refs with a pause after each, beside 4 short writers each
/// altering one of them without pausing.
fn long_mix(wait_ms: u64, window: Duration) -> Mix {
    Mix::new(config(wait_ms, LONG_RETRY_LIMIT), 2, window)
        .writers(4, 1, Duration::ZERO)
        .readers(1, 2, Duration::from_millis(LONG_GAP_MS))
        .long_writers()
}

const METRICS: [super::Metric; 9] = [
    m::COMMITS_PER_SEC,
    m::BARGES_PER_SEC,
    m::KILLED_PER_COMMIT,
    m::RETRIES_PER_COMMIT,
    m::MAX_RETRIES,
    m::WRITER_P50,
    m::WRITER_P99,
    m::GAVE_UP,
    m::STALLS,
];

pub(super) fn run(args: &SweepArgs) -> Result<PathBuf, ReportError> {
    let mut points = Vec::new();
    for level in &LEVELS {
        for w in WAITS_MS {
            points.push(Point {
                x: format!("{w} ms"),
                series: level.name.to_owned(),
                mix: mix(w, level, args.window()),
                on_zk: level.clients == 8 && (w == 0 || w == 100),
            });
        }
    }
    for w in WAITS_MS {
        points.push(Point {
            x: format!("{w} ms"),
            series: LONG.to_owned(),
            mix: long_mix(w, args.window()),
            on_zk: false,
        });
    }
    let deployed = super::measure("barge", points, args)?;
    let mut doc = render::Doc::new(
        "barge",
        "BARGE-WAIT: when an older Mvcc transaction should kill a younger one",
        &args.command("barge"),
    );
    doc.para(&format!(
        "Protocol Mvcc, BARGE-WAIT in {{{}}} ms, {} seeds per point, a window of {} ms of \
         virtual time per run; mean over seeds ± 95% confidence interval. In the first two \
         series every transaction alters 2 refs with a 5 ms pause after each (a transaction \
         that holds its place long enough to be barged), at two contention levels: {}; \
         MAX-HISTORY 10, retry limit 1000. The third series looks for starvation: 1 long \
         transaction altering both of 2 refs with a {LONG_GAP_MS} ms pause after each, beside \
         4 short writers each altering one of them without pausing, retry limit \
         {LONG_RETRY_LIMIT} (a transaction that hits it counts as a retry-limit failure: \
         starvation). Signs of livelock: retries per commit growing while throughput falls, \
         and 100 ms windows in which nobody committed.",
        WAITS_MS.map(|v| v.to_string()).join(", "),
        args.seeds,
        args.window_ms,
        LEVELS.iter().map(|l| l.what).collect::<Vec<_>>().join("; "),
    ));
    doc.para(
        "Barges are counted by the transaction that kills (`StmStats::barges`: a younger \
         `RUNNING` transaction moved to `KILLED` by compare-and-set), kills by the victim \
         (`StmStats::killed`: a try whose move to `COMMITTING` is refused because it was \
         killed). A victim that gives its try up for another reason first (a conflict found \
         while tagging) is not counted as killed, so tries killed ≤ barges.",
    );
    super::deployments_para(&mut doc, &deployed);
    let picks = super::sections(&mut doc, &deployed, |doc, d| {
        let (uniform, long): (Vec<&Measured>, Vec<&Measured>) =
            d.measured.iter().partition(|x| x.point.series != LONG);
        let owned = |v: &[&Measured]| -> Vec<Measured> { v.iter().map(|x| (*x).clone()).collect() };
        let (uniform, long) = (owned(&uniform), owned(&long));
        doc.table(&super::table(&uniform, &METRICS));
        for (metric, slug, title) in [
            (m::COMMITS_PER_SEC, "commits", "Commits per virtual second"),
            (m::BARGES_PER_SEC, "barges", "Barges per virtual second"),
            (m::RETRIES_PER_COMMIT, "retries", "Retries per commit"),
            (
                m::MAX_RETRIES,
                "max-retries",
                "Most retries of one transaction",
            ),
            (m::WRITER_P99, "p99", "p99 latency (ms)"),
        ] {
            super::plot(
                doc,
                d,
                &uniform,
                (metric, slug, title),
                "BARGE-WAIT",
                super::render::Shape::Lines,
            )?;
        }
        doc.subheading("Long transactions beside short ones");
        doc.table(&super::table(
            &long,
            &[
                m::LONG_COMMITS_PER_SEC,
                m::LONG_MAX_RETRIES,
                m::LONG_GAVE_UP,
                m::WRITER_COMMITS_PER_SEC,
                m::BARGES_PER_SEC,
                m::READER_P99,
                m::STALLS,
            ],
        ));
        super::plot(
            doc,
            d,
            &long,
            (
                m::LONG_COMMITS_PER_SEC,
                "long-commits",
                "Long transactions committed per virtual second",
            ),
            "BARGE-WAIT",
            super::render::Shape::Lines,
        )?;
        let (mut notes, mut p) = findings(&uniform);
        let (long_notes, long_pick) = long_findings(&long);
        notes.extend(long_notes);
        p.push(long_pick);
        Ok((notes, p))
    })?;
    if !args.no_model {
        super::barge_model::section(&mut doc);
    }
    super::conclude(
        doc,
        args,
        "barge",
        &deployed,
        &picks,
        &[
            m::COMMITS_PER_SEC,
            m::BARGES_PER_SEC,
            m::RETRIES_PER_COMMIT,
            m::MAX_RETRIES,
            m::WRITER_P99,
        ],
        "",
    )
}

/// Whether the long transactions starve, and at which waits.
fn long_findings(long: &[Measured]) -> (Vec<String>, Pick) {
    let commits = m::LONG_COMMITS_PER_SEC.over(long);
    let gave = m::LONG_GAVE_UP.over(long);
    let starved: Vec<&str> = long
        .iter()
        .zip(&gave)
        .filter(|(_, g)| g.mean > 0.0)
        .map(|(x, _)| x.point.x.as_str())
        .collect();
    let best = (0..long.len())
        .max_by(|a, b| commits[*a].mean.total_cmp(&commits[*b].mean))
        .expect("points");
    let note = format!(
        "Long transactions: {:.2}–{:.2} commit per second across the waits (best at {}); \
         retry-limit failures (starvation at limit {LONG_RETRY_LIMIT}) {} — {}.",
        commits.iter().map(|e| e.mean).fold(f64::MAX, f64::min),
        commits.iter().map(|e| e.mean).fold(0.0, f64::max),
        long[best].point.x,
        if starved.is_empty() {
            "at no wait".to_owned()
        } else {
            format!("at {}", starved.join(", "))
        },
        gave.iter()
            .zip(long)
            .map(|(g, x)| format!("{} {:.1}/run", x.point.x, g.mean))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let answer = if starved.len() == long.len() {
        "starve at every wait".to_owned()
    } else if starved.is_empty() {
        "commit at every wait".to_owned()
    } else {
        format!("starve at {}", starved.join(", "))
    };
    (
        vec![note],
        Pick::new("Long transactions beside short writers", answer),
    )
}

fn findings(measured: &[Measured]) -> (Vec<String>, Vec<Pick>) {
    let mut out = Vec::new();
    let mut picks = Vec::new();
    for level in &LEVELS {
        let rows: Vec<&Measured> = measured
            .iter()
            .filter(|x| x.point.series == level.name)
            .collect();
        let tput: Vec<_> = rows
            .iter()
            .map(|r| m::COMMITS_PER_SEC.estimate(&r.sim))
            .collect();
        let p99: Vec<_> = rows
            .iter()
            .map(|r| m::WRITER_P99.estimate(&r.sim))
            .collect();
        let maxr: Vec<_> = rows
            .iter()
            .map(|r| m::MAX_RETRIES.estimate(&r.sim))
            .collect();
        let barges: Vec<_> = rows
            .iter()
            .map(|r| m::BARGES_PER_SEC.estimate(&r.sim))
            .collect();
        let stalls: Vec<_> = rows.iter().map(|r| m::STALLS.estimate(&r.sim)).collect();
        let gave: Vec<_> = rows.iter().map(|r| m::GAVE_UP.estimate(&r.sim)).collect();
        let best = (0..rows.len())
            .max_by(|a, b| tput[*a].mean.total_cmp(&tput[*b].mean))
            .expect("points");
        // Among the waits not significantly slower than the best, the one with the lowest p99.
        let pick = (0..rows.len())
            .filter(|i| tput[*i].overlaps(&tput[best]))
            .min_by(|a, b| p99[*a].mean.total_cmp(&p99[*b].mean))
            .expect("the best itself");
        let worst = (0..rows.len())
            .min_by(|a, b| tput[*a].mean.total_cmp(&tput[*b].mean))
            .expect("points");
        out.push(format!(
            "{}: throughput is highest at BARGE-WAIT {} ({:.1} commits/s) and lowest at {} \
             ({:.1}/s); barges per second go from {:.1} at {} to {:.1} at {}; the most retries \
             of one transaction range over {:.1}–{:.1}, p99 over {:.1}–{:.1} ms; {} retry-limit \
             failures and {} stalled 100 ms windows in all.",
            level.name,
            rows[best].point.x,
            tput[best].mean,
            rows[worst].point.x,
            tput[worst].mean,
            barges[0].mean,
            rows[0].point.x,
            barges[rows.len() - 1].mean,
            rows[rows.len() - 1].point.x,
            maxr.iter().map(|e| e.mean).fold(f64::MAX, f64::min),
            maxr.iter().map(|e| e.mean).fold(0.0, f64::max),
            p99.iter().map(|e| e.mean).fold(f64::MAX, f64::min),
            p99.iter().map(|e| e.mean).fold(0.0, f64::max),
            gave.iter()
                .map(|e| e.mean * e.n as f64)
                .sum::<f64>()
                .round(),
            stalls
                .iter()
                .map(|e| e.mean * e.n as f64)
                .sum::<f64>()
                .round(),
        ));
        picks.push(rows[pick].point.x.clone());
    }
    out.extend(super::identical_runs(measured, "BARGE-WAIT"));
    let signs: Vec<String> = measured
        .iter()
        .filter_map(|x| {
            let (s, g) = (
                m::STALLS.estimate(&x.sim).mean,
                m::GAVE_UP.estimate(&x.sim).mean,
            );
            (s > 0.0 || g > 0.0).then(|| {
                format!(
                    "{} at {} ({s:.1} stalled windows, {g:.1} retry-limit failures per run)",
                    x.point.series, x.point.x
                )
            })
        })
        .collect();
    out.push(if signs.is_empty() {
        "No sign of livelock at any setting: every 100 ms window of every run saw a commit, and \
         no transaction hit the retry limit."
            .to_owned()
    } else {
        format!(
            "Stalls (100 ms with no commit by anyone) or starvation (retry-limit failures): {}.",
            signs.join("; ")
        )
    });
    out.push(format!(
        "Recommended BARGE-WAIT (the setting not significantly slower than the best with the \
         lowest p99): {} at low contention, {} at high contention.",
        picks[0], picks[1]
    ));
    let picks = vec![
        Pick::new("BARGE-WAIT at low contention", picks[0].clone()),
        Pick::new("BARGE-WAIT at high contention", picks[1].clone()),
    ];
    (out, picks)
}
