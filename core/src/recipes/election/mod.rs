//! Leader election: ZooKeeper's recipe, with Curator `LeaderLatch`'s node names, and a term
//! number per leadership for fencing.
//!
//! # Algorithm
//!
//! Each candidate creates an ephemeral-sequential node `_c_<GUID>-latch-<seq>` under the
//! election path, carrying its participant id. The candidate with the lowest sequence number
//! leads. Every other candidate watches only the candidate just below it (no herd: when the
//! leader goes, exactly one candidate is notified) and, when that node goes, re-reads the
//! children: it leads if it is now the lowest, else it watches the new next-lower node. This is
//! the lock recipe with leadership as the lock, so it runs the same machine,
//! [`AcquireMachine`] with [`LockKind::Latch`], and Apache Curator's `LeaderLatch` on the same
//! path takes part in the same election.
//!
//! # Terms
//!
//! A leadership's **term** is its candidate node's creation zxid (`czxid`). It increases
//! strictly from one leadership to the next: a candidate leads only once every node created
//! before its own is gone, so the next leader's node, and zxid, is younger. A candidate that
//! resigns and runs again gets a new node and a new term. Pass the term to the resources the
//! leader writes to; a resource that remembers the largest term it has seen refuses a former
//! leader that does not yet know it was replaced (paused past its session timeout, say).
//!
//! # Connection loss, session expiry, cancellation
//!
//! - While campaigning, a connection loss is recovered: the candidate's node is found again by
//!   the GUID in its name (and its owner checked) instead of a second candidate being queued.
//! - Leadership lasts as long as the session: an expiry deletes the candidate node, and the
//!   next candidate takes over. [`Leadership::lost`] resolves and [`Leadership::is_leader`]
//!   turns false when the session ends or the node is deleted: from the moment it is
//!   elected, a leader watches its own node with [`MonitorMachine`](crate::lock::MonitorMachine)
//!   (an `exists` watch, asked again after every event and every reconnection). While the connection is down
//!   the leadership is in doubt (the session may be expiring unseen):
//!   [`Leadership::status`] says [`LockStatus::Suspended`] and `is_leader` is false; act as
//!   leader only on `Held`, and fence writes with the term.
//! - Dropping a campaign future withdraws the candidate (its node is removed in the
//!   background); dropping a [`Leadership`] resigns like [`Leadership::resign`].
//! - Across sessions: a [`Leadership`] belongs to the session it was won on and ends with
//!   it; the [`Election`] handle's next campaign runs on the client's next session. A
//!   [`LeaderLatch`] ([`Election::latch`]) does that by itself: it stands again after every
//!   loss, on the next session if the last one ended, and reports each loss and each new
//!   term to its observers.

use std::time::Duration;

use crate::task::watch;

mod latch;
mod selector;

pub use latch::{LatchEvents, LatchState, LeaderLatch};
pub use selector::{LeaderObserver, LeaderSelector};

use crate::client::Session;
use crate::coverage::{self, Mark};
use crate::lock::{
    AcquireMachine, Acquired, LockError, LockKind, LockStatus, Patience, acquire_node,
    delete_idempotent, node_lost, pause_for_retry, session_status, spawn_cleanup,
};
use crate::planted::{Bug, Bugs};
use crate::{Client, Error, path};

/// A participant in the election at one path; see the [module docs](self).
///
/// ```no_run
/// use avout::recipes::election::Election;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::lock::LockError> {
/// let election = Election::new(client, "/services/billing/leader")?.with_id("billing-7");
/// let leadership = election.campaign().await?;
/// let term = leadership.term();
/// tokio::select! {
///     lost = leadership.lost() => eprintln!("no longer leader: {lost}"),
///     () = async { /* lead, tagging writes with `term` */ } => leadership.resign().await?,
/// }
/// # Ok(()) }
/// ```
pub struct Election {
    client: Client,
    path: String,
    id: Vec<u8>,
    planted: Bugs,
}

impl Clone for Election {
    fn clone(&self) -> Self {
        Election {
            client: self.client.clone(),
            path: self.path.clone(),
            id: self.id.clone(),
            planted: self.planted,
        }
    }
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Election")
            .field("path", &self.path)
            .field("id", &String::from_utf8_lossy(&self.id))
            .finish()
    }
}

/// Who leads an election, as an observer sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Leader {
    /// The leader's candidate node.
    pub node: String,
    /// Its participant id (the node's data).
    pub id: Vec<u8>,
    /// Its term (the node's creation zxid).
    pub term: i64,
}

impl Election {
    /// A participant in the election at `path` (created with its parents on first use), with
    /// an empty participant id.
    ///
    /// Fails with [`Error::InvalidPath`] for an invalid path.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// assert!(avout::recipes::election::Election::new(client, "bad").is_err());
    /// # }
    /// ```
    pub fn new(client: &Client, path: impl Into<String>) -> Result<Self, LockError> {
        let path = path.into();
        path::validate_path(&path, false)?;
        Ok(Election {
            client: client.clone(),
            path,
            id: Vec::new(),
            planted: Bugs::NONE,
        })
    }

    /// The same participant with `bugs` planted (none by default; see [`crate::planted`]):
    /// in its campaigns, its leaderships, its latches and its look-ups of the leader.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// use avout::recipes::election::Election;
    /// let e = Election::new(client, "/leader").unwrap().planted(avout::planted::Bugs::NONE);
    /// # }
    /// ```
    pub fn planted(mut self, bugs: Bugs) -> Self {
        self.planted = bugs;
        self
    }

    /// The same participant, identified by `id` (stored as its candidate node's data, where
    /// [`leader`](Self::leader) and Curator's `LeaderLatch::getLeader` read it).
    ///
    /// ```no_run
    /// # fn demo(e: avout::recipes::election::Election) {
    /// let e = e.with_id("host-a:8080");
    /// # }
    /// ```
    pub fn with_id(mut self, id: impl Into<Vec<u8>>) -> Self {
        self.id = id.into();
        self
    }

    /// The election's path.
    ///
    /// ```no_run
    /// # fn demo(e: avout::recipes::election::Election) {
    /// println!("{}", e.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Stands as a candidate and waits until elected. Fails only when the session is lost or
    /// a request is refused.
    ///
    /// Each call is a separate candidate; a participant normally campaigns once and campaigns
    /// again only after its leadership ended.
    ///
    /// ```no_run
    /// # async fn demo(e: avout::recipes::election::Election) -> Result<(), avout::lock::LockError> {
    /// let leadership = e.campaign().await?;
    /// assert!(leadership.is_leader());
    /// # Ok(()) }
    /// ```
    pub async fn campaign(&self) -> Result<Leadership, LockError> {
        self.run(Patience::Forever).await
    }

    /// Leads if nobody else is a candidate now; `Ok(None)` otherwise (the candidate is
    /// withdrawn).
    ///
    /// ```no_run
    /// # async fn demo(e: avout::recipes::election::Election) -> Result<(), avout::lock::LockError> {
    /// if let Some(leadership) = e.try_campaign().await? { leadership.resign().await?; }
    /// # Ok(()) }
    /// ```
    pub async fn try_campaign(&self) -> Result<Option<Leadership>, LockError> {
        match self.run(Patience::None).await {
            Err(LockError::WouldBlock) => Ok(None),
            other => other.map(Some),
        }
    }

    /// Stands for at most `timeout`; `Ok(None)` if not elected in time (the candidate is
    /// withdrawn before returning).
    ///
    /// ```no_run
    /// # async fn demo(e: avout::recipes::election::Election) -> Result<(), avout::lock::LockError> {
    /// let maybe = e.campaign_for(std::time::Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn campaign_for(&self, timeout: Duration) -> Result<Option<Leadership>, LockError> {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        match self.run(Patience::Millis(ms)).await {
            Err(LockError::TimedOut) => Ok(None),
            other => other.map(Some),
        }
    }

    async fn run(&self, patience: Patience) -> Result<Leadership, LockError> {
        let zk = self.client.current_session().await?;
        let machine = AcquireMachine::new(
            &self.path,
            LockKind::Latch,
            zk.new_guid(),
            zk.session().id.0,
            patience,
            Vec::new(),
        )
        .with_data(self.id.clone())
        .planted(self.planted);
        let acquired = acquire_node(&zk, machine, &self.path).await?;
        Ok(Leadership::start(zk, acquired, self.planted))
    }

    /// Stands for leadership until the returned latch is closed or dropped, across the
    /// client's sessions (Curator's `LeaderLatch`); see [`LeaderLatch`]. MUST be called
    /// within a tokio runtime.
    ///
    /// ```no_run
    /// # async fn demo(e: avout::recipes::election::Election) -> Result<(), avout::lock::LockError> {
    /// let latch = e.latch();
    /// let term = latch.leading().await?;
    /// # Ok(()) }
    /// ```
    pub fn latch(&self) -> LeaderLatch {
        LeaderLatch::start(self.clone())
    }

    /// The current leader, read from the service (`None` if there are no candidates). Reads
    /// may lag the leader by a moment on a follower; the answer is a snapshot either way.
    ///
    /// ```no_run
    /// # async fn demo(e: avout::recipes::election::Election) -> Result<(), avout::lock::LockError> {
    /// if let Some(leader) = e.leader().await? {
    ///     println!("{} leads in term {}", String::from_utf8_lossy(&leader.id), leader.term);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn leader(&self) -> Result<Option<Leader>, LockError> {
        let zk = &*self.client.current_session().await?;
        let mut states = zk.session_states();
        loop {
            let children = match zk.get_children(&self.path).await {
                Ok((children, _)) => children,
                Err(Error::NoNode { .. }) => return Ok(None),
                Err(e) if e.is_indeterminate() => {
                    pause_for_retry(&mut states).await?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let Some(first) = children
                .iter()
                .filter(|c| c.contains(LockKind::Latch.marker()))
                .filter_map(|c| Some((path::sequence(c)?, c)))
                .min()
                .map(|(_, c)| path::join(&self.path, c))
            else {
                return Ok(None);
            };
            // Buggify (simulations only): a pause between the listing and the read lets the
            // leader resign in between, the race the `NoNode` arm below recovers from.
            if crate::buggify::fires() {
                crate::buggify::pause().await;
            }
            match zk.get_data(&first).await {
                Ok((id, stat)) => {
                    return Ok(Some(Leader {
                        node: first,
                        id,
                        term: stat.czxid,
                    }));
                }
                // The planted CURATOR-358: the race surfaces as an error.
                Err(e @ Error::NoNode { .. }) if self.planted.contains(Bug::Curator358) => {
                    return Err(e.into());
                }
                // Resigned meanwhile: look again.
                Err(Error::NoNode { .. }) => {}
                Err(e) if e.is_indeterminate() => pause_for_retry(&mut states).await?,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Being the leader: held until resigned, dropped, or lost with the session or the node.
///
/// A background task watches the candidate node (it drives a
/// [`MonitorMachine`](crate::lock::MonitorMachine), the machine the election model runs
/// too), so [`is_leader`](Self::is_leader) turns false soon after the node is deleted,
/// without anyone awaiting [`lost`](Self::lost).
///
/// ```no_run
/// # async fn demo(e: avout::recipes::election::Election) -> Result<(), avout::lock::LockError> {
/// let leadership = e.campaign().await?;
/// println!("leading from {} in term {}", leadership.node(), leadership.term());
/// leadership.resign().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the leadership resigns it"]
pub struct Leadership {
    zk: Session,
    acquired: Acquired,
    /// Why the leadership ended, once the monitor has seen it end.
    ended: watch::Receiver<Option<LockError>>,
    monitor: Option<tokio::task::JoinHandle<()>>,
    resigned: bool,
    planted: Bugs,
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership")
            .field("node", &self.acquired.node)
            .field("term", &self.acquired.fencing_token)
            .finish()
    }
}

impl Leadership {
    fn start(zk: Session, acquired: Acquired, planted: Bugs) -> Self {
        let (tx, ended) = watch::channel(None);
        let monitor = {
            let zk = zk.clone();
            let node = acquired.node.clone();
            crate::task::spawn(async move {
                let reason = node_lost(&*zk, &node).await;
                if matches!(reason, LockError::SessionLost(_)) {
                    coverage::reach(Mark::ElectionLeaderSessionEnded);
                }
                tx.send_replace(Some(reason));
            })
        };
        Leadership {
            zk,
            acquired,
            ended,
            monitor: Some(monitor),
            resigned: false,
            planted,
        }
    }

    /// This leadership's term: the candidate node's creation zxid, strictly larger than any
    /// earlier leader's (see the [module docs](self)). Use it as a fencing token.
    ///
    /// ```no_run
    /// # fn demo(l: avout::recipes::election::Leadership) {
    /// let term: i64 = l.term();
    /// # }
    /// ```
    pub fn term(&self) -> i64 {
        self.acquired.fencing_token
    }

    /// The candidate node's path (`<election>/_c_<GUID>-latch-<seq>`).
    ///
    /// ```no_run
    /// # fn demo(l: avout::recipes::election::Leadership) {
    /// println!("{}", l.node());
    /// # }
    /// ```
    pub fn node(&self) -> &str {
        &self.acquired.node
    }

    /// Whether this process may act as leader now: the session is connected and the node has
    /// not been seen to go. False while the connection is down (the leadership is in doubt).
    ///
    /// ```no_run
    /// # fn demo(l: avout::recipes::election::Leadership) {
    /// if !l.is_leader() { /* stop leading */ }
    /// # }
    /// ```
    pub fn is_leader(&self) -> bool {
        self.status() == LockStatus::Held
    }

    /// [`LockStatus::Held`] while leading, [`LockStatus::Suspended`] while the connection is
    /// down, [`LockStatus::Lost`] once the session ended or the node went.
    ///
    /// ```no_run
    /// # fn demo(l: avout::recipes::election::Leadership) {
    /// use avout::lock::LockStatus;
    /// assert_ne!(l.status(), LockStatus::Lost);
    /// # }
    /// ```
    pub fn status(&self) -> LockStatus {
        if self.ended.borrow().is_some() {
            return LockStatus::Lost;
        }
        session_status(&*self.zk)
    }

    /// Resolves when the leadership is lost: the session ended or the node was deleted.
    ///
    /// ```no_run
    /// # async fn demo(l: avout::recipes::election::Leadership) {
    /// let why = l.lost().await;
    /// eprintln!("leadership lost: {why}");
    /// # }
    /// ```
    pub async fn lost(&self) -> LockError {
        let mut ended = self.ended.clone();
        let reason = ended
            .wait_for(Option::is_some)
            .await
            .map(|reason| reason.clone().expect("waited for Some"));
        match reason {
            Ok(reason) => reason,
            // The monitor is gone only after sending, or when the runtime shuts down; watch
            // directly then.
            Err(_) => node_lost(&*self.zk, &self.acquired.node).await,
        }
    }

    /// Gives up the leadership: deletes the candidate node, so the next candidate leads.
    /// It returns once the node is gone (a read after it on the same client finds it gone),
    /// not when a delete is merely sent.
    ///
    /// ```no_run
    /// # async fn demo(l: avout::recipes::election::Leadership) -> Result<(), avout::lock::LockError> {
    /// l.resign().await?;
    /// # Ok(()) }
    /// ```
    pub async fn resign(mut self) -> Result<(), LockError> {
        self.resigned = true;
        if let Some(monitor) = self.monitor.take() {
            monitor.abort();
        }
        if self.planted.contains(Bug::Curator202) {
            // The planted CURATOR-202: one delete; a connection loss is taken as done, and
            // the node stays if the session survives it.
            return match self.zk.delete(&self.acquired.node, None).await {
                Err(e) if !e.is_indeterminate() && !matches!(e, Error::NoNode { .. }) => {
                    Err(e.into())
                }
                _ => Ok(()),
            };
        }
        delete_idempotent(&*self.zk, &self.acquired.node).await?;
        Ok(())
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(monitor) = self.monitor.take() {
            monitor.abort();
        }
        if self.resigned {
            return;
        }
        let zk = self.zk.clone();
        let node = self.acquired.node.clone();
        spawn_cleanup(async move { delete_idempotent(&*zk, &node).await });
    }
}

#[cfg(test)]
mod tests;
