//! Cases: digest ACLs and `creator_all`.

use avout::path;
use avout::{Acl, Coordination, CreateMode, Error, Perms};

use super::check;
use super::check::{Call, assert_err, ok, persistent};
use crate::backend::Backend;

/// Digest ACLs: a node readable and writable only by `alice:secret` refuses an
/// unauthenticated session, another user and a wrong password with NoAuth, and accepts alice.
pub(super) async fn acl_digest<B: Backend + ?Sized>(backend: &B, root: &str) {
    let alice = check::digest_session(backend, "alice", "secret").await;
    let anon = check::session(backend).await;
    let bob = check::digest_session(backend, "bob", "secret").await;
    let wrong = check::digest_session(backend, "alice", "wrong").await;
    let acl = vec![Acl::digest("alice", "secret", Perms::ALL)];
    let s = path::join(root, "secret");
    ok(
        "alice creates a node only she may use",
        alice
            .create(&s, b"s", &persistent().with_acl(acl.clone()))
            .await,
    );
    let (got, stat) = ok("alice reads the ACL", alice.get_acl(&s).await);
    assert_eq!(got, acl, "get_acl returns the ACL that was set");
    assert_eq!(stat.aversion, 0, "a new node's aversion");

    for (who, c) in [
        ("an unauthenticated session", &anon),
        ("bob", &bob),
        ("alice with a wrong password", &wrong),
    ] {
        // On an ensemble another session may sit on a server that has not applied the create.
        ok(&format!("sync by {who}"), c.sync(&s).await);
        let kid = path::join(&s, "kid");
        for (call, p) in [
            (Call::GetData, &s),
            (Call::SetData(None), &s),
            (Call::GetChildren, &s),
            (Call::Create(CreateMode::Persistent), &kid),
        ] {
            assert_err!(
                format!("{call} {p} by {who}"),
                call.send(c, p).await,
                Error::NoAuth { path } if path == *p
            );
        }
        // ZooKeeper checks no permission for exists.
        assert_eq!(
            ok(&format!("exists by {who}"), c.exists(&s).await).map(|s| s.data_length),
            Some(1),
            "exists by {who} ignores the ACL"
        );
    }
    let (data, _) = ok("alice reads", alice.get_data(&s).await);
    assert_eq!(data, b"s", "alice reads her node");
    ok("alice writes", alice.set_data(&s, b"t", Some(0)).await);
    let kid = path::join(&s, "kid");
    ok(
        "alice creates a child",
        alice.create(&kid, b"", &persistent()).await,
    );
    let (data, _) = ok("alice reads", alice.get_data(&s).await);
    assert_eq!(
        data, b"t",
        "alice's write landed; the refused writes did not"
    );

    let ro = path::join(root, "ro");
    ok(
        "alice creates a world-readable node",
        alice
            .create(&ro, b"r", &persistent().with_acl(Acl::read_unsafe()))
            .await,
    );
    assert_eq!(
        ok("alice reads ro's ACL", alice.get_acl(&ro).await).0,
        Acl::read_unsafe(),
        "get_acl of a read-only node"
    );
    ok("anon syncs", anon.sync(&ro).await);
    let (data, _) = ok("anon reads ro", anon.get_data(&ro).await);
    assert_eq!(data, b"r", "anyone reads a read_unsafe node");
    for (who, c) in [("anon", &anon), ("alice", &alice)] {
        assert_err!(
            format!("{who} writes ro"),
            c.set_data(&ro, b"x", None).await,
            Error::NoAuth { path } if path == ro
        );
    }
    // Deleting a node needs DELETE on its parent, not on the node: the case root is open.
    ok("alice deletes her kid", alice.delete(&kid, None).await);
    ok(
        "an unauthenticated session deletes alice's node through its open parent",
        anon.delete(&s, None).await,
    );
}

/// `creator_all` from an authenticated session becomes a digest entry for that identity; from
/// an unauthenticated session it is InvalidAcl, as is an empty ACL.
pub(super) async fn acl_creator_all<B: Backend + ?Sized>(backend: &B, root: &str) {
    let alice = check::digest_session(backend, "alice", "secret").await;
    let anon = check::session(backend).await;
    let n = path::join(root, "n");
    ok(
        "alice creates with creator_all",
        alice
            .create(&n, b"n", &persistent().with_acl(Acl::creator_all()))
            .await,
    );
    assert_eq!(
        ok("alice reads the ACL", alice.get_acl(&n).await).0,
        vec![Acl::digest("alice", "secret", Perms::ALL)],
        "creator_all is stored as the creator's digest identity"
    );
    ok("anon syncs", anon.sync(&n).await);
    assert_err!(
        "anon reads alice's node",
        anon.get_data(&n).await,
        Error::NoAuth { path } if path == n
    );
    assert_err!(
        "anon writes alice's node",
        anon.set_data(&n, b"x", None).await,
        Error::NoAuth { path } if path == n
    );
    ok("alice writes", alice.set_data(&n, b"m", None).await);
    assert_eq!(
        ok("alice reads", alice.get_data(&n).await).0,
        b"m",
        "alice's own write"
    );

    let m = path::join(root, "m");
    assert_err!(
        "creator_all from an unauthenticated session",
        anon.create(&m, b"", &persistent().with_acl(Acl::creator_all()))
            .await,
        Error::InvalidAcl { .. }
    );
    assert_err!(
        "an empty ACL",
        alice.create(&m, b"", &persistent().with_acl(vec![])).await,
        Error::InvalidAcl { .. }
    );
    assert_eq!(
        ok("exists m", anon.exists(&m).await),
        None,
        "refused creates create nothing"
    );
}
