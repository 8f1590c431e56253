//! Workloads, fault plans and history checkers for avout, and the library behind the `avout`
//! command-line tool.
//!
//! - [`history`]: histories of client operations in Jepsen's JSON-lines format.
//! - [`check`]: the linearizability checker for register and cas-register histories.

pub mod check;
pub mod history;
pub mod report;
pub mod scenario;
