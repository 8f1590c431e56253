//! A soak spread over shards and merged: the same rows, failing seeds, coverage and case
//! files as the soak run whole, whatever order the slices come in.

use avout_scenarios::scenario::Registry;
use avout_scenarios::scenario::soak::{
    FaultConfig, MergeError, Shard, Soak, SoakReport, SoakSlice, merge, soak,
};

use crate::soak::{MARK, hook};

/// Two scenarios under the default mix on seeds where the test hook makes some runs err,
/// the first five of each row run twice.
fn grid() -> Soak {
    let mut s = Soak::new(
        vec!["counter".into(), "mutex".into()],
        vec![FaultConfig::all(), FaultConfig::none()],
        MARK + 100,
        23,
    );
    s.ops = Some(4);
    s.repeat = 5;
    s.threads = 2;
    s
}

fn run(s: &Soak) -> (SoakSlice, SoakReport) {
    let report = soak(&Registry::builtins(), s, &|_| {}).unwrap();
    (SoakSlice::of(s, &report), report)
}

/// A slice as `avout soak --json` writes it and `avout soak-merge` reads it back.
fn through_json(slice: &SoakSlice) -> SoakSlice {
    serde_json::from_str(&serde_json::to_string(slice).unwrap()).unwrap()
}

#[test]
fn four_shards_merged_are_the_soak_run_whole() {
    hook();
    let whole = grid();
    let (whole_slice, whole_report) = run(&whole);
    assert!(
        whole_report.rows.iter().any(|r| !r.failed.is_empty()),
        "the grid has no failing seed to merge: pick other seeds"
    );
    // The slices in another order than their indices, each through its JSON.
    let slices: Vec<SoakSlice> = [2, 0, 3, 1]
        .into_iter()
        .map(|i| {
            let s = Soak {
                shard: Shard::new(i, 4).unwrap(),
                ..grid()
            };
            through_json(&run(&s).0)
        })
        .collect();
    // Shard 3 of 4 runs offsets 3, 7, ..., 19 of 23.
    assert_eq!(slices[2].rows[0].seeds, 5);
    assert_eq!(slices.iter().map(|s| s.runs).sum::<u64>(), whole_slice.runs);
    let mut merged = merge(&slices).unwrap();
    merged.record_first(&Registry::builtins()).unwrap();
    let json = |s: &SoakSlice| {
        let mut v = serde_json::to_value(s).unwrap();
        v["wall_time_s"] = 0.into();
        v
    };
    assert_eq!(json(&merged), json(&whole_slice));
    for (merged, whole) in merged.rows.iter().zip(&whole_report.rows) {
        assert_eq!(merged.first, whole.first, "{}", merged.label());
    }
    assert_eq!(merged.report().coverage(), whole_report.coverage());
}

#[test]
fn a_merge_refuses_a_missing_a_repeated_or_a_foreign_slice() {
    hook();
    let slice = |i: u64, n: u64, base: u64| {
        let mut s = Soak::new(vec!["counter".into()], vec![FaultConfig::none()], base, 3);
        s.ops = Some(1);
        s.shard = Shard::new(i, n).unwrap();
        run(&s).0
    };
    let (a, b) = (slice(0, 2, 7), slice(1, 2, 7));
    assert!(merge(&[a.clone(), b.clone()]).is_ok());
    assert!(matches!(merge(&[]), Err(MergeError::Empty)));
    assert!(matches!(
        merge(std::slice::from_ref(&b)),
        Err(MergeError::Missing { index: 0, count: 2 })
    ));
    assert!(matches!(
        merge(&[a.clone(), a.clone(), b.clone()]),
        Err(MergeError::Twice(s)) if s == Shard::new(0, 2).unwrap()
    ));
    match merge(&[a.clone(), slice(1, 2, 8)]) {
        Err(MergeError::Differs { what, .. }) => assert_eq!(what, "base"),
        other => panic!("{other:?}"),
    }
    match merge(&[a, slice(1, 3, 7)]) {
        Err(MergeError::Differs { what, .. }) => assert_eq!(what, "shard count"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn more_shards_than_seeds_leave_the_extra_slices_empty() {
    let mut s = Soak::new(vec!["counter".into()], vec![FaultConfig::none()], 11, 2);
    s.ops = Some(1);
    let slices: Vec<SoakSlice> = (0..3)
        .map(|i| {
            run(&Soak {
                shard: Shard::new(i, 3).unwrap(),
                ..s.clone()
            })
            .0
        })
        .collect();
    assert_eq!(slices[2].runs, 0);
    let merged = merge(&slices).unwrap();
    assert_eq!((merged.runs, merged.rows[0].seeds), (2, 2));
}

#[test]
fn the_first_seeds_of_a_row_run_twice_in_whichever_shard_holds_them() {
    let registry = Registry::builtins().with(crate::harness::DRIFTING);
    let mut s = Soak::new(
        vec!["test-drifting".into()],
        vec![FaultConfig::none()],
        11,
        6,
    );
    s.repeat = 3;
    let slices: Vec<SoakSlice> = (0..2)
        .map(|i| {
            let s = Soak {
                shard: Shard::new(i, 2).unwrap(),
                ..s.clone()
            };
            SoakSlice::of(&s, &soak(&registry, &s, &|_| {}).unwrap())
        })
        .collect();
    let seeds = |slice: &SoakSlice| -> Vec<u64> {
        slice.rows[0].unrepeatable.iter().map(|u| u.seed).collect()
    };
    assert_eq!(
        (seeds(&slices[0]), seeds(&slices[1])),
        (vec![11, 13], vec![12])
    );
    assert_eq!(seeds(&merge(&slices).unwrap()), [11, 12, 13]);
}
