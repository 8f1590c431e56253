//! Leader election and the read-write lock on a three-server ensemble that loses the member
//! the leader (and the write holder) is connected to: the sessions fail over within their
//! timeout, so the leadership and the lock are kept — same term, same node, nobody else let
//! in — and hand over normally afterwards.

use std::time::Duration;

use avout::lock::{LockStatus, RwLock};
use avout::recipes::election::Election;
use avout::zk::ZkConfig;
use avout::{Client, Coordination};

use crate::support;

async fn client(connect: &str) -> Client {
    let config = ZkConfig::new(connect).with_session_timeout(Duration::from_secs(10));
    support::client(&config).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leadership_and_locks_survive_losing_a_member() {
    let ensemble = support::ensemble();
    let connect = ensemble.connect_string();

    let leader_zk = client(&connect).await;
    let leadership = Election::new(&leader_zk, "/ensemble/election")
        .expect("election")
        .with_id("leader")
        .campaign()
        .await
        .expect("elected");
    let term = leadership.term();
    let candidate = Election::new(&client(&connect).await, "/ensemble/election")
        .expect("election")
        .with_id("candidate");
    let waiting_candidate = tokio::spawn({
        let candidate = candidate.clone();
        async move { candidate.campaign().await.map(|l| (l.term(), l)) }
    });

    // The write holder shares the leader's session (and so its member).
    let rw = RwLock::new(&leader_zk, "/ensemble/rw").expect("rw");
    let write = rw.write().await.expect("write");
    let reader = RwLock::new(&client(&connect).await, "/ensemble/rw").expect("rw");
    let waiting_reader =
        tokio::spawn(async move { reader.read().await.map(|g| g.fencing_token()) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting_candidate.is_finished() && !waiting_reader.is_finished());

    let sid = leader_zk.session().id.0;
    let member = support::eventually("the leader's member", Duration::from_secs(10), || async {
        ensemble.member_of_session(sid)
    })
    .await;
    tokio::task::block_in_place(|| ensemble.kill(member));

    // The session fails over: the leadership and the lock are kept.
    support::eventually("the leader reconnects", Duration::from_secs(20), || async {
        (leadership.status() == LockStatus::Held).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(leadership.is_leader(), "still the leader after failover");
    assert_eq!(write.status(), LockStatus::Held);
    assert!(
        !waiting_candidate.is_finished(),
        "no second leader while the first one's session lives"
    );
    assert!(!waiting_reader.is_finished(), "no reader beside the writer");
    let seen = candidate.leader().await.expect("leader").expect("some");
    assert_eq!((seen.term, seen.id.as_slice()), (term, &b"leader"[..]));

    // Handing over works on the survivors.
    write.unlock().await.expect("unlock");
    let read_token = tokio::time::timeout(Duration::from_secs(10), waiting_reader)
        .await
        .expect("the reader gets in")
        .expect("task")
        .expect("read");
    assert!(read_token > 0);
    leadership.resign().await.expect("resign");
    let (next_term, next) = tokio::time::timeout(Duration::from_secs(10), waiting_candidate)
        .await
        .expect("the candidate is elected")
        .expect("task")
        .expect("campaign");
    assert!(next_term > term, "a later term");
    assert!(next.is_leader());
}
