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
    // Two cycles by default, so that a release can ride with the next acquisition.
    assert!(out.contains("states: 10909, unique states: 5981"), "{out}");
    assert!(out.contains("mutual exclusion with fencing"), "{out}");
    assert!(out.contains("holds"), "{out}");
    assert!(out.contains("example found"), "{out}");
}

#[test]
fn json_output_is_one_object_with_counts_config_and_verdicts() {
    let (code, out, err) = avout_model(&["mutex", "--clients", "2", "--faults", "0", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.lines().count(), 1, "one line: {out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["model"], "mutex");
    assert_eq!(v["config"]["clients"], 2);
    assert_eq!(v["config"]["faults"], 0);
    assert_eq!(
        (v["states"].as_u64(), v["unique_states"].as_u64()),
        (Some(10909), Some(5981))
    );
    assert!(v["time_ms"].as_f64().is_some(), "{v}");
    assert_eq!(v["ok"], true);
    let properties = v["properties"].as_array().expect("properties");
    let exclusion = properties
        .iter()
        .find(|p| p["name"] == "mutual exclusion with fencing")
        .expect("the exclusion property");
    assert_eq!(
        (&exclusion["kind"], &exclusion["verdict"]),
        (&"always".into(), &"holds".into())
    );
    assert!(exclusion["trace"].is_null());
    let held = properties
        .iter()
        .find(|p| p["name"] == "every client held")
        .expect("a sometimes property");
    assert_eq!(
        (&held["kind"], &held["verdict"]),
        (&"sometimes".into(), &"found".into())
    );
    let steps = held["trace"]["steps"]
        .as_array()
        .expect("the example's steps");
    assert_eq!(steps[0]["step"], 1);
    assert!(
        steps[0]["action"].as_str().unwrap().starts_with("Apply("),
        "{v}"
    );
    assert!(
        steps[0]["what"]
            .as_str()
            .unwrap()
            .starts_with("server applies client "),
        "{v}"
    );
}

#[test]
fn a_depth_too_small_to_reach_the_examples_is_incomplete() {
    // Not reaching an example within the bound says nothing about the protocol: exit 3
    // ("incomplete"), not 1 ("violated").
    let (code, out, _) = avout_model(&["election", "--depth", "3"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("not found within the bound"), "{out}");
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

    let (code, out, _) = avout_model(&[
        "atom",
        "--faults",
        "0",
        "--planted",
        "atom-unchecked-write",
        "--json",
    ]);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["ok"], false);
    assert_eq!(v["config"]["planted"], "atom-unchecked-write");
    let lost = v["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "no lost update")
        .expect("the property");
    assert_eq!(lost["verdict"], "violated");
    let steps = lost["trace"]["steps"]
        .as_array()
        .expect("the counterexample's steps");
    assert!(
        steps.iter().any(|s| s["what"]
            .as_str()
            .unwrap()
            .contains("setData /atom version None")),
        "{lost}"
    );
    assert_eq!(lost["trace"]["at_end"].as_array().map(Vec::len), Some(2));
}
