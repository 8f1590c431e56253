//! Hand-stepped tests of the double barrier machines.

use super::*;
use crate::machine::RETRY_PAUSE_MS;
use crate::machine::testing::{children, drain};
use crate::{EventKind, Stat};

fn deleted() -> WatchedEvent {
    WatchedEvent {
        kind: EventKind::NodeDeleted,
        state: SessionState::Connected,
        path: String::new(),
    }
}

fn created(path: &str) -> crate::Result<Reply> {
    Ok(Reply::Created {
        path: path.into(),
        stat: Stat::default(),
    })
}

/// Starts `m` and answers its entry: no `ready`, our node created, the participants `others`
/// and ours. Returns the entry's requests.
fn entered(m: &mut EnterMachine, others: &[&str]) -> Vec<(Token, Request)> {
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(m);
    let ours = path::name(m.node()).to_owned();
    let present: Vec<&str> = others.iter().copied().chain([ours.as_str()]).collect();
    m.handle_reply(Millis(1), sent[0].0, Ok(Reply::Exists(None)));
    m.handle_reply(Millis(1), sent[1].0, created(m.node()));
    m.handle_reply(Millis(1), sent[2].0, children(&present));
    sent
}

#[test]
fn the_last_to_enter_creates_ready() {
    let mut m = EnterMachine::new("/b", 2, 1);
    entered(&mut m, &["p-0a"]);
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::Create { path, .. })] if path == "/b/ready"));
    m.handle_reply(
        Millis(2),
        sent[0].0,
        Err(Error::NodeExists {
            path: "/b/ready".into(),
        }),
    );
    assert_eq!(m.poll_output(), Some(Ok(())));
}

/// The barrier node's ancestors are created, and the connection breaks before the last
/// create's reply: after the pause, a `NoNode` on our create means they are still missing
/// (found on the simulator once a lost message took its connection with it).
#[test]
fn ancestors_lost_with_the_connection_are_created_again() {
    let mut m = EnterMachine::new("/a/b", 2, 1);
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    let no_node = || {
        Err(Error::NoNode {
            path: "/a/b".into(),
        })
    };
    m.handle_reply(Millis(1), sent[0].0, Ok(Reply::Exists(None)));
    m.handle_reply(Millis(1), sent[1].0, no_node());
    m.handle_reply(Millis(1), sent[2].0, no_node());
    let ensure = drain(&mut m);
    assert_eq!(ensure.len(), 2, "/a and /a/b: {ensure:?}");
    m.handle_reply(Millis(2), ensure[0].0, Err(Error::ConnectionLoss));
    m.handle_reply(Millis(2), ensure[1].0, Err(Error::ConnectionLoss));
    m.handle_timer(Millis(2 + RETRY_PAUSE_MS));
    let sent = drain(&mut m);
    m.handle_reply(Millis(30), sent[1].0, no_node());
    assert_eq!(
        m.poll_output(),
        None,
        "not an error: the ancestors are made again"
    );
    let again = drain(&mut m);
    assert!(
        matches!(&again[..], [(_, Request::Create { path, .. }), ..] if path == "/a"),
        "{again:?}"
    );
}

#[test]
fn an_early_entrant_waits_for_ready() {
    let mut m = EnterMachine::new("/b", 3, 1);
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    let ours = path::name(m.node()).to_owned();
    m.handle_reply(Millis(1), sent[0].0, Ok(Reply::Exists(None)));
    // The reply to a create lost earlier: the node with our GUID is ours.
    m.handle_reply(
        Millis(1),
        sent[1].0,
        Err(Error::NodeExists {
            path: m.node().into(),
        }),
    );
    m.handle_reply(Millis(1), sent[2].0, children(&[&ours]));
    assert!(drain(&mut m).is_empty() && m.poll_output().is_none());
    m.handle_watch(
        Millis(2),
        sent[0].0,
        WatchedEvent {
            kind: EventKind::NodeCreated,
            ..deleted()
        },
    );
    let sent = drain(&mut m);
    m.handle_reply(
        Millis(3),
        sent[0].0,
        Ok(Reply::Exists(Some(Stat::default()))),
    );
    assert_eq!(m.poll_output(), Some(Ok(())));
}

/// `p-2` leaving with `listing` present (`p-1` the lowest): it deletes its node and watches
/// `p-1`, which then goes. Returns the machine's next requests (a listing).
fn left_and_lowest_gone(listing: &[&str]) -> (LeaveMachine, Vec<(Token, Request)>) {
    let mut m = LeaveMachine::new("/b", "/b/p-2");
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, children(listing));
    let sent = drain(&mut m);
    assert!(matches!(&sent[0].1, Request::Delete { path, .. } if path == "/b/p-2"));
    assert!(matches!(&sent[1].1, Request::Exists { path, watch: true } if path == "/b/p-1"));
    m.handle_reply(Millis(2), sent[0].0, Ok(Reply::Deleted));
    m.handle_reply(
        Millis(2),
        sent[1].0,
        Ok(Reply::Exists(Some(Stat::default()))),
    );
    m.handle_watch(Millis(3), sent[1].0, deleted());
    let sent = drain(&mut m);
    (m, sent)
}

#[test]
fn leaving_follows_lowest_and_highest() {
    // Not the lowest: delete ours, watch the lowest.
    let (mut m, sent) = left_and_lowest_gone(&["p-3", "ready", "p-2", "p-1"]);
    m.handle_reply(Millis(4), sent[0].0, children(&["ready"]));
    assert_eq!(m.poll_output(), Some(Ok(())));

    // The lowest: watch the highest, then close alone with `ready`.
    let mut m = LeaveMachine::new("/b", "/b/p-1");
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, children(&["p-3", "p-1", "ready"]));
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::Exists { path, watch: true })] if path == "/b/p-3"));
    m.handle_reply(Millis(2), sent[0].0, Ok(Reply::Exists(None)));
    let sent = drain(&mut m);
    m.handle_reply(Millis(3), sent[0].0, children(&["p-1", "ready"]));
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::Multi(ops))] if ops.len() == 2));
    m.handle_reply(Millis(4), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_timer(Millis(4 + RETRY_PAUSE_MS));
    let sent = drain(&mut m);
    // The close went through before the connection dropped: nobody is left.
    m.handle_reply(Millis(30), sent[0].0, children(&[]));
    assert_eq!(m.poll_output(), Some(Ok(())));
}

#[test]
fn a_newcomer_after_the_round_closed_is_not_waited_for() {
    // Not the lowest: our node deleted, the lowest watched. The lowest closed the round (its
    // node and `ready`), and a participant whose session ended inside the round entered again
    // on its next session: its node is all there is.
    let (mut m, sent) = left_and_lowest_gone(&["p-1", "p-2", "ready"]);
    m.handle_reply(Millis(4), sent[0].0, children(&["p-0"]));
    assert_eq!(
        m.poll_output(),
        Some(Ok(())),
        "the round is over: nobody to wait for"
    );
    assert!(drain(&mut m).is_empty());

    // While `ready` stands, a node present is a participant still leaving: wait for it.
    let mut m = LeaveMachine::new("/b", "/b/p-2");
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, children(&["p-1", "ready"]));
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::Exists { path, watch: true })] if path == "/b/p-1"));
    assert_eq!(m.poll_output(), None);
}

#[test]
fn a_lost_delete_of_our_node_is_redone_not_waited_out() {
    let mut m = LeaveMachine::new("/b", "/b/p-2");
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, children(&["p-1", "p-2"]));
    let sent = drain(&mut m);
    // The delete is lost, the watch on the lowest is armed: waiting now would deadlock
    // with the lowest, which waits for our node to go.
    m.handle_reply(Millis(2), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_reply(
        Millis(2),
        sent[1].0,
        Ok(Reply::Exists(Some(Stat::default()))),
    );
    m.handle_timer(Millis(2 + RETRY_PAUSE_MS));
    let sent = drain(&mut m);
    assert!(matches!(&sent[..], [(_, Request::GetChildren { .. })]));
    m.handle_reply(Millis(30), sent[0].0, children(&["p-1", "p-2"]));
    let sent = drain(&mut m);
    assert!(matches!(&sent[0].1, Request::Delete { path, .. } if path == "/b/p-2"));
}

/// Enters a barrier of three where one other participant is present: returns the
/// machine waiting and the token whose watch wakes it.
fn waiting(planted: crate::planted::Bugs) -> (EnterMachine, Token) {
    let mut m = EnterMachine::new("/b", 3, 1).planted(planted);
    let sent = entered(&mut m, &["p-0a"]);
    assert!(drain(&mut m).is_empty(), "waits");
    let woken_by = match &sent[2].1 {
        Request::GetChildren { watch: true, .. } => sent[2].0,
        _ => sent[0].0,
    };
    (m, woken_by)
}

#[test]
fn a_reconnection_does_not_let_a_waiter_in() {
    let (mut m, _) = waiting(crate::planted::Bugs::NONE);
    m.handle_session(Millis(5), SessionState::Disconnected);
    m.handle_session(Millis(6), SessionState::Connected);
    assert_eq!(m.poll_output(), None);
    assert!(drain(&mut m).is_empty(), "the watch on ready stays armed");
}

/// The third participant entered, created `ready` and already left: `ready` lets us in.
#[test]
fn ready_lets_a_waiter_in_after_a_participant_left() {
    let (mut m, watch) = waiting(crate::planted::Bugs::NONE);
    let event = WatchedEvent {
        kind: EventKind::NodeCreated,
        ..deleted()
    };
    m.handle_watch(Millis(7), watch, event);
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[..], [(_, Request::Exists { path, watch: true })] if path == "/b/ready")
    );
    m.handle_reply(
        Millis(8),
        sent[0].0,
        Ok(Reply::Exists(Some(Stat::default()))),
    );
    assert_eq!(m.poll_output(), Some(Ok(())));
}

/// `ready` is created after our listing was made but heard before its reply is handed over
/// (the driver gives watch events first): the entrant looks at `ready` again instead of
/// waiting for a watch that already fired (found by the `double-barrier` scenario: every
/// client reconnecting at once after an outage, each entrant waited for ever).
#[test]
fn ready_heard_before_the_listing_is_looked_at_again() {
    let mut m = EnterMachine::new("/b", 3, 1);
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    m.handle_reply(Millis(1), sent[0].0, Ok(Reply::Exists(None)));
    let event = WatchedEvent {
        kind: EventKind::NodeCreated,
        ..deleted()
    };
    m.handle_watch(Millis(2), sent[0].0, event);
    m.handle_reply(Millis(2), sent[1].0, created(m.node()));
    let ours = path::name(m.node()).to_owned();
    m.handle_reply(Millis(2), sent[2].0, children(&["p-0a", &ours]));
    let again = drain(&mut m);
    assert!(
        matches!(&again[..], [(_, Request::Exists { path, watch: true })] if path == "/b/ready"),
        "{again:?}"
    );
    m.handle_reply(
        Millis(3),
        again[0].0,
        Ok(Reply::Exists(Some(Stat::default()))),
    );
    assert_eq!(m.poll_output(), Some(Ok(())));
}

#[cfg(feature = "planted-bugs")]
mod planted {
    use super::*;
    use crate::planted::{Bug, Bugs};

    /// Curator GH-1290: the reconnection lets the waiter in with one participant missing
    /// (compare `a_reconnection_does_not_let_a_waiter_in`).
    #[test]
    fn curator_gh_1290_a_reconnection_lets_a_waiter_in() {
        let (mut m, _) = waiting(Bugs::plant([Bug::CuratorGh1290]).unwrap());
        m.handle_session(Millis(5), SessionState::Disconnected);
        assert_eq!(m.poll_output(), None);
        m.handle_session(Millis(6), SessionState::Connected);
        assert_eq!(m.poll_output(), Some(Ok(())));
    }

    /// ZOOKEEPER-1011: woken when the third participant came and went, the tutorial's enter
    /// counts two and waits again, for ever (compare
    /// `ready_lets_a_waiter_in_after_a_participant_left`).
    #[test]
    fn zookeeper_1011_a_waiter_counts_again_and_misses_the_round() {
        let (mut m, watch) = waiting(Bugs::plant([Bug::Zookeeper1011]).unwrap());
        let event = WatchedEvent {
            kind: EventKind::NodeChildrenChanged,
            ..deleted()
        };
        m.handle_watch(Millis(7), watch, event);
        let sent = drain(&mut m);
        assert_eq!(sent.len(), 3, "enters again: {sent:?}");
        let ours = path::name(m.node()).to_owned();
        m.handle_reply(
            Millis(8),
            sent[0].0,
            Ok(Reply::Exists(Some(Stat::default()))),
        );
        m.handle_reply(
            Millis(8),
            sent[1].0,
            Err(Error::NodeExists {
                path: m.node().into(),
            }),
        );
        m.handle_reply(Millis(8), sent[2].0, children(&["p-0a", &ours, READY]));
        assert_eq!(m.poll_output(), None, "two of three: waits again");
        assert!(drain(&mut m).is_empty());
    }
}
