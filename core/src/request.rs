//! ZooKeeper's operations as values: the one vocabulary of the backend seam.
//!
//! A [`Request`] is what a client asks the service; a [`Reply`] is the service's successful
//! answer. Every layer speaks it: a backend implements [`Coordination::submit`] with one match
//! over it, the typed methods of [`Coordination`] are derived from it in one place, protocol
//! machines return requests as values ([`crate::machine`]), and the simulator's kernel and the
//! models consume requests and produce replies. Adding an operation is one variant here, an
//! arm in each backend's `submit` (the compiler lists them), and a typed method if callers want
//! one.

use serde::{Deserialize, Serialize};

use crate::{
    Acl, AddWatchMode, CreateOptions, Error, Identity, Op, OpResult, ReadOp, ReadResult, Result,
    Stat,
};

#[cfg(doc)]
use crate::Coordination;

/// An operation, as a value.
///
/// ```
/// use avout::machine::Request;
/// let r = Request::GetChildren { path: "/lock".into(), watch: false };
/// assert_eq!(r.path(), "/lock");
/// assert_eq!(r.name(), "getChildren");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Request {
    /// [`Coordination::create`].
    Create {
        /// The node, or a sequential node's prefix.
        path: String,
        /// Its data.
        data: Vec<u8>,
        /// Mode and ACL.
        options: CreateOptions,
    },
    /// [`Coordination::delete`].
    Delete {
        /// The node.
        path: String,
        /// Expected version (`None`: any).
        version: Option<i32>,
    },
    /// [`Coordination::get_data`], arming a data watch if asked
    /// ([`Coordination::get_and_watch_data`]).
    GetData {
        /// The node.
        path: String,
        /// Whether to arm a data watch.
        watch: bool,
    },
    /// [`Coordination::set_data`].
    SetData {
        /// The node.
        path: String,
        /// The new data.
        data: Vec<u8>,
        /// Expected version (`None`: any).
        version: Option<i32>,
    },
    /// [`Coordination::exists`], arming a watch if asked (even on a missing node:
    /// [`Coordination::exists_and_watch`]).
    Exists {
        /// The node.
        path: String,
        /// Whether to arm an exists watch.
        watch: bool,
    },
    /// [`Coordination::get_children`], arming a child watch if asked
    /// ([`Coordination::get_and_watch_children`]).
    GetChildren {
        /// The node.
        path: String,
        /// Whether to arm a child watch.
        watch: bool,
    },
    /// [`Coordination::multi`].
    Multi(Vec<Op>),
    /// [`Coordination::sync`].
    Sync {
        /// The path to sync.
        path: String,
    },
    /// [`Coordination::get_acl`].
    GetAcl {
        /// The node.
        path: String,
    },
    /// [`Coordination::add_auth`]: adds an identity to the session.
    AddAuth {
        /// The scheme (`digest`).
        scheme: String,
        /// The credentials (`user:password` for `digest`).
        auth: Vec<u8>,
    },
    /// [`Coordination::set_acl`]: replaces a node's ACL if its ACL version matches.
    SetAcl {
        /// The node.
        path: String,
        /// The new ACL.
        acl: Vec<Acl>,
        /// Expected ACL version (`aversion`; `None`: any).
        version: Option<i32>,
    },
    /// [`Coordination::get_ephemerals`]: the session's ephemeral nodes whose path starts
    /// with a prefix.
    GetEphemerals {
        /// The prefix (a plain string prefix of the paths, `/` for all).
        prefix: String,
    },
    /// [`Coordination::get_all_children_number`]: how many descendants a node has.
    GetAllChildrenNumber {
        /// The node.
        path: String,
    },
    /// Arms a persistent watch ([`Coordination::add_watch`], which hands out its events;
    /// submitted as a plain request, the server arms it and nobody hears its events).
    AddWatch {
        /// The watched node (it need not exist).
        path: String,
        /// Whether it also watches the node's descendants.
        mode: AddWatchMode,
    },
    /// Removes the session's watches on a node (ZooKeeper's `removeWatches` with
    /// `WatcherType.Any`; [`crate::PersistentWatch::remove`] sends it).
    RemoveWatches {
        /// The watched node.
        path: String,
    },
    /// Reads several nodes from one state of the tree ([`Coordination::multi_read`],
    /// ZooKeeper 3.6's `multiRead`); each read fails on its own.
    MultiRead(Vec<ReadOp>),
    /// The identities the session holds ([`Coordination::who_am_i`], ZooKeeper 3.7's
    /// `whoAmI`).
    WhoAmI,
}

impl Request {
    /// The path the request concerns (the first operation's, for a `multi` or a `multiRead`;
    /// empty for `addAuth` and `whoAmI`).
    ///
    /// ```
    /// use avout::machine::Request;
    /// assert_eq!(Request::Sync { path: "/a".into() }.path(), "/a");
    /// ```
    pub fn path(&self) -> &str {
        match self {
            Request::Create { path, .. }
            | Request::Delete { path, .. }
            | Request::GetData { path, .. }
            | Request::SetData { path, .. }
            | Request::Exists { path, .. }
            | Request::GetChildren { path, .. }
            | Request::Sync { path }
            | Request::GetAcl { path }
            | Request::SetAcl { path, .. }
            | Request::GetAllChildrenNumber { path }
            | Request::AddWatch { path, .. }
            | Request::RemoveWatches { path } => path,
            Request::GetEphemerals { prefix } => prefix,
            Request::Multi(ops) => ops.first().map_or("", Op::path),
            Request::MultiRead(ops) => ops.first().map_or("", ReadOp::path),
            Request::AddAuth { .. } | Request::WhoAmI => "",
        }
    }

    /// Whether the request arms a watch.
    ///
    /// ```
    /// use avout::machine::Request;
    /// assert!(Request::Exists { path: "/a".into(), watch: true }.arms_watch());
    /// ```
    pub fn arms_watch(&self) -> bool {
        matches!(
            self,
            Request::GetData { watch: true, .. }
                | Request::Exists { watch: true, .. }
                | Request::GetChildren { watch: true, .. }
        )
    }

    /// Whether the request changes the tree (ZooKeeper gives it a zxid even if it fails).
    ///
    /// ```
    /// use avout::machine::Request;
    /// assert!(Request::Delete { path: "/a".into(), version: None }.is_write());
    /// assert!(!Request::Sync { path: "/a".into() }.is_write());
    /// ```
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Request::Create { .. }
                | Request::Delete { .. }
                | Request::SetData { .. }
                | Request::Multi(_)
                | Request::SetAcl { .. }
        )
    }

    /// ZooKeeper's name of the operation (its `OpCode`, as logs spell it).
    ///
    /// The simulator's event log hashes these names: they MUST NOT change.
    ///
    /// ```
    /// use avout::machine::Request;
    /// assert_eq!(Request::GetAcl { path: "/a".into() }.name(), "getACL");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Request::Create { .. } => "create",
            Request::Delete { .. } => "delete",
            Request::GetData { .. } => "getData",
            Request::SetData { .. } => "setData",
            Request::Exists { .. } => "exists",
            Request::GetChildren { .. } => "getChildren",
            Request::Multi(_) => "multi",
            Request::Sync { .. } => "sync",
            Request::GetAcl { .. } => "getACL",
            Request::AddAuth { .. } => "addAuth",
            Request::SetAcl { .. } => "setACL",
            Request::GetEphemerals { .. } => "getEphemerals",
            Request::GetAllChildrenNumber { .. } => "getAllChildrenNumber",
            Request::AddWatch { .. } => "addWatch",
            Request::RemoveWatches { .. } => "removeWatches",
            Request::MultiRead(_) => "multiRead",
            Request::WhoAmI => "whoAmI",
        }
    }

    /// Checks the request's paths and data as a backend must before sending anything
    /// (the trait's contract: bad input never leaves the client).
    ///
    /// ```
    /// use avout::machine::Request;
    /// let bad = Request::GetData { path: "no-slash".into(), watch: false };
    /// assert!(matches!(bad.validate(), Err(avout::Error::InvalidPath { .. })));
    /// ```
    pub fn validate(&self) -> Result<()> {
        match self {
            Request::Create {
                path,
                data,
                options,
            } => {
                crate::path::validate_write(path, options.mode.is_sequential(), data)?;
                options.validate(path)
            }
            Request::SetData { path, data, .. } => crate::path::validate_write(path, false, data),
            Request::Delete { path, .. }
            | Request::GetData { path, .. }
            | Request::Exists { path, .. }
            | Request::GetChildren { path, .. }
            | Request::Sync { path }
            | Request::GetAcl { path }
            | Request::SetAcl { path, .. }
            | Request::GetAllChildrenNumber { path }
            | Request::AddWatch { path, .. }
            | Request::RemoveWatches { path } => crate::path::validate_path(path, false),
            Request::GetEphemerals { prefix } => crate::path::validate_path(prefix, false),
            Request::Multi(ops) => Op::validate_all(ops),
            Request::MultiRead(ops) => ops
                .iter()
                .try_for_each(|op| crate::path::validate_path(op.path(), false)),
            Request::AddAuth { .. } | Request::WhoAmI => Ok(()),
        }
    }
}

/// The successful reply to a [`Request`].
///
/// ```
/// use avout::machine::Reply;
/// let r = Reply::Exists(None);
/// assert!(matches!(r, Reply::Exists(None)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reply {
    /// A node was created.
    Created {
        /// Its path, with the sequence suffix if sequential.
        path: String,
        /// Its metadata.
        stat: Stat,
    },
    /// The node was deleted.
    Deleted,
    /// A node's data.
    Data {
        /// The data.
        data: Vec<u8>,
        /// The metadata.
        stat: Stat,
    },
    /// The data was set.
    Set(Stat),
    /// Whether the node exists.
    Exists(Option<Stat>),
    /// A node's children.
    Children {
        /// Child names, unordered.
        children: Vec<String>,
        /// The parent's metadata.
        stat: Stat,
    },
    /// All operations of the `multi` were applied.
    Multi(Vec<OpResult>),
    /// The sync completed.
    Synced,
    /// A node's ACL.
    Acl {
        /// The ACL (redacted unless the session may administer the node).
        acl: Vec<Acl>,
        /// The node's metadata.
        stat: Stat,
    },
    /// The identity was added to the session.
    AuthAdded,
    /// The ACL was replaced; the node's new metadata.
    AclSet(Stat),
    /// The session's ephemeral nodes under the prefix (full paths, unordered).
    Ephemerals(Vec<String>),
    /// How many descendants the node has (children, their children, …; not the node).
    AllChildrenNumber(u64),
    /// The persistent watch was armed.
    WatchAdded,
    /// The watches were removed.
    WatchesRemoved,
    /// Each read of a `multiRead`, in order.
    MultiRead(Vec<ReadResult>),
    /// The session's identities.
    WhoAmI(Vec<Identity>),
}

impl Reply {
    /// The error for a reply that does not answer the request named `request` (see
    /// [`Request::name`]): a backend that breaks its contract fails the call, not the process.
    ///
    /// ```
    /// use avout::machine::Reply;
    /// let e = Reply::Deleted.mismatch("sync");
    /// assert!(matches!(e, avout::Error::UnexpectedReply { request: "sync", .. }));
    /// ```
    pub fn mismatch(&self, request: &'static str) -> Error {
        Error::UnexpectedReply {
            request,
            reply: format!("{self:?}"),
        }
    }
}
