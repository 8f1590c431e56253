//! The release of a lock node, as a machine, and a handle's book of its releases.
//!
//! A holder releases by deleting its node. The delete is safe to repeat: the node's name
//! carries the acquisition's GUID, so nobody else can have created a node of that name, and
//! `NoNode` means the delete (ours, or a lost earlier one) is done. So [`ReleaseMachine`]
//! sends the delete, sends it again after a connection loss, and finishes:
//!
//! - with `Ok` on `Ok` or `NoNode`;
//! - with the session's error once the session has ended (its ephemeral node went with it,
//!   so nothing is left to release), whether it ended before the delete was sent (nothing is
//!   sent then) or while its reply was awaited;
//! - with the error of any other refusal (an ACL, say): the node stays.
//!
//! [`LockGuard::unlock`](super::LockGuard::unlock) starts the machine with
//! [`Driving::start`](crate::machine::Driving::start), which sends the delete at once, and
//! returns: the release is ordered on the session. A background task drives the machine to its
//! end and records the outcome in the handle's [`Releases`], which the next acquisition
//! through the handle consults: a release still in flight must not make it wait for its own
//! old node, and a release that failed for good is retried first (its node would block
//! everyone) and fails the acquisition if it fails again.
//!
//! # Deferred releases
//!
//! [`LockGuard::unlock`](super::LockGuard::unlock) defers a release when the handle locked
//! again within [`RELEASE_LINGER`] of its previous release (a loop that locks right after it
//! unlocks): the node's delete then rides with the next acquisition's create, one `multi`
//! for both (see [`AcquireMachine::with_riding`](super::AcquireMachine::with_riding)), or, if
//! no acquisition takes it within [`RELEASE_LINGER`], a task sends it alone and the handle stops
//! deferring until it locks promptly again. [`Deferrals`] keeps that book.
//!
//! The riding `multi` ends with a stamp that sets the lock directory's data (see
//! [`ProtectedCreate`](crate::machine::ProtectedCreate)), to empty. So a handle defers only on
//! a directory whose data it found empty — read once, with the acquisition that first makes
//! it defer — and never again on one whose stamp was refused (no write access): a lock on a
//! path that holds data of its own never has that data overwritten.
//!
//! The models run the same machine for a holder's release (models' `lock.rs`), and let a
//! deferred release ride with the next acquisition or go alone.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::Session;
use crate::machine::{Machine, Millis, Reply, Request, Token};
use crate::{Error, SessionState, WatchedEvent, path};

/// How long a deferred release waits for the handle's next acquisition before it is sent
/// alone; also how soon after a release an acquisition must come for the handle to defer its
/// next one. A lock–unlock loop relocks within microseconds; a millisecond (the runtime's
/// timer tick) is what a holder that does not come back delays its waiters, at most.
///
/// ```
/// assert_eq!(avout::lock::RELEASE_LINGER, std::time::Duration::from_millis(1));
/// ```
pub const RELEASE_LINGER: Duration = Duration::from_millis(1);

/// The one token of a release: a repeated delete goes out under the same one.
const DELETE: Token = Token(0);

/// Deletes one node the caller owns, idempotently; see the module docs.
///
/// ```
/// use avout::lock::ReleaseMachine;
/// use avout::machine::{Machine, Millis, Reply, Request};
/// use avout::{Error, SessionState};
///
/// let mut m = ReleaseMachine::new("/lock/_c_x-lock-0000000001");
/// m.handle_session(Millis(0), SessionState::Connected);
/// let (token, request) = m.poll_request().unwrap();
/// assert!(matches!(request, Request::Delete { version: None, .. }));
/// // The reply was lost with the connection: the same delete goes again.
/// m.handle_reply(Millis(1), token, Err(Error::ConnectionLoss));
/// let (again, _) = m.poll_request().unwrap();
/// assert_eq!(again, token);
/// // It had been applied the first time: NoNode means done.
/// m.handle_reply(Millis(2), again, Err(Error::NoNode { path: "/lock".into() }));
/// assert_eq!(m.poll_output(), Some(Ok(())));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReleaseMachine {
    node: String,
    /// Whether the delete is to be sent (first, or again after a connection loss).
    unsent: bool,
    /// Whether the release has ended (its output may have been taken).
    ended: bool,
    output: Option<Result<(), Error>>,
}

impl ReleaseMachine {
    /// A release of `node` (its path).
    ///
    /// ```
    /// let m = avout::lock::ReleaseMachine::new("/lock/_c_x-lock-0000000001");
    /// assert_eq!(m.node(), "/lock/_c_x-lock-0000000001");
    /// ```
    pub fn new(node: impl Into<String>) -> Self {
        ReleaseMachine {
            node: node.into(),
            unsent: true,
            ended: false,
            output: None,
        }
    }

    /// The node being released.
    ///
    /// ```
    /// let m = avout::lock::ReleaseMachine::new("/l/n");
    /// assert_eq!(m.node(), "/l/n");
    /// ```
    pub fn node(&self) -> &str {
        &self.node
    }

    fn finish(&mut self, outcome: Result<(), Error>) {
        if !self.ended {
            self.ended = true;
            self.unsent = false;
            self.output = Some(outcome);
        }
    }
}

impl Machine for ReleaseMachine {
    type Output = Result<(), Error>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        if !std::mem::take(&mut self.unsent) {
            return None;
        }
        Some((
            DELETE,
            Request::Delete {
                path: self.node.clone(),
                version: None,
            },
        ))
    }

    fn handle_reply(&mut self, _: Millis, _: Token, reply: crate::Result<Reply>) {
        if self.ended {
            return;
        }
        match reply {
            Ok(_) | Err(Error::NoNode { .. }) => self.finish(Ok(())),
            Err(e) if e.is_indeterminate() => self.unsent = true,
            Err(e) => self.finish(Err(e)),
        }
    }

    fn handle_watch(&mut self, _: Millis, _: Token, _: WatchedEvent) {}

    fn handle_session(&mut self, _: Millis, state: SessionState) {
        if let Some(error) = state.terminal_error() {
            self.finish(Err(error));
        }
    }

    fn handle_timer(&mut self, _: Millis) {}

    fn poll_timer(&self) -> Option<Millis> {
        None
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.output.take()
    }
}

/// One handle's releases whose delete is not confirmed: by node path, `None` while the
/// [`ReleaseMachine`] runs, the error once it failed for good (until an acquisition retries
/// it). A release that ended with its session is forgotten: the node went with the session.
#[derive(Debug, Default)]
pub(super) struct Releases {
    nodes: BTreeMap<String, Option<Error>>,
}

impl Releases {
    /// A release of `node` starts.
    pub(super) fn begin(&mut self, node: &str) {
        self.nodes.insert(node.to_owned(), None);
    }

    /// The release of `node` ended with `outcome`.
    pub(super) fn settle(&mut self, node: String, outcome: Result<(), Error>) {
        match outcome {
            Err(e) if !e.is_session_lost() => {
                tracing::warn!(node = %node, error = %e, "lock release failed; the next acquisition retries it");
                self.nodes.insert(node, Some(e));
            }
            _ => {
                self.nodes.remove(&node);
            }
        }
    }

    /// Names (not paths) of released nodes whose delete is still in flight.
    pub(super) fn in_flight(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, failed)| failed.is_none())
            .map(|(node, _)| path::name(node).to_owned())
            .collect()
    }

    /// Paths of released nodes whose delete failed for good.
    pub(super) fn failed(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, failed)| failed.is_some())
            .map(|(node, _)| node.clone())
            .collect()
    }
}

/// A release kept for the handle's next acquisition.
#[derive(Debug)]
pub(super) struct Deferred {
    /// The node's path.
    pub(super) node: String,
    /// The session the node belongs to.
    pub(super) session: Session,
}

/// What to do with a release, as [`Deferrals::release`] decides.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Release {
    /// Kept: send it alone unless an acquisition has taken it when deferral `number`'s
    /// [`RELEASE_LINGER`] is over ([`Deferrals::linger_over`]).
    Deferred {
        /// Which deferral this is.
        number: u64,
    },
    /// Send it now.
    Now,
}

/// One side's deferred release and whether the next one is deferred; see the
/// [module docs](self).
#[derive(Debug, Default)]
pub(super) struct Deferrals {
    pending: Option<(Deferred, u64)>,
    numbered: u64,
    /// When the last release sent at once went out.
    sent_at: Option<Instant>,
    /// Whether the next release is deferred (if the directory takes the stamp).
    defer: bool,
    /// Whether the lock directory takes the stamp: its data is empty and it may be written
    /// (`None` until read).
    stampable: Option<bool>,
}

impl Deferrals {
    /// The last hold on `node` was released at `now`: keep it or send it now (a release the
    /// previous acquisition did not take is handed back to be sent too).
    pub(super) fn release(
        &mut self,
        node: String,
        session: Session,
        now: Instant,
    ) -> (Release, Option<Deferred>) {
        if !self.defer || self.stampable != Some(true) {
            self.sent_at = Some(now);
            return (Release::Now, None);
        }
        self.numbered += 1;
        let earlier = self
            .pending
            .replace((Deferred { node, session }, self.numbered));
        let number = self.numbered;
        (Release::Deferred { number }, earlier.map(|(d, _)| d))
    }

    /// An acquisition starts at `now`: it takes the deferred release (to carry it), and a
    /// prompt one (within [`RELEASE_LINGER`] of a release sent at once) turns deferral on.
    pub(super) fn acquire(&mut self, now: Instant) -> Option<Deferred> {
        let prompt = self
            .sent_at
            .take()
            .is_some_and(|at| now - at <= RELEASE_LINGER);
        let taken = self.take();
        self.defer |= prompt || taken.is_some();
        taken
    }

    /// Whether the acquisition that just made the handle defer must read the lock directory
    /// (does its data allow the stamp?); answered by [`stampable`](Self::stampable).
    pub(super) fn needs_directory(&self) -> bool {
        self.defer && self.stampable.is_none()
    }

    /// Whether the lock directory takes the stamp (its data was found empty; `false` also
    /// when a stamp was refused): from now on, releases are deferred only if it does.
    pub(super) fn stampable(&mut self, stampable: bool) {
        self.stampable = Some(stampable);
    }

    /// Takes the deferred release, if any, without a verdict on deferring (for the other side
    /// of a read-write lock handle).
    pub(super) fn take(&mut self) -> Option<Deferred> {
        self.pending.take().map(|(d, _)| d)
    }

    /// Deferral `number`'s [`RELEASE_LINGER`] is over: its release, if nothing took it, to be sent
    /// alone; the handle stops deferring then.
    pub(super) fn linger_over(&mut self, number: u64) -> Option<Deferred> {
        match &self.pending {
            Some((_, n)) if *n == number => {
                self.defer = false;
                self.take()
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(node: &str) -> ReleaseMachine {
        let mut m = ReleaseMachine::new(node);
        m.handle_session(Millis(0), SessionState::Connected);
        m
    }

    #[test]
    fn a_deleted_node_is_released_with_one_request() {
        let mut m = started("/l/n");
        let (token, request) = m.poll_request().expect("the delete");
        assert_eq!(
            request,
            Request::Delete {
                path: "/l/n".into(),
                version: None
            }
        );
        assert_eq!(m.poll_request(), None);
        m.handle_reply(Millis(1), token, Ok(Reply::Deleted));
        assert_eq!(m.poll_output(), Some(Ok(())));
        assert_eq!(m.poll_request(), None);
    }

    #[test]
    fn a_session_ended_before_the_release_sends_nothing() {
        let mut m = ReleaseMachine::new("/l/n");
        m.handle_session(Millis(0), SessionState::Expired);
        assert_eq!(m.poll_request(), None);
        assert_eq!(m.poll_output(), Some(Err(Error::SessionExpired)));
    }

    #[test]
    fn a_session_ended_while_the_reply_is_awaited_ends_the_release() {
        let mut m = started("/l/n");
        let (token, _) = m.poll_request().expect("the delete");
        m.handle_session(Millis(1), SessionState::Disconnected);
        assert_eq!(m.poll_output(), None);
        m.handle_session(Millis(2), SessionState::Expired);
        assert_eq!(m.poll_output(), Some(Err(Error::SessionExpired)));
        // The reply that follows changes nothing.
        m.handle_reply(Millis(3), token, Err(Error::ConnectionLoss));
        assert_eq!(m.poll_request(), None);
        assert_eq!(m.poll_output(), None);
    }

    #[test]
    fn a_refusal_fails_the_release() {
        let mut m = started("/l/n");
        let (token, _) = m.poll_request().expect("the delete");
        let refused = Error::NoAuth {
            path: "/l/n".into(),
        };
        m.handle_reply(Millis(1), token, Err(refused.clone()));
        assert_eq!(m.poll_output(), Some(Err(refused)));
    }

    #[test]
    fn the_book_keeps_failures_and_forgets_what_the_session_took() {
        let mut book = Releases::default();
        for node in ["/l/a", "/l/b", "/l/c", "/l/d"] {
            book.begin(node);
        }
        book.settle("/l/a".into(), Ok(()));
        book.settle(
            "/l/b".into(),
            Err(Error::NoAuth {
                path: "/l/b".into(),
            }),
        );
        book.settle("/l/c".into(), Err(Error::SessionExpired));
        assert_eq!(book.in_flight(), vec!["d".to_owned()]);
        assert_eq!(book.failed(), vec!["/l/b".to_owned()]);
    }
}
