//! The mutex checker on hand-made histories: each rule's breach, and fenced histories that pass.

use serde_json::{Value, json};

use super::{CheckError, Findings, MutexViolation, check_mutex};
use crate::history::{Event, F, History};

fn f(name: &str) -> F {
    F::Other(name.into())
}

fn acquire(p: u64) -> Event {
    Event::invoke(p, f("acquire"), Value::Null)
}

fn acquired(p: u64, token: i64) -> Event {
    Event::ok(p, f("acquire"), token.into())
}

fn release(p: u64) -> Event {
    Event::invoke(p, f("release"), Value::Null)
}

fn released(p: u64) -> Event {
    Event::ok(p, f("release"), Value::Null)
}

/// The release failed: the session was gone, the hold lost.
fn lost(p: u64) -> Event {
    Event::fail(p, f("release"), Value::Null)
}

fn write(p: u64, token: i64) -> Event {
    Event::invoke(p, f("write"), token.into())
}

/// Process 0 acquires with token `t0`, then process 1 with `t1`, the first not yet
/// releasing.
fn both_acquire(t0: i64, t1: i64) -> Vec<Event> {
    vec![acquire(0), acquired(0, t0), acquire(1), acquired(1, t1)]
}

/// Both ask, and process 0 hears of its grant (token 1) after process 1 of its (token 2).
fn granted_late() -> Vec<Event> {
    vec![acquire(0), acquire(1), acquired(1, 2), acquired(0, 1)]
}

fn verdict(events: Vec<Event>) -> Findings {
    let h: History = events.into_iter().collect();
    check_mutex(&h).unwrap()
}

fn names(events: Vec<Event>) -> Vec<&'static str> {
    verdict(events)
        .violations
        .iter()
        .map(MutexViolation::name)
        .collect()
}

#[test]
fn sequential_holds_with_writes_are_valid() {
    let h: History = [
        acquire(0),
        acquire(1),
        acquired(0, 1),
        write(0, 1),
        Event::ok(0, f("write"), 1.into()),
        release(0),
        released(0),
        acquired(1, 2),
        write(1, 2),
        Event::ok(1, f("write"), json!({"token": 2, "data": "x"})),
        release(1),
        released(1),
        // An acquire that failed or is unknown is not a hold.
        acquire(2),
        Event::fail(2, f("acquire"), Value::Null),
        acquire(3),
        Event::info(3, f("acquire"), Value::Null),
        // A release with no hold is ignored.
        release(3),
        released(3),
    ]
    .into_iter()
    .collect();
    let verdict = check_mutex(&h).unwrap();
    assert!(verdict.is_valid(), "{verdict}");
    assert_eq!((verdict.holds, verdict.lost, verdict.writes), (2, 0, 2));
}

#[test]
fn two_live_holders_overlap() {
    let events = [
        both_acquire(1, 2),
        vec![release(0), released(0), release(1), released(1)],
    ]
    .concat();
    assert_eq!(names(events.clone()), vec!["overlap"]);
    let verdict = verdict(events);
    let MutexViolation::Overlap { first, second } = &verdict.violations[0] else {
        unreachable!()
    };
    assert_eq!((first.acquire.process, second.acquire.process), (0, 1));
    assert_eq!((first.token, second.token), (1, 2));
    let text = verdict.to_string();
    assert!(
        text.contains("process 0 held token 1 from line 2 to line 5"),
        "{text}"
    );
    assert!(text.contains("did not lose its hold"), "{text}");
}

#[test]
fn a_lost_hold_overlapping_a_larger_token_is_fenced() {
    let events = [
        both_acquire(1, 2),
        vec![release(0), lost(0), release(1), released(1)],
    ]
    .concat();
    assert!(names(events).is_empty());
    // An info release counts as lost too.
    let events = [
        both_acquire(1, 2),
        vec![release(0), Event::info(0, f("release"), Value::Null)],
    ]
    .concat();
    assert!(names(events).is_empty());
}

#[test]
fn fencing_needs_the_smaller_token_and_the_loss() {
    // The earlier holder lost, but its token is larger: no resource can fence it off.
    let events = [both_acquire(5, 2), vec![release(0), lost(0)]].concat();
    let found = names(events);
    assert!(found.contains(&"overlap"), "{found:?}");
    // Never released: it holds to the end, and was never lost.
    let events = both_acquire(1, 2);
    assert_eq!(names(events), vec!["overlap"]);
    // Released only after the other acquired, but concurrent acquires do not overlap
    // surely: 1 acquired after 0 asked to release.
    let events = vec![
        acquire(0),
        acquired(0, 1),
        acquire(1),
        release(0),
        acquired(1, 2),
        released(0),
    ];
    assert!(names(events).is_empty());
}

/// A client told of its grant late (paused past its session, say) holds the older node:
/// the other hold, granted after that node died with the session, completed first. The
/// smaller token lost its hold, so fencing excuses the overlap; it must not if the
/// smaller token's holder released cleanly (mutex seed 20927, election seed 20264).
#[test]
fn the_smaller_token_must_be_the_lost_one_whichever_heard_first() {
    let events = [
        granted_late(),
        vec![
            release(0),
            Event::info(0, f("release"), Value::Null),
            release(1),
            released(1),
        ],
    ]
    .concat();
    assert!(names(events).is_empty());
    let events = [
        granted_late(),
        vec![release(0), released(0), release(1), lost(1)],
    ]
    .concat();
    assert_eq!(names(events.clone()), vec!["overlap"]);
    let text = verdict(events).to_string();
    assert!(
        text.contains("the holder of the smaller token 1 did not lose its hold"),
        "{text}"
    );
}

#[test]
fn tokens_must_grow_with_real_time() {
    let events = vec![
        acquire(0),
        acquired(0, 7),
        release(0),
        released(0),
        acquire(1),
        acquired(1, 3),
    ];
    assert_eq!(names(events), vec!["token-order"]);
    let events = vec![
        acquire(0),
        acquire(1),
        acquired(0, 4),
        release(0),
        released(0),
        acquired(1, 4),
    ];
    assert_eq!(names(events), vec!["duplicate-token"]);
}

#[test]
fn a_stale_write_accepted_after_a_newer_one_is_caught() {
    let base = [
        both_acquire(1, 2),
        vec![
            release(0),
            lost(0),
            write(1, 2),
            Event::ok(1, f("write"), 2.into()),
            write(0, 1),
        ],
    ]
    .concat();
    let mut accepted = base.clone();
    accepted.push(Event::ok(0, f("write"), 1.into()));
    assert_eq!(names(accepted), vec!["stale-write"]);
    let mut refused = base;
    refused.push(Event::fail(0, f("write"), 1.into()));
    assert!(names(refused).is_empty());
}

#[test]
fn malformed_histories_are_errors() {
    let h: History = [acquire(0), Event::ok(0, f("acquire"), Value::Null)]
        .into_iter()
        .collect();
    assert!(matches!(
        check_mutex(&h),
        Err(CheckError::Malformed { line: 2, .. })
    ));
    let h: History = [Event::invoke(0, F::Read, Value::Null)]
        .into_iter()
        .collect();
    assert!(matches!(
        check_mutex(&h),
        Err(CheckError::Unsupported { line: 1, .. })
    ));
}
