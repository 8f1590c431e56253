//! `avout run` / `replay` from the shell: the history written, the exit-status contract, bad
//! arguments refused, an unreachable server named, a run on its own ensemble.

use std::process::Command;

use crate::avout_in;

#[test]
fn avout_run_writes_the_history_and_exits_zero_when_valid() {
    let dir = tempfile::tempdir().unwrap();
    let out = avout_in(
        &["run", "counter", "--seed", "4", "--ops", "10", "--json"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["valid"], true);
    assert_eq!(report["operations"]["invoked"], 4 * 10 + 1);
    let history = dir.path().join(report["history"].as_str().unwrap());
    let lines = std::fs::read_to_string(history).unwrap().lines().count();
    assert_eq!(
        lines as u64,
        report["operations"]["invoked"].as_u64().unwrap() * 2
    );
    assert!(report["case"].is_null(), "no case file for a valid run");
}

/// A distant ensemble: every request waits 60 ms each way, so the same workload takes
/// longer in simulated time, and the report says so.
#[test]
fn avout_run_on_a_distant_ensemble_reports_its_latency() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "bank", "--seed", "4", "--ops", "5", "--json"];
        args.extend(extra);
        let out = avout_in(&args, dir.path());
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (near, far) = (run(&[]), run(&["--latency-ms", "60"]));
    assert_eq!(
        (near["latency_ms"].clone(), far["latency_ms"].clone()),
        (serde_json::Value::Null, 60.into())
    );
    let time = |r: &serde_json::Value| r["virtual_time_s"].as_f64().unwrap();
    assert!(
        time(&far) > 3.0 * time(&near),
        "{} s against {} s",
        time(&far),
        time(&near)
    );
}

#[test]
fn avout_run_refuses_bad_arguments_with_exit_two() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["run", "no-such-scenario"][..], "unknown scenario"),
        (
            &["run", "counter", "--faults", "gremlins"],
            "unknown fault kind",
        ),
        (
            &["run", "counter", "--fault-rate", "2"],
            "not a probability",
        ),
        (&["run", "counter", "--clients", "0"], "at least 1"),
        (&["run", "bank", "--latency-ms", "501"], "is over 500"),
        (&["run", "counter", "--protocol", "2pl"], "unknown protocol"),
        (&["run", "counter", "--planted", "nope"], "no planted bug"),
        (&["explore", "counter", "--seeds", "9..3"], "empty"),
        (&["replay", "missing.json"], "missing.json"),
    ] {
        let out = avout_in(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn avout_run_ends_quietly_when_its_reader_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_avout"))
        .args(["run", "counter", "--seed", "4", "--ops", "10"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the avout binary runs");
    // As `avout run … | head -0` does: the reader is gone before the summary is printed.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn avout_run_says_when_the_server_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = avout_in(
        &["run", "counter", "--zk", &format!("127.0.0.1:{port}")],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("cannot reach ZooKeeper").count(),
        1,
        "said once: {stderr}"
    );
}

#[test]
fn avout_run_on_its_own_ensemble_runs_for_its_duration_under_a_nemesis_and_is_judged_valid() {
    let dir = tempfile::tempdir().unwrap();
    let out = avout_in(
        &[
            "run",
            "counter",
            "--zk-ensemble",
            "3",
            "--kill-every",
            "1s",
            "--duration",
            "8s",
            "--ops",
            "10",
            "--json",
        ],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["valid"], true, "{report}");
    let rounds = &report["rounds"];
    let each = rounds["each"].as_array().unwrap();
    // 10 operations per client take well under 8 s, so the run must have gone round again
    // (40 took one 9.5 s round on a machine loaded with two chaos campaigns).
    assert!(each.len() >= 2, "one round only: {report} {stderr}");
    assert_eq!(rounds["count"].as_u64(), Some(each.len() as u64));
    assert!(each.iter().all(|r| r["valid"] == true), "{rounds}");
    let seeds: Vec<u64> = each.iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, (1..=each.len() as u64).collect::<Vec<_>>());
    let total = |k: &str| rounds["faults"][k].as_u64().unwrap_or(0);
    let per_round: u64 = each
        .iter()
        .map(|r| r["faults"]["member-kill"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        total("member-kill") >= 1,
        "no member was killed during the run: {report} {stderr}"
    );
    assert_eq!(per_round, total("member-kill"), "{rounds}");
    let ops: u64 = each.iter().map(|r| r["operations"].as_u64().unwrap()).sum();
    assert_eq!(rounds["operations"].as_u64(), Some(ops));
    eprintln!(
        "counter on an ensemble of 3 under a nemesis for 8 s: {} rounds, {ops} operations, \
         nemesis events {}",
        each.len(),
        rounds["faults"]
    );
}

#[test]
fn avout_run_refuses_a_duration_on_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let out = avout_in(&["run", "counter", "--duration", "5s"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--duration needs real ZooKeeper"),
        "{out:?}"
    );
}
