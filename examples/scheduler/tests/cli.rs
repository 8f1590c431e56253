//! The example's own binary: avout's tools over the built-ins and the scheduler.

use std::process::Command;

fn scheduler(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_scheduler"))
        .args(args)
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap()
}

#[test]
fn its_binary_runs_and_explores_the_scheduler_beside_the_built_ins() {
    let run = scheduler(&["run", "scheduler", "--seed", "7"]);
    let out = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(out.contains("scheduler") && out.contains("valid"), "{out}");
    let explore = scheduler(&["explore", "scheduler", "--seeds", "0..4"]);
    assert_eq!(
        explore.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&explore.stderr)
    );
    let builtin = scheduler(&["run", "counter", "--seed", "1", "--ops", "3"]);
    assert_eq!(builtin.status.code(), Some(0));
    let unknown = scheduler(&["run", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("scheduler"));
}
