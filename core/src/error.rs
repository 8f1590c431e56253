//! One error type for every backend, in ZooKeeper's vocabulary, with its retry meaning.
//!
//! A caller of a coordination service has to answer one question after a failure: *did my
//! request take effect?* [`Error::class`] answers it:
//!
//! - [`ErrorClass::Rejected`]: nothing changed. The request was refused (by the server, or by
//!   the client before anything was sent); retrying the same request fails the same way unless
//!   the world changes first.
//! - [`ErrorClass::Indeterminate`]: the request may or may not have been applied (the connection
//!   dropped while it was in flight). Retry only what is idempotent; anything else (a sequential
//!   create, an unversioned write) must first find out what happened, for example by looking for
//!   its GUID-prefixed node.
//! - [`ErrorClass::SessionLost`]: the session is gone and, with it, every ephemeral node and
//!   watch it held. This is terminal for that session: its locks are lost, its transactions
//!   abort. A [`Client`](crate::Client) opens a new session, and the recipe handles built on it
//!   carry on there (each recipe's docs say how).

use std::time::Duration;

/// The result type of every coordination operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What an error means for a retry; see the module docs.
///
/// ```
/// use avout::{Error, ErrorClass};
/// assert_eq!(Error::ConnectionLoss.class(), ErrorClass::Indeterminate);
/// assert_eq!(Error::SessionExpired.class(), ErrorClass::SessionLost);
/// assert_eq!(Error::NoNode { path: "/a".into() }.class(), ErrorClass::Rejected);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ErrorClass {
    /// Nothing changed; the request was refused.
    Rejected,
    /// The request may or may not have taken effect.
    Indeterminate,
    /// The session, its ephemeral nodes and its watches are gone. A request that failed so
    /// may still have taken effect: a write the server applied just before the session
    /// ended is answered by the session's end, as ZooKeeper's clients fail every call in
    /// flight when they learn of an expiry.
    SessionLost,
}

/// An error from a coordination backend.
///
/// Variants carry the path they concern where there is one, so that messages say what failed.
/// Match on the variant for the reason and call [`Error::class`] for the retry meaning.
///
/// ```
/// use avout::{Error, ErrorClass};
/// let e = Error::BadVersion { path: "/counter".into() };
/// assert!(e.is_rejected());
/// assert_eq!(e.to_string(), "version mismatch at /counter");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The node does not exist (or, for a create, its parent does not).
    #[error("no node at {path}")]
    NoNode {
        /// The path of the request.
        path: String,
    },
    /// A node already exists at the path.
    #[error("node already exists at {path}")]
    NodeExists {
        /// The path of the request.
        path: String,
    },
    /// The node's version is not the expected one.
    #[error("version mismatch at {path}")]
    BadVersion {
        /// The path of the request.
        path: String,
    },
    /// The node has children and cannot be deleted.
    #[error("node {path} has children")]
    NotEmpty {
        /// The path of the request.
        path: String,
    },
    /// Ephemeral nodes cannot have children.
    #[error("cannot create {path}: its parent is ephemeral")]
    NoChildrenForEphemerals {
        /// The path of the request.
        path: String,
    },
    /// The node's ACL does not let this session do that.
    #[error("not authorised for {path}")]
    NoAuth {
        /// The path of the request.
        path: String,
    },
    /// The ACL given is invalid (empty, or naming an unknown scheme or an unauthenticated
    /// identity).
    #[error("invalid ACL for {path}")]
    InvalidAcl {
        /// The path of the request.
        path: String,
    },
    /// The path is not a valid ZooKeeper path; refused before anything was sent.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The offending path.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The data exceeds ZooKeeper's limit; refused before anything was sent.
    #[error("{len} bytes for {path} exceed ZooKeeper's limit of {limit} bytes")]
    DataTooLarge {
        /// The path of the request.
        path: String,
        /// The size of the data.
        len: usize,
        /// The largest size accepted, [`MAX_DATA_LEN`](crate::MAX_DATA_LEN).
        limit: usize,
    },
    /// The arguments are inconsistent (for example an empty `multi`, or deleting the root).
    #[error("bad arguments: {0}")]
    BadArguments(String),
    /// The connection dropped while the request was in flight (or before it could be sent).
    #[error("connection lost")]
    ConnectionLoss,
    /// The request timed out before a reply came.
    #[error("operation timed out")]
    OperationTimeout,
    /// No server of the connect string could be reached to establish a session.
    #[error("cannot reach ZooKeeper at {servers} within {timeout:?}")]
    Unreachable {
        /// The connect string.
        servers: String,
        /// How long the client tried.
        timeout: Duration,
    },
    /// The session has expired; its ephemerals and watches are gone.
    #[error("session expired")]
    SessionExpired,
    /// The session was moved to another server by another connection.
    #[error("session moved")]
    SessionMoved,
    /// The handle was closed.
    #[error("session closed")]
    Closed,
    /// Authentication failed; the session is unusable.
    #[error("authentication failed")]
    AuthFailed,
    /// A TLS handshake with a server failed for a reason no retry mends: this client refused
    /// the server's certificate, or the server refused this client's. Reported by
    /// [`ZkClient::connect`](crate::zk::ZkClient::connect) (feature `tls`) once every TLS
    /// server of the connect string refused, or when connecting timed out after one did.
    #[error("TLS with {server} refused: {reason}")]
    TlsRefused {
        /// The server (`host:port`) whose handshake failed.
        server: String,
        /// Why (boxed, so that every `Result` of this crate stays small).
        reason: Box<TlsRefusal>,
    },
    /// The session's SASL authentication was refused: by the servers (a wrong secret, an
    /// unknown user), or for GSSAPI by Kerberos before any server was asked (no ticket, a
    /// servers' principal the KDC does not know). Reported by
    /// [`ZkClient::connect`](crate::zk::ZkClient::connect) (features `sasl-digest-md5`,
    /// `sasl-gssapi`).
    /// Boxed, so that every `Result` of this crate stays small.
    #[error(
        "SASL {} authentication ({}) to {} refused: {}",
        .0.mechanism,
        .0.principal,
        .0.servers,
        .0.reason
    )]
    SaslRefused(Box<SaslRefusal>),
    /// One operation of a `multi` failed, so none was applied.
    #[error("multi failed at operation {index}: {source}")]
    Multi {
        /// Index of the first failing operation.
        index: usize,
        /// Why it failed.
        source: Box<Error>,
    },
    /// The session has no watch on the node to remove (ZooKeeper's `NoWatcher`).
    #[error("no watch to remove at {path}")]
    NoWatcher {
        /// The path of the request.
        path: String,
    },
    /// The server does not support the request.
    #[error("unimplemented by the server: {0}")]
    Unimplemented(String),
    /// Anything else the backend reported, with its own words.
    #[error("{0}")]
    Other(String),
    /// The backend answered a request with a reply of another operation: a broken backend.
    /// The request may have been applied.
    #[error("a {request} request was answered with {reply}")]
    UnexpectedReply {
        /// The request's name ([`crate::machine::Request::name`]).
        request: &'static str,
        /// The reply, as debug text.
        reply: String,
    },
}

impl Error {
    /// The retry meaning of the error; see the module docs.
    ///
    /// ```
    /// use avout::{Error, ErrorClass};
    /// let e = Error::Multi { index: 1, source: Box::new(Error::ConnectionLoss) };
    /// assert_eq!(e.class(), ErrorClass::Indeterminate);
    /// ```
    pub fn class(&self) -> ErrorClass {
        match self {
            // ZooKeeper refuses a request that reached the old server of a moved session, but
            // the client cannot tell it from one that raced the move: clients (Curator's retry
            // loop among them) treat it as a connection loss, and so does avout.
            Error::ConnectionLoss
            | Error::OperationTimeout
            | Error::SessionMoved
            | Error::Other(_)
            | Error::UnexpectedReply { .. } => ErrorClass::Indeterminate,
            Error::SessionExpired | Error::Closed | Error::AuthFailed => ErrorClass::SessionLost,
            Error::Multi { source, .. } => source.class(),
            Error::NoNode { .. }
            | Error::NodeExists { .. }
            | Error::BadVersion { .. }
            | Error::NotEmpty { .. }
            | Error::NoChildrenForEphemerals { .. }
            | Error::NoAuth { .. }
            | Error::InvalidAcl { .. }
            | Error::InvalidPath { .. }
            | Error::DataTooLarge { .. }
            | Error::BadArguments(_)
            | Error::Unreachable { .. }
            | Error::TlsRefused { .. }
            | Error::SaslRefused(_)
            | Error::NoWatcher { .. }
            | Error::Unimplemented(_) => ErrorClass::Rejected,
        }
    }

    /// Nothing changed.
    ///
    /// ```
    /// assert!(avout::Error::NodeExists { path: "/a".into() }.is_rejected());
    /// ```
    pub fn is_rejected(&self) -> bool {
        self.class() == ErrorClass::Rejected
    }

    /// The request may or may not have taken effect.
    ///
    /// ```
    /// assert!(avout::Error::ConnectionLoss.is_indeterminate());
    /// ```
    pub fn is_indeterminate(&self) -> bool {
        self.class() == ErrorClass::Indeterminate
    }

    /// The session is gone; the handle cannot be used again.
    ///
    /// ```
    /// assert!(avout::Error::Closed.is_session_lost());
    /// ```
    pub fn is_session_lost(&self) -> bool {
        self.class() == ErrorClass::SessionLost
    }

    /// The variant's name, as logs spell it (the simulator's event log hashes it, so names
    /// MUST NOT change).
    ///
    /// ```
    /// assert_eq!(avout::Error::NoNode { path: "/a".into() }.name(), "NoNode");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Error::NoNode { .. } => "NoNode",
            Error::NodeExists { .. } => "NodeExists",
            Error::BadVersion { .. } => "BadVersion",
            Error::NotEmpty { .. } => "NotEmpty",
            Error::NoChildrenForEphemerals { .. } => "NoChildrenForEphemerals",
            Error::NoAuth { .. } => "NoAuth",
            Error::InvalidAcl { .. } => "InvalidAcl",
            Error::InvalidPath { .. } => "InvalidPath",
            Error::DataTooLarge { .. } => "DataTooLarge",
            Error::BadArguments(_) => "BadArguments",
            Error::ConnectionLoss => "ConnectionLoss",
            Error::OperationTimeout => "OperationTimeout",
            Error::Unreachable { .. } => "Unreachable",
            Error::SessionExpired => "SessionExpired",
            Error::SessionMoved => "SessionMoved",
            Error::Closed => "Closed",
            Error::AuthFailed => "AuthFailed",
            Error::TlsRefused { .. } => "TlsRefused",
            Error::SaslRefused(_) => "SaslRefused",
            Error::Multi { .. } => "Multi",
            Error::NoWatcher { .. } => "NoWatcher",
            Error::Unimplemented(_) => "Unimplemented",
            Error::Other(_) => "Other",
            Error::UnexpectedReply { .. } => "UnexpectedReply",
        }
    }

    /// Whether the service refused this client's credentials ([`Error::AuthFailed`],
    /// [`Error::TlsRefused`], [`Error::SaslRefused`]): no retry with the same configuration
    /// mends it, so the [`Client`](crate::Client) gives up opening sessions at once.
    ///
    /// ```
    /// use avout::{Error, TlsRefusal};
    /// let reason = Box::new(TlsRefusal::UnknownIssuer);
    /// let e = Error::TlsRefused { server: "zk1:2281".into(), reason };
    /// assert!(e.is_credentials_refused() && e.is_rejected());
    /// assert!(!Error::ConnectionLoss.is_credentials_refused());
    /// ```
    pub fn is_credentials_refused(&self) -> bool {
        matches!(
            self,
            Error::AuthFailed | Error::TlsRefused { .. } | Error::SaslRefused(_)
        )
    }

    /// The error itself, or for a failed `multi` the error of the operation that failed.
    ///
    /// ```
    /// use avout::Error;
    /// let e = Error::Multi { index: 0, source: Box::new(Error::BadVersion { path: "/a".into() }) };
    /// assert!(matches!(e.root(), Error::BadVersion { .. }));
    /// ```
    pub fn root(&self) -> &Error {
        match self {
            Error::Multi { source, .. } => source.root(),
            other => other,
        }
    }
}

/// Who was refused SASL authentication, and why ([`Error::SaslRefused`]).
///
/// ```
/// use avout::{Error, SaslRefusal};
/// let e = Error::SaslRefused(Box::new(SaslRefusal {
///     servers: "zk1:2181".into(),
///     mechanism: "DIGEST-MD5".into(),
///     principal: "app".into(),
///     reason: "the server answered AUTHFAILED".into(),
/// }));
/// assert!(e.is_credentials_refused());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SaslRefusal {
    /// The connect string.
    pub servers: String,
    /// The mechanism, as SASL names it (`DIGEST-MD5`, `GSSAPI`).
    pub mechanism: String,
    /// Who authenticates to whom: the user (DIGEST-MD5), or the servers' Kerberos
    /// principal asked for (GSSAPI: `zookeeper/HOST`; the client's own is its ticket's).
    pub principal: String,
    /// Why, in the server's or Kerberos' words.
    pub reason: String,
}

/// Why a TLS handshake was refused ([`Error::TlsRefused`]): by this client, which checked
/// the server's certificate against its CA and the host it dialled, or by the server, which
/// answered this client's certificate with a TLS alert.
///
/// ```
/// use avout::TlsRefusal;
/// let why = TlsRefusal::WrongHost { host: "127.0.0.1".into(), presented: vec!["zk.example".into()] };
/// assert_eq!(
///     why.to_string(),
///     "the server's certificate is not valid for 127.0.0.1 (it names [\"zk.example\"])"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum TlsRefusal {
    /// The server's certificate is not signed by a CA this client trusts.
    #[error("the server's certificate is not signed by a CA this client trusts")]
    UnknownIssuer,
    /// The server's certificate has expired.
    #[error("the server's certificate has expired")]
    CertificateExpired,
    /// The server's certificate is not valid yet.
    #[error("the server's certificate is not valid yet")]
    CertificateNotYetValid,
    /// The server's certificate does not name the host this client dialled (hostname
    /// verification).
    #[error("the server's certificate is not valid for {host} (it names {presented:?})")]
    WrongHost {
        /// The host of the connect string.
        host: String,
        /// The names the certificate gives, where the verifier reported them.
        presented: Vec<String>,
    },
    /// The server's certificate was revoked by a CRL in this client's CA bundle.
    #[error("the server's certificate was revoked")]
    CertificateRevoked,
    /// The server's certificate is unusable for another reason (bad encoding, signature or
    /// purpose), in the TLS library's words.
    #[error("the server's certificate is unusable: {0}")]
    BadCertificate(String),
    /// The server refused this client's certificate, which has expired (servers seldom say
    /// why they refuse a certificate: this client looks at its own when one is refused).
    #[error("the server refused this client's certificate: it has expired (TLS alert {alert})")]
    ClientCertificateExpired {
        /// The alert the server sent.
        alert: String,
    },
    /// The server refused this client's certificate, which is not valid yet.
    #[error(
        "the server refused this client's certificate: it is not valid yet (TLS alert {alert})"
    )]
    ClientCertificateNotYetValid {
        /// The alert the server sent.
        alert: String,
    },
    /// The server refused this client's certificate (not signed by a CA the server trusts,
    /// revoked, or unusable).
    #[error("the server refused this client's certificate (TLS alert {alert})")]
    ClientCertificateRefused {
        /// The alert the server sent.
        alert: String,
    },
    /// The server wants a client certificate and this client has none configured.
    #[error("the server wants a client certificate and none is configured (TLS alert {alert})")]
    ClientCertificateMissing {
        /// The alert the server sent.
        alert: String,
    },
    /// The handshake failed otherwise (no common protocol version or cipher suite, …), in
    /// the TLS library's words.
    #[error("the TLS handshake failed: {0}")]
    Handshake(String),
}
