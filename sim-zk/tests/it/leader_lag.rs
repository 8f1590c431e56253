//! A leader that lags applying its commits ([`Fault::LeaderLag`]). ZooKeeper's own `sync` does
//! not order a read on such a leader; avout's `sync`, a quorum round, does. The real server
//! shows the first half: `cargo run -p avout-testkit --example leader_sync`.

use std::time::Duration;

use avout::{Coordination, Reply, Request};
use avout_sim_zk::{Fault, FaultKind, Sim, SimClient, SimZk};

/// How a reader asks whether a node exists "after every committed write".
#[derive(Clone, Copy, Debug)]
enum Read {
    /// ZooKeeper's `sync`, then `exists`, sent together (what the drop-in client sends).
    ZooKeeperSync,
    /// avout's `sync` (a `multi` of one `check`), then `exists`.
    AvoutSync,
}

async fn exists_after(reader: &SimClient, path: &str, read: Read) -> bool {
    let exists = Request::Exists {
        path: path.into(),
        watch: false,
    };
    let reply = match read {
        Read::ZooKeeperSync => {
            let sync = reader.send(Request::Sync { path: path.into() });
            let exists = reader.send(exists);
            sync.await.expect("a calm run's sync");
            exists.await
        }
        Read::AvoutSync => {
            let sync = reader.sync(path);
            let exists = reader.submit(exists);
            sync.await.expect("a calm run's sync");
            exists.await
        }
    };
    match reply.expect("a calm run's exists").0 {
        Reply::Exists(stat) => stat.is_some(),
        other => panic!("exists replied {other:?}"),
    }
}

/// A run on three servers.
fn three_servers(seed: u64) -> Sim {
    Sim::builder()
        .seed_from_env(seed)
        .servers(3)
        .session_timeout(Duration::from_secs(10))
        .build()
}

/// A writer connected to a follower and a reader connected to the leader.
fn writer_and_reader(zk: &SimZk) -> (SimClient, SimClient) {
    let leader = zk.leader();
    let on = |leads: bool| {
        std::iter::repeat_with(|| zk.connect())
            .take(100)
            .find(|c| (zk.server_of(c) == leader) == leads)
            .expect("a session on that server in 100 tries")
    };
    (on(false), on(true))
}

/// Of 40 nodes a writer on a follower created, how many a reader on the leader missed right
/// after the create was acknowledged; and how many leader lags fired.
fn misses(read: Read, lag: bool) -> (usize, u64) {
    let (missed, summary) = three_servers(7).run(|ctx| async move {
        let (writer, reader) = writer_and_reader(&ctx.zk);
        if lag {
            ctx.zk.inject(Fault::LeaderLag {
                duration: Duration::from_secs(60),
            });
        }
        let mut missed = 0;
        for i in 0..40 {
            let path = format!("/n{i}");
            writer
                .create(&path, b"", &Default::default())
                .await
                .unwrap();
            missed += usize::from(!exists_after(&reader, &path, read).await);
        }
        // The lagging leader's own clients still read their own writes.
        reader
            .create("/own", b"", &Default::default())
            .await
            .unwrap();
        assert!(reader.exists("/own").await.unwrap().is_some());
        missed
    });
    (missed, summary.fault_count(FaultKind::LeaderLag))
}

#[test]
fn zookeepers_sync_on_a_lagging_leader_misses_acknowledged_writes() {
    let (missed, lags) = misses(Read::ZooKeeperSync, true);
    assert_eq!(lags, 1);
    assert!(missed > 20, "only {missed} of 40 missed");
    // Without the lag the simulated leader has applied all it committed.
    assert_eq!(misses(Read::ZooKeeperSync, false), (0, 0));
}

#[test]
fn avouts_sync_orders_a_read_on_a_lagging_leader() {
    assert_eq!(misses(Read::AvoutSync, true), (0, 1));
}

#[test]
fn the_lag_ends_and_the_leaders_clients_read_the_committed_state() {
    let (seen, summary) = three_servers(8).run(|ctx| async move {
        let (writer, reader) = writer_and_reader(&ctx.zk);
        ctx.zk.inject(Fault::LeaderLag {
            duration: Duration::from_millis(500),
        });
        writer
            .create("/late", b"", &Default::default())
            .await
            .unwrap();
        let during = exists_after(&reader, "/late", Read::ZooKeeperSync).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let after = exists_after(&reader, "/late", Read::ZooKeeperSync).await;
        (during, after)
    });
    assert_eq!(seen, (false, true));
    assert_eq!(summary.fault_count(FaultKind::LeaderLag), 1);
}
