//! Cases: persistent and persistent-recursive watches (`addWatch`), their removal, and their
//! end with the session.

use avout::path;
use avout::{AddWatchMode, Coordination, EventKind, PersistentWatch, SessionState, WatchedEvent};
use futures::{FutureExt, StreamExt};

use super::check;
use super::check::{ok, persistent, synced_exists, within};
use crate::backend::Backend;

/// The next event of a persistent watch, bounded by the suite's timeout.
async fn next_event(what: &str, watch: &mut PersistentWatch) -> WatchedEvent {
    match within(what, watch.next()).await {
        Some(event) => event,
        None => panic!("{what}: the persistent watch ended"),
    }
}

/// Expects the next event to be `kind` on `path`, in a connected session.
async fn expect(what: &str, watch: &mut PersistentWatch, kind: EventKind, path: &str) {
    let event = next_event(what, watch).await;
    assert_eq!(
        (event.kind, event.path.as_str(), event.state),
        (kind, path, SessionState::Connected),
        "{what}: wrong event {event:?}"
    );
}

/// Asserts nothing more was delivered. Call it after the watching session has read a state
/// reflecting every change made so far: events come before replies that reflect them.
#[track_caller]
fn assert_quiet(what: &str, watch: &mut PersistentWatch) {
    if let Some(event) = watch.next().now_or_never() {
        panic!("{what}: the persistent watch reported {event:?}, but no change it covers was made");
    }
}

/// A persistent watch on a missing node reports its creation, every data change, child
/// changes (not grandchildren), its deletion, and its re-creation: it stays armed. Removed,
/// it ends without an event of its own.
pub(super) async fn persistent_watch<B: Backend + ?Sized>(backend: &B, root: &str) {
    let a = check::session(backend).await;
    let b = check::session(backend).await;
    let n = path::join(root, "n");
    let kid = path::join(&n, "kid");
    let grand = path::join(&kid, "grand");
    let mut w = ok(
        "a watches the missing n",
        a.add_watch(&n, AddWatchMode::Persistent).await,
    );
    assert_eq!((w.path(), w.mode()), (n.as_str(), AddWatchMode::Persistent));

    ok("b creates n", b.create(&n, b"0", &persistent()).await);
    expect("creation", &mut w, EventKind::NodeCreated, &n).await;
    ok("b sets n", b.set_data(&n, b"1", None).await);
    expect("first set", &mut w, EventKind::NodeDataChanged, &n).await;
    ok("b sets n again", b.set_data(&n, b"2", None).await);
    expect("second set", &mut w, EventKind::NodeDataChanged, &n).await;
    ok("b creates n/kid", b.create(&kid, b"", &persistent()).await);
    expect("child created", &mut w, EventKind::NodeChildrenChanged, &n).await;
    ok("b sets n/kid", b.set_data(&kid, b"k", None).await);
    ok(
        "b creates n/kid/grand",
        b.create(&grand, b"", &persistent()).await,
    );
    ok("b deletes n/kid/grand", b.delete(&grand, None).await);
    assert!(
        synced_exists("a reads n/kid/grand", &a, &grand)
            .await
            .is_none()
    );
    assert_quiet(
        "a watch on n after changes to n/kid's data and children",
        &mut w,
    );
    ok("b deletes n/kid", b.delete(&kid, None).await);
    expect("child deleted", &mut w, EventKind::NodeChildrenChanged, &n).await;
    ok("b deletes n", b.delete(&n, None).await);
    expect("deletion", &mut w, EventKind::NodeDeleted, &n).await;
    ok("b re-creates n", b.create(&n, b"", &persistent()).await);
    expect("re-creation", &mut w, EventKind::NodeCreated, &n).await;

    ok("a removes the watch", w.remove().await);
    ok(
        "b sets n after the removal",
        b.set_data(&n, b"3", None).await,
    );
    assert!(synced_exists("a reads n", &a, &n).await.is_some());
    assert_eq!(
        w.next().now_or_never(),
        Some(None),
        "a removed watch ends, with no event for its removal nor for later changes"
    );
}

/// A recursive watch reports creations, data changes and deletions of its node and every
/// descendant, each with the changed node's path, and never a child change; it ignores
/// siblings whose names merely start with its node's.
pub(super) async fn recursive_watch<B: Backend + ?Sized>(backend: &B, root: &str) {
    let a = check::session(backend).await;
    let b = check::session(backend).await;
    let t = path::join(root, "t");
    let x = path::join(&t, "x");
    let y = path::join(&x, "y");
    let sibling = path::join(root, "t2");
    let mut w = ok(
        "a watches t recursively",
        a.add_watch(&t, AddWatchMode::PersistentRecursive).await,
    );

    ok("b creates t", b.create(&t, b"", &persistent()).await);
    expect("t created", &mut w, EventKind::NodeCreated, &t).await;
    ok("b creates t/x", b.create(&x, b"", &persistent()).await);
    expect("t/x created", &mut w, EventKind::NodeCreated, &x).await;
    ok("b sets t/x", b.set_data(&x, b"1", None).await);
    expect("t/x set", &mut w, EventKind::NodeDataChanged, &x).await;
    ok("b creates t/x/y", b.create(&y, b"", &persistent()).await);
    expect("t/x/y created", &mut w, EventKind::NodeCreated, &y).await;
    ok("b deletes t/x/y", b.delete(&y, None).await);
    expect("t/x/y deleted", &mut w, EventKind::NodeDeleted, &y).await;
    ok("b creates t2", b.create(&sibling, b"", &persistent()).await);
    ok("b sets t2", b.set_data(&sibling, b"s", None).await);
    ok("b sets t", b.set_data(&t, b"t", None).await);
    expect("t set (t2 ignored)", &mut w, EventKind::NodeDataChanged, &t).await;
    ok("b deletes t/x", b.delete(&x, None).await);
    expect("t/x deleted", &mut w, EventKind::NodeDeleted, &x).await;
    assert!(synced_exists("a reads t/x", &a, &x).await.is_none());
    assert_quiet("a recursive watch after the last change", &mut w);
    ok("a removes the watch", w.remove().await);
}

/// A persistent watch ends with its session: closed, or expired by the service, it reports
/// the terminal state (after any connection changes) and then nothing.
pub(super) async fn persistent_watch_end<B: Backend + ?Sized>(backend: &B, root: &str) {
    let n = path::join(root, "n");
    for expire in [false, true] {
        let a = check::session(backend).await;
        let mut w = ok(
            "a watches n",
            a.add_watch(&n, AddWatchMode::PersistentRecursive).await,
        );
        let want = if expire {
            check::expire(backend, &a).await;
            SessionState::Expired
        } else {
            ok("a closes its session", a.close().await);
            SessionState::Closed
        };
        let what = format!("a watch of a session ending {want:?}");
        let last = loop {
            let event = next_event(&what, &mut w).await;
            assert_eq!(event.kind, EventKind::Session, "{what}: {event:?}");
            if event.state.is_terminal() {
                break event;
            }
        };
        assert_eq!(last.state, want, "{what}: the terminal event");
        assert_eq!(
            within(&what, w.next()).await,
            None,
            "{what}: the stream ends"
        );
    }
}
