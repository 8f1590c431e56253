//! The checker on hand-made violations, tricky valid histories, and generated ones.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::synth::Synth;
use super::{Cause, CheckError, Checker, Model, Verdict, check_history};
use crate::history::{Event, EventType, F, History, HistoryError, Keys, Outcome};

fn history(events: impl IntoIterator<Item = Event>) -> History {
    events.into_iter().collect()
}

fn check(events: impl IntoIterator<Item = Event>) -> Verdict {
    check_history(&history(events), Model::CasRegister).expect("well-formed history")
}

fn read(p: u64) -> Event {
    Event::invoke(p, F::Read, Value::Null)
}

fn read_ok(p: u64, v: impl Into<Value>) -> Event {
    Event::ok(p, F::Read, v.into())
}

fn write(p: u64, v: i64) -> Event {
    Event::invoke(p, F::Write, v.into())
}

fn write_ok(p: u64, v: i64) -> Event {
    Event::ok(p, F::Write, v.into())
}

fn cas(p: u64, from: i64, to: i64) -> Event {
    Event::invoke(p, F::Cas, json!([from, to]))
}

fn cas_ok(p: u64, from: i64, to: i64) -> Event {
    Event::ok(p, F::Cas, json!([from, to]))
}

/// Sequential write then completed write, as a prefix many tests share.
fn wrote(p: u64, v: i64) -> [Event; 2] {
    [write(p, v), write_ok(p, v)]
}

// ---- violations ----

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
        .check(&history(events))
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
            model: Model::Register,
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
        Err(CheckError::MalformedCas { line: 1, .. })
    ));
}

// ---- valid, tricky ----

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
        .check(&h)
        .unwrap();
    assert_eq!(verdict.unknown, vec![None]);
    assert!(verdict.violations.is_empty() && !verdict.is_linearizable());
    assert!(verdict.to_string().starts_with("unknown"));
}

// ---- history format ----

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
        .check(&h)
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
    let verdict = super::check_file(&path, Model::CasRegister);
    assert!(matches!(
        verdict,
        Err(CheckError::History(HistoryError::Open { .. }))
    ));
}

// ---- generated ----

fn big(seed: u64, tweak: impl FnOnce(&mut Synth)) -> History {
    let mut synth = Synth {
        seed,
        operations: 10_000,
        ..Synth::default()
    };
    tweak(&mut synth);
    synth.history()
}

#[test]
fn generated_cas_register_history_of_10k_operations_is_linearizable() {
    let h = big(1, |_| {});
    let verdict = check_history(&h, Model::CasRegister).unwrap();
    assert!(verdict.is_linearizable(), "{verdict}");
    assert_eq!(verdict.operations, 10_000);
}

#[test]
fn generated_register_history_with_few_values_and_many_processes_is_linearizable() {
    let h = big(2, |s| {
        s.cas = false;
        s.values = 3;
        s.processes = 10;
        s.info_rate = 0.05;
    });
    let verdict = check_history(&h, Model::Register).unwrap();
    assert!(verdict.is_linearizable(), "{verdict}");
}

#[test]
fn generated_keyed_history_is_linearizable() {
    let h = big(3, |s| {
        s.keys = 8;
        s.processes = 50;
    });
    let verdict = check_history(&h, Model::CasRegister).unwrap();
    assert!(verdict.is_linearizable(), "{verdict}");
    assert_eq!(verdict.keys, 8);
}

/// Heavily concurrent histories where a fifth or more of the operations end `info` (40 and 30
/// processes over 4 and 5 values). Trying each node's indeterminate candidates only after its
/// definite ones settles these in some ten thousand states; trying them in call order took over
/// a million (`examples/check_speed.rs` shows the figures), past this budget.
#[test]
fn heavily_concurrent_histories_with_many_info_operations_settle() {
    let register = Synth {
        seed: 0,
        processes: 40,
        operations: 3_000,
        values: 4,
        cas: false,
        info_rate: 0.25,
        ..Synth::default()
    };
    let cas = Synth {
        processes: 30,
        values: 5,
        cas: true,
        info_rate: 0.3,
        ..register.clone()
    };
    for (synth, model) in [(register, Model::Register), (cas, Model::CasRegister)] {
        let h = synth.history();
        let infos = h
            .events()
            .iter()
            .filter(|e| e.kind == EventType::Info)
            .count();
        assert!(infos > 600, "{infos} info operations");
        let verdict = Checker::new(model).max_states(200_000).check(&h).unwrap();
        assert!(verdict.is_linearizable(), "{synth:?}: {verdict}");
    }
}

/// A read from the future planted in histories where a fifth of the operations end `info`:
/// the pre-check names it at once among 40 processes; the search alone (no pre-check), which
/// must exhaust every order of the prefix with every info operation a possible explanation,
/// refutes it among 8 in a shorter history (in longer ones it can still exhaust the state
/// budget: refuting is exponential in the info operations open at once, and they never close).
#[test]
fn a_violation_planted_in_a_history_with_many_info_operations_is_found() {
    for (processes, operations, precheck) in [(40, 1_000, true), (8, 300, false)] {
        for seed in 0..4 {
            let h = Synth {
                seed,
                processes,
                operations,
                values: 4,
                cas: false,
                info_rate: 0.2,
                ..Synth::default()
            }
            .history();
            let (h, line) = read_from_the_future(&h, 40 + seed as usize * 37).unwrap();
            let checker = Checker::new(Model::Register).max_states(2_000_000);
            let checker = if precheck {
                checker
            } else {
                checker.without_precheck()
            };
            let verdict = checker.check(&h).unwrap();
            assert_eq!(verdict.violations.len(), 1, "seed {seed}: {verdict}");
            let expected = if precheck {
                Cause::NeverWritten
            } else {
                Cause::NoOrder
            };
            assert_eq!(verdict.violations[0].cause, expected);
            assert_eq!(
                verdict.violations[0].op.complete.map(|c| c.line),
                Some(line)
            );
        }
    }
}

/// Replaces the value of the `nth` (mod count) read that completed ok with one never written;
/// returns the mutated history and the completion's line.
fn corrupt_a_read(h: &History, nth: usize) -> Option<(History, usize)> {
    let reads: Vec<usize> = (0..h.len())
        .filter(|&i| h.events()[i].kind == EventType::Ok && h.events()[i].f == F::Read)
        .collect();
    let target = *reads.get(nth % reads.len().max(1))?;
    let mut events = h.events().to_vec();
    events[target].value = json!("never written");
    Some((events.into_iter().collect(), target + 1))
}

#[test]
fn a_corrupted_read_in_10k_operations_is_caught() {
    let (h, line) = corrupt_a_read(&big(4, |_| {}), 2_500).unwrap();
    let verdict = check_history(&h, Model::CasRegister).unwrap();
    assert_eq!(verdict.violations.len(), 1);
    assert_eq!(
        verdict.violations[0].op.complete.map(|c| c.line),
        Some(line)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn generated_histories_are_linearizable(
        seed in any::<u64>(),
        processes in 1u64..12,
        values in 1u64..6,
        cas in any::<bool>(),
        info_rate in 0.0f64..0.3,
    ) {
        let h = Synth { seed, processes, operations: 300, keys: 1, values, cas, info_rate }.history();
        let verdict = check_history(&h, Model::CasRegister).unwrap();
        prop_assert!(verdict.is_linearizable(), "{}", verdict);
    }

    #[test]
    fn a_read_of_a_value_never_written_is_always_caught(
        seed in any::<u64>(),
        processes in 1u64..12,
        values in 1u64..6,
        keys in 1u64..3,
        info_rate in 0.0f64..0.3,
        nth in any::<usize>(),
    ) {
        let h = Synth { seed, processes, operations: 300, keys, values, cas: true, info_rate }.history();
        let Some((h, line)) = corrupt_a_read(&h, nth) else { return Ok(()) };
        let verdict = check_history(&h, Model::CasRegister).unwrap();
        prop_assert_eq!(verdict.violations.len(), 1);
        // The prefix up to the corrupted read's completion is the shortest that fails.
        prop_assert_eq!(verdict.violations[0].op.complete.map(|c| c.line), Some(line));
        prop_assert_eq!(&verdict.violations[0].op.value, &json!("never written"));
        prop_assert_eq!(verdict.violations[0].cause, Cause::NeverWritten);
    }

    /// The search itself (the pre-check would settle these at once) must refute a read of a
    /// value written only after the read completed.
    #[test]
    fn a_read_from_the_future_is_always_caught(
        seed in any::<u64>(),
        processes in 1u64..6,
        values in 1u64..6,
        info_rate in 0.0f64..0.1,
        nth in any::<usize>(),
    ) {
        let h = Synth { seed, processes, operations: 200, keys: 1, values, cas: true, info_rate }.history();
        let Some((h, line)) = read_from_the_future(&h, nth) else { return Ok(()) };
        let verdict = Checker::new(Model::CasRegister).without_precheck().check(&h).unwrap();
        prop_assert_eq!(verdict.violations.len(), 1, "{}", verdict);
        prop_assert_eq!(verdict.violations[0].cause, Cause::NoOrder);
        prop_assert_eq!(verdict.violations[0].op.complete.map(|c| c.line), Some(line));
    }
}

/// Makes the `nth` (mod count) ok read return a fresh value that the first ok write invoked
/// after the read completed then writes; returns the history and the read's completion line.
fn read_from_the_future(h: &History, nth: usize) -> Option<(History, usize)> {
    let ops = h.operations(Keys::Field).ok()?;
    let candidates: Vec<(usize, usize, usize)> = ops
        .iter()
        .filter(|r| r.f == F::Read && r.outcome == Outcome::Ok)
        .filter_map(|r| {
            let done = r.complete?.index;
            let w = ops
                .iter()
                .find(|w| w.f == F::Write && w.outcome == Outcome::Ok && w.invoke.index > done)?;
            Some((done, w.invoke.index, w.complete?.index))
        })
        .collect();
    let &(read_done, w_invoke, w_done) = candidates.get(nth % candidates.len().max(1))?;
    let mut events = h.events().to_vec();
    for i in [read_done, w_invoke, w_done] {
        events[i].value = json!("fresh");
    }
    Some((events.into_iter().collect(), read_done + 1))
}

// ---- against brute force ----

/// Whether some order of the operations that took effect, and of any subset of those that may
/// have, respects real time and the cas-register: the definition, by exhaustive enumeration.
fn brute_force(ops: &[crate::history::Operation]) -> bool {
    let ops: Vec<&crate::history::Operation> = ops
        .iter()
        .filter(|op| match op.outcome {
            Outcome::Ok => true,
            Outcome::Info => op.f != F::Read,
            Outcome::Fail => false,
        })
        .collect();
    fn go(ops: &[&crate::history::Operation], placed: &mut Vec<bool>, state: &Value) -> bool {
        let done = |i: usize| placed[i] || ops[i].outcome != Outcome::Ok;
        if (0..ops.len()).all(done) {
            return true;
        }
        for i in 0..ops.len() {
            if placed[i] {
                continue;
            }
            // Every operation that returned before this one was invoked must come first.
            let blocked = (0..ops.len()).any(|j| {
                !placed[j]
                    && ops[j].complete.is_some_and(|c| {
                        ops[j].outcome == Outcome::Ok && c.index < ops[i].invoke.index
                    })
            });
            if blocked {
                continue;
            }
            let next = match ops[i].f {
                F::Read if ops[i].value == *state => state.clone(),
                F::Write => ops[i].value.clone(),
                F::Cas if ops[i].value[0] == *state => ops[i].value[1].clone(),
                _ => continue,
            };
            placed[i] = true;
            let found = go(ops, placed, &next);
            placed[i] = false;
            if found {
                return true;
            }
        }
        false
    }
    go(&ops, &mut vec![false; ops.len()], &Value::Null)
}

fn small_value() -> impl Strategy<Value = Value> {
    prop_oneof![Just(Value::Null), (0i64..3).prop_map(Value::from)]
}

/// A random, usually not linearizable, history: each step invokes or completes an operation
/// of one of three processes, with arbitrary values and outcomes.
fn random_history() -> impl Strategy<Value = History> {
    let step = (0u64..3, 0u8..3, small_value(), small_value(), 0u8..4);
    proptest::collection::vec(step, 1..16).prop_map(|steps| {
        let mut open: [Option<(F, Value)>; 3] = [None, None, None];
        let mut h = History::new();
        for (p, f, a, b, outcome) in steps {
            match open[p as usize].take() {
                None => {
                    let (f, value) = match f {
                        0 => (F::Read, Value::Null),
                        1 => (F::Write, a),
                        _ => (F::Cas, json!([a, b])),
                    };
                    h.push(Event::invoke(p, f.clone(), value.clone()));
                    open[p as usize] = Some((f, value));
                }
                Some((f, value)) => {
                    let value = if f == F::Read { a } else { value };
                    h.push(match outcome {
                        0 => Event::fail(p, f, value),
                        1 => Event::info(p, f, value),
                        _ => Event::ok(p, f, value),
                    });
                }
            }
        }
        h
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Every pruning rule and reduction in the search is meant to be exact: the verdict must
    /// match the definition on small random histories, linearizable or not.
    #[test]
    fn the_search_agrees_with_brute_force(h in random_history()) {
        let ops = h.operations(Keys::Field).unwrap();
        let expected = brute_force(&ops);
        for checker in [Checker::new(Model::CasRegister), Checker::new(Model::CasRegister).without_precheck()] {
            let verdict = checker.check(&h).unwrap();
            prop_assert!(verdict.unknown.is_empty());
            prop_assert_eq!(verdict.is_linearizable(), expected, "{}", verdict);
        }
    }
}

// ---- golden files ----

fn testdata(name: &str) -> std::path::PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "src/check/testdata", name]
        .iter()
        .collect()
}

/// Jepsen's fields, a nemesis, and two cas from 0 that both succeed.
#[test]
fn golden_lost_update() {
    let verdict = super::check_file(testdata("lost-update.jsonl"), Model::CasRegister).unwrap();
    let v = &verdict.violations[0];
    assert_eq!(
        (v.cause, v.op.process, v.op.f.clone()),
        (Cause::NoOrder, 2, F::Cas)
    );
    assert_eq!(
        (v.op.invoke.line, v.op.complete.map(|c| c.line)),
        (6, Some(10))
    );
    assert_eq!(v.states, vec![json!(1)]);
}

/// lin-kv style keys, an info cas that took effect, a failed cas, a write never completed.
#[test]
fn golden_lin_kv() {
    let verdict = super::check_file(testdata("lin-kv.jsonl"), Model::CasRegister).unwrap();
    assert!(verdict.is_linearizable(), "{verdict}");
    assert_eq!((verdict.keys, verdict.operations), (2, 7));
}
