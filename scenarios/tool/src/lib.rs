//! The library behind the `avout` command-line tool: the commands ([`main_with`]), the
//! research [`report`]s and benchmarks, and the timeline [`view`].
//!
//! It stands on the scenarios library ([`avout_scenarios`]: scenarios, runs, explore, shrink,
//! soak) and the checkers ([`avout_check`]); nothing below it depends on it.

mod cli;
pub mod report;
pub mod view;

pub use cli::main_with;
