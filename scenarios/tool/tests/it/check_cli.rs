//! `avout check` (every model, JSON lines and Jepsen's EDN) and `avout demo` as a user runs
//! them: exit status 0 for a valid history or a replayed run, 1 for an anomaly, 2 for bad input.

use std::path::PathBuf;
use std::process::Output;

use crate::avout;

pub(crate) fn testdata(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../check/testdata")
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
    let out = avout(&[
        "check",
        &testdata("lin-kv.jsonl"),
        "--model",
        "no-such-model",
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown model is a usage error"
    );
}

fn json_verdict(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("a JSON verdict")
}

#[test]
fn list_append_histories_are_judged_with_the_cycle_named() {
    let out = avout(&[
        "check",
        &testdata("list-append-valid.jsonl"),
        "--model",
        "list-append",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("valid as strict-serializable"));

    let out = avout(&[
        "check",
        &testdata("list-append-g-single.jsonl"),
        "--model",
        "list-append",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("G-single: a cycle of 2 transactions"),
        "{stdout}"
    );
    assert!(
        stdout.contains("-rw->") && stdout.contains("-wr->"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("list-append checker found an anomaly"));

    let out = avout(&[
        "check",
        &testdata("list-append-g-single.jsonl"),
        "--model",
        "list-append",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let verdict = json_verdict(&out);
    assert_eq!(verdict["valid"], false);
    assert_eq!(verdict["anomalies"], serde_json::json!(["G-single"]));
}

#[test]
fn list_append_consistency_decides_whether_a_stale_read_counts() {
    let stale = testdata("list-append-stale.jsonl");
    let out = avout(&["check", &stale, "--model", "list-append", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        json_verdict(&out)["anomalies"],
        serde_json::json!(["G-single-realtime"])
    );
    let out = avout(&[
        "check",
        &stale,
        "--model",
        "list-append",
        "--consistency",
        "serializable",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// `avout check` on a file of the test data, with `--model` and the other arguments.
fn check(file: &str, model_and_args: &[&str]) -> Output {
    let path = testdata(file);
    let mut args = vec!["check", &path, "--model"];
    args.extend_from_slice(model_and_args);
    avout(&args)
}

#[test]
fn issue_15s_stale_read_and_future_read_are_rejected_and_named() {
    // An append nobody read, then a read of the empty list that began after it completed.
    let out = check("list-append-stale-unread.jsonl", &["list-append"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("anomalies: G-single-realtime")
            && stdout.contains("without 1, which T1 appended and nobody read"),
        "{stdout}"
    );
    let out = check("list-append-future-read.jsonl", &["list-append", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        json_verdict(&out)["anomalies"],
        serde_json::json!(["future-read"])
    );
}

#[test]
fn edn_list_append_histories_are_judged_like_json_ones() {
    // One map a line, keyword micro-ops and keys, and a nemesis event in the middle.
    let out = check("list-append-g-single.edn", &["list-append", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let verdict = json_verdict(&out);
    assert_eq!(verdict["anomalies"], serde_json::json!(["G-single"]));
    let report = verdict["report"].as_str().unwrap();
    assert!(
        report.contains(r#"process 1 txn [["r","x",[]],["r","y",[1]]] ok (lines 2-5)"#),
        "{report}"
    );
    // A vector of Jepsen Op records, with a comment: the stale read again.
    let out = check("list-append-stale-unread.edn", &["list-append", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        json_verdict(&out)["anomalies"],
        serde_json::json!(["G-single-realtime"])
    );
}

#[test]
fn knossos_cas_register_histories_in_edn() {
    let out = check("knossos-cas-register-valid.edn", &["cas-register"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("linearizable as a cas-register"));
    let out = check("knossos-cas-register-invalid.edn", &["cas-register"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("process 2 cas [1,3] ok (lines 6-7)"),
        "the comment line counts: {stdout}"
    );
}

#[test]
fn independent_keyed_edn_histories_split_by_key() {
    let file = "independent-cas-register.edn";
    let out = check(file, &["cas-register", "--tuple-keys"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("2 keys"), "{stdout}");
    assert!(
        stdout.contains("key \"a\": not linearizable") && !stdout.contains("key \"b\""),
        "only key a is wrong: {stdout}"
    );
    // Without --tuple-keys the pairs are whole values of one register.
    let out = check(file, &["cas-register"]);
    assert_ne!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn nemesis_events_in_edn_are_not_client_operations() {
    let out = check("register-nemesis.edn", &["cas-register"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("4 operations"),
        "{out:?}"
    );
}

#[test]
fn malformed_edn_exits_two_with_the_place_and_reason() {
    let out = check("malformed.edn", &["register"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 2, column 34: not EDN: an unmatched }"),
        "{stderr}"
    );
    let out = check("not-an-event.edn", &["list-append"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 2: not a history event: :type is :done"),
        "{stderr}"
    );
    // EDN by content, whatever the file is called.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.txt");
    std::fs::write(
        &path,
        "[{:type :invoke, :f :read, :value nil, :process 0}\n",
    )
    .unwrap();
    let out = avout(&["check", path.to_str().unwrap(), "--model", "register"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the vector of events is never closed"),
        "{out:?}"
    );
}

#[test]
fn a_bank_read_of_half_a_transfer_is_named() {
    let file = testdata("bank-half-transfer.jsonl");
    let out = avout(&["check", &file, "--model", "bank", "--total", "20", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let verdict = json_verdict(&out);
    assert_eq!(verdict["anomalies"], serde_json::json!(["wrong-total"]));
    let report = verdict["report"].as_str().unwrap();
    assert!(
        report.contains("process 0 read {\"a\":6,\"b\":10} ok (lines 4-5): balances sum to 16"),
        "{report}"
    );
    let out = avout(&["check", &file, "--model", "bank", "--accounts", "a,b,c"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("accounts missing: c"));
}

#[test]
fn mutex_histories_are_judged_by_the_fencing_rule() {
    let out = avout(&["check", &testdata("mutex-fenced.jsonl"), "--model", "mutex"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 holds (1 lost)"));
    let out = avout(&[
        "check",
        &testdata("mutex-overlap.jsonl"),
        "--model",
        "mutex",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        json_verdict(&out)["anomalies"],
        serde_json::json!(["overlap"])
    );
}

#[test]
fn two_phase_commit_histories_are_judged_for_atomic_commitment() {
    let out = avout(&[
        "check",
        &testdata("two-phase-commit-valid.jsonl"),
        "--model",
        "two-phase-commit",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("2 transactions (1 committed, 1 aborted, 0 undecided)")
    );
    // Site c0 learned commit though c1 voted abort and the coordinator learned abort.
    let out = avout(&[
        "check",
        &testdata("two-phase-commit-split.jsonl"),
        "--model",
        "two-phase-commit",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        json_verdict(&out)["anomalies"],
        serde_json::json!(["commit-despite-abort", "disagreement"])
    );
}

#[test]
fn a_history_of_the_wrong_model_exits_two() {
    for model in ["list-append", "bank", "mutex", "two-phase-commit"] {
        let out = avout(&["check", &testdata("lin-kv.jsonl"), "--model", model]);
        assert_eq!(out.status.code(), Some(2), "{model}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("not an operation of the {model} model")),
            "{model}: {stderr}"
        );
    }
}

#[test]
fn the_demo_replays_to_the_same_hash() {
    let out = avout(&["demo", "--seed", "7", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["hash"], report["replay_hash"]);
    assert!(report["requests"].as_u64().unwrap() > 0);
}
