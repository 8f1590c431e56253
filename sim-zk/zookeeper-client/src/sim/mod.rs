//! The simulation: `zookeeper-client`'s public API over avout's simulated ZooKeeper, under
//! `--cfg madsim`.
//!
//! The value types that do no I/O are the real crate's own, re-exported ([`Stat`], [`Error`],
//! [`Acl`] and [`Acls`], [`EventType`], [`SessionState`], [`WatchedEvent`], the multi results
//! and errors, …), so they are the same types. The rest is built here on the simulator's
//! sessions: [`Client`] and [`Connector`], the watchers, the multi readers and writers, the
//! lock, and the types whose fields the real crate keeps private ([`CreateMode`],
//! [`CreateOptions`], [`CreateSequence`], [`SessionInfo`]).

mod admin;
mod client;
mod connect;
mod lock;
mod multi;
mod path;
mod server;
mod session;
mod types;
mod watcher;

#[cfg(feature = "sasl-digest-md5")]
pub use zookeeper_client::DigestMd5SaslOptions;
#[cfg(feature = "sasl-gssapi")]
pub use zookeeper_client::GssapiSaslOptions;
#[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
pub use zookeeper_client::SaslOptions;
pub use zookeeper_client::{
    Acl, Acls, AddWatchMode, AuthId, AuthUser, CheckWriteError, EnsembleUpdate, Error, EventType,
    MultiReadResult, MultiWriteError, MultiWriteResult, Permission, SessionId, SessionState, Stat,
    WatchedEvent,
};
#[cfg(feature = "tls")]
pub use zookeeper_client::{
    TlsCa, TlsCerts, TlsCertsBuilder, TlsCertsOptions, TlsDynamicCerts, TlsIdentity, TlsOptions,
};

pub use self::client::Client;
pub use self::connect::Connector;
pub use self::lock::{LockClient, LockOptions, LockPrefix, OwnedLockClient};
pub use self::multi::{CheckWriter, MultiReader, MultiWriter};
pub use self::server::{SimForwarder, SimServer, SimServerHandle};
pub use self::types::{CreateMode, CreateOptions, CreateSequence, SessionInfo};
pub use self::watcher::{OneshotWatcher, PersistentWatcher, StateWatcher};

/// `zookeeper-client`'s result type.
type Result<T, E = Error> = std::result::Result<T, E>;

/// The error a call of the real client reports for the simulator's: as
/// [`to_zk_error`](avout::zk::convert::to_zk_error), but a call refused because its session
/// moved is a `ConnectionLoss`: the simulator refuses calls still travelling on the
/// connection a session left, and the real client has failed every call of a connection it
/// left with `ConnectionLoss` already.
pub(crate) fn call_error(error: &avout::Error) -> Error {
    match error {
        avout::Error::SessionMoved => Error::ConnectionLoss,
        other => avout::zk::convert::to_zk_error(other),
    }
}
