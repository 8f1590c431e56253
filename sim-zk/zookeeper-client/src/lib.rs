//! # avout-zookeeper-client: `zookeeper-client`, simulated under madsim
//!
//! An application written against the [`zookeeper-client`](https://docs.rs/zookeeper-client)
//! crate (0.11) runs unchanged on avout's deterministic simulated ZooKeeper, with its faults,
//! by one line in its `Cargo.toml`, as madsim's drop-in crates do for etcd, Kafka and S3:
//!
//! ```toml
//! [dependencies]
//! zookeeper-client = { package = "avout-zookeeper-client", version = "0.1", features = ["tokio"] }
//! ```
//!
//! - In a normal build this crate *is* `zookeeper-client`: it re-exports it, item for item.
//! - Under `RUSTFLAGS="--cfg madsim"` the same items are a simulation: sessions of avout's
//!   simulated ZooKeeper (`avout-sim-zk`), in the madsim simulation the application's own
//!   tasks and timers run in (`tokio` as `madsim-tokio`). A test starts the simulated
//!   ensemble on an address with `SimServer` (madsim builds only), and the
//!   application's unchanged connect string reaches it:
//!
//! ```ignore
//! #[madsim::test]
//! async fn my_service_survives_faults() {
//!     let _zk = avout_zookeeper_client::SimServer::builder()
//!         .sim(|sim| sim.servers(3).rates(avout_sim_zk::FaultRates::chaos()))
//!         .start(["10.0.0.1:2181", "10.0.0.2:2181", "10.0.0.3:2181"]);
//!     my_service::run("10.0.0.1:2181,10.0.0.2:2181,10.0.0.3:2181/app").await;
//! }
//! ```
//!
//! Every random choice comes from one seed (madsim's: `MADSIM_TEST_SEED` replays a run, and
//! a failing `#[madsim::test]` prints it). The guide, `avout_scenarios::guide_zk` (beside
//! avout's other guide, in the `avout-scenarios` crate), takes an application from an empty
//! crate to runs judged by avout's checkers on many seeds, shrunk and kept.
//!
//! ## What the simulation serves
//!
//! Every public item of `zookeeper-client` 0.11 with the same signature (a test builds one
//! body against both): [`Client`] with its connector, chroot, sessions and their states;
//! creates in every mode with TTLs and ACLs, reads, writes, deletes, children, stats,
//! ephemerals, descendant counts, ACLs and `digest` authentication, `whoAmI`, `sync`, the
//! configuration node; one-shot, persistent and state watchers; multi readers, writers and
//! check writers; the Curator-compatible lock (the real crate's algorithm, step for step).
//! Pure value types that do no I/O ([`Stat`], [`Error`], [`Acls`], [`EventType`],
//! [`SessionState`], [`WatchedEvent`], the multi results and errors, …) are the real
//! crate's own, re-exported, so they are the same types.
//!
//! Every fault kind of the simulator reaches the application's sessions: lost requests and
//! replies, disconnections, expiries, pauses, stale reads, outages, and the ensemble's
//! partitions, leader elections, moved sessions, frozen client processes and slow disks.
//!
//! ## What it does not simulate, and what it does instead
//!
//! - **A TLS handshake** (`tls` feature): `with_tls` and `secure_connect` are accepted and
//!   `tcp+tls://` hosts are reached, over the simulated connection; no certificate is checked.
//! - **SASL mechanisms** (`sasl-*` features): `with_sasl` is accepted, and the session is
//!   established without a SASL exchange or identity. `digest` authentication
//!   (`auth`, `with_auth`, ACLs) is simulated.
//! - **Read-only servers**: `with_readonly` is accepted; sessions are always read-write.
//! - **Dynamic reconfiguration**: `update_ensemble` answers `ReconfigDisabled`, as a server
//!   with `reconfigEnabled=false` does.
//! - **ZooKeeper 3.9's event zxids**: node events carry [`WatchedEvent::NO_ZXID`], as from a
//!   server before 3.9; and a one-shot watch armed on a path where the session has a
//!   persistent one replaces it at the server, as 3.8 does (ZOOKEEPER-4466).
//! - **Removing one kind of watch**: when a session's last watcher of a path goes before its
//!   event, its watches there are removed at the server, as the real client does; when
//!   other watchers stay, the real client also removes the gone watcher's kind if none of
//!   them has it, and the simulated server, which removes all kinds or none, leaves it
//!   armed (it fires to no watcher).
//! - Timing: a connection's loss is known at once (no ping timeout), and an oversized request
//!   fails with `ConnectionLoss` without breaking the connection.
//!
//! The judge of all this is `zookeeper-client`'s own test suite, run on the simulation (below).
//!
#![doc = include_str!("../PEER_SUITE.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(not(madsim))]
pub use zookeeper_client::*;

#[cfg(madsim)]
mod sim;
#[cfg(madsim)]
pub use sim::*;
