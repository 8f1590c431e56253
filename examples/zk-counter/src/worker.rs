//! The service's processes: each takes the lock (or leadership) again and again, adds one to
//! the node it guards, and lets go; on a new session whenever one ends, as an application on
//! `zookeeper-client` must (it has no managed client).

use std::time::Duration;

use zookeeper_client as zk;

use crate::service::{Hold, Service};

/// What a process does with a hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Takes the counter's lock and adds one to the counter.
    Counter,
    /// Takes leadership and adds one to the epoch.
    Leader,
}

/// A process's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The ensemble's connect string.
    pub cluster: String,
    /// The session timeout to ask for.
    pub session_timeout: Duration,
    /// How long a process waits for the lock before it tries again.
    pub patience: Duration,
    /// How many tries (of the lock, or of a session) a process makes before it gives up.
    pub tries: usize,
    /// How long a process waits after a try that failed.
    pub backoff: Duration,
    /// Whether a process that waited for the lock for `patience` starts again on a new
    /// session. It must: `zookeeper-client` 0.11.2's lock, cancelled while its node's create
    /// is outstanding, can leave that node behind, first in line for as long as the session
    /// lives (the crate's README, *What the simulator found*). Closing the session takes the
    /// node with it.
    pub renew_session_after_timeout: bool,
}

impl Config {
    /// Defaults for the ensemble at `cluster`.
    pub fn new(cluster: &str) -> Config {
        Config {
            cluster: cluster.to_owned(),
            session_timeout: Duration::from_secs(6),
            patience: Duration::from_secs(4),
            tries: 200,
            backoff: Duration::from_millis(100),
            renew_session_after_timeout: true,
        }
    }
}

/// A step of a process, as it reports it to [`Events`].
#[derive(Debug)]
pub enum Step<'a> {
    /// It asks for the lock.
    Acquiring,
    /// It holds it, with this token.
    Acquired(i64),
    /// It did not get it: an error, or it waited for `patience` (`None`).
    NotAcquired(Option<&'a zk::Error>),
    /// It writes `value` under the hold of `token`.
    Writing {
        /// The hold's token.
        token: i64,
        /// What it writes.
        value: u64,
    },
    /// How the write ended.
    Written(&'a Result<(), zk::Error>),
    /// It lets go of the hold of `token`.
    Releasing(i64),
    /// It let go; `clean` if the lock node still stood then (else the hold was lost).
    Released {
        /// Whether the hold lasted until it let go.
        clean: bool,
    },
}

/// Where a process reports what it does: for logging, metrics, or a test's history.
pub trait Events {
    /// One step.
    fn step(&self, step: Step<'_>);
}

/// Why a process stopped before its work was done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GaveUp {
    /// What it did.
    pub done: usize,
    /// How many tries it made.
    pub tries: usize,
}

impl std::fmt::Display for GaveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gave up after {} tries, {} done", self.tries, self.done)
    }
}

impl std::error::Error for GaveUp {}

/// One process: `ops` additions in `role`, on a new session whenever one ends; gives up
/// after `config.tries` tries.
pub async fn run(
    config: &Config,
    role: Role,
    ops: usize,
    events: &impl Events,
) -> Result<(), GaveUp> {
    let mut done = 0;
    let mut tries = 0;
    let mut service: Option<Service> = None;
    while done < ops {
        tries += 1;
        if tries > config.tries {
            return Err(GaveUp { done, tries });
        }
        let svc = match &service {
            Some(svc) if !svc.is_over() => svc,
            _ => {
                service = Service::connect(&config.cluster, config.session_timeout)
                    .await
                    .ok();
                if service.is_none() {
                    tokio::time::sleep(config.backoff).await;
                }
                continue;
            }
        };
        let tried = attempt(svc, role, config, events).await;
        match tried {
            Tried::Held(written) => done += usize::from(written),
            Tried::Waited => {
                if config.renew_session_after_timeout {
                    service = None;
                }
            }
            // A retry at once would fail the same way: wait a little, on a new session if
            // this one is over.
            Tried::Failed { session_over } => {
                if session_over {
                    service = None;
                }
                tokio::time::sleep(config.backoff).await;
            }
        }
    }
    Ok(())
}

/// One try: the lock (or leadership), then one addition and the release.
async fn attempt(svc: &Service, role: Role, config: &Config, events: &impl Events) -> Tried {
    events.step(Step::Acquiring);
    let held = match role {
        Role::Counter => svc.lock(config.patience).await,
        Role::Leader => svc.campaign(config.patience).await,
    };
    match held {
        Ok(Some(hold)) => Tried::Held(add_one(&hold, events).await),
        Ok(None) => {
            events.step(Step::NotAcquired(None));
            Tried::Waited
        }
        Err(e) => {
            events.step(Step::NotAcquired(Some(&e)));
            Tried::Failed {
                session_over: matches!(
                    e,
                    zk::Error::SessionExpired | zk::Error::ClientClosed | zk::Error::AuthFailed
                ),
            }
        }
    }
}

/// How a try of the lock went.
enum Tried {
    /// Held; whether the write went through.
    Held(bool),
    /// Not held within the patience.
    Waited,
    /// Refused or failed.
    Failed { session_over: bool },
}

/// Adds one to the node `hold` guards and lets go; whether the write went through.
async fn add_one(hold: &Hold<'_>, events: &impl Events) -> bool {
    let token = hold.token();
    events.step(Step::Acquired(token));
    let written = match hold.read().await {
        Ok(n) => {
            events.step(Step::Writing {
                token,
                value: n + 1,
            });
            let result = hold.write(n + 1).await;
            events.step(Step::Written(&result));
            result.is_ok()
        }
        Err(_) => false,
    };
    events.step(Step::Releasing(token));
    let clean = matches!(hold.still_held().await, Ok(true));
    events.step(Step::Released { clean });
    written
}
