use super::*;
use crate::Stat;
use crate::machine::testing::drain;

fn spec() -> CommitSpec {
    CommitSpec {
        ops: vec![
            Op::check("/r/a", Some(1)),
            Op::set_data("/r/b", b"new".to_vec(), Some(4)),
            Op::set_data("/r/c", b"c".to_vec(), Some(7)),
        ],
        commute_from: 2,
        txn: 42,
        refresh: vec!["/r/a".into(), "/r/b".into(), "/r/c".into()],
    }
}

fn node(txns: Vec<u128>, version: i32) -> Reply {
    Reply::Data {
        data: Envelope {
            txns,
            chain: 100,
            ..Envelope::default()
        }
        .to_bytes(),
        stat: Stat {
            version,
            ..Stat::default()
        },
    }
}

fn started() -> (CommitMachine, Token) {
    let mut m = CommitMachine::new(spec());
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    assert_eq!(sent.len(), 1);
    (m, sent[0].0)
}

/// The `multi`'s refusal at its first operation, the check of `/r/a`.
fn check_of_a_refused() -> Error {
    Error::Multi {
        index: 0,
        source: Box::new(Error::BadVersion {
            path: "/r/a".into(),
        }),
    }
}

#[test]
fn a_refused_check_refreshes_every_ref_in_the_same_step() {
    let (mut m, t) = started();
    m.handle_reply(Millis(1), t, Err(check_of_a_refused()));
    let reads = drain(&mut m);
    assert_eq!(reads.len(), 3, "one round trip reads the three refs");
    for (i, (t, _)) in reads.iter().enumerate() {
        m.handle_reply(Millis(2), *t, Ok(node(vec![], i as i32)));
    }
    assert!(matches!(
        m.poll_output(),
        Some(CommitOutcome::Conflict { index: 0, current, .. }) if current.len() == 3
    ));
}

/// Found by trace conformance: a session lost while the refs are read again used to
/// count as a conflict, so `dosync` at its retry limit reported the limit.
#[test]
fn a_session_lost_during_the_refresh_fails_the_commit() {
    let (mut m, t) = started();
    m.handle_reply(Millis(1), t, Err(check_of_a_refused()));
    let reads = drain(&mut m);
    m.handle_reply(Millis(2), reads[0].0, Err(Error::SessionExpired));
    assert_eq!(
        m.poll_output(),
        Some(CommitOutcome::Failed(Error::SessionExpired))
    );
}

#[test]
fn a_refused_commuted_write_asks_for_a_recompute_only() {
    let (mut m, t) = started();
    let refused = Error::Multi {
        index: 2,
        source: Box::new(Error::BadVersion {
            path: "/r/c".into(),
        }),
    };
    m.handle_reply(Millis(1), t, Err(refused));
    let reads = drain(&mut m);
    assert!(matches!(&reads[..], [(_, Request::GetData { path, .. })] if path == "/r/c"));
    m.handle_reply(Millis(2), reads[0].0, Ok(node(vec![], 8)));
    assert!(matches!(
        m.poll_output(),
        Some(CommitOutcome::CommuteMoved { index: 2, .. })
    ));
}

/// Loses the multi's reply and returns the recovery reads (after the sync).
fn lose_the_reply() -> (CommitMachine, Vec<(Token, Request)>) {
    let (mut m, t) = started();
    m.handle_reply(Millis(1), t, Err(Error::ConnectionLoss));
    assert!(drain(&mut m).is_empty(), "never sent again blindly");
    m.handle_session(Millis(2), SessionState::Disconnected);
    m.handle_session(Millis(3), SessionState::Connected);
    let sent = drain(&mut m);
    assert!(matches!(sent[0].1, Request::Sync { .. }));
    assert_eq!(sent.len(), 3, "a sync and the two written refs");
    assert!(m.recovered());
    (m, sent)
}

#[test]
fn a_lost_reply_is_decided_by_the_commit_id() {
    let (mut m, sent) = lose_the_reply();
    m.handle_reply(Millis(4), sent[1].0, Ok(node(vec![99, 42], 6)));
    m.handle_reply(Millis(4), sent[2].0, Ok(node(vec![42], 8)));
    assert!(matches!(
        m.poll_output(),
        Some(CommitOutcome::Applied {
            recovered: Some(_),
            ..
        })
    ));

    let (mut m, sent) = lose_the_reply();
    m.handle_reply(Millis(4), sent[1].0, Ok(node(vec![], 4)));
    m.handle_reply(Millis(4), sent[2].0, Ok(node(vec![], 7)));
    assert!(matches!(
        m.poll_output(),
        Some(CommitOutcome::NotApplied { .. })
    ));

    let (mut m, sent) = lose_the_reply();
    let others: Vec<u128> = (1000..1032).collect();
    m.handle_reply(Millis(4), sent[1].0, Ok(node(others.clone(), 90)));
    m.handle_reply(Millis(4), sent[2].0, Ok(node(others, 90)));
    assert!(matches!(
        m.poll_output(),
        Some(CommitOutcome::Unknown { .. })
    ));
}

#[test]
fn checks_only_are_sent_again_after_a_lost_reply() {
    let mut m = CommitMachine::new(CommitSpec {
        ops: vec![Op::check("/r/a", Some(1)), Op::check("/r/b", Some(2))],
        commute_from: 2,
        txn: 1,
        refresh: vec![],
    });
    m.handle_session(Millis(0), SessionState::Connected);
    let t = drain(&mut m)[0].0;
    m.handle_reply(Millis(1), t, Err(Error::ConnectionLoss));
    m.handle_timer(Millis(1 + RETRY_PAUSE_MS));
    let again = drain(&mut m);
    assert!(matches!(&again[..], [(_, Request::Multi(ops))] if ops.len() == 2));
    assert!(!m.recovered());
}

#[test]
fn a_lost_session_fails_the_commit() {
    let (mut m, _) = started();
    m.handle_session(Millis(1), SessionState::Expired);
    assert!(matches!(m.poll_output(), Some(CommitOutcome::Failed(e)) if e.is_session_lost()));
}
