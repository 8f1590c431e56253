//! Atoms, record operations and lin-kv: on a real standalone ZooKeeper, and the bodies that
//! need no server trick on the simulator too (`on_both!`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use avout::atom::linkv::{KvError, LinKv, MicroOp, transact};
use avout::atom::record::{RecordError, Records, Value};
use avout::atom::{Atom, AtomError, FileStore, Postcard};
use avout::zk::ZkConfig;
use avout::{Acl, Client, Coordination, CreateOptions, MAX_DATA_LEN, Perms};
use serde_json::json;

use avout_testkit::backend::Backend;

use crate::atom_probe;
use crate::support::{self, on_both};

/// Runs `per` increments from each of `clients` at once; returns the atoms used.
async fn hammer(
    clients: &[Client],
    path: &str,
    per: u64,
    promote_after: Option<u32>,
) -> Vec<Atom<u64>> {
    let mut atoms = Vec::new();
    for client in clients {
        let mut builder = Atom::builder(client, path);
        if let Some(n) = promote_after {
            builder = builder.promote_after(n);
        }
        atoms.push(builder.open(0).await.expect("open"));
    }
    let runs = atoms.iter().map(|atom| async move {
        let mut seen = Vec::new();
        for _ in 0..per {
            seen.push(atom.swap(|n| n + 1).await.expect("swap"));
        }
        seen
    });
    let mut all: Vec<u64> = futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect();
    all.sort_unstable();
    let total = per * clients.len() as u64;
    assert_eq!(
        all,
        (1..=total).collect::<Vec<_>>(),
        "every swap saw a distinct value: none lost, none applied twice"
    );
    atoms
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_swaps_never_lose_an_update_and_promotion_bounds_retries() {
    let server = support::standalone();
    let clients = support::clients(&ZkConfig::new(server.connect_string()), 4).await;

    let atoms = hammer(&clients, "/atoms/counter", 40, None).await;
    assert_eq!(atoms[0].deref().await.unwrap(), 160);
    let stats: Vec<_> = atoms.iter().map(|a| a.stats()).collect();
    assert!(stats.iter().all(|s| s.promoted_tries == 0));
    // 160 increments and one create by whichever `open` came first.
    assert_eq!(stats.iter().map(|s| s.writes).sum::<u64>(), 161);
    let conflicts: u64 = stats.iter().map(|s| s.conflicts).sum();
    eprintln!("optimistic only: {conflicts} conflicts over 160 increments");

    let atoms = hammer(&clients, "/atoms/promoted", 40, Some(1)).await;
    assert_eq!(atoms[0].deref().await.unwrap(), 160);
    let stats: Vec<_> = atoms.iter().map(|a| a.stats()).collect();
    let promoted: u64 = stats.iter().map(|s| s.promoted_tries).sum();
    let promotions: u64 = stats.iter().map(|s| s.promotions).sum();
    eprintln!("with promotion after 1 failure: {stats:?}");
    assert!(
        promotions > 0 && promoted >= promotions,
        "contention promotes: {stats:?}"
    );
    // The lock is released after every promoted update.
    let (lock_children, _) = clients[0]
        .get_children("/atoms/promoted/_lock")
        .await
        .unwrap();
    assert!(lock_children.is_empty(), "{lock_children:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_uncontended_swap_is_one_request_and_a_lost_reply_is_not_applied_twice() {
    let server = support::standalone();
    let probe = atom_probe::probe(support::connect(&ZkConfig::new(server.connect_string())).await);
    // Exactly the probed session: the counts are of its requests.
    let atom: Atom<u64> = Atom::open(&Client::single(probe.clone()), "/atoms/probe", 0)
        .await
        .unwrap();
    atom.swap(|n| n + 1).await.unwrap();

    let before = probe.intercept().requests();
    for _ in 0..10 {
        atom.swap(|n| n + 1).await.unwrap();
    }
    assert_eq!(
        probe.intercept().requests() - before,
        10,
        "one set_data per warm swap"
    );
    // Eleven swaps and the create in `open`.
    assert_eq!(atom.stats().optimistic_tries, 12);
    // A rough figure for the uncontended path (the benchmark proper lives in the CLI).
    let start = std::time::Instant::now();
    for _ in 0..200 {
        atom.swap(|n| n + 1).await.unwrap();
    }
    let rate = 200.0 / start.elapsed().as_secs_f64();
    eprintln!("uncontended warm swaps: {rate:.0}/s on a standalone test server");
    atom.reset(11).await.unwrap();

    // The set is applied but its reply is lost: recovery reads the node, finds its write id,
    // and does not apply the increment again.
    probe.intercept().lose_next_set_reply();
    assert_eq!(atom.swap(|n| n + 1).await.unwrap(), 12);
    assert_eq!(probe.intercept().lost(), 1);
    assert_eq!(atom.stats().recoveries, 1);
    assert_eq!(atom.deref().await.unwrap(), 12);

    // The same with another writer in between: the id is found one version back.
    let other_client = support::client(&ZkConfig::new(server.connect_string())).await;
    let other: Atom<u64> = Atom::open(&other_client, "/atoms/probe", 0).await.unwrap();
    probe.intercept().lose_next_set_reply();
    let mut calls = 0;
    let result = atom
        .swap(|n| {
            calls += 1;
            n + 1
        })
        .await
        .unwrap();
    assert_eq!((result, calls), (13, 1));
    other.swap(|n| n + 100).await.unwrap();
    assert_eq!(atom.deref().await.unwrap(), 113);

    // A compare_and_set that fails reads linearizably (sync + read) before answering.
    assert!(!atom.compare_and_set(&0, 5).await.unwrap());
    assert!(atom.compare_and_set(&113, 5).await.unwrap());
    assert_eq!(other.deref().await.unwrap(), 5);
    atom.reset(9).await.unwrap();
    assert_eq!(other.deref().await.unwrap(), 9);
}

on_both!(
    /// Validators, watchers, codecs, the size limit and the file store, on both backends.
    validators_watchers_codecs_limits_and_file_store,
    support::plain_sim(0xa70),
    |b| validators_watchers_codecs_limits_and_file_store_on(b),
);

on_both!(
    /// A watch whose read is refused (the node's ACL lets this client nothing) reports the
    /// refusal at once: only a lost session is waited out.
    a_refused_watch,
    support::plain_sim(0xa72),
    |b| a_refused_watch_is_the_refusal_on(b),
);

async fn a_refused_watch_is_the_refusal_on(backend: &dyn Backend) {
    let clients = support::clients_of(backend, 1).await;
    let atom: Atom<u64> = Atom::open(&clients[0], "/atoms/refused", 0).await.unwrap();
    let nobody = [Acl::digest("nobody", "secret", Perms::ALL)];
    clients[0]
        .set_acl("/atoms/refused", &nobody, None)
        .await
        .unwrap();
    let watched = tokio::time::timeout(Duration::from_secs(30), atom.watch())
        .await
        .expect("refused at once, not waited on");
    assert!(
        matches!(&watched, Err(AtomError::Zk(avout::Error::NoAuth { .. }))),
        "{watched:?}"
    );
}

async fn validators_watchers_codecs_limits_and_file_store_on(backend: &dyn Backend) {
    let clients = support::clients_of(backend, 3).await;

    // Validators: a rejected value is an error and nothing is written.
    let balance: Atom<i64> = Atom::builder(&clients[0], "/atoms/balance")
        .validator(|b: &i64| *b >= 0)
        .open(10)
        .await
        .unwrap();
    assert!(matches!(
        balance.swap(|b| b - 11).await,
        Err(AtomError::Invalid { .. })
    ));
    assert!(matches!(
        balance.reset(-1).await,
        Err(AtomError::Invalid { .. })
    ));
    assert_eq!(balance.deref().await.unwrap(), 10);
    assert_eq!(balance.cached(), Some(10), "the handle keeps what it read");
    balance.clear_validator();
    balance.reset(-1).await.unwrap();
    assert_eq!(balance.cached(), Some(-1), "and what it wrote");
    assert!(matches!(
        Atom::<i64>::builder(&clients[0], "/atoms/invalid-initial")
            .validator(|b: &i64| *b >= 0)
            .open(-5)
            .await,
        Err(AtomError::Invalid { .. })
    ));
    assert!(
        clients[0]
            .exists("/atoms/invalid-initial")
            .await
            .unwrap()
            .is_none()
    );

    // Watchers: after the last write settles, every watcher has seen the final value.
    let writer_atoms: Vec<Atom<u64>> = futures::future::join_all(
        clients[1..]
            .iter()
            .map(|client| Atom::open(client, "/atoms/watched", 0)),
    )
    .await
    .into_iter()
    .map(Result::unwrap)
    .collect();
    let watched: Atom<u64> = Atom::open(&clients[0], "/atoms/watched", 0).await.unwrap();
    let mut watcher = watched.watch().await.unwrap();
    let last_seen = Arc::new(AtomicU64::new(0));
    let calls = Arc::new(AtomicU64::new(0));
    {
        let (last_seen, calls) = (last_seen.clone(), calls.clone());
        watched
            .add_watch("probe", move |old: &u64, new: &u64| {
                assert!(new > old, "changes arrive in order: {old} -> {new}");
                last_seen.store(*new, Ordering::SeqCst);
                calls.fetch_add(1, Ordering::SeqCst);
            })
            .await
            .unwrap();
    }
    futures::future::join_all(writer_atoms.iter().map(|a| async move {
        for _ in 0..30 {
            a.swap(|n| n + 1).await.unwrap();
        }
    }))
    .await;
    support::eventually(
        "the callback watch sees 60",
        Duration::from_secs(10),
        || {
            let v = last_seen.load(Ordering::SeqCst);
            async move { (v == 60).then_some(()) }
        },
    )
    .await;
    let mut last = 0;
    while last != 60 {
        let change = tokio::time::timeout(Duration::from_secs(10), watcher.changed())
            .await
            .expect("the watcher reaches the final value")
            .unwrap();
        assert_eq!(change.old, last);
        assert!(change.new > change.old);
        last = change.new;
    }
    eprintln!(
        "60 writes seen by the callback watch in {} calls",
        calls.load(Ordering::SeqCst)
    );
    assert!(watched.remove_watch("probe"));

    // Foreign bytes: a typed error, never a panic.
    clients[0]
        .create(
            "/atoms/foreign",
            b"\xff\x00 not json",
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    let foreign: Atom<u64> = Atom::builder(&clients[0], "/atoms/foreign")
        .connect()
        .unwrap();
    assert!(matches!(
        foreign.deref().await,
        Err(AtomError::Decode { .. })
    ));
    assert!(matches!(
        foreign.swap(|n| n + 1).await,
        Err(AtomError::Decode { .. })
    ));
    // Plain JSON written by another program is a value; a postcard atom cannot read it.
    clients[0]
        .create("/atoms/plain", b"41", &CreateOptions::default())
        .await
        .unwrap();
    let plain: Atom<u64> = Atom::builder(&clients[0], "/atoms/plain")
        .connect()
        .unwrap();
    assert_eq!(plain.swap(|n| n + 1).await.unwrap(), 42);
    let as_postcard: Atom<String, Postcard> = Atom::builder(&clients[1], "/atoms/plain")
        .codec(Postcard)
        .connect()
        .unwrap();
    assert!(matches!(
        as_postcard.deref().await,
        Err(AtomError::Decode { .. })
    ));
    let missing: Atom<u64> = Atom::builder(&clients[0], "/atoms/none").connect().unwrap();
    assert!(matches!(
        missing.swap(|n| n + 1).await,
        Err(AtomError::Missing { .. })
    ));

    // Postcard round trip.
    let compact: Atom<Vec<u32>, Postcard> = Atom::builder(&clients[0], "/atoms/compact")
        .codec(Postcard)
        .open(vec![1, 2])
        .await
        .unwrap();
    compact
        .swap(|v| v.iter().map(|x| x * 10).collect())
        .await
        .unwrap();
    assert_eq!(compact.deref().await.unwrap(), vec![10, 20]);

    // The size limit is checked before writing.
    let blob: Atom<Vec<u8>, Postcard> = Atom::builder(&clients[0], "/atoms/blob")
        .codec(Postcard)
        .open(vec![])
        .await
        .unwrap();
    match blob.reset(vec![7; MAX_DATA_LEN]).await {
        Err(AtomError::TooLarge { len, limit, .. }) => assert!(len > limit),
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let (_, stat) = clients[0].get_data("/atoms/blob").await.unwrap();
    assert_eq!(stat.version, 0, "nothing written");

    // The file store holds values past the node limit; ZooKeeper holds the key and notifies.
    // A directory of its own: both backends' runs may share a process (`cargo test`).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let store = FileStore::new(&dir).unwrap().inline_below(0);
    let big_a: Atom<Vec<u8>, Postcard> = Atom::builder(&clients[0], "/atoms/big")
        .codec(Postcard)
        .store(store.clone())
        .open(vec![1; 3 << 20])
        .await
        .unwrap();
    let big_b: Atom<Vec<u8>, Postcard> = Atom::builder(&clients[1], "/atoms/big")
        .codec(Postcard)
        .store(store.clone())
        .connect()
        .unwrap();
    let mut big_watch = big_b.watch().await.unwrap();
    big_a
        .swap(|v| {
            let mut v = v.clone();
            v.push(2);
            v
        })
        .await
        .unwrap();
    let change = big_watch.changed().await.unwrap();
    assert_eq!(
        (change.old.len(), change.new.len()),
        (3 << 20, (3 << 20) + 1)
    );
    big_b.swap(|v| v[..10].to_vec()).await.unwrap();
    assert_eq!(big_a.deref().await.unwrap(), vec![1; 10]);
    let (node, _) = clients[0].get_data("/atoms/big").await.unwrap();
    assert!(node.len() < 400, "the node holds a key, not the value");
    let files: Vec<_> = std::fs::read_dir(dir.join("%2Fatoms%2Fbig"))
        .unwrap()
        .collect();
    assert_eq!(files.len(), 1, "replaced values are removed: {files:?}");
    tmp.close().unwrap();
}

on_both!(
    /// Record operations and lin-kv transactions, on both backends.
    record_operations_and_lin_kv,
    support::plain_sim(0xa71),
    |b| record_operations_and_lin_kv_on(b),
);

async fn record_operations_and_lin_kv_on(backend: &dyn Backend) {
    let clients = support::clients_of(backend, 3).await;

    let records = Records::new(&clients[0], "/records");
    records.set("name", Value::from("Ada"), 1).await.unwrap();
    records.add("tags", Value::from("a"), 1).await.unwrap();
    records.add("tags", Value::from("b"), 1).await.unwrap();
    records.set("tags", Value::from("c"), 1).await.unwrap();
    assert_eq!(
        records
            .fetch("tags", 1)
            .await
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        vec![Value::from("c")]
    );
    assert!(
        records
            .verify_and_swap("tags", &Value::from("c"), 1, Value::from("d"))
            .await
            .unwrap()
    );
    assert!(
        !records
            .verify_and_swap("tags", &Value::from("c"), 1, Value::from("e"))
            .await
            .unwrap()
    );
    assert!(records.verify("tags", &Value::from("d"), 1).await.unwrap());
    // Removing a value that is there removes it and says so; one that is not, or from a key
    // that has none, writes nothing and says false.
    records.add("tags", Value::from("e"), 1).await.unwrap();
    assert!(records.remove("tags", &Value::from("e"), 1).await.unwrap());
    assert!(!records.remove("tags", &Value::from("e"), 1).await.unwrap());
    assert!(
        !records
            .remove("nothing", &Value::from("e"), 1)
            .await
            .unwrap()
    );
    let tags: Vec<_> = records
        .fetch("tags", 1)
        .await
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(tags, vec![Value::from("d")]);
    assert!(records.clear("tags", 1).await.unwrap());
    assert!(!records.clear("tags", 1).await.unwrap());
    assert!(records.fetch("tags", 1).await.unwrap().is_empty());
    assert!(matches!(
        records.get_and_increment("name", 1).await,
        Err(RecordError::NotANumber {
            found: Some(Value::Str(_)),
            ..
        })
    ));
    assert!(matches!(
        records.get_and_increment("nothing", 1).await,
        Err(RecordError::NotANumber { found: None, .. })
    ));
    records.set("pi", Value::Float(3.5), 1).await.unwrap();
    assert_eq!(
        records.get_and_increment("pi", 1).await.unwrap(),
        Value::Float(3.5)
    );
    records.set("max", Value::Int(i64::MAX), 1).await.unwrap();
    assert!(matches!(
        records.get_and_increment("max", 1).await,
        Err(RecordError::Overflow { .. })
    ));

    // Concurrent get_and_increment from three sessions hands out distinct numbers.
    records.set("ticket", Value::Int(0), 2).await.unwrap();
    let handles: Vec<_> = clients
        .iter()
        .map(|client| Records::new(client, "/records"))
        .collect();
    let mut got: Vec<i64> = futures::future::join_all(handles.iter().map(|r| async move {
        let mut got = Vec::new();
        for _ in 0..15 {
            match r.get_and_increment("ticket", 2).await.unwrap() {
                Value::Int(n) => got.push(n),
                other => panic!("{other:?}"),
            }
        }
        got
    }))
    .await
    .into_iter()
    .flatten()
    .collect();
    got.sort_unstable();
    assert_eq!(got, (0..45).collect::<Vec<_>>());

    // lin-kv with Maelstrom's codes.
    let kv = LinKv::open(&clients[0], "/lin-kv").await.unwrap();
    let kv2 = LinKv::open(&clients[1], "/lin-kv").await.unwrap();
    let err = kv.read("x").await.unwrap_err();
    assert!(matches!(err, KvError::KeyDoesNotExist { .. }));
    assert_eq!(err.code(), 20);
    assert_eq!(
        kv.cas("x", &json!(1), json!(2), false)
            .await
            .unwrap_err()
            .code(),
        20
    );
    kv.cas("x", &json!(1), json!(2), true).await.unwrap();
    assert_eq!(kv2.read("x").await.unwrap(), json!(2));
    let err = kv2.cas("x", &json!(1), json!(3), true).await.unwrap_err();
    assert_eq!(err.code(), 22);
    assert!(err.is_definite());
    kv2.cas("x", &json!(2), json!(3), false).await.unwrap();
    // kv's cache is stale (2): its cas still sees 3 and fails with 22, after a linearizable read.
    assert_eq!(
        kv.cas("x", &json!(2), json!(4), false)
            .await
            .unwrap_err()
            .code(),
        22
    );
    kv.write("y/z", json!({"list": [1, 2]})).await.unwrap();
    assert_eq!(kv2.read("y/z").await.unwrap(), json!({"list": [1, 2]}));
    kv2.write("y/z", json!(null)).await.unwrap();
    assert_eq!(kv.read("y/z").await.unwrap(), json!(null));

    // The whole database as one value: concurrent transactions stay serializable.
    let dbs: Vec<Atom<BTreeMap<u64, Vec<u64>>>> = futures::future::join_all(
        clients
            .iter()
            .map(|client| Atom::open(client, "/txn/root", BTreeMap::new())),
    )
    .await
    .into_iter()
    .map(Result::unwrap)
    .collect();
    futures::future::join_all(dbs.iter().enumerate().map(|(i, db)| async move {
        for j in 0..10u64 {
            let done = transact(
                db,
                &[
                    MicroOp::Append(1, i as u64 * 100 + j),
                    MicroOp::Append(2, i as u64 * 100 + j),
                    MicroOp::Read(1, None),
                    MicroOp::Read(2, None),
                ],
            )
            .await
            .unwrap();
            // Both keys were appended in the same transaction: they always agree.
            assert_eq!(
                match &done[2] {
                    MicroOp::Read(_, v) => v,
                    _ => unreachable!(),
                },
                match &done[3] {
                    MicroOp::Read(_, v) => v,
                    _ => unreachable!(),
                }
            );
        }
    }))
    .await;
    let db = dbs[0].deref().await.unwrap();
    assert_eq!(db[&1].len(), 30);
    assert_eq!(db[&1], db[&2]);
}
