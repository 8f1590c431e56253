//! `avout check` and `avout demo` as a user runs them: exit status 0 for a valid history or a
//! replayed run, 1 for an anomaly, 2 for bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

fn avout(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_avout"))
        .args(args)
        .output()
        .expect("the avout binary runs")
}

fn testdata(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("src/check/testdata")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn a_valid_keyed_history_exits_zero() {
    let out = avout(&[
        "check",
        &testdata("lin-kv.jsonl"),
        "--model",
        "cas-register",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("linearizable"));
}

#[test]
fn a_lost_update_exits_one_and_names_the_operations() {
    let out = avout(&[
        "check",
        &testdata("lost-update.jsonl"),
        "--model",
        "cas-register",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("cas"),
        "the report names the operations: {stdout}"
    );
}

#[test]
fn bad_input_exits_two_with_a_message() {
    let out = avout(&["check", "/nonexistent/history.jsonl", "--model", "register"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"));
    let out = avout(&["check", &testdata("lin-kv.jsonl"), "--model", "bank"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown model is a usage error"
    );
}

#[test]
fn the_demo_replays_to_the_same_hash() {
    let out = avout(&["demo", "--seed", "7", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["hash"], report["replay_hash"]);
    assert!(report["requests"].as_u64().unwrap() > 0);
}
