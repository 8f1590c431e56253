//! One hand-written history per anomaly the checker has always found.

use serde_json::{Value, json};

use super::*;
use crate::history::History;
use crate::list_append::{
    Consistency, CycleKind, EdgeKind, ElleAnomaly, Expected, ListAppend, Order, check_list_append,
};

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
            failed(0, json!([["append", "x", 1]])).to_vec(),
            solo(1, json!([["r", "x", [1]]])).to_vec(),
        ]
        .concat(),
    );
    assert_eq!(verdict.anomaly_names(), vec!["G1a"], "{verdict}");
    let ElleAnomaly::AbortedRead {
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
    let ElleAnomaly::IntermediateRead {
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
    let plain = ListAppend::new()
        .consistency(Consistency::Serializable)
        .analyse(&h)
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
    let ElleAnomaly::Internal {
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
    let ElleAnomaly::Internal { expected, .. } = &verdict.anomalies[0] else {
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
    let ElleAnomaly::IncompatibleOrder {
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
    let verdict = only("G-single-realtime", &events);
    let c = cycles(&verdict)[0];
    assert_eq!(c.order, Order::Realtime);
    assert!(edge_kinds(c).contains(&EdgeKind::Realtime));
    let h: History = events.into_iter().collect();
    for consistency in [
        Consistency::Serializable,
        Consistency::StrongSessionSerializable,
    ] {
        let v = ListAppend::new()
            .consistency(consistency)
            .analyse(&h)
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
    let v = ListAppend::new()
        .consistency(Consistency::StrongSessionSerializable)
        .analyse(&h)
        .unwrap();
    assert_eq!(v.anomaly_names(), vec!["G-single-process"], "{v}");
    // Strict serializability names the weakest order that shows it: process.
    assert_eq!(
        check_list_append(&h).unwrap().anomaly_names(),
        vec!["G-single-process"]
    );
}
