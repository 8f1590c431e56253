//! The coordination trait: ZooKeeper's operations, as one small async interface that every
//! backend (the real client, the simulator, a model) implements and every recipe is written
//! against.
//!
//! A backend implements one primitive, [`Coordination::submit`], which takes a [`Request`]
//! value and answers with its [`Reply`] (and the watch it armed); the typed methods
//! (`create`, `get_data`, `get_and_watch_data`, …) are derived from it here, once.

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::request::{Reply, Request};
use crate::{
    Acl, AddWatchMode, CreateOptions, Error, Identity, Op, OpResult, PersistentWatch, ReadOp,
    ReadResult, Result, SessionInfo, SessionState, SessionStates, Stat, Watch,
};

/// The future every coordination operation returns.
pub type OpFuture<'a, T> = BoxFuture<'a, Result<T>>;

/// One session with a ZooKeeper-like coordination service.
///
/// A backend implements [`submit`](Self::submit), [`session`](Self::session),
/// [`session_states`](Self::session_states) and [`close`](Self::close) (and
/// [`new_guid`](Self::new_guid) if it must be deterministic); every typed method is derived
/// from `submit` and SHOULD NOT be overridden.
///
/// # Contract
///
/// Backends MUST honour these, and recipes rely on them:
///
/// - **Submission happens at the call, not at the first poll.** The request is handed to the
///   session when the method returns; awaiting only collects the reply. Requests made one after
///   another are therefore *pipelined*, and the service applies one session's requests in the
///   order they were made (ZooKeeper's FIFO client order). Dropping the future does not withdraw
///   the request.
/// - **Bad input never leaves the client.** Invalid paths ([`crate::path::validate_path`]) and
///   data over [`MAX_DATA_LEN`](crate::MAX_DATA_LEN) fail with [`crate::Error::InvalidPath`] or
///   [`crate::Error::DataTooLarge`] and nothing is sent.
/// - **Errors carry their retry meaning** ([`crate::Error::class`]). After an indeterminate error
///   a request may have been applied; after a session-lost error, every later call fails with the
///   same terminal error.
/// - **Watches are one-shot values** (see [`Watch`]); an event is delivered before any reply that
///   reflects the change it reports.
/// - **Persistent watches are streams** ([`add_watch`](Self::add_watch), [`PersistentWatch`]):
///   the same order against replies, no report of changes made while disconnected, and an end
///   with the session.
/// - Children are returned in no particular order.
///
/// Versions are `Option<i32>`: `None` matches any version.
///
/// # Example
///
/// Code is written once against the trait and runs on any backend:
///
/// ```
/// use avout::{Coordination, CreateMode, Error};
///
/// /// Increments a counter node by compare-and-set on its version.
/// async fn increment<C: Coordination + ?Sized>(zk: &C, path: &str) -> Result<u64, Error> {
///     loop {
///         let (data, stat) = zk.get_data(path).await?;
///         let n: u64 = String::from_utf8_lossy(&data).parse().unwrap_or(0) + 1;
///         match zk.set_data(path, n.to_string().as_bytes(), Some(stat.version)).await {
///             Ok(_) => return Ok(n),
///             Err(Error::BadVersion { .. }) => continue,
///             Err(e) => return Err(e),
///         }
///     }
/// }
/// ```
pub trait Coordination: Send + Sync {
    /// The session's id and negotiated timeout.
    fn session(&self) -> SessionInfo;

    /// A new subscription to the session's state transitions.
    fn session_states(&self) -> SessionStates;

    /// The session's state now, without subscribing to its transitions.
    ///
    /// The default subscribes and drops the subscription; backends that keep the state at
    /// hand override it, since recipes ask before every operation whether their session
    /// still lives.
    fn session_state(&self) -> SessionState {
        self.session_states().current()
    }

    /// Submits one request and answers with its reply and, for a request that
    /// [arms a watch](Request::arms_watch), the watch (`None` otherwise).
    ///
    /// The backend MUST submit the request before returning (see the contract above), MUST
    /// refuse bad input without sending it ([`Request::validate`]), and MUST answer with the
    /// reply of the request's own operation (a [`Reply::Data`] for a [`Request::GetData`], …):
    /// the typed methods turn any other reply into [`crate::Error::UnexpectedReply`].
    ///
    /// ```
    /// use avout::Coordination;
    /// use avout::machine::{Reply, Request};
    ///
    /// async fn children<C: Coordination>(zk: &C) -> avout::Result<usize> {
    ///     let request = Request::GetChildren { path: "/jobs".into(), watch: true };
    ///     match zk.submit(request).await? {
    ///         (Reply::Children { children, .. }, Some(_watch)) => Ok(children.len()),
    ///         (other, _) => Err(other.mismatch("getChildren")),
    ///     }
    /// }
    /// ```
    fn submit(&self, request: Request) -> OpFuture<'_, (Reply, Option<Watch>)>;

    /// A fresh 128-bit unique id, as recipes put in node names to recognise their own nodes
    /// after an indeterminate create (Curator's "protected" GUID prefix).
    ///
    /// The default draws from the operating system's randomness; a deterministic backend (the
    /// simulator) overrides it with its seeded stream, so that runs replay.
    fn new_guid(&self) -> u128 {
        uuid::Uuid::new_v4().as_u128()
    }

    /// Closes the session: its ephemeral nodes are deleted and its watches fire with
    /// [`crate::SessionState::Closed`]. Later calls fail with [`crate::Error::Closed`].
    fn close(&self) -> OpFuture<'_, ()>;

    /// Creates a node and returns its actual path (with the sequence suffix, for a sequential
    /// node) and its [`Stat`].
    ///
    /// Errors: `NodeExists`; `NoNode` if the parent is missing; `NoChildrenForEphemerals`;
    /// `NoAuth`/`InvalidAcl`. A sequential create is not idempotent: after an indeterminate
    /// error, look for the node (by a GUID in its name) before creating another.
    fn create(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions,
    ) -> OpFuture<'_, (String, Stat)> {
        let request = Request::Create {
            path: path.to_owned(),
            data: data.to_vec(),
            options: options.clone(),
        };
        typed(self, request, |reply, _| match reply {
            Reply::Created { path, stat } => Ok((path, stat)),
            other => Err(other),
        })
    }

    /// Deletes a node whose version matches. Errors: `NoNode`, `BadVersion`, `NotEmpty`.
    fn delete(&self, path: &str, version: Option<i32>) -> OpFuture<'_, ()> {
        let request = Request::Delete {
            path: path.to_owned(),
            version,
        };
        typed(self, request, |reply, _| match reply {
            Reply::Deleted => Ok(()),
            other => Err(other),
        })
    }

    /// Reads a node's data and metadata. Errors: `NoNode`.
    fn get_data(&self, path: &str) -> OpFuture<'_, (Vec<u8>, Stat)> {
        let request = Request::GetData {
            path: path.to_owned(),
            watch: false,
        };
        typed(self, request, |reply, _| match reply {
            Reply::Data { data, stat } => Ok((data, stat)),
            other => Err(other),
        })
    }

    /// Reads a node's data and arms a watch for its next data change or deletion.
    fn get_and_watch_data(&self, path: &str) -> OpFuture<'_, (Vec<u8>, Stat, Watch)> {
        let request = Request::GetData {
            path: path.to_owned(),
            watch: true,
        };
        typed(self, request, |reply, watch| match (reply, watch) {
            (Reply::Data { data, stat }, Some(watch)) => Ok((data, stat, watch)),
            (other, _) => Err(other),
        })
    }

    /// Replaces a node's data if its version matches; returns the new [`Stat`].
    /// Errors: `NoNode`, `BadVersion`.
    fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> OpFuture<'_, Stat> {
        let request = Request::SetData {
            path: path.to_owned(),
            data: data.to_vec(),
            version,
        };
        typed(self, request, |reply, _| match reply {
            Reply::Set(stat) => Ok(stat),
            other => Err(other),
        })
    }

    /// The node's metadata, or `None` if it does not exist.
    fn exists(&self, path: &str) -> OpFuture<'_, Option<Stat>> {
        let request = Request::Exists {
            path: path.to_owned(),
            watch: false,
        };
        typed(self, request, |reply, _| match reply {
            Reply::Exists(stat) => Ok(stat),
            other => Err(other),
        })
    }

    /// Like [`exists`](Self::exists), arming a watch: for creation if the node is missing,
    /// else for its next data change or deletion.
    fn exists_and_watch(&self, path: &str) -> OpFuture<'_, (Option<Stat>, Watch)> {
        let request = Request::Exists {
            path: path.to_owned(),
            watch: true,
        };
        typed(self, request, |reply, watch| match (reply, watch) {
            (Reply::Exists(stat), Some(watch)) => Ok((stat, watch)),
            (other, _) => Err(other),
        })
    }

    /// The names of a node's children (unordered) and the node's metadata. Errors: `NoNode`.
    fn get_children(&self, path: &str) -> OpFuture<'_, (Vec<String>, Stat)> {
        let request = Request::GetChildren {
            path: path.to_owned(),
            watch: false,
        };
        typed(self, request, |reply, _| match reply {
            Reply::Children { children, stat } => Ok((children, stat)),
            other => Err(other),
        })
    }

    /// Like [`get_children`](Self::get_children), arming a watch for a child being added or
    /// removed, or the node being deleted.
    fn get_and_watch_children(&self, path: &str) -> OpFuture<'_, (Vec<String>, Stat, Watch)> {
        let request = Request::GetChildren {
            path: path.to_owned(),
            watch: true,
        };
        typed(self, request, |reply, watch| match (reply, watch) {
            (Reply::Children { children, stat }, Some(watch)) => Ok((children, stat, watch)),
            (other, _) => Err(other),
        })
    }

    /// Applies all operations atomically, in order, or none. On failure the error is
    /// [`crate::Error::Multi`] with the index of the first operation that failed.
    fn multi(&self, ops: &[Op]) -> OpFuture<'_, Vec<OpResult>> {
        typed(self, Request::Multi(ops.to_vec()), |reply, _| match reply {
            Reply::Multi(results) => Ok(results),
            other => Err(other),
        })
    }

    /// A read barrier: a read sent after it sees every write committed before the call,
    /// whichever server the session talks to. Backends send it as a quorum round (a `multi`
    /// of one `check` of `path`, [`Request::quorum_sync`]), because ZooKeeper's own `sync`
    /// keeps this promise on followers only.
    fn sync(&self, path: &str) -> OpFuture<'_, ()> {
        let request = Request::Sync {
            path: path.to_owned(),
        };
        typed(self, request, |reply, _| match reply {
            Reply::Synced => Ok(()),
            other => Err(other),
        })
    }

    /// A node's ACL and metadata. Errors: `NoNode`.
    fn get_acl(&self, path: &str) -> OpFuture<'_, (Vec<Acl>, Stat)> {
        let request = Request::GetAcl {
            path: path.to_owned(),
        };
        typed(self, request, |reply, _| match reply {
            Reply::Acl { acl, stat } => Ok((acl, stat)),
            other => Err(other),
        })
    }

    /// Adds an identity to the session (ZooKeeper's `addAuthInfo`); for `digest`, `auth` is
    /// `user:password`. Errors: `AuthFailed` for an unknown scheme or malformed credentials.
    fn add_auth(&self, scheme: &str, auth: &[u8]) -> OpFuture<'_, ()> {
        let request = Request::AddAuth {
            scheme: scheme.to_owned(),
            auth: auth.to_vec(),
        };
        typed(self, request, |reply, _| match reply {
            Reply::AuthAdded => Ok(()),
            other => Err(other),
        })
    }

    /// Replaces a node's ACL if its ACL version (`aversion`) matches; returns the node's new
    /// [`Stat`]. Errors: `NoNode`, `NoAuth` (the session may not administer the node),
    /// `InvalidAcl`, `BadVersion`. Fires no watch.
    ///
    /// On a ZooKeeper 3.8 ensemble a new ACL is not yet in force for every request once this
    /// returns: the reply may come from a follower before the leader has applied the change,
    /// and until it has, the leader checks requests for the node against the ACL the change
    /// replaced (its outstanding change record keeps the old ACL;
    /// `reports/findings/setacl-without-admin-after-failover`). A revocation that must hold
    /// for the next request needs that request to find the node's `aversion` moved on in a
    /// read the leader served.
    fn set_acl(&self, path: &str, acl: &[Acl], version: Option<i32>) -> OpFuture<'_, Stat> {
        let request = Request::SetAcl {
            path: path.to_owned(),
            acl: acl.to_vec(),
            version,
        };
        typed(self, request, |reply, _| match reply {
            Reply::AclSet(stat) => Ok(stat),
            other => Err(other),
        })
    }

    /// The paths of this session's ephemeral nodes that start with `prefix` (a plain string
    /// prefix: `/app/a` matches `/app/ab`; `/` lists them all), unordered.
    fn get_ephemerals(&self, prefix: &str) -> OpFuture<'_, Vec<String>> {
        let request = Request::GetEphemerals {
            prefix: prefix.to_owned(),
        };
        typed(self, request, |reply, _| match reply {
            Reply::Ephemerals(paths) => Ok(paths),
            other => Err(other),
        })
    }

    /// Reads several nodes from one state of the tree, as one request (ZooKeeper 3.6's
    /// `multiRead`): each read answers for itself ([`ReadResult::NoNode`] for a missing node),
    /// and the request as a whole fails only as any request does (a lost connection).
    ///
    /// ```
    /// use avout::{Coordination, ReadOp, ReadResult};
    ///
    /// async fn both<C: Coordination>(zk: &C) -> avout::Result<usize> {
    ///     let reads = [
    ///         ReadOp::GetData { path: "/config".into() },
    ///         ReadOp::GetChildren { path: "/members".into() },
    ///     ];
    ///     let found = zk.multi_read(&reads).await?;
    ///     Ok(found.iter().filter(|r| !matches!(r, ReadResult::NoNode { .. })).count())
    /// }
    /// ```
    fn multi_read(&self, reads: &[ReadOp]) -> OpFuture<'_, Vec<ReadResult>> {
        typed(
            self,
            Request::MultiRead(reads.to_vec()),
            |reply, _| match reply {
                Reply::MultiRead(results) => Ok(results),
                other => Err(other),
            },
        )
    }

    /// The identities the session holds (ZooKeeper 3.7's `whoAmI`): its address and every
    /// identity `addAuth` gave it.
    fn who_am_i(&self) -> OpFuture<'_, Vec<Identity>> {
        typed(self, Request::WhoAmI, |reply, _| match reply {
            Reply::WhoAmI(ids) => Ok(ids),
            other => Err(other),
        })
    }

    /// How many descendants a node has: its children, theirs, and so on, not the node itself.
    /// Errors: `NoNode`, `NoAuth` (reading the node).
    fn get_all_children_number(&self, path: &str) -> OpFuture<'_, u64> {
        let request = Request::GetAllChildrenNumber {
            path: path.to_owned(),
        };
        typed(self, request, |reply, _| match reply {
            Reply::AllChildrenNumber(n) => Ok(n),
            other => Err(other),
        })
    }

    /// Arms a persistent watch on `path` (which need not exist) and hands out its events;
    /// see [`PersistentWatch`]. Errors: `Unimplemented` from a server older than 3.6, or from
    /// a backend that hands out no persistent watches (the default).
    ///
    /// ```
    /// use avout::{AddWatchMode, Coordination, EventKind};
    /// use futures::StreamExt;
    ///
    /// async fn first_change<C: Coordination>(zk: &C) -> avout::Result<Option<String>> {
    ///     let mut watch = zk.add_watch("/config", AddWatchMode::PersistentRecursive).await?;
    ///     while let Some(event) = watch.next().await {
    ///         if event.kind != EventKind::Session {
    ///             return Ok(Some(event.path));
    ///         }
    ///     }
    ///     Ok(None)
    /// }
    /// ```
    fn add_watch(&self, path: &str, mode: AddWatchMode) -> OpFuture<'_, PersistentWatch> {
        let _ = (path, mode);
        futures::future::ready(Err(Error::Unimplemented(
            "addWatch: this backend hands out no persistent watches".into(),
        )))
        .boxed()
    }
}

/// A shared handle is a backend too: an `Arc<dyn Coordination>` (what a
/// [`Connect`](crate::client::Connect)or opens) goes wherever a `C: Coordination` is asked
/// for. It forwards what a backend implements; the typed methods are derived as for any
/// backend.
///
/// ```
/// use std::sync::Arc;
/// use avout::Coordination;
///
/// fn timeout_of<C: Coordination>(zk: &C) -> std::time::Duration {
///     zk.session().timeout
/// }
///
/// fn shared(zk: Arc<dyn Coordination>) -> std::time::Duration {
///     timeout_of(&zk)
/// }
/// ```
impl<C: Coordination + ?Sized> Coordination for std::sync::Arc<C> {
    fn session(&self) -> SessionInfo {
        (**self).session()
    }

    fn session_states(&self) -> SessionStates {
        (**self).session_states()
    }

    fn session_state(&self) -> SessionState {
        (**self).session_state()
    }

    fn submit(&self, request: Request) -> OpFuture<'_, (Reply, Option<Watch>)> {
        (**self).submit(request)
    }

    fn new_guid(&self) -> u128 {
        (**self).new_guid()
    }

    fn close(&self) -> OpFuture<'_, ()> {
        (**self).close()
    }

    fn add_watch(&self, path: &str, mode: AddWatchMode) -> OpFuture<'_, PersistentWatch> {
        (**self).add_watch(path, mode)
    }
}

/// Submits `request` and unpacks its reply with `unpack`, which hands back a reply of the
/// wrong shape (or a watched read's missing watch) to become
/// [`crate::Error::UnexpectedReply`].
fn typed<'a, C, T>(
    zk: &'a C,
    request: Request,
    unpack: impl FnOnce(Reply, Option<Watch>) -> Result<T, Reply> + Send + 'a,
) -> OpFuture<'a, T>
where
    C: Coordination + ?Sized,
    T: Send + 'a,
{
    let name = request.name();
    let reply = zk.submit(request);
    async move {
        let (reply, watch) = reply.await?;
        unpack(reply, watch).map_err(|other| other.mismatch(name))
    }
    .boxed()
}
