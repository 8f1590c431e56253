//! The list-append checker on a hand-made history per anomaly, valid histories, and generated
//! ones.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::synth::{ListAppendSynth, stale_read};
use super::{
    Anomaly, Consistency, CycleKind, EdgeKind, Expected, ListAppendChecker, ListAppendError,
    ListAppendVerdict, Order, check_list_append,
};
use crate::history::{Event, History};

fn txn() -> crate::history::F {
    crate::history::F::Other("txn".into())
}

/// `invoke(p, [..])` with reads' values blanked, as a client invokes.
fn invoke(p: u64, mops: Value) -> Event {
    let blank = mops
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match m[0].as_str() {
            Some("r") => json!(["r", m[1], null]),
            _ => m.clone(),
        })
        .collect();
    Event::invoke(p, txn(), Value::Array(blank))
}

fn ok(p: u64, mops: Value) -> Event {
    Event::ok(p, txn(), mops)
}

/// A transaction run alone: invoke then ok.
fn solo(p: u64, mops: Value) -> [Event; 2] {
    [invoke(p, mops.clone()), ok(p, mops)]
}

fn check(events: Vec<Event>) -> ListAppendVerdict {
    let h: History = events.into_iter().collect();
    check_list_append(&h).expect("well-formed history")
}

fn cycles(verdict: &ListAppendVerdict) -> Vec<&super::Cycle> {
    verdict
        .anomalies
        .iter()
        .filter_map(|a| match a {
            Anomaly::Cycle(c) => Some(c),
            _ => None,
        })
        .collect()
}

fn edge_kinds(c: &super::Cycle) -> Vec<EdgeKind> {
    c.edges.iter().map(|e| e.kind).collect()
}

/// The processes of a cycle's transactions, in cycle order from the smallest.
fn processes(c: &super::Cycle) -> Vec<u64> {
    let mut ps: Vec<u64> = c.transactions.iter().map(|t| t.process).collect();
    let start = (0..ps.len()).min_by_key(|&i| ps[i]).unwrap();
    ps.rotate_left(start);
    ps
}

// ---- one history per anomaly ----

#[test]
fn g0_write_cycle() {
    // x shows 1 then 2, y shows 2 then 1: each transaction's append precedes the other's.
    let verdict = check(
        [
            vec![
                invoke(0, json!([["append", "x", 1], ["append", "y", 1]])),
                invoke(1, json!([["append", "x", 2], ["append", "y", 2]])),
                ok(0, json!([["append", "x", 1], ["append", "y", 1]])),
                ok(1, json!([["append", "x", 2], ["append", "y", 2]])),
            ],
            solo(2, json!([["r", "x", [1, 2]], ["r", "y", [2, 1]]])).to_vec(),
        ]
        .concat(),
    );
    assert_eq!(verdict.anomaly_names(), vec!["G0"], "{verdict}");
    let c = cycles(&verdict)[0];
    assert_eq!((c.kind, c.order), (CycleKind::G0, Order::None));
    assert_eq!(processes(c), vec![0, 1]);
    assert_eq!(edge_kinds(c), vec![EdgeKind::Ww, EdgeKind::Ww]);
    let keys: Vec<Value> = c.edges.iter().map(|e| e.key.clone().unwrap()).collect();
    assert!(keys.contains(&json!("x")) && keys.contains(&json!("y")));
    let text = verdict.to_string();
    assert!(text.contains("G0: a cycle of 2 transactions"), "{text}");
    assert!(text.contains("appended 2 to key \"y\", and T"), "{text}");
}

#[test]
fn g1a_aborted_read() {
    let verdict = check(
        [
            vec![
                invoke(0, json!([["append", "x", 1]])),
                Event::fail(0, txn(), json!([["append", "x", 1]])),
            ],
            solo(1, json!([["r", "x", [1]]])).to_vec(),
        ]
        .concat(),
    );
    assert_eq!(verdict.anomaly_names(), vec!["G1a"], "{verdict}");
    let Anomaly::AbortedRead {
        reader,
        writer,
        key,
        element,
    } = &verdict.anomalies[0]
    else {
        panic!("{verdict}")
    };
    assert_eq!((reader.process, writer.process), (1, 0));
    assert_eq!((key, element), (&json!("x"), &json!(1)));
}

#[test]
fn g1b_intermediate_read() {
    let verdict = check(
        [
            solo(0, json!([["append", "x", 1], ["append", "x", 2]])).to_vec(),
            solo(1, json!([["r", "x", [1]]])).to_vec(),
        ]
        .concat(),
    );
    assert!(
        verdict.anomaly_names().contains(&"G1b".to_owned()),
        "{verdict}"
    );
    let g1b = verdict
        .anomalies
        .iter()
        .find(|a| a.name() == "G1b")
        .unwrap();
    let Anomaly::IntermediateRead {
        reader,
        writer,
        element,
        later,
        ..
    } = g1b
    else {
        unreachable!()
    };
    assert_eq!((reader.process, writer.process), (1, 0));
    assert_eq!((element, later), (&json!(1), &json!(2)));
}

#[test]
fn g1c_circular_information_flow() {
    // Each sees the other's append: information flows both ways.
    let verdict = check(vec![
        invoke(0, json!([["append", "x", 1], ["r", "y", [2]]])),
        invoke(1, json!([["append", "y", 2], ["r", "x", [1]]])),
        ok(0, json!([["append", "x", 1], ["r", "y", [2]]])),
        ok(1, json!([["append", "y", 2], ["r", "x", [1]]])),
    ]);
    assert_eq!(verdict.anomaly_names(), vec!["G1c"], "{verdict}");
    let c = cycles(&verdict)[0];
    assert_eq!(processes(c), vec![0, 1]);
    assert_eq!(edge_kinds(c), vec![EdgeKind::Wr, EdgeKind::Wr]);
}

#[test]
fn g_single_read_skew() {
    // T1 sees T0's append to y but not its append to x.
    let verdict = check(vec![
        invoke(0, json!([["append", "x", 1], ["append", "y", 1]])),
        invoke(1, json!([["r", "x", []], ["r", "y", [1]]])),
        ok(0, json!([["append", "x", 1], ["append", "y", 1]])),
        ok(1, json!([["r", "x", []], ["r", "y", [1]]])),
        invoke(2, json!([["r", "x", [1]]])),
        ok(2, json!([["r", "x", [1]]])),
    ]);
    assert_eq!(verdict.anomaly_names(), vec!["G-single"], "{verdict}");
    let c = cycles(&verdict)[0];
    assert_eq!(processes(c), vec![0, 1]);
    let mut kinds = edge_kinds(c);
    kinds.sort_by_key(|k| k.to_string());
    assert_eq!(kinds, vec![EdgeKind::Rw, EdgeKind::Wr]);
    let rw = c.edges.iter().find(|e| e.kind == EdgeKind::Rw).unwrap();
    assert_eq!(rw.key, Some(json!("x")));
    assert_eq!(rw.elements, vec![json!(1)]);
    assert!(
        verdict
            .to_string()
            .contains("read key \"x\" empty, without 1")
    );
}

fn write_skew() -> History {
    // Each reads the key the other appends to, and misses it.
    [
        vec![
            invoke(0, json!([["r", "x", []], ["append", "y", 1]])),
            invoke(1, json!([["r", "y", []], ["append", "x", 2]])),
            ok(0, json!([["r", "x", []], ["append", "y", 1]])),
            ok(1, json!([["r", "y", []], ["append", "x", 2]])),
        ],
        solo(2, json!([["r", "x", [2]], ["r", "y", [1]]])).to_vec(),
    ]
    .concat()
    .into_iter()
    .collect()
}

#[test]
fn g2_item_write_skew() {
    let h = write_skew();
    let verdict = check_list_append(&h).unwrap();
    assert_eq!(verdict.anomaly_names(), vec!["G2-item"], "{verdict}");
    let c = cycles(&verdict)[0];
    assert_eq!(c.kind, CycleKind::G2Item);
    assert_eq!(processes(c), vec![0, 1]);
    assert_eq!(edge_kinds(c), vec![EdgeKind::Rw, EdgeKind::Rw]);
    // Serializability forbids it too.
    let plain = ListAppendChecker::new()
        .consistency(Consistency::Serializable)
        .check(&h)
        .unwrap();
    assert_eq!(plain.anomaly_names(), vec!["G2-item"]);
}

#[test]
fn internal_inconsistency() {
    // The value changed between two reads of one transaction (Maelstrom's example).
    let verdict = check(
        [
            solo(0, json!([["append", 51, 1], ["append", 51, 2]])).to_vec(),
            solo(1, json!([["r", 51, [1, 2]], ["r", 51, [1, 2, 3]]])).to_vec(),
            solo(2, json!([["append", 51, 3]])).to_vec(),
        ]
        .concat(),
    );
    assert!(
        verdict.anomaly_names().contains(&"internal".to_owned()),
        "{verdict}"
    );
    let Anomaly::Internal {
        op, expected, read, ..
    } = &verdict.anomalies[0]
    else {
        panic!("{verdict}")
    };
    assert_eq!(op.process, 1);
    assert_eq!(expected, &Expected::Exactly(vec![json!(1), json!(2)]));
    assert_eq!(read, &vec![json!(1), json!(2), json!(3)]);
    // A read that lost the transaction's own append.
    let verdict = check(
        [
            solo(0, json!([["append", "k", 1]])).to_vec(),
            solo(1, json!([["append", "k", 2], ["r", "k", [1]]])).to_vec(),
        ]
        .concat(),
    );
    let Anomaly::Internal { expected, .. } = &verdict.anomalies[0] else {
        panic!("{verdict}")
    };
    assert_eq!(expected, &Expected::EndsWith(vec![json!(2)]));
    assert!(
        verdict
            .to_string()
            .contains("should have read a list ending [2]")
    );
}

#[test]
fn incompatible_order() {
    let verdict = check(
        [
            solo(0, json!([["append", "x", 1]])).to_vec(),
            solo(1, json!([["append", "x", 2]])).to_vec(),
            solo(2, json!([["r", "x", [1, 2]]])).to_vec(),
            solo(3, json!([["r", "x", [2]]])).to_vec(),
        ]
        .concat(),
    );
    assert!(
        verdict
            .anomaly_names()
            .contains(&"incompatible-order".to_owned()),
        "{verdict}"
    );
    let Anomaly::IncompatibleOrder {
        key,
        longest,
        other,
    } = verdict
        .anomalies
        .iter()
        .find(|a| a.name() == "incompatible-order")
        .unwrap()
    else {
        unreachable!()
    };
    assert_eq!(key, &json!("x"));
    assert_eq!((longest.0.process, other.0.process), (2, 3));
    assert_eq!(other.1, vec![json!(2)]);
}

#[test]
fn duplicate_and_garbage_elements() {
    let verdict = check(
        [
            solo(0, json!([["append", "x", 1]])).to_vec(),
            solo(1, json!([["r", "x", [1, 1]]])).to_vec(),
            solo(2, json!([["r", "y", [9]]])).to_vec(),
        ]
        .concat(),
    );
    assert_eq!(
        verdict.anomaly_names(),
        vec!["duplicate-elements", "garbage-read"],
        "{verdict}"
    );
}

#[test]
fn stale_read_is_a_realtime_anomaly_only() {
    let events = [
        solo(0, json!([["append", "x", 1]])).to_vec(),
        solo(1, json!([["r", "x", []]])).to_vec(),
        solo(2, json!([["r", "x", [1]]])).to_vec(),
    ]
    .concat();
    let verdict = check(events.clone());
    assert_eq!(
        verdict.anomaly_names(),
        vec!["G-single-realtime"],
        "{verdict}"
    );
    let c = cycles(&verdict)[0];
    assert_eq!(c.order, Order::Realtime);
    assert!(edge_kinds(c).contains(&EdgeKind::Realtime));
    let h: History = events.into_iter().collect();
    for consistency in [
        Consistency::Serializable,
        Consistency::StrongSessionSerializable,
    ] {
        let v = ListAppendChecker::new()
            .consistency(consistency)
            .check(&h)
            .unwrap();
        assert!(v.is_valid(), "{consistency}: {v}");
    }
}

#[test]
fn a_process_that_misses_its_own_append_is_a_process_anomaly() {
    let events = [
        solo(0, json!([["append", "x", 1]])).to_vec(),
        solo(0, json!([["r", "x", []]])).to_vec(),
        solo(1, json!([["r", "x", [1]]])).to_vec(),
    ]
    .concat();
    let h: History = events.into_iter().collect();
    let v = ListAppendChecker::new()
        .consistency(Consistency::StrongSessionSerializable)
        .check(&h)
        .unwrap();
    assert_eq!(v.anomaly_names(), vec!["G-single-process"], "{v}");
    // Strict serializability names the weakest order that shows it: process.
    assert_eq!(
        check_list_append(&h).unwrap().anomaly_names(),
        vec!["G-single-process"]
    );
}

// ---- valid histories ----

#[test]
fn concurrent_transactions_in_either_order_are_valid() {
    let verdict = check(
        [
            vec![
                invoke(0, json!([["r", "x", []], ["append", "x", 1]])),
                invoke(1, json!([["r", "x", [1]], ["append", "x", 2]])),
                ok(1, json!([["r", "x", [1]], ["append", "x", 2]])),
                ok(0, json!([["r", "x", []], ["append", "x", 1]])),
            ],
            solo(
                2,
                json!([["r", "x", [1, 2]], ["append", "y", 1], ["r", "y", [1]]]),
            )
            .to_vec(),
        ]
        .concat(),
    );
    assert!(verdict.is_valid(), "{verdict}");
    assert_eq!(verdict.transactions, [3, 0, 0]);
}

#[test]
fn info_appends_may_be_seen_or_not() {
    let seen = check(
        [
            vec![
                invoke(0, json!([["append", "x", 1]])),
                Event::info(0, txn(), json!([["append", "x", 1]])),
            ],
            solo(1, json!([["r", "x", [1]]])).to_vec(),
        ]
        .concat(),
    );
    assert!(seen.is_valid(), "{seen}");
    let unseen = check(
        [
            vec![
                invoke(0, json!([["append", "x", 1]])),
                Event::info(0, txn(), json!([["append", "x", 1]])),
            ],
            solo(1, json!([["r", "x", []]])).to_vec(),
        ]
        .concat(),
    );
    assert!(unseen.is_valid(), "{unseen}");
    // An info transaction may even take effect after later ones completed.
    let late = check(
        [
            vec![invoke(0, json!([["append", "x", 1]]))],
            solo(1, json!([["r", "x", []]])).to_vec(),
            solo(2, json!([["append", "x", 2]])).to_vec(),
            solo(3, json!([["r", "x", [2, 1]]])).to_vec(),
        ]
        .concat(),
    );
    assert!(late.is_valid(), "{late}");
    assert_eq!(late.transactions, [3, 0, 1]);
}

#[test]
fn an_info_append_seen_before_its_invocation_is_caught() {
    let verdict = check(
        [
            solo(1, json!([["r", "x", [1]]])).to_vec(),
            vec![invoke(0, json!([["append", "x", 1]]))],
        ]
        .concat(),
    );
    assert_eq!(verdict.anomaly_names(), vec!["G1c-realtime"], "{verdict}");
}

#[test]
fn failed_transactions_that_nobody_saw_are_fine() {
    let verdict = check(
        [
            vec![
                invoke(0, json!([["append", "x", 1], ["r", "y", null]])),
                Event::fail(0, txn(), json!([["append", "x", 1], ["r", "y", null]])),
            ],
            solo(1, json!([["r", "x", []]])).to_vec(),
        ]
        .concat(),
    );
    assert!(verdict.is_valid(), "{verdict}");
}

// ---- errors ----

#[test]
fn malformed_input_is_an_error() {
    let h = |v: Value| -> History { [Event::invoke(0, txn(), v)].into_iter().collect() };
    for bad in [
        json!(5),
        json!([["append", 1]]),
        json!([["write", 1, 2]]),
        json!([[7, 1, 2]]),
    ] {
        assert!(
            matches!(
                check_list_append(&h(bad.clone())),
                Err(ListAppendError::MalformedTxn { line: 1, .. })
            ),
            "{bad}"
        );
    }
    let read_not_list: History = [
        Event::invoke(0, txn(), json!([["r", 1, null]])),
        Event::ok(0, txn(), json!([["r", 1, 5]])),
    ]
    .into_iter()
    .collect();
    assert!(matches!(
        check_list_append(&read_not_list),
        Err(ListAppendError::MalformedTxn { line: 2, .. })
    ));
    let twice: History = [
        solo(0, json!([["append", 1, 1]])),
        solo(1, json!([["append", 1, 1]])),
    ]
    .concat()
    .into_iter()
    .collect();
    let err = check_list_append(&twice).unwrap_err();
    assert!(
        matches!(
            err,
            ListAppendError::DuplicateAppend {
                first_line: 1,
                line: 3,
                ..
            }
        ),
        "{err}"
    );
    let other: History = [Event::invoke(0, crate::history::F::Read, Value::Null)]
        .into_iter()
        .collect();
    assert!(matches!(
        check_list_append(&other),
        Err(ListAppendError::Unsupported { line: 1, .. })
    ));
}

// ---- generated histories ----

#[test]
fn generated_history_of_10k_transactions_is_valid() {
    let synth = ListAppendSynth {
        seed: 1,
        transactions: 10_000,
        ..ListAppendSynth::default()
    };
    let verdict = check_list_append(&synth.history()).unwrap();
    assert!(verdict.is_valid(), "{verdict}");
    let [ok, fail, info] = verdict.transactions;
    assert_eq!(ok + fail + info, 10_000);
    assert!(fail > 0 && info > 0, "{verdict}");
    assert!(verdict.edges > 10_000, "{verdict}");
}

#[test]
fn a_stale_read_planted_in_a_generated_history_is_caught() {
    let h = ListAppendSynth {
        seed: 2,
        transactions: 2_000,
        ..ListAppendSynth::default()
    }
    .history();
    assert!(check_list_append(&h).unwrap().is_valid());
    let (bad, _) = stale_read(&h).expect("a read to corrupt");
    let verdict = check_list_append(&bad).unwrap();
    assert!(!verdict.is_valid());
    assert!(
        verdict
            .anomalies
            .iter()
            .any(|a| matches!(a, Anomaly::Cycle(_))),
        "{verdict}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn generated_histories_are_valid(
        seed in any::<u64>(),
        processes in 1u64..12,
        active_keys in 1u64..6,
        max_ops in 1usize..6,
    ) {
        let h = ListAppendSynth {
            seed,
            processes,
            transactions: 300,
            active_keys,
            appends_per_key: 8,
            max_ops,
            fail_rate: 0.05,
            info_rate: 0.1,
        }
        .history();
        let verdict = check_list_append(&h).unwrap();
        prop_assert!(verdict.is_valid(), "{}", verdict);
    }
}
