//! Cases: creating, reading, writing and deleting single nodes.

use avout::path;
use avout::{Coordination, CreateMode, Error};

use super::check;
use super::check::{
    Call, assert_err, create_ephemerals, creates_under, ok, opts, persistent, seq_of,
    sorted_children,
};
use crate::backend::Backend;

/// All five create modes: the path returned, the [`Stat`] returned (equal to what a read
/// returns), ephemeral owners, sequence suffixes taken from the parent's `cversion`.
pub(super) async fn create_modes<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let sid = c.session().id.0;

    let p = path::join(root, "persistent");
    let (created, stat) = ok("create persistent", c.create(&p, b"p", &persistent()).await);
    assert_eq!(created, p, "create persistent: returned path");
    assert_eq!(
        (
            stat.version,
            stat.cversion,
            stat.aversion,
            stat.num_children,
            stat.data_length
        ),
        (0, 0, 0, 0, 1),
        "create persistent: version, cversion, aversion, numChildren, dataLength of {stat:?}"
    );
    assert_eq!(stat.ephemeral_owner, 0, "create persistent: ephemeralOwner");
    assert_eq!(
        (stat.mzxid, stat.pzxid),
        (stat.czxid, stat.czxid),
        "create persistent: a new node's mzxid and pzxid are its czxid"
    );
    assert_eq!(stat.mtime, stat.ctime, "create persistent: mtime == ctime");
    let (data, read) = ok("get persistent", c.get_data(&p).await);
    assert_eq!(data, b"p", "get persistent: data");
    assert_eq!(
        read, stat,
        "get persistent: the Stat a create returns is the node's Stat"
    );

    let e = path::join(root, "ephemeral");
    let (created, stat) = ok(
        "create ephemeral",
        c.create(&e, b"", &opts(CreateMode::Ephemeral)).await,
    );
    assert_eq!(created, e, "create ephemeral: returned path");
    assert_eq!(
        stat.ephemeral_owner, sid,
        "create ephemeral: ephemeralOwner is the session id"
    );
    assert_eq!(stat.data_length, 0, "create ephemeral: dataLength");
    assert_eq!(
        ok("get ephemeral", c.get_data(&e).await).1,
        stat,
        "get ephemeral: Stat"
    );

    for (mode, prefix, owner) in [
        (CreateMode::PersistentSequential, "ps-", 0),
        (CreateMode::EphemeralSequential, "es-", sid),
    ] {
        let what = format!("create {mode:?}");
        let parent = ok(&what, c.exists(root).await).expect("the case root exists");
        let prefix = path::join(root, prefix);
        let (created, stat) = ok(&what, c.create(&prefix, b"seq", &opts(mode)).await);
        let seq = seq_of(&what, &created, &prefix);
        assert_eq!(
            seq,
            creates_under(&parent),
            "{what}: the suffix counts the parent's child creates ({parent:?})"
        );
        assert_eq!(stat.ephemeral_owner, owner, "{what}: ephemeralOwner");
        assert_eq!(stat.data_length, 3, "{what}: dataLength");
        let (data, read) = ok(&what, c.get_data(&created).await);
        assert_eq!(
            (data.as_slice(), read),
            (&b"seq"[..], stat),
            "{what}: read back"
        );
    }

    let k = path::join(root, "container");
    let (created, stat) = ok(
        "create container",
        c.create(&k, b"k", &opts(CreateMode::Container)).await,
    );
    assert_eq!(created, k, "create container: returned path");
    // ZooKeeper keeps a container marker internally but reports ephemeralOwner 0
    // (DataNode.copyStat): a container belongs to no session.
    assert_eq!(
        stat.ephemeral_owner, 0,
        "create container: ephemeralOwner is 0"
    );
    assert_eq!(
        ok("get container", c.get_data(&k).await).1,
        stat,
        "get container: Stat"
    );
    let kid = path::join(&k, "child");
    ok(
        "create a child of a container",
        c.create(&kid, b"", &persistent()).await,
    );
    let kstat = ok("exists container", c.exists(&k).await).expect("the container exists");
    assert_eq!(
        kstat.num_children, 1,
        "container: numChildren after a child is created"
    );

    let mut names = sorted_children("children of the case root", &c, root).await;
    names.retain(|n| !n.starts_with("ps-") && !n.starts_with("es-"));
    assert_eq!(
        names,
        ["container", "ephemeral", "persistent"],
        "children of the case root"
    );
    let rstat = ok("exists root", c.exists(root).await).expect("the case root exists");
    assert_eq!(
        (rstat.num_children, rstat.cversion),
        (5, 5),
        "case root after five creates: numChildren, cversion"
    );
}

/// NodeExists, NoNode for a missing parent, NoChildrenForEphemerals — each naming the
/// requested path, and each leaving the parent unchanged.
pub(super) async fn create_errors<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let p = path::join(root, "p");
    ok("create p", c.create(&p, b"1", &persistent()).await);
    let before = ok("exists root", c.exists(root).await).expect("root exists");

    for mode in [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::Container,
    ] {
        assert_err!(
            format!("create {mode:?} over an existing node"),
            c.create(&p, b"2", &opts(mode)).await,
            Error::NodeExists { path } if path == p
        );
    }
    let (data, _) = ok("get p", c.get_data(&p).await);
    assert_eq!(
        data, b"1",
        "a refused create leaves the existing node's data alone"
    );

    let orphan = path::join(root, "missing/child");
    for mode in [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
        CreateMode::Container,
    ] {
        assert_err!(
            format!("create {mode:?} under a missing parent"),
            c.create(&orphan, b"", &opts(mode)).await,
            Error::NoNode { path } if path == orphan
        );
    }

    let [e, es] = create_ephemerals(&c, root, "e").await;
    for parent in [&e, &es] {
        let child = path::join(parent, "child");
        for mode in [
            CreateMode::Persistent,
            CreateMode::Ephemeral,
            CreateMode::PersistentSequential,
        ] {
            assert_err!(
                format!("create {mode:?} under the ephemeral {parent}"),
                c.create(&child, b"", &opts(mode)).await,
                Error::NoChildrenForEphemerals { path } if path == child
            );
        }
    }
    let after = ok("exists root", c.exists(root).await).expect("root exists");
    assert_eq!(
        (after.cversion, after.num_children),
        (before.cversion + 2, before.num_children + 2),
        "refused creates change nothing: only the two ephemerals count in the root's cversion"
    );
    assert_eq!(
        ok("exists e", c.exists(&e).await).map(|s| s.num_children),
        Some(0),
        "the ephemeral has no children"
    );
}

/// get/set with versions: BadVersion leaves the node alone, `None` matches any version, the
/// returned Stat is the node's Stat.
pub(super) async fn get_set_versions<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let n = path::join(root, "n");
    let (_, created) = ok("create n", c.create(&n, b"v0", &persistent()).await);
    let (data, stat) = ok("get n", c.get_data(&n).await);
    assert_eq!(
        (data.as_slice(), stat),
        (&b"v0"[..], created),
        "get n after create"
    );

    let s1 = ok("set n at version 0", c.set_data(&n, b"v1!", Some(0)).await);
    assert_eq!(
        (s1.version, s1.data_length, s1.czxid, s1.ctime),
        (1, 3, created.czxid, created.ctime),
        "set at version 0: version, dataLength, czxid, ctime of {s1:?}"
    );
    assert!(
        s1.mzxid > created.mzxid,
        "set: mzxid grows ({s1:?} after {created:?})"
    );
    assert!(s1.mtime >= created.mtime, "set: mtime does not go back");
    assert_eq!(
        s1.pzxid, created.pzxid,
        "set: pzxid is about children, unchanged"
    );
    let (data, read) = ok("get n", c.get_data(&n).await);
    assert_eq!((data.as_slice(), read), (&b"v1!"[..], s1), "get after set");

    assert_err!(
        "set at a stale version",
        c.set_data(&n, b"stale", Some(0)).await,
        Error::BadVersion { path } if path == n
    );
    assert_err!(
        "set at a future version",
        c.set_data(&n, b"future", Some(7)).await,
        Error::BadVersion { path } if path == n
    );
    let (data, read) = ok("get n", c.get_data(&n).await);
    assert_eq!(
        (data.as_slice(), read),
        (&b"v1!"[..], s1),
        "a BadVersion set changes nothing"
    );

    let s2 = ok("set n at any version", c.set_data(&n, b"v2", None).await);
    assert_eq!(s2.version, 2, "set with None: the version still counts");
    let s3 = ok(
        "set n empty at version 2",
        c.set_data(&n, b"", Some(2)).await,
    );
    assert_eq!(
        (s3.version, s3.data_length),
        (3, 0),
        "set empty: version, dataLength"
    );
    let (data, read) = ok("get n", c.get_data(&n).await);
    assert!(data.is_empty(), "get after setting empty data: {data:?}");
    assert_eq!(read, s3, "get after setting empty data: Stat");

    let same = ok(
        "set the same bytes again",
        c.set_data(&n, b"", Some(3)).await,
    );
    assert_eq!(
        same.version, 4,
        "a set that writes identical bytes still bumps the version"
    );
}

/// delete with versions; NoNode; NotEmpty.
pub(super) async fn delete_versions<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let n = path::join(root, "n");
    ok("create n", c.create(&n, b"", &persistent()).await);
    ok("set n", c.set_data(&n, b"x", Some(0)).await);
    assert_err!(
        "delete at a stale version",
        c.delete(&n, Some(0)).await,
        Error::BadVersion { path } if path == n
    );
    assert!(
        ok("exists n", c.exists(&n).await).is_some(),
        "a BadVersion delete leaves the node"
    );
    ok("delete n at version 1", c.delete(&n, Some(1)).await);
    assert_eq!(ok("exists n", c.exists(&n).await), None, "deleted");
    assert_err!(
        "delete a deleted node",
        c.delete(&n, None).await,
        Error::NoNode { path } if path == n
    );
    assert_err!(
        "delete a deleted node at a version",
        c.delete(&n, Some(1)).await,
        Error::NoNode { path } if path == n
    );

    let m = path::join(root, "m");
    ok("create m", c.create(&m, b"", &persistent()).await);
    ok("set m", c.set_data(&m, b"1", None).await);
    ok("delete m at any version", c.delete(&m, None).await);
    assert_eq!(
        ok("exists m", c.exists(&m).await),
        None,
        "deleted with None"
    );

    let p = path::join(root, "p");
    let kid = path::join(&p, "kid");
    ok("create p", c.create(&p, b"", &persistent()).await);
    ok("create p/kid", c.create(&kid, b"", &persistent()).await);
    assert_err!(
        "delete a node with a child",
        c.delete(&p, None).await,
        Error::NotEmpty { path } if path == p
    );
    assert_err!(
        "delete a node with a child, at its version",
        c.delete(&p, Some(0)).await,
        Error::NotEmpty { path } if path == p
    );
    ok("delete p/kid", c.delete(&kid, None).await);
    ok("delete the now empty p", c.delete(&p, Some(0)).await);
    let r = ok("exists root", c.exists(root).await).expect("root exists");
    assert_eq!(
        (r.num_children, r.cversion),
        (0, 6),
        "root after 3 creates and 3 deletes: numChildren, cversion"
    );
}

/// Every read and write of a missing node fails with NoNode naming it; `exists` says `None`,
/// even when the parent is missing too.
pub(super) async fn missing_nodes<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let m = path::join(root, "missing");
    let deep = path::join(root, "missing/deeper");
    for p in [&m, &deep] {
        for call in [
            Call::GetData,
            Call::GetAndWatchData,
            Call::SetData(None),
            Call::SetData(Some(0)),
            Call::Delete(None),
            Call::GetChildren,
            Call::GetAndWatchChildren,
            Call::GetAcl,
        ] {
            assert_err!(
                format!("{call} {p}"),
                call.send(&c, p).await,
                Error::NoNode { path } if path == *p
            );
        }
        assert_eq!(ok("exists", c.exists(p).await), None, "exists {p}");
    }
    let r = ok("exists root", c.exists(root).await).expect("root exists");
    assert_eq!(
        r.num_children, 0,
        "nothing was created by the failed requests"
    );
}

/// `exists` returns the same Stat as a read, and `None` once the node is gone.
pub(super) async fn exists<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let n = path::join(root, "n");
    let (_, created) = ok("create n", c.create(&n, b"abc", &persistent()).await);
    assert_eq!(
        ok("exists n", c.exists(&n).await),
        Some(created),
        "exists after create"
    );
    let set = ok("set n", c.set_data(&n, b"abcd", None).await);
    let found = ok("exists n", c.exists(&n).await);
    assert_eq!(found, Some(set), "exists after set: the Stat set returned");
    assert_eq!(
        found,
        Some(ok("get n", c.get_data(&n).await).1),
        "exists and get_data agree"
    );
    let (found, _watch) = ok("exists_and_watch n", c.exists_and_watch(&n).await);
    assert_eq!(found, Some(set), "exists_and_watch on a present node");
    ok("delete n", c.delete(&n, None).await);
    assert_eq!(
        ok("exists n", c.exists(&n).await),
        None,
        "exists after delete"
    );
    let (found, _watch) = ok("exists_and_watch n", c.exists_and_watch(&n).await);
    assert_eq!(found, None, "exists_and_watch on a missing node");
    assert_eq!(
        ok("exists /", c.exists("/").await).map(|s| s.ephemeral_owner),
        Some(0),
        "the root node exists"
    );
}
