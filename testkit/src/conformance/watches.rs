//! Cases: one-shot data, exists and child watches, and their order against replies.

use std::time::Duration;

use avout::path;
use avout::{Coordination, CreateMode, EventKind};

use super::check;
use super::check::{
    assert_fired_now, assert_not_fired, expect_event, ok, opts, persistent, read_until,
    synced_exists, within,
};
use crate::backend::Backend;

/// A data watch fires NodeDataChanged once, on the next change only; two watches armed on one
/// node both fire; a data watch ignores child changes; deletion fires NodeDeleted.
pub(super) async fn data_watch<B: Backend + ?Sized>(backend: &B, root: &str) {
    let a = check::session(backend).await;
    let b = check::session(backend).await;
    let n = path::join(root, "n");
    ok("create n", a.create(&n, b"0", &persistent()).await);

    let (data, _, mut w) = ok("a watches n", a.get_and_watch_data(&n).await);
    assert_eq!(data, b"0", "get_and_watch_data: data");
    assert_not_fired("a data watch before any change", &mut w);
    ok("b sets n", b.set_data(&n, b"1", None).await);
    expect_event("data watch on a set", w, EventKind::NodeDataChanged, &n).await;

    // One-shot: the next change reaches only a watch armed after the first fired.
    ok("b sets n again", b.set_data(&n, b"2", None).await);
    read_until("a sees the second set", &a, &n, b"2").await;
    let (_, _, mut w) = ok("a re-arms", a.get_and_watch_data(&n).await);
    read_until("a reads again", &a, &n, b"2").await;
    assert_not_fired(
        "a watch armed after the second set, before any further change (a one-shot watch \
         that fired must not fire again)",
        &mut w,
    );
    ok("b sets n a third time", b.set_data(&n, b"3", None).await);
    expect_event("the re-armed watch", w, EventKind::NodeDataChanged, &n).await;

    // Two watches from one session on one node: both fire, once.
    let (_, _, w1) = ok("a watches n (1)", a.get_and_watch_data(&n).await);
    let (_, w2) = ok("a watches n (2)", a.exists_and_watch(&n).await);
    ok("b sets n", b.set_data(&n, b"4", None).await);
    expect_event("first of two watches", w1, EventKind::NodeDataChanged, &n).await;
    expect_event("second of two watches", w2, EventKind::NodeDataChanged, &n).await;

    // A data watch does not fire on child changes.
    let (_, _, mut w) = ok("a watches n", a.get_and_watch_data(&n).await);
    let kid = path::join(&n, "kid");
    ok("b creates n/kid", b.create(&kid, b"", &persistent()).await);
    within("a sees n/kid", async {
        loop {
            ok("sync", a.sync(&n).await);
            if ok("exists n/kid", a.exists(&kid).await).is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_not_fired("a data watch after a child was created", &mut w);
    ok("b deletes n/kid", b.delete(&kid, None).await);
    assert_eq!(
        synced_exists("a sees n/kid gone", &a, &kid).await,
        None,
        "n/kid deleted"
    );
    assert_not_fired("a data watch after a child was deleted", &mut w);

    ok("b deletes n", b.delete(&n, None).await);
    expect_event("data watch on delete", w, EventKind::NodeDeleted, &n).await;
}

/// An exists watch: NodeCreated for a missing node; NodeDataChanged and NodeDeleted for a
/// present one.
pub(super) async fn exists_watch<B: Backend + ?Sized>(backend: &B, root: &str) {
    let a = check::session(backend).await;
    let b = check::session(backend).await;
    let n = path::join(root, "n");
    let (stat, mut w) = ok("a watches missing n", a.exists_and_watch(&n).await);
    assert_eq!(stat, None, "n is missing");
    assert_not_fired("an exists watch before the create", &mut w);
    ok("b creates n", b.create(&n, b"", &persistent()).await);
    expect_event(
        "exists watch on a missing node",
        w,
        EventKind::NodeCreated,
        &n,
    )
    .await;

    let (stat, w) = ok("a watches present n", a.exists_and_watch(&n).await);
    assert!(stat.is_some(), "n is present");
    ok("b sets n", b.set_data(&n, b"x", None).await);
    expect_event("exists watch on a set", w, EventKind::NodeDataChanged, &n).await;

    let (stat, w) = ok("a watches present n", a.exists_and_watch(&n).await);
    assert_eq!(stat.map(|s| s.version), Some(1), "n at version 1");
    ok("b deletes n", b.delete(&n, None).await);
    expect_event("exists watch on a delete", w, EventKind::NodeDeleted, &n).await;

    let (stat, w) = ok("a watches missing n again", a.exists_and_watch(&n).await);
    assert_eq!(stat, None, "n is missing again");
    ok(
        "b creates n as an ephemeral",
        b.create(&n, b"", &opts(CreateMode::Ephemeral)).await,
    );
    expect_event("exists watch, second create", w, EventKind::NodeCreated, &n).await;
}

/// A child watch: NodeChildrenChanged when a child is created and when one is deleted, not on
/// a child's or the node's own data change; NodeDeleted when the node goes.
pub(super) async fn child_watch<B: Backend + ?Sized>(backend: &B, root: &str) {
    let a = check::session(backend).await;
    let b = check::session(backend).await;
    let p = path::join(root, "p");
    ok("create p", a.create(&p, b"", &persistent()).await);
    let (kids, _, mut w) = ok("a watches p's children", a.get_and_watch_children(&p).await);
    assert!(kids.is_empty(), "no children yet: {kids:?}");
    assert_not_fired("a child watch before any change", &mut w);
    let kid = path::join(&p, "kid");
    ok("b creates p/kid", b.create(&kid, b"", &persistent()).await);
    expect_event(
        "child watch on a create",
        w,
        EventKind::NodeChildrenChanged,
        &p,
    )
    .await;

    let (kids, _, mut w) = ok("a re-arms", a.get_and_watch_children(&p).await);
    assert_eq!(kids, ["kid"], "p's children");
    ok("b sets p/kid", b.set_data(&kid, b"x", None).await);
    ok("b sets p", b.set_data(&p, b"x", None).await);
    read_until("a sees p's new data", &a, &p, b"x").await;
    read_until("a sees p/kid's new data", &a, &kid, b"x").await;
    assert_not_fired("a child watch after data changes only", &mut w);
    ok("b deletes p/kid", b.delete(&kid, None).await);
    expect_event(
        "child watch on a delete",
        w,
        EventKind::NodeChildrenChanged,
        &p,
    )
    .await;

    let (_, _, w) = ok("a re-arms", a.get_and_watch_children(&p).await);
    ok("b deletes p", b.delete(&p, None).await);
    expect_event(
        "child watch when the node goes",
        w,
        EventKind::NodeDeleted,
        &p,
    )
    .await;
}

/// ZooKeeper's ordering guarantee: a client sees a watch event before any reply that reflects
/// the change — for another session's writes (seen by a later read) and for its own (seen in
/// the write's own reply).
pub(super) async fn watch_before_reply<B: Backend + ?Sized>(backend: &B, root: &str) {
    let a = check::session(backend).await;
    let b = check::session(backend).await;
    let n = path::join(root, "n");
    ok("create n", a.create(&n, b"0", &persistent()).await);

    let (_, _, mut w) = ok("a watches n's data", a.get_and_watch_data(&n).await);
    ok("b sets n", b.set_data(&n, b"1", None).await);
    read_until("a reads b's write", &a, &n, b"1").await;
    assert_fired_now(
        "data watch vs a later read by the watcher",
        &mut w,
        EventKind::NodeDataChanged,
        &n,
    );

    let m = path::join(root, "m");
    let (_, mut w) = ok("a watches missing m", a.exists_and_watch(&m).await);
    ok("b creates m", b.create(&m, b"", &persistent()).await);
    within("a sees m", async {
        while synced_exists("a looks for m", &a, &m).await.is_none() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_fired_now(
        "exists watch vs a later exists by the watcher",
        &mut w,
        EventKind::NodeCreated,
        &m,
    );

    let (_, _, mut w) = ok(
        "a watches root's children",
        a.get_and_watch_children(root).await,
    );
    ok(
        "a creates a child itself",
        a.create(&path::join(root, "own"), b"", &persistent()).await,
    );
    assert_fired_now(
        "child watch vs the reply of the watcher's own create",
        &mut w,
        EventKind::NodeChildrenChanged,
        root,
    );

    let (_, _, mut w) = ok("a watches n's data", a.get_and_watch_data(&n).await);
    ok("a sets n itself", a.set_data(&n, b"2", None).await);
    assert_fired_now(
        "data watch vs the reply of the watcher's own set",
        &mut w,
        EventKind::NodeDataChanged,
        &n,
    );
}
