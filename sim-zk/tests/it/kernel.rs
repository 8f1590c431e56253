//! The kernel driven directly, request by request.

use std::time::Duration;

use avout::{
    Acl, CreateMode, CreateOptions, Error, EventKind, Op, OpResult, Perms, Reply, Request,
    SessionId,
};
use avout_sim_zk::kernel::{Fired, Kernel, Server};

fn create(path: &str, mode: CreateMode) -> Request {
    Request::Create {
        path: path.into(),
        data: b"d".to_vec(),
        options: mode.into(),
    }
}

fn ok(k: &mut Kernel, s: SessionId, r: Request) -> Reply {
    let applied = k.apply(100, s, &r);
    applied
        .result
        .unwrap_or_else(|e| panic!("{r:?} failed: {e}"))
}

fn err(k: &mut Kernel, s: SessionId, r: Request) -> Error {
    k.apply(100, s, &r).result.expect_err("request succeeded")
}

fn created_path(r: Reply) -> String {
    match r {
        Reply::Created { path, .. } => path,
        other => panic!("{other:?}"),
    }
}

fn kinds(events: &[Fired]) -> Vec<(SessionId, EventKind, String)> {
    events
        .iter()
        .map(|f| (f.session, f.event.kind, f.event.path.clone()))
        .collect()
}

fn session(k: &mut Kernel) -> SessionId {
    k.create_session(0, Duration::from_secs(10))
}

#[test]
fn stats_follow_zookeeper() {
    let mut k = Kernel::new();
    let s = session(&mut k);
    let zxid_before = k.last_zxid();
    let Reply::Created { stat, .. } = ok(&mut k, s, create("/a", CreateMode::Persistent)) else {
        panic!()
    };
    assert_eq!(stat.czxid, zxid_before + 1);
    assert_eq!((stat.mzxid, stat.pzxid), (stat.czxid, stat.czxid));
    assert_eq!((stat.version, stat.cversion, stat.aversion), (0, 0, 0));
    assert_eq!((stat.data_length, stat.num_children), (1, 0));
    assert_eq!(stat.ctime, 100);
    ok(&mut k, s, create("/a/b", CreateMode::Persistent));
    let set = k.apply(
        250,
        s,
        &Request::SetData {
            path: "/a".into(),
            data: b"xyz".to_vec(),
            version: Some(0),
        },
    );
    let Ok(Reply::Set(after)) = set.result else {
        panic!("{set:?}")
    };
    assert_eq!(after.version, 1);
    assert_eq!(after.mtime, 250);
    assert_eq!(after.data_length, 3);
    assert_eq!(after.cversion, 1, "one child created");
    assert_eq!(after.num_children, 1);
    assert!(after.pzxid > after.czxid && after.mzxid > after.pzxid);
    assert_eq!(
        err(
            &mut k,
            s,
            Request::SetData {
                path: "/a".into(),
                data: vec![],
                version: Some(0)
            }
        ),
        Error::BadVersion { path: "/a".into() }
    );
    assert_eq!(
        err(
            &mut k,
            s,
            Request::Delete {
                path: "/a".into(),
                version: None
            }
        ),
        Error::NotEmpty { path: "/a".into() }
    );
}

#[test]
fn failed_writes_consume_a_zxid_reads_do_not() {
    let mut k = Kernel::new();
    let s = session(&mut k);
    let z = k.last_zxid();
    err(&mut k, s, create("/x/y", CreateMode::Persistent));
    assert_eq!(k.last_zxid(), z + 1);
    ok(
        &mut k,
        s,
        Request::Exists {
            path: "/".into(),
            watch: false,
        },
    );
    assert_eq!(k.last_zxid(), z + 1);
}

#[test]
fn sequence_suffix_counts_child_creates_only() {
    let mut k = Kernel::new();
    let s = session(&mut k);
    ok(&mut k, s, create("/q", CreateMode::Persistent));
    let first = created_path(ok(
        &mut k,
        s,
        create("/q/n-", CreateMode::PersistentSequential),
    ));
    assert_eq!(first, "/q/n-0000000000");
    ok(&mut k, s, create("/q/plain", CreateMode::Persistent));
    ok(
        &mut k,
        s,
        Request::Delete {
            path: first,
            version: None,
        },
    );
    let third = created_path(ok(
        &mut k,
        s,
        create("/q/n-", CreateMode::EphemeralSequential),
    ));
    // Two creates so far; the delete counts in the visible cversion, not in the suffix.
    assert_eq!(third, "/q/n-0000000002");
    assert_eq!(k.tree().node("/q").unwrap().stat.cversion, 4);
    let bare = created_path(ok(
        &mut k,
        s,
        create("/q/", CreateMode::PersistentSequential),
    ));
    assert_eq!(bare, "/q/0000000003");
    assert_eq!(
        k.tree().node("/").unwrap().stat.cversion,
        0,
        "a fresh root's -1, plus /q"
    );
}

#[test]
fn ephemerals_have_no_children_and_die_with_their_session() {
    let mut k = Kernel::new();
    let owner = session(&mut k);
    let watcher = session(&mut k);
    ok(&mut k, owner, create("/e", CreateMode::Ephemeral));
    assert_eq!(
        err(&mut k, owner, create("/e/c", CreateMode::Persistent)),
        Error::NoChildrenForEphemerals {
            path: "/e/c".into()
        }
    );
    ok(
        &mut k,
        watcher,
        Request::GetData {
            path: "/e".into(),
            watch: true,
        },
    );
    ok(
        &mut k,
        watcher,
        Request::GetChildren {
            path: "/".into(),
            watch: true,
        },
    );
    let events = k.expire_session(500, owner);
    assert_eq!(
        kinds(&events),
        [
            (watcher, EventKind::NodeDeleted, "/e".into()),
            (watcher, EventKind::NodeChildrenChanged, "/".into())
        ]
    );
    assert!(k.tree().node("/e").is_none());
    assert_eq!(
        err(
            &mut k,
            owner,
            Request::Exists {
                path: "/".into(),
                watch: false
            }
        ),
        Error::SessionExpired
    );
}

#[test]
fn watches_fire_once_with_zookeeper_kinds() {
    let mut k = Kernel::new();
    let w = session(&mut k);
    let s = session(&mut k);
    let watch_exists = |k: &mut Kernel, p: &str| {
        ok(
            k,
            w,
            Request::Exists {
                path: p.into(),
                watch: true,
            },
        )
    };
    watch_exists(&mut k, "/n");
    let applied = k.apply(1, s, &create("/n", CreateMode::Persistent));
    assert_eq!(
        kinds(&applied.events),
        [(w, EventKind::NodeCreated, "/n".into())]
    );
    // One-shot: the next change is not reported.
    let applied = k.apply(
        1,
        s,
        &Request::SetData {
            path: "/n".into(),
            data: vec![],
            version: None,
        },
    );
    assert!(applied.events.is_empty());
    watch_exists(&mut k, "/n");
    ok(
        &mut k,
        w,
        Request::GetData {
            path: "/n".into(),
            watch: true,
        },
    );
    let applied = k.apply(
        1,
        s,
        &Request::SetData {
            path: "/n".into(),
            data: vec![1],
            version: None,
        },
    );
    assert_eq!(
        kinds(&applied.events),
        [(w, EventKind::NodeDataChanged, "/n".into())],
        "one event per session even with two watches"
    );
    ok(
        &mut k,
        w,
        Request::GetData {
            path: "/n".into(),
            watch: true,
        },
    );
    ok(
        &mut k,
        w,
        Request::GetChildren {
            path: "/n".into(),
            watch: true,
        },
    );
    let applied = k.apply(
        1,
        s,
        &Request::Delete {
            path: "/n".into(),
            version: None,
        },
    );
    assert_eq!(
        kinds(&applied.events),
        [(w, EventKind::NodeDeleted, "/n".into())]
    );
    // No watch is armed by a read that fails.
    assert_eq!(
        err(
            &mut k,
            w,
            Request::GetData {
                path: "/n".into(),
                watch: true
            }
        ),
        Error::NoNode { path: "/n".into() }
    );
    let applied = k.apply(1, s, &create("/n", CreateMode::Persistent));
    assert!(applied.events.is_empty());
}

#[test]
fn multi_is_all_or_nothing_with_the_failing_index() {
    let mut k = Kernel::new();
    let s = session(&mut k);
    ok(&mut k, s, create("/m", CreateMode::Persistent));
    let before = k.tree().clone();
    let ops = vec![
        Op::create("/m/a", vec![], CreateMode::Persistent),
        Op::create("/m/a/b", vec![], CreateMode::Persistent),
        Op::set_data("/m", b"v".to_vec(), Some(5)),
    ];
    let e = err(&mut k, s, Request::Multi(ops));
    assert_eq!(
        e,
        Error::Multi {
            index: 2,
            source: Box::new(Error::BadVersion { path: "/m".into() })
        }
    );
    // Only the zxid moved.
    assert!(k.tree().node("/m/a").is_none());
    assert_eq!(k.tree().node("/m"), before.node("/m"));
    let ops = vec![
        Op::create("/m/s-", vec![], CreateMode::PersistentSequential),
        Op::check("/m/s-0000000000", Some(0)),
        Op::set_data("/m/s-0000000000", b"x".to_vec(), Some(0)),
        Op::set_data("/m/s-0000000000", b"y".to_vec(), Some(1)),
        Op::delete("/m/s-0000000000", Some(2)),
    ];
    let Reply::Multi(results) = ok(&mut k, s, Request::Multi(ops)) else {
        panic!()
    };
    assert_eq!(
        results[0],
        OpResult::Create {
            path: "/m/s-0000000000".into(),
            stat: None
        }
    );
    assert_eq!(results[1], OpResult::Check);
    let (OpResult::SetData { stat: first }, OpResult::SetData { stat: second }) =
        (&results[2], &results[3])
    else {
        panic!("{results:?}")
    };
    assert_eq!((first.version, second.version), (1, 2));
    assert_eq!(first.mzxid, second.mzxid, "one zxid for the whole multi");
    assert_eq!(results[4], OpResult::Delete);
    assert_eq!(k.tree().node("/m").unwrap().stat.cversion, 2);
}

#[test]
fn containers_go_when_their_last_child_does() {
    let mut k = Kernel::new();
    let s = session(&mut k);
    ok(&mut k, s, create("/c", CreateMode::Container));
    assert!(k.reap_containers(1).is_empty());
    assert!(
        k.tree().node("/c").is_some(),
        "a never-used container stays"
    );
    ok(&mut k, s, create("/c/x", CreateMode::Persistent));
    ok(
        &mut k,
        s,
        Request::Delete {
            path: "/c/x".into(),
            version: None,
        },
    );
    k.reap_containers(2);
    assert!(k.tree().node("/c").is_none());
    assert_eq!(
        k.tree().node("/c").map(|n| n.stat.ephemeral_owner),
        None,
        "containers show no owner"
    );
}

#[test]
fn bad_input_and_limits() {
    let mut k = Kernel::new();
    let s = session(&mut k);
    assert!(matches!(
        err(&mut k, s, create("no-slash", CreateMode::Persistent)),
        Error::InvalidPath { .. }
    ));
    let big = Request::Create {
        path: "/big".into(),
        data: vec![0; avout::MAX_DATA_LEN + 1],
        options: CreateOptions::default(),
    };
    assert!(matches!(err(&mut k, s, big), Error::DataTooLarge { .. }));
    assert!(matches!(
        err(
            &mut k,
            s,
            Request::Delete {
                path: "/".into(),
                version: None
            }
        ),
        Error::BadArguments(_)
    ));
    assert!(matches!(
        err(&mut k, s, Request::Multi(vec![])),
        Error::BadArguments(_)
    ));
}

#[test]
fn acls_are_enforced() {
    let mut k = Kernel::new();
    let owner = session(&mut k);
    let other = session(&mut k);
    let secret = CreateOptions::default().with_acl(Acl::creator_all());
    assert_eq!(
        err(
            &mut k,
            owner,
            Request::Create {
                path: "/s".into(),
                data: vec![],
                options: secret.clone()
            }
        ),
        Error::InvalidAcl { path: "/s".into() }
    );
    ok(
        &mut k,
        owner,
        Request::AddAuth {
            scheme: "digest".into(),
            auth: b"app:pw".to_vec(),
        },
    );
    ok(
        &mut k,
        owner,
        Request::Create {
            path: "/s".into(),
            data: vec![],
            options: secret,
        },
    );
    for r in [
        Request::GetData {
            path: "/s".into(),
            watch: false,
        },
        Request::SetData {
            path: "/s".into(),
            data: vec![],
            version: None,
        },
        create("/s/child", CreateMode::Persistent),
        Request::GetAcl { path: "/s".into() },
    ] {
        assert!(matches!(err(&mut k, other, r), Error::NoAuth { .. }));
    }
    let Reply::Acl { acl, .. } = ok(&mut k, owner, Request::GetAcl { path: "/s".into() }) else {
        panic!()
    };
    assert_eq!(acl, vec![Acl::digest("app", "pw", Perms::ALL)]);
    // Read-only for the world: read allowed, write refused.
    ok(
        &mut k,
        owner,
        Request::Create {
            path: "/ro".into(),
            data: vec![],
            options: CreateOptions::default().with_acl(Acl::read_unsafe()),
        },
    );
    ok(
        &mut k,
        other,
        Request::GetData {
            path: "/ro".into(),
            watch: false,
        },
    );
    assert!(matches!(
        err(
            &mut k,
            other,
            Request::SetData {
                path: "/ro".into(),
                data: vec![],
                version: None
            }
        ),
        Error::NoAuth { .. }
    ));
    assert_eq!(
        err(
            &mut k,
            other,
            Request::AddAuth {
                scheme: "kerberos".into(),
                auth: vec![]
            }
        ),
        Error::AuthFailed
    );
}

#[test]
fn follower_reads_are_stale_monotonic_and_sync_catches_up() {
    let mut k = Kernel::with_follower();
    let writer = session(&mut k);
    let reader = session(&mut k);
    k.attach(reader, Server::Follower(0));
    let read = |k: &mut Kernel| match ok(
        k,
        reader,
        Request::Exists {
            path: "/f".into(),
            watch: false,
        },
    ) {
        Reply::Exists(stat) => stat.is_some(),
        other => panic!("{other:?}"),
    };
    k.apply(10, writer, &create("/f", CreateMode::Persistent));
    assert!(!read(&mut k), "the follower has not applied the create yet");
    k.advance_follower(5);
    assert!(!read(&mut k));
    ok(&mut k, reader, Request::Sync { path: "/".into() });
    assert!(read(&mut k));
    // Its own writes are visible at once.
    ok(&mut k, reader, create("/mine", CreateMode::Persistent));
    assert!(matches!(
        ok(
            &mut k,
            reader,
            Request::Exists {
                path: "/mine".into(),
                watch: false
            }
        ),
        Reply::Exists(Some(_))
    ));
    assert_eq!(k.follower_backlog(), 0);
}

#[test]
fn a_newer_server_answers_a_multi_creates_stat() {
    let mut k = Kernel::new();
    k.set_features(avout_sim_zk::kernel::Features {
        multi_create_stats: true,
        ..Default::default()
    });
    let s = session(&mut k);
    let ops = vec![
        Op::create("/m", b"abc".to_vec(), CreateMode::Persistent),
        Op::create("/m/e", vec![], CreateMode::Ephemeral),
        Op::set_data("/m", b"x".to_vec(), None),
    ];
    let Reply::Multi(results) = ok(&mut k, s, Request::Multi(ops)) else {
        panic!()
    };
    let stat_of = |r: &OpResult| match r {
        OpResult::Create {
            stat: Some(stat), ..
        } => *stat,
        other => panic!("a create with its stat, not {other:?}"),
    };
    let (m, e) = (stat_of(&results[0]), stat_of(&results[1]));
    // The stat right after the create: later operations of the same multi do not show.
    assert_eq!((m.version, m.data_length, m.num_children), (0, 3, 0));
    assert_eq!(
        (m.czxid, m.mzxid, m.pzxid),
        (k.last_zxid(), k.last_zxid(), k.last_zxid())
    );
    assert_eq!(e.ephemeral_owner, s.0);
    let (_, now) = match ok(
        &mut k,
        s,
        Request::GetData {
            path: "/m/e".into(),
            watch: false,
        },
    ) {
        Reply::Data { data, stat } => (data, stat),
        other => panic!("{other:?}"),
    };
    assert_eq!(e, now, "the ephemeral's stat is what a read shows");
}

#[test]
fn the_super_digest_makes_a_superuser_whom_no_acl_refuses() {
    let mut k = Kernel::new();
    k.set_super_digest(Some(Acl::digest("super", "test", Perms::ALL).id));
    let (owner, root, other) = (session(&mut k), session(&mut k), session(&mut k));
    let auth = |user: &str| Request::AddAuth {
        scheme: "digest".into(),
        auth: user.as_bytes().to_vec(),
    };
    ok(&mut k, owner, auth("alice:secret"));
    let only_alice = CreateOptions::from(CreateMode::Persistent).with_acl(vec![Acl::digest(
        "alice",
        "secret",
        Perms::ALL,
    )]);
    ok(
        &mut k,
        owner,
        Request::Create {
            path: "/a".into(),
            data: b"x".to_vec(),
            options: only_alice,
        },
    );
    let read = Request::GetData {
        path: "/a".into(),
        watch: false,
    };
    assert!(matches!(
        err(&mut k, other, read.clone()),
        Error::NoAuth { .. }
    ));
    ok(&mut k, other, auth("super:wrong"));
    assert!(
        matches!(err(&mut k, other, read.clone()), Error::NoAuth { .. }),
        "a wrong password is an ordinary digest identity"
    );
    ok(&mut k, root, auth("super:test"));
    ok(&mut k, root, read);
    let Reply::WhoAmI(ids) = ok(&mut k, root, Request::WhoAmI) else {
        panic!()
    };
    let schemes: Vec<_> = ids
        .iter()
        .map(|i| (i.scheme.as_str(), i.user.as_str()))
        .collect();
    assert_eq!(schemes, [("ip", "127.0.0.1"), ("super", "")]);
}
