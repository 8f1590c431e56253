//! Cases: a node's children, the zxids in its Stat, and sequential numbering.

use avout::path::{self, sequence};
use avout::{Coordination, CreateMode, Error};

use super::check;
use super::check::{assert_err, creates_under, ok, opts, persistent, sorted_children};
use crate::backend::Backend;

/// Children (compared sorted: order is unspecified) and the parent's Stat.
pub(super) async fn children<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let p = path::join(root, "p");
    ok("create p", c.create(&p, b"data", &persistent()).await);
    let (kids, stat) = ok("get_children of a leaf", c.get_children(&p).await);
    assert!(kids.is_empty(), "a new node has no children: {kids:?}");
    assert_eq!(
        (stat.num_children, stat.cversion),
        (0, 0),
        "a new node's numChildren, cversion"
    );

    for (name, mode) in [
        ("b", CreateMode::Persistent),
        ("a", CreateMode::Ephemeral),
        ("c", CreateMode::Container),
    ] {
        ok(
            "create a child",
            c.create(&path::join(&p, name), b"", &opts(mode)).await,
        );
    }
    let seq = ok(
        "create a sequential child",
        c.create(
            &path::join(&p, "s-"),
            b"",
            &opts(CreateMode::PersistentSequential),
        )
        .await,
    )
    .0;
    let (mut kids, stat) = ok("get_children p", c.get_children(&p).await);
    kids.sort();
    assert_eq!(
        kids,
        ["a", "b", "c", path::name(&seq)],
        "children are names, not paths"
    );
    assert_eq!(
        (
            stat.num_children,
            stat.cversion,
            stat.version,
            stat.data_length
        ),
        (4, 4, 0, 4),
        "get_children Stat: numChildren, cversion, and the data untouched"
    );
    assert_eq!(
        stat.mzxid, stat.czxid,
        "child creates do not touch the parent's mzxid"
    );
    assert_eq!(
        Some(stat),
        ok("exists p", c.exists(&p).await),
        "get_children returns the parent's Stat"
    );
    let (mut watched, wstat, _watch) = ok(
        "get_and_watch_children p",
        c.get_and_watch_children(&p).await,
    );
    watched.sort();
    assert_eq!(
        (watched, wstat),
        (kids, stat),
        "get_and_watch_children agrees"
    );

    ok("delete p/b", c.delete(&path::join(&p, "b"), None).await);
    let (kids, stat) = ok("get_children p", c.get_children(&p).await);
    let mut kids = kids;
    kids.sort();
    assert_eq!(
        kids,
        ["a", "c", path::name(&seq)],
        "children after a delete"
    );
    assert_eq!(
        (stat.num_children, stat.cversion),
        (3, 5),
        "a delete counts in cversion"
    );
}

/// czxid / mzxid / pzxid ordering, and pzxid moving exactly on child create and delete.
pub(super) async fn stat_zxids<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let a = path::join(root, "a");
    let b = path::join(root, "b");
    let (_, sa) = ok("create a", c.create(&a, b"", &persistent()).await);
    let (_, sb) = ok("create b", c.create(&b, b"", &persistent()).await);
    assert!(
        sb.czxid > sa.czxid,
        "later creates have larger czxids: {sa:?} then {sb:?}"
    );

    let set = ok("set a", c.set_data(&a, b"x", None).await);
    assert!(
        set.mzxid > sb.czxid,
        "a set's mzxid is newer than earlier changes"
    );
    assert_eq!(
        (set.czxid, set.pzxid),
        (sa.czxid, sa.pzxid),
        "a set changes neither czxid nor pzxid"
    );

    let kid = path::join(&a, "kid");
    let (_, sk) = ok("create a/kid", c.create(&kid, b"", &persistent()).await);
    let pa = ok("exists a", c.exists(&a).await).expect("a exists");
    assert_eq!(
        pa.pzxid, sk.czxid,
        "creating a child sets the parent's pzxid to its czxid"
    );
    assert_eq!(
        (pa.mzxid, pa.version, pa.cversion, pa.num_children),
        (set.mzxid, 1, 1, 1),
        "creating a child: the parent's mzxid, version, cversion, numChildren"
    );

    let kset = ok("set a/kid", c.set_data(&kid, b"y", None).await);
    let pa2 = ok("exists a", c.exists(&a).await).expect("a exists");
    assert_eq!(pa2, pa, "a child's data change does not touch the parent");

    ok("delete a/kid", c.delete(&kid, None).await);
    let pa3 = ok("exists a", c.exists(&a).await).expect("a exists");
    assert!(
        pa3.pzxid > kset.mzxid,
        "deleting a child moves the parent's pzxid past earlier changes"
    );
    assert_eq!(
        (pa3.cversion, pa3.num_children, pa3.mzxid),
        (2, 0, set.mzxid),
        "deleting a child: cversion, numChildren, mzxid"
    );
    let (_, sd) = ok(
        "create d",
        c.create(&path::join(root, "d"), b"", &persistent()).await,
    );
    assert!(
        sd.czxid > pa3.pzxid,
        "the delete's zxid precedes later changes"
    );
    assert!(sd.ctime >= sa.ctime, "ctime does not go back");
}

/// Sequential suffixes count the parent's child *creates*: ZooKeeper takes them from the
/// parent's internal cversion, which counts creates only, while the `cversion` a client sees is
/// creates plus deletes (`2 * creates - numChildren`, `DataNode.copyStat`). So deletes do not
/// advance the suffix, non-sequential creates do, refused creates do not, every prefix shares the
/// counter, and a trailing `/` names the node by its suffix alone.
pub(super) async fn sequential_numbering<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let q = path::join(root, "q");
    ok("create q", c.create(&q, b"", &persistent()).await);
    let n = path::join(&q, "n-");
    let seq_create = |prefix: String, mode: CreateMode| {
        let c = &c;
        async move {
            let what = format!("create {prefix:?} ({mode:?})");
            ok(&what, c.create(&prefix, b"", &opts(mode)).await).0
        }
    };

    let first = seq_create(n.clone(), CreateMode::PersistentSequential).await;
    assert_eq!(
        first,
        format!("{n}0000000000"),
        "the first sequential child"
    );
    let second = seq_create(n.clone(), CreateMode::EphemeralSequential).await;
    assert_eq!(
        second,
        format!("{n}0000000001"),
        "both sequential modes share the counter"
    );
    ok("delete the first", c.delete(&first, None).await);
    let stat = ok("exists q", c.exists(&q).await).expect("q exists");
    assert_eq!(
        (stat.cversion, stat.num_children),
        (3, 1),
        "the visible cversion counts the delete"
    );
    let third = seq_create(n.clone(), CreateMode::PersistentSequential).await;
    assert_eq!(
        third,
        format!("{n}0000000002"),
        "a delete does not advance the suffix, although it counts in the visible cversion"
    );

    let plain = path::join(&q, "plain");
    ok(
        "create a plain child",
        c.create(&plain, b"", &persistent()).await,
    );
    let bare = seq_create(format!("{q}/"), CreateMode::PersistentSequential).await;
    assert_eq!(
        bare,
        format!("{q}/0000000004"),
        "a trailing / names the node by its suffix alone; plain creates count too"
    );
    let other = seq_create(path::join(&q, "x-"), CreateMode::PersistentSequential).await;
    assert_eq!(
        other,
        format!("{q}/x-0000000005"),
        "every prefix shares the parent's counter"
    );

    assert_err!(
        "create an existing plain child",
        c.create(&plain, b"", &persistent()).await,
        Error::NodeExists { .. }
    );
    for victim in [&second, &third, &bare] {
        ok("delete a child", c.delete(victim, None).await);
    }
    let stat = ok("exists q", c.exists(&q).await).expect("q exists");
    assert_eq!(
        (stat.cversion, stat.num_children),
        (10, 2),
        "q after 6 creates and 4 deletes: cversion, numChildren"
    );
    let next = seq_create(n.clone(), CreateMode::PersistentSequential).await;
    assert_eq!(
        next,
        format!("{n}0000000006"),
        "neither deletes nor a refused create advance the suffix"
    );
    assert_eq!(
        sequence(path::name(&next)),
        Some(creates_under(&stat)),
        "the suffix is (cversion + numChildren) / 2 of the parent before the create"
    );
    let mut expected = vec![
        "plain".to_owned(),
        path::name(&other).to_owned(),
        path::name(&next).to_owned(),
    ];
    expected.sort();
    assert_eq!(
        sorted_children("children of q", &c, &q).await,
        expected,
        "children of q"
    );
}
