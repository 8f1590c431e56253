//! How a backend carries out [`Request::Sync`]: as a quorum round, not ZooKeeper's `sync`.
//!
//! avout's `sync` promises that a read sent after it sees every write committed before it,
//! whichever server the session talks to. ZooKeeper's own `sync` keeps that promise on a
//! follower and breaks it on the leader: ZooKeeper 3.8's leader answers a `sync` of one of its
//! own clients at once (its commit processor does not match syncs), while a transaction it has
//! committed, and that a follower has already applied and acknowledged to its client, may still
//! wait in its queue. `cargo run -p avout-testkit --example leader_sync` measures it on Debian's
//! ZooKeeper: a reader on the leader misses an acknowledged create a few times in a thousand,
//! on a follower never. It let a barrier waiter pass a raised barrier and a linearizable
//! register read a stale value (`reports/findings/barrier-after-restart/`).
//!
//! So every backend sends a `sync` as a `multi` of one `check` on its path
//! ([`Request::quorum_sync`]). ZooKeeper proposes a `multi` through the leader's pipeline
//! whether its check holds or not (a failed one becomes an error transaction), and answers it
//! only once the client's own server has applied it, in zxid order, after everything committed
//! before. The reads a session sends after it wait behind it. The price is one logged
//! transaction per `sync` where ZooKeeper's costs none; the round trips are the same.
//! [`Request::quorum_synced`] reads the answer back as [`Reply::Synced`].

use futures::FutureExt;

use crate::{Error, ErrorClass, Op, OpFuture, Reply, Request, Result, Watch};

impl Request {
    /// What a backend sends for `Sync { path }`: a `multi` of one `check` of `path`, which
    /// ZooKeeper orders through its quorum. See the module docs.
    ///
    /// ```
    /// use avout::{Op, Request};
    /// assert_eq!(Request::quorum_sync("/a"), Request::Multi(vec![Op::check("/a", None)]));
    /// ```
    pub fn quorum_sync(path: &str) -> Request {
        Request::Multi(vec![Op::check(path, None)])
    }

    /// A backend's `submit` for `Sync { path }`: sends [`Request::quorum_sync`] with `send`
    /// and reads its answer back with [`Request::quorum_synced`].
    ///
    /// ```
    /// use avout::{OpFuture, Reply, Request};
    /// use futures::FutureExt;
    /// let answered: OpFuture<'_, (Reply, Option<avout::Watch>)> =
    ///     Request::sync_by_quorum("/a", |sent| {
    ///         assert!(matches!(sent, Request::Multi(_)));
    ///         futures::future::ready(Ok((Reply::Multi(vec![]), None))).boxed()
    ///     });
    /// assert_eq!(answered.now_or_never().unwrap().unwrap().0, Reply::Synced);
    /// ```
    pub fn sync_by_quorum<'a>(
        path: &str,
        send: impl FnOnce(Request) -> OpFuture<'a, (Reply, Option<Watch>)>,
    ) -> OpFuture<'a, (Reply, Option<Watch>)> {
        send(Request::quorum_sync(path))
            .map(|r| Request::quorum_synced(r.map(|(reply, _)| reply)).map(|s| (s, None)))
            .boxed()
    }

    /// The outcome of a `sync` sent as [`Request::quorum_sync`]: [`Reply::Synced`] once the
    /// server ordered the check, whether it held or not (a missing node or a refused read
    /// still went through the quorum); a lost connection or session stays an error.
    ///
    /// ```
    /// use avout::{Error, Reply, Request};
    /// let missing = Error::Multi { index: 0, source: Box::new(Error::NoNode { path: "/a".into() }) };
    /// assert_eq!(Request::quorum_synced(Err(missing)), Ok(Reply::Synced));
    /// assert_eq!(Request::quorum_synced(Ok(Reply::Multi(vec![]))), Ok(Reply::Synced));
    /// assert_eq!(
    ///     Request::quorum_synced(Err(Error::ConnectionLoss)),
    ///     Err(Error::ConnectionLoss)
    /// );
    /// ```
    pub fn quorum_synced(result: Result<Reply>) -> Result<Reply> {
        match result {
            Ok(Reply::Multi(_)) => Ok(Reply::Synced),
            Err(Error::Multi { source, .. }) if source.class() == ErrorClass::Rejected => {
                crate::coverage::reach(crate::coverage::Mark::SyncCheckFailed);
                Ok(Reply::Synced)
            }
            Err(Error::Multi { source, .. }) => Err(*source),
            Err(e) => Err(e),
            Ok(other) => Err(Error::UnexpectedReply {
                request: "sync",
                reply: format!("{other:?}"),
            }),
        }
    }
}
