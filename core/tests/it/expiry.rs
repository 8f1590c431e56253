//! A session expiry forced the way it happens in production: the server goes silent (here
//! frozen with SIGSTOP) for longer than the session timeout.
//!
//! # What happens, measured
//!
//! With a 2 s session and a 4 s freeze, the client gives up first: it sees no reply for its
//! connection timeout and reports `Disconnected`, then, having heard nothing for 7/5 of the
//! session timeout (the `zookeeper-client` crate's own rule, after ZOOKEEPER-1751), reports
//! `Expired` — while the server is still frozen. The server's own expiry then races on resume:
//! its session tracker wakes up overdue and expires the session at once, *unless* the bytes the
//! client sent before giving up (pings, reconnect attempts queued in the listen backlog) are
//! read first and touch the session, which then lives for one more session timeout. So the
//! expired session's ephemeral disappears between the resume and about one session timeout
//! after it; for that window a client that has seen `Expired` must not assume its ephemerals
//! are gone. The test therefore asserts the client's view at once and waits, bounded, for the
//! server's.
//!
//! The test kit's forced expiry (`ZkClient::expire_session`) is tested here too: it must end
//! the session at the server before it returns, promptly, for several sessions at once.

use std::time::Duration;

use avout::zk::{ZkClient, ZkConfig};
use avout::{Coordination, CreateMode, Error, EventKind, SessionState, Watch};
use tokio::time::Instant;

use crate::support;

/// The session timeout asked for (the test kit's tickTime of 500 ms allows down to 1 s).
const SESSION: Duration = Duration::from_secs(2);
/// How long the server stays frozen: well past the client's 7/5 × SESSION.
const PAUSE: Duration = Duration::from_secs(4);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_the_server_past_the_session_timeout_expires_the_session() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string()).with_session_timeout(SESSION);
    let client = support::connect(&config).await;
    let sid = client.session().id;
    assert_eq!(
        client.session().timeout,
        SESSION,
        "the server grants the timeout"
    );
    let watch = ephemeral_and_watch(&client, "/paused").await;

    // Record every transition with when it happened, from before the pause.
    let t0 = Instant::now();
    let mut states = client.session_states();
    let recorder = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(s) = states.next().await {
            seen.push((t0.elapsed(), s));
        }
        (seen, states.current())
    });

    tokio::task::block_in_place(|| server.pause()).expect("pause the server");
    tokio::time::sleep(PAUSE).await;
    tokio::task::block_in_place(|| server.resume()).expect("resume the server");
    let resumed = t0.elapsed();

    let (seen, ended) = tokio::time::timeout(Duration::from_secs(20), recorder)
        .await
        .unwrap_or_else(|_| panic!("no terminal session state within 20 s of the resume"))
        .expect("the state recorder");
    eprintln!("session {sid}: frozen for {PAUSE:?}, resumed at {resumed:?}, states {seen:?}");
    assert_eq!(
        ended,
        SessionState::Expired,
        "the session expires: {seen:?}"
    );
    assert_eq!(
        seen.first().map(|(_, s)| *s),
        Some(SessionState::Disconnected),
        "the client reports the silence as a disconnection first: {seen:?}"
    );
    let event = tokio::time::timeout(Duration::from_secs(5), watch)
        .await
        .expect("the pending watch fires");
    assert_eq!(
        (event.kind, event.state),
        (EventKind::Session, SessionState::Expired),
        "the pending watch fires with the expiry"
    );
    for _ in 0..2 {
        assert!(
            matches!(client.get_data("/").await, Err(Error::SessionExpired)),
            "every later call fails with SessionExpired"
        );
    }

    // The server's side: the ephemeral goes within about one session timeout of the resume.
    let fresh = support::connect(&ZkConfig::new(server.connect_string())).await;
    let gone = support::eventually(
        "the expired session's ephemeral goes",
        SESSION * 3 + Duration::from_secs(2),
        || async {
            let stat = fresh.exists("/paused").await.expect("exists");
            stat.is_none().then(|| t0.elapsed())
        },
    )
    .await;
    eprintln!(
        "session {sid}: ephemeral gone {:?} after the resume",
        gone.saturating_sub(resumed)
    );
    assert!(
        !support::session_listed(&server, sid.0),
        "the server no longer lists the expired session"
    );
}

/// `expire_session` ends the session at the service before it returns and reports it as
/// expired, for several sessions at once: the second-connection trick it replaced raced with
/// each client's own reconnection, and could leave a session alive for 10 s or more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expire_session_ends_several_sessions_at_once() {
    const N: usize = 6;
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let observer = support::connect(&config).await;
    let mut clients = Vec::new();
    let mut watches = Vec::new();
    for i in 0..N {
        let client = support::connect(&config).await;
        let watch = ephemeral_and_watch(&client, &format!("/e{i}")).await;
        watches.push(watch);
        clients.push(client);
    }
    let t0 = Instant::now();
    let ended = futures::future::join_all(clients.iter().map(|c| c.expire_session())).await;
    let took = t0.elapsed();
    assert!(ended.iter().all(Result::is_ok), "{ended:?}");
    assert!(
        took < Duration::from_secs(5),
        "expiring {N} sessions took {took:?}"
    );
    for (i, (client, watch)) in clients.iter().zip(watches).enumerate() {
        // Already gone when expire_session returned: no waiting here.
        let stat = observer.exists(&format!("/e{i}")).await.expect("exists");
        assert!(stat.is_none(), "session {i}'s ephemeral is gone");
        assert_eq!(client.session_states().current(), SessionState::Expired);
        let event = tokio::time::timeout(Duration::from_secs(5), watch)
            .await
            .expect("the pending watch fires");
        assert_eq!(
            (event.kind, event.state),
            (EventKind::Session, SessionState::Expired)
        );
        assert!(matches!(
            client.get_data("/").await,
            Err(Error::SessionExpired)
        ));
        assert!(
            client.expire_session().await.is_ok(),
            "a second expiry is a no-op"
        );
    }
}

/// Gives `client` an ephemeral node at `path` and a watch on a node nobody touches, so that
/// the session's end shows in both.
async fn ephemeral_and_watch(client: &ZkClient, path: &str) -> Watch {
    client
        .create(path, b"", &CreateMode::Ephemeral.into())
        .await
        .expect("create an ephemeral");
    let (_, watch) = client
        .exists_and_watch("/elsewhere")
        .await
        .expect("arm a watch");
    watch
}
