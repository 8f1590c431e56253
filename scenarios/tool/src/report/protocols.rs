//! `avout report protocols`: Mvcc against Optimistic on the same workloads.

use std::path::PathBuf;
use std::time::Duration;

use avout::stm::{Protocol, StmConfig};

use super::workload::Mix;
use super::{Measured, Pick, Point, ReportError, SweepArgs, metrics as m, render};

/// A workload of the comparison.
struct Shape {
    label: &'static str,
    what: &'static str,
    on_zk: bool,
    refs: usize,
    /// Writer clients and the refs each transaction alters.
    writers: (usize, usize),
    /// Reader clients, the refs each transaction reads and the pause after each read (ms).
    readers: (usize, usize, u64),
}

impl Shape {
    fn mix(&self, config: StmConfig, window: Duration) -> Mix {
        let ((writers, write_refs), (readers, read_refs, gap_ms)) = (self.writers, self.readers);
        Mix::new(config, self.refs, window)
            .writers(writers, write_refs, Duration::ZERO)
            .readers(readers, read_refs, Duration::from_millis(gap_ms))
    }
}

/// The workloads, one a line.
#[rustfmt::skip]
const SHAPES: [Shape; 5] = [
    Shape { label: "alter", what: "4 writers, each transaction alters 1 of 4 refs", on_zk: true, refs: 4, writers: (4, 1), readers: (0, 0, 0) },
    Shape { label: "transfer", what: "4 writers, each transaction alters 2 of 4 refs", on_zk: false, refs: 4, writers: (4, 2), readers: (0, 0, 0) },
    Shape { label: "hot-ref", what: "8 writers altering the same single ref", on_zk: false, refs: 1, writers: (8, 1), readers: (0, 0, 0) },
    Shape { label: "mixed", what: "4 writers altering 1 of 4 refs, and 2 readers reading all 4 refs with 10 ms between reads", on_zk: true, refs: 4, writers: (4, 1), readers: (2, 4, 10) },
    Shape { label: "read-only", what: "4 readers reading 2 of 4 refs, no writers", on_zk: false, refs: 4, writers: (0, 1), readers: (4, 2, 0) },
];

const PROTOCOLS: [Protocol; 2] = [Protocol::Optimistic, Protocol::Mvcc];

pub(super) fn run(args: &SweepArgs) -> Result<PathBuf, ReportError> {
    let mut points = Vec::new();
    for p in PROTOCOLS {
        for s in &SHAPES {
            let config = StmConfig {
                retry_limit: 1000,
                ..StmConfig::with_protocol(p)
            };
            points.push(Point {
                x: s.label.to_owned(),
                series: p.name().to_owned(),
                mix: s.mix(config, args.window()),
                on_zk: s.on_zk,
            });
        }
    }
    let deployed = super::measure("protocols", points, args)?;
    let mut doc = render::Doc::new(
        "protocols",
        "STM protocols: Mvcc against Optimistic",
        &args.command("protocols"),
    );
    doc.para(&format!(
        "Both protocols run the same workloads, {} seeds per point, each run measuring a \
         window of {} ms of virtual time; every figure is the mean over seeds ± its 95% \
         confidence interval. Configuration: Clojure's defaults (BARGE-WAIT 10 ms, \
         MAX-HISTORY 10) with a retry limit of 1000. Each client has its own session and STM \
         handle. Throughput counts transactions committed inside the window, per second of \
         virtual time; retries, requests and round trips are per committed transaction (all \
         tries' requests included), counted by the STM (`Stm::stats`).",
        args.seeds, args.window_ms
    ));
    let workloads: Vec<String> = SHAPES
        .iter()
        .map(|s| format!("`{}`: {}", s.label, s.what))
        .collect();
    doc.para("Workloads:");
    doc.bullets(&workloads);
    super::deployments_para(&mut doc, &deployed);
    let picks = super::sections(&mut doc, &deployed, |doc, d| {
        section(doc, d)?;
        Ok(findings(&d.measured))
    })?;
    super::conclude(
        doc,
        args,
        "protocols",
        &deployed,
        &picks,
        &[
            m::COMMITS_PER_SEC,
            m::RETRIES_PER_COMMIT,
            m::REQUESTS_PER_COMMIT,
            m::ROUND_TRIPS_PER_COMMIT,
            m::WRITER_P99,
        ],
        " (it must run in minutes on a shared 2-core machine)",
    )
}

/// One deployment's tables and plots.
fn section(doc: &mut render::Doc, d: &super::Deployed) -> Result<(), ReportError> {
    let measured = &d.measured;
    doc.subheading("Throughput and cost");
    doc.table(&super::table(
        measured,
        &[
            m::COMMITS_PER_SEC,
            m::RETRIES_PER_COMMIT,
            m::REQUESTS_PER_COMMIT,
            m::ROUND_TRIPS_PER_COMMIT,
            m::WRITER_P50,
            m::WRITER_P99,
        ],
    ));
    super::plots(
        doc,
        d,
        "workload",
        super::render::Shape::Bars,
        &[
            (
                m::COMMITS_PER_SEC,
                "throughput",
                "Commits per virtual second",
            ),
            (
                m::ROUND_TRIPS_PER_COMMIT,
                "round-trips",
                "Round trips per committed transaction",
            ),
        ],
    )?;
    doc.subheading("Read-only transactions");
    doc.para(
        "The `mixed` and `read-only` workloads. Optimistic validates every read at commit (a \
         long reader is retried whenever a writer changed any ref it read); Mvcc reads a \
         snapshot at its read point and retries only on a read fault (a value trimmed from \
         the history).",
    );
    let readers: Vec<Measured> = measured
        .iter()
        .filter(|x| x.point.mix.readers > 0)
        .cloned()
        .collect();
    doc.table(&super::table(
        &readers,
        &[
            m::READER_COMMITS_PER_SEC,
            m::READER_RETRIES_PER_COMMIT,
            m::READ_FAULTS_PER_SEC,
            m::READER_P50,
            m::READER_P99,
            m::WRITER_COMMITS_PER_SEC,
        ],
    ));
    super::plot(
        doc,
        d,
        &readers,
        (
            m::READER_RETRIES_PER_COMMIT,
            "reader-retries",
            "Retries per committed read-only transaction",
        ),
        "workload",
        super::render::Shape::Bars,
    )
}

fn find<'a>(measured: &'a [Measured], protocol: Protocol, label: &str) -> &'a Measured {
    measured
        .iter()
        .find(|x| x.point.series == protocol.name() && x.point.x == label)
        .expect("every protocol ran every workload")
}

/// Sentences computed from the data.
fn findings(measured: &[Measured]) -> (Vec<String>, Vec<Pick>) {
    let mut out = Vec::new();
    let mut mvcc_wins = Vec::new();
    let mut opt_wins = Vec::new();
    for s in &SHAPES {
        let o = find(measured, Protocol::Optimistic, s.label);
        let v = find(measured, Protocol::Mvcc, s.label);
        let (eo, ev) = (
            m::COMMITS_PER_SEC.estimate(&o.sim),
            m::COMMITS_PER_SEC.estimate(&v.sim),
        );
        let (ro, rv) = (
            m::ROUND_TRIPS_PER_COMMIT.estimate(&o.sim),
            m::ROUND_TRIPS_PER_COMMIT.estimate(&v.sim),
        );
        let verdict = if eo.overlaps(&ev) {
            "no significant difference".to_owned()
        } else if ev.mean > eo.mean {
            mvcc_wins.push(s.label);
            format!("Mvcc {:.2}× Optimistic", ev.mean / eo.mean.max(1e-9))
        } else {
            opt_wins.push(s.label);
            format!("Optimistic {:.2}× Mvcc", eo.mean / ev.mean.max(1e-9))
        };
        out.push(format!(
            "`{}`: {:.1} commits/s (Optimistic) against {:.1} (Mvcc): {verdict}; round trips per \
             commit {:.1} against {:.1}.",
            s.label, eo.mean, ev.mean, ro.mean, rv.mean
        ));
    }
    let mixed_o = find(measured, Protocol::Optimistic, "mixed");
    let mixed_v = find(measured, Protocol::Mvcc, "mixed");
    let (rco, rcv) = (
        m::READER_COMMITS_PER_SEC.estimate(&mixed_o.sim),
        m::READER_COMMITS_PER_SEC.estimate(&mixed_v.sim),
    );
    let (rro, rrv) = (
        m::READER_RETRIES_PER_COMMIT.estimate(&mixed_o.sim),
        m::READER_RETRIES_PER_COMMIT.estimate(&mixed_v.sim),
    );
    out.push(format!(
        "Long readers beside writers (`mixed`): Optimistic commits {:.2} read-only transactions/s \
         with {:.2} retries each; Mvcc {:.2}/s with {:.2} retries each{}.",
        rco.mean,
        rro.mean,
        rcv.mean,
        rrv.mean,
        if rrv.mean < rro.mean && !rrv.overlaps(&rro) {
            ": snapshot reads spare long readers the retries that validation costs them"
        } else {
            ""
        }
    ));
    let readers_better = rcv.mean > rco.mean && !rcv.overlaps(&rco);
    let rec = match (mvcc_wins.len(), opt_wins.len()) {
        (v, o) if o > v => format!(
            "Recommended default: Optimistic (StmConfig's default), which is faster on {} of {} \
             workloads ({}){}{}.",
            o,
            SHAPES.len(),
            opt_wins.join(", "),
            if readers_better {
                "; choose Mvcc where long read-only transactions must commit beside writers"
            } else {
                ""
            },
            if mvcc_wins.is_empty() {
                String::new()
            } else {
                format!(" (it wins {})", mvcc_wins.join(", "))
            }
        ),
        (v, o) if v > o => format!(
            "Recommended default: Mvcc, faster on {} of {} workloads ({}).",
            v,
            SHAPES.len(),
            mvcc_wins.join(", ")
        ),
        _ => "Recommended default: Optimistic (StmConfig's default): neither protocol is faster on more workloads, and Optimistic needs fewer round trips per commit.".to_owned(),
    };
    out.push(rec);
    let winner = |label: &str| {
        if mvcc_wins.contains(&label) {
            "Mvcc"
        } else if opt_wins.contains(&label) {
            "Optimistic"
        } else {
            "either"
        }
    };
    let mut picks: Vec<Pick> = SHAPES
        .iter()
        .map(|s| Pick::new(format!("faster protocol, `{}`", s.label), winner(s.label)))
        .collect();
    picks.push(Pick::new(
        "long readers beside writers commit more under",
        if rcv.overlaps(&rco) {
            "either"
        } else if rcv.mean > rco.mean {
            "Mvcc"
        } else {
            "Optimistic"
        },
    ));
    (out, picks)
}
