//! Hand-stepped tests of the election machines.

use crate::lock::{AcquireMachine, LockKind, Patience};
use crate::machine::testing::{children, drain};
use crate::machine::{Machine, Millis, Reply, Request};
use crate::{CreateMode, EventKind, SessionState, Stat, WatchedEvent};

const SESSION: i64 = 0xe1;

/// A candidate's life: its node carries its id, it watches only the next-lower candidate,
/// and it leads, with its node's czxid as the term, once every lower one is gone.
#[test]
fn a_candidate_watches_the_next_lower_one_and_leads_when_it_goes() {
    let mut m = AcquireMachine::new("/e", LockKind::Latch, 3, SESSION, Patience::Forever, vec![])
        .with_data(b"node-b".to_vec());
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    assert!(matches!(&sent[0].1, Request::Create { path, data, options }
        if path.starts_with("/e/_c_") && path.ends_with("-latch-") && data == b"node-b"
            && options.mode == CreateMode::EphemeralSequential));
    let ours = format!("{}0000000004", m.prefix());
    m.handle_reply(
        Millis(1),
        sent[0].0,
        Ok(Reply::Created {
            path: format!("/e/{ours}"),
            stat: Stat {
                czxid: 0x1_0000_0040,
                ephemeral_owner: SESSION,
                ..Stat::default()
            },
        }),
    );
    m.handle_reply(
        Millis(1),
        sent[1].0,
        children(&[
            "_c_x-latch-0000000001",
            "_c_y-latch-0000000003",
            &ours,
            "_c_z-latch-0000000009",
        ]),
    );
    let sent = drain(&mut m);
    assert_eq!(sent.len(), 1, "one watch, no herd");
    assert!(
        matches!(&sent[0].1, Request::Exists { path, watch: true } if path == "/e/_c_y-latch-0000000003")
    );
    m.handle_reply(
        Millis(2),
        sent[0].0,
        Ok(Reply::Exists(Some(Stat::default()))),
    );
    // The leader (1) resigning does not concern us; our predecessor (3) going does.
    m.handle_watch(
        Millis(5),
        sent[0].0,
        WatchedEvent {
            kind: EventKind::NodeDeleted,
            state: SessionState::Connected,
            path: "/e/_c_y-latch-0000000003".into(),
        },
    );
    let sent = drain(&mut m);
    m.handle_reply(
        Millis(6),
        sent[0].0,
        children(&["_c_x-latch-0000000001", &ours, "_c_z-latch-0000000009"]),
    );
    let sent = drain(&mut m);
    assert!(
        matches!(&sent[0].1, Request::Exists { path, watch: true } if path == "/e/_c_x-latch-0000000001")
    );
    // The leader was the last candidate below us: its absence makes us lead, no re-read.
    m.handle_reply(Millis(7), sent[0].0, Ok(Reply::Exists(None)));
    assert!(drain(&mut m).is_empty());
    let leading = m.poll_output().expect("done").expect("elected");
    assert_eq!(leading.node, format!("/e/{ours}"));
    assert_eq!(
        leading.fencing_token, 0x1_0000_0040,
        "the term is the czxid"
    );
}
