//! The kit's own tests: real servers started, faulted and cleaned up.

use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::ensemble::lists_session;
use super::process::process_state;
use super::*;

/// Whether any process (zombies included) has this pid.
fn pid_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn parses_modes_and_session_ids() {
    let srvr =
        "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n";
    assert_eq!(ServerMode::parse(srvr), Some(ServerMode::Follower));
    assert_eq!(
        ServerMode::parse("This ZooKeeper instance is not currently serving requests\n"),
        None
    );
    let cons = " /127.0.0.1:4242[1](queued=0,recved=3,sent=3,sid=0x10000abc,lop=PING)\n";
    assert!(lists_session(cons, "sid=0x10000abc"));
    assert!(!lists_session(cons, "sid=0x10000ab"));
    assert_eq!(
        format!("sid=0x{:x}", -1_i64 as u64),
        "sid=0xffffffffffffffff"
    );
}

#[test]
fn standalone_starts_serves_kills_restarts_and_stops() {
    let server = ZkServer::builder()
        .force_sync(false)
        .start()
        .expect("server starts");
    assert_eq!(server.mode(), Some(ServerMode::Standalone));
    assert_eq!(
        server.connect_string(),
        format!("127.0.0.1:{}", server.port())
    );
    assert!(server.is_running());

    let pid = server.pid().expect("running");
    server.kill();
    assert!(!server.is_running());
    assert!(!pid_exists(pid), "killed process {pid} is reaped");
    assert_eq!(server.mode(), None);
    assert!(matches!(
        server.pause(),
        Err(TestkitError::NotRunning { .. })
    ));

    server.restart().expect("restarts");
    assert_eq!(server.mode(), Some(ServerMode::Standalone));
    assert_ne!(server.pid(), Some(pid));

    let (dir, pid) = (server.dir().to_owned(), server.pid().expect("running"));
    server.stop().expect("stops");
    assert!(!dir.exists());
    assert!(!pid_exists(pid));
}

#[test]
fn pause_freezes_and_resume_continues() {
    let server = ZkServer::builder()
        .force_sync(false)
        .start()
        .expect("server starts");
    server.pause().expect("pauses");
    assert!(server.is_paused() && server.is_running());
    assert_eq!(process_state(server.pid().expect("running")), Some('T'));
    assert_eq!(server.mode(), None, "a frozen server answers nothing");
    server.resume().expect("resumes");
    assert_eq!(server.mode(), Some(ServerMode::Standalone));
}

#[test]
fn drop_kills_the_process_and_removes_the_directory_even_when_paused() {
    let server = ZkServer::builder()
        .force_sync(false)
        .start()
        .expect("server starts");
    let (dir, pid) = (server.dir().to_owned(), server.pid().expect("running"));
    assert!(dir.join("zoo.cfg").exists());
    server.pause().expect("pauses");
    drop(server);
    assert!(!pid_exists(pid), "process {pid} is gone");
    assert!(!dir.exists(), "{} is removed", dir.display());
}

#[test]
fn drop_cleans_up_while_a_test_panics() {
    let mut seen = None;
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let server = ZkServer::builder()
            .force_sync(false)
            .start()
            .expect("server starts");
        seen = Some((server.dir().to_owned(), server.pid().expect("running")));
        panic!("the test fails");
    }));
    assert!(unwound.is_err());
    let (dir, pid) = seen.expect("server started");
    assert!(!pid_exists(pid));
    assert!(!dir.exists());
}

#[test]
fn a_taken_port_is_reported() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binds");
    let port = listener.local_addr().expect("bound").port();
    let err = ZkServer::builder()
        .port(port)
        .start()
        .expect_err("port is taken");
    assert!(
        matches!(err, TestkitError::PortInUse { port: p } if p == port),
        "{err}"
    );
}

#[test]
fn detached_servers_outlive_their_handle_until_stopped() {
    let base = TempDir::new().expect("temp dir");
    let server = ZkServer::builder()
        .force_sync(false)
        .base_dir(base.path())
        .own_process_group(true)
        .start()
        .expect("server starts");
    let detached = server.detach();
    assert!(detached.dir.starts_with(base.path()));
    let [process] = detached.processes.as_slice() else {
        panic!("one process")
    };
    assert!(process.is_alive());
    assert_eq!(process.mode(), Some(ServerMode::Standalone));
    // The record survives a round trip through a state file.
    let json = serde_json::to_string(&detached).expect("serializes");
    let back: DetachedZk = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(back, detached);

    // The test process is the parent, so the killed server stays a zombie until reaped;
    // `is_alive` counts zombies as gone, which is what `stop` waits for.
    assert_eq!(back.stop().expect("stops"), vec![process.pid]);
    assert!(!process.is_alive());
    assert!(!detached.dir.exists());
}

#[test]
fn ensemble_reaches_quorum_and_survives_a_killed_member() {
    let zk = ZkEnsemble::builder()
        .size(3)
        .force_sync(false)
        .start()
        .expect("ensemble starts");
    assert_eq!(zk.connect_string().split(',').count(), 3);
    let leader = zk.leader().expect("a leader");
    zk.kill(leader);
    zk.wait_for_quorum().expect("two of three still serve");
    assert_ne!(zk.leader(), Some(leader));
    zk.restart(leader).expect("rejoins");
    assert_eq!(zk.member(leader).mode(), Some(ServerMode::Follower));
    let dir = zk.dir().to_owned();
    let pids: Vec<u32> = zk.members().iter().filter_map(ZkMember::pid).collect();
    drop(zk);
    assert!(!dir.exists());
    assert!(pids.iter().all(|&pid| !pid_exists(pid)));
}

/// Polls `done` every 100 ms for up to 30 s.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "not within 30 s: {what}");
        thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_partitioned_leader_steps_down_the_majority_elects_another_and_heal_rejoins_it() {
    let zk = ZkEnsemble::builder()
        .partitionable(true)
        .force_sync(false)
        .start()
        .expect("ensemble starts");
    let old = zk.leader().expect("a leader");
    let others: Vec<usize> = (0..3).filter(|&i| i != old).collect();
    zk.partition(&[old]).expect("partitionable");
    assert!(zk.is_cut(old, others[0]) && zk.is_cut(others[1], old));
    assert!(!zk.is_cut(others[0], others[1]));
    eventually("the majority elects another leader", || {
        others
            .iter()
            .any(|&i| zk.member(i).mode() == Some(ServerMode::Leader))
    });
    eventually("the isolated leader stops serving", || {
        zk.member(old).mode().is_none()
    });
    zk.heal();
    assert!(!zk.is_cut(old, others[0]));
    eventually("the old leader rejoins as a follower", || {
        zk.member(old).mode() == Some(ServerMode::Follower)
    });
    zk.wait_for_quorum().expect("all three serve");
}

/// Clients that came in through the relays lose a member whose clients are cut, and reach it
/// again after heal; the member stays in the quorum all along.
#[test]
fn clients_cut_off_from_a_member_cannot_reach_it_until_heal() {
    let zk = ZkEnsemble::builder()
        .partitionable(true)
        .force_sync(false)
        .start()
        .expect("ensemble starts");
    let relays: Vec<u16> = zk
        .connect_string()
        .split(',')
        .map(|a| a.rsplit(':').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(relays.len(), 3);
    assert!(
        relays
            .iter()
            .all(|p| zk.members().iter().all(|m| m.port() != *p))
    );
    let srvr = |port: u16| four_letter_word(port, "srvr").unwrap_or_default();
    assert!(srvr(relays[1]).contains("Mode:"), "through the relay");
    zk.cut_clients(1).expect("partitionable");
    assert!(
        !srvr(relays[1]).contains("Mode:"),
        "a cut relay carries nothing"
    );
    assert!(srvr(relays[0]).contains("Mode:"));
    assert!(
        zk.member(1).mode().is_some(),
        "the member still serves the quorum"
    );
    zk.heal();
    assert!(srvr(relays[1]).contains("Mode:"));
}

#[test]
fn an_ensemble_not_started_partitionable_refuses_a_partition() {
    let zk = ZkEnsemble::builder()
        .force_sync(false)
        .start()
        .expect("ensemble starts");
    assert!(matches!(
        zk.partition(&[0]),
        Err(TestkitError::NotPartitionable)
    ));
    assert!(matches!(
        zk.cut_clients(0),
        Err(TestkitError::NotPartitionable)
    ));
}

/// The way integration tests find "the member the client is connected to": after that
/// member is killed, the session moves to another one, and `member_of_session` follows.
#[cfg(feature = "zookeeper")]
#[test]
fn member_of_session_follows_a_failover() {
    let zk = ZkEnsemble::builder()
        .size(3)
        .force_sync(false)
        .start()
        .expect("ensemble starts");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let client = runtime
        .block_on(
            zookeeper_client::Client::connector()
                .with_session_timeout(Duration::from_secs(10))
                .connect(&zk.connect_string()),
        )
        .expect("client connects");
    let session = client.session_id().0;
    let first = zk
        .member_of_session(session)
        .expect("one member serves the session");
    assert_eq!(zk.member_of_session(session ^ 1), None);

    zk.kill(first);
    let deadline = Instant::now() + Duration::from_secs(20);
    let second = loop {
        // A request makes the client notice the dead connection and move on at once.
        let _ = runtime.block_on(client.check_stat("/"));
        if let Some(i) = zk.member_of_session(session) {
            break i;
        }
        assert!(Instant::now() < deadline, "the session never reappeared");
        thread::sleep(POLL);
    };
    assert_ne!(second, first);
}

#[test]
fn members_restarted_from_threads_that_end_keep_running() {
    // The nemesis restarts members from short-lived blocking threads; a member must not die
    // with the thread that asked for it (the test kit ties servers to the process only).
    let zk = std::sync::Arc::new(
        ZkEnsemble::builder()
            .size(3)
            .start()
            .expect("ensemble starts"),
    );
    for i in 0..3 {
        let e = zk.clone();
        thread::spawn(move || {
            e.kill(i);
            e.restart(i)
        })
        .join()
        .unwrap()
        .unwrap_or_else(|err| panic!("member {i} did not come back: {err}"));
    }
    thread::sleep(Duration::from_secs(4));
    for (i, m) in zk.members().iter().enumerate() {
        assert!(m.is_running(), "member {i} died after its restart");
    }
    zk.wait_for_quorum().expect("all three serve");
}
