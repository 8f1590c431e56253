//! The managed client on real ZooKeeper: a server frozen past the session timeout (SIGSTOP),
//! a session ended by `expire_session`, and a three-server ensemble losing members. After
//! each, the same handles carry on: the atom increments again, the same `Mutex` handle locks
//! again, the latch leads again in a later term.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use avout::atom::Atom;
use avout::client::{Connect, ConnectionState};
use avout::lock::{LockStatus, Mutex};
use avout::recipes::election::Election;
use avout::recipes::group::{Group, MemberStatus};
use avout::zk::{ZkClient, ZkConfig};
use avout::{Client, Coordination};
use futures::future::BoxFuture;
use tokio::time::Instant;

use crate::support;

/// The session timeout asked for (the test kit's tickTime of 500 ms allows down to 1 s).
const SESSION: Duration = Duration::from_secs(2);

/// How long the handles may take to work again after the service is back: the old session's
/// nodes (a lock holder's, a candidate's) go when the server expires it, up to about one
/// session timeout after the resume (see `expiry.rs`), plus the new session's handshake.
const BACK_WITHIN: Duration = Duration::from_secs(12);

/// Opens real sessions and keeps each, so a test can end one with `expire_session`.
#[derive(Clone)]
struct Recording {
    config: ZkConfig,
    opened: Arc<StdMutex<Vec<Arc<ZkClient>>>>,
}

impl Connect for Recording {
    fn connect(&self) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
        Box::pin(async move {
            let zk = Arc::new(ZkClient::connect(&self.config).await?);
            self.opened.lock().unwrap().push(zk.clone());
            Ok(zk as Arc<dyn Coordination>)
        })
    }
}

/// Retries `op` until it succeeds or `BACK_WITHIN` passes; returns when it first succeeded.
async fn until_ok<T, E: std::fmt::Display>(
    what: &str,
    mut op: impl AsyncFnMut() -> Result<T, E>,
) -> (T, Instant) {
    let deadline = Instant::now() + BACK_WITHIN;
    loop {
        match op().await {
            Ok(v) => return (v, Instant::now()),
            Err(e) if Instant::now() < deadline => {
                eprintln!("{what}: {e} (again)");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("{what} still fails {BACK_WITHIN:?} after the service came back: {e}"),
        }
    }
}

/// The issue's own program: an atom and a held `Mutex`, the server frozen for longer than
/// the session timeout, then the same handles after the resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_handles_work_again_after_a_paused_server_expired_the_session() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string())
        .with_session_timeout(SESSION)
        .with_connect_timeout(Duration::from_secs(2));
    let client = Client::connect(config).await.expect("connect");
    let mut events = client.connection_events();
    let atom: Atom<u64> = Atom::open(&client, "/hits", 0).await.unwrap();
    assert_eq!(atom.swap(|n| n + 1).await.unwrap(), 1);
    let mutex = Mutex::new(&client, "/lock").unwrap();
    let guard = mutex.lock().await.unwrap();
    let before = guard.fencing_token();

    tokio::task::block_in_place(|| server.pause()).expect("pause the server");
    tokio::time::sleep(SESSION * 3).await;
    tokio::task::block_in_place(|| server.resume()).expect("resume the server");
    let resumed = Instant::now();

    let (n, first_ok) = until_ok("the atom", async || atom.swap(|n| n + 1).await).await;
    eprintln!(
        "from the resume to the first successful call: {:?}",
        first_ok - resumed
    );
    assert!(
        n == 2 || n == 3,
        "incremented once more (plus at most the lost one): {n}"
    );
    assert_eq!(guard.status(), LockStatus::Lost);
    let (again, locked) = until_ok("the mutex", async || mutex.lock().await).await;
    eprintln!("from the resume to the lock: {:?}", locked - resumed);
    assert!(again.fencing_token() > before);
    again.unlock().await.unwrap();
    drop(guard);

    let mut seen = Vec::new();
    while let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(100), events.next()).await {
        seen.push((e.state, e.generation));
    }
    assert!(seen.contains(&(ConnectionState::Lost, 1)), "{seen:?}");
    assert!(
        seen.contains(&(ConnectionState::Reconnected, 2)),
        "{seen:?}"
    );
    client.close().await.unwrap();
}

/// A session ended at the service (the test kit's forced expiry): the client opens its next
/// one, the group member re-joins with its data, and the atom carries on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_expiry_opens_a_new_session_and_the_member_rejoins() {
    let server = support::standalone();
    let recording = Recording {
        config: ZkConfig::new(server.connect_string()).with_session_timeout(SESSION),
        opened: Arc::default(),
    };
    let client = Client::connect(recording.clone()).await.expect("connect");
    let atom: Atom<u64> = Atom::open(&client, "/n", 0).await.unwrap();
    let group = Group::new(&client, "/workers").unwrap();
    let mut member = group.join("w1", b"10.0.0.1").await.unwrap();
    atom.swap(|n| n + 1).await.unwrap();

    let first = recording.opened.lock().unwrap()[0].clone();
    first.expire_session().await.expect("expire the session");
    while member.status() != (MemberStatus::Member { generation: 2 }) {
        tokio::time::timeout(BACK_WITHIN, member.changed())
            .await
            .expect("the member re-joins");
    }
    assert_eq!(client.generation(), 2);
    assert_eq!(atom.swap(|n| n + 1).await.unwrap(), 2);
    let members = group.members().await.unwrap();
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].data, b"10.0.0.1");
    assert!(member.is_member().await.unwrap());
    assert_eq!(recording.opened.lock().unwrap().len(), 2);
    member.leave().await.unwrap();
    client.close().await.unwrap();
}

/// A three-server ensemble: killing the member the client is on is a connection loss (same
/// session, generation 1); losing the quorum for longer than the session timeout expires it,
/// and once the quorum is back the same handles work on generation 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_an_ensemble_member_kills_fail_over_and_a_lost_quorum_renews_the_session() {
    let ensemble = support::ensemble();
    let config = ZkConfig::new(ensemble.connect_string())
        .with_session_timeout(SESSION * 2)
        .with_connect_timeout(Duration::from_secs(2));
    let client = Client::connect(config).await.expect("connect");
    let atom: Atom<u64> = Atom::open(&client, "/n", 0).await.unwrap();
    let latch = Election::new(&client, "/leader").unwrap().latch();
    let first_term = tokio::time::timeout(BACK_WITHIN, latch.leading())
        .await
        .expect("leads")
        .unwrap();
    atom.swap(|n| n + 1).await.unwrap();

    let on = ensemble
        .member_of_session(client.session().id.0)
        .expect("the session's member");
    tokio::task::block_in_place(|| ensemble.kill(on));
    until_ok("the atom after a member kill", async || {
        atom.swap(|n| n + 1).await
    })
    .await;
    assert_eq!(client.generation(), 1, "a member kill keeps the session");
    tokio::task::block_in_place(|| ensemble.restart(on)).expect("restart the member");

    // Freeze two of three: no quorum; the session outlives nothing.
    let others: Vec<usize> = (0..3).filter(|&i| i != on).collect();
    for &i in &others {
        tokio::task::block_in_place(|| ensemble.pause(i)).expect("pause");
    }
    tokio::task::block_in_place(|| ensemble.pause(on)).expect("pause");
    tokio::time::sleep(SESSION * 4).await;
    for i in 0..3 {
        tokio::task::block_in_place(|| ensemble.resume(i)).expect("resume");
    }
    tokio::task::block_in_place(|| ensemble.wait_for_quorum()).expect("the quorum is back");
    let (n, _) = until_ok("the atom after the quorum is back", async || {
        atom.swap(|n| n + 1).await
    })
    .await;
    assert!(n >= 3, "{n}");
    assert!(
        client.generation() >= 2,
        "the frozen ensemble expired the session"
    );
    let term = tokio::time::timeout(BACK_WITHIN * 2, latch.leading())
        .await
        .expect("leads again")
        .unwrap();
    assert!(
        term > first_term,
        "a later term: {term:#x} after {first_term:#x}"
    );
    latch.close().await;
    client.close().await.unwrap();
}
