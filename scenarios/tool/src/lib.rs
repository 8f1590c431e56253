//! The library behind the `avout` command-line tool: the commands ([`main_with`], for a binary
//! of your own over your own scenarios), the research [`report`]s and benchmarks, and the
//! timeline [`view`] (any [`avout_check::Verdict`] drawn on a run's timeline).
//!
//! Where it stands: on top. It uses the scenarios library ([`avout_scenarios`]: scenarios,
//! runs, explore, shrink, soak), the checkers ([`avout_check`]: `avout check --model NAME`
//! reaches every checker of `Checkers::builtins` by name), the models (`avout model`), the
//! test gear (`avout zk`) and the simulator; nothing depends on it but the binaries. A new
//! command is a module of `cli/cmd/` and a variant of its `Command`.

mod cli;
pub mod report;
pub mod view;

pub use cli::main_with;
