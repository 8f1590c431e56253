//! Histories the rw-register checker must pass.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::*;

#[test]
fn serial_failed_unknown_and_concurrent_histories() {
    let verdict = case("valid-serial");
    assert_eq!(verdict.transactions, [5, 0, 0]);
    let verdict = case("valid-failed-and-unknown");
    assert_eq!(verdict.transactions, [2, 1, 2]);
    case("valid-concurrent");
}

/// A store that applies each transaction atomically at a random moment between its
/// invocation and its completion: strict serializable by construction. Reads are blanked in
/// the invocation; a few transactions fail (no effect) or end `info` (applied or not).
fn serial_store(seed: u64, txns: usize) -> Vec<Event> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut store: std::collections::BTreeMap<u64, u64> = Default::default();
    let mut next = 1u64;
    // Per process: the transaction invoked and not yet applied / completed.
    let mut open: Vec<Option<(Value, bool)>> = vec![None; 4];
    let mut events = Vec::new();
    let mut started = 0;
    while started < txns || open.iter().any(Option::is_some) {
        let p = rng.random_range(0..open.len());
        match open[p].take() {
            None if started < txns => {
                started += 1;
                let mops: Value = (0..rng.random_range(1..=4))
                    .map(|_| {
                        let k = rng.random_range(0..3u64);
                        if rng.random_bool(0.5) {
                            json!(["r", k, null])
                        } else {
                            next += 1;
                            json!(["w", k, next])
                        }
                    })
                    .collect();
                events.push(Event::invoke(p as u64, txn(), mops.clone()));
                open[p] = Some((mops, false));
            }
            None => {}
            Some((mops, false)) => {
                // Apply now, or abort.
                if rng.random_bool(0.1) {
                    events.push(Event::fail(p as u64, txn(), mops));
                    continue;
                }
                let done: Value = mops
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| {
                        let k = m[1].as_u64().unwrap();
                        if m[0] == "r" {
                            json!(["r", k, store.get(&k)])
                        } else {
                            store.insert(k, m[2].as_u64().unwrap());
                            m.clone()
                        }
                    })
                    .collect();
                open[p] = Some((done, true));
            }
            Some((done, true)) => {
                if rng.random_bool(0.05) {
                    events.push(Event::info(p as u64, txn(), done));
                } else {
                    events.push(Event::ok(p as u64, txn(), done));
                }
            }
        }
    }
    events
}

#[test]
fn generated_strict_serializable_histories_are_valid() {
    for seed in 0..50 {
        let events = serial_store(seed, 200);
        let verdict = check(events);
        assert!(verdict.is_valid(), "seed {seed}: {verdict}");
        assert!(verdict.edges > 100, "seed {seed}: {}", verdict.edges);
    }
}

#[test]
fn a_generated_history_with_one_read_changed_is_caught() {
    // The same store, one committed read of a written value turned into a read of nil.
    let mut events = serial_store(7, 200);
    let at = events
        .iter()
        .rposition(|e| {
            e.kind == crate::history::EventType::Ok
                && e.value
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m[0] == "r" && !m[2].is_null())
        })
        .unwrap();
    let mut value = events[at].value.clone();
    for m in value.as_array_mut().unwrap() {
        if m[0] == "r" && !m[2].is_null() {
            m[2] = Value::Null;
            break;
        }
    }
    events[at].value = value;
    let verdict = check(events);
    assert!(!verdict.is_valid());
}
