//! An example application tested with avout's harness: a small job scheduler.
//!
//! Workers elect a leader (avout's [election](avout::recipes::election)); the leader takes
//! jobs from a [queue](avout::recipes::queue) and hands each to one worker in an assignments
//! [atom](avout::atom); each worker does the jobs handed to it and records them in a
//! completions atom. [`SCHEDULER`] runs it under the simulator's faults and its
//! checker ([`SchedulerChecker`]) asks that every job be done exactly once and that each term have one
//! leader.
//!
//! `tests/simulated.rs` hands the scenario to [`avout_scenarios::harness::Harness`]:
//! `cargo test -p avout-example-scheduler` passes; with the planted bug
//! (`--features planted`: the completion record read and written back in two steps, a lost
//! update) it fails, printing the seed, the replay command and the shrunk schedule, and keeps
//! the shrunk case in `tests/avout-regressions/`.

mod check;
#[cfg(madsim)]
mod nodes;
mod scenario;
pub mod scheduler;

pub use check::SchedulerChecker;
#[cfg(madsim)]
pub use nodes::SCHEDULER_ON_NODES;
pub use scenario::{SCHEDULER, job};
