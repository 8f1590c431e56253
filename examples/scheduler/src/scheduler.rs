//! The application: a job scheduler on avout. Jobs wait in a queue; the worker that wins the
//! election hands them out, one worker each, in an assignments atom; each worker does the
//! jobs handed to it and records them in a completions atom.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use avout::Client;
use avout::atom::{Atom, AtomError};
use avout::lock::LockError;
use avout::recipes::election::{Election, Leadership};
use avout::recipes::queue::{Queue, QueueError};

/// Which worker each handed-out job went to.
pub type Assignments = BTreeMap<String, usize>;

/// The workers that recorded each job as done (exactly one each, in a correct scheduler).
pub type Completions = BTreeMap<String, Vec<usize>>;

/// Why a scheduler call failed.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// The election failed.
    #[error(transparent)]
    Election(#[from] LockError),
    /// The job queue failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// An atom (assignments or completions) failed.
    #[error(transparent)]
    Atom(#[from] AtomError),
}

/// A worker's handles, built once on its managed client (they outlive its sessions).
pub struct Worker {
    me: usize,
    workers: usize,
    election: Election,
    jobs: Queue,
    assignments: Atom<Assignments>,
    completions: Atom<Completions>,
    done: BTreeSet<String>,
    next: usize,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("me", &self.me)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// The job queue of the scheduler at `root`, for submitters.
pub fn jobs(client: &Client, root: &str) -> Result<Queue, QueueError> {
    Queue::new(client, format!("{root}/jobs"))
}

/// The completions atom of the scheduler at `root`.
pub async fn completions(client: &Client, root: &str) -> Result<Atom<Completions>, AtomError> {
    Atom::open(client, format!("{root}/completions"), Completions::new()).await
}

impl Worker {
    /// Worker `me` of `workers`, of the scheduler at `root`.
    pub async fn open(
        client: &Client,
        root: &str,
        me: usize,
        workers: usize,
    ) -> Result<Self, SchedulerError> {
        Ok(Worker {
            me,
            workers,
            election: Election::new(client, format!("{root}/leader"))?,
            jobs: jobs(client, root)?,
            assignments: Atom::open(client, format!("{root}/assignments"), Assignments::new())
                .await?,
            completions: completions(client, root).await?,
            done: BTreeSet::new(),
            next: me,
        })
    }

    /// Stands for leader for at most `patience`.
    pub async fn campaign(&self, patience: Duration) -> Result<Option<Leadership>, LockError> {
        self.election.campaign_for(patience).await
    }

    /// As leader, takes the next job from the queue and hands it to the next worker (round
    /// robin); `None` when the queue is empty.
    ///
    /// The assignment is an insert-if-absent, so doing it again after an error in doubt
    /// changes nothing: the caller retries it with [`Worker::assign`] until it is in.
    pub async fn take_job(&mut self) -> Result<Option<(String, usize)>, QueueError> {
        let Some(job) = self.jobs.try_take().await? else {
            return Ok(None);
        };
        let to = self.next % self.workers;
        self.next += 1;
        Ok(Some((String::from_utf8_lossy(&job.data).into_owned(), to)))
    }

    /// Records that `job` goes to worker `to` (unless it went somewhere already).
    pub async fn assign(&self, job: &str, to: usize) -> Result<usize, AtomError> {
        let after = self
            .assignments
            .swap(|a| {
                let mut a = a.clone();
                a.entry(job.to_owned()).or_insert(to);
                a
            })
            .await?;
        Ok(after[job])
    }

    /// The jobs handed to this worker that it has not done yet.
    pub async fn my_jobs(&self) -> Result<Vec<String>, AtomError> {
        let assignments = self.assignments.deref().await?;
        Ok(assignments
            .into_iter()
            .filter(|(job, to)| *to == self.me && !self.done.contains(job))
            .map(|(job, _)| job)
            .collect())
    }

    /// Does `job` and records it in the completions atom.
    pub async fn complete(&mut self, job: &str) -> Result<(), AtomError> {
        self.record(job).await?;
        self.done.insert(job.to_owned());
        Ok(())
    }

    /// The completion record: one atomic, idempotent swap (retrying it after an error in
    /// doubt cannot record the job twice).
    #[cfg(not(feature = "planted"))]
    async fn record(&self, job: &str) -> Result<(), AtomError> {
        let me = self.me;
        self.completions
            .swap(|c| {
                let mut c = c.clone();
                let by = c.entry(job.to_owned()).or_default();
                if !by.contains(&me) {
                    by.push(me);
                }
                c
            })
            .await
            .map(drop)
    }

    /// The planted bug: the completion record read, changed and written back in two steps,
    /// so a worker that records between them is overwritten (a lost update).
    #[cfg(feature = "planted")]
    async fn record(&self, job: &str) -> Result<(), AtomError> {
        let mut c = self.completions.deref().await?;
        c.entry(job.to_owned()).or_default().push(self.me);
        self.completions.reset(c).await
    }

    /// How many jobs are handed out.
    pub async fn assigned(&self) -> Result<usize, AtomError> {
        Ok(self.assignments.deref().await?.len())
    }
}
