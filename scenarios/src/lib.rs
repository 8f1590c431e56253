//! Workloads, fault plans and history checkers for avout, and the library behind the `avout`
//! command-line tool.
//!
//! - [`history`]: histories of client operations in Jepsen's JSON-lines format.
//! - [`check`]: the linearizability checker for register and cas-register histories.
//! - [`scenario`]: the [`Scenario`](scenario::Scenario) trait, the registry, runs on the
//!   simulator or real ZooKeeper, exploration, shrinking, case files.
//! - [`guide`]: testing your application, from an empty crate.
//! - [`harness`]: a user's scenario under `cargo test`: seeds, shrinking, regression files.
//! - [`view`]: a run's timeline as a self-contained HTML page, the checker's verdict drawn on it.

pub mod check;
pub mod cli;
pub mod guide;
pub mod harness;
pub mod history;
pub mod report;
pub mod scenario;
pub mod view;
