//! Hand-stepped tests of the two phase commit machines.

use super::*;
use crate::machine::testing::{children, drain};
use crate::{EventKind, Stat};

fn data(bytes: &[u8]) -> crate::Result<Reply> {
    Ok(Reply::Data {
        data: bytes.to_vec(),
        stat: Stat::default(),
    })
}

fn votes(pairs: &[(&str, &[u8])]) -> BTreeMap<String, Vec<u8>> {
    pairs
        .iter()
        .map(|(s, v)| (s.to_string(), v.to_vec()))
        .collect()
}

#[test]
fn the_decision_rule() {
    let present = vec!["a".to_string(), "b".to_string()];
    assert_eq!(
        decide(&votes(&[("a", b"commit"), ("b", b"commit")]), &present),
        Some(Outcome::Commit)
    );
    assert_eq!(
        decide(&votes(&[("a", b"abort"), ("b", b"")]), &present),
        Some(Outcome::Abort)
    );
    assert_eq!(
        decide(&votes(&[("a", b"commit"), ("b", b"joined")]), &present),
        None
    );
    // b joined (so was present), did not vote, and is gone.
    assert_eq!(
        decide(&votes(&[("a", b"commit"), ("b", b"joined")]), &present[..1]),
        Some(Outcome::Abort)
    );
    // b never joined: not a failure, just not yet there.
    assert_eq!(
        decide(&votes(&[("a", b"commit"), ("b", b"")]), &present[..1]),
        None
    );
    // b voted and then went away: its vote stands.
    assert_eq!(
        decide(&votes(&[("a", b"commit"), ("b", b"commit")]), &[]),
        Some(Outcome::Commit)
    );
}

#[test]
fn all_commit_is_decided_once_and_read_back() {
    let mut m = OutcomeMachine::new("/t", Some(vec!["a".into(), "b".into()]));
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    assert_eq!(sent.len(), 3, "both votes, then the children");
    m.handle_reply(Millis(1), sent[0].0, data(b"commit"));
    m.handle_reply(Millis(1), sent[1].0, data(b"commit"));
    m.handle_reply(
        Millis(1),
        sent[2].0,
        children(&["owner", "s_a", "s_b", "p_a"]),
    );
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::Create { path, data, .. })] if path == "/t/outcome" && data == b"commit")
    );
    // Someone else decided first: their decision is read, whatever ours was.
    m.handle_reply(
        Millis(2),
        sent[0].0,
        Err(Error::NodeExists {
            path: "/t/outcome".into(),
        }),
    );
    let sent = drain(&mut m);
    m.handle_reply(Millis(3), sent[0].0, data(b"commit"));
    assert_eq!(m.poll_output(), Some(Ok(Outcome::Commit)));
}

#[test]
fn an_undecided_snapshot_waits_then_reads_again() {
    let mut m = OutcomeMachine::new("/t", Some(vec!["a".into()]));
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, data(b"joined"));
    m.handle_reply(Millis(1), sent[1].0, children(&["s_a", "p_a"]));
    assert!(drain(&mut m).is_empty() && m.poll_output().is_none());
    m.handle_watch(
        Millis(2),
        sent[1].0,
        WatchedEvent {
            kind: EventKind::NodeChildrenChanged,
            state: SessionState::Connected,
            path: "/t".into(),
        },
    );
    let sent = drain(&mut m);
    m.handle_reply(Millis(3), sent[0].0, data(b"joined"));
    m.handle_reply(Millis(3), sent[1].0, children(&["s_a"]));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::Create { data, .. })] if data == b"abort"),
        "the site died before voting"
    );
}

/// A vote changes after the snapshot read it and before the children reply: its watch
/// fires mid-snapshot. The machine must not then wait on that spent watch (the last vote
/// would never wake it): it takes the snapshot again.
#[test]
fn a_watch_that_fires_during_the_snapshot_is_not_lost() {
    let mut m = OutcomeMachine::new("/t", Some(vec!["a".into(), "b".into()]));
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, data(b"commit"));
    m.handle_reply(Millis(1), sent[1].0, data(b"joined"));
    m.handle_watch(
        Millis(2),
        sent[1].0,
        WatchedEvent {
            kind: EventKind::NodeDataChanged,
            state: SessionState::Connected,
            path: "/t/s_b".into(),
        },
    );
    m.handle_reply(
        Millis(2),
        sent[2].0,
        children(&["s_a", "s_b", "p_a", "p_b"]),
    );
    let sent = drain(&mut m);
    assert_eq!(sent.len(), 3, "the snapshot is taken again: {sent:?}");
    m.handle_reply(Millis(3), sent[0].0, data(b"commit"));
    m.handle_reply(Millis(3), sent[1].0, data(b"commit"));
    m.handle_reply(
        Millis(3),
        sent[2].0,
        children(&["s_a", "s_b", "p_a", "p_b"]),
    );
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::Create { data, .. })] if data == b"commit"),
        "{sent:?}"
    );
}

#[test]
fn a_lost_decision_create_is_settled_by_reading_the_outcome() {
    let mut m = OutcomeMachine::new("/t", Some(vec!["a".into()]));
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, data(b"abort"));
    m.handle_reply(Millis(1), sent[1].0, children(&["s_a"]));
    let sent = drain(&mut m);
    m.handle_reply(Millis(2), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_session(Millis(3), SessionState::Connected);
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::GetData { path, .. })] if path == "/t/outcome"));
    m.handle_reply(Millis(4), sent[0].0, data(b"abort"));
    assert_eq!(m.poll_output(), Some(Ok(Outcome::Abort)));
}
