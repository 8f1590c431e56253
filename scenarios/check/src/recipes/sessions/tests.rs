//! The `sessions` checker on hand-written histories, one violating history per rule (and
//! the valid ones beside them).

use serde_json::{Value, json};

use super::{FINAL_BASE, LEADER_BASE, Sessions};
use crate::history::{Event, EventType, F, History};
use crate::{Checker, Options};

const CLIENTS: usize = 2;

/// A leader process of client `i`.
fn leader(i: u64) -> u64 {
    LEADER_BASE + i
}

/// Builds a history from `(process, type, f, value)` rows.
fn history(rows: &[(u64, EventType, &str, Value)]) -> History {
    rows.iter()
        .map(|(p, kind, f, value)| {
            let f = F::from((*f).to_owned());
            match kind {
                EventType::Invoke => Event::invoke(*p, f, value.clone()),
                EventType::Ok => Event::ok(*p, f, value.clone()),
                EventType::Fail => Event::fail(*p, f, value.clone()),
                EventType::Info => Event::info(*p, f, value.clone()),
            }
        })
        .collect()
}

use EventType::{Info, Invoke, Ok as Done};

fn anomalies(rows: &[(u64, EventType, &str, Value)]) -> Vec<String> {
    let options = Options {
        clients: CLIENTS,
        total: Some(100),
        accounts: Some((0..5).map(|i| format!("a{i}")).collect()),
        ..Options::default()
    };
    let verdict = Sessions::new(&options).check(&history(rows)).unwrap();
    verdict.anomalies.into_iter().map(|a| a.message).collect()
}

fn expiry(p: u64) -> [(u64, EventType, &'static str, Value); 2] {
    [
        (p, Invoke, "expire", Value::Null),
        (
            p,
            Done,
            "expire",
            json!({"session": "0x7", "generation": 2}),
        ),
    ]
}

fn add(p: u64, n: u64) -> [(u64, EventType, &'static str, Value); 2] {
    [(p, Invoke, "add", 1.into()), (p, Done, "add", n.into())]
}

fn hold(p: u64, token: i64, counter: u64) -> Vec<(u64, EventType, &'static str, Value)> {
    let write = json!({"token": token, "counter": counter});
    vec![
        (p, Invoke, "acquire", Value::Null),
        (p, Done, "acquire", token.into()),
        (p, Invoke, "write", write.clone()),
        (p, Done, "write", write),
        (p, Invoke, "release", token.into()),
        (p, Done, "release", token.into()),
    ]
}

#[test]
fn a_history_of_every_part_with_progress_after_the_expiry_is_valid() {
    let mut rows: Vec<_> = expiry(0).into();
    rows.extend(add(0, 1));
    rows.extend(add(1, 2));
    rows.extend(hold(1, 10, 1));
    rows.extend(hold(leader(0), 11, 1));
    rows.extend([
        (
            1,
            Invoke,
            "transfer",
            json!({"from": "a0", "to": "a1", "amount": 3}),
        ),
        (
            1,
            Done,
            "transfer",
            json!({"from": "a0", "to": "a1", "amount": 3}),
        ),
        (FINAL_BASE, Invoke, "read", Value::Null),
        (FINAL_BASE, Done, "read", 2.into()),
        (FINAL_BASE + 1, Invoke, "balances", Value::Null),
        (
            FINAL_BASE + 1,
            Done,
            "balances",
            json!({"a0": 17, "a1": 23, "a2": 20, "a3": 20, "a4": 20}),
        ),
    ]);
    assert_eq!(anomalies(&rows), Vec::<String>::new());
}

#[test]
fn two_increments_returning_one_value_are_an_atom_anomaly() {
    let mut rows: Vec<_> = add(0, 1).into();
    rows.extend(add(1, 1));
    let found = anomalies(&rows);
    assert!(found.iter().any(|a| a.starts_with("atom: ")), "{found:?}");
}

#[test]
fn a_final_read_missing_an_acknowledged_increment_is_an_atom_anomaly() {
    let mut rows: Vec<_> = add(0, 1).into();
    rows.extend(add(1, 2));
    rows.extend([
        (FINAL_BASE, Invoke, "read", Value::Null),
        (FINAL_BASE, Done, "read", 1.into()),
    ]);
    let found = anomalies(&rows);
    assert!(
        found
            .iter()
            .any(|a| a.starts_with("atom: ") && a.contains("observed 1")),
        "{found:?}"
    );
}

#[test]
fn a_balance_read_that_lost_money_is_a_bank_anomaly() {
    let rows = [
        (0, Invoke, "balances", Value::Null),
        (
            0,
            Done,
            "balances",
            json!({"a0": 20, "a1": 20, "a2": 20, "a3": 20, "a4": 15}),
        ),
    ];
    let found = anomalies(&rows);
    assert!(found.iter().any(|a| a.starts_with("bank: ")), "{found:?}");
}

#[test]
fn overlapping_clean_holds_of_the_mutex_are_a_lock_anomaly() {
    let rows = [
        (0, Invoke, "acquire", Value::Null),
        (0, Done, "acquire", 1.into()),
        (1, Invoke, "acquire", Value::Null),
        (1, Done, "acquire", 2.into()),
        (0, Invoke, "release", 1.into()),
        (0, Done, "release", 1.into()),
        (1, Invoke, "release", 2.into()),
        (1, Done, "release", 2.into()),
    ];
    let found = anomalies(&rows);
    assert!(
        found.iter().any(|a| a.starts_with("lock: holds overlap")),
        "{found:?}"
    );
    assert!(
        !found.iter().any(|a| a.starts_with("leader: ")),
        "{found:?}"
    );
}

#[test]
fn a_write_with_a_smaller_token_accepted_later_is_a_lock_anomaly() {
    let mut rows = hold(0, 5, 1);
    rows.extend(hold(1, 4, 2));
    let found = anomalies(&rows);
    assert!(
        found.iter().any(|a| a.starts_with("lock: stale-write")),
        "{found:?}"
    );
}

#[test]
fn two_holders_writing_one_counter_value_are_a_lock_anomaly() {
    let mut rows = hold(0, 1, 1);
    rows.extend(hold(1, 2, 1));
    let found = anomalies(&rows);
    assert!(
        found
            .iter()
            .any(|a| a.starts_with("lock: ") && a.contains("both wrote counter value 1")),
        "{found:?}"
    );
}

#[test]
fn two_leaders_of_one_term_are_a_leader_anomaly() {
    let mut rows = hold(leader(0), 7, 1);
    rows.extend(hold(leader(1), 7, 2));
    let found = anomalies(&rows);
    assert!(
        found
            .iter()
            .any(|a| a.starts_with("leader: ") && a.contains("token 7")),
        "{found:?}"
    );
    assert!(!found.iter().any(|a| a.starts_with("lock: ")), "{found:?}");
}

#[test]
fn two_live_leaders_at_once_are_a_leader_anomaly_unless_the_older_lost() {
    let overlapping = |older_release: EventType| {
        vec![
            (leader(0), Invoke, "acquire", Value::Null),
            (leader(0), Done, "acquire", 3.into()),
            (leader(1), Invoke, "acquire", Value::Null),
            (leader(1), Done, "acquire", 4.into()),
            (leader(0), Invoke, "release", 3.into()),
            (leader(0), older_release, "release", 3.into()),
        ]
    };
    let found = anomalies(&overlapping(Done));
    assert!(
        found.iter().any(|a| a.starts_with("leader: holds overlap")),
        "{found:?}"
    );
    // The older term ended by losing its session: fenced, allowed.
    assert_eq!(anomalies(&overlapping(Info)), Vec::<String>::new());
}

#[test]
fn a_lock_hold_and_a_leadership_are_judged_apart() {
    // The same client holds the mutex and leads at once, with one token each: no overlap.
    let mut rows = hold(0, 9, 1);
    rows.extend(hold(leader(0), 9, 1));
    assert_eq!(anomalies(&rows), Vec::<String>::new());
}

#[test]
fn no_success_after_an_expiry_is_a_liveness_failure() {
    let mut rows: Vec<_> = expiry(1).into();
    rows.extend([(1, Invoke, "add", 1.into()), (1, Info, "add", 1.into())]);
    let found = anomalies(&rows);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("liveness: client 1"), "{found:?}");
}

#[test]
fn only_the_expired_clients_own_later_successes_count_as_its_progress() {
    // Client 0's expiry, then: another client's success, its own leadership's acquire, and a
    // success of its own (process 2, retired from 0) invoked before the expiry completed.
    // None of them is its progress.
    let rows = [
        (2, Invoke, "add", 1.into()),
        (0, Invoke, "expire", Value::Null),
        (0, Done, "expire", json!({"session": "0x7"})),
        (2, Done, "add", 1.into()),
        (1, Invoke, "add", 1.into()),
        (1, Done, "add", 2.into()),
        (leader(0), Invoke, "acquire", Value::Null),
        (leader(0), Done, "acquire", 5.into()),
        (FINAL_BASE, Invoke, "read", Value::Null),
        (FINAL_BASE, Done, "read", 2.into()),
    ];
    let found = anomalies(&rows);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("liveness: client 0"), "{found:?}");
    // A later success of another of client 0's processes (4) is its progress.
    let mut rows = rows.to_vec();
    rows.extend([
        (4, Invoke, "read", Value::Null),
        (4, Done, "read", 2.into()),
    ]);
    assert_eq!(anomalies(&rows), Vec::<String>::new());
}

#[test]
fn every_expiry_needs_its_own_progress() {
    let mut rows: Vec<_> = expiry(0).into();
    rows.extend(add(0, 1));
    rows.extend(expiry(0));
    let found = anomalies(&rows);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("completed at event 5"), "{found:?}");
}
