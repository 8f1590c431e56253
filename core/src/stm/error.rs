//! Why a transaction failed: [`StmError`], and [`Abort`], what a transaction operation returns
//! to the body when the try cannot go on.

use std::convert::Infallible;

use crate::Error;
use crate::atom::CodecError;

use super::Protocol;

/// What a [`Tx`](super::Tx) operation returns when the try cannot go on: a conflict (the body
/// will be run again), or a failure that [`Stm::dosync`](super::Stm::dosync) will return.
///
/// The body only has to propagate it (`?`): the reason is kept by the transaction, and
/// `dosync` acts on it even if the body drops the `Abort` and returns `Ok` — a doomed try is
/// never committed. Only the STM makes one.
///
/// ```
/// use avout::stm::Abort;
/// // A body's own error type carries aborts through `From`:
/// enum MyError { Stm(Abort), Overdrawn }
/// impl From<Abort> for MyError { fn from(a: Abort) -> Self { MyError::Stm(a) } }
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Abort(pub(crate) ());

impl std::fmt::Display for Abort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the transaction's try was aborted (dosync acts on the reason)")
    }
}

impl std::error::Error for Abort {}

/// Why [`Stm::dosync`](super::Stm::dosync) (or another STM operation) failed. `E` is the
/// body's own error type: operations without a body fail with `StmError` (`E` =
/// [`Infallible`]), and a `dosync` whose body fails only by [`Abort`] converts into it with `?`.
///
/// Conflicts are not errors: they re-run the body, up to the retry limit. Every other failure
/// is returned, never swallowed, and says whether anything may have been written
/// ([`StmError::is_definite`]).
///
/// ```
/// use avout::stm::StmError;
/// let e: StmError = StmError::Invalid { name: "alice".into() };
/// assert!(e.is_definite());
/// assert_eq!(e.to_string(), "the validator of ref alice rejected its new value; nothing was written");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StmError<E = Infallible> {
    /// The body returned its own error; the try was abandoned and nothing was written.
    #[error("the transaction body failed: {0}")]
    Body(E),
    /// The transaction conflicted more than [`StmConfig::retry_limit`](super::StmConfig)
    /// times in a row; nothing was written.
    #[error("the transaction was retried {retries} times without committing (retry limit)")]
    RetryLimit {
        /// Retries made.
        retries: u32,
    },
    /// A ref's validator rejected the value the transaction would commit; nothing was written.
    #[error("the validator of ref {name} rejected its new value; nothing was written")]
    Invalid {
        /// The ref's name.
        name: String,
    },
    /// A ref's value could not be encoded; nothing was written.
    #[error("cannot encode the value of ref {name}: {source}")]
    Encode {
        /// The ref's name.
        name: String,
        /// The codec's error.
        source: CodecError,
    },
    /// A ref's node holds bytes that are not a value of the ref's type and codec.
    #[error("ref {name} holds bytes that do not decode: {source}")]
    Decode {
        /// The ref's name.
        name: String,
        /// The codec's error.
        source: CodecError,
    },
    /// The encoded value is larger than the protocol can store in one node.
    #[error("a value of {len} bytes for ref {name} exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The ref's name.
        name: String,
        /// The encoded size.
        len: usize,
        /// The largest value accepted.
        limit: usize,
    },
    /// No ref of that name exists under the root (it was never made, or was deleted).
    #[error("no ref {name} under the STM root")]
    NoRef {
        /// The ref's name.
        name: String,
    },
    /// The name cannot be a ref's: it must be one non-empty path segment without `/`.
    #[error("invalid ref name {name:?}: {reason}")]
    BadName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The same ref was used with two value types in one transaction.
    #[error("ref {name} was used with two different value types in one transaction")]
    TypeMismatch {
        /// The ref's name.
        name: String,
    },
    /// A ref of another [`Stm`](super::Stm) was used in this one's transaction.
    #[error("ref {name} belongs to another Stm")]
    ForeignRef {
        /// The ref's name.
        name: String,
    },
    /// `ref_set` or `alter` after `commute` of the same ref in one transaction (as in
    /// Clojure, where it is an `IllegalStateException`); nothing was written.
    #[error("ref {name}: ref_set/alter after commute in the same transaction")]
    SetAfterCommute {
        /// The ref's name.
        name: String,
    },
    /// The root is bound to the other protocol (a root holds one protocol's nodes).
    #[error("the STM root {root} is bound to protocol {found}, not {wanted:?}")]
    ProtocolMismatch {
        /// The root.
        root: String,
        /// What the root's node says (a protocol name, or foreign bytes shown lossily).
        found: String,
        /// The protocol asked for.
        wanted: Protocol,
    },
    /// The operation is not offered by the root's protocol (for example history under a
    /// protocol that keeps none).
    #[error("not supported by protocol {protocol:?}: {what}")]
    Unsupported {
        /// The protocol.
        protocol: Protocol,
        /// What was asked.
        what: &'static str,
    },
    /// A commit's reply was lost and whether it took effect could not be decided: the
    /// transaction may or may not have been committed.
    #[error("cannot tell whether the commit took effect: {detail}")]
    Indeterminate {
        /// What was seen.
        detail: String,
    },
    /// The session was lost; the transaction is aborted (if a commit was in flight it may or
    /// may not have taken effect). The [`Stm`](super::Stm) handle's next transaction runs on
    /// the client's next session.
    #[error("session lost: {0}")]
    SessionLost(Error),
    /// The ref store ([`RefStore`](super::store::RefStore)) failed. During a put the
    /// transaction is rejected and nothing is committed; during a get the read failed and
    /// nothing was written.
    #[error("the ref store failed during {op}: {source}")]
    Store {
        /// What the STM was doing.
        op: super::store::StoreOp,
        /// The store's error.
        source: super::store::StoreError,
    },
    /// The coordination service refused a request the STM did not expect to be refused.
    #[error(transparent)]
    Zk(Error),
}

impl<E> StmError<E> {
    /// Whether the failed transaction certainly wrote nothing. `false` after an
    /// indeterminate commit or a session lost with a commit in flight.
    ///
    /// ```
    /// use avout::stm::StmError;
    /// let e: StmError = StmError::SessionLost(avout::Error::SessionExpired);
    /// assert!(!e.is_definite());
    /// let lost: StmError = StmError::Zk(avout::Error::ConnectionLoss);
    /// assert!(!lost.is_definite());
    /// let refused: StmError = StmError::Zk(avout::Error::BadArguments("x".into()));
    /// assert!(refused.is_definite());
    /// ```
    pub fn is_definite(&self) -> bool {
        match self {
            StmError::Indeterminate { .. } | StmError::SessionLost(_) => false,
            // Only a refusal is known to have changed nothing: an indeterminate error that
            // reached the caller as it is (no path is meant to let one through, but the type
            // allows it) may have been applied.
            StmError::Zk(e) => e.is_rejected(),
            _ => true,
        }
    }

    /// The same error with the body's error mapped by `f`.
    ///
    /// ```
    /// use avout::stm::StmError;
    /// let e: StmError<u8> = StmError::Body(7);
    /// assert!(matches!(e.map_body(|n| n as u32 * 2), StmError::Body(14)));
    /// ```
    pub fn map_body<F>(self, f: impl FnOnce(E) -> F) -> StmError<F> {
        match self {
            StmError::Body(e) => StmError::Body(f(e)),
            StmError::RetryLimit { retries } => StmError::RetryLimit { retries },
            StmError::Invalid { name } => StmError::Invalid { name },
            StmError::Encode { name, source } => StmError::Encode { name, source },
            StmError::Decode { name, source } => StmError::Decode { name, source },
            StmError::TooLarge { name, len, limit } => StmError::TooLarge { name, len, limit },
            StmError::NoRef { name } => StmError::NoRef { name },
            StmError::BadName { name, reason } => StmError::BadName { name, reason },
            StmError::TypeMismatch { name } => StmError::TypeMismatch { name },
            StmError::ForeignRef { name } => StmError::ForeignRef { name },
            StmError::SetAfterCommute { name } => StmError::SetAfterCommute { name },
            StmError::ProtocolMismatch {
                root,
                found,
                wanted,
            } => StmError::ProtocolMismatch {
                root,
                found,
                wanted,
            },
            StmError::Unsupported { protocol, what } => StmError::Unsupported { protocol, what },
            StmError::Indeterminate { detail } => StmError::Indeterminate { detail },
            StmError::SessionLost(e) => StmError::SessionLost(e),
            StmError::Store { op, source } => StmError::Store { op, source },
            StmError::Zk(e) => StmError::Zk(e),
        }
    }

    /// The body's error, if that is what failed.
    ///
    /// ```
    /// use avout::stm::StmError;
    /// let e: StmError<&str> = StmError::Body("overdrawn");
    /// assert_eq!(e.body(), Some(&"overdrawn"));
    /// ```
    pub fn body(&self) -> Option<&E> {
        match self {
            StmError::Body(e) => Some(e),
            _ => None,
        }
    }
}

impl From<StmError<Abort>> for StmError {
    /// A body whose only error is [`Abort`] never has its own error returned: `dosync`
    /// reports the reason of the abort instead.
    ///
    /// ```
    /// use avout::stm::{Abort, StmError};
    /// let e: StmError<Abort> = StmError::RetryLimit { retries: 3 };
    /// let plain: StmError = e.into();
    /// assert!(matches!(plain, StmError::RetryLimit { retries: 3 }));
    /// ```
    fn from(e: StmError<Abort>) -> Self {
        e.map_body(|_| unreachable!("dosync reports an abort's reason, never the Abort"))
    }
}

impl StmError<Infallible> {
    /// The same failure, typed for a body whose error type is `E`.
    ///
    /// ```
    /// use avout::stm::StmError;
    /// let e: StmError<std::convert::Infallible> = StmError::NoRef { name: "a".into() };
    /// let wide: StmError<String> = e.widen();
    /// assert!(matches!(wide, StmError::NoRef { .. }));
    /// ```
    pub fn widen<E>(self) -> StmError<E> {
        self.map_body(|never| match never {})
    }

    /// A coordination error as the STM reports it: session loss apart from the rest.
    ///
    /// ```
    /// use avout::stm::StmError;
    /// assert!(matches!(StmError::from_zk(avout::Error::SessionExpired), StmError::SessionLost(_)));
    /// ```
    pub fn from_zk(e: Error) -> Self {
        if e.is_session_lost() {
            StmError::SessionLost(e)
        } else {
            StmError::Zk(e)
        }
    }
}
