//! `avout endure`: scenarios at once on one ensemble under the nemesis, sampled; the report
//! says how every round went and whether anything grew.

use crate::avout_in;

#[test]
fn a_short_endurance_run_judges_every_round_and_samples_the_ensemble() {
    let dir = tempfile::tempdir().unwrap();
    let out = avout_in(
        &[
            "endure",
            "--scenarios",
            "counter,election",
            "--duration",
            "8s",
            "--kill-every",
            "1s",
            "--sample-every",
            "1s",
            "--out",
            "report",
        ],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report = std::fs::read_to_string(dir.path().join("report/endurance.md")).unwrap();
    for scenario in ["counter", "election"] {
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| {scenario} |")))
            .unwrap_or_else(|| panic!("no row for {scenario}: {report}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (rounds, valid): (u64, u64) = (cells[2].parse().unwrap(), cells[3].parse().unwrap());
        assert!(rounds >= 1 && valid >= 1, "{row}");
        assert_eq!(cells[4], "0", "invalid rounds: {row}");
        assert_eq!(cells[5], "0", "hangs: {row}");
        assert_eq!(cells[8], "0", "chroots left behind: {row}");
    }
    assert!(report.contains("nothing grew"), "{report}\n{stderr}");
    let samples: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("report/endurance-samples.json")).unwrap(),
    )
    .unwrap();
    let samples = samples.as_array().unwrap();
    assert!(samples.len() >= 4, "{samples:?}");
    assert!(
        samples.iter().any(|s| s["znodes"].as_f64() > Some(0.0)),
        "mntr was never read: {samples:?}"
    );
    assert!(samples.iter().all(|s| s["rss_mib"].as_f64() > Some(0.0)));
    for plot in 0..6 {
        assert!(
            dir.path()
                .join(format!("report/endurance-resource-{plot}.svg"))
                .exists()
        );
    }
}
