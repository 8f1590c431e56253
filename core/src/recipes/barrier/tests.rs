//! Hand-stepped tests of the barrier machines.

use super::*;
use crate::machine::RETRY_PAUSE_MS;
use crate::{EventKind, Stat};

fn event(kind: EventKind) -> WatchedEvent {
    WatchedEvent {
        kind,
        state: SessionState::Connected,
        path: "/b".into(),
    }
}

/// The sync and the exists of one check, answering the sync.
fn check(m: &mut WaitGoneMachine, now: u64) -> Token {
    let (sync, r) = m.poll_request().unwrap();
    assert!(matches!(r, Request::Sync { .. }), "{r:?}");
    let (exists, r) = m.poll_request().unwrap();
    assert!(matches!(r, Request::Exists { watch: true, .. }), "{r:?}");
    m.handle_reply(Millis(now), sync, Ok(Reply::Synced));
    exists
}

#[test]
fn waits_while_the_node_exists_and_looks_again_on_each_event() {
    let mut m = WaitGoneMachine::new("/b");
    m.handle_session(Millis(0), SessionState::Connected);
    let t1 = check(&mut m, 1);
    m.handle_reply(Millis(1), t1, Ok(Reply::Exists(Some(Stat::default()))));
    assert!(m.poll_request().is_none() && m.poll_output().is_none());
    m.handle_watch(Millis(2), t1, event(EventKind::NodeDataChanged));
    let t2 = check(&mut m, 3);
    m.handle_reply(Millis(3), t2, Ok(Reply::Exists(Some(Stat::default()))));
    m.handle_watch(Millis(4), t2, event(EventKind::NodeDeleted));
    let t3 = check(&mut m, 5);
    m.handle_reply(Millis(5), t3, Ok(Reply::Exists(None)));
    assert_eq!(m.poll_output(), Some(Ok(())));
}

#[test]
fn connection_loss_asks_again_after_reconnecting() {
    let mut m = WaitGoneMachine::new("/b");
    m.handle_session(Millis(0), SessionState::Connected);
    let t1 = check(&mut m, 1);
    m.handle_reply(Millis(1), t1, Err(Error::ConnectionLoss));
    assert!(m.poll_request().is_none());
    assert_eq!(m.poll_timer(), Some(Millis(1 + RETRY_PAUSE_MS)));
    m.handle_session(Millis(2), SessionState::Connected);
    assert!(m.poll_request().is_some());
}

/// The exists behind a failed sync may come from a lagging server: "absent" there proves
/// nothing, so the waiter asks again rather than passing.
#[test]
fn an_absent_node_behind_a_failed_sync_does_not_let_the_waiter_pass() {
    let mut m = WaitGoneMachine::new("/b");
    m.handle_session(Millis(0), SessionState::Connected);
    let (sync, _) = m.poll_request().unwrap();
    let (exists, _) = m.poll_request().unwrap();
    m.handle_reply(Millis(1), sync, Err(Error::ConnectionLoss));
    m.handle_reply(Millis(1), exists, Ok(Reply::Exists(None)));
    assert_eq!(m.poll_output(), None);
    assert_eq!(m.poll_timer(), Some(Millis(1 + RETRY_PAUSE_MS)));
    m.handle_timer(Millis(1 + RETRY_PAUSE_MS));
    let again = check(&mut m, 30);
    m.handle_reply(Millis(30), again, Ok(Reply::Exists(Some(Stat::default()))));
    assert_eq!(m.poll_output(), None, "still waiting at the raised barrier");
}

#[test]
fn expiry_ends_the_wait() {
    let mut m = WaitGoneMachine::new("/b");
    m.handle_session(Millis(0), SessionState::Connected);
    m.handle_session(Millis(1), SessionState::Expired);
    assert_eq!(
        m.poll_output(),
        Some(Err(BarrierError::SessionLost(Error::SessionExpired)))
    );
}
