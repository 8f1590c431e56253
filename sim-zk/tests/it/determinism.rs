//! The same seed gives the same event-log hash.

use avout_sim_zk::demo::{DemoParams, run_once};

/// How many seeds to replay: `AVOUT_SIM_SEEDS`, default 1,000.
fn seed_count() -> u64 {
    std::env::var("AVOUT_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000)
}

#[test]
fn every_seed_replays_to_the_same_hash() {
    let params = DemoParams {
        ops_per_client: 25,
        ..DemoParams::default()
    };
    let mut distinct = std::collections::BTreeSet::new();
    let n = seed_count();
    for seed in 0..n {
        let (a_out, a) = run_once(seed, &params);
        let (b_out, b) = run_once(seed, &params);
        assert_eq!(
            a.hash, b.hash,
            "seed {seed} replayed differently; rerun with AVOUT_SIM_SEED={seed}"
        );
        assert_eq!(a_out, b_out);
        assert_eq!(a.faults, b.faults);
        distinct.insert(a.hash);
    }
    assert_eq!(distinct.len() as u64, n, "different seeds, different runs");
}
