//! `avout model`: the figures and verdicts it prints, and its exit status.

use std::process::Command;

fn avout_model(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_avout"))
        .arg("model")
        .args(args)
        .output()
        .expect("run avout");
    (
        out.status.code().expect("exited"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_passing_model_prints_its_state_counts_and_verdicts() {
    let (code, out, err) = avout_model(&["mutex", "--clients", "2", "--faults", "0"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("states: 417, unique states: 224"), "{out}");
    assert!(out.contains("mutual exclusion with fencing"), "{out}");
    assert!(out.contains("holds"), "{out}");
    assert!(out.contains("example found"), "{out}");
}

#[test]
fn a_depth_too_small_to_reach_the_examples_fails() {
    let (code, out, _) = avout_model(&["election", "--depth", "3"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("NO EXAMPLE FOUND"), "{out}");
}

#[test]
fn bad_arguments_are_refused_with_status_2() {
    let (code, _, err) = avout_model(&["paxos"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no model is named \"paxos\""), "{err}");
    let (code, _, err) = avout_model(&["mutex", "--clients", "9"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--clients must be 1 to 4"), "{err}");
}

#[cfg(feature = "planted-bugs")]
#[test]
fn a_planted_bug_exits_1_with_a_counterexample_trace() {
    let (code, out, _) =
        avout_model(&["atom", "--faults", "0", "--planted", "atom-unchecked-write"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no lost update"), "{out}");
    assert!(out.contains("VIOLATED"), "{out}");
    assert!(
        out.contains("counterexample to \"no lost update\""),
        "{out}"
    );
    assert!(out.contains("setData /atom version None"), "{out}");
}
