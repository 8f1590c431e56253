//! A history file read in blocks (`stream.rs`): the same findings and the same errors, in the
//! same order, as the file loaded as a `History` first.

use super::super::ListAppend;
use super::streamed_file;
use crate::Checker;
use crate::checker::CheckError;
use crate::history::History;

/// `text` as a file, streamed and loaded: each the findings in full, or the error.
fn both(text: &[u8]) -> (Result<String, String>, Result<String, String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.jsonl");
    std::fs::write(&path, text).unwrap();
    let streamed = streamed_file(&path)
        .map(|f| format!("{f:?}"))
        .map_err(|e| e.to_string());
    let loaded = History::read_file(&path)
        .map_err(CheckError::from)
        .and_then(|h| ListAppend::new().analyse(&h))
        .map(|f| format!("{f:?}"))
        .map_err(|e| e.to_string());
    (streamed, loaded)
}

/// The lines as a file: streamed and loaded agree; what they say.
fn same(lines: &[&str]) -> Result<String, String> {
    let text = lines.join("\n");
    let (streamed, loaded) = both(text.as_bytes());
    assert_eq!(streamed, loaded, "{text}");
    streamed
}

const T: &str = r#""f":"txn""#;

fn ev(kind: &str, p: &str, value: &str, extra: &str) -> String {
    format!(r#"{{"type":"{kind}","process":{p},{T},"value":{value}{extra}}}"#)
}

#[test]
fn what_the_json_allows_reads_alike() {
    let lines = [
        ev(
            "invoke",
            "0",
            r#"[["append",1,1],["r",2,null]]"#,
            r#","time":5,"index":0"#,
        ),
        String::new(),
        "   ".to_owned(),
        r#"{"type":"info","process":"nemesis","f":"kill","value":null}"#.to_owned(),
        ev(
            "ok",
            "0",
            r#"[["append",1,1],["r",2,[]]]"#,
            r#","extra":{"a":[1]}"#,
        ) + "\r",
        // An ok completion without a value: the invocation's reads, known (null: empty).
        ev(
            "invoke",
            "1",
            r#"[["r",1,null],["append","k\"\u00e9",-3]]"#,
            "",
        ),
        r#"{"type":"ok","process":1,"f":"txn"}"#.to_owned(),
        // Shapes the fast parse leaves to JSON: floats, nested values, huge integers.
        ev(
            "invoke",
            "2",
            r#"[["append",1.5,{"b":1,"a":[2]}],["append",1,18446744073709551615]]"#,
            "",
        ),
        ev(
            "ok",
            "2",
            r#"[["append",1.5,{"a":[2],"b":1}],["append",1,18446744073709551615]]"#,
            "",
        ),
        ev(
            "invoke",
            "3",
            r#"[["r",1,null],["r",1.5,null]]"#,
            r#","key":"x""#,
        ),
        ev(
            "ok",
            "3",
            r#"[["r",1,[1,18446744073709551615]],["r",1.5,[{"a":[2],"b":1}]]]"#,
            "",
        ),
        // Definite and indefinite failures by Maelstrom's codes; one never completed.
        ev("invoke", "4", r#"[["append",9,1]]"#, ""),
        ev("fail", "4", r#"[["append",9,1]]"#, r#","error":11"#),
        ev("invoke", "5", r#"[["append",9,2]]"#, ""),
        ev("fail", "5", r#"[["append",9,2]]"#, r#","error":0"#),
        ev("invoke", "6", r#"[["append",9,3]]"#, ""),
        ev("invoke", "7", r#"[["r",9,null]]"#, ""),
        ev("ok", "7", r#"[["r",9,[2]]]"#, ""),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let findings = same(&lines).unwrap();
    assert!(findings.contains("GSingle"), "{findings}");
    // A read of a value nobody appended, to show the elements come back as they were.
    let mut bad = lines.clone();
    let garbage = ev("ok", "7", r#"[["r",9,[2,-7.25]]]"#, "");
    *bad.last_mut().unwrap() = &garbage;
    let findings = same(&bad).unwrap();
    assert!(findings.contains("-7.25"), "{findings}");
}

#[test]
fn errors_come_in_the_order_loading_gives_them() {
    let inv = |p: &str, v: &str| ev("invoke", p, v, "");
    let ok = |p: &str, v: &str| ev("ok", p, v, "");
    let a1 = r#"[["append",1,1]]"#;
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![inv("0", a1), "not json".into()],
            "line 2: not a history event",
        ),
        // A line that is no event wins over an unpaired one before it, as loading reads first.
        (
            vec![
                inv("0", a1),
                inv("0", a1),
                ok("0", a1),
                r#"{"type":"ok"}"#.into(),
            ],
            "line 4: not a history event",
        ),
        (vec![inv("0", a1), inv("0", a1)], "line 2"),
        (vec![ok("0", a1)], "never invoked"),
        (
            vec![
                inv("0", a1),
                r#"{"type":"ok","process":0,"f":"read","value":null}"#.into(),
            ],
            "line 2",
        ),
        (
            vec![inv("0", a1), ev("ok", "0", a1, r#","error":11"#)],
            "an ok completion with error",
        ),
        (
            vec![
                inv("0", a1),
                ev("invoke", "1", "null", "").replace("txn", "read"),
            ],
            "line 2",
        ),
        (vec![inv("0", r#"[["w",1,1]]"#)], "line 1"),
        (vec![inv("0", a1), ok("0", r#"[["r",1,5]]"#)], "line 2"),
        (
            vec![inv("0", a1), ok("0", a1), inv("1", a1), ok("1", a1)],
            "appended to key 1 twice",
        ),
        (
            vec![
                inv("0", a1),
                r#"{"type":"ok","process":0,"f":"txn","time":"x"}"#.into(),
            ],
            "line 2",
        ),
    ];
    for (lines, says) in cases {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let err = same(&lines).expect_err(&lines.join("\n"));
        assert!(err.contains(says), "{err} does not say {says:?}: {lines:?}");
    }
    // A malformed invocation whose ok completion carries its value is judged on the value.
    let fixed = [inv("0", r#"[["w",1,1]]"#), ok("0", a1)];
    assert!(same(&fixed.iter().map(String::as_str).collect::<Vec<_>>()).is_ok());
    // Bytes that are not UTF-8.
    let mut text = inv("0", a1).into_bytes();
    text.extend_from_slice(b"\n{\"type\":\"ok\xff\"}\n");
    let (streamed, loaded) = both(&text);
    assert_eq!(streamed, loaded);
    assert!(streamed.unwrap_err().contains("line 2"));
}

#[test]
fn edn_and_json_files_of_the_corpus_judge_alike() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut judged = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("list-append") {
            continue;
        }
        let checker = ListAppend::new();
        let streamed = checker.check_file(&path).unwrap();
        let loaded = checker.check(&History::load(&path).unwrap()).unwrap();
        assert_eq!(streamed.report(), loaded.report(), "{name}");
        judged += 1;
    }
    assert!(judged >= 3, "only {judged} list-append files in testdata");
}
