//! Tricky histories that are linearizable: indeterminate operations, failed ones, the state limit.

use super::*;

#[test]
fn concurrent_writes_may_be_read_in_either_order() {
    for (first, second) in [(1, 2), (2, 1)] {
        let verdict = check([
            write(0, 1),
            write(1, 2),
            read(2),
            read_ok(2, first),
            write_ok(0, 1),
            write_ok(1, 2),
            read(2),
            read_ok(2, second),
        ]);
        assert!(verdict.is_linearizable(), "{verdict}");
    }
}

#[test]
fn reading_null_before_any_write_is_fine() {
    let verdict = check([
        read(0),
        read_ok(0, Value::Null),
        write(0, 1),
        write_ok(0, 1),
    ]);
    assert!(verdict.is_linearizable(), "{verdict}");
}

#[test]
fn an_info_write_may_be_observed_later() {
    let verdict = check(
        [
            wrote(0, 1).to_vec(),
            vec![write(1, 3), Event::info(1, F::Write, 3.into())],
            vec![read(2), read_ok(2, 1), read(2), read_ok(2, 3)],
        ]
        .concat(),
    );
    assert!(verdict.is_linearizable(), "{verdict}");
}

#[test]
fn an_info_write_may_never_take_effect() {
    let verdict = check(
        [
            wrote(0, 1).to_vec(),
            vec![write(1, 3), Event::info(1, F::Write, 3.into())],
            vec![read(2), read_ok(2, 1)],
        ]
        .concat(),
    );
    assert!(verdict.is_linearizable(), "{verdict}");
}

#[test]
fn an_invocation_never_completed_counts_as_info() {
    let h = [
        wrote(0, 1).to_vec(),
        vec![write(1, 3), read(2), read_ok(2, 3)],
    ]
    .concat();
    assert!(check(h.clone()).is_linearizable());
    let ops = history(h).operations(Keys::Field).unwrap();
    assert_eq!((ops[1].outcome, ops[1].complete), (Outcome::Info, None));
}

#[test]
fn a_failed_cas_did_not_happen() {
    let verdict = check(
        [
            wrote(0, 1).to_vec(),
            vec![cas(1, 2, 3), Event::fail(1, F::Cas, json!([2, 3]))],
            vec![cas(1, 1, 4), Event::fail(1, F::Cas, json!([1, 4]))],
            vec![read(2), read_ok(2, 1)],
        ]
        .concat(),
    );
    assert!(verdict.is_linearizable(), "{verdict}");
}

#[test]
fn an_info_cas_may_or_may_not_have_happened() {
    for observed in [1, 2] {
        let verdict = check(
            [
                wrote(0, 1).to_vec(),
                vec![cas(1, 1, 2), Event::info(1, F::Cas, json!([1, 2]))],
                vec![read(2), read_ok(2, observed)],
            ]
            .concat(),
        );
        assert!(verdict.is_linearizable(), "{verdict}");
    }
}

#[test]
fn failed_and_info_reads_constrain_nothing() {
    let verdict = check(
        [
            wrote(0, 1).to_vec(),
            vec![read(1), Event::fail(1, F::Read, 9.into())],
            vec![read(1), Event::info(1, F::Read, 8.into())],
        ]
        .concat(),
    );
    assert!(verdict.is_linearizable(), "{verdict}");
}

/// Many indeterminate writes pending at once, each observed once: a search that tried every
/// subset of them before each read would never finish.
#[test]
fn many_pending_info_writes_settle() {
    let n = 60;
    let mut events: Vec<Event> = (0..n).map(|p| write(p, p as i64 + 100)).collect();
    for p in 0..n {
        events.push(Event::info(p, F::Write, (p as i64 + 100).into()));
    }
    let reader = 1_000;
    for p in (0..n).rev() {
        events.extend([read(reader), read_ok(reader, p as i64 + 100)]);
        events.extend(wrote(reader, 7));
    }
    assert!(check(events.clone()).is_linearizable());
    // Seeing the first one again, after it was overwritten, is impossible.
    events.extend([read(reader), read_ok(reader, 100)]);
    assert_eq!(check(events).violations.len(), 1);
}

#[test]
fn unobserved_info_writes_are_ignored() {
    let mut events = Vec::new();
    for i in 0..500 {
        events.extend([
            write(i, i as i64),
            Event::info(i, F::Write, (i as i64).into()),
        ]);
        events.extend([read(10_000), read_ok(10_000, Value::Null)]);
    }
    let verdict = check(events);
    assert!(verdict.is_linearizable(), "{verdict}");
}

#[test]
fn the_state_limit_gives_unknown_not_a_verdict() {
    let h = Synth {
        operations: 200,
        ..Synth::default()
    }
    .history();
    let verdict = Checker::new(Model::CasRegister)
        .max_states(3)
        .analyse(&h)
        .unwrap();
    assert_eq!(verdict.unknown, vec![None]);
    assert!(verdict.violations.is_empty() && !verdict.is_linearizable());
    assert!(verdict.to_string().starts_with("unknown"));
}
