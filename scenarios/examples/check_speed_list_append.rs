//! Measures the list-append checker on generated histories.
//!
//! `cargo run --release -p avout-scenarios --example check_speed_list_append -- [TRANSACTIONS] [PROCESSES] [SEED]`
//! checks a valid history of a strict serializable store (default 10,000 transactions, 10
//! processes, 2% `fail`, 2% `info`, some of those applied after the client gave up), then the
//! same history with one read made stale (see `synth::stale_read`), and prints the times and verdicts.

use std::time::Instant;

use avout_scenarios::check::list_append::check_list_append;
use avout_scenarios::check::list_append::synth::{ListAppendSynth, stale_read};

fn main() {
    let arg = |i: usize, default: u64| {
        std::env::args()
            .nth(i)
            .map_or(default, |a| a.parse().expect("a number"))
    };
    let synth = ListAppendSynth {
        transactions: arg(1, 10_000) as usize,
        processes: arg(2, 10),
        seed: arg(3, 0),
        ..ListAppendSynth::default()
    };
    let started = Instant::now();
    let history = synth.history();
    println!(
        "{synth:?}: generated {} events in {:?}",
        history.len(),
        started.elapsed()
    );

    let started = Instant::now();
    let verdict = check_list_append(&history).expect("well-formed");
    println!(
        "valid history: checked in {:?}\n{verdict}",
        started.elapsed()
    );
    assert!(verdict.is_valid());

    // A stale read: the last element dropped from a read whose appender had completed before
    // the reader began.
    let (corrupted, target) = stale_read(&history).expect("a read to corrupt");
    let started = Instant::now();
    let verdict = check_list_append(&corrupted).expect("well-formed");
    println!(
        "stale read at line {}: checked in {:?}\n{verdict}",
        target,
        started.elapsed()
    );
}
