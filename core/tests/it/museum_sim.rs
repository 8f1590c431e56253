//! The museum's bugs planted outside a machine (feature `planted-bugs`), each shown on the
//! simulator beside the same run without it: the run a planted bug breaks, and the fix
//! avout has where the original had the bug. (The bugs planted in machines are shown by the
//! machines' own tests, hand-stepped.)

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use avout::lock::{LockError, RwLock};
use avout::planted::{Bug, Bugs};
use avout::recipes::cache::{Cache, CacheScope};
use avout::recipes::election::{Election, LatchState};
use avout::{Client, Coordination, CoordinationExt};
use avout_sim_zk::{Fault, Sim, SimCtx};

const PATIENCE: Duration = Duration::from_secs(10);

fn run<T, Fut: Future<Output = T>>(seed: u64, work: impl FnOnce(SimCtx) -> Fut) -> T {
    let sim = Sim::builder()
        .seed(seed)
        .clients(0)
        .time_limit(Duration::from_secs(3600))
        .build();
    sim.run(work).0
}

/// A managed client of the run's service (sessions are numbered in the order clients
/// connect).
async fn connect(ctx: &SimCtx) -> Client {
    Client::connect(ctx.zk.clone()).await.expect("connected")
}

fn planted(bug: Option<Bug>) -> Bugs {
    Bugs::plant(bug).expect("compiled in")
}

/// CURATOR-202: a leader resigns, and the delete of its node is lost with the connection.
/// Whether the same participant leads again within [`PATIENCE`].
fn leads_again_after_a_lost_resignation(bug: Option<Bug>) -> bool {
    run(1, |ctx| async move {
        let client = connect(&ctx).await;
        let election = Election::new(&client, "/e")
            .expect("election")
            .planted(planted(bug));
        let leadership = election.campaign().await.expect("alone: leads");
        ctx.zk.inject(Fault::RequestLost { client: Some(0) });
        leadership.resign().await.expect("resigned, or so it says");
        tokio::time::timeout(PATIENCE, election.campaign())
            .await
            .is_ok()
    })
}

#[test]
fn curator_202_a_lost_resignation_leaves_the_node_for_good() {
    assert!(leads_again_after_a_lost_resignation(None));
    assert!(!leads_again_after_a_lost_resignation(Some(Bug::Curator202)));
}

/// CURATOR-16: a latch's session expires while it campaigns behind a leader, who then
/// resigns. What the latch does next.
fn latch_after_an_expiry_while_campaigning(bug: Option<Bug>) -> LatchState {
    run(2, |ctx| async move {
        let leader = connect(&ctx).await;
        let leadership = Election::new(&leader, "/e")
            .expect("election")
            .campaign()
            .await
            .expect("first: leads");
        let client = connect(&ctx).await;
        let latch = Election::new(&client, "/e")
            .expect("election")
            .planted(planted(bug))
            .latch();
        tokio::time::sleep(Duration::from_millis(100)).await;
        ctx.zk.inject(Fault::ExpireSession { client: 1 });
        tokio::time::sleep(Duration::from_millis(100)).await;
        leadership.resign().await.expect("resigned");
        let mut events = latch.events();
        let settled = async {
            loop {
                match events.current() {
                    state @ (LatchState::Leading { .. } | LatchState::Closed(_)) => break state,
                    _ => {
                        events.next().await;
                    }
                }
            }
        };
        tokio::time::timeout(PATIENCE, settled)
            .await
            .expect("the latch leads or stops")
    })
}

#[test]
fn curator_16_a_latch_stops_standing_after_an_expiry_while_campaigning() {
    let fixed = latch_after_an_expiry_while_campaigning(None);
    assert!(
        matches!(fixed, LatchState::Leading { generation: 2, .. }),
        "{fixed:?}"
    );
    let planted = latch_after_an_expiry_while_campaigning(Some(Bug::Curator16));
    assert!(
        matches!(
            planted,
            LatchState::Closed(LockError::SessionLost(avout::Error::SessionExpired))
        ),
        "{planted:?}"
    );
}

/// CURATOR-358: two candidates take turns leading while an observer asks who leads. How
/// many of the observer's look-ups failed.
fn failed_lookups(bug: Option<Bug>) -> usize {
    run(3, |ctx| async move {
        let observer = connect(&ctx).await;
        let election = Election::new(&observer, "/e")
            .expect("election")
            .planted(planted(bug));
        let done = Rc::new(Cell::new(false));
        let mut candidates = Vec::new();
        for _ in 0..2 {
            let client = connect(&ctx).await;
            let (election, done) = (
                Election::new(&client, "/e").expect("election"),
                done.clone(),
            );
            candidates.push(async move {
                while !done.get() {
                    let leadership = election.campaign().await.expect("no faults");
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    leadership.resign().await.expect("no faults");
                }
            });
        }
        let observe = async {
            let mut failed = 0;
            for _ in 0..300 {
                if election.leader().await.is_err() {
                    failed += 1;
                }
            }
            done.set(true);
            failed
        };
        let (failed, ..) = futures::join!(observe, futures::future::join_all(candidates));
        failed
    })
}

#[test]
fn curator_358_looking_up_the_leader_fails_when_it_resigns_meanwhile() {
    assert_eq!(failed_lookups(None), 0);
    assert!(failed_lookups(Some(Bug::Curator358)) > 0);
}

/// CURATOR-621: a write holder takes the read lock while another writer waits, then
/// releases the write lock (a downgrade). Whether the other writer got in while the
/// downgraded read was still held.
fn writer_beside_a_downgraded_reader(bug: Option<Bug>) -> bool {
    run(4, |ctx| async move {
        let a = connect(&ctx).await;
        let b = connect(&ctx).await;
        let ours = RwLock::new(&a, "/rw").expect("rw").planted(planted(bug));
        let theirs = RwLock::new(&b, "/rw").expect("rw");
        let write = ours.write().await.expect("free");
        let inside = Rc::new(Cell::new(false));
        let waiter = {
            let inside = inside.clone();
            async move {
                let guard = theirs.write().await.expect("eventually");
                inside.set(true);
                guard
            }
        };
        let downgrade = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let read = ours.read().await.expect("under our own write lock");
            write.unlock().await.expect("released");
            tokio::time::sleep(Duration::from_millis(200)).await;
            let beside = inside.get();
            read.unlock().await.expect("released");
            beside
        };
        let (beside, _guard) = futures::join!(downgrade, waiter);
        beside
    })
}

#[test]
fn curator_621_a_downgrade_lets_a_queued_writer_in() {
    assert!(!writer_beside_a_downgraded_reader(None));
    assert!(writer_beside_a_downgraded_reader(Some(Bug::Curator621)));
}

/// CURATOR-476: caches start, one after the other, on a directory whose children a writer
/// keeps creating and deleting. Whether a start did not return within two seconds.
fn a_cache_start_is_stuck(bug: Option<Bug>) -> bool {
    run(5, |ctx| async move {
        let writer = connect(&ctx).await;
        let reader = connect(&ctx).await;
        writer.ensure_path("/c").await.expect("root");
        let done = Rc::new(Cell::new(false));
        let churn = {
            let done = done.clone();
            async move {
                let mut n = 0u32;
                while !done.get() {
                    let child = format!("/c/n{}", n % 8);
                    let _ = writer.create(&child, b"x", &Default::default()).await;
                    let _ = writer.delete(&format!("/c/n{}", (n + 3) % 8), None).await;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    n += 1;
                }
            }
        };
        let starts = async {
            let zk: Arc<dyn Coordination> = Arc::new(reader.clone());
            let mut stuck = false;
            for _ in 0..20 {
                let start =
                    Cache::start_planted(zk.clone(), "/c", CacheScope::Children, planted(bug));
                match tokio::time::timeout(Duration::from_secs(2), start).await {
                    Ok(cache) => cache.expect("no faults").close().await,
                    Err(_) => {
                        stuck = true;
                        break;
                    }
                }
            }
            done.set(true);
            stuck
        };
        futures::join!(starts, churn).0
    })
}

#[test]
fn curator_476_a_child_gone_during_the_load_keeps_the_cache_from_starting() {
    assert!(!a_cache_start_is_stuck(None));
    assert!(a_cache_start_is_stuck(Some(Bug::Curator476)));
}

/// CURATOR-311: a cache's connection drops while another client changes the node it
/// follows. Whether the cache has the change a second after the connection came back.
fn cache_sees_a_change_made_while_disconnected(bug: Option<Bug>) -> bool {
    run(6, |ctx| async move {
        let follower = connect(&ctx).await;
        let writer = connect(&ctx).await;
        writer
            .create("/v", b"old", &Default::default())
            .await
            .expect("created");
        let zk: Arc<dyn Coordination> = Arc::new(follower.clone());
        let cache = Cache::start_planted(zk, "/v", CacheScope::Node, planted(bug))
            .await
            .expect("no faults");
        ctx.zk.inject(Fault::Disconnect {
            client: 0,
            duration: Duration::from_secs(1),
        });
        writer.set_data("/v", b"new", None).await.expect("set");
        tokio::time::sleep(Duration::from_secs(2)).await;
        cache.get("/v").is_some_and(|e| e.data == b"new")
    })
}

#[test]
fn curator_311_a_change_made_while_disconnected_is_never_seen() {
    assert!(cache_sees_a_change_made_while_disconnected(None));
    assert!(!cache_sees_a_change_made_while_disconnected(Some(
        Bug::Curator311
    )));
}
