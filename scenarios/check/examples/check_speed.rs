//! Measures the linearizability checker on generated histories.
//!
//! `cargo run --release -p avout-check --features synth --example check_speed -- [OPERATIONS] [PROCESSES] [VALUES] [INFO_PER_MILLE] [CAS]`
//! checks a valid cas-register history of that many operations (default 10,000, 10 processes,
//! 10 values, 2% `info`), then the same history with one read in the middle returning a value
//! first written later, and prints the times and verdicts.

mod speed;

use avout_check::Checker;
use avout_check::history::{EventType, F, History};
use avout_check::linear::synth::Synth;
use avout_check::linear::{Linearizable, Model};
use speed::{arg, generate, timed};

fn main() {
    let synth = Synth {
        operations: arg(1, 10_000) as usize,
        processes: arg(2, 10),
        values: arg(3, 10),
        info_rate: arg(4, 20) as f64 / 1000.0,
        cas: arg(5, 1) == 1,
        ..Synth::default()
    };
    let model = if synth.cas {
        Model::CasRegister
    } else {
        Model::Register
    };
    let history = generate(&synth, || synth.history());

    let (verdict, elapsed) = timed(|| {
        Linearizable::new(model)
            .check(&history)
            .expect("well-formed")
    });
    println!("valid history: {elapsed:?}\n{}", verdict.report());
    assert!(verdict.is_valid());

    let mut events = history.events().to_vec();
    let reads: Vec<usize> = (0..events.len())
        .filter(|&i| events[i].kind == EventType::Ok && events[i].f == F::Read)
        .collect();
    let target = reads[reads.len() / 2];
    // A value written later, by the next write invoked after the read: only the search, which
    // must exhaust every order of the prefix, refutes it.
    let later = (target..events.len())
        .find(|&i| events[i].kind == EventType::Invoke && events[i].f == F::Write)
        .expect("a later write");
    let done = (later..events.len())
        .find(|&i| {
            events[i].kind != EventType::Invoke && events[i].process == events[later].process
        })
        .expect("a completion");
    for i in [target, later, done] {
        events[i].value = "fresh".into();
    }
    let corrupted: History = events.into_iter().collect();
    let (verdict, elapsed) = timed(|| {
        Linearizable::new(model)
            .check(&corrupted)
            .expect("well-formed")
    });
    println!(
        "read from the future at line {}: {elapsed:?}\n{}",
        target + 1,
        verdict.report()
    );
    assert!(!verdict.anomalies.is_empty());
}
