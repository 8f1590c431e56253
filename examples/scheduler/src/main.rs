//! `scheduler`: avout's command line (run, explore, replay, shrink, soak, view, …) with the
//! scheduler's scenario beside the built-ins: `scheduler run scheduler --seed 7`,
//! `scheduler replay tests/avout-regressions/scheduler-4.json` (with `--features planted`).

use std::process::ExitCode;

use avout_example_scheduler::SCHEDULER;
use avout_scenarios::scenario::Registry;

fn main() -> ExitCode {
    avout_cli::main_with(Registry::builtins().with(SCHEDULER))
}
