//! A sweep's measurements put in its report: tables and plots of metrics over the points,
//! the conclusion drawn from them, the real-server section, and notes on failed or identical
//! runs.

use std::path::PathBuf;

use super::stats::Estimate;
use super::workload::Outcome;
use super::{Deployed, Measured, Metric, ReportError, SweepArgs, metrics, pct_ms, render};

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

/// Adds a plot of `metric` over the points of a deployment, drawn as `shape`.
pub(super) fn plot(
    doc: &mut render::Doc,
    deployed: &Deployed,
    measured: &[Measured],
    (metric, slug, title): (Metric, &str, &str),
    x_desc: &str,
    shape: render::Shape,
) -> Result<(), ReportError> {
    let (xs, lines) = series(measured, metric);
    let title = format!("{title} ({})", deployed.deployment.name);
    doc.plot(
        &deployed.deployment.plot_slug(slug),
        &render::Plot {
            title: &title,
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
    deployed: &Deployed,
    x_desc: &str,
    shape: render::Shape,
    plots: &[(Metric, &str, &str)],
) -> Result<(), ReportError> {
    for &p in plots {
        plot(doc, deployed, &deployed.measured, p, x_desc, shape)?;
    }
    Ok(())
}

/// A recommendation a report draws from one deployment's figures.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Pick {
    /// What it answers ("BARGE-WAIT at high contention").
    pub(super) question: String,
    /// The answer ("10 ms").
    pub(super) answer: String,
}

impl Pick {
    pub(super) fn new(question: impl Into<String>, answer: impl Into<String>) -> Pick {
        Pick {
            question: question.into(),
            answer: answer.into(),
        }
    }
}

/// The deployments every point ran on, each a section of the report.
pub(super) fn full(deployed: &[Deployed]) -> impl Iterator<Item = &Deployed> {
    deployed.iter().filter(|d| d.deployment.every_point)
}

/// A section per deployment every point ran on: its heading, what `body` writes, and the
/// notes `body` returns; returns each deployment's picks.
pub(super) fn sections<'a>(
    doc: &mut render::Doc,
    deployed: &'a [Deployed],
    mut body: impl FnMut(&mut render::Doc, &Deployed) -> Result<(Vec<String>, Vec<Pick>), ReportError>,
) -> Result<Vec<(&'a str, Vec<Pick>)>, ReportError> {
    let mut picks = Vec::new();
    for d in full(deployed) {
        doc.heading(d.deployment.name);
        let (notes, p) = body(doc, d)?;
        doc.bullets(&notes);
        picks.push((d.deployment.name, p));
    }
    Ok(picks)
}

/// Says where the sweep ran: one bullet per simulated deployment.
pub(super) fn deployments_para(doc: &mut render::Doc, deployed: &[Deployed]) {
    doc.para(
        "Every point runs on each of these simulated deployments (the ones marked \
         *calibration* run only the points compared with real servers):",
    );
    let items: Vec<String> = deployed
        .iter()
        .map(|d| {
            format!(
                "**{}**{}: {}.",
                d.deployment.name,
                if d.deployment.every_point {
                    ""
                } else {
                    " (calibration)"
                },
                d.deployment.what
            )
        })
        .collect();
    doc.bullets(&items);
}

/// What every sweep report ends with, and writes: the recommendations of each deployment
/// side by side, the note on unexpected failures, the calibration against real servers of
/// `zk_metrics`, and the command of the full-size run (the committed report being a small
/// sweep, `small_because` says why if it needs saying).
pub(super) fn conclude(
    mut doc: render::Doc,
    args: &SweepArgs,
    name: &str,
    deployed: &[Deployed],
    picks: &[(&str, Vec<Pick>)],
    zk_metrics: &[Metric],
    small_because: &str,
) -> Result<PathBuf, ReportError> {
    doc.heading("Recommendations by deployment");
    let (table, changed) = recommendations(picks);
    doc.table(&table);
    if changed.is_empty() {
        doc.para("No recommendation changes with the deployment.");
    } else {
        doc.para("Where a recommendation changes with the deployment:");
        doc.bullets(&changed);
    }
    let all: Vec<&Measured> = deployed.iter().flat_map(|d| &d.measured).collect();
    if let Some(note) = failures_note(&all) {
        doc.para(&note);
    }
    super::calibrate::section(&mut doc, args, deployed, zk_metrics);
    doc.heading("Full size");
    doc.para(&format!(
        "The committed report is a small sweep{small_because}. The full-size run: `avout report \
         {name} --seeds 30 --window-ms 10000`."
    ));
    doc.write(&args.out)
}

/// The table of picks (a row per question, a column per deployment) and a sentence for each
/// question whose answer is not the same everywhere.
fn recommendations(picks: &[(&str, Vec<Pick>)]) -> (render::Table, Vec<String>) {
    let mut header = vec!["recommendation".to_owned()];
    header.extend(picks.iter().map(|(d, _)| (*d).to_owned()));
    let mut t = render::Table::new(header);
    let mut changed = Vec::new();
    let questions: Vec<&str> = picks
        .first()
        .map(|(_, p)| p.iter().map(|p| p.question.as_str()).collect())
        .unwrap_or_default();
    for q in questions {
        let answers: Vec<&str> = picks
            .iter()
            .map(|(_, ps)| {
                ps.iter()
                    .find(|p| p.question == q)
                    .map_or("—", |p| p.answer.as_str())
            })
            .collect();
        if answers.iter().any(|a| *a != answers[0]) {
            let per: Vec<String> = picks
                .iter()
                .zip(&answers)
                .map(|((d, _), a)| format!("{d}: {a}"))
                .collect();
            changed.push(format!("{q}: {}.", per.join("; ")));
        }
        let mut row = vec![q.to_owned()];
        row.extend(answers.iter().map(|a| (*a).to_owned()));
        t.row(row);
    }
    (t, changed)
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
pub(super) fn failures_note(measured: &[&Measured]) -> Option<String> {
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
