//! The scheduler as an avout scenario: a submitter puts the jobs, every worker campaigns,
//! hands out jobs while it leads, and does its own; a final read of the completions.

use std::time::Duration;

use avout_check::history::EventType;
use avout_scenarios::scenario::env::{Env, Recorder};
use avout_scenarios::scenario::{Checks, Described, Workload, WorkloadError};
use avout_sim_zk::rng::ClientStream;
use rand::Rng;
use serde_json::{Value, json};

use crate::check::SchedulerChecker;
use crate::scheduler::{self, Worker};

/// Where the scenario's scheduler lives.
const ROOT: &str = "/scheduler";

/// Rounds a worker makes before the run is failed as stuck.
const ROUNDS: usize = 400;

/// Tries of a step that must happen (a put, an assignment, the final read).
const TRIES: usize = 200;

/// The name of job `i`.
pub fn job(i: usize) -> String {
    format!("job-{i}")
}

/// The scheduler scenario: `clients` workers, `ops` jobs; its history judged by
/// [`SchedulerChecker`].
///
/// ```
/// use avout_scenarios::scenario::Scenario;
/// assert_eq!(avout_example_scheduler::SCHEDULER.name(), "scheduler");
/// ```
pub const SCHEDULER: Described = Described {
    name: "scheduler",
    about: "workers elect a leader that hands out queued jobs; completions in an atom; \
            checker: every job done exactly once, one leader per term",
    defaults: (3, 6),
    checkers: |w| Checks::of(SchedulerChecker { jobs: w.ops }),
    workload: |env, w, rec| Box::pin(workload(env, w, rec)),
};

/// The jobs submitted, every worker at work (each a process of its own), the completions
/// read.
async fn workload(env: &Env<'_>, w: &Workload, rec: &Recorder) -> Result<(), WorkloadError> {
    submit(env, w, rec).await?;
    let workers = (0..w.clients).map(|me| work(env, w, rec, me));
    for done in futures::future::join_all(workers.map(|f| avout::task::Gate::new().run(f))).await {
        done?;
    }
    final_read(env, w, rec).await
}

/// Tries `step` until it succeeds, `TRIES` times at most.
async fn until_ok<T, E, Fut>(what: &str, mut step: impl FnMut() -> Fut) -> Result<T, WorkloadError>
where
    E: std::error::Error + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>>,
{
    let mut last = None;
    for _ in 0..TRIES {
        match step().await {
            Ok(t) => return Ok(t),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(WorkloadError::gave_up(what, last))
}

/// Puts the `w.ops` jobs (again after any error: a job queued twice is handed out once).
pub(crate) async fn submit(
    env: &Env<'_>,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    let p = w.clients as u64;
    let client = env.backend.client().await?;
    let jobs = scheduler::jobs(&client, ROOT)?;
    for i in 0..w.ops {
        let name = job(i);
        rec.invoke(p, "put", name.clone().into(), None);
        until_ok("a put", || jobs.put(name.as_bytes())).await?;
        rec.complete(EventType::Ok, p, "put", name.into(), None);
    }
    Ok(())
}

/// Worker `me`: campaign, hand out while leading, do its own jobs, until every job is handed
/// out and its own are done.
pub(crate) async fn work(
    env: &Env<'_>,
    w: &Workload,
    rec: &Recorder,
    me: usize,
) -> Result<(), WorkloadError> {
    let p = me as u64;
    let mut rng = ClientStream::CHOICES.rng(w.seed, me);
    let client = env.backend.client().await?;
    let mut worker = until_ok("opening a worker", || {
        Worker::open(&client, ROOT, me, w.clients)
    })
    .await?;
    for _ in 0..ROUNDS {
        let patience = Duration::from_millis(rng.random_range(10..60));
        if let Ok(Some(leadership)) = worker.campaign(patience).await {
            rec.invoke(p, "lead", Value::Null, None);
            rec.complete(EventType::Ok, p, "lead", leadership.term().into(), None);
            // A leader hands out a few jobs, then lets the others have a turn.
            for _ in 0..3 {
                let Ok(Some(queued)) = worker.next_job().await else {
                    break;
                };
                let job = &queued.job;
                rec.invoke(p, "assign", json!([job, queued.to]), None);
                let to = until_ok("an assignment", || worker.assign(job, queued.to)).await?;
                rec.complete(EventType::Ok, p, "assign", json!([job, to]), None);
                until_ok("removing an assigned job", || worker.dequeue(&queued)).await?;
            }
            drop(leadership.resign().await);
        }
        if let Ok(mine) = worker.my_jobs().await {
            for job in mine {
                rec.invoke(p, "done", job.clone().into(), None);
                let kind = match worker.complete(&job).await {
                    Ok(()) => EventType::Ok,
                    Err(e) if e.is_definite() => EventType::Fail,
                    Err(_) => EventType::Info,
                };
                rec.complete(kind, p, "done", job.into(), None);
            }
        }
        if finished(&worker, w).await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(WorkloadError::gave_up(
        format!("worker {me}'s jobs ({ROUNDS} rounds)"),
        None::<std::io::Error>,
    ))
}

/// Whether every job is handed out and the worker has done its own.
async fn finished(worker: &Worker, w: &Workload) -> bool {
    matches!(
        (worker.assigned().await, worker.my_jobs().await),
        (Ok(n), Ok(mine)) if n >= w.ops && mine.is_empty()
    )
}

/// Reads the completions once everyone is done.
pub(crate) async fn final_read(
    env: &Env<'_>,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    let p = w.clients as u64 + 1;
    let client = env.backend.client().await?;
    let completions = until_ok("opening the completions", || {
        scheduler::completions(&client, ROOT)
    })
    .await?;
    rec.invoke(p, "read", Value::Null, None);
    let read = until_ok("the final read", || completions.deref()).await?;
    rec.complete(EventType::Ok, p, "read", json!(read), None);
    Ok(())
}
