//! Integration tests of the `avout` binary: one test binary with modules.

mod cache_lag;
mod check_cli;
mod lock_hold;
mod model_cli;
mod ref_store;
mod report;
mod run_cli;
mod soak_cli;
mod view;
