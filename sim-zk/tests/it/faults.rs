//! Each fault kind: that it happens, and what the client observes.

use std::time::Duration;

use avout::{Coordination, CreateMode, Error, EventKind, SessionState};
use avout_sim_zk::{Fault, FaultKind, FaultRates, Sim, When};

const TIMEOUT: Duration = Duration::from_secs(2);

fn sim(clients: usize) -> avout_sim_zk::Builder {
    Sim::builder()
        .seed_from_env(21)
        .clients(clients)
        .session_timeout(TIMEOUT)
}

#[test]
fn a_lost_request_is_not_applied() {
    let (_, summary) = sim(1)
        .fault(When::Step(1), Fault::RequestLost { client: Some(0) })
        .build()
        .run(|ctx| async move {
            let c = &ctx.clients[0];
            let lost = c.create("/lost", b"", &Default::default()).await;
            assert_eq!(lost, Err(Error::ConnectionLoss));
            assert!(c.exists("/lost").await.unwrap().is_none());
        });
    assert_eq!(summary.fault_count(FaultKind::RequestLost), 1);
}

#[test]
fn a_lost_reply_leaves_the_change_in_place() {
    let (_, summary) = sim(1)
        .fault(When::Step(2), Fault::ReplyLost { client: None })
        .build()
        .run(|ctx| async move {
            let c = &ctx.clients[0];
            c.create("/q", b"", &Default::default()).await.unwrap();
            let lost = c
                .create("/q/job-", b"", &CreateMode::PersistentSequential.into())
                .await;
            assert_eq!(lost, Err(Error::ConnectionLoss));
            // The create happened: a blind retry would make a second job.
            assert_eq!(c.get_children("/q").await.unwrap().0, ["job-0000000000"]);
        });
    assert_eq!(summary.fault_count(FaultKind::ReplyLost), 1);
}

/// A request is lost only with its connection, as on TCP: what was pipelined behind it fails
/// too and is never applied, so a read sent behind a lost `sync` cannot answer from a state
/// the `sync` was meant to rule out. The session survives and the next call works.
#[test]
fn a_lost_request_takes_its_connection_and_what_was_sent_behind_it() {
    let (_, summary) = sim(1)
        .fault(When::Step(2), Fault::RequestLost { client: Some(0) })
        .build()
        .run(|ctx| async move {
            let c = &ctx.clients[0];
            let mut states = c.session_states();
            c.create("/a", b"", &Default::default()).await.unwrap();
            let lost = c.sync("/a");
            let behind = c.create("/a/behind", b"", &Default::default());
            assert_eq!(lost.await, Err(Error::ConnectionLoss));
            assert_eq!(behind.await, Err(Error::ConnectionLoss));
            assert_eq!(states.next().await, Some(SessionState::Disconnected));
            assert!(
                c.exists("/a/behind").await.unwrap().is_none(),
                "never applied"
            );
            assert_eq!(states.next().await, Some(SessionState::Connected));
        });
    assert_eq!(summary.fault_count(FaultKind::RequestLost), 1);
}

/// A reply is lost with its connection: the request was applied, and the calls behind it on
/// that connection fail (and were not applied).
#[test]
fn a_lost_reply_takes_its_connection_and_what_was_sent_behind_it() {
    sim(1)
        .fault(When::Step(1), Fault::ReplyLost { client: Some(0) })
        .build()
        .run(|ctx| async move {
            let c = &ctx.clients[0];
            let applied = c.create("/x", b"", &Default::default());
            let behind = c.create("/y", b"", &Default::default());
            assert_eq!(applied.await, Err(Error::ConnectionLoss));
            assert_eq!(behind.await, Err(Error::ConnectionLoss));
            assert!(c.exists("/x").await.unwrap().is_some(), "applied");
            assert!(c.exists("/y").await.unwrap().is_none(), "never applied");
        });
}

#[test]
fn a_short_disconnect_fails_in_flight_requests_and_keeps_the_session() {
    let (_, summary) = sim(1).build().run(|ctx| async move {
        let c = &ctx.clients[0];
        let mut states = c.session_states();
        c.create("/eph", b"", &CreateMode::Ephemeral.into())
            .await
            .unwrap();
        let (_, watch) = c.exists_and_watch("/eph").await.unwrap();
        let in_flight = c.set_data("/eph", b"x", None);
        ctx.zk.inject(Fault::Disconnect {
            client: 0,
            duration: TIMEOUT / 2,
        });
        assert_eq!(in_flight.await, Err(Error::ConnectionLoss));
        assert_eq!(states.next().await, Some(SessionState::Disconnected));
        // Made while disconnected: sent on reconnect.
        let start = tokio::time::Instant::now();
        c.set_data("/eph", b"y", None).await.unwrap();
        assert!(start.elapsed() >= TIMEOUT / 2 - Duration::from_millis(5));
        assert_eq!(states.next().await, Some(SessionState::Connected));
        // Same session, ephemeral still there, and the watch survived the disconnect.
        assert!(c.exists("/eph").await.unwrap().unwrap().is_ephemeral());
        assert_eq!(watch.await.kind, EventKind::NodeDataChanged);
    });
    assert_eq!(summary.fault_count(FaultKind::Disconnect), 1);
}

#[test]
fn a_disconnect_longer_than_the_session_ends_in_expiry() {
    sim(2).build().run(|ctx| async move {
        let (a, b) = (&ctx.clients[0], &ctx.clients[1]);
        let mut states = a.session_states();
        a.create("/eph", b"", &CreateMode::Ephemeral.into())
            .await
            .unwrap();
        ctx.zk.inject(Fault::Disconnect {
            client: 0,
            duration: TIMEOUT * 2,
        });
        tokio::time::sleep(TIMEOUT + Duration::from_millis(100)).await;
        assert!(
            b.exists("/eph").await.unwrap().is_none(),
            "expired meanwhile"
        );
        assert_eq!(a.exists("/").await, Err(Error::SessionExpired));
        assert_eq!(states.next().await, Some(SessionState::Disconnected));
        assert_eq!(states.next().await, Some(SessionState::Expired));
    });
}

#[test]
fn an_expired_session_loses_its_ephemerals_and_is_told() {
    let (_, summary) = sim(2).build().run(|ctx| async move {
        let (a, b) = (&ctx.clients[0], &ctx.clients[1]);
        let mut states = a.session_states();
        a.create("/lock", b"", &CreateMode::Ephemeral.into())
            .await
            .unwrap();
        let (_, own_watch) = a.exists_and_watch("/lock").await.unwrap();
        let (_, other_watch) = b.exists_and_watch("/lock").await.unwrap();
        ctx.zk.expire_session(a.session().id);
        assert_eq!(other_watch.await.kind, EventKind::NodeDeleted);
        assert!(b.exists("/lock").await.unwrap().is_none());
        let ended = own_watch.await;
        assert_eq!(
            (ended.kind, ended.state),
            (EventKind::Session, SessionState::Expired)
        );
        assert_eq!(states.next().await, Some(SessionState::Disconnected));
        assert_eq!(states.next().await, Some(SessionState::Expired));
        assert_eq!(
            a.create("/x", b"", &Default::default()).await,
            Err(Error::SessionExpired)
        );
    });
    assert_eq!(summary.fault_count(FaultKind::SessionExpiry), 1);
}

#[test]
fn a_client_paused_past_its_session_wakes_to_find_it_gone() {
    let (_, summary) = sim(2).build().run(|ctx| async move {
        let (a, b) = (&ctx.clients[0], &ctx.clients[1]);
        let mut states = a.session_states();
        a.create("/leader", b"a", &CreateMode::Ephemeral.into())
            .await
            .unwrap();
        ctx.zk.inject(Fault::Pause {
            client: 0,
            duration: TIMEOUT * 2,
        });
        // While a is frozen, its session times out and its ephemeral goes.
        tokio::time::sleep(TIMEOUT + Duration::from_millis(100)).await;
        assert!(b.exists("/leader").await.unwrap().is_none());
        b.create("/leader", b"b", &CreateMode::Ephemeral.into())
            .await
            .unwrap();
        // a still believes it leads; its next call waits for it to wake, then fails.
        assert_eq!(a.get_data("/leader").await, Err(Error::SessionExpired));
        assert_eq!(states.next().await, Some(SessionState::Disconnected));
        assert_eq!(states.next().await, Some(SessionState::Expired));
    });
    assert_eq!(summary.fault_count(FaultKind::Pause), 1);
}

#[test]
fn a_short_pause_only_delays() {
    sim(1).build().run(|ctx| async move {
        let c = &ctx.clients[0];
        let states = c.session_states();
        ctx.zk.inject(Fault::Pause {
            client: 0,
            duration: TIMEOUT / 4,
        });
        let start = tokio::time::Instant::now();
        c.create("/p", b"", &Default::default()).await.unwrap();
        assert!(start.elapsed() >= TIMEOUT / 4);
        assert_eq!(states.current(), SessionState::Connected);
    });
}

#[test]
fn stale_reads_are_monotonic_and_sync_catches_up() {
    let (_, summary) =
        sim(2)
            .follower_lag(Duration::from_millis(200))
            .build()
            .run(|ctx| async move {
                let (writer, reader) = (&ctx.clients[0], &ctx.clients[1]);
                writer
                    .create("/v", b"0", &Default::default())
                    .await
                    .unwrap();
                ctx.zk.inject(Fault::StaleReads {
                    client: 1,
                    duration: Duration::from_secs(60),
                });
                writer.set_data("/v", b"1", None).await.unwrap();
                // The follower is 200 ms behind: the reader still sees the old value.
                assert_eq!(reader.get_data("/v").await.unwrap().0, b"0");
                let mut seen = 0;
                for _ in 0..50 {
                    let v: u8 = reader.get_data("/v").await.unwrap().0[0] - b'0';
                    assert!(v >= seen, "reads went back in time");
                    seen = v;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                assert_eq!(seen, 1, "the follower caught up by itself");
                writer.set_data("/v", b"2", None).await.unwrap();
                reader.sync("/").await.unwrap();
                assert_eq!(reader.get_data("/v").await.unwrap().0, b"2");
                // Its own writes are visible at once.
                reader.set_data("/v", b"3", None).await.unwrap();
                assert_eq!(reader.get_data("/v").await.unwrap().0, b"3");
            });
    assert_eq!(summary.fault_count(FaultKind::StaleReads), 1);
}

#[test]
fn an_outage_disconnects_everyone_and_sessions_survive() {
    let (_, summary) = sim(2).build().run(|ctx| async move {
        let (a, b) = (&ctx.clients[0], &ctx.clients[1]);
        let mut states = [a.session_states(), b.session_states()];
        a.create("/eph", b"", &CreateMode::Ephemeral.into())
            .await
            .unwrap();
        let in_flight = b.exists("/eph");
        ctx.zk.inject(Fault::Outage {
            duration: TIMEOUT * 3,
        });
        assert_eq!(in_flight.await, Err(Error::ConnectionLoss));
        // Longer than the session timeout, yet the sessions live on.
        assert!(a.exists("/eph").await.unwrap().is_some());
        for s in &mut states {
            assert_eq!(s.next().await, Some(SessionState::Disconnected));
            assert_eq!(s.next().await, Some(SessionState::Connected));
        }
    });
    assert_eq!(summary.fault_count(FaultKind::Outage), 1);
}

#[test]
fn drawn_faults_cover_every_kind() {
    let mut seen = std::collections::BTreeMap::new();
    for seed in 0..40 {
        let params = avout_sim_zk::demo::DemoParams {
            rates: FaultRates {
                request_lost: 0.02,
                reply_lost: 0.02,
                disconnect: 0.01,
                expire: 0.005,
                pause: 0.005,
                stale_reads: 0.01,
                outage: 0.003,
                partition: 0.005,
                leader_election: 0.003,
                session_moved: 0.01,
                client_freeze: 0.005,
                slow_disk: 0.005,
                leader_lag: 0.005,
            },
            ..Default::default()
        };
        let (_, summary) = avout_sim_zk::demo::run_once(seed, &params);
        for (k, n) in summary.faults {
            *seen.entry(k).or_insert(0) += n;
        }
    }
    for kind in FaultKind::ALL {
        assert!(
            seen.get(&kind).copied().unwrap_or(0) > 0,
            "{kind:?} never fired: {seen:?}"
        );
    }
}

#[test]
fn faults_scheduled_at_a_time_or_a_step_fire_then() {
    let at = Duration::from_millis(50);
    let (_, summary) = sim(2)
        .fault(
            When::At(at),
            Fault::Disconnect {
                client: 0,
                duration: TIMEOUT / 4,
            },
        )
        .fault(When::Step(3), Fault::ExpireSession { client: 1 })
        .build()
        .run(|ctx| async move {
            let (a, b) = (&ctx.clients[0], &ctx.clients[1]);
            let mut states = a.session_states();
            let start = tokio::time::Instant::now();
            // Requests 1 and 2.
            b.create("/b", b"", &CreateMode::Ephemeral.into())
                .await
                .unwrap();
            a.create("/a", b"", &Default::default()).await.unwrap();
            // Request 3: b's session is expired just before the service processes it.
            assert_eq!(b.exists("/b").await, Err(Error::SessionExpired));
            assert!(a.exists("/b").await.unwrap().is_none(), "ephemeral gone");
            // The disconnect comes at its time, not before.
            assert_eq!(states.current(), SessionState::Connected);
            assert_eq!(states.next().await, Some(SessionState::Disconnected));
            assert!(start.elapsed() >= at);
            assert_eq!(states.next().await, Some(SessionState::Connected));
            assert!(start.elapsed() >= at + TIMEOUT / 4);
        });
    assert_eq!(summary.fault_count(FaultKind::Disconnect), 1);
    assert_eq!(summary.fault_count(FaultKind::SessionExpiry), 1);
}

/// How long a write on the leader takes, retried across connection loss, after `cuts`
/// (followers cut off from the quorum for 3 s, 5 s, …) on a three-server ensemble; and
/// whether the leader changed.
fn write_after_cuts(cuts: usize) -> (Duration, bool) {
    let (out, _) = sim(0)
        .servers(3)
        .session_timeout(Duration::from_secs(10))
        .build()
        .run(|ctx| async move {
            let leader = ctx.zk.leader();
            // On the leader: a client on a cut-off follower waits for it to notice, quorum
            // or not.
            let c = std::iter::repeat_with(|| ctx.zk.connect())
                .take(50)
                .find(|c| ctx.zk.server_of(c) == leader)
                .expect("a session on the leader in 50 tries");
            c.create("/q", b"0", &Default::default()).await.unwrap();
            let followers = (0..3u8).filter(|&s| s != leader);
            for (k, server) in followers.take(cuts).enumerate() {
                ctx.zk.inject(Fault::Partition {
                    cut: avout_sim_zk::Cut::Server { server },
                    duration: Duration::from_secs(3 + 2 * k as u64),
                });
            }
            let start = tokio::time::Instant::now();
            loop {
                match c.set_data("/q", b"1", None).await {
                    Ok(_) => break,
                    Err(e) if e.is_indeterminate() => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    Err(e) => panic!("a write under a partition failed for good: {e:?}"),
                }
            }
            (start.elapsed(), ctx.zk.leader() != leader)
        });
    out
}

#[test]
fn with_a_majority_cut_off_nothing_commits_until_a_server_is_back() {
    let (took, new_leader) = write_after_cuts(2);
    assert!(
        took >= Duration::from_secs(3),
        "a write committed without a quorum after {took:?}"
    );
    assert!(new_leader, "the leader without a quorum stepped down");
    // One follower cut off leaves a quorum: writes go on.
    let (took, new_leader) = write_after_cuts(1);
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(!new_leader);
}

/// Without a quorum, until the leader notices, reads are still served on the leader and on a
/// cut-off follower (stale there), while a write waits and then fails unapplied.
#[test]
fn without_a_quorum_reads_are_served_until_the_leader_notices() {
    let (_, summary) = sim(0)
        .servers(3)
        .session_timeout(Duration::from_secs(9))
        .build()
        .run(|ctx| async move {
            let leader = ctx.zk.leader();
            let follower = (0..3u8).find(|&s| s != leader).expect("a follower");
            let on = |server: u8| {
                std::iter::repeat_with(|| ctx.zk.connect())
                    .take(100)
                    .find(|c| ctx.zk.server_of(c) == server)
                    .expect("a session on that server in 100 tries")
            };
            let (writer, reader) = (on(leader), on(follower));
            let leader_reader = on(leader);
            writer
                .create("/q", b"0", &Default::default())
                .await
                .unwrap();
            reader.sync("/q").await.unwrap();
            for server in (0..3u8).filter(|&s| s != leader) {
                ctx.zk.inject(Fault::Partition {
                    cut: avout_sim_zk::Cut::Server { server },
                    duration: Duration::from_secs(6),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            let start = tokio::time::Instant::now();
            let write = tokio::spawn({
                let writer = writer.clone();
                async move { writer.set_data("/q", b"1", None).await }
            });
            tokio::time::sleep(Duration::from_millis(200)).await;
            // Reads on both sides of the cut, while the write waits for a quorum.
            let (on_leader, _) = leader_reader.get_data("/q").await.unwrap();
            assert_eq!(on_leader, b"0", "nothing committed without a quorum");
            let (on_follower, _) = reader.get_data("/q").await.unwrap();
            assert_eq!(on_follower, b"0");
            assert!(!write.is_finished(), "a write committed without a quorum");
            let failed = write.await.expect("the write's task");
            assert_eq!(failed, Err(Error::ConnectionLoss));
            // The leader noticed after a third of the session timeout and stepped down.
            let noticed = start.elapsed();
            assert!(noticed >= Duration::from_secs(2), "{noticed:?}");
            assert!(noticed < Duration::from_secs(6), "{noticed:?}");
            let (after, _) = loop {
                match writer.get_data("/q").await {
                    Ok(read) => break read,
                    Err(e) if e.is_indeterminate() => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Err(e) => panic!("{e:?}"),
                }
            };
            assert_eq!(after, b"0", "the write that waited was not applied");
        });
    assert_eq!(summary.fault_count(FaultKind::Partition), 2);
}
