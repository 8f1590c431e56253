//! Histories and the checkers that judge them, standing alone: no async runtime, no ZooKeeper
//! client, no simulator.
//!
//! - [`history`]: histories of client operations, in Jepsen's JSON-lines format or Jepsen's own
//!   EDN (as Jepsen, Knossos and Elle write them), with Maelstrom's error codes.
//! - [`linear`]: linearizability of register and cas-register histories (Knossos' `linear`).
//! - [`list_append`]: Elle's anomalies of list-append transactions.
//! - [`bank`], [`mutex`], [`two_phase_commit`]: conserved totals, mutual exclusion under
//!   fencing tokens, atomic commitment.

pub mod bank;
pub mod history;
pub mod linear;
pub mod list_append;
pub mod mutex;
pub mod two_phase_commit;
