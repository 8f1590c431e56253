//! Revocable locks: ZooKeeper's revocable-shared-lock recipe, with Curator's message.
//!
//! # Protocol
//!
//! A contender that wants a lock its holder is sitting on *asks* for it: it writes a
//! revocation message into the data of the holder's lock node ([`revoke`], or
//! [`revoke_holders`] for everyone currently holding). A holder that listens for requests —
//! [`LockGuard::revocation_requested`], which reads its own node's data with a watch and
//! re-reads it on every change — is told, does whatever it must to leave the guarded resource
//! consistent, and consents by releasing ([`LockGuard::unlock`]). A holder that does not
//! listen keeps its lock: revocation is cooperative, as the recipe intends. (The recipe's
//! "freaking laser beams" variant, in which the revoker deletes the node after a grace
//! period, is deliberately not offered: the holder would keep writing under a lock it no
//! longer has; use fencing tokens if a holder must be cut off.)
//!
//! Works with every lock kind: both sides of a [`RwLock`](super::RwLock), the
//! [`Mutex`](super::Mutex). The message written is Apache Curator's `__REVOKE__`, so a Java
//! holder using Curator's `makeRevocable` consents too; the recipe's `unlock` is recognised as
//! well.
//!
//! The listener is a sans-IO machine, [`RevocationMachine`], run by the
//! [driver](crate::machine::drive).
//!
//! # Connection loss, session expiry, cancellation
//!
//! - Listening: reads are idempotent, so after a connection loss the read is simply redone
//!   once the session reconnects (a request that arrived meanwhile is in the node's data and
//!   is seen then). A session expiry or the node's deletion ends the wait with
//!   [`LockError::SessionLost`] or [`LockError::NodeDeleted`]: there is nothing left to
//!   revoke. Dropping the future only stops listening.
//! - Revoking: writing the same message twice is harmless, so a write whose outcome is unknown
//!   is retried after the session reconnects. A node that is gone means its holder already
//!   released: [`revoke`] returns `Ok(false)`.

use crate::machine::{
    Machine, Millis, Outbox, Pace, RETRY_PAUSE_MS, Reply, Request, SessionEvent, Stall, Token,
    drive, until_certain,
};
use crate::{
    Coordination, Error, ErrorClass, EventKind, SessionState, SessionStates, WatchedEvent, path,
};

use super::{LockError, LockGuard, LockKind};

/// The revocation request written into a holder's node: Apache Curator's, so that Curator
/// holders understand it.
///
/// ```
/// assert_eq!(avout::lock::REVOKE_MESSAGE, b"__REVOKE__");
/// ```
pub const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// The message the ZooKeeper recipe writes; recognised as a request too.
const RECIPE_MESSAGE: &[u8] = b"unlock";

fn is_revocation(data: &[u8]) -> bool {
    data == REVOKE_MESSAGE || data == RECIPE_MESSAGE
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Not started (the driver's first session report starts it).
    Idle,
    /// Reading the node's data with a watch.
    Reading(Token),
    /// The data holds no request; waiting for the watch armed by the read.
    Watching(Token),
    /// A read failed indeterminately; the stall redoes it.
    Retrying,
    /// Finished.
    Done,
}

/// Waits until a revocation is requested on a held lock node; see the [module docs](self).
///
/// Output: `Ok(())` when a request is in the node's data, or why nothing can be revoked any
/// more (the node was deleted, the session ended, a read was refused).
///
/// ```
/// use avout::lock::RevocationMachine;
/// use avout::machine::{Machine, Millis, Reply, Request};
/// use avout::{SessionState, Stat};
///
/// let mut m = RevocationMachine::new("/rw/_c_1-__READ__0000000001");
/// m.handle_session(Millis(0), SessionState::Connected);
/// let (token, request) = m.poll_request().unwrap();
/// assert!(matches!(request, Request::GetData { watch: true, .. }));
/// m.handle_reply(Millis(1), token, Ok(Reply::Data { data: b"__REVOKE__".to_vec(), stat: Stat::default() }));
/// assert_eq!(m.poll_output(), Some(Ok(())));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RevocationMachine {
    node: String,
    phase: Phase,
    out: Outbox<Result<(), LockError>>,
    stall: Stall<()>,
}

impl RevocationMachine {
    /// A machine listening for revocation requests on `node` (a lock node this session holds).
    ///
    /// ```
    /// let m = avout::lock::RevocationMachine::new("/locks/a/_c_1-lock-0000000000");
    /// assert_eq!(m.node(), "/locks/a/_c_1-lock-0000000000");
    /// ```
    pub fn new(node: impl Into<String>) -> Self {
        RevocationMachine {
            node: node.into(),
            phase: Phase::Idle,
            out: Outbox::default(),
            stall: Stall::default(),
        }
    }

    /// The node listened on.
    ///
    /// ```
    /// assert_eq!(avout::lock::RevocationMachine::new("/a").node(), "/a");
    /// ```
    pub fn node(&self) -> &str {
        &self.node
    }

    fn read(&mut self) {
        self.stall.cancel();
        let token = self.out.send(Request::GetData {
            path: self.node.clone(),
            watch: true,
        });
        self.phase = Phase::Reading(token);
    }

    fn finish(&mut self, result: Result<(), LockError>) {
        self.phase = Phase::Done;
        self.stall.cancel();
        self.out.finish(result);
    }

    fn deleted(&mut self) {
        let node = self.node.clone();
        self.finish(Err(LockError::NodeDeleted { node }));
    }
}

impl Machine for RevocationMachine {
    type Output = Result<(), LockError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.out.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        if self.phase != Phase::Reading(token) {
            return;
        }
        match reply {
            Ok(Reply::Data { data, .. }) if is_revocation(&data) => self.finish(Ok(())),
            Ok(Reply::Data { .. }) => self.phase = Phase::Watching(token),
            Err(Error::NoNode { .. }) => self.deleted(),
            Err(e) => match e.class() {
                ErrorClass::Indeterminate => {
                    self.phase = Phase::Retrying;
                    self.stall.start((), now);
                }
                ErrorClass::SessionLost => self.finish(Err(LockError::SessionLost(e))),
                ErrorClass::Rejected => self.finish(Err(LockError::Zk(e))),
            },
            Ok(other) => unreachable!("get data replied {other:?}"),
        }
    }

    fn handle_watch(&mut self, _now: Millis, token: Token, event: WatchedEvent) {
        if self.phase != Phase::Watching(token) {
            return;
        }
        match event.kind {
            EventKind::NodeDeleted => self.deleted(),
            EventKind::Session => match event.state.terminal_error() {
                Some(error) => self.finish(Err(LockError::SessionLost(error))),
                None => self.read(),
            },
            // A data change: read it (and re-arm) to see whether it is a request.
            _ => self.read(),
        }
    }

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.out.session(state) {
            SessionEvent::Start => self.read(),
            SessionEvent::Ended(error) => self.finish(Err(LockError::SessionLost(error))),
            SessionEvent::Reconnected if self.stall.take().is_some() => self.read(),
            _ => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.stall.due(now).is_some() {
            self.read();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.stall.deadline()
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.out.take_output()
    }
}

impl LockGuard {
    /// Resolves when another process asks this holder to release the lock (see the
    /// [revocation module docs](self)). The holder consents by releasing; until it does, it
    /// keeps the lock. Fails when there is nothing left to revoke: the node was deleted or
    /// the session ended ([`LockGuard::lost`]'s reasons).
    ///
    /// Listening costs one data watch on the lock node; dropping the future stops it.
    ///
    /// ```no_run
    /// # async fn demo(rw: avout::lock::RwLock) -> Result<(), avout::lock::LockError> {
    /// let guard = rw.read().await?;
    /// tokio::select! {
    ///     asked = guard.revocation_requested() => {
    ///         asked?;
    ///         // finish up, then consent:
    ///         guard.unlock().await?;
    ///     }
    ///     () = async { /* the work */ } => guard.unlock().await?,
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn revocation_requested(&self) -> Result<(), LockError> {
        drive(&**self.zk(), &mut RevocationMachine::new(self.node())).await
    }
}

/// Asks the holder of lock node `node` to release it, by writing [`REVOKE_MESSAGE`] into the
/// node. `Ok(false)` if the node is gone (its holder already released or lost it).
///
/// ```no_run
/// # async fn demo(client: &avout::Client) -> Result<(), avout::lock::LockError> {
/// let asked = avout::lock::revoke(client, "/locks/a/_c_0b7e…-__READ__0000000003").await?;
/// # Ok(()) }
/// ```
pub async fn revoke<C: Coordination + ?Sized>(zk: &C, node: &str) -> Result<bool, LockError> {
    // The same message again is harmless: retry once the session is back.
    match until_certain(zk, REVOKE_PACE, || zk.set_data(node, REVOKE_MESSAGE, None)).await {
        Ok(_) => Ok(true),
        Err(Error::NoNode { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// How revoking retries an uncertain call: after a session transition or five recipe pauses,
/// giving up once the session has ended (there is no holder left to ask).
const REVOKE_PACE: Pace = Pace::patient(RETRY_PAUSE_MS * 5);

/// Waits before redoing an idempotent request after an indeterminate error, at the revoking
/// pace (see [`Pace::pause`]). Fails once the session has ended.
pub(crate) async fn pause_for_retry(states: &mut SessionStates) -> Result<(), LockError> {
    Ok(REVOKE_PACE.pause(states).await?)
}

/// The lock nodes (names) that currently hold the lock, among the `children` of a lock
/// directory: the lowest node if it is exclusive, a write node or a latch; otherwise every
/// read node below the lowest write node. Names that are not lock nodes are ignored.
///
/// A read lock taken by a write holder under its own write lock is not listed (its name does
/// not say whose it is); revoking the write node is the request to release both.
///
/// ```
/// let children = [
///     "_c_a-__READ__0000000001", "_c_b-__READ__0000000002",
///     "_c_c-__WRIT__0000000003", "_c_d-__READ__0000000004",
/// ].map(String::from);
/// assert_eq!(avout::lock::holders(&children), ["_c_a-__READ__0000000001", "_c_b-__READ__0000000002"]);
/// ```
pub fn holders(children: &[String]) -> Vec<String> {
    let kind_of = |name: &str| {
        [
            LockKind::Read,
            LockKind::Write,
            LockKind::Exclusive,
            LockKind::Latch,
        ]
        .into_iter()
        .find(|k| name.contains(k.marker()))
    };
    let mut nodes: Vec<(i64, LockKind, &String)> = children
        .iter()
        .filter_map(|c| Some((path::sequence(c)?, kind_of(c)?, c)))
        .collect();
    nodes.sort_by_key(|&(seq, _, name)| (seq, name));
    let mut holding = Vec::new();
    for (i, (_, kind, name)) in nodes.into_iter().enumerate() {
        match kind {
            LockKind::Read => holding.push(name.clone()),
            _ if i == 0 => {
                holding.push(name.clone());
                break;
            }
            _ => break,
        }
    }
    holding
}

/// Asks every current holder of the lock at `lock_path` to release it (see [`holders`] and
/// [`revoke`]) and returns the paths of the nodes asked. A contender calls it after finding
/// the lock busy, then queues as usual.
///
/// ```no_run
/// # async fn demo(client: &avout::Client) -> Result<(), avout::lock::LockError> {
/// use avout::lock::{RwLock, revoke_holders};
/// let rw = RwLock::new(client, "/locks/catalogue")?;
/// let guard = match rw.try_write().await? {
///     Some(guard) => guard,
///     None => {
///         revoke_holders(client, rw.path()).await?;
///         rw.write().await?
///     }
/// };
/// # Ok(()) }
/// ```
pub async fn revoke_holders<C: Coordination + ?Sized>(
    zk: &C,
    lock_path: &str,
) -> Result<Vec<String>, LockError> {
    let children = match until_certain(zk, REVOKE_PACE, || zk.get_children(lock_path)).await {
        Ok((children, _)) => children,
        Err(Error::NoNode { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut asked = Vec::new();
    for name in holders(&children) {
        let node = path::join(lock_path, &name);
        if revoke(zk, &node).await? {
            asked.push(node);
        }
    }
    Ok(asked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stat;

    fn data(bytes: &[u8]) -> crate::Result<Reply> {
        Ok(Reply::Data {
            data: bytes.to_vec(),
            stat: Stat::default(),
        })
    }

    fn event(kind: EventKind) -> WatchedEvent {
        WatchedEvent {
            kind,
            state: SessionState::Connected,
            path: "/l/n".into(),
        }
    }

    #[test]
    fn a_request_is_noticed_through_the_watch() {
        let mut m = RevocationMachine::new("/l/n");
        m.handle_session(Millis(0), SessionState::Connected);
        let (t1, r) = m.poll_request().expect("read");
        assert_eq!(
            r,
            Request::GetData {
                path: "/l/n".into(),
                watch: true
            }
        );
        m.handle_reply(Millis(1), t1, data(b""));
        assert_eq!(m.poll_request(), None, "waits for the watch");
        m.handle_watch(Millis(5), t1, event(EventKind::NodeDataChanged));
        let (t2, r) = m.poll_request().expect("re-read and re-arm");
        assert!(matches!(r, Request::GetData { watch: true, .. }));
        // Some unrelated write first: keep listening.
        m.handle_reply(Millis(6), t2, data(b"something else"));
        assert_eq!(m.poll_output(), None);
        m.handle_watch(Millis(9), t2, event(EventKind::NodeDataChanged));
        let (t3, _) = m.poll_request().expect("re-read");
        m.handle_reply(Millis(10), t3, data(b"unlock"));
        assert_eq!(m.poll_output(), Some(Ok(())));
    }

    #[test]
    fn a_connection_loss_rereads_after_reconnecting() {
        let mut m = RevocationMachine::new("/l/n");
        m.handle_session(Millis(0), SessionState::Connected);
        let (t1, _) = m.poll_request().expect("read");
        m.handle_reply(Millis(1), t1, Err(Error::ConnectionLoss));
        assert_eq!(m.poll_request(), None);
        assert_eq!(m.poll_timer(), Some(Millis(21)));
        m.handle_session(Millis(3), SessionState::Disconnected);
        assert_eq!(m.poll_request(), None);
        m.handle_session(Millis(4), SessionState::Connected);
        let (t2, _) = m.poll_request().expect("read again");
        m.handle_reply(Millis(5), t2, data(REVOKE_MESSAGE));
        assert_eq!(m.poll_output(), Some(Ok(())));
    }

    #[test]
    fn deletion_and_expiry_end_the_wait() {
        let mut m = RevocationMachine::new("/l/n");
        m.handle_session(Millis(0), SessionState::Connected);
        let (t1, _) = m.poll_request().expect("read");
        m.handle_reply(Millis(1), t1, data(b""));
        m.handle_watch(Millis(2), t1, event(EventKind::NodeDeleted));
        assert_eq!(
            m.poll_output(),
            Some(Err(LockError::NodeDeleted {
                node: "/l/n".into()
            }))
        );

        let mut m = RevocationMachine::new("/l/n");
        m.handle_session(Millis(0), SessionState::Connected);
        m.poll_request().expect("read");
        m.handle_session(Millis(1), SessionState::Expired);
        assert_eq!(
            m.poll_output(),
            Some(Err(LockError::SessionLost(Error::SessionExpired)))
        );
    }

    #[test]
    fn holders_follow_the_shared_lock_rule() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            holders(&names(&[
                "_c_w-__WRIT__0000000002",
                "_c_r-__READ__0000000003",
                "other"
            ])),
            ["_c_w-__WRIT__0000000002"]
        );
        assert_eq!(
            holders(&names(&["_c_x-lock-0000000007", "_c_y-lock-0000000005"])),
            ["_c_y-lock-0000000005"]
        );
        assert!(holders(&[]).is_empty());
    }
}
