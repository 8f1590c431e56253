//! One hand-written history per anomaly the rw-register checker reports.

use serde_json::json;

use super::*;
use crate::checker::CheckError;
use crate::elle::Consistency;
use crate::elle::cycle::{CycleKind, Order};

#[test]
fn g0_write_cycle() {
    // Each read the other's write of one key and wrote over it: x is 1 then 2, y 2 then 1.
    // Under registers a ww edge only comes from a read then a write, so a wr edge runs beside
    // it: every G0 is a G1c too.
    let verdict = case("g0");
    let c = the_cycle(&verdict, "G0");
    assert_eq!((c.kind, c.order), (CycleKind::G0, Order::None));
    assert_eq!(edge_kinds(c), vec![EdgeKind::Ww, EdgeKind::Ww]);
    let text = verdict.to_string();
    assert!(text.contains("read that and wrote 2 over it"), "{text}");
}

#[test]
fn g1a_aborted_read() {
    let verdict = case("g1a");
    let RegisterAnomaly::AbortedRead {
        reader,
        writer,
        key,
        value,
    } = &verdict.anomalies[0]
    else {
        panic!("{verdict}")
    };
    assert_eq!((reader.process, writer.process), (1, 0));
    assert_eq!((key, value), (&json!("x"), &json!(1)));
}

#[test]
fn g1b_intermediate_read() {
    let verdict = case("g1b");
    let RegisterAnomaly::IntermediateRead { value, later, .. } = &verdict.anomalies[0] else {
        panic!("{verdict}")
    };
    assert_eq!((value, later), (&json!(1), &json!(2)));
}

#[test]
fn g1c_circular_information_flow() {
    let verdict = case("g1c");
    let c = the_cycle(&verdict, "G1c");
    assert_eq!(edge_kinds(c), vec![EdgeKind::Wr, EdgeKind::Wr]);
    assert!(
        verdict
            .to_string()
            .contains("read key \"y\" = 2, written by T")
    );
}

#[test]
fn g_single_read_skew() {
    // T1 saw T0's y but not its x.
    let verdict = case("g-single");
    let c = the_cycle(&verdict, "G-single");
    assert_eq!(edge_kinds(c), vec![EdgeKind::Rw, EdgeKind::Wr]);
    assert_eq!(c.edges[0].elements, vec![json!(null), json!(1)]);
    assert!(verdict.to_string().contains("= null, the initial version"));
}

#[test]
fn g_single_from_a_read_then_write_order() {
    // x: 1 (T0) then 2 (T1, which read 1). T2 read x = 1, so it came before T1; yet it read
    // T1's y.
    let verdict = case("g-single-wfr");
    let c = the_cycle(&verdict, "G-single");
    let rw = c.edges.iter().find(|e| e.kind == EdgeKind::Rw).unwrap();
    assert_eq!(rw.elements, vec![json!(1), json!(2)]);
}

#[test]
fn g2_item_write_skew_and_snapshot_isolation() {
    let verdict = case("g2-item");
    assert_eq!(
        edge_kinds(the_cycle(&verdict, "G2-item")),
        vec![EdgeKind::Rw, EdgeKind::Rw]
    );
    let si = check_with(&RwRegister::new().allow_write_skew(), events("g2-item"));
    assert!(si.is_valid(), "{si}");
}

#[test]
fn g_nonadjacent() {
    // T0 -rw-> T1 -wr-> T2 -rw-> T3 -wr-> T0: two anti-dependencies, never adjacent.
    let verdict = case("g-nonadjacent");
    let kinds = edge_kinds(the_cycle(&verdict, "G-nonadjacent"));
    assert_eq!(kinds.iter().filter(|k| **k == EdgeKind::Rw).count(), 2);
    // Snapshot isolation forbids it.
    let si = check_with(
        &RwRegister::new().allow_write_skew(),
        events("g-nonadjacent"),
    );
    assert_eq!(si.anomaly_names(), vec!["G-nonadjacent"]);
}

#[test]
fn internal_inconsistency() {
    let verdict = case("internal");
    let internal: Vec<_> = verdict
        .anomalies
        .iter()
        .filter_map(|a| match a {
            RegisterAnomaly::Internal { expected, read, .. } => Some((expected, read)),
            _ => None,
        })
        .collect();
    assert_eq!(
        internal,
        vec![(&json!(2), &json!(null)), (&json!(3), &json!(4))],
        "{verdict}"
    );
    let plain = check_with(
        &RwRegister::new().consistency(Consistency::Serializable),
        solo(0, json!([["w", "x", 1], ["r", "x", 5]])).to_vec(),
    );
    assert_eq!(plain.anomaly_names(), vec!["garbage-read", "internal"]);
}

#[test]
fn lost_update() {
    // T1 and T2 both read T0's 1 and wrote over it.
    let verdict = case("lost-update");
    let RegisterAnomaly::LostUpdate { key, read, txns } = &verdict.anomalies[0] else {
        panic!("{verdict}")
    };
    assert_eq!((key, read, txns.len()), (&json!("x"), &json!(1), 2));
    // Snapshot isolation forbids it: first committer wins.
    let si = check_with(&RwRegister::new().allow_write_skew(), events("lost-update"));
    assert_eq!(si.anomaly_names(), vec!["lost-update"]);
}

#[test]
fn garbage_read() {
    let verdict = case("garbage-read");
    assert!(verdict.to_string().contains("which no transaction wrote"));
}

#[test]
fn future_read() {
    let verdict = case("future-read");
    assert!(verdict.to_string().contains("before writing it itself"));
}

#[test]
fn cyclic_versions() {
    // Each read the other's value before writing its own: 1 < 2 and 2 < 1.
    let verdict = case("cyclic-versions");
    let RegisterAnomaly::CyclicVersions { key, versions } = verdict
        .anomalies
        .iter()
        .find(|a| a.name() == "cyclic-versions")
        .unwrap()
    else {
        unreachable!()
    };
    assert_eq!(key, &json!("x"));
    assert_eq!(versions.len(), 2);
}

#[test]
fn realtime_and_process_variants() {
    // A read of nil after a write completed.
    let verdict = case("g-single-realtime");
    let c = the_cycle(&verdict, "G-single-realtime");
    assert_eq!(edge_kinds(c), vec![EdgeKind::Rw, EdgeKind::Realtime]);
    // On one process, a session model sees it by process order.
    let session = RwRegister::new().consistency(Consistency::StrongSessionSerializable);
    let verdict = check_with(&session, events("g-single-process"));
    assert_eq!(verdict.anomaly_names(), vec!["G-single-process"]);
    let plain = RwRegister::new().consistency(Consistency::Serializable);
    assert!(check_with(&plain, events("g-single-process")).is_valid());
    assert!(check_with(&plain, events("g-single-realtime")).is_valid());
}

#[test]
fn refused_histories() {
    let refuse = |events: Vec<crate::history::Event>| {
        let h: History = events.into_iter().collect();
        RwRegister::new().analyse(&h).unwrap_err()
    };
    let mut twice = solo(0, json!([["w", "x", 1]])).to_vec();
    twice.extend(solo(1, json!([["w", "x", 1]])));
    let e = refuse(twice);
    assert!(matches!(e, CheckError::DuplicateWrite { .. }), "{e}");
    assert_eq!(e.to_string(), "lines 1 and 3: 1 written to key \"x\" twice");
    let e = refuse(solo(0, json!([["r", "x", [1, 2]]])).to_vec());
    assert!(e.to_string().contains("a list or a map"), "{e}");
    let e = refuse(solo(0, json!([["w", "x", null]])).to_vec());
    assert!(e.to_string().contains("a write of null"), "{e}");
    let e = refuse(solo(0, json!([["append", "x", 1]])).to_vec());
    assert!(e.to_string().contains("neither \"w\" nor \"r\""), "{e}");
    let e = refuse(vec![Event::invoke(0, F::Read, json!(null))]);
    assert!(matches!(e, CheckError::Unsupported { .. }), "{e}");
}
