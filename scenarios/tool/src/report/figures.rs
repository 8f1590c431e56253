//! A sweep's measurements put in its report: tables and plots of metrics over the points,
//! the conclusion drawn from them, the real-server section, and notes on failed or identical
//! runs.

use std::path::PathBuf;

use super::stats::Estimate;
use super::workload::Outcome;
use super::{Measured, Metric, ReportError, SweepArgs, metrics, pct_ms, render};

/// The table of `metrics` over the points (one row per point).
pub(super) fn table(measured: &[Measured], metrics: &[Metric]) -> render::Table {
    let mut header = vec!["series".to_owned(), "point".to_owned()];
    header.extend(metrics.iter().map(|m| m.name.to_owned()));
    let mut t = render::Table::new(header);
    for m in measured {
        let mut row = vec![m.point.series.clone(), m.point.x.clone()];
        row.extend(
            metrics
                .iter()
                .map(|k| render::est(&k.estimate(&m.sim), k.decimals)),
        );
        t.row(row);
    }
    t
}

/// The x labels and one series per distinct `series`, for a metric.
pub(super) fn series(measured: &[Measured], metric: Metric) -> (Vec<String>, Vec<render::Series>) {
    let mut xs: Vec<String> = Vec::new();
    let mut lines: Vec<render::Series> = Vec::new();
    for m in measured {
        if !xs.contains(&m.point.x) {
            xs.push(m.point.x.clone());
        }
        let e = metric.estimate(&m.sim);
        match lines.iter_mut().find(|l| l.name == m.point.series) {
            Some(l) => l.values.push(e),
            None => lines.push(render::Series {
                name: m.point.series.clone(),
                values: vec![e],
            }),
        }
    }
    (xs, lines)
}

/// Adds a plot of `metric` over the points, drawn as `shape`.
pub(super) fn plot(
    doc: &mut render::Doc,
    measured: &[Measured],
    (metric, slug, title): (Metric, &str, &str),
    x_desc: &str,
    shape: render::Shape,
) -> Result<(), ReportError> {
    let (xs, lines) = series(measured, metric);
    doc.plot(
        slug,
        &render::Plot {
            title,
            x_desc,
            y_desc: metric.name,
            xs: &xs,
            series: &lines,
            shape,
        },
    )
}

/// Adds a plot per `(metric, slug, title)`, all over the axis `x_desc`, drawn as `shape`.
pub(super) fn plots(
    doc: &mut render::Doc,
    measured: &[Measured],
    x_desc: &str,
    shape: render::Shape,
    plots: &[(Metric, &str, &str)],
) -> Result<(), ReportError> {
    for &p in plots {
        plot(doc, measured, p, x_desc, shape)?;
    }
    Ok(())
}

/// What every sweep report ends with, and writes: its findings, the note on unexpected
/// failures, the `--zk` comparison of `zk_metrics`, and the command of the full-size run (the
/// committed report being a small sweep, `small_because` says why if it needs saying).
pub(super) fn conclude(
    mut doc: render::Doc,
    args: &SweepArgs,
    name: &str,
    measured: &[Measured],
    findings: &[String],
    zk_metrics: &[Metric],
    small_because: &str,
) -> Result<PathBuf, ReportError> {
    doc.heading("Findings");
    doc.bullets(findings);
    if let Some(note) = failures_note(measured) {
        doc.para(&note);
    }
    zk_section(&mut doc, args, measured, zk_metrics);
    doc.heading("Full size");
    doc.para(&format!(
        "The committed report is a small sweep{small_because}. The full-size run: `avout report \
         {name} --seeds 30 --window-ms 10000`."
    ));
    doc.write(&args.out)
}

/// The `--zk` section: each `on_zk` point's metrics on the simulator and on ZooKeeper, and
/// where they disagree (the real figure outside the simulator's interval, by more than 10%).
pub(super) fn zk_section(
    doc: &mut render::Doc,
    args: &SweepArgs,
    measured: &[Measured],
    metrics: &[Metric],
) {
    let Some(connect) = &args.zk else {
        doc.heading("Simulator and real ZooKeeper");
        doc.para(
            "Not run: this report was generated without `--zk CONNECT`. Add it (for example \
             `avout zk start`, then `--zk 127.0.0.1:2181`) to run the marked subset of points \
             on a real server and compare.",
        );
        return;
    };
    doc.heading("Simulator and real ZooKeeper");
    doc.para(&format!(
        "The points below also ran {} time(s) each on the ZooKeeper at `{connect}`, in wall-clock \
         time (these figures are not reproducible bit for bit). `sim` is the simulator's mean ± \
         95% interval; `real` the mean of the real runs; a cell is marked **differs** when the \
         real mean lies outside the simulator's interval by more than 10% of it.",
        args.zk_runs
    ));
    let mut t = render::Table::new(["series", "point", "metric", "sim", "real", "real/sim", ""]);
    let mut differ = Vec::new();
    for m in measured.iter().filter(|m| !m.zk.is_empty()) {
        for k in metrics {
            let sim = k.estimate(&m.sim);
            let real = k.estimate(&m.zk);
            let ratio = if sim.mean == 0.0 {
                "—".to_owned()
            } else {
                format!("{:.2}", real.mean / sim.mean)
            };
            let slack = 0.1 * sim.mean.abs();
            let off = real.mean < sim.low() - slack || real.mean > sim.high() + slack;
            if off {
                differ.push(format!(
                    "{} {}: {} is {:.*} on ZooKeeper against {} simulated",
                    m.point.series,
                    m.point.x,
                    k.name,
                    k.decimals,
                    real.mean,
                    render::est(&sim, k.decimals)
                ));
            }
            t.row(vec![
                m.point.series.clone(),
                m.point.x.clone(),
                k.name.to_owned(),
                render::est(&sim, k.decimals),
                format!("{:.*}", k.decimals, real.mean),
                ratio,
                if off {
                    "**differs**".into()
                } else {
                    String::new()
                },
            ]);
        }
    }
    doc.table(&t);
    // The latency per round trip on each backend: the main reason absolute figures differ.
    let mut lat =
        render::Table::new(["series", "point", "sim ms/round trip", "real ms/round trip"]);
    for m in measured.iter().filter(|m| !m.zk.is_empty()) {
        lat.row(vec![
            m.point.series.clone(),
            m.point.x.clone(),
            format!("{:.2}", ms_per_round_trip(&m.sim)),
            format!("{:.2}", ms_per_round_trip(&m.zk)),
        ]);
    }
    doc.para(
        "Why they differ. The simulator draws each one-way message latency uniformly from \
         0.1–2 ms and applies a request the moment it arrives; a real standalone server on \
         loopback answers a read in well under a millisecond but makes every write wait for \
         its transaction log's fsync, and its clients share this machine's two cores with the \
         server. Counts per commit (requests, round trips) are the protocol's and should \
         agree; time-based figures (throughput, latency) scale with the time a round trip \
         takes, and contention figures (retries, read faults) follow from how many \
         transactions overlap in that time. Median latency divided by round trips per commit, \
         an estimate of one round trip's cost (the transaction's pauses included):",
    );
    doc.table(&lat);
    if differ.is_empty() {
        doc.para(
            "Every compared figure of the real runs lies within 10% of the simulator's interval.",
        );
    } else {
        doc.para("Where they disagree:");
        doc.bullets(&differ);
    }
}

/// Median latency (writers, else readers) per round trip per commit, averaged over runs.
pub(super) fn ms_per_round_trip(runs: &[Outcome]) -> f64 {
    let v: Vec<f64> = runs
        .iter()
        .map(|o| {
            let p50 = if o.writers.latencies_us.is_empty() {
                pct_ms(&o.readers.latencies_us, 50.0)
            } else {
                pct_ms(&o.writers.latencies_us, 50.0)
            };
            let rt = metrics::ROUND_TRIPS_PER_COMMIT.of;
            let r = rt(o);
            if r == 0.0 { 0.0 } else { p50 / r }
        })
        .collect();
    Estimate::of(&v).mean
}

/// Failures other than the retry limit across all runs, for the report (none expected).
pub(super) fn failures_note(measured: &[Measured]) -> Option<String> {
    let mut total = std::collections::BTreeMap::<String, u64>::new();
    for m in measured {
        for o in m.sim.iter().chain(&m.zk) {
            for (k, n) in &o.failures {
                *total.entry(k.clone()).or_default() += n;
            }
        }
    }
    (!total.is_empty()).then(|| {
        format!(
            "Transactions failed with errors other than the retry limit: {}.",
            total
                .iter()
                .map(|(k, n)| format!("{k} × {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// A note for each run of consecutive points of one series whose simulated runs were
/// identical seed for seed: the swept setting changed no decision there.
pub(super) fn identical_runs(measured: &[Measured], param: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < measured.len() {
        let mut j = i + 1;
        while j < measured.len()
            && measured[j].point.series == measured[i].point.series
            && measured[j].sim == measured[i].sim
        {
            j += 1;
        }
        if j - i > 1 {
            let xs: Vec<&str> = measured[i..j].iter().map(|m| m.point.x.as_str()).collect();
            out.push(format!(
                "{}: {param} {} gave identical runs, seed for seed (the setting changed no \
                 decision of the protocol there).",
                measured[i].point.series,
                xs.join(", ")
            ));
        }
        i = j;
    }
    out
}
