use super::*;
use crate::atom::envelope::{Body, Envelope};
use crate::machine::testing::drain;

/// A payload whose writer list is `ids`, writer `i` having written `ids[i]`, on a chain
/// long enough to cover every version of these tests.
fn payload(ids: Vec<u64>) -> Vec<u8> {
    Envelope {
        writers: ids.into_iter().map(|id| (WRITER + id, id)).collect(),
        chain: 1000,
        body: Body::Inline(b"1".to_vec()),
    }
    .to_bytes()
}

/// The writer of the tests' own writes: `payload` names it for id 7 (and 5 for creates).
const WRITER: u64 = 1 << 40;

fn stat(version: i32) -> Stat {
    Stat {
        version,
        czxid: 10,
        mzxid: 100 + i64::from(version),
        ..Stat::default()
    }
}

/// A set of write 7 against version 4, started.
fn write_7() -> CasMachine {
    let mut m = CasMachine::new(
        "/a",
        Step::Set {
            data: payload(vec![7, 3]),
            writer: WRITER + 7,
            write_id: 7,
            version: 4,
            czxid: 10,
        },
    );
    m.handle_session(Millis(0), SessionState::Connected);
    m
}

/// A first write (`x`, write 1 of writer 1) against version 0, started.
fn write_x() -> CasMachine {
    let mut m = CasMachine::new(
        "/a",
        Step::Set {
            data: b"x".to_vec(),
            writer: WRITER + 1,
            write_id: 1,
            version: 0,
            czxid: 10,
        },
    );
    m.handle_session(Millis(0), SessionState::Connected);
    m
}

/// A read reply of the node holding the writes `ids` at `version`.
fn node(ids: Vec<u64>, version: i32) -> crate::Result<Reply> {
    Ok(Reply::Data {
        data: payload(ids),
        stat: stat(version),
    })
}

/// A set of write 7 against version 4, whose reply is lost; returns the recovery read.
fn lose_the_reply() -> (CasMachine, Token) {
    let mut m = write_7();
    let sent = drain(&mut m);
    assert!(matches!(
        &sent[..],
        [(
            _,
            Request::SetData {
                version: Some(4),
                ..
            }
        )]
    ));
    m.handle_reply(Millis(1), sent[0].0, Err(Error::ConnectionLoss));
    assert!(
        drain(&mut m).is_empty(),
        "waits for the session before reading"
    );
    assert_eq!(m.poll_timer(), Some(Millis(1 + RETRY_PAUSE_MS)));
    m.handle_session(Millis(2), SessionState::Disconnected);
    assert!(drain(&mut m).is_empty());
    m.handle_session(Millis(3), SessionState::Connected);
    let read = recovery_read(&mut m, 3);
    (m, read)
}

/// The sync and the read of a recovery, sent together; answers the sync and returns the
/// read's token.
fn recovery_read(m: &mut CasMachine, now: u64) -> Token {
    let sent = drain(m);
    assert!(
        matches!(
            &sent[..],
            [
                (_, Request::Sync { .. }),
                (_, Request::GetData { watch: false, .. })
            ]
        ),
        "{sent:?}"
    );
    m.handle_reply(Millis(now), sent[0].0, Ok(Reply::Synced));
    sent[1].0
}

#[test]
fn an_uncontended_set_is_one_request() {
    let mut m = write_x();
    let sent = drain(&mut m);
    assert_eq!(sent.len(), 1);
    m.handle_reply(Millis(1), sent[0].0, Ok(Reply::Set(stat(1))));
    let out = m.poll_output().expect("done").expect("ok");
    assert_eq!(
        out,
        Outcome::Applied {
            current: Versioned {
                data: b"x".to_vec(),
                stat: stat(1)
            },
            recovered: false
        }
    );
}

#[test]
fn a_lost_reply_whose_write_landed_is_not_applied_again() {
    let (mut m, read) = lose_the_reply();
    // Two more writes landed after ours (version 5); ours is id[2].
    let data = payload(vec![9, 8, 7, 3]);
    m.handle_reply(
        Millis(4),
        read,
        Ok(Reply::Data {
            data: data.clone(),
            stat: stat(7),
        }),
    );
    assert_eq!(
        m.poll_output(),
        Some(Ok(Outcome::Applied {
            current: Versioned {
                data,
                stat: stat(7)
            },
            recovered: true
        }))
    );
    assert!(drain(&mut m).is_empty(), "no second write");
}

#[test]
fn a_lost_write_is_reported_not_applied() {
    let (mut m, read) = lose_the_reply();
    // Still at version 4 (or a stale server): not applied; the caller retries on version 4,
    // which cannot apply twice.
    m.handle_reply(
        Millis(4),
        read,
        Ok(Reply::Data {
            data: payload(vec![3]),
            stat: stat(4),
        }),
    );
    assert!(matches!(
        m.poll_output(),
        Some(Ok(Outcome::NotApplied { current: Some(_) }))
    ));
    assert!(m.recovered());
}

#[test]
fn a_lost_write_overtaken_by_another_is_not_applied() {
    let (mut m, read) = lose_the_reply();
    m.handle_reply(
        Millis(4),
        read,
        Ok(Reply::Data {
            data: payload(vec![8, 3]),
            stat: stat(5),
        }),
    );
    assert!(matches!(
        m.poll_output(),
        Some(Ok(Outcome::NotApplied { current: Some(_) }))
    ));
}

#[test]
fn a_writer_pushed_out_of_a_full_list_is_unknown_not_a_guess() {
    let (mut m, read) = lose_the_reply();
    m.handle_reply(
        Millis(4),
        read,
        Ok(Reply::Data {
            data: payload((100..100 + envelope::WRITERS as u64).collect()),
            stat: stat(4 + 40),
        }),
    );
    assert!(matches!(
        m.poll_output(),
        Some(Err(StepError::Unknown {
            expected: 4,
            found: 44,
            ..
        }))
    ));
}

#[test]
fn a_recreated_node_is_unknown() {
    let (mut m, read) = lose_the_reply();
    m.handle_reply(
        Millis(4),
        read,
        Ok(Reply::Data {
            data: payload(vec![7]),
            stat: Stat {
                czxid: 99,
                ..stat(5)
            },
        }),
    );
    assert!(matches!(
        m.poll_output(),
        Some(Err(StepError::Unknown { .. }))
    ));
}

#[test]
fn a_failed_recovery_read_is_retried_after_a_pause() {
    let (mut m, read) = lose_the_reply();
    m.handle_reply(Millis(4), read, Err(Error::ConnectionLoss));
    assert!(drain(&mut m).is_empty());
    m.handle_timer(Millis(4 + RETRY_PAUSE_MS));
    let read = recovery_read(&mut m, 30);
    m.handle_reply(Millis(30), read, node(vec![7, 3], 5));
    assert!(m.poll_output().expect("done").expect("ok").applied());
}

/// A recovery read behind a failed sync may come from a server that has not applied our
/// write: its "still at the expected version" is not believed.
#[test]
fn a_recovery_read_behind_a_failed_sync_is_not_trusted() {
    let mut m = write_7();
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_timer(Millis(1 + RETRY_PAUSE_MS));
    let sent = drain(&mut m);
    m.handle_reply(Millis(30), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_reply(Millis(30), sent[1].0, node(vec![3], 4));
    assert_eq!(
        m.poll_output(),
        None,
        "a stale 'not applied' is not reported"
    );
    m.handle_timer(Millis(30 + RETRY_PAUSE_MS));
    let read = recovery_read(&mut m, 60);
    m.handle_reply(Millis(60), read, node(vec![7, 3], 5));
    assert!(m.poll_output().expect("done").expect("ok").applied());
}

#[test]
fn a_conflict_reads_the_winner() {
    let mut m = write_x();
    let sent = drain(&mut m);
    m.handle_reply(
        Millis(1),
        sent[0].0,
        Err(Error::BadVersion { path: "/a".into() }),
    );
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::GetData { .. })]));
    m.handle_reply(
        Millis(2),
        sent[0].0,
        Ok(Reply::Data {
            data: b"y".to_vec(),
            stat: stat(1),
        }),
    );
    assert!(matches!(
        m.poll_output(),
        Some(Ok(Outcome::NotApplied { current: Some(v) })) if v.data == b"y"
    ));
}

#[test]
fn a_lost_create_is_recognised_by_its_id() {
    let mut m = CasMachine::new(
        "/a",
        Step::Create {
            data: payload(vec![5]),
            writer: WRITER + 5,
            write_id: 5,
        },
    );
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, Err(Error::OperationTimeout));
    m.handle_timer(Millis(1 + RETRY_PAUSE_MS));
    let read = recovery_read(&mut m, 30);
    m.handle_reply(
        Millis(30),
        read,
        Ok(Reply::Data {
            data: payload(vec![6, 5]),
            stat: stat(1),
        }),
    );
    assert!(m.poll_output().expect("done").expect("ok").applied());
}

#[test]
fn a_linearizable_read_sends_sync_and_read_together() {
    let mut m = CasMachine::new("/a", Step::Read { sync: true });
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    assert!(matches!(
        &sent[..],
        [(_, Request::Sync { .. }), (_, Request::GetData { .. })]
    ));
    m.handle_reply(Millis(1), sent[0].0, Ok(Reply::Synced));
    assert!(m.poll_output().is_none());
    m.handle_reply(
        Millis(1),
        sent[1].0,
        Err(Error::NoNode { path: "/a".into() }),
    );
    assert_eq!(
        m.poll_output(),
        Some(Ok(Outcome::NotApplied { current: None }))
    );
}

#[test]
fn session_expiry_during_a_write_is_an_error() {
    let mut m = write_x();
    drain(&mut m);
    m.handle_session(Millis(1), SessionState::Expired);
    assert_eq!(
        m.poll_output(),
        Some(Err(StepError::Zk(Error::SessionExpired)))
    );
}
