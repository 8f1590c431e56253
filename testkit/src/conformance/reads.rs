//! Cases: `multiRead` (several reads from one state, each failing on its own) and `whoAmI`.

use avout::path;
use avout::{Acl, Coordination, Identity, Perms, ReadOp, ReadResult};

use super::Backend;
use super::check::{ok, persistent};

/// A `multiRead` answers every read in order: data with the node's `Stat`, children, and a
/// missing or forbidden node as that read's own result, leaving the others alone.
pub(super) async fn multi_read<B: Backend>(backend: &B, root: &str) {
    let alice = backend.connect_with_digest("alice", "secret").await;
    let anon = backend.connect().await;
    let (a, b, secret, gone) = (
        path::join(root, "a"),
        path::join(root, "b"),
        path::join(root, "secret"),
        path::join(root, "gone"),
    );
    ok("create a", alice.create(&a, b"x", &persistent()).await);
    ok("create b", alice.create(&b, b"", &persistent()).await);
    let only_alice = persistent().with_acl(vec![Acl::digest("alice", "secret", Perms::ALL)]);
    ok(
        "create a node only alice may read",
        alice.create(&secret, b"s", &only_alice).await,
    );
    // On an ensemble the reader may sit on a server that has not applied the creates.
    ok("sync", anon.sync(root).await);
    let (_, a_stat) = ok("get a", anon.get_data(&a).await);
    let reads = [
        ReadOp::GetData { path: a.clone() },
        ReadOp::GetChildren {
            path: root.to_owned(),
        },
        ReadOp::GetData { path: gone.clone() },
        ReadOp::GetChildren { path: gone.clone() },
        ReadOp::GetData {
            path: secret.clone(),
        },
        ReadOp::GetChildren { path: b.clone() },
    ];
    let mut results = ok("multiRead", anon.multi_read(&reads).await);
    if let ReadResult::Children { children } = &mut results[1] {
        children.sort();
    }
    assert_eq!(
        results,
        [
            ReadResult::Data {
                data: b"x".to_vec(),
                stat: a_stat
            },
            ReadResult::Children {
                children: vec!["a".into(), "b".into(), "secret".into()]
            },
            ReadResult::NoNode { path: gone.clone() },
            ReadResult::NoNode { path: gone },
            ReadResult::NoAuth { path: secret },
            ReadResult::Children { children: vec![] },
        ],
        "each read's own result, in order"
    );
}

/// `whoAmI` shows the session's address, and the user of each digest identity it added.
pub(super) async fn who_am_i<B: Backend>(backend: &B, _root: &str) {
    let anon = backend.connect().await;
    let alice = backend.connect_with_digest("alice", "secret").await;
    let anon_ids = ok(
        "whoAmI of an unauthenticated session",
        anon.who_am_i().await,
    );
    assert!(
        anon_ids.iter().all(|id| id.scheme == "ip"),
        "an unauthenticated session has only its address: {anon_ids:?}"
    );
    assert!(!anon_ids.is_empty(), "a session always has its address");
    let alice_ids = ok("whoAmI of alice", alice.who_am_i().await);
    let digest = Identity {
        scheme: "digest".into(),
        user: "alice".into(),
    };
    assert!(
        alice_ids.contains(&digest),
        "alice's digest identity shows her user name: {alice_ids:?}"
    );
}
