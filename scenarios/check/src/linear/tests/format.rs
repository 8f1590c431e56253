//! The history format: malformed lines, pairing errors, Jepsen's extra fields, tuple keys, files.

use super::*;

#[test]
fn malformed_lines_are_reported_with_their_number() {
    let text = concat!(
        r#"{"type":"invoke","process":0,"f":"write","value":1}"#,
        "\n\n",
        r#"{"type":"done","process":0,"f":"write","value":1}"#,
        "\n"
    );
    match History::from_reader(text.as_bytes()) {
        Err(HistoryError::Parse { line: 3, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn pairing_errors_name_the_lines() {
    let orphan = history([write_ok(0, 1)]);
    assert!(matches!(
        orphan.operations(Keys::Field),
        Err(HistoryError::NoInvocation {
            line: 1,
            process: 0
        })
    ));
    let mismatched = history([write(0, 1), read_ok(0, 1)]);
    assert!(matches!(
        mismatched.operations(Keys::Field),
        Err(HistoryError::MismatchedF {
            line: 2,
            invoke_line: 1,
            ..
        })
    ));
    let err = check_history(&mismatched, Model::Register).unwrap_err();
    assert!(err.to_string().starts_with("line 2:"), "{err}");
}

#[test]
fn jepsen_lines_with_extra_fields_and_a_nemesis_are_read() {
    let text = r#"{"type":"invoke","f":"start","value":null,"process":"nemesis","time":5}
{"type":"invoke","f":"write","value":3,"process":0,"time":10,"index":1}
{"type":"info","f":"start","value":"partitioned","process":"nemesis","time":12}
{"type":"ok","f":"write","value":3,"process":0,"time":20,"index":3,"node":"n1"}
{"type":"invoke","f":"read","value":null,"process":1,"time":30,"index":4}
{"type":"ok","f":"read","value":3,"process":1,"time":40,"index":5}
"#;
    let h = History::from_reader(text.as_bytes()).unwrap();
    assert_eq!(h.events()[2].kind, EventType::Info);
    let ops = h.operations(Keys::Field).unwrap();
    assert_eq!(ops.len(), 2);
    assert_eq!((ops[1].invoke.line, ops[1].value.clone()), (5, json!(3)));
    assert!(
        check_history(&h, Model::Register)
            .unwrap()
            .is_linearizable()
    );
}

#[test]
fn tuple_keys_split_the_value() {
    let h = history([
        Event::invoke(0, F::Cas, json!(["k", [null, 1]])),
        Event::ok(0, F::Cas, json!(["k", [null, 1]])),
        Event::invoke(1, F::Read, json!(["k", null])),
        Event::ok(1, F::Read, json!(["k", 1])),
        Event::invoke(1, F::Read, json!(["j", null])),
        Event::fail(1, F::Read, Value::Null),
    ]);
    let verdict = Checker::new(Model::CasRegister)
        .keys(Keys::Tuple)
        .analyse(&h)
        .unwrap();
    assert!(verdict.is_linearizable(), "{verdict}");
    assert_eq!(verdict.keys, 2);
    let flat = history([Event::invoke(0, F::Write, 1.into())]);
    assert!(matches!(
        flat.operations(Keys::Tuple),
        Err(HistoryError::NotKeyed { line: 1, .. })
    ));
}

#[test]
fn histories_round_trip_through_files() {
    let h = Synth {
        operations: 300,
        keys: 3,
        ..Synth::default()
    }
    .history();
    let path = std::env::temp_dir().join(format!("avout-roundtrip-{}.jsonl", std::process::id()));
    h.write_file(&path).unwrap();
    let back = History::read_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(back, h);
    let verdict = crate::linear::check_file(&path, Model::CasRegister);
    assert!(matches!(
        verdict,
        Err(CheckError::History(HistoryError::Open { .. }))
    ));
}
