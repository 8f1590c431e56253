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

#[test]
fn a_replay_file_reruns_the_schedule_exactly() {
    use avout_sim_zk::{FaultKind, ReplayFile, Sim, demo};
    let params = DemoParams {
        ops_per_client: 40,
        ..DemoParams::default()
    };
    let sim = demo::sim(77, &params);
    let recording = Sim::builder()
        .config(sim.config().clone())
        .record_choices(true)
        .build();
    let (outcome, recorded) = recording.run(|ctx| demo::workload(ctx, 40));
    let file = recorded.replay.clone().expect("choices recorded");
    assert_eq!(file.hash, recorded.hash);
    assert!(!file.choices.network.is_empty());
    let path = std::env::temp_dir().join(format!("avout-sim-replay-{}.json", std::process::id()));
    file.save(&path).unwrap();
    let loaded = ReplayFile::load(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let (replayed_outcome, replayed) = Sim::from_replay(&loaded).run(|ctx| demo::workload(ctx, 40));
    assert_eq!(replayed.hash, recorded.hash);
    assert_eq!(replayed_outcome, outcome);
    // The seed alone gives the same run too.
    assert_eq!(sim.run(|ctx| demo::workload(ctx, 40)).1.hash, recorded.hash);

    // Choices are data: make every fault draw miss and the schedule has no faults.
    let mut edited = loaded.clone();
    // (Padded, since a calmer run makes a different number of requests.)
    edited.choices.faults = vec![u64::MAX; 100 * loaded.choices.faults.len()];
    let (_, calm) = Sim::from_replay(&edited).run(|ctx| demo::workload(ctx, 40));
    // Its network tape ran out (it made more requests) and went on with fresh latencies.
    assert!(FaultKind::ALL.iter().all(|k| calm.fault_count(*k) == 0));
    assert!(recorded.faults.values().sum::<u64>() > 0);
    assert_ne!(calm.hash, recorded.hash);
    assert!(!replayed.tapes_exhausted);
}

/// A failing run leaves a replay file behind: its configuration and every choice up to the
/// failure, with the event-log hash at that point. Re-running the file fails the same way,
/// and the same workload without the failing check reaches that very hash.
#[test]
fn a_failing_run_writes_a_replay_file_that_reruns_to_the_same_hash() {
    use avout_sim_zk::{ReplayFile, Sim, SimCtx, demo};
    let params = DemoParams {
        ops_per_client: 30,
        ..DemoParams::default()
    };
    let dir = std::env::temp_dir().join(format!("avout-sim-failing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let work = |fail: bool| {
        move |ctx: SimCtx| async move {
            let outcome = demo::workload(ctx, 30).await;
            assert!(!fail, "the check fails after {outcome:?}");
            outcome
        }
    };
    let one_file = |dir: &std::path::Path| {
        let files: Vec<_> = std::fs::read_dir(dir)
            .expect("the replay directory exists")
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        ReplayFile::load(&files[0]).unwrap()
    };
    let failing = Sim::builder()
        .config(demo::sim(31, &params).config().clone())
        .failure_replay_dir(Some(dir.join("first")))
        .build();
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| failing.run(work(true))));
    assert!(failed.is_err(), "the workload's check fails");
    let file = one_file(&dir.join("first"));
    assert_eq!(file.config.seed, 31);
    assert!(!file.choices.network.is_empty() && !file.choices.faults.is_empty());

    // The file re-runs the schedule: the same failure, the same hash, the same choices.
    let again = Sim::from_replay(&file).with_failure_replay_dir(Some(dir.join("second")));
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| again.run(work(true))));
    assert!(failed.is_err());
    let second = one_file(&dir.join("second"));
    assert_eq!(second.hash, file.hash);
    assert_eq!(second.choices, file.choices);

    // Without the failing check, the replayed run ends at the failure's hash, on its tapes.
    let (_, passed) = Sim::from_replay(&file).run(work(false));
    assert_eq!(passed.hash, file.hash);
    assert!(!passed.tapes_exhausted);
    // And the seed alone gives the same run.
    assert_eq!(demo::sim(31, &params).run(work(false)).1.hash, file.hash);
    std::fs::remove_dir_all(&dir).unwrap();
}
