//! An application on `zookeeper-client`, not on avout: a shared counter under
//! `zookeeper-client`'s Curator-compatible lock (`Client::lock`), and a leader election on the
//! same recipe (Curator's `LeaderLatch` names), each leader adding one to an epoch.
//!
//! Its `Cargo.toml` names `zookeeper-client` as the drop-in (`package =
//! "avout-zookeeper-client"`): in a normal build that is `zookeeper-client` itself (the
//! binary runs against a real ensemble, `tests/real.rs` on a real server); under `--cfg
//! madsim` it is the simulation, and `tests/simulated.rs` runs the processes as madsim nodes
//! under every fault kind, judged by avout's mutex and election checkers through avout's
//! harness (seeds, replay, shrinking, kept cases). The guide in `avout_scenarios::guide_zk`
//! walks through it from an empty crate.

pub mod service;
pub mod worker;

pub use service::{Hold, Service};
pub use worker::{Config, Events, GaveUp, Role, Step, run};
