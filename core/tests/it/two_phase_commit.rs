//! Two-phase commit on a real standalone server: a coordinator and three sites, each in its
//! own session; all commit, one aborts, and a site whose session expires before voting.

use std::time::Duration;

use avout::CoordinationExt;
use avout::recipes::two_phase_commit::{Coordinator, Outcome, Site, TwoPhaseError, Vote};
use avout::zk::ZkConfig;

use crate::support;

const SITES: [&str; 3] = ["a", "b", "c"];

/// Runs one transaction in which site `i` votes `votes[i]` (`None`: its session expires
/// after joining instead), and returns the outcome each surviving site and the coordinator saw.
async fn run(tx: &str, votes: [Option<Vote>; 3]) -> Vec<Outcome> {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let zk = support::sessions(&config, 4).await;
    // Managed clients on sessions the test keeps, to expire one: a site stays on the
    // session it joined on, so its vote fails once that session is gone.
    let clients: Vec<_> = zk.iter().map(|zk| support::adopt(&config, zk)).collect();
    let coordinator = Coordinator::begin(&clients[0], tx, &SITES, b"payload")
        .await
        .expect("begin");
    assert!(matches!(
        Coordinator::begin(&clients[1], tx, &SITES, b"other").await,
        Err(TwoPhaseError::Exists { .. })
    ));
    let mut sites = Vec::new();
    for (i, name) in SITES.iter().enumerate() {
        let site = Site::join(&clients[i + 1], tx, name).await.expect("join");
        assert_eq!(site.payload().await.expect("payload"), b"payload");
        sites.push(site);
    }
    let outcomes: Vec<_> = sites
        .into_iter()
        .zip(votes)
        .enumerate()
        .map(|(i, (site, vote))| {
            let zk = zk[i + 1].clone();
            tokio::spawn(async move {
                match vote {
                    Some(vote) => {
                        site.vote(vote).await.expect("vote");
                        Some(site.outcome().await.expect("outcome"))
                    }
                    None => {
                        zk.expire_session().await.expect("expire");
                        assert!(matches!(
                            site.vote(Vote::Commit).await,
                            Err(TwoPhaseError::SessionLost(_))
                        ));
                        None
                    }
                }
            })
        })
        .collect();
    let mut seen = vec![
        tokio::time::timeout(Duration::from_secs(20), coordinator.outcome())
            .await
            .expect("decided")
            .expect("outcome"),
    ];
    for o in outcomes {
        if let Some(outcome) = tokio::time::timeout(Duration::from_secs(20), o)
            .await
            .expect("site done")
            .expect("task")
        {
            seen.push(outcome);
        }
    }
    // A latecomer reads the same decision, and the coordinator cannot change it.
    let late = Site::join(&clients[0], tx, "a").await;
    assert!(matches!(late, Err(TwoPhaseError::AlreadyJoined { .. })));
    assert_eq!(coordinator.abort().await.expect("abort"), seen[0]);
    coordinator.remove().await.expect("remove");
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_sites_commit() {
    let seen = run("/it/tx/commit", [Some(Vote::Commit); 3]).await;
    assert_eq!(seen, [Outcome::Commit; 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_abort_vote_aborts_for_everyone() {
    let seen = run(
        "/it/tx/abort",
        [Some(Vote::Commit), Some(Vote::Abort), Some(Vote::Commit)],
    )
    .await;
    assert_eq!(seen, [Outcome::Abort; 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_whose_session_expires_before_voting_aborts_the_transaction() {
    let seen = run(
        "/it/tx/expired",
        [Some(Vote::Commit), Some(Vote::Commit), None],
    )
    .await;
    assert_eq!(seen, [Outcome::Abort; 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinator_aborts_when_a_site_never_joins() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let zk = support::clients(&config, 2).await;
    let tx = Coordinator::begin(&zk[0], "/it/tx/absent", &["x", "y"], b"")
        .await
        .expect("begin");
    let x = Site::join(&zk[1], "/it/tx/absent", "x")
        .await
        .expect("join");
    assert!(matches!(
        Site::join(&zk[1], "/it/tx/absent", "nobody").await,
        Err(TwoPhaseError::NotASite { .. })
    ));
    x.vote(Vote::Commit).await.expect("vote");
    assert!(
        tokio::time::timeout(Duration::from_millis(300), tx.outcome())
            .await
            .is_err(),
        "undecided while y has not voted"
    );
    assert_eq!(tx.abort().await.expect("abort"), Outcome::Abort);
    assert_eq!(x.outcome().await.expect("outcome"), Outcome::Abort);
}

/// Waiting for the outcome of a transaction removed under the waiter is refused at once, as
/// `NoTransaction`: waited out instead (as if the session had ended), it would never return.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outcome_of_a_removed_transaction_is_refused_not_waited_for() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let zk = support::sessions(&config, 1).await;
    let client = support::adopt(&config, &zk[0]);
    let tx = "/it/tx/removed";
    let coordinator = Coordinator::begin(&client, tx, &SITES, b"payload")
        .await
        .expect("begin");
    zk[0].delete_recursive(tx).await.expect("remove it by hand");
    match tokio::time::timeout(Duration::from_secs(10), coordinator.outcome()).await {
        Ok(Err(TwoPhaseError::NoTransaction { .. })) => {}
        other => panic!("the outcome of a removed transaction: {other:?}"),
    }
}
