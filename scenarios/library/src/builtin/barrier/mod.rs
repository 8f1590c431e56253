//! `barrier`: client 0 sets a [`Barrier`], the others wait on it, client 0 removes it.
//!
//! Each of `ops` rounds: client 0 sets the barrier (retrying until it is set), tells the
//! others in-process, pauses, then removes it (retrying until removed). The others start
//! waiting only after hearing that the barrier is set.
//!
//! History: `set` and `remove` (value the round), `wait` (value the round; `ok` when the
//! waiter was let through).
//!
//! The checker: no `wait` of a round completed before that round's `remove` was invoked (a
//! waiter that started after the barrier was set must not pass it while it stands).

use std::time::Duration;

use avout::recipes::barrier::{Barrier, BarrierError};
use avout::task::watch;
use rand::Rng;

use avout_check::Options;

use crate::scenario::Checks;
use crate::scenario::Described;
use avout_sim_zk::rng::ClientStream;

use crate::scenario::env::{Cluster, Process, Recorder, open_client};
use crate::scenario::{BoxError, WorkloadError};
use crate::scenario::{OP_DEADLINE, Workload};
use avout_check::history::EventType;

const PATH: &str = "/barrier";

/// Runs `op` until it succeeds, recording each try (a try lost with its session is tried
/// again, on the client's next session).
async fn until_done<Fut>(
    rec: &Recorder,
    process: &mut Process,
    f: &str,
    round: u64,
    op: impl Fn() -> Fut,
) -> Result<(), WorkloadError>
where
    Fut: std::future::Future<Output = Result<(), BarrierError>>,
{
    for _ in 0..100 {
        let p = process.id();
        rec.invoke(p, f, round.into(), None);
        match tokio::time::timeout(OP_DEADLINE, op()).await {
            Ok(Ok(())) => {
                rec.complete(EventType::Ok, p, f, round.into(), None);
                return Ok(());
            }
            Ok(Err(_)) => {
                rec.complete(EventType::Info, p, f, round.into(), None);
                process.retire();
            }
            Err(_) => {
                rec.complete(EventType::Info, p, f, round.into(), None);
                rec.stall(format!("process {p}'s {f} of round {round}"));
                return Err(WorkloadError::gave_up(
                    format!("{f} of round {round} (stuck)"),
                    None::<BoxError>,
                ));
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(WorkloadError::gave_up(
        format!("{f} of round {round} (100 tries)"),
        None::<BoxError>,
    ))
}

async fn controller<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
    rounds: watch::Sender<Option<u64>>,
) -> Result<(), WorkloadError> {
    let mut rng = ClientStream::CHOICES.rng(w.seed, 0);
    let mut process = Process::new(0, w.clients);
    let client = open_client(cluster).await?;
    let barrier = Barrier::new(&client, PATH)?;
    for round in 0..w.ops as u64 {
        let set = until_done(rec, &mut process, "set", round, || barrier.set()).await;
        if set.is_err() {
            break;
        }
        rounds.send_replace(Some(round));
        tokio::time::sleep(Duration::from_millis(rng.random_range(5..30))).await;
        let removed = until_done(rec, &mut process, "remove", round, || barrier.remove()).await;
        if removed.is_err() {
            break;
        }
    }
    rounds.send_replace(None);
    Ok(())
}

async fn waiter<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
    index: usize,
    mut rounds: watch::Receiver<Option<u64>>,
) -> Result<(), WorkloadError> {
    let process = Process::new(index, w.clients);
    let client = open_client(cluster).await?;
    let barrier = Barrier::new(&client, PATH)?;
    let mut last = None;
    loop {
        // The next round announced (a slow waiter may skip rounds).
        let round = loop {
            if rounds.changed().await.is_err() {
                return Ok(());
            }
            match *rounds.borrow_and_update() {
                Some(r) if Some(r) != last => break r,
                Some(_) => continue,
                None => return Ok(()),
            }
        };
        last = Some(round);
        let p = process.id();
        rec.invoke(p, "wait", round.into(), None);
        match tokio::time::timeout(OP_DEADLINE, barrier.wait()).await {
            Ok(Ok(())) => rec.complete(EventType::Ok, p, "wait", round.into(), None),
            Ok(Err(_)) => rec.complete(EventType::Fail, p, "wait", round.into(), None),
            Err(_) => {
                rec.complete(EventType::Info, p, "wait", round.into(), None);
                rec.stall(format!("process {p}'s wait in round {round}"));
                return Ok(());
            }
        }
    }
}

/// The workload: one controller and `w.clients - 1` waiters, `w.ops` rounds.
pub(crate) async fn workload<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    let (tx, rx) = watch::channel(None);
    let waiters: Vec<_> = (1..w.clients)
        .map(|i| waiter(cluster, w, rec, i, rx.clone()))
        .collect();
    drop(rx);
    let (c, ws) = futures::join!(
        controller(cluster, w, rec, tx),
        futures::future::join_all(waiters)
    );
    c?;
    for r in ws {
        r?;
    }
    Ok(())
}

/// The `barrier` scenario: one client sets and removes, others wait.
pub const SCENARIO: Described = Described {
    name: "barrier",
    about: "one client sets and removes, others wait; checker: nobody passes a set barrier",
    defaults: (4, 10),
    checkers: |_w| Checks::named("barrier", &Options::default()),
    workload: |cluster, w, rec| Box::pin(async move { workload(&cluster, w, rec).await }),
};
