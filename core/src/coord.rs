//! The coordination trait: ZooKeeper's operations, as one small async interface that every
//! backend (the real client, the simulator, a model) implements and every recipe is written
//! against.

use futures::future::BoxFuture;

use crate::{Acl, CreateOptions, Op, OpResult, Result, SessionInfo, SessionStates, Stat, Watch};

/// The future every coordination operation returns.
pub type OpFuture<'a, T> = BoxFuture<'a, Result<T>>;

/// One session with a ZooKeeper-like coordination service.
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
    ) -> OpFuture<'_, (String, Stat)>;

    /// Deletes a node whose version matches. Errors: `NoNode`, `BadVersion`, `NotEmpty`.
    fn delete(&self, path: &str, version: Option<i32>) -> OpFuture<'_, ()>;

    /// Reads a node's data and metadata. Errors: `NoNode`.
    fn get_data(&self, path: &str) -> OpFuture<'_, (Vec<u8>, Stat)>;

    /// Reads a node's data and arms a watch for its next data change or deletion.
    fn get_and_watch_data(&self, path: &str) -> OpFuture<'_, (Vec<u8>, Stat, Watch)>;

    /// Replaces a node's data if its version matches; returns the new [`Stat`].
    /// Errors: `NoNode`, `BadVersion`.
    fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> OpFuture<'_, Stat>;

    /// The node's metadata, or `None` if it does not exist.
    fn exists(&self, path: &str) -> OpFuture<'_, Option<Stat>>;

    /// Like [`exists`](Self::exists), arming a watch: for creation if the node is missing,
    /// else for its next data change or deletion.
    fn exists_and_watch(&self, path: &str) -> OpFuture<'_, (Option<Stat>, Watch)>;

    /// The names of a node's children (unordered) and the node's metadata. Errors: `NoNode`.
    fn get_children(&self, path: &str) -> OpFuture<'_, (Vec<String>, Stat)>;

    /// Like [`get_children`](Self::get_children), arming a watch for a child being added or
    /// removed, or the node being deleted.
    fn get_and_watch_children(&self, path: &str) -> OpFuture<'_, (Vec<String>, Stat, Watch)>;

    /// Applies all operations atomically, in order, or none. On failure the error is
    /// [`crate::Error::Multi`] with the index of the first operation that failed.
    fn multi(&self, ops: &[Op]) -> OpFuture<'_, Vec<OpResult>>;

    /// Waits until the server this session talks to has caught up with the leader, so that
    /// the next read sees every write committed before the call.
    fn sync(&self, path: &str) -> OpFuture<'_, ()>;

    /// A node's ACL and metadata. Errors: `NoNode`.
    fn get_acl(&self, path: &str) -> OpFuture<'_, (Vec<Acl>, Stat)>;

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
}
