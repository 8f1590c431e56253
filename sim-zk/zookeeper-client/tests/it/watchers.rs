//! What dropping a watcher does at the server (`--cfg madsim` only): as `zookeeper-client`,
//! the last watcher of a path to go before its event disarms the session's watch there
//! (`removeWatches`), so the server sends that session no notification; a watcher that
//! fired, or that shares its path with another, leaves the server alone.

use avout_sim_zk::Sim;
use avout_zookeeper_client::{Acls, AddWatchMode, Client, CreateMode, EventType, SimServer};

/// Runs `body` on a client of a simulated server, then the service's log.
fn logged<F: std::future::Future<Output = ()>>(body: impl FnOnce(Client, Client) -> F) -> String {
    let (_, summary) = Sim::builder()
        .clients(0)
        .keep_log(true)
        .build()
        .run(|ctx| async move {
            let _server = SimServer::attach(&ctx.zk, ["zk:2181"]);
            let watching = Client::connect("zk:2181").await.unwrap();
            let writer = Client::connect("zk:2181").await.unwrap();
            let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
            writer.create("/a", b"0", &open).await.unwrap();
            body(watching, writer).await;
        });
    summary.log_text()
}

#[test]
fn the_last_watcher_of_a_path_dropped_unfired_disarms_the_servers_watch() {
    let log = logged(|watching, writer| async move {
        let (_, watcher) = watching.check_and_watch_stat("/a").await.unwrap();
        let (_, _, other) = watching.get_and_watch_data("/a").await.unwrap();
        drop(watcher);
        drop(other);
        // The session's requests are served in order: the removal before this.
        watching.sync("/a").await.unwrap();
        writer.set_data("/a", b"1", None).await.unwrap();
        // Whatever was on its way has arrived.
        watching.sync("/a").await.unwrap();
        let persistent = watching
            .watch("/a", AddWatchMode::Persistent)
            .await
            .unwrap();
        drop(persistent);
        watching.sync("/a").await.unwrap();
        writer.delete("/a", None).await.unwrap();
        watching.sync("/a").await.unwrap();
    });
    assert_eq!(log.matches("removeWatches").count(), 2, "{log}");
    assert!(!log.contains("watch Node"), "no notification: {log}");
}

#[test]
fn a_watcher_that_fired_or_shares_its_path_removes_nothing() {
    let log = logged(|watching, writer| async move {
        let (_, fired) = watching.check_and_watch_stat("/a").await.unwrap();
        let (_, _, sharing) = watching.get_and_watch_data("/a").await.unwrap();
        writer.set_data("/a", b"1", None).await.unwrap();
        assert_eq!(fired.changed().await.event_type, EventType::NodeDataChanged);
        drop(sharing);
        let (_, unfired) = watching.check_and_watch_stat("/a").await.unwrap();
        let (_, _, kept) = watching.get_and_watch_data("/a").await.unwrap();
        drop(unfired);
        writer.set_data("/a", b"2", None).await.unwrap();
        assert_eq!(kept.changed().await.event_type, EventType::NodeDataChanged);
    });
    assert!(!log.contains("removeWatches"), "{log}");
}
