//! The calibration section: the compared points' figures on each simulated deployment beside
//! the same points on real servers, and how many agree.

use super::deploy::Real;
use super::figures::ms_per_round_trip;
use super::{Deployed, Metric, SweepArgs, render};

/// Whether `real` agrees with the simulated `sim`: within its 95% interval widened by 10% of
/// its mean.
fn agrees(sim: &super::stats::Estimate, real: f64) -> bool {
    let slack = 0.1 * sim.mean.abs();
    real >= sim.low() - slack && real <= sim.high() + slack
}

fn real_name(args: &SweepArgs, which: Real) -> String {
    match which {
        Real::Standalone => "real 1 server".to_owned(),
        Real::Ensemble => format!("real {} members", args.zk_ensemble.unwrap_or(3)),
    }
}

/// Adds the section.
pub(super) fn section(
    doc: &mut render::Doc,
    args: &SweepArgs,
    deployed: &[Deployed],
    metrics: &[Metric],
) {
    doc.heading("Calibration: the simulator against real servers");
    let compared: Vec<&Deployed> = deployed
        .iter()
        .filter(|d| d.deployment.real.is_some())
        .collect();
    let ran_real = compared
        .iter()
        .any(|d| d.measured.iter().any(|m| !m.zk.is_empty()));
    if !ran_real {
        doc.para(
            "Not run: this report was generated without real servers. Add `--zk-ensemble 3` \
             (it starts a standalone server and a 3-member ensemble on this machine, and stops \
             them at the end) to run the compared points on them.",
        );
        return;
    }
    doc.para(&format!(
        "The compared points ran {} time(s) each on a real standalone server and on a real \
         {}-member ensemble on this machine (127.0.0.1, fsync on), in wall-clock time: those \
         figures are means of the real runs, and are not reproducible bit for bit. Simulated \
         figures are the mean over seeds ± 95% interval. A real figure *agrees* with a \
         simulated one when it lies within the simulated interval widened by 10% of its mean.",
        args.zk_runs,
        args.zk_ensemble.unwrap_or(3),
    ));
    // Columns: each compared deployment, its real counterpart after the last of its kind.
    let mut header = vec!["series".to_owned(), "point".to_owned(), "metric".to_owned()];
    let mut columns: Vec<(usize, Option<Real>)> = Vec::new();
    for (i, d) in compared.iter().enumerate() {
        header.push(d.deployment.name.to_owned());
        columns.push((i, None));
        let next_real = compared.get(i + 1).and_then(|n| n.deployment.real);
        if next_real != d.deployment.real {
            let which = d.deployment.real.expect("compared deployments have one");
            header.push(real_name(args, which));
            columns.push((i, Some(which)));
        }
    }
    let mut t = render::Table::new(header);
    let mut agree = vec![(0usize, 0usize); compared.len()];
    let points = &compared[0].measured;
    for m0 in points.iter().filter(|m| m.point.on_zk) {
        for k in metrics {
            let mut row = vec![
                m0.point.series.clone(),
                m0.point.x.clone(),
                k.name.to_owned(),
            ];
            for &(di, real) in &columns {
                let Some(m) = compared[di]
                    .measured
                    .iter()
                    .find(|m| m.point.series == m0.point.series && m.point.x == m0.point.x)
                else {
                    row.push("—".into());
                    continue;
                };
                if real.is_some() {
                    row.push(format!("{:.*}", k.decimals, k.estimate(&m.zk).mean));
                    continue;
                }
                let sim = k.estimate(&m.sim);
                if !m.zk.is_empty() {
                    let ok = agrees(&sim, k.estimate(&m.zk).mean);
                    agree[di].0 += usize::from(ok);
                    agree[di].1 += 1;
                }
                row.push(render::est(&sim, k.decimals));
            }
            t.row(row);
        }
    }
    doc.table(&t);
    let summary: Vec<String> = compared
        .iter()
        .zip(&agree)
        .map(|(d, (ok, n))| {
            format!(
                "{}: {ok} of {n} figures agree with {}",
                d.deployment.name,
                real_name(args, d.deployment.real.expect("compared"))
            )
        })
        .collect();
    doc.bullets(&summary);
    let mut lat = render::Table::new([
        "series",
        "point",
        "deployment",
        "sim ms/round trip",
        "real ms/round trip",
    ]);
    for d in &compared {
        for m in d.measured.iter().filter(|m| !m.zk.is_empty()) {
            lat.row(vec![
                m.point.series.clone(),
                m.point.x.clone(),
                d.deployment.name.to_owned(),
                format!("{:.2}", ms_per_round_trip(&m.sim)),
                format!("{:.2}", ms_per_round_trip(&m.zk)),
            ]);
        }
    }
    doc.para(
        "Median latency divided by round trips per commit, an estimate of one round trip's \
         cost (the transactions' pauses included), on each:",
    );
    doc.table(&lat);
}
