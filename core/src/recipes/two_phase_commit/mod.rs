//! Two-phase commit (ZooKeeper's two-phased-commit recipe), with site failure detected
//! through ephemeral nodes the sites create themselves.
//!
//! # Layout
//!
//! ```text
//! <tx>              the transaction; data = the payload the coordinator propagates
//! <tx>/owner        the coordinator's GUID (recognises its own create after a connection loss)
//! <tx>/s_<site>     one vote node per site, created empty by the coordinator;
//!                   the site writes "joined" (version 1), then "commit" or "abort" (version 2)
//! <tx>/p_<site>     the site's ephemeral presence node, created by the site as it joins
//! <tx>/outcome      "commit" or "abort": the decision, created once
//! ```
//!
//! # The algorithm
//!
//! The coordinator creates the transaction, its owner node and every vote node in one `multi`
//! ([`Coordinator::begin`]). A site joins ([`Site::join`]) by marking its vote node "joined"
//! and creating its presence node in one `multi`, so "joined" ⇔ "was present". It votes by
//! writing its vote node in a `multi` that also checks its presence node, so a site whose
//! session ended can no longer vote.
//!
//! Anyone (sites, coordinator) reads the outcome the same way ([`OutcomeMachine`]): read every
//! vote node with a data watch, *then* the transaction's children with a child watch (the order
//! matters: a vote read "joined" before the presence node is seen missing proves the site left
//! before voting). The decision is **abort** if any site voted abort, or if a site joined,
//! did not vote and its presence node is gone (it died or gave up); **commit** if every site
//! voted commit; otherwise wait for a watch and read again (at once if one of the reading's
//! own watches fired before its last reply: that watch is spent, and waiting on the others
//! could wait forever). The first to see a decision creates `outcome`; a `NodeExists` means
//! someone decided first, and `outcome`'s content is what everyone returns, so the outcome
//! is decided once and is the same for all. The
//! coordinator may also abort an undecided transaction ([`Transaction::abort`]), for example
//! when a site never joins.
//!
//! This is the recipe's symmetric variant (every participant can decide: O(n²) watch
//! notifications for n sites); the recipe's second drawback, that the coordinator cannot
//! detect a site's failure through a node it created, is avoided by the presence nodes.
//!
//! # Connection loss, session expiry, cancellation
//!
//! - Connection loss: begin, join and vote are [`OnceMachine`]s (recognised after a loss by
//!   the owner GUID, the presence node, or the vote's bytes); reads are redone; creating
//!   `outcome` is idempotent (its content, whoever wrote it, is the answer).
//! - A site's session expiring deletes its presence node: if it had not voted, the transaction
//!   aborts. A [`Site`] is its presence, so it is not re-created: its vote and payload reads
//!   then fail with [`TwoPhaseError::SessionLost`]. Waiting for the outcome, from a
//!   [`Site`] or a [`Transaction`], goes on on the client's next session (the outcome is a
//!   persistent node), as do a transaction's abort and removal.
//! - Dropping a [`Site`] deletes its presence node (an unvoted site thereby aborts the
//!   transaction); dropping a wait for the outcome changes nothing.

use std::collections::BTreeMap;

use crate::client::Session;
use crate::machine::{
    Machine, Millis, Outbox, Reply, Request, Resumed, Stall, Token, drive, idempotent,
};
use crate::{
    Client, Coordination, CoordinationExt, CreateMode, CreateOptions, Error, Op, SessionState,
    WatchedEvent, path,
};

use super::once::{Once, OnceMachine, Proof, guid_hex, spawn_cleanup};

const OWNER: &str = "owner";
const OUTCOME: &str = "outcome";
const VOTE: &str = "s_";
const PRESENCE: &str = "p_";
const JOINED: &[u8] = b"joined";

/// Why a two-phase-commit operation failed.
///
/// ```
/// use avout::recipes::two_phase_commit::TwoPhaseError;
/// assert!(matches!(TwoPhaseError::from(avout::Error::SessionExpired), TwoPhaseError::SessionLost(_)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum TwoPhaseError {
    /// A transaction already exists at the path (begun by someone else).
    #[error("a transaction already exists at {path}")]
    Exists {
        /// The transaction's path.
        path: String,
    },
    /// No transaction at the path, or it was removed.
    #[error("no transaction at {path}")]
    NoTransaction {
        /// The transaction's path.
        path: String,
    },
    /// The site is not one of the transaction's sites.
    #[error("{site} is not a site of {path}")]
    NotASite {
        /// The transaction's path.
        path: String,
        /// The site.
        site: String,
    },
    /// The site already joined (from another session) or already voted.
    #[error("site {site} already joined or voted")]
    AlreadyJoined {
        /// The site.
        site: String,
    },
    /// The site's presence node is gone (its session ended, or it was dropped): it cannot
    /// vote any more.
    #[error("site {site} is no longer present")]
    NotPresent {
        /// The site.
        site: String,
    },
    /// The session ended.
    #[error("session lost: {0}")]
    SessionLost(Error),
    /// The coordination service refused a request (bad path, no access, …).
    #[error(transparent)]
    Zk(Error),
}

impl From<Error> for TwoPhaseError {
    fn from(error: Error) -> Self {
        if error.is_session_lost() {
            TwoPhaseError::SessionLost(error)
        } else {
            TwoPhaseError::Zk(error)
        }
    }
}

/// A site's vote.
///
/// ```
/// assert_eq!(avout::recipes::two_phase_commit::Vote::Commit.as_bytes(), b"commit");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vote {
    /// Ready to commit.
    Commit,
    /// Cannot commit.
    Abort,
}

impl Vote {
    /// How the vote is written in the site's node.
    ///
    /// ```
    /// assert_eq!(avout::recipes::two_phase_commit::Vote::Abort.as_bytes(), b"abort");
    /// ```
    pub fn as_bytes(self) -> &'static [u8] {
        match self {
            Vote::Commit => b"commit",
            Vote::Abort => b"abort",
        }
    }
}

/// The transaction's decision.
///
/// ```
/// use avout::recipes::two_phase_commit::Outcome;
/// assert_eq!(Outcome::parse(b"commit"), Some(Outcome::Commit));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Every site voted commit.
    Commit,
    /// A site voted abort, a site left before voting, or the coordinator aborted.
    Abort,
}

impl Outcome {
    /// How the outcome is written in the `outcome` node.
    ///
    /// ```
    /// assert_eq!(avout::recipes::two_phase_commit::Outcome::Abort.as_bytes(), b"abort");
    /// ```
    pub fn as_bytes(self) -> &'static [u8] {
        match self {
            Outcome::Commit => b"commit",
            Outcome::Abort => b"abort",
        }
    }

    /// Reads an outcome node's content.
    ///
    /// ```
    /// assert_eq!(avout::recipes::two_phase_commit::Outcome::parse(b"maybe"), None);
    /// ```
    pub fn parse(bytes: &[u8]) -> Option<Outcome> {
        match bytes {
            b"commit" => Some(Outcome::Commit),
            b"abort" => Some(Outcome::Abort),
            _ => None,
        }
    }
}

/// The decision rule over a consistent reading: votes (read first) and present sites (read
/// after). `None`: not decided yet.
fn decide(votes: &BTreeMap<String, Vec<u8>>, present: &[String]) -> Option<Outcome> {
    if votes.values().any(|v| v == Vote::Abort.as_bytes()) {
        return Some(Outcome::Abort);
    }
    if votes.values().all(|v| v == Vote::Commit.as_bytes()) {
        return Some(Outcome::Commit);
    }
    let deserted = votes
        .iter()
        .any(|(site, v)| v == JOINED && !present.contains(site));
    deserted.then_some(Outcome::Abort)
}

mod machine;
pub use machine::OutcomeMachine;

fn check_site(site: &str) -> Result<(), TwoPhaseError> {
    if site.is_empty() || site.contains('/') {
        return Err(Error::BadArguments(format!("invalid site name {site:?}")).into());
    }
    Ok(())
}

/// Starts transactions; see the [module docs](self).
#[derive(Debug)]
pub struct Coordinator;

impl Coordinator {
    /// Creates the transaction at `tx` for `sites`, carrying `payload` for the sites to read.
    /// Fails with [`TwoPhaseError::Exists`] if a transaction is already there.
    ///
    /// ```no_run
    /// use avout::recipes::two_phase_commit::{Coordinator, Outcome};
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::recipes::two_phase_commit::TwoPhaseError> {
    /// let tx = Coordinator::begin(client, "/txns/t-42", &["db", "cache"], b"UPDATE ...").await?;
    /// match tx.outcome().await? {
    ///     Outcome::Commit => println!("committed"),
    ///     Outcome::Abort => println!("aborted"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn begin<S: AsRef<str>>(
        client: &Client,
        tx: &str,
        sites: &[S],
        payload: &[u8],
    ) -> Result<Transaction, TwoPhaseError> {
        path::validate_path(tx, false)?;
        let zk = client.current_session().await?;
        let mut names: Vec<String> = sites.iter().map(|s| s.as_ref().to_owned()).collect();
        for site in &names {
            check_site(site)?;
        }
        names.sort();
        names.dedup();
        if let Some(parent) = path::parent(tx).filter(|p| *p != "/") {
            let zk = &*zk;
            idempotent(zk, || zk.ensure_path(parent)).await?;
        }
        let guid = guid_hex(zk.new_guid()).into_bytes();
        let owner = path::join(tx, OWNER);
        let mut ops = vec![
            Op::create(tx, payload.to_vec(), CreateMode::Persistent),
            Op::create(owner.clone(), guid.clone(), CreateMode::Persistent),
        ];
        ops.extend(names.iter().map(|site| {
            Op::create(
                path::join(tx, &format!("{VOTE}{site}")),
                Vec::new(),
                CreateMode::Persistent,
            )
        }));
        let mut machine = OnceMachine::new(ops, Proof::Data(owner, guid), zk.session().id.0);
        match drive(&*zk, &mut machine).await {
            Ok(Once::Applied { .. }) => Ok(Transaction {
                client: client.clone(),
                path: tx.to_owned(),
                sites: names,
            }),
            Ok(Once::Conflict) => Err(TwoPhaseError::Exists {
                path: tx.to_owned(),
            }),
            Err(Error::Multi { index: 0, source })
                if matches!(*source, Error::NodeExists { .. }) =>
            {
                Err(TwoPhaseError::Exists {
                    path: tx.to_owned(),
                })
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// A transaction as its coordinator holds it.
pub struct Transaction {
    client: Client,
    path: String,
    sites: Vec<String>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("path", &self.path)
            .field("sites", &self.sites)
            .finish()
    }
}

/// Creates `outcome` as `Abort` unless it is decided, and returns the decision.
async fn force_abort<C: Coordination + ?Sized>(zk: &C, tx: &str) -> Result<Outcome, TwoPhaseError> {
    let node = path::join(tx, OUTCOME);
    // Creating a fixed path is idempotent: after a loss, NodeExists and the content decide.
    match idempotent(zk, || {
        zk.create(&node, Outcome::Abort.as_bytes(), &CreateOptions::default())
    })
    .await
    {
        Ok(_) | Err(Error::NodeExists { .. }) => {}
        Err(Error::NoNode { .. }) => {
            return Err(TwoPhaseError::NoTransaction {
                path: tx.to_owned(),
            });
        }
        Err(e) => return Err(e.into()),
    }
    let (data, _) = idempotent(zk, || zk.get_data(&node)).await?;
    Outcome::parse(&data).ok_or_else(|| {
        Error::Other(format!(
            "{node} holds {:?}, not an outcome",
            String::from_utf8_lossy(&data)
        ))
        .into()
    })
}

impl Transaction {
    /// The transaction's path.
    ///
    /// ```no_run
    /// # fn demo(t: avout::recipes::two_phase_commit::Transaction) {
    /// println!("{}", t.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Waits for the outcome (deciding it if the votes allow).
    ///
    /// ```no_run
    /// # async fn demo(t: avout::recipes::two_phase_commit::Transaction) -> Result<(), avout::recipes::two_phase_commit::TwoPhaseError> {
    /// let outcome = t.outcome().await?;
    /// # Ok(()) }
    /// ```
    pub async fn outcome(&self) -> Result<Outcome, TwoPhaseError> {
        self.client
            .across_sessions(
                |zk| async move {
                    let mut machine = OutcomeMachine::new(&self.path, Some(self.sites.clone()));
                    drive(&*zk, &mut machine).await
                },
                |e| matches!(e, TwoPhaseError::SessionLost(_)),
            )
            .await
    }

    /// Aborts the transaction unless it is already decided; returns the decision (which is
    /// `Commit` if every site had voted commit and someone decided first).
    ///
    /// ```no_run
    /// # async fn demo(t: avout::recipes::two_phase_commit::Transaction) -> Result<(), avout::recipes::two_phase_commit::TwoPhaseError> {
    /// use std::time::Duration;
    /// let outcome = match tokio::time::timeout(Duration::from_secs(30), t.outcome()).await {
    ///     Ok(outcome) => outcome?,
    ///     Err(_) => t.abort().await?, // a site never joined
    /// };
    /// # Ok(()) }
    /// ```
    pub async fn abort(&self) -> Result<Outcome, TwoPhaseError> {
        let zk = self.client.current_session().await?;
        force_abort(&*zk, &self.path).await
    }

    /// Deletes the transaction's nodes (once every participant has read the outcome: later
    /// readers get [`TwoPhaseError::NoTransaction`]).
    ///
    /// ```no_run
    /// # async fn demo(t: avout::recipes::two_phase_commit::Transaction) -> Result<(), avout::recipes::two_phase_commit::TwoPhaseError> {
    /// t.remove().await?;
    /// # Ok(()) }
    /// ```
    pub async fn remove(self) -> Result<(), TwoPhaseError> {
        let session = self.client.current_session().await?;
        let zk = &*session;
        idempotent(zk, || zk.delete_recursive(&self.path)).await?;
        Ok(())
    }
}

/// A site taking part in a transaction; see the [module docs](self).
///
/// ```no_run
/// use avout::recipes::two_phase_commit::{Outcome, Site, Vote};
/// # async fn demo(client: &avout::Client) -> Result<(), avout::recipes::two_phase_commit::TwoPhaseError> {
/// let site = Site::join(client, "/txns/t-42", "db").await?;
/// let query = site.payload().await?;
/// site.vote(Vote::Commit).await?;
/// if site.outcome().await? == Outcome::Commit { /* apply */ }
/// # Ok(()) }
/// ```
pub struct Site {
    /// The session of the site's presence node: the site lives and dies with it.
    zk: Session,
    client: Client,
    tx: String,
    name: String,
    dropped: bool,
}

impl std::fmt::Debug for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Site")
            .field("tx", &self.tx)
            .field("name", &self.name)
            .finish()
    }
}

impl Site {
    /// Joins the transaction at `tx` as site `name`: marks its vote node "joined" and creates
    /// its presence node, atomically.
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::recipes::two_phase_commit::TwoPhaseError> {
    /// let site = avout::recipes::two_phase_commit::Site::join(client, "/txns/t-1", "cache").await?;
    /// # Ok(()) }
    /// ```
    pub async fn join(client: &Client, tx: &str, name: &str) -> Result<Self, TwoPhaseError> {
        path::validate_path(tx, false)?;
        let zk = client.current_session().await?;
        check_site(name)?;
        let presence = path::join(tx, &format!("{PRESENCE}{name}"));
        let ops = vec![
            Op::set_data(
                path::join(tx, &format!("{VOTE}{name}")),
                JOINED.to_vec(),
                Some(0),
            ),
            Op::create(presence.clone(), Vec::new(), CreateMode::Ephemeral),
        ];
        let mut machine = OnceMachine::new(ops, Proof::OwnedEphemeral(presence), zk.session().id.0);
        let not_a_site = || TwoPhaseError::NotASite {
            path: tx.to_owned(),
            site: name.to_owned(),
        };
        let taken = || TwoPhaseError::AlreadyJoined {
            site: name.to_owned(),
        };
        match drive(&*zk, &mut machine).await {
            Ok(Once::Applied { .. }) => Ok(Site {
                zk,
                client: client.clone(),
                tx: tx.to_owned(),
                name: name.to_owned(),
                dropped: false,
            }),
            Ok(Once::Conflict) => Err(taken()),
            Err(Error::Multi { index: 0, source }) => match *source {
                Error::NoNode { .. } => Err(not_a_site()),
                Error::BadVersion { .. } => Err(taken()),
                other => Err(other.into()),
            },
            Err(e) => Err(e.into()),
        }
    }

    /// The site's name.
    ///
    /// ```no_run
    /// # fn demo(s: avout::recipes::two_phase_commit::Site) {
    /// println!("{}", s.name());
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The payload the coordinator attached to the transaction.
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::two_phase_commit::Site) -> Result<(), avout::recipes::two_phase_commit::TwoPhaseError> {
    /// let payload = s.payload().await?;
    /// # Ok(()) }
    /// ```
    pub async fn payload(&self) -> Result<Vec<u8>, TwoPhaseError> {
        let zk = &*self.zk;
        match idempotent(zk, || zk.get_data(&self.tx)).await {
            Ok((data, _)) => Ok(data),
            Err(Error::NoNode { .. }) => Err(TwoPhaseError::NoTransaction {
                path: self.tx.clone(),
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Votes, once. Fails with [`TwoPhaseError::NotPresent`] if this site's presence node is
    /// gone (then its vote no longer counts: the transaction aborts).
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::two_phase_commit::Site) -> Result<(), avout::recipes::two_phase_commit::TwoPhaseError> {
    /// s.vote(avout::recipes::two_phase_commit::Vote::Abort).await?;
    /// # Ok(()) }
    /// ```
    pub async fn vote(&self, vote: Vote) -> Result<(), TwoPhaseError> {
        let node = path::join(&self.tx, &format!("{VOTE}{}", self.name));
        let ops = vec![
            Op::check(
                path::join(&self.tx, &format!("{PRESENCE}{}", self.name)),
                None,
            ),
            Op::set_data(node.clone(), vote.as_bytes().to_vec(), Some(1)),
        ];
        // The vote's bytes prove it: only this site writes its node, and "joined" is not a vote.
        let proof = Proof::Data(node, vote.as_bytes().to_vec());
        let mut machine = OnceMachine::new(ops, proof, self.zk.session().id.0);
        match drive(&*self.zk, &mut machine).await {
            Ok(Once::Applied { .. }) => Ok(()),
            Ok(Once::Conflict) => Err(TwoPhaseError::AlreadyJoined {
                site: self.name.clone(),
            }),
            Err(Error::Multi { index: 0, .. }) => Err(TwoPhaseError::NotPresent {
                site: self.name.clone(),
            }),
            Err(Error::Multi { index: 1, .. }) => Err(TwoPhaseError::AlreadyJoined {
                site: self.name.clone(),
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Waits for the outcome (deciding it if the votes allow).
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::two_phase_commit::Site) -> Result<(), avout::recipes::two_phase_commit::TwoPhaseError> {
    /// let outcome = s.outcome().await?;
    /// # Ok(()) }
    /// ```
    pub async fn outcome(&self) -> Result<Outcome, TwoPhaseError> {
        self.client
            .across_sessions(
                |zk| async move { drive(&*zk, &mut OutcomeMachine::new(&self.tx, None)).await },
                |e| matches!(e, TwoPhaseError::SessionLost(_)),
            )
            .await
    }

    /// Leaves: deletes the presence node (before voting, this aborts the transaction).
    ///
    /// ```no_run
    /// # async fn demo(s: avout::recipes::two_phase_commit::Site) -> Result<(), avout::recipes::two_phase_commit::TwoPhaseError> {
    /// s.leave().await?;
    /// # Ok(()) }
    /// ```
    pub async fn leave(mut self) -> Result<(), TwoPhaseError> {
        self.dropped = true;
        let zk = &*self.zk;
        let node = path::join(&self.tx, &format!("{PRESENCE}{}", self.name));
        match idempotent(zk, || zk.delete(&node, None)).await {
            Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
            Err(e) if e.is_session_lost() => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        let zk = self.zk.clone();
        let node = path::join(&self.tx, &format!("{PRESENCE}{}", self.name));
        spawn_cleanup("removing a site's presence", async move {
            let zk = &*zk;
            match idempotent(zk, || zk.delete(&node, None)).await {
                Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
                Err(e) if e.is_session_lost() => Ok(()),
                Err(e) => Err(e),
            }
        });
    }
}

#[cfg(test)]
mod tests;
