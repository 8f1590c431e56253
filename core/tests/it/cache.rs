//! The cache recipe on a real ZooKeeper server: initial load, then the writer's changes, a
//! re-list after a forced expiry on a managed client, and the view matching the tree.

use std::sync::Arc;
use std::time::Duration;

use avout::recipes::cache::{Cache, CacheEvent, CacheScope};
use avout::zk::{ZkClient, ZkConfig};
use avout::{Coordination, CoordinationExt, CreateOptions};

use crate::support;

async fn next(cache: &mut Cache) -> CacheEvent {
    tokio::time::timeout(Duration::from_secs(15), cache.next_event())
        .await
        .expect("a cache event within 15 s")
        .expect("the cache is running")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_follows_a_subtree_on_a_real_server() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let writer = ZkClient::connect(&config).await.expect("writer");
    writer.ensure_path("/cache/r/a").await.expect("setup");
    let reader: Arc<dyn Coordination> = Arc::new(ZkClient::connect(&config).await.expect("reader"));
    let mut cache = Cache::start(reader.clone(), "/cache/r", CacheScope::Subtree)
        .await
        .expect("start");
    assert!(cache.uses_persistent_watch(), "3.8 has addWatch");
    let mut initial: Vec<String> = Vec::new();
    loop {
        match next(&mut cache).await {
            CacheEvent::Initialized => break,
            event => initial.push(event.to_string()),
        }
    }
    assert_eq!(initial, ["created /cache/r", "created /cache/r/a"]);

    writer
        .create("/cache/r/a/b", b"1", &CreateOptions::default())
        .await
        .expect("create");
    writer
        .set_data("/cache/r/a", b"2", None)
        .await
        .expect("set");
    writer.delete("/cache/r/a/b", None).await.expect("delete");
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(next(&mut cache).await.to_string());
    }
    assert_eq!(
        seen,
        [
            "created /cache/r/a/b",
            "changed /cache/r/a",
            "deleted /cache/r/a/b"
        ]
    );
    assert_eq!(cache.get("/cache/r/a").expect("cached").data, b"2");
    cache.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_on_an_expired_plain_session_stops_with_the_error() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let reader = Arc::new(ZkClient::connect(&config).await.expect("reader"));
    reader.ensure_path("/cache/x").await.expect("setup");
    let mut cache = Cache::start(reader.clone(), "/cache/x", CacheScope::Children)
        .await
        .expect("start");
    reader.expire_session().await.expect("expire");
    while tokio::time::timeout(Duration::from_secs(15), cache.next_event())
        .await
        .expect("the cache stops within 15 s")
        .is_some()
    {}
    assert_eq!(cache.error(), Some(avout::Error::SessionExpired));
}
