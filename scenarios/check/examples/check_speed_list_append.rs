//! Measures the list-append checker on generated histories.
//!
//! `cargo run --release -p avout-check --features synth --example check_speed_list_append -- [TRANSACTIONS] [PROCESSES] [SEED]`
//! checks a valid history of a strict serializable store (default 10,000 transactions, 10
//! processes, 2% `fail`, 2% `info`, some of those applied after the client gave up), then the
//! same history with one read made stale (see `synth::stale_read`), and prints the times and verdicts.

mod speed;

use avout_check::Checker;
use avout_check::list_append::ListAppend;
use avout_check::list_append::synth::{ListAppendSynth, stale_read};
use speed::{arg, generate, timed};

fn main() {
    let synth = ListAppendSynth {
        transactions: arg(1, 10_000) as usize,
        processes: arg(2, 10),
        seed: arg(3, 0),
        ..ListAppendSynth::default()
    };
    let history = generate(&synth, || synth.history());

    let (verdict, elapsed) = timed(|| ListAppend::new().check(&history).expect("well-formed"));
    println!(
        "valid history: checked in {elapsed:?}\n{}",
        verdict.report()
    );
    assert!(verdict.is_valid());

    // A stale read: the last element dropped from a read whose appender had completed before
    // the reader began.
    let (corrupted, target) = stale_read(&history).expect("a read to corrupt");
    let (verdict, elapsed) = timed(|| ListAppend::new().check(&corrupted).expect("well-formed"));
    println!(
        "stale read at line {target}: checked in {elapsed:?}\n{}",
        verdict.report()
    );
}
