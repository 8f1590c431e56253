//! # avout
//!
//! Distributed, extensible versions of Clojure's atoms, refs (an MVCC STM) and locks, plus
//! ZooKeeper's recipes, written once against the [`Coordination`] trait. The trait runs on a
//! real ZooKeeper ensemble ([`zk::ZkClient`], feature `zookeeper`) and on the deterministic
//! simulated ZooKeeper of the `avout-sim-zk` crate, where faults are injected and failing
//! schedules replay bit for bit.
//!
//! ## Errors and retries
//!
//! Every operation fails with one [`Error`], whose [`Error::class`] says whether the request
//! was *rejected* (nothing changed), is *indeterminate* (it may have been applied: retry only
//! what is idempotent) or whether the *session was lost* (ephemerals and watches are gone).
//!
//! ```
//! use avout::{Coordination, CoordinationExt, CreateMode, Error, ErrorClass};
//!
//! async fn register<C: Coordination>(zk: &C, name: &str) -> Result<String, Error> {
//!     zk.ensure_path("/members").await?;
//!     match zk.create_ephemeral(&format!("/members/{name}"), b"up").await {
//!         Err(e) if e.class() == ErrorClass::Indeterminate => {
//!             // The create may have happened: an ephemeral we own is ours to keep.
//!             match zk.exists(&format!("/members/{name}")).await? {
//!                 Some(stat) if stat.ephemeral_owner == zk.session().id.0 => Ok(format!("/members/{name}")),
//!                 _ => Err(e),
//!             }
//!         }
//!         other => other,
//!     }
//! }
//! ```

pub mod agent;
pub mod atom;
pub mod buggify;
pub mod client;
mod coord;
pub mod coverage;
mod error;
mod ext;
mod fanout;
mod intercept;
pub mod lock;
pub mod locktable;
pub mod machine;
pub mod metrics;
mod node;
mod op;
pub mod path;
mod persistent_watch;
pub mod planted;
mod quorum_sync;
pub mod recipes;
mod request;
mod session;
pub mod stm;
mod sync;
pub mod task;
mod watch;
#[cfg(feature = "zookeeper")]
pub mod zk;

pub use client::Client;
pub use coord::{Coordination, OpFuture};
pub use error::{Error, ErrorClass, Result, SaslRefusal, TlsRefusal};
pub use ext::CoordinationExt;
pub use intercept::{Intercept, Intercepted};
pub use node::{Acl, CreateMode, CreateOptions, MAX_TTL, Perms, Stat};
pub use op::{Identity, Op, OpResult, ReadOp, ReadResult};
pub use path::MAX_DATA_LEN;
pub use persistent_watch::{AddWatchMode, PersistentSender, PersistentWatch, Remover};
pub use request::{Reply, Request};
pub use session::{SessionId, SessionInfo, SessionState, SessionStatePublisher, SessionStates};
pub use watch::{EventKind, Watch, WatchSender, WatchedEvent};
