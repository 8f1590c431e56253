//! Hand-stepped tests of the once machines.

use super::*;
use crate::machine::RETRY_PAUSE_MS;
use crate::machine::testing::{drain, synced};
use crate::{CreateMode, Stat};

const SESSION: i64 = 0x5e55;

fn member() -> OnceMachine {
    let ops = vec![Op::create("/g/a", b"x".to_vec(), CreateMode::Ephemeral)];
    let mut m =
        OnceMachine::new(ops, Proof::OwnedEphemeral("/g/a".into()), SESSION).create_parents("/g");
    m.handle_session(Millis(0), SessionState::Connected);
    m
}

fn owned(owner: i64) -> crate::Result<Reply> {
    Ok(Reply::Exists(Some(Stat {
        ephemeral_owner: owner,
        ..Stat::default()
    })))
}

/// The member's `multi` refused at its create with `source`.
fn multi_failed(source: Error) -> Error {
    Error::Multi {
        index: 0,
        source: Box::new(source),
    }
}

#[test]
fn a_lost_reply_is_recognised_by_its_proof_and_not_resent() {
    let mut m = member();
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, Err(Error::ConnectionLoss));
    assert!(drain(&mut m).is_empty(), "waits for the connection");
    m.handle_session(Millis(2), SessionState::Connected);
    let sent = synced(&mut m);
    assert!(matches!(&sent[..], [(_, Request::Exists { path, watch: false })] if path == "/g/a"));
    m.handle_reply(Millis(3), sent[0].0, owned(SESSION));
    assert_eq!(m.poll_output(), Some(Ok(Once::Applied { results: None })));
    assert!(drain(&mut m).is_empty(), "no second write");
}

#[test]
fn a_lost_request_is_resent_once_the_proof_is_absent() {
    let mut m = member();
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_timer(Millis(1 + RETRY_PAUSE_MS));
    let sent = synced(&mut m);
    m.handle_reply(Millis(30), sent[0].0, Ok(Reply::Exists(None)));
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::Multi(_))]));
    m.handle_reply(Millis(31), sent[0].0, Ok(Reply::Multi(vec![])));
    assert_eq!(
        m.poll_output(),
        Some(Ok(Once::Applied {
            results: Some(vec![])
        }))
    );
}

#[test]
fn another_sessions_node_is_a_conflict() {
    let mut m = member();
    let sent = drain(&mut m);
    let exists = multi_failed(Error::NodeExists {
        path: "/g/a".into(),
    });
    m.handle_reply(Millis(1), sent[0].0, Err(exists));
    let sent = synced(&mut m);
    m.handle_reply(Millis(2), sent[0].0, owned(0x07));
    assert_eq!(m.poll_output(), Some(Ok(Once::Conflict)));
}

#[test]
fn a_data_proof_without_our_bytes_means_not_applied() {
    let ops = vec![Op::set_data("/t/s_a", b"commit".to_vec(), Some(1))];
    let proof = Proof::Data("/t/s_a".into(), b"commit".to_vec());
    let mut m = OnceMachine::new(ops, proof, SESSION);
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_session(Millis(2), SessionState::Connected);
    let sent = synced(&mut m);
    assert!(matches!(&sent[..], [(_, Request::GetData { .. })]));
    let joined = Reply::Data {
        data: b"joined".to_vec(),
        stat: Stat::default(),
    };
    m.handle_reply(Millis(3), sent[0].0, Ok(joined));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::Multi(_))]),
        "sent again; its version refuses it if someone else wrote meanwhile"
    );
}

#[test]
fn a_lost_ancestor_create_is_retried_not_reported() {
    let mut m = member();
    let sent = drain(&mut m);
    let no_node = multi_failed(Error::NoNode {
        path: "/g/a".into(),
    });
    m.handle_reply(Millis(1), sent[0].0, Err(no_node.clone()));
    let sent = drain(&mut m);
    m.handle_reply(
        Millis(2),
        sent[0].0,
        Err(Error::NoNode { path: "/g".into() }),
    );
    assert!(m.poll_output().is_none());
    m.handle_timer(Millis(2 + RETRY_PAUSE_MS));
    let sent = drain(&mut m);
    m.handle_reply(Millis(30), sent[0].0, Err(no_node));
    assert!(
        matches!(&drain(&mut m)[..], [(_, Request::Create { .. })]),
        "the parents are created again"
    );
}

#[test]
fn missing_parents_are_created_then_the_write_is_resent() {
    let mut m = member();
    let sent = drain(&mut m);
    let no_node = multi_failed(Error::NoNode {
        path: "/g/a".into(),
    });
    m.handle_reply(Millis(1), sent[0].0, Err(no_node));
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::Create { path, .. })] if path == "/g"));
    m.handle_reply(
        Millis(2),
        sent[0].0,
        Ok(Reply::Created {
            path: "/g".into(),
            stat: Stat::default(),
        }),
    );
    assert!(matches!(&drain(&mut m)[..], [(_, Request::Multi(_))]));
}

#[test]
fn cleanup_is_sent_with_the_output() {
    let ops = vec![Op::create("/q/_r/g", vec![], CreateMode::Ephemeral)];
    let mut m =
        OnceMachine::new(ops, Proof::OwnedEphemeral("/q/_r/g".into()), SESSION).cleanup("/q/_r/g");
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, Ok(Reply::Multi(vec![])));
    assert!(m.poll_output().is_some());
    assert!(matches!(&drain(&mut m)[..], [(_, Request::Delete { path, .. })] if path == "/q/_r/g"));
}

#[test]
fn session_expiry_while_in_doubt_is_an_error() {
    let mut m = member();
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, Err(Error::ConnectionLoss));
    assert!(m.in_doubt());
    m.handle_session(Millis(2), SessionState::Expired);
    assert_eq!(m.poll_output(), Some(Err(Error::SessionExpired)));
}
