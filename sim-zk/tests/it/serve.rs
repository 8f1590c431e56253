//! A service started inside a running madsim simulation (`SimZk::start`), and what the drop-in
//! `zookeeper-client` needs of it: a detached session taken up again, a session given up, a
//! connection cut after a notification (`--cfg madsim` only).
//!
//! `RUSTFLAGS="--cfg madsim" cargo test -p avout-sim-zk --test it serve`

use std::time::Duration;

use avout::{Coordination, CreateMode, Error, EventKind, SessionState};
use avout_sim_zk::{SimConfig, SimZk};

/// Runs `body` in a fresh madsim simulation seeded with `seed`, on a started service.
fn simulate<T, F: std::future::Future<Output = T>>(seed: u64, body: impl FnOnce(SimZk) -> F) -> T {
    let rt = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    rt.block_on(async move {
        let zk = SimZk::start(SimConfig {
            seed,
            ..SimConfig::default()
        });
        body(zk).await
    })
}

#[test]
fn a_detached_session_is_taken_up_again_until_it_expires() {
    simulate(1, |zk| async move {
        let observer = zk.connect();
        let held = zk.connect();
        held.create("/e", b"", &CreateMode::Ephemeral.into())
            .await
            .unwrap();
        let id = held.session().id;
        assert_eq!(
            zk.resume(id).unwrap_err(),
            Error::SessionMoved,
            "a live handle holds it"
        );
        held.detach();
        tokio::time::sleep(Duration::from_secs(5)).await;
        let resumed = zk.resume(id).expect("within its timeout");
        assert_eq!(resumed.session().id, id);
        assert_eq!(resumed.session_state(), SessionState::Connected);
        assert!(
            observer.exists("/e").await.unwrap().is_some(),
            "its ephemeral stayed"
        );
        resumed.set_data("/e", b"again", None).await.unwrap();
        resumed.detach();
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert!(
            observer.exists("/e").await.unwrap().is_none(),
            "expired once silent"
        );
        assert_eq!(zk.resume(id).unwrap_err(), Error::SessionExpired);
    });
}

#[test]
fn a_session_given_up_ends_at_once_here_and_after_its_timeout_there() {
    simulate(2, |zk| async move {
        let observer = zk.connect();
        let client = zk.connect();
        client
            .create("/e", b"", &CreateMode::Ephemeral.into())
            .await
            .unwrap();
        let (_, watch) = client.exists_and_watch("/e").await.unwrap();
        zk.give_up(client.index());
        assert_eq!(client.session_state(), SessionState::Expired);
        let ended = watch.await;
        assert_eq!(
            (ended.kind, ended.state),
            (EventKind::Session, SessionState::Expired)
        );
        assert_eq!(client.exists("/").await.unwrap_err(), Error::SessionExpired);
        assert!(
            observer.exists("/e").await.unwrap().is_some(),
            "the service has not noticed yet"
        );
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert!(
            observer.exists("/e").await.unwrap().is_none(),
            "and expires it, silent"
        );
    });
}

#[test]
fn a_connection_cut_after_a_notification_reports_what_it_missed() {
    simulate(3, |zk| async move {
        let writer = zk.connect();
        let reader = zk.connect();
        for p in ["/a", "/b"] {
            writer.create(p, b"0", &Default::default()).await.unwrap();
        }
        let (_, _, a) = reader.get_and_watch_data("/a").await.unwrap();
        let (_, _, b) = reader.get_and_watch_data("/b").await.unwrap();
        let mut states = reader.session_states();
        zk.cut_after_event(reader.index());
        writer
            .multi(&[
                avout::Op::set_data("/a", b"1".to_vec(), None),
                avout::Op::set_data("/b", b"1".to_vec(), None),
            ])
            .await
            .unwrap();
        assert_eq!(a.await.kind, EventKind::NodeDataChanged);
        assert_eq!(states.next().await, Some(SessionState::Disconnected));
        assert_eq!(states.next().await, Some(SessionState::Connected));
        assert_eq!(
            b.await.kind,
            EventKind::NodeDataChanged,
            "held across the cut, then delivered"
        );
    });
}

#[test]
fn a_started_service_replays_from_its_seed() {
    let run = |seed| {
        simulate(seed, |zk| async move {
            let clients: Vec<_> = (0..3).map(|_| zk.connect()).collect();
            let creates = clients
                .iter()
                .map(|c| c.create("/n-", b"", &CreateMode::PersistentSequential.into()));
            let paths = futures::future::join_all(creates).await;
            let mut out: Vec<String> = paths.into_iter().map(|p| p.unwrap().0).collect();
            out.push(format!("{:#x}", zk.log_hash()));
            out
        })
    };
    let first = run(9);
    assert_eq!(first, run(9), "one seed, one run");
    assert_ne!(first, run(10), "another seed draws other latencies");
}
