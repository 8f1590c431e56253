//! Valid histories (hand-written and generated), and malformed ones.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::checker::CheckError;
use crate::history::{Event, History};
use crate::list_append::synth::{ListAppendSynth, stale_read};
use crate::list_append::{ElleAnomaly, check_list_append};

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
            unknown(0, json!([["append", "x", 1]])).to_vec(),
            solo(1, json!([["r", "x", [1]]])).to_vec(),
        ]
        .concat(),
    );
    assert!(seen.is_valid(), "{seen}");
    let unseen = check(
        [
            unknown(0, json!([["append", "x", 1]])).to_vec(),
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
            failed(0, json!([["append", "x", 1], ["r", "y", null]])).to_vec(),
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
                Err(CheckError::Malformed { line: 1, .. })
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
        Err(CheckError::Malformed { line: 2, .. })
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
            CheckError::DuplicateAppend {
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
        Err(CheckError::Unsupported { line: 1, .. })
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
            .any(|a| matches!(a, ElleAnomaly::Cycle(_))),
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
