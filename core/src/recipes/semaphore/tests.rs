//! Hand-stepped tests of the semaphore machines.

use super::*;
use crate::machine::testing::{children, drain};
use crate::machine::{Machine, Millis, Reply, Request, Token};
use crate::{CreateMode, SessionState, WatchedEvent};
use crate::{EventKind, Stat};

const SESSION: i64 = 0x5e55;

fn start(max: u32, patience: Patience) -> SemaphoreMachine {
    let mut m = SemaphoreMachine::new("/s", max, 1, SESSION, patience);
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

fn created(path: String, czxid: i64) -> crate::Result<Reply> {
    Ok(Reply::Created {
        path,
        stat: stat(czxid),
    })
}

/// Steps through taking the free mutex; returns the mutex node's path.
fn take_mutex(m: &mut SemaphoreMachine) -> String {
    let sent = drain(m);
    assert!(
        matches!(&sent[0].1, Request::Create { path, .. } if path.starts_with("/s/locks/_c_") && path.ends_with("-lock-"))
    );
    assert!(
        matches!(&sent[1].1, Request::GetChildren { path, watch: false } if path == "/s/locks"),
        "the mutex machine lists its lock's children with its create"
    );
    let lock = format!("/s/locks/{}0000000000", m.lock_prefix());
    m.handle_reply(Millis(1), sent[0].0, created(lock.clone(), 10));
    m.handle_reply(Millis(1), sent[1].0, children(&[path::name(&lock)]));
    lock
}

/// Answers the lease create (`ours`, zxid 20) and the listing sent with it (`other`, `ours`).
fn lease_listed(m: &mut SemaphoreMachine, sent: &[(Token, Request)], ours: &str, other: &str) {
    m.handle_reply(
        Millis(2),
        sent[0].0,
        created(format!("/s/leases/{ours}"), 20),
    );
    m.handle_reply(Millis(2), sent[1].0, children(&[other, ours]));
}

/// An unconditional delete of `path`.
fn delete(path: String) -> Request {
    Request::Delete {
        path,
        version: None,
    }
}

#[test]
fn a_free_lease_takes_lock_lease_unlock() {
    let mut m = start(2, Patience::Forever);
    let lock = take_mutex(&mut m);
    let sent = drain(&mut m);
    assert_eq!(sent.len(), 2, "lease create and listing travel together");
    assert!(matches!(&sent[0].1, Request::Create { path, options, .. }
        if path.starts_with("/s/leases/_c_") && path.ends_with("-lease-") && options.mode == CreateMode::EphemeralSequential));
    assert!(matches!(
        &sent[1].1,
        Request::GetChildren { watch: false, .. }
    ));
    let ours = format!("{}0000000004", m.lease_prefix());
    lease_listed(&mut m, &sent, &ours, "_c_x-lease-0000000003");
    let sent = drain(&mut m);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].1,
        delete(lock),
        "the mutex is released before the lease is handed out"
    );
    assert_eq!(m.poll_output(), None);
    m.handle_reply(Millis(3), sent[0].0, Ok(Reply::Deleted));
    let lease = m.poll_output().expect("done").expect("leased");
    assert_eq!(lease.node, format!("/s/leases/{ours}"));
    assert_eq!(lease.fencing_token, 20);
}

#[test]
fn a_full_semaphore_waits_on_one_child_watch_while_holding_the_mutex() {
    let mut m = start(1, Patience::Forever);
    take_mutex(&mut m);
    let sent = drain(&mut m);
    let ours = format!("{}0000000002", m.lease_prefix());
    lease_listed(&mut m, &sent, &ours, "_c_x-lease-0000000001");
    let sent = drain(&mut m);
    assert_eq!(sent.len(), 1);
    assert!(
        matches!(&sent[0].1, Request::GetChildren { path, watch: true } if path == "/s/leases")
    );
    m.handle_reply(
        Millis(3),
        sent[0].0,
        children(&["_c_x-lease-0000000001", &ours]),
    );
    assert!(drain(&mut m).is_empty(), "waits for the watch");
    m.handle_watch(
        Millis(9),
        sent[0].0,
        WatchedEvent {
            kind: EventKind::NodeChildrenChanged,
            state: SessionState::Connected,
            path: "/s/leases".into(),
        },
    );
    let sent = drain(&mut m);
    assert!(matches!(
        &sent[0].1,
        Request::GetChildren { watch: true, .. }
    ));
    m.handle_reply(Millis(10), sent[0].0, children(&[&ours]));
    let sent = drain(&mut m);
    assert!(matches!(&sent[0].1, Request::Delete { path, .. } if path.starts_with("/s/locks/")));
    m.handle_reply(Millis(11), sent[0].0, Ok(Reply::Deleted));
    assert!(m.poll_output().expect("done").is_ok());
}

/// Takes the free mutex and creates our lease (`…0000000002`, czxid 20), leaving its
/// listing unanswered: returns the mutex node, the lease node and the listing's token.
fn lease_created(m: &mut SemaphoreMachine) -> (String, String, Token) {
    let lock = take_mutex(m);
    let sent = drain(m);
    let ours = format!("/s/leases/{}0000000002", m.lease_prefix());
    m.handle_reply(Millis(2), sent[0].0, created(ours.clone(), 20));
    (lock, ours, sent[1].0)
}

/// A semaphore of one whose lease another holds: our lease is counted twice (as created,
/// then with a watch) and waits. Returns the mutex node and our lease node.
fn waiting_for_a_lease(m: &mut SemaphoreMachine) -> (String, String) {
    let (lock, ours, list) = lease_created(m);
    let full = || children(&["_c_x-lease-0000000001", path::name(&ours)]);
    m.handle_reply(Millis(2), list, full());
    let sent = drain(m);
    m.handle_reply(Millis(3), sent[0].0, full());
    (lock, ours)
}

/// Expects the machine's only request to be the delete of `path`, and answers it at `at`.
fn answer_delete(m: &mut SemaphoreMachine, path: String, at: u64) {
    let sent = drain(m);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        sent[0].1,
        Request::Delete {
            path,
            version: None
        }
    );
    m.handle_reply(Millis(at), sent[0].0, Ok(Reply::Deleted));
}

#[test]
fn timing_out_removes_the_lease_then_the_mutex_node() {
    let mut m = start(1, Patience::Millis(100));
    let (lock, ours) = waiting_for_a_lease(&mut m);
    assert_eq!(m.poll_timer(), Some(Millis(100)));
    m.handle_timer(Millis(100));
    answer_delete(&mut m, ours, 101);
    answer_delete(&mut m, lock, 102);
    assert_eq!(m.poll_output(), Some(Err(LockError::TimedOut)));
}

#[test]
fn an_indeterminate_lease_create_adopts_the_node_it_made() {
    let mut m = start(3, Patience::Forever);
    take_mutex(&mut m);
    let sent = drain(&mut m);
    m.handle_reply(Millis(2), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_reply(Millis(2), sent[1].0, Err(Error::ConnectionLoss));
    assert!(drain(&mut m).is_empty(), "waits before retrying");
    m.handle_session(Millis(3), SessionState::Disconnected);
    m.handle_session(Millis(4), SessionState::Connected);
    let sent = drain(&mut m);
    // Synced: the session may now be on a server that has not applied the lost create, and
    // an unsynced listing there would hide our lease, so a second one would be made and the
    // first would hold a lease for nobody until the session ends.
    assert!(
        matches!(&sent[0].1, Request::Sync { path } if path == "/s/leases"),
        "{sent:?}"
    );
    assert!(
        matches!(&sent[1].1, Request::GetChildren { path, watch: false } if path == "/s/leases")
    );
    let ours = format!("{}0000000000", m.lease_prefix());
    m.handle_reply(Millis(5), sent[0].0, Ok(Reply::Synced));
    m.handle_reply(Millis(5), sent[1].0, children(&[&ours]));
    let sent = drain(&mut m);
    assert!(matches!(&sent[0].1, Request::Exists { watch: false, .. }));
    m.handle_reply(Millis(6), sent[0].0, Ok(Reply::Exists(Some(stat(30)))));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[0].1, Request::GetChildren { .. }),
        "no second create"
    );
    m.handle_reply(Millis(7), sent[0].0, children(&[&ours]));
    let sent = drain(&mut m);
    m.handle_reply(Millis(8), sent[0].0, Ok(Reply::Deleted));
    assert_eq!(
        m.poll_output()
            .expect("done")
            .expect("leased")
            .fencing_token,
        30
    );
}

#[test]
fn try_acquire_gives_up_when_full() {
    let mut m = start(1, Patience::None);
    let lock = take_mutex(&mut m);
    let sent = drain(&mut m);
    let ours = format!("/s/leases/{}0000000002", m.lease_prefix());
    m.handle_reply(Millis(2), sent[0].0, created(ours.clone(), 20));
    m.handle_reply(
        Millis(2),
        sent[1].0,
        children(&["_c_x-lease-0000000001", path::name(&ours)]),
    );
    let sent = drain(&mut m);
    assert_eq!(sent[0].1, delete(ours));
    m.handle_reply(Millis(3), sent[0].0, Ok(Reply::Deleted));
    let sent = drain(&mut m);
    assert_eq!(sent[0].1, delete(lock));
    m.handle_reply(
        Millis(4),
        sent[0].0,
        Err(Error::NoNode {
            path: String::new(),
        }),
    );
    assert_eq!(m.poll_output(), Some(Err(LockError::WouldBlock)));
}

#[test]
fn session_expiry_ends_the_acquisition() {
    let mut m = start(1, Patience::Forever);
    take_mutex(&mut m);
    drain(&mut m);
    m.handle_session(Millis(5), SessionState::Expired);
    assert_eq!(
        m.poll_output(),
        Some(Err(LockError::SessionLost(Error::SessionExpired)))
    );
}

#[test]
fn a_count_lost_with_the_connection_is_counted_again() {
    let mut m = start(2, Patience::Forever);
    let (lock, ours, list) = lease_created(&mut m);
    m.handle_reply(Millis(2), list, Err(Error::ConnectionLoss));
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[0].1, Request::GetChildren { path, .. } if path == "/s/leases"),
        "counted again, the lease node kept: {sent:?}"
    );
    m.handle_reply(Millis(3), sent[0].0, children(&[path::name(&ours)]));
    let sent = drain(&mut m);
    assert_eq!(sent[0].1, delete(lock));
    m.handle_reply(Millis(4), sent[0].0, Ok(Reply::Deleted));
    assert_eq!(m.poll_output().expect("done").expect("leased").node, ours);
}

#[cfg(feature = "planted-bugs")]
mod planted {
    use super::*;
    use crate::planted::Bug;

    fn start_with(max: u32, patience: Patience, bug: Bug) -> SemaphoreMachine {
        let bugs = crate::planted::Bugs::plant([bug]).expect("compiled in");
        let mut m = SemaphoreMachine::new("/s", max, 1, SESSION, patience).planted(bugs);
        m.handle_session(Millis(0), SessionState::Connected);
        m
    }

    /// CURATOR-335: the lost count fails the acquisition and only the mutex is deleted; the
    /// lease node stays (compare `a_count_lost_with_the_connection_is_counted_again`).
    #[test]
    fn curator_335_a_lost_count_orphans_the_lease() {
        let mut m = start_with(2, Patience::Forever, Bug::Curator335);
        let (lock, _, list) = lease_created(&mut m);
        m.handle_reply(Millis(2), list, Err(Error::ConnectionLoss));
        answer_delete(&mut m, lock, 3);
        assert_eq!(
            m.poll_output(),
            Some(Err(LockError::Zk(Error::ConnectionLoss)))
        );
    }

    /// CURATOR-462: the timed-out waiter deletes only the mutex; its lease node stays
    /// (compare `timing_out_removes_the_lease_then_the_mutex_node`).
    #[test]
    fn curator_462_timing_out_orphans_the_lease() {
        let mut m = start_with(1, Patience::Millis(100), Bug::Curator462);
        let (lock, _) = waiting_for_a_lease(&mut m);
        m.handle_timer(Millis(100));
        answer_delete(&mut m, lock, 101);
        assert_eq!(m.poll_output(), Some(Err(LockError::TimedOut)));
    }
}
