//! Reading ahead (the mvcc models' partial-order reduction, `World::reading_ahead`) gives
//! the verdicts the whole graph gives, from fewer states: checked both ways wherever both
//! are affordable in a test.

use avout_models::check::{Coverage, Verdict};
use avout_models::{Config, Report, Search, check_named};

fn both(name: &str, clients: u8, faults: u8, depth: usize) -> (Report, Report) {
    let check = |read_ahead| {
        let config = Config {
            clients,
            faults,
            read_ahead,
            search: Search {
                max_depth: Some(depth),
                ..Search::default()
            },
            ..Config::default()
        };
        check_named(name, &config).expect("a model")
    };
    (check(true), check(false))
}

/// Each property's verdict, without the trace (traces may take other paths).
fn verdicts(report: &Report) -> Vec<(String, &'static str)> {
    report
        .properties
        .iter()
        .map(|p| {
            let v = match p.verdict {
                Verdict::Holds => "holds",
                Verdict::Violated(_) => "violated",
                Verdict::Found(_) => "found",
                Verdict::NotFound => "not found",
            };
            (p.name.to_owned(), v)
        })
        .collect()
}

/// Whole spaces: the same verdict for every property, from fewer states.
#[test]
fn reading_ahead_keeps_every_verdict_of_a_whole_space() {
    for (name, clients, faults, states) in [
        ("mvcc-bank", 2, 0, (13_456, 24_990)),
        ("mvcc", 1, 1, (1_953, 2_611)),
        ("mvcc-bank", 1, 1, (6_031, 7_726)),
    ] {
        let (reduced, full) = both(name, clients, faults, 400);
        assert_eq!(full.coverage, Coverage::Complete, "{name}: {full}");
        assert_eq!(reduced.coverage, Coverage::Complete, "{name}: {reduced}");
        assert_eq!(
            verdicts(&reduced),
            verdicts(&full),
            "{name} {clients}/{faults}"
        );
        assert_eq!(
            (reduced.unique_states, full.unique_states),
            states,
            "{name} {clients}/{faults}"
        );
    }
}

/// Within a bound, reading ahead covers every schedule the bound covers and more (a read
/// ahead is not a step): no verdict gets worse, and every example found in full is found.
#[test]
fn reading_ahead_finds_within_a_bound_what_the_whole_graph_finds() {
    let (reduced, full) = both("mvcc", 2, 0, 14);
    for (r, f) in verdicts(&reduced).into_iter().zip(verdicts(&full)) {
        assert_eq!(r.0, f.0);
        assert_ne!(r.1, "violated", "{}: {reduced}", r.0);
        if f.1 == "found" {
            assert_eq!(r.1, "found", "{}: {reduced}", r.0);
        }
    }
    assert_eq!(
        (reduced.unique_states, full.unique_states),
        (21_989, 18_159),
        "{reduced}\n{full}"
    );
}
