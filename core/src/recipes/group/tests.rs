//! Hand-stepped tests of the group machines.

use super::*;
use crate::machine::testing::children;
use crate::{EventKind, Stat};

#[test]
fn an_unchanged_membership_waits_for_the_watch() {
    let mut m = WatchMembersMachine::new("/g", Some(vec!["a".into(), "b".into()]));
    m.handle_session(Millis(0), SessionState::Connected);
    let (t1, r) = m.poll_request().unwrap();
    assert!(matches!(r, Request::GetChildren { watch: true, .. }));
    m.handle_reply(Millis(1), t1, children(&["b", "a"]));
    assert!(m.poll_request().is_none() && m.poll_output().is_none());
    m.handle_watch(
        Millis(2),
        t1,
        WatchedEvent {
            kind: EventKind::NodeChildrenChanged,
            state: SessionState::Connected,
            path: "/g".into(),
        },
    );
    let (t2, _) = m.poll_request().unwrap();
    m.handle_reply(Millis(3), t2, children(&["b"]));
    assert_eq!(m.poll_output(), Some(Ok(vec!["b".to_string()])));
}

#[test]
fn a_missing_group_is_empty_and_watched_for_creation() {
    let mut m = WatchMembersMachine::new("/g", Some(vec![]));
    m.handle_session(Millis(0), SessionState::Connected);
    let (t1, _) = m.poll_request().unwrap();
    m.handle_reply(Millis(1), t1, Err(Error::NoNode { path: "/g".into() }));
    let (t2, r) = m.poll_request().unwrap();
    assert!(matches!(r, Request::Exists { watch: true, .. }));
    m.handle_reply(Millis(2), t2, Ok(Reply::Exists(None)));
    assert!(m.poll_output().is_none(), "still empty: nothing to report");
}

#[test]
fn a_lost_join_reply_adopts_our_node() {
    let mut m = join_machine("/g", "a", vec![], 9);
    m.handle_session(Millis(0), SessionState::Connected);
    let (t1, _) = m.poll_request().unwrap();
    m.handle_reply(Millis(1), t1, Err(Error::ConnectionLoss));
    m.handle_session(Millis(2), SessionState::Connected);
    let (sync, r) = m.poll_request().unwrap();
    assert!(
        matches!(r, Request::Sync { .. }),
        "the proof is read after a sync"
    );
    m.handle_reply(Millis(2), sync, Ok(Reply::Synced));
    let (t2, r) = m.poll_request().unwrap();
    assert!(matches!(r, Request::Exists { path, .. } if path == "/g/a"));
    m.handle_reply(
        Millis(3),
        t2,
        Ok(Reply::Exists(Some(Stat {
            ephemeral_owner: 9,
            ..Stat::default()
        }))),
    );
    assert_eq!(m.poll_output(), Some(Ok(Once::Applied { results: None })));
}
