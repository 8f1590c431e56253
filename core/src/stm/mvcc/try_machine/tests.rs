//! The read for writing without a `sync`: when it is taken, and what a try that never tags
//! the ref it read that way does.

use super::*;
use crate::stm::mvcc::{Barging, Me};
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

/// The tagging of `a` for transaction `t-1` (read point 9), as the try sends it.
fn tagging() -> TagMachine {
    let me = Me {
        txid: "t-1".into(),
        age: 9,
        read_point: 9,
    };
    let barging = Barging {
        may_barge: false,
        barge_committing: false,
    };
    let mut m = TagMachine::new("/s", me, vec!["a".into()], barging);
    m.handle_session(Millis(0), SessionState::Connected);
    m
}

/// Answers a tagging's burst: the multi with `multi`, then no other tag, the ref node
/// committed at 4 and an empty history.
fn answer_tagging(m: &mut TagMachine, multi: crate::Result<Reply>) {
    let sent: Vec<(Token, Request)> = std::iter::from_fn(|| m.poll_request()).collect();
    assert!(matches!(sent[0].1, Request::Multi(_)), "{sent:?}");
    let mut replies = vec![multi];
    replies.push(Ok(Reply::Children {
        children: vec!["t-1".into()],
        stat: Stat::default(),
    }));
    replies.push(Ok(Reply::Data {
        data: b"1".to_vec(),
        stat: Stat {
            mzxid: 4,
            ..Stat::default()
        },
    }));
    replies.push(Ok(Reply::Children {
        children: vec![],
        stat: Stat::default(),
    }));
    for ((token, _), reply) in sent.into_iter().zip(replies) {
        m.handle_reply(Millis(0), token, reply);
    }
}

fn exists_error() -> crate::Result<Reply> {
    Err(crate::Error::Multi {
        index: 0,
        source: Box::new(crate::Error::NodeExists {
            path: "/s/stm/history/t-1".into(),
        }),
    })
}

#[test]
fn a_tagging_whose_reply_was_lost_is_sent_again_and_finds_its_own_nodes() {
    let mut m = tagging();
    let sent: Vec<(Token, Request)> = std::iter::from_fn(|| m.poll_request()).collect();
    for (token, _) in sent {
        m.handle_reply(Millis(0), token, Err(crate::Error::ConnectionLoss));
    }
    assert_eq!(m.poll_output(), None, "not given up");
    m.handle_session(Millis(1), SessionState::Disconnected);
    m.handle_session(Millis(2), SessionState::Connected);
    // The first multi applied: sent again, it finds the point there.
    answer_tagging(&mut m, exists_error());
    let Some(Ok(tagged)) = m.poll_output() else {
        panic!("the tagging goes on")
    };
    assert_eq!(tagged.bases.len(), 1);
    assert_eq!(tagged.bases[0].version, 0);

    // Sent once, a point already there is someone else's doing: a failure, not ours.
    let mut first = tagging();
    answer_tagging(&mut first, exists_error());
    assert!(matches!(first.poll_output(), Some(Err(Halt::Zk(_)))));
}
