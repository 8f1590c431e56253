//! Client processes as madsim nodes (`--cfg madsim` only): a paused node's own tasks and
//! timers stop, a killed one's are dropped and its session expires, a restarted one starts
//! afresh with a new session.
//!
//! `RUSTFLAGS="--cfg madsim" cargo test -p avout-sim-zk --test it madsim_nodes`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::{Coordination, CreateMode, SessionId};
use avout_sim_zk::{Sim, SimCtx};

/// What the worker process leaves for the test to look at.
#[derive(Default)]
struct Seen {
    /// Ticks of the worker's own timer task.
    ticks: AtomicU64,
    /// The sessions the worker opened, one per start.
    sessions: Mutex<Vec<SessionId>>,
}

impl Seen {
    fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::SeqCst)
    }
    fn sessions(&self) -> Vec<SessionId> {
        self.sessions.lock().unwrap().clone()
    }
}

/// The path of the ephemeral node of the worker's `start`-th start.
fn alive(start: usize) -> String {
    format!("/alive-{start}")
}

/// Starts the worker node; returns what the test saw, in order, as text (so two runs of a
/// seed can be compared).
async fn scenario(ctx: SimCtx) -> Vec<String> {
    let mut out = Vec::new();
    let seen = Arc::new(Seen::default());
    let (zk, s) = (ctx.zk.clone(), seen.clone());
    let node = ctx.zk.node("worker", move || {
        let (zk, seen) = (zk.clone(), s.clone());
        async move {
            let session = zk.connect();
            let start = {
                let mut sessions = seen.sessions.lock().unwrap();
                sessions.push(session.session().id);
                sessions.len() - 1
            };
            session
                .create(&alive(start), b"", &CreateMode::Ephemeral.into())
                .await
                .expect("the worker's ephemeral node");
            // The application's own task and timer, spawned with plain tokio (madsim's here).
            let ticker = tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    seen.ticks.fetch_add(1, Ordering::SeqCst);
                }
            });
            ticker.await.expect("the ticker runs until its node stops");
        }
    });
    let observer = &ctx.clients[0];
    let exists = |start| async move { observer.exists(&alive(start)).await.unwrap().is_some() };

    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = seen.ticks();
    assert!(before >= 50, "the worker's timer ticks: {before}");
    assert!(exists(0).await);

    // Paused (for less than the 10 s session timeout): no tick, then ticking again.
    node.pause(Duration::from_secs(3));
    let paused = seen.ticks();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(seen.ticks(), paused, "a paused node's timers do not fire");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(seen.ticks() > paused, "the node resumed");
    assert!(exists(0).await, "a short pause keeps the session");
    out.push(format!(
        "ticks before the pause {paused}, after {}",
        seen.ticks()
    ));

    // Killed: no more ticks; its session is not closed but expires after its timeout.
    node.kill();
    let killed = seen.ticks();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(seen.ticks(), killed, "a killed node's tasks are dropped");
    assert!(exists(0).await, "a dead process closes nothing");
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(!exists(0).await, "the dead process's session expired");
    out.push(format!("ticks at the kill {killed}"));

    // Restarted: its initial task runs again with a new session.
    node.restart();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let sessions = seen.sessions();
    assert_eq!(sessions.len(), 2, "one session per start");
    assert_ne!(sessions[0], sessions[1]);
    assert!(exists(1).await, "the restarted worker's ephemeral node");
    assert!(seen.ticks() > killed, "the restarted worker's timer ticks");
    out.push(format!("sessions {sessions:?}, ticks {}", seen.ticks()));

    // Restarted while it runs: the old session is left to expire, not closed.
    node.restart();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(seen.sessions().len(), 3);
    assert!(exists(1).await && exists(2).await);
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert!(!exists(1).await && exists(2).await);
    out
}

#[test]
fn nodes_pause_kill_and_restart_with_their_tasks_and_timers() {
    let sim = Sim::builder().seed(9_830_000_000).clients(1).build();
    let (a, first) = sim.run(scenario);
    let (b, second) = sim.run(scenario);
    assert_eq!(a, b, "the same seed, the same run");
    assert_eq!(first.hash, second.hash, "the same seed, the same event log");
}

#[test]
fn a_client_freeze_of_a_nodes_session_stops_the_whole_node() {
    let sim = Sim::builder().seed(9_830_000_001).clients(1).build();
    let (_, _) = sim.run(|ctx| async move {
        let ticks = Arc::new(AtomicU64::new(0));
        let (zk, t) = (ctx.zk.clone(), ticks.clone());
        let _node = ctx.zk.node("worker", move || {
            let (zk, ticks) = (zk.clone(), t.clone());
            async move {
                let session = zk.connect();
                // A task of its own that never touches the session.
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        ticks.fetch_add(1, Ordering::SeqCst);
                    }
                });
                std::future::pending::<()>().await;
                drop(session);
            }
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        // The worker's session is the run's second client (index 1).
        ctx.zk.inject(avout_sim_zk::Fault::ClientFreeze {
            client: 1,
            duration: Duration::from_secs(2),
        });
        let frozen = ticks.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(ticks.load(Ordering::SeqCst), frozen, "the node is frozen");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(ticks.load(Ordering::SeqCst) > frozen, "and thawed");
    });
}
