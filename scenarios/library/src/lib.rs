//! Scenarios for avout: workloads over its recipes, each bound to the checkers that judge its
//! history ([`avout_check`]), run on the embedded simulated ZooKeeper or on a real ensemble.
//!
//! - [`scenario`]: the [`Scenario`](scenario::Scenario) trait, the registry, runs on the
//!   simulator or real ZooKeeper, exploration, shrinking, soaking, case files.
//! - [`builtin`]: avout's own scenarios, one folder each.
//! - [`guide`]: testing your application, from an empty crate.
//! - [`harness`]: a user's scenario under `cargo test`: seeds, shrinking, regression files.

pub mod builtin;
pub mod guide;
pub mod harness;
pub mod scenario;
