//! Hand-stepped tests of the queue machines.

use super::*;
use crate::machine::RETRY_PAUSE_MS;
use crate::machine::testing::{children, drain};
use crate::{EventKind, OpResult, Stat};

const GUID: u128 = 0xabc;

/// Expects the `sync` that precedes a proof lookup, answers it, and returns what follows.
fn synced(m: &mut impl Machine) -> Vec<(Token, Request)> {
    let sent = drain(m);
    assert!(
        matches!(&sent[..], [(_, Request::Sync { .. })]),
        "sync first: {sent:?}"
    );
    m.handle_reply(Millis(1000), sent[0].0, Ok(Reply::Synced));
    drain(m)
}

fn data(bytes: &[u8]) -> crate::Result<Reply> {
    Ok(Reply::Data {
        data: bytes.to_vec(),
        stat: Stat::default(),
    })
}

fn name(priority: u8, seq: i64) -> String {
    format!(
        "{}{}",
        element_prefix(priority, 0x1),
        path::format_sequence(seq)
    )
}

fn start(patience: Patience) -> (TakeMachine, Vec<(Token, Request)>) {
    let mut m = TakeMachine::new("/q", GUID, patience);
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    (m, sent)
}

fn receipt() -> String {
    format!("/q/_receipts/{}", guid_hex(GUID))
}

#[test]
fn takes_the_lowest_by_priority_then_sequence() {
    let (mut m, sent) = start(Patience::Forever);
    let (a, b, c) = (name(1, 1), name(0, 7), name(0, 3));
    m.handle_reply(Millis(1), sent[0].0, children(&[&a, &b, "_receipts", &c]));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::GetData { path, .. })] if *path == format!("/q/{c}"))
    );
    m.handle_reply(Millis(2), sent[0].0, data(b"x"));
    let sent = drain(&mut m);
    let [(token, Request::Multi(ops))] = &sent[..] else {
        panic!("{sent:?}")
    };
    assert_eq!(ops[0], Op::delete(format!("/q/{c}"), Some(0)));
    assert_eq!(ops[1], Op::create(receipt(), vec![], CreateMode::Ephemeral));
    m.handle_reply(
        Millis(3),
        *token,
        Ok(Reply::Multi(vec![
            OpResult::Delete,
            OpResult::Create {
                path: receipt(),
                stat: None,
            },
        ])),
    );
    let got = m
        .poll_output()
        .expect("done")
        .expect("ok")
        .expect("an element");
    assert_eq!((got.name, got.data), (c, b"x".to_vec()));
    assert!(
        matches!(&drain(&mut m)[..], [(_, Request::Delete { path, .. })] if *path == receipt()),
        "the receipt is dropped"
    );
}

#[test]
fn a_lost_claim_reply_is_settled_by_the_receipt_without_a_second_claim() {
    let (mut m, sent) = start(Patience::Forever);
    let a = name(0, 1);
    m.handle_reply(Millis(1), sent[0].0, children(&[&a]));
    let sent = drain(&mut m);
    m.handle_reply(Millis(2), sent[0].0, data(b"job"));
    let sent = drain(&mut m);
    m.handle_reply(Millis(3), sent[0].0, Err(Error::ConnectionLoss));
    assert_eq!(
        m.in_doubt().map(|(r, e)| (r, e.name)),
        Some((receipt(), a.clone()))
    );
    assert!(drain(&mut m).is_empty(), "waits for the connection");
    m.handle_session(Millis(4), SessionState::Connected);
    let sent = synced(&mut m);
    assert!(matches!(&sent[..], [(_, Request::Exists { path, .. })] if *path == receipt()));
    m.handle_reply(
        Millis(5),
        sent[0].0,
        Ok(Reply::Exists(Some(Stat::default()))),
    );
    let got = m
        .poll_output()
        .expect("done")
        .expect("ok")
        .expect("an element");
    assert_eq!(got.data, b"job");
}

#[test]
fn a_lost_claim_request_is_retried_only_after_the_receipt_is_found_absent() {
    let (mut m, sent) = start(Patience::Forever);
    let a = name(0, 1);
    m.handle_reply(Millis(1), sent[0].0, children(&[&a]));
    let sent = drain(&mut m);
    m.handle_reply(Millis(2), sent[0].0, data(b"job"));
    let sent = drain(&mut m);
    m.handle_reply(Millis(3), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_timer(Millis(3 + RETRY_PAUSE_MS));
    let sent = synced(&mut m);
    m.handle_reply(Millis(30), sent[0].0, Ok(Reply::Exists(None)));
    // Not claimed: the element is read again, then claimed again.
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::GetData { path, .. })] if *path == format!("/q/{a}"))
    );
    m.handle_reply(Millis(31), sent[0].0, data(b"job"));
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::Multi(_))]));
    m.handle_reply(Millis(32), sent[0].0, Ok(Reply::Multi(vec![])));
    assert!(m.poll_output().expect("done").expect("ok").is_some());
}

#[test]
fn losing_the_race_moves_to_the_next_element() {
    let (mut m, sent) = start(Patience::Forever);
    let (a, b) = (name(0, 1), name(0, 2));
    m.handle_reply(Millis(1), sent[0].0, children(&[&b, &a]));
    let sent = drain(&mut m);
    m.handle_reply(Millis(2), sent[0].0, data(b"a"));
    let sent = drain(&mut m);
    let lost = Error::Multi {
        index: 0,
        source: Box::new(Error::NoNode {
            path: format!("/q/{a}"),
        }),
    };
    m.handle_reply(Millis(3), sent[0].0, Err(lost));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::GetData { path, .. })] if *path == format!("/q/{b}"))
    );
}

#[test]
fn an_empty_queue_is_waited_on_with_one_watch() {
    let (mut m, sent) = start(Patience::Forever);
    m.handle_reply(Millis(1), sent[0].0, children(&["_receipts"]));
    let sent = drain(&mut m);
    assert!(matches!(
        &sent[..],
        [(_, Request::GetChildren { watch: true, .. })]
    ));
    m.handle_reply(Millis(2), sent[0].0, children(&["_receipts"]));
    assert!(drain(&mut m).is_empty() && m.poll_output().is_none());
    m.handle_watch(
        Millis(3),
        sent[0].0,
        WatchedEvent {
            kind: EventKind::NodeChildrenChanged,
            state: SessionState::Connected,
            path: "/q".into(),
        },
    );
    assert!(matches!(
        &drain(&mut m)[..],
        [(_, Request::GetChildren { watch: true, .. })]
    ));
}

#[test]
fn try_take_on_an_empty_or_missing_queue_is_none() {
    let (mut m, sent) = start(Patience::None);
    m.handle_reply(
        Millis(1),
        sent[0].0,
        Err(Error::NoNode { path: "/q".into() }),
    );
    assert_eq!(m.poll_output(), Some(Ok(None)));
    let (mut m, sent) = start(Patience::None);
    m.handle_reply(Millis(1), sent[0].0, children(&[]));
    assert_eq!(m.poll_output(), Some(Ok(None)));
}

#[test]
fn a_timed_take_gives_up_only_when_nothing_is_claimed() {
    let (mut m, sent) = start(Patience::Millis(100));
    m.handle_reply(Millis(1), sent[0].0, children(&[]));
    let sent = drain(&mut m);
    m.handle_reply(Millis(2), sent[0].0, children(&[]));
    assert_eq!(m.poll_timer(), Some(Millis(100)));
    m.handle_timer(Millis(100));
    assert_eq!(m.poll_output(), Some(Ok(None)));
}

#[test]
fn a_deadline_never_abandons_a_claim_in_doubt() {
    let (mut m, sent) = start(Patience::Millis(10));
    let a = name(0, 1);
    m.handle_reply(Millis(1), sent[0].0, children(&[&a]));
    let sent = drain(&mut m);
    m.handle_reply(Millis(2), sent[0].0, data(b"job"));
    let sent = drain(&mut m);
    assert_eq!(
        m.poll_timer(),
        None,
        "no deadline while the claim is in flight"
    );
    m.handle_reply(Millis(50), sent[0].0, Err(Error::ConnectionLoss));
    assert_eq!(m.poll_timer(), Some(Millis(50 + RETRY_PAUSE_MS)));
    m.handle_timer(Millis(50 + RETRY_PAUSE_MS));
    assert!(
        m.poll_output().is_none(),
        "past the deadline, still settling the claim"
    );
    let sent = synced(&mut m);
    assert!(matches!(&sent[..], [(_, Request::Exists { .. })]));
    m.handle_reply(
        Millis(80),
        sent[0].0,
        Ok(Reply::Exists(Some(Stat::default()))),
    );
    assert_eq!(
        m.poll_output().expect("done").expect("ok").map(|e| e.data),
        Some(b"job".to_vec()),
        "the claimed element is delivered even though the deadline passed"
    );
}

#[test]
fn session_expiry_with_a_claim_in_doubt_names_the_element() {
    let (mut m, sent) = start(Patience::Forever);
    let a = name(0, 1);
    m.handle_reply(Millis(1), sent[0].0, children(&[&a]));
    let sent = drain(&mut m);
    m.handle_reply(Millis(2), sent[0].0, data(b"job"));
    let sent = drain(&mut m);
    m.handle_reply(Millis(3), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_session(Millis(4), SessionState::Expired);
    assert_eq!(
        m.poll_output(),
        Some(Err(QueueError::TakeInDoubt {
            element: a,
            error: Error::SessionExpired
        }))
    );
}

#[test]
fn a_put_whose_reply_is_lost_is_recovered_by_its_receipt_not_resent() {
    let mut m = put_machine("/q", 0, b"job".to_vec(), GUID, 7);
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    let [(token, Request::Multi(ops))] = &sent[..] else {
        panic!("{sent:?}")
    };
    assert!(matches!(&ops[0], Op::Create { path, options, .. }
        if path.starts_with("/q/queue-000-") && options.mode == CreateMode::PersistentSequential));
    m.handle_reply(Millis(1), *token, Err(Error::ConnectionLoss));
    m.handle_session(Millis(2), SessionState::Connected);
    let sent = synced(&mut m);
    assert!(matches!(&sent[..], [(_, Request::Exists { path, .. })] if *path == receipt()));
    m.handle_reply(
        Millis(3),
        sent[0].0,
        Ok(Reply::Exists(Some(Stat {
            ephemeral_owner: 7,
            ..Stat::default()
        }))),
    );
    assert_eq!(m.poll_output(), Some(Ok(Once::Applied { results: None })));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::Delete { path, .. })] if *path == receipt()),
        "only the receipt's cleanup: {sent:?}"
    );
}

/// A delay element named as a [`DelayQueue`] names it.
fn due_name(due: u64, seq: i64) -> String {
    format!(
        "{}{SEPARATOR}{}{SEPARATOR}{}",
        element_prefix(0, 0x1),
        select::due_tag(due),
        path::format_sequence(seq)
    )
}

#[test]
fn a_delay_take_waits_for_the_due_time_on_a_timer_and_a_watch_then_claims() {
    let mut m = TakeMachine::new("/q", GUID, Patience::Forever).selecting(Select::Due {
        epoch_at_start: 10_000,
    });
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    let (later, sooner) = (due_name(10_900, 1), due_name(10_500, 2));
    m.handle_reply(Millis(1), sent[0].0, children(&[&later, &sooner]));
    // Nothing due: list again with a watch armed, then wait.
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::GetChildren { watch: true, .. })]),
        "{sent:?}"
    );
    m.handle_reply(Millis(2), sent[0].0, children(&[&later, &sooner]));
    assert!(drain(&mut m).is_empty(), "no polling");
    assert_eq!(
        m.poll_timer(),
        Some(Millis(500)),
        "woken when the earliest is due"
    );
    m.handle_timer(Millis(499));
    assert!(drain(&mut m).is_empty(), "not before");
    m.handle_timer(Millis(500));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::GetChildren { .. })]),
        "{sent:?}"
    );
    m.handle_reply(Millis(501), sent[0].0, children(&[&later, &sooner]));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::GetData { path, .. })] if *path == format!("/q/{sooner}")),
        "the due one, not the later one: {sent:?}"
    );
}

#[test]
fn a_removal_take_considers_only_its_id() {
    let mut m = TakeMachine::new("/q", GUID, Patience::None).selecting(Select::Id("gone".into()));
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    let tagged = |id: &str, seq| {
        format!(
            "{}{SEPARATOR}{id}{SEPARATOR}{}",
            element_prefix(0, 0x1),
            path::format_sequence(seq)
        )
    };
    m.handle_reply(
        Millis(1),
        sent[0].0,
        children(&[&tagged("kept", 1), &name(0, 2)]),
    );
    assert_eq!(m.poll_output(), Some(Ok(None)), "nothing with that id");
}
