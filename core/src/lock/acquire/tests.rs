//! Hand-stepped tests of the acquisition machine.

use super::*;
use crate::machine::testing::{children, drain};
use crate::{CreateMode, Stat};

const SESSION: i64 = 0x5e55;

fn start(patience: Patience) -> AcquireMachine {
    let mut m = AcquireMachine::new("/l", LockKind::Exclusive, 1, SESSION, patience, vec![]);
    m.handle_session(Millis(0), SessionState::Connected);
    m
}

fn stat(czxid: i64) -> Stat {
    Stat {
        czxid,
        ephemeral_owner: SESSION,
        ..Stat::default()
    }
}

#[test]
fn a_free_lock_takes_one_round_trip() {
    let mut m = start(Patience::Forever);
    let sent = drain(&mut m);
    assert!(matches!(&sent[0].1, Request::Create { path, options, .. }
        if path.starts_with("/l/_c_") && path.ends_with("-lock-") && options.mode == CreateMode::EphemeralSequential));
    assert!(matches!(&sent[1].1, Request::GetChildren { path, watch: false } if path == "/l"));
    let ours = format!("{}0000000003", m.prefix());
    m.handle_reply(
        Millis(1),
        sent[0].0,
        Ok(Reply::Created {
            path: format!("/l/{ours}"),
            stat: stat(77),
        }),
    );
    m.handle_reply(Millis(1), sent[1].0, children(&[&ours]));
    let acquired = m.poll_output().expect("done").expect("acquired");
    assert_eq!(acquired.node, format!("/l/{ours}"));
    assert_eq!(acquired.fencing_token, 77);
    assert!(drain(&mut m).is_empty());
}

#[test]
fn a_waiter_watches_only_its_predecessor() {
    let mut m = start(Patience::Forever);
    let sent = drain(&mut m);
    let ours = format!("{}0000000005", m.prefix());
    m.handle_reply(
        Millis(1),
        sent[0].0,
        Ok(Reply::Created {
            path: format!("/l/{ours}"),
            stat: stat(9),
        }),
    );
    m.handle_reply(
        Millis(1),
        sent[1].0,
        children(&[
            "_c_a-lock-0000000001",
            "_c_b-lock-0000000004",
            &ours,
            "_c_c-lock-0000000006",
        ]),
    );
    let sent = drain(&mut m);
    assert_eq!(sent.len(), 1);
    assert!(
        matches!(&sent[0].1, Request::Exists { path, watch: true } if path == "/l/_c_b-lock-0000000004")
    );
    m.handle_reply(
        Millis(2),
        sent[0].0,
        Ok(Reply::Exists(Some(Stat::default()))),
    );
    assert!(drain(&mut m).is_empty() && m.poll_output().is_none());
    m.handle_watch(
        Millis(3),
        sent[0].0,
        WatchedEvent {
            kind: crate::EventKind::NodeDeleted,
            state: SessionState::Connected,
            path: String::new(),
        },
    );
    let sent = drain(&mut m);
    m.handle_reply(
        Millis(4),
        sent[0].0,
        children(&[&ours, "_c_c-lock-0000000006"]),
    );
    assert!(m.poll_output().expect("done").is_ok());
}

fn deleted() -> WatchedEvent {
    WatchedEvent {
        kind: crate::EventKind::NodeDeleted,
        state: SessionState::Connected,
        path: String::new(),
    }
}

#[test]
fn the_lowest_predecessor_going_hands_over_without_a_read() {
    let mut m = start(Patience::Forever);
    let sent = drain(&mut m);
    let ours = format!("{}0000000002", m.prefix());
    m.handle_reply(
        Millis(1),
        sent[0].0,
        Ok(Reply::Created {
            path: format!("/l/{ours}"),
            stat: stat(8),
        }),
    );
    m.handle_reply(
        Millis(1),
        sent[1].0,
        children(&["_c_a-lock-0000000001", &ours, "_c_c-lock-0000000003"]),
    );
    let sent = drain(&mut m);
    m.handle_reply(Millis(2), sent[0].0, Ok(Reply::Exists(Some(stat(1)))));
    // A data change (a revocation request) is not a release: look again.
    m.handle_watch(
        Millis(3),
        sent[0].0,
        WatchedEvent {
            kind: crate::EventKind::NodeDataChanged,
            ..deleted()
        },
    );
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::GetChildren { .. })]));
    m.handle_reply(
        Millis(4),
        sent[0].0,
        children(&["_c_a-lock-0000000001", &ours]),
    );
    let sent = drain(&mut m);
    m.handle_reply(Millis(5), sent[0].0, Ok(Reply::Exists(Some(stat(1)))));
    m.handle_watch(Millis(6), sent[0].0, deleted());
    assert!(
        drain(&mut m).is_empty(),
        "no children read after the release"
    );
    let acquired = m.poll_output().expect("done").expect("acquired");
    assert_eq!(acquired.fencing_token, 8);
    assert_eq!(acquired.node, format!("/l/{ours}"));
}

#[test]
fn a_predecessor_gone_before_the_watch_hands_over_only_if_last() {
    let mut m = start(Patience::Forever);
    let sent = drain(&mut m);
    let ours = format!("{}0000000003", m.prefix());
    m.handle_reply(
        Millis(1),
        sent[0].0,
        Ok(Reply::Created {
            path: format!("/l/{ours}"),
            stat: stat(9),
        }),
    );
    m.handle_reply(
        Millis(1),
        sent[1].0,
        children(&["_c_a-lock-0000000001", "_c_b-lock-0000000002", &ours]),
    );
    let sent = drain(&mut m);
    // Not the last blocker: its absence sends us back to the children.
    m.handle_reply(Millis(2), sent[0].0, Ok(Reply::Exists(None)));
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::GetChildren { .. })]));
    m.handle_reply(
        Millis(3),
        sent[0].0,
        children(&["_c_a-lock-0000000001", &ours]),
    );
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::Exists { path, watch: true })] if path == "/l/_c_a-lock-0000000001")
    );
    m.handle_reply(Millis(4), sent[0].0, Ok(Reply::Exists(None)));
    assert!(drain(&mut m).is_empty());
    assert_eq!(
        m.poll_output()
            .expect("done")
            .expect("acquired")
            .fencing_token,
        9
    );
}

#[test]
fn a_node_being_released_by_this_owner_does_not_block() {
    let releasing = "_c_0-lock-0000000001".to_string();
    let mut m = AcquireMachine::new(
        "/l",
        LockKind::Exclusive,
        1,
        SESSION,
        Patience::None,
        vec![],
    )
    .with_releasing(vec![releasing.clone()]);
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    let ours = format!("{}0000000002", m.prefix());
    m.handle_reply(
        Millis(1),
        sent[0].0,
        Ok(Reply::Created {
            path: format!("/l/{ours}"),
            stat: stat(4),
        }),
    );
    m.handle_reply(Millis(1), sent[1].0, children(&[&releasing, &ours]));
    assert!(m.poll_output().expect("done").is_ok(), "not WouldBlock");
}

#[test]
fn an_indeterminate_create_adopts_the_node_it_made() {
    let mut m = start(Patience::Forever);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_reply(Millis(1), sent[1].0, Err(Error::ConnectionLoss));
    assert!(drain(&mut m).is_empty(), "waits before retrying");
    m.handle_session(Millis(2), SessionState::Connected);
    let sent = drain(&mut m);
    assert!(
        matches!(
            &sent[..],
            [(_, Request::Sync { .. }), (_, Request::GetChildren { .. })]
        ),
        "the recovery read is synced first: {sent:?}"
    );
    m.handle_reply(Millis(3), sent[0].0, Ok(Reply::Synced));
    let ours = format!("{}0000000000", m.prefix());
    m.handle_reply(Millis(3), sent[1].0, children(&[&ours]));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[0].1, Request::Exists { path, watch: false } if *path == format!("/l/{ours}"))
    );
    m.handle_reply(Millis(4), sent[0].0, Ok(Reply::Exists(Some(stat(5)))));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[0].1, Request::GetChildren { .. }),
        "no second create"
    );
    m.handle_reply(Millis(5), sent[0].0, children(&[&ours]));
    assert_eq!(
        m.poll_output()
            .expect("done")
            .expect("acquired")
            .fencing_token,
        5
    );
}

#[test]
fn try_lock_removes_its_node_when_the_lock_is_held() {
    let mut m = start(Patience::None);
    let sent = drain(&mut m);
    let ours = format!("{}0000000002", m.prefix());
    m.handle_reply(
        Millis(1),
        sent[0].0,
        Ok(Reply::Created {
            path: format!("/l/{ours}"),
            stat: stat(3),
        }),
    );
    m.handle_reply(
        Millis(1),
        sent[1].0,
        children(&["_c_x-lock-0000000001", &ours]),
    );
    let sent = drain(&mut m);
    assert!(matches!(&sent[0].1, Request::Delete { path, .. } if *path == format!("/l/{ours}")));
    m.handle_reply(Millis(2), sent[0].0, Ok(Reply::Deleted));
    assert_eq!(m.poll_output(), Some(Err(LockError::WouldBlock)));
}

#[test]
fn a_reader_waits_only_for_writers_it_does_not_hold() {
    let own = vec!["_c_me-__WRIT__0000000001".to_string()];
    let mut m = AcquireMachine::new("/rw", LockKind::Read, 2, SESSION, Patience::None, own);
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    let ours = format!("{}0000000003", m.prefix());
    m.handle_reply(
        Millis(1),
        sent[0].0,
        Ok(Reply::Created {
            path: format!("/rw/{ours}"),
            stat: stat(4),
        }),
    );
    m.handle_reply(
        Millis(1),
        sent[1].0,
        children(&["_c_me-__WRIT__0000000001", "_c_r-__READ__0000000002", &ours]),
    );
    assert!(m.poll_output().expect("done").is_ok());
}

#[test]
fn a_recheck_pending_at_the_deadline_is_not_run_after_giving_up() {
    let mut m = start(Patience::Millis(100));
    let sent = drain(&mut m);
    let ours = format!("{}0000000002", m.prefix());
    m.handle_reply(
        Millis(1),
        sent[0].0,
        Ok(Reply::Created {
            path: format!("/l/{ours}"),
            stat: stat(3),
        }),
    );
    m.handle_reply(Millis(1), sent[1].0, Err(Error::ConnectionLoss));
    let sent = drain(&mut m);
    // The re-check fails just before the deadline: it is due again after it.
    m.handle_reply(Millis(95), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_session(Millis(96), SessionState::Disconnected);
    assert_eq!(m.poll_timer(), Some(Millis(100)));
    m.handle_timer(Millis(100));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::Delete { path, .. })] if *path == format!("/l/{ours}"))
    );
    m.handle_session(Millis(101), SessionState::Connected);
    assert!(drain(&mut m).is_empty(), "no re-check after giving up");
    m.handle_reply(Millis(102), sent[0].0, Ok(Reply::Deleted));
    assert_eq!(m.poll_output(), Some(Err(LockError::TimedOut)));
}

#[test]
fn session_expiry_ends_the_wait() {
    let mut m = start(Patience::Forever);
    drain(&mut m);
    m.handle_session(Millis(1), SessionState::Expired);
    assert_eq!(
        m.poll_output(),
        Some(Err(LockError::SessionLost(Error::SessionExpired)))
    );
}
