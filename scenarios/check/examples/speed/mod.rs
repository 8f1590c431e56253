//! What the checker-speed examples share: their numeric arguments, the generated history
//! they start from, and the clock around each check.

use std::fmt::Debug;
use std::time::{Duration, Instant};

use avout_check::history::History;

/// The `i`th command-line argument as a number, or `default` when it is absent.
///
/// # Panics
///
/// If the argument is not a number.
pub(crate) fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .map_or(default, |a| a.parse().expect("a number"))
}

/// The history `synth` generates, after printing its size and how long it took.
pub(crate) fn generate(synth: &impl Debug, history: impl FnOnce() -> History) -> History {
    let (history, elapsed) = timed(history);
    println!(
        "{synth:?}: generated {} events in {elapsed:?}",
        history.len()
    );
    history
}

/// What `f` returns, and how long it took.
pub(crate) fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let out = f();
    (out, started.elapsed())
}
