//! Group membership (ZooKeeper's group-membership recipe): members are ephemeral nodes under
//! the group node, so a member that dies leaves the group by itself.
//!
//! # The algorithm
//!
//! - **Join** creates `<group>/<member>` as an ephemeral node holding the member's data (with
//!   the group node and its parents if missing), through an [`OnceMachine`]: after a
//!   connection loss the node is looked up and adopted if this session owns it, so a lost reply
//!   never turns into a spurious "name taken".
//! - **Leave** deletes the node (also done in the background when a [`Membership`] is
//!   dropped); the session ending removes it too.
//! - **Listing** reads the children and then each member's data, all pipelined.
//! - **Watching** ([`MembershipWatch`]) re-reads the children with a watch each time it fires
//!   and reports the membership when it differs from the last one reported; several changes
//!   between two reads are reported as one (ZooKeeper's watches are one-shot).
//!
//! # Connection loss, session expiry, cancellation
//!
//! - Connection loss: joins recover as above; reads are simply redone after reconnecting.
//! - Session expiry removes this session's members. A join in progress ends with
//!   [`GroupError::SessionLost`]. A [`Membership`] joins again on the client's next session,
//!   with the same name and data (what the application asked to keep), and says so through
//!   [`Membership::status`]; a [`MembershipWatch`] reads the group again on the next session
//!   and reports what changed meanwhile.
//! - Dropping a join future whose create may have happened removes the node in the background
//!   (if this session owns it); dropping a watch future loses nothing (the next call reads the
//!   children again).

mod membership;

pub use membership::{MemberStatus, Membership};

use crate::client::Session;
use crate::machine::{
    Machine, Millis, Outbox, Reply, Request, Resumed, Stall, Token, drive, idempotent,
};
use crate::{Client, CreateMode, Error, Op, SessionState, WatchedEvent, path};

use super::once::{Once, OnceMachine, Proof, spawn_cleanup};

/// Why a group operation failed.
///
/// ```
/// use avout::recipes::group::GroupError;
/// assert!(matches!(GroupError::from(avout::Error::SessionExpired), GroupError::SessionLost(_)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// Another session is a member under this name.
    #[error("member {node} belongs to another session")]
    NameTaken {
        /// The member's node.
        node: String,
    },
    /// The session ended (and with it this session's memberships).
    #[error("session lost: {0}")]
    SessionLost(Error),
    /// The coordination service refused a request (bad name, no access, data too large, …).
    #[error(transparent)]
    Zk(Error),
}

impl From<Error> for GroupError {
    fn from(error: Error) -> Self {
        if error.is_session_lost() {
            GroupError::SessionLost(error)
        } else {
            GroupError::Zk(error)
        }
    }
}

/// A member as listed: its name and data.
///
/// ```
/// let m = avout::recipes::group::Member { name: "worker-1".into(), data: b"10.0.0.7".to_vec() };
/// assert_eq!(m.name, "worker-1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Member {
    /// The member's name (its node's name).
    pub name: String,
    /// The data it joined with.
    pub data: Vec<u8>,
}

/// A change of membership, as reported by [`MembershipWatch::next`].
///
/// ```
/// let c = avout::recipes::group::MembershipChange { members: vec!["a".into()], joined: vec!["a".into()], left: vec![] };
/// assert_eq!(c.members, c.joined);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MembershipChange {
    /// Every member now, sorted.
    pub members: Vec<String>,
    /// Members that were not in the previous report (all of them, in the first).
    pub joined: Vec<String>,
    /// Members of the previous report that are gone.
    pub left: Vec<String>,
}

/// The machine of one join: an [`OnceMachine`] creating the member's ephemeral node.
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::SessionState;
/// let mut m = avout::recipes::group::join_machine("/workers", "w1", b"".to_vec(), 7);
/// m.handle_session(Millis(0), SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::Multi(_)))));
/// ```
pub fn join_machine(group: &str, member: &str, data: Vec<u8>, session: i64) -> OnceMachine {
    let node = path::join(group, member);
    OnceMachine::new(
        vec![Op::create(node.clone(), data, CreateMode::Ephemeral)],
        Proof::OwnedEphemeral(node),
        session,
    )
    .create_parents(group)
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Reading the children with a watch.
    Listing {
        list: Token,
    },
    /// The group node is missing: `exists` with a watch for its creation.
    Probing {
        exists: Token,
    },
    /// Nothing new: waiting for the watch armed by `token`.
    Waiting {
        token: Token,
    },
    /// Waiting to list again after a connection loss (see `stall`).
    Stalled,
    Done,
}

/// Waits until a group's membership differs from a known one; see the [module docs](self).
///
/// The output is the new membership, sorted.
///
/// ```
/// use avout::machine::{Machine, Millis, Reply, Request};
/// use avout::recipes::group::WatchMembersMachine;
/// use avout::{SessionState, Stat};
///
/// let mut m = WatchMembersMachine::new("/g", Some(vec!["a".into()]));
/// m.handle_session(Millis(0), SessionState::Connected);
/// let (token, _) = m.poll_request().unwrap();
/// m.handle_reply(Millis(1), token, Ok(Reply::Children { children: vec!["b".into(), "a".into()], stat: Stat::default() }));
/// assert_eq!(m.poll_output(), Some(Ok(vec!["a".to_string(), "b".to_string()])));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WatchMembersMachine {
    group: String,
    known: Option<Vec<String>>,
    phase: Phase,
    stall: Stall<()>,
    outbox: Outbox<Result<Vec<String>, GroupError>>,
}

impl WatchMembersMachine {
    /// A machine reporting `group`'s membership once it differs from `known` (at once, if
    /// `known` is `None`).
    ///
    /// ```
    /// let m = avout::recipes::group::WatchMembersMachine::new("/g", None);
    /// # let _ = m;
    /// ```
    pub fn new(group: &str, known: Option<Vec<String>>) -> Self {
        WatchMembersMachine {
            group: group.to_owned(),
            known,
            phase: Phase::Done,
            stall: Stall::default(),
            outbox: Outbox::default(),
        }
    }

    fn list(&mut self) {
        let list = self.outbox.send(Request::GetChildren {
            path: self.group.clone(),
            watch: true,
        });
        self.phase = Phase::Listing { list };
    }

    fn finish(&mut self, result: Result<Vec<String>, GroupError>) {
        self.phase = Phase::Done;
        self.stall.cancel();
        self.outbox.finish(result);
    }

    fn failed(&mut self, now: Millis, error: Error) {
        if error.is_indeterminate() {
            self.phase = Phase::Stalled;
            self.stall.start((), now);
        } else {
            self.finish(Err(error.into()));
        }
    }

    /// Reports `members` if new, else waits for the watch armed by `token`.
    fn seen(&mut self, members: Vec<String>, token: Token) {
        if self.known.as_ref() == Some(&members) {
            self.phase = Phase::Waiting { token };
        } else {
            self.finish(Ok(members));
        }
    }
}

impl Machine for WatchMembersMachine {
    type Output = Result<Vec<String>, GroupError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            Phase::Listing { list } if token == list => match reply {
                Ok(Reply::Children { mut children, .. }) => {
                    children.sort();
                    self.seen(children, token);
                }
                Err(Error::NoNode { .. }) => {
                    let exists = self.outbox.send(Request::Exists {
                        path: self.group.clone(),
                        watch: true,
                    });
                    self.phase = Phase::Probing { exists };
                }
                Err(e) => self.failed(now, e),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Probing { exists } if token == exists => match reply {
                // Created in between: read its children.
                Ok(Reply::Exists(Some(_))) => self.list(),
                Ok(Reply::Exists(None)) => self.seen(Vec::new(), token),
                Err(e) => self.failed(now, e),
                Ok(other) => unreachable!("exists replied {other:?}"),
            },
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, token: Token, _event: WatchedEvent) {
        if self.phase == (Phase::Waiting { token }) {
            self.list();
        }
    }

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.outbox.session_stalled(state, &mut self.stall) {
            Resumed::Start => self.list(),
            Resumed::Ended(error) => self.finish(Err(error.into())),
            Resumed::Redo(()) => self.list(),
            Resumed::Quiet => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.stall.due(now).is_some() {
            self.list();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.stall.deadline()
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.outbox.take_output()
    }
}

/// A group of processes; see the [module docs](self).
///
/// ```no_run
/// use avout::recipes::group::Group;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::recipes::group::GroupError> {
/// let workers = Group::new(client, "/workers")?;
/// let me = workers.join("w-17", b"10.0.0.17:8080").await?;
/// for member in workers.members().await? {
///     println!("{} at {}", member.name, String::from_utf8_lossy(&member.data));
/// }
/// me.leave().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Group {
    client: Client,
    path: String,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("path", &self.path).finish()
    }
}

impl Group {
    /// A handle on the group at `path` (created with its parents on the first join).
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// assert!(avout::recipes::group::Group::new(client, "nope").is_err());
    /// # }
    /// ```
    pub fn new(client: &Client, path: impl Into<String>) -> Result<Self, GroupError> {
        let path = path.into();
        path::validate_path(&path, false)?;
        Ok(Group {
            client: client.clone(),
            path,
        })
    }

    /// The group's path.
    ///
    /// ```no_run
    /// # fn demo(g: avout::recipes::group::Group) {
    /// println!("{}", g.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Joins as `name` with `data`, and stays a member across session expiries (see
    /// [`Membership`]). Fails with [`GroupError::NameTaken`] if another session is a member
    /// under that name. Joining twice under one name from one session returns a second
    /// handle on the same membership.
    ///
    /// ```no_run
    /// # async fn demo(g: avout::recipes::group::Group) -> Result<(), avout::recipes::group::GroupError> {
    /// let me = g.join("w-1", b"").await?;
    /// # Ok(()) }
    /// ```
    pub async fn join(&self, name: &str, data: &[u8]) -> Result<Membership, GroupError> {
        let node = path::join(&self.path, name);
        path::validate_path(&node, false)?;
        if path::parent(&node) != Some(self.path.as_str()) {
            return Err(Error::BadArguments(format!("member name {name:?} contains '/'")).into());
        }
        let session = self.join_once(name, data).await?;
        Ok(Membership::start(self.clone(), name, data, session))
    }

    /// Creates the member's node on the client's current session; returns that session.
    pub(super) async fn join_once(&self, name: &str, data: &[u8]) -> Result<Session, GroupError> {
        let zk = self.client.current_session().await?;
        let node = path::join(&self.path, name);
        let mut joining = Joining {
            machine: join_machine(&self.path, name, data.to_vec(), zk.session().id.0),
            zk: Some(zk.clone()),
            node: node.clone(),
        };
        let result = drive(&*zk, &mut joining.machine).await;
        joining.zk = None;
        match result? {
            Once::Applied { .. } => Ok(zk),
            Once::Conflict => Err(GroupError::NameTaken { node }),
        }
    }

    /// The members now, sorted by name, with their data.
    ///
    /// ```no_run
    /// # async fn demo(g: avout::recipes::group::Group) -> Result<(), avout::recipes::group::GroupError> {
    /// let n = g.members().await?.len();
    /// # Ok(()) }
    /// ```
    pub async fn members(&self) -> Result<Vec<Member>, GroupError> {
        let session = self.client.current_session().await?;
        let zk = &*session;
        let mut names = match idempotent(zk, || zk.get_children(&self.path)).await {
            Ok((names, _)) => names,
            Err(Error::NoNode { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        names.sort();
        // Every read is submitted before the first is awaited: one round trip for all.
        let reads: Vec<_> = names
            .iter()
            .map(|name| zk.get_data(&path::join(&self.path, name)))
            .collect();
        let replies = futures::future::join_all(reads).await;
        let mut members = Vec::with_capacity(names.len());
        for (name, reply) in names.into_iter().zip(replies) {
            let data = match reply {
                Ok((data, _)) => data,
                // Left since the listing.
                Err(Error::NoNode { .. }) => continue,
                Err(e) if e.is_indeterminate() => {
                    match idempotent(zk, || zk.get_data(&path::join(&self.path, &name))).await {
                        Ok((data, _)) => data,
                        Err(Error::NoNode { .. }) => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(e) => return Err(e.into()),
            };
            members.push(Member { name, data });
        }
        Ok(members)
    }

    /// A watch on the membership: each [`MembershipWatch::next`] returns the next change.
    ///
    /// ```no_run
    /// # async fn demo(g: avout::recipes::group::Group) -> Result<(), avout::recipes::group::GroupError> {
    /// let mut watch = g.watch();
    /// let now = watch.next().await?;         // the current members
    /// let change = watch.next().await?;      // waits for someone to join or leave
    /// println!("joined {:?}, left {:?}", change.joined, change.left);
    /// # Ok(()) }
    /// ```
    pub fn watch(&self) -> MembershipWatch {
        MembershipWatch {
            group: self.clone(),
            known: None,
        }
    }
}

/// A join in progress; if dropped unfinished, removes the node it may have created.
struct Joining {
    machine: OnceMachine,
    zk: Option<Session>,
    node: String,
}

impl Drop for Joining {
    fn drop(&mut self) {
        let Some(zk) = self.zk.take() else { return };
        if !self.machine.in_doubt() {
            return;
        }
        let node = std::mem::take(&mut self.node);
        spawn_cleanup("removing a cancelled member", async move {
            let zk = &*zk;
            // Only if it is ours: the name may belong to another session.
            match idempotent(zk, || zk.exists(&node)).await? {
                Some(stat) if stat.ephemeral_owner == zk.session().id.0 => {
                    match idempotent(zk, || zk.delete(&node, Some(stat.version))).await {
                        Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
                        Err(e) => Err(e),
                    }
                }
                _ => Ok(()),
            }
        });
    }
}

/// Successive membership changes of a [`Group`], from [`Group::watch`].
///
/// It follows the group across the client's sessions: after an expiry it reads the children
/// on the next session and reports the difference from the last report, so no change is
/// missed, only coalesced. It fails only once the client has ended.
pub struct MembershipWatch {
    group: Group,
    known: Option<Vec<String>>,
}

impl std::fmt::Debug for MembershipWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MembershipWatch")
            .field("group", &self.group.path)
            .field("known", &self.known)
            .finish()
    }
}

impl MembershipWatch {
    /// The first call returns the current members (all as `joined`); each later call waits
    /// until the membership differs from the last one returned. Cancellation-safe.
    ///
    /// ```no_run
    /// # async fn demo(mut w: avout::recipes::group::MembershipWatch) -> Result<(), avout::recipes::group::GroupError> {
    /// loop {
    ///     let change = w.next().await?;
    ///     println!("{} members", change.members.len());
    /// }
    /// # }
    /// ```
    pub async fn next(&mut self) -> Result<MembershipChange, GroupError> {
        let client = &self.group.client;
        let members = loop {
            let zk = client.current_session().await?;
            let generation = zk.generation();
            let mut machine = WatchMembersMachine::new(&self.group.path, self.known.clone());
            match drive(&*zk, &mut machine).await {
                Err(GroupError::SessionLost(_)) if !client.has_ended() => {
                    client.past_session(generation).await?;
                }
                other => break other?,
            }
        };
        let before = self.known.take().unwrap_or_default();
        let change = MembershipChange {
            joined: members
                .iter()
                .filter(|m| !before.contains(m))
                .cloned()
                .collect(),
            left: before
                .iter()
                .filter(|m| !members.contains(m))
                .cloned()
                .collect(),
            members: members.clone(),
        };
        self.known = Some(members);
        Ok(change)
    }
}

#[cfg(test)]
mod tests;
