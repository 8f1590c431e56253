//! `zk-avout`: avout's command line (run, explore, replay, shrink, view, …) with the
//! application's scenarios beside the built-ins, under `--cfg madsim` (its processes are
//! madsim nodes):
//!
//! ```text
//! RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR=target/madsim \
//!   cargo run -p avout-example-zk-counter --example zk-avout -- \
//!   view examples/zk-counter/tests/findings/madsim/zk-counter-trusting-2044.json
//! ```
//!
//! writes the finding's timeline page.

#[cfg(madsim)]
#[path = "../tests/judge/mod.rs"]
#[allow(dead_code)] // what only the tests use
mod judge;

#[cfg(madsim)]
fn main() -> std::process::ExitCode {
    use avout_scenarios::scenario::Registry;
    let scenarios = Registry::builtins()
        .with(judge::ZK_COUNTER)
        .with(judge::ZK_ELECTION)
        .with(judge::ZK_COUNTER_TRUSTING);
    avout_cli::main_with(scenarios)
}

#[cfg(not(madsim))]
fn main() -> std::process::ExitCode {
    eprintln!(
        "zk-avout runs the application's processes as madsim nodes: build it with RUSTFLAGS=\"--cfg madsim\""
    );
    std::process::ExitCode::from(2)
}
