//! The leader selector and observer on a real ZooKeeper server: the task runs when elected,
//! is cancelled when the leadership is lost to a session expiry, and the selector stands again
//! on the managed client's next session; an observer sees each new leader.

use std::sync::Arc;
use std::time::Duration;

use avout::recipes::election::{Election, LeaderSelector};
use avout::zk::{ZkClient, ZkConfig};
use tokio::sync::mpsc;

use crate::support;

const WITHIN: Duration = Duration::from_secs(15);

async fn next(rx: &mut mpsc::UnboundedReceiver<(i64, &'static str)>) -> (i64, &'static str) {
    tokio::time::timeout(WITHIN, rx.recv())
        .await
        .expect("in time")
        .expect("open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_is_cancelled_on_expiry_and_leads_again_on_a_real_server() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let first = Arc::new(ZkClient::connect(&config).await.expect("session"));
    let client = support::adopt(&config, &first);
    let watcher = support::client(&config).await;
    let mut observer = Election::new(&watcher, "/sel/real")
        .expect("election")
        .observe()
        .await
        .expect("observe");
    assert_eq!(observer.next().await, Some(None), "nobody leads yet");

    // Each task reports its start, then its end or its cancellation (its guard dropped).
    let (tx, mut rx) = mpsc::unbounded_channel::<(i64, &'static str)>();
    struct Guard(i64, mpsc::UnboundedSender<(i64, &'static str)>);
    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = self.1.send((self.0, "stopped"));
        }
    }
    let election = Election::new(&client, "/sel/real")
        .expect("election")
        .with_id("me");
    let selector = LeaderSelector::start(election, move |term| {
        let tx = tx.clone();
        async move {
            let _ = tx.send((term, "started"));
            let _guard = Guard(term, tx);
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    });
    let (term, what) = next(&mut rx).await;
    assert_eq!(what, "started");
    let seen = tokio::time::timeout(WITHIN, observer.next())
        .await
        .expect("observed");
    let leader = seen.expect("running").expect("a leader");
    assert_eq!(
        (leader.term, leader.id.as_slice()),
        (term, b"me".as_slice())
    );

    first.expire_session().await.expect("expire");
    assert_eq!(
        next(&mut rx).await,
        (term, "stopped"),
        "cancelled with the leadership"
    );
    let (again, what) = next(&mut rx).await;
    assert_eq!(what, "started");
    assert!(again > term, "a later term on the next session");
    assert_eq!(client.generation(), 2);

    selector.close().await;
    assert_eq!(
        next(&mut rx).await,
        (again, "stopped"),
        "cancelled on close"
    );
    support::eventually("no leader once closed", WITHIN, || async {
        observer.leader().is_none().then_some(())
    })
    .await;
}
