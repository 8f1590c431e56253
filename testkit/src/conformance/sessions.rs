//! Cases: what ends with a session (closed or expired), and `sync` across sessions.

use avout::path;
use avout::{Coordination, CreateMode, Error, EventKind, SessionState, Watch};

use super::check;
use super::check::{
    Call, assert_err, assert_not_fired, create_ephemerals, expect_event, ok, persistent,
    synced_exists, within,
};
use crate::backend::Backend;

/// Closing a session deletes its ephemerals (seen from another session, whose child watch
/// fires), fires its own watches with a Closed session event, publishes Closed, and makes
/// every later call fail with `Closed`.
pub(super) async fn ephemerals_on_close<B: Backend + ?Sized>(backend: &B, root: &str) {
    let a = check::session(backend).await;
    let b = check::session(backend).await;
    let sid = a.session().id.0;
    let dir = path::join(root, "dir");
    let keep = path::join(root, "keep");
    ok("create dir", a.create(&dir, b"", &persistent()).await);
    ok("create keep", a.create(&keep, b"", &persistent()).await);
    let [eph, es] = create_ephemerals(&a, &dir, "eph").await;
    for p in [&eph, &es] {
        let seen = synced_exists("another session sees the ephemeral", &b, p).await;
        assert_eq!(
            seen.map(|s| s.ephemeral_owner),
            Some(sid),
            "another session sees {p}, owned by the creator's session"
        );
    }

    let (_, _, mut b_watch) = ok("b watches dir", b.get_and_watch_children(&dir).await);
    let (_, _, a_watch) = ok("a watches keep", a.get_and_watch_data(&keep).await);
    let mut a_states = a.session_states();
    assert_eq!(
        a_states.current(),
        SessionState::Connected,
        "a is connected"
    );
    assert_not_fired("b's child watch before the close", &mut b_watch);

    ok("close a", a.close().await);
    let ended = within("a's session states after close", a_states.terminated()).await;
    assert_eq!(ended, SessionState::Closed, "a's session ends Closed");
    let ephemerals = [eph.as_str(), es.as_str()];
    check_session_end(
        SessionState::Closed,
        &a,
        vec![("watch", a_watch)],
        &keep,
        &b,
        b_watch,
        &dir,
        ephemerals,
    )
    .await;
}

/// A session the service expires: the client sees `Expired` on its state stream, its watches
/// fire with an Expired session event, every later call fails with `SessionExpired`, and its
/// ephemerals are gone for everyone else.
pub(super) async fn session_expiry<B: Backend + ?Sized>(backend: &B, root: &str) {
    let a = check::session(backend).await;
    let b = check::session(backend).await;
    let keep = path::join(root, "keep");
    ok("create keep", a.create(&keep, b"", &persistent()).await);
    let [eph, es] = create_ephemerals(&a, root, "eph").await;
    let (_, _, data_watch) = ok("a watches keep", a.get_and_watch_data(&keep).await);
    let (_, create_watch) = ok(
        "a watches a missing node",
        a.exists_and_watch(&path::join(root, "none")).await,
    );
    // Not a child watch on `root`: expiring a session deletes its ephemerals there, and on real
    // ZooKeeper that NodeChildrenChanged may reach `a` before the expiry does (`a`'s own
    // connection carries the CloseSession, and is open while the ephemerals go).
    let (_, _, child_watch) = ok(
        "a watches keep's children",
        a.get_and_watch_children(&keep).await,
    );
    let mut states = a.session_states();
    assert!(
        synced_exists("b sees a's ephemeral", &b, &eph)
            .await
            .is_some(),
        "b sees a's ephemeral before the expiry"
    );
    let (_, _, b_watch) = ok("b watches root", b.get_and_watch_children(root).await);

    check::expire(backend, &a).await;

    let ended = within("a's session states after expiry", async {
        while let Some(state) = states.next().await {
            assert!(
                matches!(
                    state,
                    SessionState::Connected | SessionState::Disconnected | SessionState::Expired
                ),
                "unexpected session state {state:?} on the way to Expired"
            );
        }
        states.current()
    })
    .await;
    assert_eq!(ended, SessionState::Expired, "a's session ends Expired");
    let watches = vec![
        ("data watch", data_watch),
        ("exists watch", create_watch),
        ("child watch", child_watch),
    ];
    let ephemerals = [eph.as_str(), es.as_str()];
    check_session_end(
        SessionState::Expired,
        &a,
        watches,
        &keep,
        &b,
        b_watch,
        root,
        ephemerals,
    )
    .await;
    assert_err!(
        "exists after expiry, again",
        a.exists(&keep).await,
        Error::SessionExpired
    );
    let fresh = check::session(backend).await;
    assert_eq!(
        synced_exists("a new session after expiry", &fresh, &eph).await,
        None,
        "a new session does not see the expired session's ephemeral"
    );
}

/// `sync` succeeds and makes another session's committed write visible.
pub(super) async fn sync<B: Backend + ?Sized>(backend: &B, root: &str) {
    let a = check::session(backend).await;
    let b = check::session(backend).await;
    ok("sync the root", a.sync(root).await);
    ok("sync /", a.sync("/").await);
    for i in 0..5 {
        let n = path::join(root, &format!("n{i}"));
        ok("b creates", b.create(&n, b"v", &persistent()).await);
        ok("a syncs", a.sync(&n).await);
        let (data, _) = ok("a reads what b wrote, after sync", a.get_data(&n).await);
        assert_eq!(data, b"v", "after sync, a sees b's write");
    }
    assert_err!(
        "sync an invalid path",
        a.sync("no-slash").await,
        Error::InvalidPath { .. }
    );
}

/// What the end of `a`'s session (`end`: Closed or Expired) must leave, checked in this order:
/// each of `a`'s pending `watches` fired with a session event in state `end`; `a`'s later calls
/// (a read of `keep`, a create beside it) fail with the error of that end; `b`'s child watch on `parent`, where `a`'s `ephemerals`
/// were, fired; `b` no longer sees the ephemerals; and the persistent `keep` outlived `a`.
#[expect(
    clippy::too_many_arguments,
    reason = "each is one thing the end is checked against"
)]
async fn check_session_end<C: Coordination>(
    end: SessionState,
    a: &C,
    watches: Vec<(&str, Watch)>,
    keep: &str,
    b: &C,
    b_watch: Watch,
    parent: &str,
    ephemerals: [&str; 2],
) {
    let after = match end {
        SessionState::Closed => "close",
        _ => "expiry",
    };
    for (what, watch) in watches {
        let event = within(&format!("a's {what} after {after}"), watch).await;
        assert_eq!(
            (event.kind, event.state),
            (EventKind::Session, end),
            "a's {what} fires with a {end:?} session event: {event:?}"
        );
    }
    let late = path::join(path::parent(keep).expect("keep has a parent"), "late");
    for (call, p) in [
        (Call::GetData, keep),
        (Call::Create(CreateMode::Persistent), &late),
    ] {
        match (end, call.send(a, p).await) {
            (SessionState::Closed, Err(Error::Closed))
            | (SessionState::Expired, Err(Error::SessionExpired)) => {}
            (_, other) => {
                panic!("{call} {p} after {after}: expected the {end:?} error, got {other:?}")
            }
        }
    }
    expect_event(
        "b's child watch when a's ephemerals go",
        b_watch,
        EventKind::NodeChildrenChanged,
        parent,
    )
    .await;
    for p in ephemerals {
        assert_eq!(
            synced_exists(&format!("another session after {after}"), b, p).await,
            None,
            "{p} is deleted when its session ends ({end:?})"
        );
    }
    assert!(
        synced_exists(&format!("keep after {after}"), b, keep)
            .await
            .is_some(),
        "persistent nodes outlive their creator's session"
    );
}
