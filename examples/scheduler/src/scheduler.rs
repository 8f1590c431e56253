//! The application: a job scheduler on avout. Jobs wait in a queue; the worker that wins the
//! election hands them out, one worker each, in an assignments atom; each worker does the
//! jobs handed to it and records them in a completions atom.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use avout::atom::{Atom, AtomError};
use avout::lock::LockError;
use avout::recipes::election::{Election, Leadership};
use avout::recipes::queue::Element;
use avout::recipes::queue::{Queue, QueueError};
use avout::{Client, Coordination};

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
    /// Reading or removing a queued job failed (a read changed nothing; a removal is
    /// idempotent, so either may be retried).
    #[error(transparent)]
    Zk(#[from] avout::Error),
}

/// A job at the head of the queue, read but not yet removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued {
    /// The job's name (the element's payload).
    pub job: String,
    /// The worker it goes to, unless an earlier leader assigned it already.
    pub to: usize,
    /// The queue element holding it, deleted once the job is assigned.
    element: String,
}

/// A worker's handles, built once on its managed client (they outlive its sessions).
pub struct Worker {
    client: Client,
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
            client: client.clone(),
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

    /// As leader, reads the first job in the queue and picks the next worker (round robin)
    /// for it; `None` when the queue is empty. The job stays queued until
    /// [`Worker::dequeue`], after [`Worker::assign`].
    pub async fn next_job(&mut self) -> Result<Option<Queued>, SchedulerError> {
        let queue = self.jobs.path();
        let mut elements: Vec<Element> = match self.client.get_children(queue).await {
            Ok((children, _)) => children
                .into_iter()
                .map(|name| Element {
                    name,
                    data: Vec::new(),
                })
                .filter(|e| e.sequence().is_some())
                .collect(),
            Err(avout::Error::NoNode { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        elements.sort_by_key(|e| (e.priority(), e.sequence()));
        for e in elements {
            let element = format!("{queue}/{}", e.name);
            let data = match self.client.get_data(&element).await {
                Ok((data, _)) => data,
                // Removed by another leader since the listing.
                Err(avout::Error::NoNode { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            let to = self.next % self.workers;
            self.next += 1;
            let job = String::from_utf8_lossy(&data).into_owned();
            return Ok(Some(Queued { job, to, element }));
        }
        Ok(None)
    }

    /// Removes an assigned job from the queue; already removed counts as done, so it may be
    /// retried after an error in doubt.
    pub async fn dequeue(&self, queued: &Queued) -> Result<(), avout::Error> {
        match self.client.delete(&queued.element, None).await {
            Ok(()) | Err(avout::Error::NoNode { .. }) => Ok(()),
            Err(e) => Err(e),
        }
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
