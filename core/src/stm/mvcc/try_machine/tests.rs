//! The read for writing without a `sync`: when it is taken, and what a try that never tags
//! the ref it read that way does.

use super::*;
use crate::{Stat, planted::Bugs};

fn machine(age: Option<i64>) -> TryMachine {
    let mut m = TryMachine::new(TryConfig {
        root: "/s".into(),
        guid: 7,
        session: 3,
        age,
        max_history: 10,
        planted: Bugs::NONE,
    });
    m.handle_session(Millis(0), SessionState::Connected);
    m
}

fn drain(m: &mut TryMachine) -> Vec<(Token, Request)> {
    std::iter::from_fn(|| m.poll_request()).collect()
}

/// Answers a first read's clock read (point 9) and its ref read (committed at 4).
fn answer_first_read(m: &mut TryMachine, sent: Vec<(Token, Request)>) {
    for (token, request) in sent {
        let reply = match request {
            Request::Sync { .. } => Reply::Synced,
            Request::Exists { .. } => Reply::Exists(Some(Stat {
                pzxid: 9,
                ..Stat::default()
            })),
            Request::GetData { .. } => Reply::Data {
                data: b"1".to_vec(),
                stat: Stat {
                    mzxid: 4,
                    ..Stat::default()
                },
            },
            other => panic!("a first read sent {other:?}"),
        };
        m.handle_reply(Millis(0), token, Ok(reply));
    }
}

#[test]
fn a_first_try_reads_for_writing_without_sync_and_a_retry_syncs() {
    let mut first = machine(None);
    first.read_for_write(Millis(0), "a");
    let sent = drain(&mut first);
    assert!(matches!(sent[0].1, Request::Exists { .. }), "{sent:?}");
    assert_eq!(sent.len(), 2, "the clock and the ref: {sent:?}");

    let mut retry = machine(Some(5));
    retry.read_for_write(Millis(0), "a");
    let sent = drain(&mut retry);
    assert!(matches!(sent[0].1, Request::Sync { .. }), "{sent:?}");
    assert_eq!(sent.len(), 3);

    let mut plain = machine(None);
    plain.read(Millis(0), "a");
    assert!(matches!(drain(&mut plain)[0].1, Request::Sync { .. }));
}

#[test]
fn a_read_for_writing_then_written_goes_on_and_later_reads_send_no_sync() {
    let mut m = machine(None);
    m.read_for_write(Millis(0), "a");
    let sent = drain(&mut m);
    answer_first_read(&mut m, sent);
    assert_eq!(m.poll_output(), Some(Outcome::Read(b"1".to_vec())));
    m.write(Millis(0), "a", false);
    assert_eq!(m.poll_output(), Some(Outcome::Done));
    m.read(Millis(0), "b");
    let sent = drain(&mut m);
    // The tagging of `a` first (its `multi` and reads), then `b`'s ref node alone.
    assert!(matches!(sent[0].1, Request::Multi(_)), "{sent:?}");
    assert!(
        !sent.iter().any(|(_, r)| matches!(r, Request::Sync { .. })),
        "{sent:?}"
    );
    assert!(
        matches!(&sent.last().unwrap().1, Request::GetData { path, .. } if path.ends_with("/b")),
        "{sent:?}"
    );
}

#[test]
fn a_read_for_writing_never_written_gives_the_try_up_as_a_conflict() {
    for then in ["read", "ensure", "commit"] {
        let mut m = machine(None);
        m.read_for_write(Millis(0), "a");
        let sent = drain(&mut m);
        answer_first_read(&mut m, sent);
        assert_eq!(m.poll_output(), Some(Outcome::Read(b"1".to_vec())));
        match then {
            "read" => m.read(Millis(0), "b"),
            "ensure" => m.ensure(Millis(0), "b", 9),
            _ => m.commit(
                Millis(0),
                CommitOrder {
                    writes: vec![],
                    commutes: vec![],
                    lock: vec![],
                    may_barge: false,
                    sends: vec![],
                },
            ),
        }
        assert!(
            drain(&mut m).is_empty(),
            "{then}: nothing to remove, nothing sent"
        );
        assert_eq!(
            m.poll_output(),
            Some(Outcome::Failed(Halt::Conflict(Some("a".into())))),
            "{then}"
        );
        assert_eq!(
            m.age(),
            Some(9),
            "{then}: the retry keeps the age, so it syncs"
        );
    }
}
