//! `avout report max-history`: Mvcc's MAX-HISTORY swept under long read-only transactions
//! mixed with short writers.

use std::path::PathBuf;
use std::time::Duration;

use avout::stm::{Protocol, StmConfig};

use super::workload::Mix;
use super::{Measured, Pick, Point, ReportError, SweepArgs, metrics as m, render};

const VALUES: [usize; 6] = [1, 2, 4, 8, 16, 32];
/// Pause between a reader's reads: the two reader lengths compared.
const GAPS_MS: [u64; 2] = [10, 40];

fn mix(max_history: usize, gap_ms: u64, window: Duration) -> Mix {
    let config = StmConfig {
        max_history,
        retry_limit: 1000,
        ..StmConfig::with_protocol(Protocol::Mvcc)
    };
    Mix::new(config, 4, window)
        .writers(4, 1, Duration::ZERO)
        .readers(2, 4, Duration::from_millis(gap_ms))
}

fn series_name(gap_ms: u64) -> String {
    format!("readers {gap_ms} ms/read")
}

pub(super) fn run(args: &SweepArgs) -> Result<PathBuf, ReportError> {
    let mut points = Vec::new();
    for gap in GAPS_MS {
        for v in VALUES {
            points.push(Point {
                x: v.to_string(),
                series: series_name(gap),
                mix: mix(v, gap, args.window()),
                on_zk: gap == GAPS_MS[0] && (v == 2 || v == 16),
            });
        }
    }
    let deployed = super::measure("max-history", points, args)?;
    let mut doc = render::Doc::new(
        "max-history",
        "MAX-HISTORY: how many past values Mvcc should keep per ref",
        &args.command("max-history"),
    );
    doc.para(&format!(
        "Protocol Mvcc, MAX-HISTORY in {{{}}}, {} seeds per point, a window of {} ms of virtual \
         time per run; mean over seeds ± 95% confidence interval. Workload: 4 writers each \
         altering 1 of 4 refs per transaction (short writers), beside 2 readers each reading \
         all 4 refs in one read-only transaction with a pause after every read ({} ms per read \
         in one series, {} ms in the other: long readers). A reader reads a snapshot at its \
         read point; once writers have committed more than MAX-HISTORY newer values of a ref, \
         that snapshot's value is gone, the read faults and the reader runs again. BARGE-WAIT \
         10 ms, retry limit 1000. Nodes held: every node under the STM root after the run \
         (refs, their history, locks, points).",
        VALUES.map(|v| v.to_string()).join(", "),
        args.seeds,
        args.window_ms,
        GAPS_MS[0],
        GAPS_MS[1],
    ));
    super::deployments_para(&mut doc, &deployed);
    let picks = super::sections(&mut doc, &deployed, |doc, d| {
        doc.table(&super::table(
            &d.measured,
            &[
                m::COMMITS_PER_SEC,
                m::READER_COMMITS_PER_SEC,
                m::READ_FAULTS_PER_SEC,
                m::RETRIES_PER_COMMIT,
                m::READER_P50,
                m::READER_P99,
                m::WRITER_P50,
                m::WRITER_P99,
                m::NODES,
            ],
        ));
        super::plots(
            doc,
            d,
            "MAX-HISTORY",
            super::render::Shape::Lines,
            &[
                (
                    m::READ_FAULTS_PER_SEC,
                    "read-faults",
                    "Read faults per virtual second",
                ),
                (
                    m::READER_COMMITS_PER_SEC,
                    "reader-commits",
                    "Read-only commits per virtual second",
                ),
                (
                    m::COMMITS_PER_SEC,
                    "commits",
                    "All commits per virtual second",
                ),
                (
                    m::READER_P99,
                    "reader-p99",
                    "Read-only transaction p99 latency (ms)",
                ),
                (m::NODES, "nodes", "ZooKeeper nodes held under the root"),
            ],
        )?;
        Ok(findings(&d.measured))
    })?;
    super::conclude(
        doc,
        args,
        "max-history",
        &deployed,
        &picks,
        &[
            m::COMMITS_PER_SEC,
            m::READER_COMMITS_PER_SEC,
            m::READ_FAULTS_PER_SEC,
            m::READER_P99,
        ],
        "",
    )
}

fn findings(measured: &[Measured]) -> (Vec<String>, Vec<Pick>) {
    let mut out = Vec::new();
    let mut recommended = Vec::new();
    let mut picks = Vec::new();
    for gap in GAPS_MS {
        let name = series_name(gap);
        let rows: Vec<&Measured> = measured.iter().filter(|x| x.point.series == name).collect();
        let faults: Vec<_> = rows
            .iter()
            .map(|r| m::READ_FAULTS_PER_SEC.estimate(&r.sim))
            .collect();
        let reads: Vec<_> = rows
            .iter()
            .map(|r| m::READER_COMMITS_PER_SEC.estimate(&r.sim))
            .collect();
        let nodes: Vec<_> = rows.iter().map(|r| m::NODES.estimate(&r.sim)).collect();
        let best = reads.iter().map(|e| e.mean).fold(0.0f64, f64::max);
        let best_est = reads
            .iter()
            .find(|e| e.mean == best)
            .copied()
            .unwrap_or(reads[0]);
        // The smallest MAX-HISTORY whose reader throughput is not significantly below the best.
        let knee = rows
            .iter()
            .zip(&reads)
            .find(|(_, e)| e.overlaps(&best_est))
            .map(|(r, _)| r.point.x.clone())
            .unwrap_or_else(|| rows.last().expect("points").point.x.clone());
        out.push(format!(
            "{name}: read faults fall from {:.1}/s at MAX-HISTORY {} to {:.1}/s at {}; read-only \
             commits rise from {:.2}/s to {:.2}/s; the smallest MAX-HISTORY whose read-only \
             throughput is within the confidence interval of the best is **{knee}**. Nodes held \
             grow from {:.0} to {:.0}.",
            faults[0].mean,
            rows[0].point.x,
            faults.last().expect("points").mean,
            rows.last().expect("points").point.x,
            reads[0].mean,
            reads.last().expect("points").mean,
            nodes[0].mean,
            nodes.last().expect("points").mean,
        ));
        recommended.push((gap, knee.clone()));
        picks.push(Pick::new(
            format!("MAX-HISTORY for readers of {gap} ms per read"),
            knee,
        ));
    }
    out.extend(super::identical_runs(measured, "MAX-HISTORY"));
    let writers: Vec<_> = measured
        .iter()
        .filter(|x| x.point.series == series_name(GAPS_MS[0]))
        .map(|r| m::WRITER_COMMITS_PER_SEC.estimate(&r.sim))
        .collect();
    let (lo, hi) = writers.iter().fold((f64::MAX, 0.0f64), |(l, h), e| {
        (l.min(e.mean), h.max(e.mean))
    });
    out.push(format!(
        "Writers are barely affected: their commits per second range over {lo:.1}–{hi:.1} across \
         the sweep (history trimming rides in the commit's own multi: no request or round trip of its own)."
    ));
    let need: usize = recommended
        .iter()
        .filter_map(|(_, k)| k.parse::<usize>().ok())
        .max()
        .unwrap_or(10);
    out.push(format!(
        "Recommended: MAX-HISTORY of at least the number of commits a ref receives during the \
         longest read-only transaction; here {} suffices for the longer readers. Clojure's \
         default of 10 {} for this workload; the cost of a larger value is only nodes held \
         (one per kept value per ref), not throughput.",
        need,
        if need <= 10 {
            "is enough"
        } else {
            "is too small"
        }
    ));
    (out, picks)
}
