//! The scheduler with each worker a process of its own (`--cfg madsim` only): a madsim node
//! that the run pauses, kills and restarts, its own tasks and timers with it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout_scenarios::scenario::env::{Env, Recorder};
use avout_scenarios::scenario::{Checks, Described, Workload, WorkloadError};
use avout_sim_zk::SimNode;
use avout_testkit::backend::SimBackend;

use crate::check::SchedulerChecker;
use crate::scenario::{final_read, submit, work};

/// When worker 0 is paused, and for how long (its session's timeout is 10 s: it survives).
const PAUSE: (Duration, Duration) = (Duration::from_millis(150), Duration::from_secs(2));

/// When worker 1 is killed, and restarted (with a new session; the old one expires).
const KILL: (Duration, Duration) = (Duration::from_millis(250), Duration::from_millis(900));

/// [`crate::SCHEDULER`] with every worker a madsim node: worker 0 is paused for 2 s,
/// worker 1 killed and started again from scratch, and every job must still be done exactly
/// once, with one leader per term. Only on the simulator under `--cfg madsim`.
pub const SCHEDULER_ON_NODES: Described = Described {
    name: "scheduler-nodes",
    about: "the scheduler with every worker a madsim node, one paused and one killed and \
            restarted; checker: every job done exactly once, one leader per term",
    defaults: (3, 6),
    checkers: |w| Checks::of(SchedulerChecker { jobs: w.ops }),
    workload: |env, w, rec| Box::pin(workload(env, w, rec)),
};

/// Each worker's outcome, once its node's initial task finishes.
type Outcomes = Arc<Mutex<Vec<Option<Result<(), WorkloadError>>>>>;

/// The jobs submitted, every worker on a node of its own, one paused, one killed and
/// restarted; the completions read.
async fn workload(env: &Env<'_>, w: &Workload, rec: &Recorder) -> Result<(), WorkloadError> {
    let zk = env.backend.simulator().cloned().ok_or_else(|| {
        WorkloadError::gave_up("worker nodes (the simulator only)", None::<WorkloadError>)
    })?;
    submit(env, w, rec).await?;
    let outcomes: Outcomes = Arc::new(Mutex::new((0..w.clients).map(|_| None).collect()));
    let nodes: Vec<SimNode> = (0..w.clients)
        .map(|me| {
            let (zk2, w, rec, outcomes) = (zk.clone(), w.clone(), rec.clone(), outcomes.clone());
            zk.node(&format!("worker-{me}"), move || {
                let (zk, w, rec, outcomes) =
                    (zk2.clone(), w.clone(), rec.clone(), outcomes.clone());
                async move {
                    // The worker's own client, opened in its own process.
                    let backend = SimBackend::new(zk);
                    let done = work(&Env::new(&backend), &w, &rec, me).await;
                    outcomes.lock().expect("never poisoned")[me] = Some(done);
                }
            })
        })
        .collect();
    let finished = |me: usize| outcomes.lock().expect("never poisoned")[me].is_some();
    tokio::time::sleep(PAUSE.0).await;
    nodes[0].pause(PAUSE.1);
    tokio::time::sleep(KILL.0 - PAUSE.0).await;
    let killed = nodes.len() > 1 && !finished(1);
    if killed {
        nodes[1].kill();
    }
    tokio::time::sleep(KILL.1 - KILL.0).await;
    if killed {
        nodes[1].restart();
    }
    while (0..w.clients).any(|me| !finished(me)) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let outcomes = std::mem::take(&mut *outcomes.lock().expect("never poisoned"));
    outcomes.into_iter().flatten().collect::<Result<(), _>>()?;
    final_read(env, w, rec).await
}
