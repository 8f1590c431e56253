//! Leader election on a real standalone server: one leader at a time, terms that grow with
//! every leadership, succession when the leader's session is closed or expires, resignation
//! that notifies exactly one candidate, and withdrawal of a cancelled campaign; on the
//! simulator, a leader whose node is deleted learns it through lost messages and a disconnect.

use std::sync::Arc;
use std::time::Duration;

use avout::lock::{LockError, LockStatus};
use avout::recipes::election::{Election, Leadership};
use avout::zk::{ZkClient, ZkConfig};
use avout::{Client, Coordination, path};
use avout_testkit::backend::Backend;
use tokio::task::JoinHandle;

use crate::support::{self, on_both};
use crate::watch_count::{self, Counting, settle, wait_children};

async fn session(connect: &str) -> Arc<ZkClient> {
    Arc::new(support::connect(&ZkConfig::new(connect)).await)
}

/// A managed client, for the candidates whose sessions the tests leave alone.
async fn client(connect: &str) -> Client {
    support::client(&ZkConfig::new(connect)).await
}

fn campaign(election: Election) -> JoinHandle<Result<Leadership, LockError>> {
    tokio::spawn(async move { election.campaign().await })
}

async fn elected(task: JoinHandle<Result<Leadership, LockError>>) -> Leadership {
    tokio::time::timeout(Duration::from_secs(15), task)
        .await
        .expect("elected in time")
        .expect("task")
        .expect("campaign")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_per_term_and_succession_on_close_and_expiry() {
    let server = support::standalone();
    let connect = server.connect_string();
    let observer = Election::new(&client(&connect).await, "/election/a").expect("observer");
    // The candidates run on managed clients adopting these sessions, which the test closes
    // and expires; a leadership stays on its session, so it is lost with it.
    let sessions = [
        session(&connect).await,
        session(&connect).await,
        session(&connect).await,
    ];
    let elections: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(i, zk)| {
            Election::new(&support::adopt(&ZkConfig::new(&connect), zk), "/election/a")
                .expect("election")
                .with_id(format!("candidate-{i}"))
        })
        .collect();

    let first = elected(campaign(elections[0].clone())).await;
    assert!(first.is_leader());
    assert!(
        path::name(first.node()).starts_with("_c_") && path::name(first.node()).contains("-latch-"),
        "Curator LeaderLatch names: {}",
        first.node()
    );
    let second = campaign(elections[1].clone());
    wait_children(&sessions[0], "/election/a", 2).await;
    let third = campaign(elections[2].clone());
    wait_children(&sessions[0], "/election/a", 3).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !second.is_finished() && !third.is_finished(),
        "one leader at a time"
    );
    let leader = observer.leader().await.expect("leader").expect("some");
    assert_eq!(
        (leader.id.as_slice(), leader.term),
        (&b"candidate-0"[..], first.term())
    );

    // The leader's session closes: the next candidate leads, in a later term.
    sessions[0].close().await.expect("close");
    let lost = tokio::time::timeout(Duration::from_secs(10), first.lost())
        .await
        .expect("the old leader learns it");
    assert!(matches!(lost, LockError::SessionLost(_)), "{lost:?}");
    assert!(!first.is_leader());
    let second = elected(second).await;
    assert!(second.term() > first.term(), "terms grow");
    assert!(!third.is_finished());

    // The next leader's session expires: the last candidate leads.
    sessions[1].expire_session().await.expect("expire");
    let third = elected(third).await;
    assert!(third.term() > second.term(), "terms grow");
    support::eventually(
        "old leader sees the loss",
        Duration::from_secs(10),
        || async { (!second.is_leader() && second.status() == LockStatus::Lost).then_some(()) },
    )
    .await;
    assert!(third.is_leader());
    let leader = observer.leader().await.expect("leader").expect("some");
    assert_eq!(
        (leader.id.as_slice(), leader.term),
        (&b"candidate-2"[..], third.term())
    );

    // Resigning empties the election; running again is a new, later term.
    let old = third.term();
    third.resign().await.expect("resign");
    assert_eq!(observer.leader().await.expect("leader"), None);
    let again = elections[2]
        .try_campaign()
        .await
        .expect("try")
        .expect("nobody else runs");
    assert!(again.term() > old);
    again.resign().await.expect("resign");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resignation_notifies_exactly_one_candidate() {
    let server = support::standalone();
    let connect = server.connect_string();
    let observer = session(&connect).await;
    let leader = Election::new(&client(&connect).await, "/election/herd")
        .expect("election")
        .campaign()
        .await
        .expect("leader");
    let mut candidates = Vec::new();
    for i in 0..4 {
        let zk = watch_count::connect(&connect).await;
        // Exactly the counted session.
        let candidate = Client::single(zk.clone());
        let task = campaign(Election::new(&candidate, "/election/herd").expect("election"));
        wait_children(&observer, "/election/herd", i + 2).await;
        candidates.push((zk, task));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    leader.resign().await.expect("resign");
    let sessions: Vec<&Counting> = candidates.iter().map(|(zk, _)| &**zk).collect();
    let fired = settle(&sessions, &[1, 0, 0, 0]).await;
    assert_eq!(fired, [1, 0, 0, 0], "only the next candidate is notified");
    let (_, next) = candidates.remove(0);
    let next = elected(next).await;
    assert!(next.is_leader());
    assert!(candidates.iter().all(|(_, task)| !task.is_finished()));
    next.resign().await.expect("resign");
    for (_, task) in candidates {
        elected(task).await.resign().await.expect("resign");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_campaign_withdraws_its_candidate() {
    let server = support::standalone();
    let connect = server.connect_string();
    let observer = session(&connect).await;
    let leader = Election::new(&client(&connect).await, "/election/cancel")
        .expect("election")
        .campaign()
        .await
        .expect("leader");
    let hopeful = Election::new(&client(&connect).await, "/election/cancel").expect("election");
    assert!(
        hopeful
            .campaign_for(Duration::from_millis(300))
            .await
            .expect("campaign")
            .is_none()
    );
    wait_children(&observer, "/election/cancel", 1).await;
    let task = campaign(hopeful.clone());
    wait_children(&observer, "/election/cancel", 2).await;
    task.abort();
    let _ = task.await;
    wait_children(&observer, "/election/cancel", 1).await;
    assert!(leader.is_leader());

    // Dropping a leadership resigns it.
    drop(leader);
    let next = elected(campaign(hopeful)).await;
    assert!(next.is_leader());
}

/// On the simulator: a leader whose node an administrator deletes learns it from its
/// monitor (`MonitorMachine`), whose first `exists` or its reply is lost with the connection
/// (the monitor asks again on reconnection, or after its pause), or whose connection is down
/// when the node goes (it looks again on reconnection).
#[test]
fn a_leader_learns_its_node_was_deleted_despite_a_lost_request_or_a_disconnect() {
    use avout_sim_zk::{Fault, Sim};

    for (seed, fault) in [
        (1, Fault::RequestLost { client: Some(0) }),
        (2, Fault::ReplyLost { client: Some(0) }),
        (
            3,
            Fault::Disconnect {
                client: 0,
                duration: Duration::from_millis(300),
            },
        ),
    ] {
        let disconnect = matches!(fault, Fault::Disconnect { .. });
        let what = format!("{fault:?}");
        let sim = Sim::builder().seed(seed).clients(2).keep_log(true).build();
        let (lost, summary) = sim.run(|ctx| async move {
            let zk = ctx.zk.clone();
            let admin = Arc::new(ctx.clients[1].clone());
            // Exactly client 0's session: the faults are scheduled on its index.
            let election =
                Election::new(&support::single(&ctx.clients[0]), "/election/m").expect("election");
            let leadership = election.campaign().await.expect("elected");
            // A lost request or reply: before the monitor's task first runs, so the fault
            // takes its `exists`. A disconnection: once its watch is armed.
            if disconnect {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            zk.inject(fault);
            // Every one of these faults breaks the connection (a message is lost only with
            // it); once it is back, the leadership is intact.
            let own = ctx.clients[0].clone();
            while own.session_states().current() != avout::SessionState::Connected {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert!(leadership.is_leader());
            admin
                .delete(leadership.node(), None)
                .await
                .expect("the administrator deletes the node");
            let lost = tokio::time::timeout(Duration::from_secs(5), leadership.lost())
                .await
                .expect("the leader learns it");
            assert!(!leadership.is_leader());
            lost
        });
        assert!(
            matches!(lost, LockError::NodeDeleted { .. }),
            "{what}: {lost:?}"
        );
        assert_eq!(
            summary.faults.values().sum::<u64>(),
            1,
            "{what}: the fault fired"
        );
        let asked = summary
            .log
            .iter()
            .filter(|e| {
                matches!(e, avout_sim_zk::LogEvent::Request { op, path: Some(p), .. }
                    if op == "exists" && p.contains("-latch-"))
            })
            .count();
        let log: String = summary.log.iter().map(|e| format!("{e}\n")).collect();
        assert!(
            asked >= 2,
            "{what}: the monitor asked again ({asked} exists)\n{log}"
        );
    }
}

on_both!(
    /// A resignation has deleted the candidate node when it returns, so the next candidate
    /// may already lead: a read on the same client right after it finds the node gone. (A
    /// resignation that left the delete to its handle's drop would still show it.)
    a_resignation_is_done_when_it_returns,
    support::plain_sim(0xe1ec7),
    |b| a_resignation_is_done_when_it_returns_on(b),
);

async fn a_resignation_is_done_when_it_returns_on(backend: &dyn Backend) {
    let client = support::client_of(backend).await;
    let election = Election::new(&client, "/election/resign").expect("election");
    let mut terms = Vec::new();
    for _ in 0..3 {
        let leadership = election.campaign().await.expect("campaign");
        let node = leadership.node().to_owned();
        terms.push(leadership.term());
        leadership.resign().await.expect("resign");
        assert_eq!(
            client.exists(&node).await.expect("exists"),
            None,
            "{node} outlived its resignation"
        );
    }
    assert!(
        terms.windows(2).all(|w| w[0] < w[1]),
        "terms grow: {terms:?}"
    );
    assert_eq!(election.leader().await.expect("leader"), None);
}
