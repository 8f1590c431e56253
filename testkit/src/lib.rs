//! # avout-testkit
//!
//! Test gear for avout, kept out of the production crate: real ZooKeeper servers on loopback
//! ([`server`]), a real PostgreSQL on loopback for the STM's ref store ([`postgres`]), and the
//! backend conformance suite ([`conformance`]) that every
//! [`Coordination`](avout::Coordination) backend must pass unchanged.
//!
//! ```no_run
//! use avout_testkit::server::ZkServer;
//!
//! let server = ZkServer::start().expect("Debian's ZooKeeper 3.8 is installed");
//! println!("serving on {}", server.connect_string());
//! // Dropping the handle kills the process and removes its directory.
//! ```

pub mod conformance;
pub mod kdc;
pub mod postgres;
pub mod server;
#[cfg(feature = "tls")]
pub mod tls;
