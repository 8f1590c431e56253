//! Simulated clients through the `Coordination` trait.

use std::time::Duration;

use avout::{Coordination, CoordinationExt, CreateMode, Error, EventKind, SessionState};
use avout_sim_zk::{Sim, SimCtx};
use futures::FutureExt;

/// A simulation of `clients` clients from `seed`, no faults.
fn sim(seed: u64, clients: usize) -> Sim {
    Sim::builder().seed(seed).clients(clients).build()
}

#[test]
fn operations_work_through_the_trait() {
    let (_, summary) = sim(11, 2).run(|ctx| async move {
        let (a, b) = (&ctx.clients[0], &ctx.clients[1]);
        a.ensure_path("/app/config").await.unwrap();
        let (path, stat) = a
            .create("/app/config/x", b"1", &Default::default())
            .await
            .unwrap();
        assert_eq!(path, "/app/config/x");
        assert_eq!(stat.version, 0);
        let (data, _) = b.get_data("/app/config/x").await.unwrap();
        assert_eq!(data, b"1");
        for name in ["c", "a", "b"] {
            a.create(&format!("/app/{name}"), b"", &Default::default())
                .await
                .unwrap();
        }
        assert_eq!(
            b.get_children("/app").await.unwrap().0,
            ["a", "b", "c", "config"],
            "children come back sorted"
        );
        let stat = b.set_data("/app/config/x", b"2", Some(0)).await.unwrap();
        assert_eq!(stat.version, 1);
        assert!(matches!(
            a.set_data("/app/config/x", b"3", Some(0)).await,
            Err(Error::BadVersion { .. })
        ));
        assert!(matches!(
            a.create("bad", b"", &Default::default()).await,
            Err(Error::InvalidPath { .. })
        ));
        assert!(matches!(
            a.create(
                "/big",
                &vec![0; avout::MAX_DATA_LEN + 1],
                &Default::default()
            )
            .await,
            Err(Error::DataTooLarge { .. })
        ));
        a.delete_recursive("/app").await.unwrap();
        assert!(b.exists("/app").await.unwrap().is_none());
        let (acl, _) = a.get_acl("/").await.unwrap();
        assert_eq!(acl, avout::Acl::open_unsafe());
        a.sync("/").await.unwrap();
    });
    assert!(summary.log_len > 20);
    assert!(summary.virtual_time > Duration::ZERO);
}

#[test]
fn requests_are_pipelined_in_call_order() {
    sim(5, 1).run(|ctx| async move {
        let c = &ctx.clients[0];
        // Submitted at the call: none awaited before the last is made.
        let create = c.create("/p", b"a", &Default::default());
        let set = c.set_data("/p", b"b", Some(0));
        let read = c.get_data("/p");
        let delete = c.delete("/p", Some(1));
        let gone = c.exists("/p");
        // Awaited in reverse: the order of application is still the order of the calls.
        assert_eq!(gone.await.unwrap(), None);
        delete.await.unwrap();
        assert_eq!(read.await.unwrap().0, b"b");
        set.await.unwrap();
        create.await.unwrap();
    });
}

#[test]
fn dropped_futures_still_apply() {
    sim(5, 1).run(|ctx| async move {
        let c = &ctx.clients[0];
        drop(c.create("/dropped", b"", &Default::default()));
        assert!(c.exists("/dropped").await.unwrap().is_some());
    });
}

#[test]
fn a_watch_event_arrives_before_any_later_reply() {
    sim(9, 2).run(|ctx| async move {
        let (a, b) = (&ctx.clients[0], &ctx.clients[1]);
        a.create("/w", b"0", &Default::default()).await.unwrap();
        let (_, _, data_watch) = a.get_and_watch_data("/w").await.unwrap();
        let (_, _, child_watch) = a.get_and_watch_children("/").await.unwrap();
        let (missing, created_watch) = a.exists_and_watch("/later").await.unwrap();
        assert!(missing.is_none());
        b.set_data("/w", b"1", None).await.unwrap();
        b.create("/later", b"", &Default::default()).await.unwrap();
        // a's next reply reflects both changes, so both events are already there.
        let (data, _) = a.get_data("/w").await.unwrap();
        assert_eq!(data, b"1");
        let event = data_watch.now_or_never().expect("event before the reply");
        assert_eq!(event.kind, EventKind::NodeDataChanged);
        assert_eq!(event.path, "/w");
        let event = created_watch
            .now_or_never()
            .expect("event before the reply");
        assert_eq!(event.kind, EventKind::NodeCreated);
        let event = child_watch.now_or_never().expect("event before the reply");
        assert_eq!(event.kind, EventKind::NodeChildrenChanged);
        assert_eq!(event.path, "/");
    });
}

#[test]
fn every_watch_of_a_path_fires_and_only_once() {
    sim(3, 2).run(|ctx| async move {
        let (a, b) = (&ctx.clients[0], &ctx.clients[1]);
        a.create("/n", b"", &Default::default()).await.unwrap();
        let (_, _, w1) = a.get_and_watch_data("/n").await.unwrap();
        let (_, w2) = a.exists_and_watch("/n").await.unwrap();
        let (_, _, w3) = a.get_and_watch_children("/n").await.unwrap();
        b.delete("/n", None).await.unwrap();
        for w in [w1, w2, w3] {
            assert_eq!(w.await.kind, EventKind::NodeDeleted);
        }
        // Re-created: nothing is armed any more, so a new watch is needed.
        let (_, w4) = a.exists_and_watch("/n").await.unwrap();
        b.create("/n", b"", &Default::default()).await.unwrap();
        assert_eq!(w4.await.kind, EventKind::NodeCreated);
    });
}

#[test]
fn close_deletes_ephemerals_and_ends_the_session() {
    sim(2, 2).run(|ctx| async move {
        let (a, b) = (&ctx.clients[0], &ctx.clients[1]);
        let mut states = a.session_states();
        a.create("/eph", b"", &CreateMode::Ephemeral.into())
            .await
            .unwrap();
        let (_, watch) = b.exists_and_watch("/eph").await.unwrap();
        let (_, own_watch) = a.exists_and_watch("/other").await.unwrap();
        a.close().await.unwrap();
        assert_eq!(watch.await.kind, EventKind::NodeDeleted);
        assert!(b.exists("/eph").await.unwrap().is_none());
        assert_eq!(states.next().await, Some(SessionState::Closed));
        let ended = own_watch.await;
        assert_eq!(ended.kind, EventKind::Session);
        assert_eq!(ended.state, SessionState::Closed);
        assert_eq!(a.exists("/").await, Err(Error::Closed));
        a.close().await.unwrap();
    });
}

#[test]
fn virtual_time_costs_no_wall_time() {
    let wall = std::time::Instant::now();
    let (elapsed, summary) = Sim::builder()
        .clients(1)
        .build()
        .run(|ctx: SimCtx| async move {
            let start = tokio::time::Instant::now();
            tokio::time::sleep(Duration::from_secs(3600)).await;
            ctx.clients[0].exists("/").await.unwrap();
            start.elapsed()
        });
    assert!(elapsed >= Duration::from_secs(3600));
    assert!(summary.virtual_time >= Duration::from_secs(3600));
    assert!(wall.elapsed() < Duration::from_secs(5));
}

#[test]
fn latencies_stay_within_bounds() {
    let (rtt, _) = Sim::builder()
        .latency(Duration::from_millis(5), Duration::from_millis(6))
        .build()
        .run(|ctx| async move {
            let start = tokio::time::Instant::now();
            ctx.clients[0].exists("/").await.unwrap();
            start.elapsed()
        });
    // Two legs of 5–6 ms; tokio's timer rounds up to the millisecond.
    assert!(
        rtt >= Duration::from_millis(10) && rtt <= Duration::from_millis(14),
        "{rtt:?}"
    );
}

#[test]
#[should_panic(expected = "still running")]
fn a_stuck_workload_hits_the_time_limit() {
    Sim::builder()
        .clients(1)
        .time_limit(Duration::from_secs(60))
        .build()
        .run(|ctx| async move {
            let (_, watch) = ctx.clients[0].exists_and_watch("/never").await.unwrap();
            watch.await
        });
}

#[test]
fn authenticated_sessions_pass_acls() {
    sim(4, 2).run(|ctx| async move {
        let (a, b) = (&ctx.clients[0], &ctx.clients[1]);
        a.add_auth("digest", b"u:p").await.unwrap();
        b.add_auth("digest", b"u:p").await.unwrap();
        a.create(
            "/mine",
            b"s",
            &avout::CreateOptions::default().with_acl(avout::Acl::creator_all()),
        )
        .await
        .unwrap();
        assert_eq!(b.get_data("/mine").await.unwrap().0, b"s");
    });
}

#[test]
fn dropping_the_last_handle_closes_the_session() {
    sim(8, 0).run(|ctx| async move {
        let watcher = ctx.zk.connect();
        let owner = ctx.zk.connect();
        let clone = owner.clone();
        owner
            .create("/mine", b"", &CreateMode::Ephemeral.into())
            .await
            .unwrap();
        let (_, watch) = watcher.exists_and_watch("/mine").await.unwrap();
        drop(owner);
        // A clone still holds the session.
        assert!(watcher.exists("/mine").await.unwrap().is_some());
        drop(clone);
        assert_eq!(watch.await.kind, EventKind::NodeDeleted);
    });
}
