//! Group membership, the double barrier and two-phase commit on the simulated ZooKeeper
//! under lost requests and lost replies: the recovery paths (a join or vote whose reply was
//! lost, a participant node created twice) must not change what the recipes promise.
//!
//! A failing seed is printed by the simulator.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::single;

use avout::recipes::double_barrier::DoubleBarrier;
use avout::recipes::group::Group;
use avout::recipes::two_phase_commit::{Coordinator, Outcome, Site, Vote};
use avout_sim_zk::{FaultKind, FaultRates, Sim};

/// A simulation of `clients` clients from `seed` that loses replies and requests, with no
/// event log kept.
fn lossy(seed: u64, clients: usize) -> Sim {
    Sim::builder()
        .seed(seed)
        .clients(clients)
        .rates(FaultRates {
            reply_lost: 0.1,
            request_lost: 0.05,
            ..FaultRates::default()
        })
        .keep_log(false)
        .build()
}

#[test]
fn two_phase_commit_decides_once_for_everyone_under_lost_messages() {
    let mut lost = 0;
    for seed in 0..16u64 {
        // Every fourth run has one site voting abort.
        let aborting = (seed % 4 == 3).then_some(1usize);
        let sim = lossy(seed, 4);
        let (outcomes, summary) = sim.run(|ctx| async move {
            let zk: Vec<_> = ctx.clients.iter().map(single).collect();
            let tx = Coordinator::begin(&zk[0], "/sim/tx", &["a", "b", "c"], b"q")
                .await
                .expect("begin");
            let sites = ["a", "b", "c"].into_iter().enumerate().map(|(i, name)| {
                let zk = &zk[i + 1];
                async move {
                    let site = Site::join(zk, "/sim/tx", name).await.expect("join");
                    assert_eq!(site.payload().await.expect("payload"), b"q");
                    let vote = if Some(i) == aborting {
                        Vote::Abort
                    } else {
                        Vote::Commit
                    };
                    site.vote(vote).await.expect("vote");
                    site.outcome().await.expect("outcome")
                }
            });
            let (mut outcomes, decided) =
                futures::join!(futures::future::join_all(sites), tx.outcome());
            outcomes.push(decided.expect("coordinator's outcome"));
            outcomes
        });
        let expected = if aborting.is_some() {
            Outcome::Abort
        } else {
            Outcome::Commit
        };
        assert_eq!(outcomes, [expected; 4], "seed {seed}");
        lost += summary.fault_count(FaultKind::ReplyLost);
    }
    assert!(lost > 20, "replies were lost: {lost}");
}

#[test]
fn a_double_barrier_holds_under_lost_messages() {
    for seed in 0..16u64 {
        let sim = lossy(seed, 3);
        let (log, _) = sim.run(|ctx| async move {
            let log = Arc::new(Mutex::new(Vec::new()));
            let participants = ctx.clients.iter().enumerate().map(|(i, c)| {
                let barrier = DoubleBarrier::new(&single(c), "/sim/round", 3).expect("barrier");
                let log = log.clone();
                let note = move |what: &'static str| log.lock().expect("log").push((what, i));
                async move {
                    // Staggered arrivals and departures, so that waiting really happens.
                    tokio::time::sleep(Duration::from_millis(100 * i as u64)).await;
                    note("enter");
                    let inside = barrier.enter().await.expect("enter");
                    note("entered");
                    tokio::time::sleep(Duration::from_millis(300 - 100 * i as u64)).await;
                    note("leave");
                    inside.leave().await.expect("leave");
                    note("left");
                }
            });
            futures::future::join_all(participants).await;
            Arc::try_unwrap(log)
                .expect("one owner")
                .into_inner()
                .expect("log")
        });
        let at = |what: &str| -> Vec<usize> {
            log.iter()
                .enumerate()
                .filter(|(_, (w, _))| *w == what)
                .map(|(at, _)| at)
                .collect()
        };
        let (enter, entered, leave, left) = (at("enter"), at("entered"), at("leave"), at("left"));
        assert_eq!(entered.len(), 3, "seed {seed}: {log:?}");
        assert_eq!(left.len(), 3, "seed {seed}: {log:?}");
        assert!(
            entered.iter().all(|e| enter.iter().all(|s| s < e)),
            "seed {seed}: someone entered before all arrived: {log:?}"
        );
        assert!(
            left.iter().all(|l| leave.iter().all(|s| s < l)),
            "seed {seed}: someone left before all were leaving: {log:?}"
        );
    }
}

#[test]
fn group_joins_survive_lost_replies_without_spurious_name_conflicts() {
    for seed in 0..16u64 {
        let sim = lossy(seed, 4);
        let (names, _) = sim.run(|ctx| async move {
            let zk: Vec<_> = ctx.clients.iter().map(single).collect();
            let joins = (1..4).map(|i| {
                let group = Group::new(&zk[i], "/sim/workers").expect("group");
                async move { group.join(&format!("w{i}"), b"up").await.expect("join") }
            });
            let memberships = futures::future::join_all(joins).await;
            let observer = Group::new(&zk[0], "/sim/workers").expect("group");
            let names: Vec<String> = observer
                .members()
                .await
                .expect("members")
                .into_iter()
                .map(|m| m.name)
                .collect();
            for m in memberships {
                m.leave().await.expect("leave");
            }
            assert!(observer.members().await.expect("members").is_empty());
            names
        });
        assert_eq!(names, ["w1", "w2", "w3"], "seed {seed}");
    }
}
