//! One body against both: every public item of `zookeeper-client` 0.11, with its types written
//! out, run on a real ZooKeeper 3.8 server (a normal build: the real crate) and on the
//! simulator (`--cfg madsim`: the simulation). If the simulation's signatures differ from the
//! real crate's, one of the two builds fails to compile; if it behaves differently, one of the
//! two runs fails.

use std::future::Future;
use std::time::Duration;

use avout_zookeeper_client as zk;

/// A future that borrows nothing, as the real crate's are where its signature names no
/// lifetime.
fn owned<F: Future + Send + 'static>(future: F) -> F {
    future
}

/// A future that may borrow, and is `Send`.
fn sendable<F: Future + Send>(future: F) -> F {
    future
}

static OPEN: &zk::CreateOptions<'static> =
    &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());

/// The connector's options, the deprecated `&mut` ones too.
#[allow(deprecated)]
fn connector() -> zk::Connector {
    let mut old = zk::Client::connector();
    let _: &mut zk::Connector = old
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(4))
        .readonly(false)
        .server_version(3, 8, 0)
        .auth("digest".to_string(), b"bob:secret".to_vec());
    let new: zk::Connector = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .with_connection_timeout(Duration::from_secs(4))
        .with_readonly(false)
        .with_server_version(3, 8, 0)
        .with_auth("digest", b"bob:secret");
    let _ = format!("{old:?} {new:?}");
    new.clone()
}

/// Nodes, data, stats, children and ephemerals.
async fn nodes(client: &zk::Client) {
    let (stat, sequence): (zk::Stat, zk::CreateSequence) =
        client.create("/api", b"v0", OPEN).await.unwrap();
    assert_eq!(
        (sequence.into_i64(), stat.version, stat.is_invalid()),
        (-1, 0, false)
    );
    let seq_options = zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all());
    let (_, first) = client.create("/api/s-", b"", &seq_options).await.unwrap();
    let (_, second) = client.create("/api/s-", b"", &seq_options).await.unwrap();
    assert!(second > first);
    assert_eq!(format!("{first}"), "0000000000");
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    client.create("/api/e", b"", &ephemeral).await.unwrap();
    let ttl = zk::CreateMode::Persistent
        .with_acls(zk::Acls::anyone_all())
        .with_ttl(Duration::from_secs(60));
    client.create("/api/ttl", b"", &ttl).await.unwrap();
    let container = zk::CreateMode::Container.with_acls(zk::Acls::anyone_all());
    client.create("/api/c", b"", &container).await.unwrap();
    assert_eq!(
        client.create("/api/e/kid", b"", OPEN).await.unwrap_err(),
        zk::Error::NoChildrenForEphemerals
    );
    client.mkdir("/api/d/e/f", OPEN).await.unwrap();
    let (data, now): (Vec<u8>, zk::Stat) = owned(client.get_data("/api")).await.unwrap();
    assert_eq!(
        (data, now.czxid, now.num_children),
        (b"v0".to_vec(), stat.czxid, 6)
    );
    let set: zk::Stat = owned(client.set_data("/api", b"v1", Some(0)))
        .await
        .unwrap();
    assert_eq!(set.version, 1);
    let set: zk::Stat = client
        .set_data_internally("/api", b"v2", None)
        .unwrap()
        .await
        .unwrap();
    assert_eq!(set.version, 2);
    let exists: Option<zk::Stat> = owned(client.check_stat("/api/missing")).await.unwrap();
    assert_eq!(exists, None);
    let (mut kids, parent): (Vec<String>, zk::Stat) =
        owned(client.get_children("/api")).await.unwrap();
    kids.sort();
    assert_eq!(kids, ["c", "d", "e", "s-0000000000", "s-0000000001", "ttl"]);
    assert_eq!(parent.num_children, 6);
    let listed: Vec<String> = sendable(client.list_children("/api/d")).await.unwrap();
    assert_eq!(listed, ["e"]);
    let n: usize = owned(client.count_descendants_number("/api/d"))
        .await
        .unwrap();
    assert_eq!(n, 2);
    let mine: Vec<String> = sendable(client.list_ephemerals("/api")).await.unwrap();
    assert_eq!(mine, ["/api/e"]);
    owned(client.delete("/api/s-0000000000", Some(0)))
        .await
        .unwrap();
    assert_eq!(
        client.delete("/api/d", None).await.unwrap_err(),
        zk::Error::NotEmpty
    );
    sendable(client.sync("/api")).await.unwrap();
}

/// ACLs and authentication.
async fn acls(client: &zk::Client) {
    let creator = zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all());
    client.create("/api/bob", b"", &creator).await.unwrap();
    let (acl, _): (Vec<zk::Acl>, zk::Stat) = sendable(client.get_acl("/api/bob")).await.unwrap();
    assert_eq!(acl.len(), 1);
    assert_eq!(
        (acl[0].scheme(), acl[0].permission()),
        ("digest", zk::Permission::ALL)
    );
    let read = [zk::Acl::new(zk::Permission::READ, zk::AuthId::anyone())];
    let stat: zk::Stat = sendable(client.set_acl("/api/bob", &read, Some(0)))
        .await
        .unwrap();
    assert_eq!(stat.aversion, 1);
    assert_eq!(
        client.set_data("/api/bob", b"x", None).await.unwrap_err(),
        zk::Error::NoAuth
    );
    sendable(client.auth("digest", b"alice:secret"))
        .await
        .unwrap();
    let users: Vec<zk::AuthUser> = owned(client.list_auth_users()).await.unwrap();
    assert!(
        users.contains(&zk::AuthUser::new("digest", "alice")),
        "{users:?}"
    );
    assert!(
        users.contains(&zk::AuthUser::new("digest", "bob")),
        "{users:?}"
    );
    let config: (Vec<u8>, zk::Stat) = owned(client.get_config()).await.unwrap();
    let _ = config;
    let (_, _, config_watcher): (Vec<u8>, zk::Stat, zk::OneshotWatcher) =
        owned(client.get_and_watch_config()).await.unwrap();
    drop(config_watcher);
    let joining = ["server.4=localhost:2004:3004;4004"];
    let update = zk::EnsembleUpdate::Incremental {
        joinings: joining.iter().copied(),
        leavings: joining[..0].iter().copied(),
    };
    // Reconfiguration is off on the test kit's server, as on the simulated ones.
    let refused = sendable(client.update_ensemble(update, None))
        .await
        .unwrap_err();
    assert_eq!(refused, zk::Error::ReconfigDisabled);
}

/// One-shot, persistent and state watchers.
#[allow(deprecated)]
async fn watchers(client: &zk::Client) {
    let (stat, data_watcher): (Option<zk::Stat>, zk::OneshotWatcher) =
        sendable(client.check_and_watch_stat("/api/w"))
            .await
            .unwrap();
    assert_eq!(stat, None);
    let mut persistent: zk::PersistentWatcher =
        sendable(client.watch("/api", zk::AddWatchMode::PersistentRecursive))
            .await
            .unwrap();
    client.create("/api/w", b"", OPEN).await.unwrap();
    let event: zk::WatchedEvent = data_watcher.changed().await;
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (zk::EventType::NodeCreated, "/api/w")
    );
    assert_eq!(event.session_state, zk::SessionState::SyncConnected);
    assert_eq!(persistent.changed().await, event);
    let (_, _, watcher): (Vec<u8>, zk::Stat, zk::OneshotWatcher) =
        sendable(client.get_and_watch_data("/api/w")).await.unwrap();
    let (_, children): (Vec<String>, zk::OneshotWatcher) =
        sendable(client.list_and_watch_children("/api/w"))
            .await
            .unwrap();
    let (_, _, other_children): (Vec<String>, zk::Stat, zk::OneshotWatcher) =
        sendable(client.get_and_watch_children("/api/w"))
            .await
            .unwrap();
    client.create("/api/w/kid", b"", OPEN).await.unwrap();
    let kid = children.changed().await;
    assert_eq!(
        (kid.event_type, kid.path.as_str()),
        (zk::EventType::NodeChildrenChanged, "/api/w")
    );
    assert_eq!(other_children.changed().await, kid);
    let created = persistent.changed().await;
    assert_eq!(created.path, "/api/w/kid");
    watcher.remove().await.unwrap();
    let gone: Result<(), zk::Error> = persistent.remove().await;
    gone.unwrap();
    let mut states: zk::StateWatcher = client.state_watcher();
    assert_eq!(states.state(), zk::SessionState::SyncConnected);
    assert_eq!(states.peek_state(), zk::SessionState::SyncConnected);
    assert_eq!(client.state(), zk::SessionState::SyncConnected);
}

/// Multi readers and writers.
async fn multis(client: &zk::Client) {
    let mut writer: zk::MultiWriter<'_> = client.new_multi_writer();
    writer.add_check_version("/api", 2).unwrap();
    writer.add_create("/api/m", b"m", OPEN).unwrap();
    writer.add_set_data("/api/m", b"n", Some(0)).unwrap();
    writer.add_delete("/api/c", None).unwrap();
    let results: Vec<zk::MultiWriteResult> = sendable(writer.commit()).await.unwrap();
    assert_eq!(results.len(), 4);
    match &results[1] {
        // The test kit's 3.8.0 server answers a create's stat invalid (ZOOKEEPER-4026), and so
        // does a simulated one told to be that version.
        zk::MultiWriteResult::Create { path, stat } => {
            assert_eq!((path.as_str(), stat.is_invalid()), ("/api/m", true))
        }
        other => panic!("{other:?}"),
    }
    writer.add_check_version("/api", 99).unwrap();
    let failed: zk::MultiWriteError = writer.commit().await.unwrap_err();
    assert_eq!(
        failed,
        zk::MultiWriteError::OperationFailed {
            index: 0,
            source: zk::Error::BadVersion
        }
    );
    writer.add_delete("/api/m", None).unwrap();
    writer.abort();
    assert!(writer.commit().await.unwrap().is_empty());
    let mut reader: zk::MultiReader<'_> = client.new_multi_reader();
    reader.add_get_data("/api/m").unwrap();
    reader.add_get_children("/api/missing").unwrap();
    let read: Vec<zk::MultiReadResult> = sendable(reader.commit()).await.unwrap();
    assert!(matches!(&read[0], zk::MultiReadResult::Data { data, .. } if data == b"n"));
    assert!(matches!(
        &read[1],
        zk::MultiReadResult::Error {
            err: zk::Error::NoNode
        }
    ));
    let mut check: zk::CheckWriter<'_> = client.new_check_writer("/api/missing", None).unwrap();
    check.add_create("/api/x", b"", OPEN).unwrap();
    check.add_set_data("/api/m", b"", None).unwrap();
    check.add_delete("/api/m", None).unwrap();
    check.add_check_version("/api", 2).unwrap();
    let failed: zk::CheckWriteError = sendable(check.commit()).await.unwrap_err();
    assert_eq!(
        failed,
        zk::CheckWriteError::CheckFailed {
            source: zk::Error::NoNode
        }
    );
    assert_eq!(zk::Error::from(failed), zk::Error::RuntimeInconsistent);
}

/// The lock and its guards.
async fn locks(client: &zk::Client) {
    let options: zk::LockOptions<'_> = zk::LockOptions::new(zk::Acls::anyone_all())
        .with_ancestor_options(zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()))
        .unwrap();
    let prefix: zk::LockPrefix<'_> = zk::LockPrefix::new_curator("/api/locks/a", "lock-").unwrap();
    let lock: zk::LockClient<'_> = client.lock(prefix, b"", options.clone()).await.unwrap();
    assert!(
        lock.lock_path().starts_with("/api/locks/a/_c_"),
        "{}",
        lock.lock_path()
    );
    assert_eq!(lock.client().session_id(), client.session_id());
    let (_, _): (zk::Stat, zk::CreateSequence) =
        sendable(lock.create("/api/l", b"", OPEN)).await.unwrap();
    let _: zk::Stat = sendable(lock.set_data("/api/l", b"x", None)).await.unwrap();
    sendable(lock.delete("/api/l", None)).await.unwrap();
    let mut writer: zk::CheckWriter<'_> = lock.new_check_writer();
    writer.add_create("/api/l2", b"", OPEN).unwrap();
    writer.commit().await.unwrap();
    let owned_lock: zk::OwnedLockClient = lock.into_owned();
    assert_eq!(owned_lock.client().session_id(), client.session_id());
    let _ = owned_lock.lock_path();
    sendable(owned_lock.create("/api/l3", b"", OPEN))
        .await
        .unwrap();
    sendable(owned_lock.set_data("/api/l3", b"", None))
        .await
        .unwrap();
    sendable(owned_lock.delete("/api/l3", None)).await.unwrap();
    let _: zk::CheckWriter<'_> = owned_lock.new_check_writer();
    drop(owned_lock);
    let shared = zk::LockPrefix::new_shared("/api/locks/b/n-").unwrap();
    let held = client.lock(shared, b"", options.clone()).await.unwrap();
    drop(held);
    let custom = zk::LockPrefix::new_custom("/api/locks/c/x-1-".to_string(), "x-").unwrap();
    let from_acls: zk::LockOptions<'_> = zk::Acls::anyone_all().into();
    let no_parent = client.lock(custom, b"", from_acls).await.unwrap_err();
    assert_eq!(no_parent, zk::Error::NoNode);
    assert!(zk::LockPrefix::new_curator("/a", "x/y").is_err());
}

/// Roots, sessions, and their end.
async fn sessions(client: zk::Client, cluster: &str) {
    let rooted: zk::Client = client.clone().chroot("/api").unwrap();
    assert_eq!(rooted.path(), "/api");
    assert_eq!(rooted.get_data("/").await.unwrap().0, b"v2");
    let back: Result<zk::Client, zk::Client> = rooted.chroot("relative");
    assert!(back.is_err());
    drop(back);
    let info: zk::SessionInfo = client.session().clone();
    assert_eq!(info.id(), client.session_id());
    assert!(!info.is_readonly());
    let mut states = client.state_watcher();
    let info = client.into_session();
    assert_eq!(states.changed().await, zk::SessionState::Closed);
    let refused = zk::Client::connector()
        .with_session(info)
        .connect(cluster)
        .await
        .unwrap_err();
    assert_eq!(refused, zk::Error::SessionExpired);
    let detached = zk::Client::connector()
        .with_detached()
        .connect(cluster)
        .await
        .unwrap();
    let info = detached.into_session();
    let again = zk::Client::connector()
        .with_session(info.clone())
        .connect(cluster)
        .await
        .unwrap();
    assert_eq!(again.session_id(), info.id());
}

/// Every public item, on the ensemble at `cluster`.
pub(crate) async fn body(cluster: &str) {
    let client: zk::Client = connector().connect(cluster).await.unwrap();
    let _: Duration = client.session_timeout();
    let _ = format!(
        "{client:?} {:?}",
        zk::Client::connect(cluster).await.unwrap().session()
    );
    nodes(&client).await;
    acls(&client).await;
    watchers(&client).await;
    multis(&client).await;
    locks(&client).await;
    sessions(client, cluster).await;
    let nohost = zk::Client::connector()
        .with_fail_eagerly()
        .connect("127.0.0.1:1")
        .await
        .unwrap_err();
    assert_eq!(nohost, zk::Error::NoHosts);
}

#[cfg(not(madsim))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_body_on_a_real_server() {
    let server = tokio::task::block_in_place(avout_testkit::server::ZkServer::start)
        .unwrap_or_else(|e| panic!("cannot start a ZooKeeper server (tests never skip): {e}"));
    body(&server.connect_string()).await;
}

#[cfg(madsim)]
#[madsim::test]
async fn the_body_on_the_simulator() {
    // As the test kit's server: ZooKeeper 3.8.0's answers.
    let _server = zk::SimServer::builder()
        .sim(|sim| sim.features(avout_sim_zk::kernel::Features::default()))
        .start(["127.0.0.1:2181"]);
    body("127.0.0.1:2181").await;
}
