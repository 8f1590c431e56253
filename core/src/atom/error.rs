//! [`AtomError`]: why an atom operation failed, and whether it certainly changed nothing.

use crate::Error;
use crate::lock::LockError;

use super::{CodecError, StepError, StoreError};

/// Why an atom operation failed.
///
/// ```
/// use avout::atom::AtomError;
/// let e = AtomError::Invalid { path: "/a".into() };
/// assert!(e.is_definite());
/// assert_eq!(e.to_string(), "the validator of /a rejected the value; nothing was written");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AtomError {
    /// The node does not exist (use [`Atom::open`](super::Atom::open) to create it with an
    /// initial value).
    #[error("no atom at {path}")]
    Missing {
        /// The atom's path.
        path: String,
    },
    /// The validator rejected the new value; nothing was written.
    #[error("the validator of {path} rejected the value; nothing was written")]
    Invalid {
        /// The atom's path.
        path: String,
    },
    /// The value could not be encoded; nothing was written.
    #[error("cannot encode the value for {path}: {source}")]
    Encode {
        /// The atom's path.
        path: String,
        /// The codec's error.
        source: CodecError,
    },
    /// The node holds bytes that are not a value of this atom's type and codec.
    #[error("{path} holds bytes that do not decode: {source}")]
    Decode {
        /// The atom's path.
        path: String,
        /// The codec's error.
        source: CodecError,
    },
    /// The encoded value exceeds the container's limit (ZooKeeper's 1 MiB for the default
    /// [`ZkNode`](super::ZkNode)); nothing was written.
    #[error("a value of {len} bytes for {path} exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The atom's path.
        path: String,
        /// The encoded size.
        len: usize,
        /// The largest size accepted.
        limit: usize,
    },
    /// The value store failed.
    #[error("atom {path}: {source}")]
    Store {
        /// The atom's path.
        path: String,
        /// The store's error.
        source: StoreError,
    },
    /// After a connection loss, whether the write took effect could not be decided.
    #[error(transparent)]
    Indeterminate(StepError),
    /// Taking the promotion lock failed.
    #[error("promotion lock: {0}")]
    Lock(LockError),
    /// The coordination service refused a request, or the session was lost.
    #[error(transparent)]
    Zk(#[from] Error),
}

impl AtomError {
    /// Whether the failed operation certainly changed nothing. `false` when a write may have
    /// taken effect (outcome undecidable, or the session was lost with a write in flight).
    ///
    /// ```
    /// use avout::atom::AtomError;
    /// assert!(!AtomError::Zk(avout::Error::SessionExpired).is_definite());
    /// ```
    pub fn is_definite(&self) -> bool {
        match self {
            AtomError::Indeterminate(_) => false,
            AtomError::Zk(e) => e.is_rejected(),
            AtomError::Lock(LockError::SessionLost(_)) => false,
            _ => true,
        }
    }

    pub(super) fn from_step(e: StepError) -> AtomError {
        match e {
            StepError::Zk(e) => AtomError::Zk(e),
            unknown @ StepError::Unknown { .. } => AtomError::Indeterminate(unknown),
        }
    }
}
