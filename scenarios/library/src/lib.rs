//! Scenarios for avout: workloads over its recipes, each bound to the checkers that judge its
//! history ([`avout_check`]), run on the embedded simulated ZooKeeper or on a real ensemble.
//!
//! - [`scenario`]: the machinery — the [`Scenario`](scenario::Scenario) trait and the
//!   [`Registry`](scenario::Registry), the one list of scenario names; a
//!   [`Run`](scenario::Run) on the simulator or real ZooKeeper; exploration, shrinking,
//!   soaking, case files.
//! - [`builtin`]: avout's own scenarios, one folder each (its workload and the checkers it
//!   binds by name).
//! - [`harness`]: a user's scenario under `cargo test`: seeds, shrinking, regression files.
//! - [`guide`]: testing your application, from an empty crate.
//! - [`guide_zk`]: an application on `zookeeper-client` (not on avout) under the simulator,
//!   through the drop-in `avout-zookeeper-client`, from an empty crate.
//!
//! Where it stands: it depends on `avout`, `avout-sim-zk` (the simulator, and the clients'
//! random streams, [`avout_sim_zk::rng::ClientStream`]) and `avout-check`; the `avout` tool
//! (`avout-cli`) depends on it, and nothing here on the tool. A new scenario is a folder of
//! [`builtin`] and one line in `Registry::builtins`; a new checker goes in `avout-check` and is
//! bound here by its name; a new fault kind is the simulator's (`avout_sim_zk::FaultKind`).

pub mod builtin;
pub mod guide;
pub mod guide_zk;
pub mod harness;
pub mod scenario;
