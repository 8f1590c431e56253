//! The operations of a `multi`: all applied, in order and atomically, or none.

use serde::{Deserialize, Serialize};

use crate::{CreateMode, CreateOptions, Stat};

/// One operation of a [`Coordination::multi`](crate::Coordination::multi).
///
/// ```
/// use avout::{CreateMode, Op};
/// let ops = [
///     Op::check("/config", Some(3)),
///     Op::create("/jobs/j-", b"payload".to_vec(), CreateMode::PersistentSequential),
/// ];
/// assert_eq!(ops[0].path(), "/config");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// Fails unless the node exists with the given version (`None`: any version).
    Check {
        /// The node.
        path: String,
        /// The version it must have.
        version: Option<i32>,
    },
    /// Creates a node.
    Create {
        /// The node (or, for a sequential node, the prefix of its name).
        path: String,
        /// Its data.
        data: Vec<u8>,
        /// Its mode and ACL.
        options: CreateOptions,
    },
    /// Sets a node's data.
    SetData {
        /// The node.
        path: String,
        /// The new data.
        data: Vec<u8>,
        /// The version it must have (`None`: any version).
        version: Option<i32>,
    },
    /// Deletes a node.
    Delete {
        /// The node.
        path: String,
        /// The version it must have (`None`: any version).
        version: Option<i32>,
    },
}

impl Op {
    /// A version check.
    ///
    /// ```
    /// assert!(matches!(avout::Op::check("/a", None), avout::Op::Check { .. }));
    /// ```
    pub fn check(path: impl Into<String>, version: Option<i32>) -> Op {
        Op::Check {
            path: path.into(),
            version,
        }
    }

    /// A create with the default ACL.
    ///
    /// ```
    /// let op = avout::Op::create("/a", vec![], avout::CreateMode::Ephemeral);
    /// assert_eq!(op.path(), "/a");
    /// ```
    pub fn create(path: impl Into<String>, data: Vec<u8>, mode: CreateMode) -> Op {
        Op::Create {
            path: path.into(),
            data,
            options: CreateOptions::new(mode),
        }
    }

    /// A data update.
    ///
    /// ```
    /// let op = avout::Op::set_data("/a", b"x".to_vec(), Some(0));
    /// assert_eq!(op.path(), "/a");
    /// ```
    pub fn set_data(path: impl Into<String>, data: Vec<u8>, version: Option<i32>) -> Op {
        Op::SetData {
            path: path.into(),
            data,
            version,
        }
    }

    /// A delete.
    ///
    /// ```
    /// assert_eq!(avout::Op::delete("/a", Some(1)).path(), "/a");
    /// ```
    pub fn delete(path: impl Into<String>, version: Option<i32>) -> Op {
        Op::Delete {
            path: path.into(),
            version,
        }
    }

    /// The path the operation concerns.
    ///
    /// ```
    /// assert_eq!(avout::Op::check("/x", None).path(), "/x");
    /// ```
    pub fn path(&self) -> &str {
        match self {
            Op::Check { path, .. }
            | Op::Create { path, .. }
            | Op::SetData { path, .. }
            | Op::Delete { path, .. } => path,
        }
    }

    /// Checks every operation of a `multi`, and that together they fit in one ZooKeeper
    /// request (its 1 MiB `jute.maxbuffer` bounds the whole request: a larger one makes the
    /// server drop the connection, failing every request in flight).
    ///
    /// ```
    /// use avout::{Op, MAX_DATA_LEN};
    /// let half = vec![0; MAX_DATA_LEN / 2 + 1];
    /// let ops = [Op::set_data("/a", half.clone(), None), Op::set_data("/b", half, None)];
    /// assert!(matches!(Op::validate_all(&ops), Err(avout::Error::DataTooLarge { .. })));
    /// ```
    pub fn validate_all(ops: &[Op]) -> crate::Result<()> {
        // Per operation, ZooKeeper's encoding adds a header and the lengths of the path and
        // data: 32 bytes bounds it.
        let mut total = 0;
        for op in ops {
            op.validate()?;
            total += op.path().len()
                + 32
                + match op {
                    Op::Create { data, .. } | Op::SetData { data, .. } => data.len(),
                    Op::Check { .. } | Op::Delete { .. } => 0,
                };
        }
        if total > crate::MAX_DATA_LEN {
            return Err(crate::Error::DataTooLarge {
                path: ops.first().map_or("", Op::path).to_owned(),
                len: total,
                limit: crate::MAX_DATA_LEN,
            });
        }
        Ok(())
    }

    /// Checks the operation's path and data as the backend would, before anything is sent.
    ///
    /// ```
    /// assert!(avout::Op::check("no-slash", None).validate().is_err());
    /// ```
    pub fn validate(&self) -> crate::Result<()> {
        match self {
            Op::Check { path, .. } | Op::Delete { path, .. } => {
                crate::path::validate_path(path, false)
            }
            Op::SetData { path, data, .. } => crate::path::validate_write(path, false, data),
            Op::Create {
                path,
                data,
                options,
            } => {
                crate::path::validate_write(path, options.mode.is_sequential(), data)?;
                options.validate(path)
            }
        }
    }
}

/// The result of one successful operation of a `multi`.
///
/// A create's [`Stat`] comes only from servers that return one inside a `multi`: ZooKeeper
/// 3.7.2, 3.8.2, 3.9 and later (ZOOKEEPER-4026). 3.8.0 and 3.8.1, Debian's among them, answer
/// an invalid one, which is `None` here; so does the simulator unless its
/// [`Features`](https://docs.rs/avout-sim-zk) ask for the newer behaviour.
///
/// ```
/// let r = avout::OpResult::Create { path: "/jobs/j-0000000000".into(), stat: None };
/// assert!(matches!(r, avout::OpResult::Create { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpResult {
    /// The check passed.
    Check,
    /// The node was created at this path (with its sequence suffix, if sequential).
    Create {
        /// The created node's path.
        path: String,
        /// The created node's metadata right after the create, if the server returned it.
        #[serde(default)]
        stat: Option<Stat>,
    },
    /// The data was set.
    SetData {
        /// The node's new metadata.
        stat: Stat,
    },
    /// The node was deleted.
    Delete,
}

/// One read of a [`Request::MultiRead`](crate::Request::MultiRead).
///
/// ```
/// let read = avout::ReadOp::GetData { path: "/config".into() };
/// assert_eq!(read.path(), "/config");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReadOp {
    /// A node's data and metadata.
    GetData {
        /// The node.
        path: String,
    },
    /// A node's children.
    GetChildren {
        /// The node.
        path: String,
    },
}

impl ReadOp {
    /// The node the read concerns.
    ///
    /// ```
    /// assert_eq!(avout::ReadOp::GetChildren { path: "/a".into() }.path(), "/a");
    /// ```
    pub fn path(&self) -> &str {
        match self {
            ReadOp::GetData { path } | ReadOp::GetChildren { path } => path,
        }
    }
}

/// The result of one read of a `multiRead`: each read succeeds or fails on its own, all from
/// one state of the tree.
///
/// ```
/// let r = avout::ReadResult::NoNode { path: "/gone".into() };
/// assert!(matches!(r, avout::ReadResult::NoNode { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReadResult {
    /// The node's data and metadata.
    Data {
        /// The data.
        data: Vec<u8>,
        /// The metadata.
        stat: Stat,
    },
    /// The node's children (unordered; ZooKeeper's `multiRead` returns no metadata with them).
    Children {
        /// Child names.
        children: Vec<String>,
    },
    /// The node does not exist.
    NoNode {
        /// The node.
        path: String,
    },
    /// The session may not read the node.
    NoAuth {
        /// The node.
        path: String,
    },
}

/// An identity a session holds, as ZooKeeper's `whoAmI` reports it: the scheme and the user
/// (`ip`/`127.0.0.1`, `digest`/`bob`, `super`/``).
///
/// ```
/// let me = avout::Identity { scheme: "digest".into(), user: "bob".into() };
/// assert_eq!(me.user, "bob");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Identity {
    /// The authentication scheme.
    pub scheme: String,
    /// The user within it.
    pub user: String,
}
