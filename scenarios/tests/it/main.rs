//! Integration tests of the `avout` binary: one test binary with modules.

mod cache_lag;
mod check_cli;
mod harness;
mod lock_hold;
mod maelstrom_codes;
mod model_cli;
mod ref_store;
mod report;
mod scenarios;
#[cfg(feature = "planted-bugs")]
mod scenarios_planted;
mod shrink;
mod soak;
mod view;
