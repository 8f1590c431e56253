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
mod zk_secure;

use std::path::Path;
use std::process::{Command, Output};

/// `avout ARGS`, run to its end.
pub(crate) fn avout(args: &[&str]) -> Output {
    avout_in(args, Path::new("."))
}

/// `avout ARGS`, run to its end in `dir`.
pub(crate) fn avout_in(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_avout"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the avout binary runs")
}
