//! Cases: requests refused before they are sent (invalid paths, oversized data), and data
//! right at the limit.

use avout::path;
use avout::{Coordination, CreateMode, Error, MAX_DATA_LEN, Op};

use super::check;
use super::check::{Call, assert_err, ok, opts, persistent, sorted_children};
use crate::backend::Backend;

/// Invalid paths and oversized data are refused with typed errors before anything is sent;
/// the session stays usable.
pub(super) async fn validation<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let bad_paths = [
        String::new(),
        "relative".to_owned(),
        format!("{root}/trailing/"),
        format!("{root}//double"),
        format!("{root}/./dot"),
        format!("{root}/../dotdot"),
        format!("{root}/nul\0"),
        format!("{root}/ctl\u{1}"),
        format!("{root}/private\u{e000}"),
    ];
    for p in &bad_paths {
        let p = p.as_str();
        for call in [
            Call::Create(CreateMode::Persistent),
            Call::GetData,
            Call::GetAndWatchData,
            Call::SetData(None),
            Call::Delete(None),
            Call::Exists,
            Call::ExistsAndWatch,
            Call::GetChildren,
            Call::GetAndWatchChildren,
            Call::GetAcl,
            Call::Sync,
        ] {
            assert_err!(
                format!("{call} {p:?}"),
                call.send(&c, p).await,
                Error::InvalidPath { .. }
            );
        }
        let multi = c
            .multi(&[
                Op::create(path::join(root, "fine"), vec![], CreateMode::Persistent),
                Op::check(p, None),
            ])
            .await;
        match &multi {
            Err(e) if matches!(e.root(), Error::InvalidPath { .. }) => {}
            other => panic!("multi with the path {p:?}: expected InvalidPath, got {other:?}"),
        }
    }
    assert_err!(
        "a sequential create directly under /",
        c.create("/", b"", &opts(CreateMode::PersistentSequential))
            .await,
        Error::InvalidPath { .. }
    );

    let big = vec![7u8; MAX_DATA_LEN + 1];
    let n = path::join(root, "n");
    assert_err!(
        "create with data over the limit",
        c.create(&n, &big, &persistent()).await,
        Error::DataTooLarge { len, limit, .. } if len == MAX_DATA_LEN + 1 && limit == MAX_DATA_LEN
    );
    ok("create n", c.create(&n, b"small", &persistent()).await);
    assert_err!(
        "set_data over the limit",
        c.set_data(&n, &big, None).await,
        Error::DataTooLarge { len, .. } if len == MAX_DATA_LEN + 1
    );
    let multi = c.multi(&[Op::set_data(&n, big.clone(), None)]).await;
    match &multi {
        Err(e) if matches!(e.root(), Error::DataTooLarge { .. }) => {}
        other => panic!("multi with data over the limit: expected DataTooLarge, got {other:?}"),
    }
    let (data, stat) = ok("get n", c.get_data(&n).await);
    assert_eq!(
        (data.as_slice(), stat.version),
        (&b"small"[..], 0),
        "refused writes changed nothing"
    );
    assert_eq!(
        sorted_children("children of root", &c, root).await,
        ["n"],
        "refused requests created nothing"
    );
}

/// Data of exactly [`MAX_DATA_LEN`] bytes is accepted by the service (create, set) and read
/// back intact, and so is a multi just under the limit in total: this pins the client-side
/// limit against the real server.
pub(super) async fn data_limit<B: Backend + ?Sized>(backend: &B, root: &str) {
    let c = check::session(backend).await;
    let n = path::join(root, "n");
    let max: Vec<u8> = (0..MAX_DATA_LEN).map(|i| (i % 251) as u8).collect();
    let (_, stat) = ok(
        "create with MAX_DATA_LEN bytes",
        c.create(&n, &max, &persistent()).await,
    );
    let len = i32::try_from(MAX_DATA_LEN).expect("fits");
    assert_eq!(stat.data_length, len, "dataLength of a maximal node");
    let (data, _) = ok("read a maximal node", c.get_data(&n).await);
    assert!(
        data == max,
        "a maximal node reads back intact ({} bytes)",
        data.len()
    );

    let other: Vec<u8> = max.iter().map(|b| b.wrapping_add(1)).collect();
    let stat = ok(
        "set MAX_DATA_LEN bytes",
        c.set_data(&n, &other, Some(0)).await,
    );
    assert_eq!(
        (stat.version, stat.data_length),
        (1, len),
        "set of a maximal value"
    );
    let (data, _) = ok("read after a maximal set", c.get_data(&n).await);
    assert!(data == other, "a maximal set reads back intact");

    // A multi is bounded as a whole: halves that together fit are stored, halves that
    // together exceed the limit are refused client-side.
    let m = path::join(root, "m");
    ok("create m", c.create(&m, b"", &persistent()).await);
    let half = MAX_DATA_LEN / 2 - 256;
    let results = ok(
        "multi writing two halves of the limit",
        c.multi(&[
            Op::set_data(&n, max[..half].to_vec(), Some(1)),
            Op::set_data(&m, other[..half].to_vec(), Some(0)),
        ])
        .await,
    );
    assert_eq!(results.len(), 2, "two results");
    let too_big = c
        .multi(&[
            Op::set_data(&n, vec![1; MAX_DATA_LEN / 2 + 1], None),
            Op::set_data(&m, vec![2; MAX_DATA_LEN / 2 + 1], None),
        ])
        .await;
    match &too_big {
        Err(e) if matches!(e.root(), Error::DataTooLarge { .. }) => {}
        other => panic!("a multi over the limit in total: expected DataTooLarge, got {other:?}"),
    }
    let (data, stat) = ok("read n after the multis", c.get_data(&n).await);
    assert!(data == max[..half], "the first half reads back intact");
    let (data, _) = ok("read m after the multis", c.get_data(&m).await);
    assert!(data == other[..half], "the second half reads back intact");
    assert_eq!(stat.version, 2, "version after the multi");
}
