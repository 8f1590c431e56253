//! Cases: `multi`, all or nothing.

use avout::path;
use avout::{Coordination, CreateMode, Error, Op, OpResult};

use super::Backend;
use super::check::{ok, opts, persistent, sorted_children};

/// A successful multi applies every op in order and returns their results in order, with the
/// sequential create's actual path.
pub(super) async fn multi_success<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let sid = c.session().id.0;
    let m = path::join(root, "m");
    ok("create m", c.create(&m, b"0", &persistent()).await);
    let seq = path::join(&m, "s-");
    let plain = path::join(&m, "plain");
    let eph = path::join(&m, "e");
    let results = ok(
        "multi",
        c.multi(&[
            Op::check(&m, Some(0)),
            Op::create(&seq, b"s".to_vec(), CreateMode::PersistentSequential),
            Op::create(&plain, vec![], CreateMode::Persistent),
            Op::set_data(&m, b"1".to_vec(), Some(0)),
            Op::delete(&plain, None),
            Op::create(&eph, vec![], CreateMode::Ephemeral),
            Op::check(&m, None),
            Op::set_data(&m, b"22".to_vec(), None),
        ])
        .await,
    );
    assert_eq!(results.len(), 8, "one result per op: {results:?}");
    assert_eq!(results[0], OpResult::Check, "result 0");
    // A create's Stat comes only from servers from 3.8.2 on (ZOOKEEPER-4026): the path is
    // what every backend answers alike.
    assert_eq!(
        created(&results[1]),
        Some(format!("{seq}0000000000").as_str()),
        "result 1: the sequential create's actual path"
    );
    assert_eq!(created(&results[2]), Some(plain.as_str()), "result 2");
    match &results[3] {
        OpResult::SetData { stat } => assert_eq!(
            (stat.version, stat.data_length),
            (1, 1),
            "result 3: the Stat after the first set"
        ),
        other => panic!("result 3: expected SetData, got {other:?}"),
    }
    assert_eq!(results[4], OpResult::Delete, "result 4");
    assert_eq!(created(&results[5]), Some(eph.as_str()), "result 5");
    assert_eq!(results[6], OpResult::Check, "result 6");
    let last = match &results[7] {
        OpResult::SetData { stat } => *stat,
        other => panic!("result 7: expected SetData, got {other:?}"),
    };
    assert_eq!(
        (last.version, last.data_length),
        (2, 2),
        "result 7: version, dataLength"
    );

    let (data, stat) = ok("get m", c.get_data(&m).await);
    assert_eq!(data, b"22", "m's data after the multi");
    assert_eq!(
        (stat.version, stat.num_children, stat.cversion),
        (2, 2, 4),
        "m after the multi: version, numChildren, cversion (3 creates and a delete)"
    );
    assert_eq!(
        stat.mzxid, last.mzxid,
        "the multi's last set gave m its Stat"
    );
    assert_eq!(
        sorted_children("children of m", &c, &m).await,
        ["e", "s-0000000000"],
        "children of m after the multi"
    );
    assert_eq!(
        ok("exists e", c.exists(&eph).await).map(|s| s.ephemeral_owner),
        Some(sid),
        "an ephemeral created in a multi belongs to the session"
    );
    let (_, sseq) = ok(
        "get the sequential node",
        c.get_data(&format!("{seq}0000000000")).await,
    );
    let (_, se) = ok("get e", c.get_data(&eph).await);
    assert_eq!(sseq.czxid, se.czxid, "every op of a multi shares one zxid");
    assert_eq!(stat.mzxid, se.czxid, "every op of a multi shares one zxid");
}

/// A failing multi changes nothing and reports the first failing op's index and error.
pub(super) async fn multi_atomicity<B: Backend>(backend: &B, root: &str) {
    let c = backend.connect().await;
    let m = path::join(root, "m");
    ok("create m", c.create(&m, b"0", &persistent()).await);
    let (_, before) = ok("get m", c.get_data(&m).await);
    let a = path::join(&m, "a");
    let cases: Vec<(&str, Vec<Op>, usize)> = vec![
        (
            "BadVersion at index 2",
            vec![
                Op::create(&a, vec![], CreateMode::Persistent),
                Op::set_data(&m, b"x".to_vec(), None),
                Op::check(&m, Some(5)),
                Op::create(path::join(&m, "b"), vec![], CreateMode::Persistent),
            ],
            2,
        ),
        (
            "NoNode at index 0",
            vec![
                Op::delete(path::join(&m, "missing"), None),
                Op::create(&a, vec![], CreateMode::Persistent),
            ],
            0,
        ),
        (
            "NodeExists at index 1 (the first op's own create)",
            vec![
                Op::create(&a, vec![], CreateMode::Persistent),
                Op::create(&a, vec![], CreateMode::Persistent),
            ],
            1,
        ),
        (
            "NotEmpty at index 2",
            vec![
                Op::create(&a, vec![], CreateMode::Persistent),
                Op::create(path::join(&a, "kid"), vec![], CreateMode::Persistent),
                Op::delete(&a, None),
            ],
            2,
        ),
        (
            "NoNode for a check at index 1",
            vec![
                Op::create(&a, vec![], CreateMode::EphemeralSequential),
                Op::check(path::join(&m, "nope"), None),
            ],
            1,
        ),
        (
            "NoChildrenForEphemerals at index 1",
            vec![
                Op::create(&a, vec![], CreateMode::Ephemeral),
                Op::create(path::join(&a, "kid"), vec![], CreateMode::Persistent),
            ],
            1,
        ),
        (
            "BadVersion on a delete at index 1",
            vec![
                Op::set_data(&m, b"y".to_vec(), Some(0)),
                Op::delete(&m, Some(0)),
            ],
            1,
        ),
    ];
    for (what, ops, want) in cases {
        let failing = ops[want].path().to_owned();
        let err = match c.multi(&ops).await {
            Ok(results) => panic!("multi {what}: expected to fail, got {results:?}"),
            Err(e) => e,
        };
        match &err {
            Error::Multi { index, source } => {
                assert_eq!(*index, want, "multi {what}: the failing index ({err:?})");
                let matches = match (what, &**source) {
                    (w, Error::BadVersion { path }) if w.starts_with("BadVersion") => {
                        *path == failing
                    }
                    (w, Error::NoNode { path }) if w.starts_with("NoNode") => *path == failing,
                    (w, Error::NodeExists { path }) if w.starts_with("NodeExists") => {
                        *path == failing
                    }
                    (w, Error::NotEmpty { path }) if w.starts_with("NotEmpty") => *path == failing,
                    (w, Error::NoChildrenForEphemerals { path })
                        if w.starts_with("NoChildrenForEphemerals") =>
                    {
                        *path == failing
                    }
                    _ => false,
                };
                assert!(
                    matches,
                    "multi {what}: the inner error should be the named error for {failing}, \
                     got {source:?}"
                );
            }
            other => panic!("multi {what}: expected Error::Multi, got {other:?}"),
        }
        assert!(
            err.is_rejected(),
            "multi {what}: a failed multi is rejected ({err:?})"
        );
        let (data, after) = ok("get m", c.get_data(&m).await);
        assert_eq!(
            (data.as_slice(), after),
            (&b"0"[..], before),
            "multi {what}: a failed multi changes nothing"
        );
    }
    assert_eq!(
        sorted_children("children of m", &c, &m).await,
        Vec::<String>::new(),
        "no failed multi created anything"
    );
    let seq = ok(
        "a sequential create after the failed multis",
        c.create(
            &path::join(&m, "s-"),
            b"",
            &opts(CreateMode::PersistentSequential),
        )
        .await,
    )
    .0;
    assert_eq!(
        path::name(&seq),
        "s-0000000000",
        "failed multis leave the parent's cversion alone"
    );
}

/// The path a `multi`'s create answered, if `result` is one.
fn created(result: &OpResult) -> Option<&str> {
    match result {
        OpResult::Create { path, .. } => Some(path),
        _ => None,
    }
}
