//! `avout report`: the same command writes the same report (numbers from virtual time only,
//! whatever the number of threads), headed by the command; and the statistics behind it.

use std::path::{Path, PathBuf};

use avout_cli::report::stats::{Estimate, percentile, t975};
use avout_cli::report::{self, ReportCommand};
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    report: ReportCommand,
}

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("avout-report-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The latency models fitted from real servers, as committed.
const FITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../reports/latency");

fn generate(name: &str, out: &Path, threads: usize) -> PathBuf {
    let out = out.to_str().unwrap();
    let threads = threads.to_string();
    let args = [
        "avout",
        name,
        "--seeds",
        "2",
        "--window-ms",
        "300",
        "--threads",
        &threads,
        "--out",
        out,
        "--fitted",
        FITTED,
        "--no-model",
    ];
    report::run(&Cli::parse_from(args).report).unwrap()
}

/// Every file of a directory, by name.
fn files(d: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn two_runs_of_a_sweep_write_identical_reports() {
    for name in ["protocols", "max-history"] {
        let (a, b) = (dir(&format!("{name}-a")), dir(&format!("{name}-b")));
        let path = generate(name, &a, 1);
        generate(name, &b, 2);
        let (fa, fb) = (files(&a), files(&b));
        assert!(fa.len() >= 3, "{name}: the report and its plots: {fa:?}");
        assert_eq!(
            fa.iter().map(|f| &f.0).collect::<Vec<_>>(),
            fb.iter().map(|f| &f.0).collect::<Vec<_>>()
        );
        // The header names the output directory, the only thing that differs.
        let same_dir = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes)
                .replace(&b.display().to_string(), &a.display().to_string())
        };
        for ((file, x), (_, y)) in fa.iter().zip(&fb) {
            assert!(
                same_dir(x) == same_dir(y),
                "{name}: {file} differs between two runs"
            );
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let command = format!(
            "avout report {name} --seeds 2 --window-ms 300 --out {} --fitted {FITTED} --no-model",
            a.display()
        );
        assert!(text.contains(&command), "headed by its command:\n{text}");
        for deployment in [
            "## 1 server, uniform",
            "## 3 servers, fitted",
            "## 3 servers, fitted, faults",
        ] {
            assert!(text.contains(deployment), "{deployment}: {text}");
        }
        assert!(text.contains("## Recommendations by deployment"), "{text}");
        for (file, svg) in fa.iter().filter(|f| f.0.ends_with(".svg")) {
            assert!(
                svg.starts_with(b"<svg") && text.contains(file.as_str()),
                "{file} is an SVG linked from the report"
            );
        }
        let _ = std::fs::remove_dir_all(&a);
        let _ = std::fs::remove_dir_all(&b);
    }
}

#[test]
fn a_different_seed_count_changes_the_numbers() {
    // The identity above is not vacuous: the report does depend on its runs.
    let (a, b) = (dir("seeds-a"), dir("seeds-b"));
    generate("protocols", &a, 2);
    let out = b.to_str().unwrap();
    let args = [
        "avout",
        "protocols",
        "--seeds",
        "3",
        "--window-ms",
        "300",
        "--out",
        out,
        "--fitted",
        FITTED,
    ];
    report::run(&Cli::parse_from(args).report).unwrap();
    let ta = std::fs::read_to_string(a.join("protocols.md")).unwrap();
    let tb = std::fs::read_to_string(b.join("protocols.md")).unwrap();
    let table = |t: &str| {
        t.lines()
            .filter(|l| l.starts_with("| optimistic") || l.starts_with("| mvcc"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // 10 points and 4 with readers, on each of the three deployments every point runs on.
    assert_eq!(table(&ta).len(), 42, "{ta}");
    assert_ne!(table(&ta), table(&tb));
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn a_report_without_its_fitted_models_says_how_to_make_them() {
    let out = dir("unfitted");
    let missing = out.join("no-models");
    let args = [
        "avout",
        "max-history",
        "--seeds",
        "1",
        "--out",
        out.to_str().unwrap(),
        "--fitted",
        missing.to_str().unwrap(),
    ];
    let err = report::run(&Cli::parse_from(args).report).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("avout report latency"), "{text}");
    assert!(!out.join("max-history.md").exists(), "nothing written");
}

/// SplitMix64, for samples the test can regenerate.
fn uniform(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

fn normal(state: &mut u64) -> f64 {
    let (u, v) = (uniform(state).max(1e-300), uniform(state));
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

#[test]
fn the_interval_covers_the_true_mean_95_percent_of_the_time() {
    let mut state = 1;
    for n in [3, 5, 10] {
        let trials = 4000;
        let covered = (0..trials)
            .filter(|_| {
                let sample: Vec<f64> = (0..n).map(|_| 10.0 + 2.0 * normal(&mut state)).collect();
                Estimate::of(&sample).contains(10.0)
            })
            .count();
        let rate = covered as f64 / trials as f64;
        assert!((0.935..=0.965).contains(&rate), "n={n}: coverage {rate}");
    }
    // With the normal quantile instead of Student's, small samples would undercover.
    assert!(t975(2) > 4.0 && t975(4) > 2.7);
}

#[test]
fn percentiles_and_estimates_of_edge_samples() {
    assert_eq!(percentile(&[1, 2, 3, 4], 50.0), Some(2));
    assert_eq!(percentile(&[1, 2, 3, 4], 75.1), Some(4));
    let one = Estimate::of(&[3.0]);
    assert_eq!((one.mean, one.half_width), (3.0, 0.0));
    let none = Estimate::of(&[]);
    assert_eq!(none.n, 0);
}
