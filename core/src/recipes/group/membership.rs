//! A group membership that outlives its session: what the application asked to keep (its
//! name and data) is made again on the client's next session.

use std::sync::Arc;

use crate::task::watch;

use crate::client::Session;
use crate::machine::idempotent;
use crate::sync::{Mutex as StdMutex, lock};
use crate::{Error, path};

use super::super::once::spawn_cleanup;
use super::{Group, GroupError};

/// Where a [`Membership`] stands.
///
/// ```
/// use avout::recipes::group::MemberStatus;
/// assert!(MemberStatus::Member { generation: 2 }.is_member());
/// assert!(!MemberStatus::Rejoining.is_member());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemberStatus {
    /// A member, through the client's session of this generation.
    Member {
        /// The session's generation (see [`Client::generation`](crate::Client::generation)).
        generation: u64,
    },
    /// The session the member belonged to ended; joining again on the client's next one.
    Rejoining,
    /// No longer a member, for good: another session took the name while this one was
    /// rejoining, the service refused the join, or the client ended.
    Gone(GroupError),
}

impl MemberStatus {
    /// Whether the member's node exists for the client's current session.
    pub fn is_member(&self) -> bool {
        matches!(self, MemberStatus::Member { .. })
    }
}

/// A membership of a [`Group`], kept across session expiries.
///
/// - **Connection loss**: nothing to do; the node lives as long as the session.
/// - **Session expiry**: the node went with the session. A background task joins again on
///   the client's next session, with the same name and data, and [`status`](Self::status)
///   says [`MemberStatus::Rejoining`] until it has. If the node of the expired session is
///   still there (the service has not expired it yet), the task waits for it to go. If
///   another session took the name meanwhile, the membership is
///   [`Gone`](MemberStatus::Gone).
/// - **Cancellation**: [`leave`](Self::leave) removes the member; dropping the membership
///   removes it in the background; either stops the rejoining.
#[must_use = "dropping the membership leaves the group"]
pub struct Membership {
    node: String,
    /// The session the member's node belongs to now.
    session: Arc<StdMutex<Session>>,
    status: watch::Receiver<MemberStatus>,
    keeper: tokio::task::JoinHandle<()>,
    left: bool,
}

impl std::fmt::Debug for Membership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Membership")
            .field("node", &self.node)
            .field("status", &*self.status.borrow())
            .finish()
    }
}

impl Membership {
    pub(super) fn start(group: Group, name: &str, data: &[u8], session: Session) -> Self {
        let (tx, status) = watch::channel(MemberStatus::Member {
            generation: session.generation(),
        });
        let current = Arc::new(StdMutex::new(session.clone()));
        let keeper = crate::task::spawn(keep(
            group.clone(),
            name.to_owned(),
            data.to_vec(),
            session,
            tx,
            current.clone(),
        ));
        Membership {
            node: path::join(&group.path, name),
            session: current,
            status,
            keeper,
            left: false,
        }
    }

    /// The member's node.
    ///
    /// ```no_run
    /// # fn demo(m: avout::recipes::group::Membership) {
    /// println!("{}", m.node());
    /// # }
    /// ```
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Where the membership stands, as this process knows it.
    ///
    /// ```no_run
    /// # fn demo(m: avout::recipes::group::Membership) {
    /// if !m.status().is_member() { println!("rejoining or gone"); }
    /// # }
    /// ```
    pub fn status(&self) -> MemberStatus {
        self.status.borrow().clone()
    }

    /// Waits until the status differs from `status()` now, and returns the new one.
    ///
    /// ```no_run
    /// # async fn demo(mut m: avout::recipes::group::Membership) {
    /// let next = m.changed().await;
    /// # }
    /// ```
    pub async fn changed(&mut self) -> MemberStatus {
        // The sender lives in the keeper; once it is gone the status is final.
        let _ = self.status.changed().await;
        self.status()
    }

    /// Whether this process is a member now, asked of the service: the node exists and its
    /// owner is the session the membership lives on.
    ///
    /// ```no_run
    /// # async fn demo(m: avout::recipes::group::Membership) -> Result<(), avout::recipes::group::GroupError> {
    /// if !m.is_member().await? { println!("dropped out"); }
    /// # Ok(()) }
    /// ```
    pub async fn is_member(&self) -> Result<bool, GroupError> {
        let session = lock(&self.session).clone();
        let zk = &*session;
        match idempotent(zk, || zk.exists(&self.node)).await {
            Ok(stat) => Ok(stat.is_some_and(|s| s.ephemeral_owner == zk.session().id.0)),
            Err(e) if e.is_session_lost() => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Leaves the group (and stops rejoining).
    ///
    /// ```no_run
    /// # async fn demo(m: avout::recipes::group::Membership) -> Result<(), avout::recipes::group::GroupError> {
    /// m.leave().await?;
    /// # Ok(()) }
    /// ```
    pub async fn leave(mut self) -> Result<(), GroupError> {
        self.left = true;
        self.keeper.abort();
        let session = lock(&self.session).clone();
        delete_member(&session, &self.node).await?;
        Ok(())
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.keeper.abort();
        if self.left {
            return;
        }
        let session = lock(&self.session).clone();
        let node = std::mem::take(&mut self.node);
        spawn_cleanup("leaving a group", async move {
            delete_member(&session, &node).await
        });
    }
}

/// Deletes the member's node on `session`; a session that ended took it along.
async fn delete_member(session: &Session, node: &str) -> Result<(), Error> {
    let zk = &**session;
    match idempotent(zk, || zk.delete(node, None)).await {
        Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
        Err(e) if e.is_session_lost() => Ok(()),
        Err(e) => Err(e),
    }
}

/// The keeper: waits for the member's session to end, then joins again on the next one.
async fn keep(
    group: Group,
    name: String,
    data: Vec<u8>,
    mut session: Session,
    status: watch::Sender<MemberStatus>,
    current: Arc<StdMutex<Session>>,
) {
    let mut ours = vec![session.session().id.0];
    loop {
        session.session_states().terminated().await;
        status.send_replace(MemberStatus::Rejoining);
        session = match rejoin(&group, &name, &data, &ours).await {
            Ok(session) => session,
            Err(error) => {
                tracing::warn!(group = %group.path, member = %name, %error, "membership gone");
                status.send_replace(MemberStatus::Gone(error));
                return;
            }
        };
        ours.push(session.session().id.0);
        *lock(&current) = session.clone();
        status.send_replace(MemberStatus::Member {
            generation: session.generation(),
        });
    }
}

/// Joins on the client's current session, waiting out a node left by one of `ours` (earlier
/// sessions of this membership) that the service has not removed yet.
async fn rejoin(
    group: &Group,
    name: &str,
    data: &[u8],
    ours: &[i64],
) -> Result<Session, GroupError> {
    loop {
        match group.join_once(name, data).await {
            Ok(session) => return Ok(session),
            Err(GroupError::SessionLost(_)) if !group.client.has_ended() => {}
            Err(GroupError::NameTaken { node }) => {
                let zk = group.client.current_session().await?;
                match zk.exists_and_watch(&node).await {
                    Ok((Some(stat), watch)) if ours.contains(&stat.ephemeral_owner) => {
                        // Our expired session's node: it goes when the service notices.
                        let _gone_or_session_ended = watch.await;
                    }
                    Ok((None, _)) => {}
                    Ok((Some(_), _)) => return Err(GroupError::NameTaken { node }),
                    Err(e) if e.is_indeterminate() || e.is_session_lost() => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e),
        }
    }
}
