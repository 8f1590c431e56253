//! `avout soak` from the shell: its table, its JSON, and a failing seed's case file.

use crate::avout;

#[test]
fn avout_soak_prints_its_base_and_a_table_and_exits_zero_when_every_run_passes() {
    let dir = tempfile::tempdir().unwrap();
    let out = avout(&[
        "soak",
        "--seeds",
        "3",
        "--base",
        "5",
        "--scenarios",
        "counter,mutex",
        "--ops",
        "2",
        "--faults",
        "none",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(stdout.contains("base seed 5 (seeds 5..8)"), "{stdout}");
    for row in ["counter none 3 0 -", "mutex none 3 0 -"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().eq(row.split_whitespace())),
            "no row {row:?} in {stdout}"
        );
    }
    assert!(stdout.contains("every run valid"), "{stdout}");
}

#[test]
fn avout_soak_per_kind_and_pairs_make_one_row_per_configuration() {
    let out = avout(&[
        "soak",
        "--seeds",
        "1",
        "--base",
        "0",
        "--scenarios",
        "counter",
        "--ops",
        "1",
        "--per-kind",
        "--pairs",
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["rows"].as_array().unwrap();
    // The 13 kinds (the one-server 7 and the ensemble's 6) alone, then their 78 pairs.
    assert_eq!(rows.len(), 13 + 78, "{report}");
    assert_eq!(rows[0]["faults"], "request-lost");
    assert_eq!(rows[11]["faults"], "slow-disk");
    assert_eq!(rows[12]["faults"], "leader-lag");
    assert_eq!(rows[13]["faults"], "request-lost+reply-lost");
    assert_eq!(report["base"], 0);
    assert_eq!(
        out.status.code(),
        Some(if report["failed"] == true { 1 } else { 0 })
    );
}

#[cfg(feature = "planted-bugs")]
#[test]
fn avout_soak_names_the_first_failing_seed_writes_its_case_and_exits_one() {
    use avout::planted::Bug;
    use avout_scenarios::scenario::Registry;
    use avout_scenarios::scenario::explore::explore;
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "soak",
        "--planted",
        "atom-unchecked-write",
        "--scenarios",
        "counter",
        "--faults",
        "none",
        "--seeds",
        "6",
        "--base",
        "0",
        "--ops",
        "3",
        "--out",
        dir.path().to_str().unwrap(),
    ];
    let out = avout(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let mut w = Registry::builtins().workload("counter", 0).unwrap();
    w.ops = 3;
    let found = explore(
        &Registry::builtins()
            .run(&w)
            .planted(Some(Bug::AtomUncheckedWrite)),
        0..6,
        2,
        false,
        &|_| {},
    )
    .unwrap();
    let seed = found.first_failure().unwrap().workload.seed;
    let path = dir
        .path()
        .join(format!("counter-none-seed{seed}.case.json"));
    let replay = format!("seed {seed}: avout replay {}", path.display());
    assert!(stdout.contains(&replay), "{replay:?} not in {stdout}");
    assert!(stdout.contains("FAILED      counter (none)"), "{stdout}");
    let replayed = avout(&["replay", path.to_str().unwrap()]);
    assert_eq!(replayed.status.code(), Some(1), "{replayed:?}");
    assert!(String::from_utf8_lossy(&replayed.stdout).contains("same event-log hash"));
}

/// A case kept with a planted bug (the museum's kazoo-649) is run by `soak --regressions`
/// without it, and passes; `replay` runs it with the bug (to its hash, failing), and
/// `replay --without-planted` as the soak does.
#[cfg(feature = "planted-bugs")]
#[test]
fn a_case_kept_with_a_planted_bug_is_soaked_and_replayed_without_it() {
    let kept =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../regressions/kazoo-649.json");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&kept, dir.path().join("kazoo-649.json")).unwrap();
    let out = avout(&[
        "soak",
        "--regressions",
        dir.path().to_str().unwrap(),
        "--scenarios",
        "counter",
        "--faults",
        "none",
        "--seeds",
        "1",
        "--base",
        "0",
        "--ops",
        "1",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        stdout.contains("1 kept case(s) of") && stdout.contains("every one valid"),
        "{stdout}"
    );
    let file = kept.to_str().unwrap();
    let with = avout(&["replay", file]);
    assert_eq!(with.status.code(), Some(1), "{with:?}");
    assert!(String::from_utf8_lossy(&with.stdout).contains("same event-log hash"));
    let without = avout(&["replay", file, "--without-planted", "--json"]);
    assert_eq!(without.status.code(), Some(0), "{without:?}");
    let v: serde_json::Value = serde_json::from_slice(&without.stdout).unwrap();
    assert_eq!(v["without_planted"], true, "{v}");
    assert_eq!(v["replayed"], false, "{v}");
}

/// `avout soak --shard I/N --json` four times and `avout soak-merge` of the four: the table,
/// the failing seeds and the case files of `avout soak` run whole, byte for byte.
#[cfg(feature = "planted-bugs")]
#[test]
fn four_shards_merged_by_soak_merge_are_the_soak_run_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let soak = |shard: Option<&str>, out: &str| {
        let mut args = vec![
            "soak",
            "--planted",
            "atom-unchecked-write",
            "--scenarios",
            "counter,mutex",
            "--faults",
            "none",
            "--seeds",
            "10",
            "--base",
            "0",
            "--ops",
            "3",
            "--json",
            "--out",
            out,
        ];
        if let Some(shard) = shard {
            args.extend(["--shard", shard]);
        }
        let out = avout(&args);
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "{out:?}"
        );
        out.stdout
    };
    let whole = soak(None, &path("whole"));
    let mut slices = Vec::new();
    for i in 0..4 {
        let file = path(&format!("slice-{i}.json"));
        std::fs::write(
            &file,
            soak(Some(&format!("{i}/4")), &path(&format!("s{i}"))),
        )
        .unwrap();
        slices.push(file);
    }
    let mut args = vec!["soak-merge", "--json", "--out"];
    let merged_dir = path("merged");
    args.push(&merged_dir);
    args.extend(slices.iter().map(String::as_str));
    let merged = avout(&args);
    assert_eq!(
        merged.status.code(),
        Some(1),
        "the bug fails a seed: {merged:?}"
    );
    let value = |bytes: &[u8], out: &str| {
        let mut v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        for key in ["wall_time_s", "threads"] {
            v[key] = 0.into();
        }
        // The case files' paths differ by directory only.
        serde_json::from_str::<serde_json::Value>(&v.to_string().replace(out, "OUT")).unwrap()
    };
    let (whole, merged_json) = (
        value(&whole, &path("whole")),
        value(&merged.stdout, &merged_dir),
    );
    assert_eq!(merged_json, whole);
    assert_eq!(whole["rows"][0]["faults"], "none");
    let failing: Vec<&serde_json::Value> = whole["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["failures"].as_u64() > Some(0))
        .collect();
    assert!(!failing.is_empty(), "{whole}");
    for row in failing {
        let case = row["first_failure"]["case"].as_str().unwrap();
        let read = |d: &str| std::fs::read(case.replace("OUT", d)).unwrap();
        assert_eq!(read(&merged_dir), read(&path("whole")), "{case}");
    }
    // A slice missing: refused, nothing written.
    let out = avout(&[
        "soak-merge",
        "--out",
        &path("partial"),
        &slices[0],
        &slices[1],
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("slice 2/4 is missing"));
    assert!(!dir.path().join("partial").exists());
}
