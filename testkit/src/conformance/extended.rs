//! Cases: the requests beyond the one-shot basics — TTL nodes, `setACL`, `getEphemerals`
//! and `getAllChildrenNumber`.

use std::time::Duration;

use avout::path;
use avout::{Acl, Coordination, CoordinationExt, CreateMode, CreateOptions, Error, MAX_TTL, Perms};

use super::check;
use super::check::{assert_err, assert_not_fired, ok, opts, persistent, synced_exists, within};
use crate::backend::Backend;

fn ttl(mode: CreateMode, ttl: Duration) -> CreateOptions {
    CreateOptions::new(mode).with_ttl(ttl)
}

/// TTL nodes: a TTL must come with a TTL mode and lie in 1 ms ..= [`MAX_TTL`] (refused
/// before sending, nothing created); a TTL node reports no ephemeral owner, takes a sequence
/// suffix in its sequential mode, outlives its TTL while it has a child, and is deleted by
/// the service once childless and older than its TTL.
pub(super) async fn ttl_nodes<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let bad = path::join(root, "bad");
    for (what, options) in [
        (
            "a TTL mode without a TTL",
            opts(CreateMode::PersistentWithTtl),
        ),
        (
            "a TTL on a persistent node",
            ttl(CreateMode::Persistent, Duration::from_secs(1)),
        ),
        (
            "a TTL on an ephemeral node",
            ttl(CreateMode::Ephemeral, Duration::from_secs(1)),
        ),
        (
            "a zero TTL",
            ttl(CreateMode::PersistentWithTtl, Duration::ZERO),
        ),
        (
            "a TTL over the limit",
            ttl(
                CreateMode::PersistentWithTtl,
                MAX_TTL + Duration::from_millis(1),
            ),
        ),
    ] {
        assert_err!(
            what,
            c.create(&bad, b"", &options).await,
            Error::BadArguments(_)
        );
    }
    assert!(
        synced_exists("nothing was created", &c, &bad)
            .await
            .is_none()
    );

    let hour = Duration::from_secs(3600);
    let long = path::join(root, "long");
    let (_, stat) = ok(
        "create a TTL node",
        c.create(&long, b"l", &ttl(CreateMode::PersistentWithTtl, hour))
            .await,
    );
    assert_eq!(
        (stat.ephemeral_owner, stat.is_ephemeral()),
        (0, false),
        "a TTL node belongs to no session"
    );
    let prefix = path::join(root, "s-");
    let (seq, _) = ok(
        "create a sequential TTL node",
        c.create(
            &prefix,
            b"",
            &ttl(CreateMode::PersistentSequentialWithTtl, hour),
        )
        .await,
    );
    assert_eq!(seq, format!("{prefix}0000000001"), "sequence suffix");

    // A parent outlives its TTL while it has a child, and goes once the child does. The TTL
    // leaves room to make the child first: 300 ms was outrun under valgrind, the parent reaped
    // before its child's create arrived.
    let short = Duration::from_millis(1500);
    let p = path::join(root, "p");
    let kid = path::join(&p, "kid");
    ok(
        "create a short-lived TTL node",
        c.create(&p, b"", &ttl(CreateMode::PersistentWithTtl, short))
            .await,
    );
    ok("give it a child", c.create(&kid, b"", &persistent()).await);
    tokio::time::sleep(short * 2).await;
    assert!(
        synced_exists("the TTL node with a child", &c, &p)
            .await
            .is_some(),
        "a TTL node with a child must outlive its TTL"
    );
    ok("delete its child", c.delete(&kid, None).await);
    within("the childless TTL node is deleted", async {
        while synced_exists("the TTL node", &c, &p).await.is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        synced_exists("the long TTL node", &c, &long)
            .await
            .is_some(),
        "a node within its TTL stays"
    );
}

/// `setACL` replaces the ACL if the ACL version matches (bumping `aversion` only, firing no
/// watch), and needs `ADMIN`; errors `BadVersion`, `NoAuth`, `NoNode`, `InvalidAcl`.
pub(super) async fn set_acl<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let n = path::join(root, "n");
    let (_, created) = ok("create n", c.create(&n, b"x", &persistent()).await);
    let (_, _, mut w) = ok("watch n", c.get_and_watch_data(&n).await);

    let world = |perms| Acl {
        perms,
        scheme: "world".into(),
        id: "anyone".into(),
    };
    let mine = world(Perms::READ | Perms::WRITE | Perms::ADMIN);
    let stat = ok(
        "set the ACL at aversion 0",
        c.set_acl(&n, std::slice::from_ref(&mine), Some(0)).await,
    );
    assert_eq!(
        (stat.aversion, stat.version, stat.mzxid, stat.cversion),
        (1, 0, created.mzxid, 0),
        "setACL bumps aversion only"
    );
    let (acl, read) = ok("get the ACL", c.get_acl(&n).await);
    assert_eq!(
        (acl, read),
        (vec![mine.clone()], stat),
        "the new ACL and stat"
    );
    assert!(synced_exists("read n", &c, &n).await.is_some());
    assert_not_fired("a data watch after setACL", &mut w);

    assert_err!(
        "setACL at a stale aversion",
        c.set_acl(&n, &Acl::open_unsafe(), Some(0)).await,
        Error::BadVersion { path } if path == n
    );
    let stat = ok(
        "drop ADMIN at aversion 1",
        c.set_acl(&n, &[world(Perms::READ | Perms::WRITE)], Some(1))
            .await,
    );
    assert_eq!(stat.aversion, 2, "aversion counts ACL changes");
    // ZooKeeper checks ADMIN before the version.
    assert_err!(
        "setACL without ADMIN, at the right aversion",
        c.set_acl(&n, &Acl::open_unsafe(), Some(2)).await,
        Error::NoAuth { path } if path == n
    );
    assert_err!(
        "setACL without ADMIN",
        c.set_acl(&n, &Acl::open_unsafe(), None).await,
        Error::NoAuth { path } if path == n
    );
    let missing = path::join(root, "missing");
    assert_err!(
        "setACL on a missing node",
        c.set_acl(&missing, &Acl::open_unsafe(), None).await,
        Error::NoNode { path } if path == missing
    );
    assert_err!(
        "setACL with an empty ACL",
        c.set_acl(&n, &[], None).await,
        Error::InvalidAcl { .. }
    );
    ok("n is still writable", c.set_data(&n, b"y", None).await);
}

/// `getEphemerals` lists the session's own ephemerals under a plain string prefix;
/// `getAllChildrenNumber` counts every descendant.
pub(super) async fn ephemerals_and_counts<B: Backend + ?Sized>(backend: &B, root: &str) {
    let a = check::session(backend).await;
    let b = check::session(backend).await;
    let x = path::join(root, "x");
    ok("create x", a.create(&x, b"", &persistent()).await);
    let mine = [
        path::join(root, "e1"),
        path::join(root, "e2"),
        path::join(&x, "e3"),
    ];
    for e in &mine {
        ok("a creates an ephemeral", a.create_ephemeral(e, b"").await);
    }
    let theirs = path::join(root, "eb");
    ok(
        "b creates an ephemeral",
        b.create_ephemeral(&theirs, b"").await,
    );

    let mut listed = ok("a lists its ephemerals", a.get_ephemerals(root).await);
    listed.sort();
    assert_eq!(listed, mine, "a's ephemerals under the root");
    let mut by_prefix = ok(
        "a lists by a string prefix",
        a.get_ephemerals(&path::join(root, "e")).await,
    );
    by_prefix.sort();
    assert_eq!(by_prefix, mine[..2], "a string prefix, not a path");
    let mut all = ok("a lists everything", a.get_ephemerals("/").await);
    all.sort();
    assert_eq!(all, mine, "`/` lists all of the session's ephemerals");
    assert_eq!(
        ok("b lists its ephemerals", b.get_ephemerals(root).await),
        vec![theirs],
        "b's own only"
    );

    assert_eq!(
        ok(
            "count under the root",
            a.get_all_children_number(root).await
        ),
        5,
        "x, x/e3, e1, e2 and eb"
    );
    assert_eq!(ok("count under x", a.get_all_children_number(&x).await), 1);
    assert_eq!(
        ok(
            "count under a leaf",
            a.get_all_children_number(&mine[0]).await
        ),
        0
    );
    let missing = path::join(root, "missing");
    assert_err!(
        "count under a missing node",
        a.get_all_children_number(&missing).await,
        Error::NoNode { path } if path == missing
    );
    ok("a deletes x/e3", a.delete(&mine[2], None).await);
    ok("b syncs", b.sync(root).await);
    assert_eq!(
        ok(
            "count after a delete",
            b.get_all_children_number(root).await
        ),
        4
    );
    let remaining = ok("a lists again", a.get_ephemerals(&x).await);
    assert!(remaining.is_empty(), "a deleted ephemeral is not listed");
}
