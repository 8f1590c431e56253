//! Elle's rules the checker once missed, one hand-written history each: unread appends placed
//! after every element read, future reads, lost updates, G-nonadjacent, and the process and
//! realtime variants of each kind of cycle.

use serde_json::json;

use super::*;
use crate::history::{Event, History};
use crate::list_append::{
    Consistency, CycleKind, EdgeKind, ElleAnomaly, Findings, ListAppend, Order,
};

/// Strict serializability, but with write skew (G2-item) allowed: snapshot isolation, as the
/// list-append scenario judges the Mvcc protocol.
fn snapshot_isolation(h: &History) -> Findings {
    ListAppend::new()
        .allow_write_skew()
        .analyse(h)
        .expect("well-formed history")
}

fn check_as(consistency: Consistency, events: Vec<Event>) -> Findings {
    let h: History = events.into_iter().collect();
    ListAppend::new()
        .consistency(consistency)
        .analyse(&h)
        .expect("well-formed history")
}

fn the_cycle(verdict: &Findings, name: &str) -> super::super::Cycle {
    cycles(verdict)
        .into_iter()
        .find(|c| c.name() == name)
        .unwrap_or_else(|| panic!("no {name}: {verdict}"))
        .clone()
}

// ---- unread appends ----

#[test]
fn a_stale_read_of_an_append_nobody_read_is_g_single_realtime() {
    // Issue 15's history: the append completed before the read began, and nobody ever read it.
    let events = [
        solo(0, json!([["append", "x", 1]])).to_vec(),
        solo(1, json!([["r", "x", []]])).to_vec(),
    ]
    .concat();
    let verdict = only("G-single-realtime", &events);
    let c = the_cycle(&verdict, "G-single-realtime");
    assert_eq!(edge_kinds(&c), vec![EdgeKind::Rw, EdgeKind::Realtime]);
    assert!(c.edges[0].unread);
    let text = verdict.to_string();
    assert!(
        text.contains("read key \"x\" empty, without 1, which T1 appended and nobody read"),
        "{text}"
    );
    // Without real time there is nothing wrong.
    for consistency in [
        Consistency::Serializable,
        Consistency::StrongSessionSerializable,
    ] {
        assert!(check_as(consistency, events.clone()).is_valid());
    }
}

#[test]
fn an_unread_append_comes_after_every_element_read() {
    // 2 was appended (and completed) before the read of [1] began: the read is stale.
    let verdict = check(
        [
            solo(0, json!([["append", "x", 1]])).to_vec(),
            solo(1, json!([["append", "x", 2]])).to_vec(),
            solo(2, json!([["r", "x", [1]]])).to_vec(),
        ]
        .concat(),
    );
    assert_eq!(
        verdict.anomaly_names(),
        vec!["G-single-realtime"],
        "{verdict}"
    );
    let c = the_cycle(&verdict, "G-single-realtime");
    let rw = c.edges.iter().find(|e| e.kind == EdgeKind::Rw).unwrap();
    assert_eq!(rw.elements, vec![json!(1), json!(2)]);
    assert!(rw.unread);
}

#[test]
fn g0_through_an_unread_append() {
    // y shows T1's 1 before T0's 2. On x, T0 read its own 1 (and nothing before it), and
    // nobody read T1's 3, which therefore came after 1: each wrote first on one key. (A
    // reader of x other than T0 would add a G-single: it would follow T0, hence T1, yet
    // miss 3.)
    let verdict = check(
        [
            concurrent(&[
                (
                    0,
                    json!([["append", "x", 1], ["r", "x", [1]], ["append", "y", 2]]),
                ),
                (1, json!([["append", "x", 3], ["append", "y", 1]])),
            ]),
            solo(2, json!([["r", "y", [1, 2]]])).to_vec(),
        ]
        .concat(),
    );
    assert_eq!(verdict.anomaly_names(), vec!["G0"], "{verdict}");
    let c = the_cycle(&verdict, "G0");
    assert_eq!(c.edges.iter().filter(|e| e.unread).count(), 1, "{c}");
    assert!(
        verdict
            .to_string()
            .contains("the last element anyone read, and T"),
        "{verdict}"
    );
}

#[test]
fn info_appends_nobody_read_infer_nothing() {
    // The info append may never have happened: reading x empty long after is fine.
    let verdict = check(
        [
            unknown(0, json!([["append", "x", 1]])).to_vec(),
            solo(1, json!([["r", "x", []]])).to_vec(),
            solo(1, json!([["r", "x", []], ["append", "y", 5]])).to_vec(),
        ]
        .concat(),
    );
    assert!(verdict.is_valid(), "{verdict}");
}

// ---- within a transaction ----

#[test]
fn a_read_of_its_own_later_append_is_a_future_read() {
    let verdict = check(solo(0, json!([["r", "x", [1]], ["append", "x", 1]])).to_vec());
    assert_eq!(verdict.anomaly_names(), vec!["future-read"], "{verdict}");
    let ElleAnomaly::FutureRead { op, key, element } = &verdict.anomalies[0] else {
        panic!("{verdict}")
    };
    assert_eq!((op.process, key, element), (0, &json!("x"), &json!(1)));
    assert!(
        verdict
            .to_string()
            .contains("read 1 on key \"x\" before appending it itself")
    );
}

// ---- lost update ----

#[test]
fn two_committed_appends_to_one_version_are_a_lost_update() {
    // Both read [1] and appended; nobody read either append, so no version order shows it.
    let events = [
        solo(0, json!([["append", "x", 1]])).to_vec(),
        concurrent(&[
            (1, json!([["r", "x", [1]], ["append", "x", 2]])),
            (2, json!([["r", "x", [1]], ["append", "x", 3]])),
        ]),
    ]
    .concat();
    let verdict = check(events.clone());
    let Some(ElleAnomaly::LostUpdate { key, read, txns }) = verdict
        .anomalies
        .iter()
        .find(|a| matches!(a, ElleAnomaly::LostUpdate { .. }))
    else {
        panic!("{verdict}")
    };
    assert_eq!((key, read), (&json!("x"), &vec![json!(1)]));
    let procs: Vec<u64> = txns.iter().map(|t| t.process).collect();
    assert_eq!(procs, vec![1, 2]);
    // The unread appends also close a write-skew cycle: each missed the other's append.
    assert_eq!(verdict.anomaly_names(), vec!["G2-item", "lost-update"]);
    // Snapshot isolation allows write skew but not a lost update.
    let h: History = events.into_iter().collect();
    let mvcc = snapshot_isolation(&h);
    assert_eq!(mvcc.anomaly_names(), vec!["lost-update"], "{mvcc}");
}

#[test]
fn a_read_after_its_own_append_is_no_lost_update() {
    // T1's read follows its own append: not the version it appended to.
    let verdict = check(
        [
            solo(0, json!([["append", "x", 1]])).to_vec(),
            solo(1, json!([["r", "x", [1]], ["append", "x", 2]])).to_vec(),
            solo(2, json!([["append", "x", 3], ["r", "x", [1, 2, 3]]])).to_vec(),
        ]
        .concat(),
    );
    assert!(verdict.is_valid(), "{verdict}");
}

// ---- G-nonadjacent and G2-item ----

/// Elle's G-nonadjacent example: T2 and T4 each see one append and miss the other.
fn nonadjacent() -> Vec<Event> {
    concurrent(&[
        (1, json!([["append", "x", 1]])),
        (2, json!([["r", "x", [1]], ["r", "y", []]])),
        (3, json!([["append", "y", 1]])),
        (4, json!([["r", "y", [1]], ["r", "x", []]])),
    ])
}

#[test]
fn g_nonadjacent_two_rw_edges_apart() {
    let verdict = check(nonadjacent());
    assert_eq!(verdict.anomaly_names(), vec!["G-nonadjacent"], "{verdict}");
    let c = the_cycle(&verdict, "G-nonadjacent");
    assert_eq!(c.kind, CycleKind::GNonadjacent);
    assert_eq!(processes(&c).len(), 4);
    let kinds = edge_kinds(&c);
    let rw = kinds.iter().filter(|&&k| k == EdgeKind::Rw).count();
    assert_eq!(rw, 2, "{c}");
    let n = kinds.len();
    assert!(
        (0..n).all(|i| !(kinds[i] == EdgeKind::Rw && kinds[(i + 1) % n] == EdgeKind::Rw)),
        "{c}"
    );
    // Snapshot isolation forbids it.
    let h: History = nonadjacent().into_iter().collect();
    assert!(!snapshot_isolation(&h).is_valid());
}

#[test]
fn g_nonadjacent_process_through_unread_appends() {
    // Processes 0 and 1 each append, then read the other's key empty; the appends are never
    // read. Only process order (no real time: the reads overlap the appends' completions)
    // closes the cycle.
    let events = vec![
        invoke(0, json!([["append", "x", 1]])),
        invoke(1, json!([["append", "y", 1]])),
        ok(0, json!([["append", "x", 1]])),
        ok(1, json!([["append", "y", 1]])),
        invoke(0, json!([["r", "y", []]])),
        invoke(1, json!([["r", "x", []]])),
        ok(0, json!([["r", "y", []]])),
        ok(1, json!([["r", "x", []]])),
    ];
    let verdict = check_as(Consistency::StrongSessionSerializable, events.clone());
    assert_eq!(
        verdict.anomaly_names(),
        vec!["G-nonadjacent-process"],
        "{verdict}"
    );
    let c = the_cycle(&verdict, "G-nonadjacent-process");
    assert_eq!(
        edge_kinds(&c)
            .iter()
            .filter(|&&k| k == EdgeKind::Process)
            .count(),
        2
    );
    assert!(check_as(Consistency::Serializable, events).is_valid());
}

#[test]
fn write_skew_from_unread_appends_is_g2_item_and_snapshot_isolation_allows_it() {
    // Each reads the key the other appends to, empty; nobody reads the appends.
    let events = concurrent(&[
        (0, json!([["r", "x", []], ["append", "y", 1]])),
        (1, json!([["r", "y", []], ["append", "x", 2]])),
    ]);
    let verdict = check(events.clone());
    assert_eq!(verdict.anomaly_names(), vec!["G2-item"], "{verdict}");
    let c = the_cycle(&verdict, "G2-item");
    assert_eq!(edge_kinds(&c), vec![EdgeKind::Rw, EdgeKind::Rw]);
    let h: History = events.into_iter().collect();
    assert!(snapshot_isolation(&h).is_valid());
    assert!(!check_list_append(&h).unwrap().is_valid());
}

// ---- the process and realtime variants ----

#[test]
fn g0_process_and_realtime() {
    // T1 began after T0 completed, yet its append to x came first.
    let events = |p1| {
        [
            solo(0, json!([["append", "x", 1]])).to_vec(),
            solo(p1, json!([["append", "x", 2]])).to_vec(),
            solo(2, json!([["r", "x", [2, 1]]])).to_vec(),
        ]
        .concat()
    };
    let verdict = check(events(1));
    assert_eq!(verdict.anomaly_names(), vec!["G0-realtime"], "{verdict}");
    assert_eq!(the_cycle(&verdict, "G0-realtime").order, Order::Realtime);
    let verdict = check(events(0));
    assert_eq!(verdict.anomaly_names(), vec!["G0-process"], "{verdict}");
    assert!(check_as(Consistency::Serializable, events(0)).is_valid());
}

#[test]
fn g1c_process() {
    // Process 0 read, then appended, the very element it had read.
    let verdict = check(
        [
            solo(0, json!([["r", "x", [1]]])).to_vec(),
            solo(0, json!([["append", "x", 1]])).to_vec(),
        ]
        .concat(),
    );
    assert_eq!(verdict.anomaly_names(), vec!["G1c-process"], "{verdict}");
    let c = the_cycle(&verdict, "G1c-process");
    let mut kinds = edge_kinds(&c);
    kinds.sort_by_key(|k| k.to_string());
    assert_eq!(kinds, vec![EdgeKind::Process, EdgeKind::Wr]);
}

#[test]
fn g_nonadjacent_realtime() {
    // T2 saw T1's append to x but not T3's (unread) append to y; T4 began after T3 completed,
    // yet read x empty. Only T3 -realtime-> T4 is an order edge; T1 and T2 overlap everything.
    let t1 = json!([["append", "x", 1]]);
    let t2 = json!([["r", "x", [1]], ["r", "y", []]]);
    let t3 = json!([["append", "y", 1]]);
    let t4 = json!([["r", "x", []]]);
    let events = vec![
        invoke(1, t1.clone()),
        invoke(2, t2.clone()),
        invoke(3, t3.clone()),
        ok(3, t3),
        invoke(4, t4.clone()),
        ok(4, t4),
        ok(1, t1),
        ok(2, t2),
    ];
    let verdict = check(events.clone());
    assert_eq!(
        verdict.anomaly_names(),
        vec!["G-nonadjacent-realtime"],
        "{verdict}"
    );
    let c = the_cycle(&verdict, "G-nonadjacent-realtime");
    assert_eq!(c.transactions.len(), 4);
    assert!(check_as(Consistency::Serializable, events.clone()).is_valid());
    let h: History = events.into_iter().collect();
    assert!(!snapshot_isolation(&h).is_valid());
}

/// T0 -rw-> T1 -rw-> T2, each missing an unread append, and T2 completed (on process `p2`)
/// before T0 began on process 0; T1 overlaps everything.
fn adjacent_rw_then(p2: u64) -> Vec<Event> {
    let t0 = json!([["r", "x", []]]);
    let t1 = json!([["r", "y", []], ["append", "x", 1]]);
    let t2 = json!([["append", "y", 1]]);
    vec![
        invoke(1, t1.clone()),
        invoke(p2, t2.clone()),
        ok(p2, t2),
        invoke(0, t0.clone()),
        ok(0, t0),
        ok(1, t1),
    ]
}

#[test]
fn g2_item_process_and_realtime() {
    let verdict = check(adjacent_rw_then(2));
    assert_eq!(
        verdict.anomaly_names(),
        vec!["G2-item-realtime"],
        "{verdict}"
    );
    let c = the_cycle(&verdict, "G2-item-realtime");
    assert_eq!(c.kind, CycleKind::G2Item);
    assert!(edge_kinds(&c).contains(&EdgeKind::Realtime));
    let verdict = check(adjacent_rw_then(0));
    assert_eq!(
        verdict.anomaly_names(),
        vec!["G2-item-process"],
        "{verdict}"
    );
    // Snapshot isolation allows write skew, whatever orders close it.
    let h: History = adjacent_rw_then(0).into_iter().collect();
    assert!(snapshot_isolation(&h).is_valid());
}
