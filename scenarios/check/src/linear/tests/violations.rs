//! Hand-made histories that are not linearizable: each must be caught, and named.

use super::*;

#[test]
fn stale_read_is_a_violation() {
    let verdict = check(
        [
            wrote(0, 1).to_vec(),
            wrote(0, 2).to_vec(),
            vec![read(1), read_ok(1, 1)],
        ]
        .concat(),
    );
    assert!(!verdict.is_linearizable());
    let v = &verdict.violations[0];
    assert_eq!(
        (v.op.process, v.op.f.clone(), v.op.value.clone()),
        (1, F::Read, json!(1))
    );
    assert_eq!(v.op.invoke.line, 5);
    assert_eq!(v.op.complete.map(|c| c.line), Some(6));
    assert_eq!(v.states, vec![json!(2)]);
    assert_eq!(v.path_len, 2);
    let text = verdict.to_string();
    assert!(text.starts_with("not linearizable"), "{text}");
    assert!(text.contains("process 1 read 1 ok (lines 5-6)"), "{text}");
    assert!(text.contains("register holding: 2"), "{text}");
}

#[test]
fn lost_update_is_a_violation() {
    let verdict = check(
        [
            wrote(0, 0).to_vec(),
            vec![cas(1, 0, 1), cas(2, 0, 2), cas_ok(1, 0, 1), cas_ok(2, 0, 2)],
        ]
        .concat(),
    );
    let v = &verdict.violations[0];
    // Either cas could go first; the search gets stuck at the later completion.
    assert_eq!(v.op.process, 2);
    assert_eq!(v.states, vec![json!(1)]);
    assert_eq!(v.open.len(), 0);
}

#[test]
fn cas_from_a_value_that_never_existed_is_a_violation() {
    let verdict = check([wrote(0, 1).to_vec(), vec![cas(1, 7, 8), cas_ok(1, 7, 8)]].concat());
    let v = &verdict.violations[0];
    assert_eq!(
        (v.cause, v.op.value.clone()),
        (Cause::NeverWritten, json!([7, 8]))
    );
    // The value is written concurrently, but then the cas must have consumed it.
    let verdict = check(
        [
            wrote(0, 1).to_vec(),
            vec![cas(1, 7, 8), write(0, 7), write_ok(0, 7), cas_ok(1, 7, 8)],
            vec![read(2), read_ok(2, 7)],
        ]
        .concat(),
    );
    let v = &verdict.violations[0];
    assert_eq!((v.cause, v.op.value.clone()), (Cause::NoOrder, json!(7)));
    assert_eq!(v.states, vec![json!(8)]);
}

#[test]
fn read_of_a_value_never_written_is_a_violation() {
    let verdict = check([write(0, 1), read(1), write_ok(0, 1), read_ok(1, 5)]);
    let v = &verdict.violations[0];
    assert_eq!(
        (v.cause, v.op.value.clone()),
        (Cause::NeverWritten, json!(5))
    );
    assert!(verdict.to_string().contains("wrote the value observed by"));
    // Written only after the read completed: the same, without a search.
    let events = [
        write(0, 1),
        read(1),
        write_ok(0, 1),
        read_ok(1, 5),
        write(0, 5),
    ];
    let v = &check(events.clone()).violations[0];
    assert_eq!(
        (v.cause, v.op.value.clone()),
        (Cause::NeverWritten, json!(5))
    );
    // And the search refutes it too: by the read's completion the write of 1 has completed,
    // so must have taken effect, and the write of 5 had not begun.
    let verdict = Checker::new(Model::CasRegister)
        .without_precheck()
        .analyse(&history(events))
        .unwrap();
    let v = &verdict.violations[0];
    assert_eq!((v.cause, v.op.value.clone()), (Cause::NoOrder, json!(5)));
    assert_eq!(v.states, vec![json!(1)]);
}

#[test]
fn reads_flipping_between_concurrent_writes_is_a_violation() {
    let verdict = check([
        write(0, 1),
        write(1, 2),
        write_ok(0, 1),
        write_ok(1, 2),
        read(2),
        read_ok(2, 1),
        read(2),
        read_ok(2, 2),
    ]);
    assert_eq!(verdict.violations[0].op.value, json!(2));
}

#[test]
fn an_info_write_cannot_take_effect_twice() {
    let verdict = check(
        [
            wrote(0, 1).to_vec(),
            vec![write(1, 3), Event::info(1, F::Write, 3.into())],
            vec![read(2), read_ok(2, 3), read(2), read_ok(2, 1)],
        ]
        .concat(),
    );
    assert_eq!(verdict.violations[0].op.value, json!(1));
    assert_eq!(verdict.violations[0].states, vec![json!(3)]);
}

#[test]
fn an_observed_failed_cas_is_a_violation() {
    let verdict = check(
        [
            wrote(0, 1).to_vec(),
            vec![cas(1, 1, 2), Event::fail(1, F::Cas, json!([1, 2]))],
            vec![read(2), read_ok(2, 2)],
        ]
        .concat(),
    );
    assert_eq!(verdict.violations.len(), 1);
}

#[test]
fn keys_are_checked_independently_and_named() {
    let on = |k: &str, e: Event| e.with_key(k.into());
    let verdict = check([
        on("a", write(0, 1)),
        on("a", write_ok(0, 1)),
        on("b", read(1)),
        on("b", read_ok(1, 1)),
        on("a", read(2)),
        on("a", read_ok(2, 1)),
    ]);
    assert_eq!(verdict.keys, 2);
    assert_eq!(verdict.violations.len(), 1);
    assert_eq!(verdict.violations[0].key, Some(json!("b")));
    assert!(verdict.to_string().contains("key \"b\": not linearizable"));
}

#[test]
fn the_register_model_has_no_cas() {
    let h = history([cas(0, 1, 2), cas_ok(0, 1, 2)]);
    match check_history(&h, Model::Register) {
        Err(CheckError::Unsupported {
            line: 1,
            f: F::Cas,
            model: "register",
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_functions_and_malformed_cas_are_errors() {
    let append = history([Event::invoke(0, F::Other("append".into()), 1.into())]);
    assert!(matches!(
        check_history(&append, Model::CasRegister),
        Err(CheckError::Unsupported { line: 1, .. })
    ));
    let bad = history([Event::invoke(0, F::Cas, json!([1, 2, 3]))]);
    assert!(matches!(
        check_history(&bad, Model::CasRegister),
        Err(CheckError::Malformed { line: 1, .. })
    ));
}
