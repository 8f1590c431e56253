//! A session expiry forced the way it happens in production: the server goes silent (here
//! frozen with SIGSTOP) for longer than the session timeout.

use std::time::Duration;

use avout::zk::ZkConfig;
use avout::{Coordination, CreateMode, Error, EventKind, SessionState};
use tokio::time::Instant;

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_the_server_past_the_session_timeout_expires_the_session() {
    let server = support::standalone();
    let timeout = Duration::from_secs(2);
    let config = ZkConfig::new(server.connect_string()).with_session_timeout(timeout);
    let client = support::connect(&config).await;
    let sid = client.session().id;
    client
        .create("/paused", b"", &CreateMode::Ephemeral.into())
        .await
        .expect("create an ephemeral");
    let (_, watch) = client
        .exists_and_watch("/elsewhere")
        .await
        .expect("arm a watch");
    let mut states = client.session_states();

    let t0 = Instant::now();
    tokio::task::block_in_place(|| server.pause()).expect("pause the server");
    tokio::time::sleep(Duration::from_secs(4)).await;
    tokio::task::block_in_place(|| server.resume()).expect("resume the server");
    let resumed = t0.elapsed();

    let mut seen = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(s) = states.next().await {
            seen.push((t0.elapsed(), s));
        }
        states.current()
    })
    .await
    .unwrap_or_else(|_| panic!("no terminal session state within 20 s after the pause: {seen:?}"));
    eprintln!("session {sid}: resumed at {resumed:?}, states {seen:?}");
    assert_eq!(
        ended,
        SessionState::Expired,
        "the session expires ({seen:?})"
    );
    let event = tokio::time::timeout(Duration::from_secs(5), watch)
        .await
        .expect("the pending watch fires");
    assert_eq!(
        (event.kind, event.state),
        (EventKind::Session, SessionState::Expired),
        "the pending watch fires with the expiry"
    );
    assert!(
        matches!(client.get_data("/").await, Err(Error::SessionExpired)),
        "the next call fails with SessionExpired"
    );

    let fresh = support::connect(&ZkConfig::new(server.connect_string())).await;
    let gone_after = support::eventually(
        "the expired session's ephemeral goes",
        Duration::from_secs(10),
        || async {
            fresh
                .exists("/paused")
                .await
                .expect("exists")
                .is_none()
                .then(|| t0.elapsed())
        },
    )
    .await;
    eprintln!("ephemeral gone at {gone_after:?}");
}
