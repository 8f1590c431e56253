//! Swarm testing and coverage marks, through the soak: a swarm row draws a mix per seed,
//! and the marks the runs reach are counted (a swarm case replaying its mix: `Case::record_faults`).

use avout::coverage::Mark;
use avout_scenarios::scenario::soak::{FaultConfig, Soak, soak};
use avout_scenarios::scenario::{Faults, Registry, Swarm};
use avout_sim_zk::FaultKind;

#[test]
fn a_soak_counts_the_marks_its_runs_reach() {
    // Lost replies make the atom's conditional writes recover by reading: the mark must be
    // reached, and only by runs that lost a reply.
    let reply_lost = FaultConfig::of(&[FaultKind::ReplyLost]);
    let mut s = Soak::new(
        vec!["counter".into()],
        vec![FaultConfig::none(), reply_lost],
        0,
        20,
    );
    s.threads = 2;
    let report = soak(&Registry::builtins(), &s, &|_| {}).unwrap();
    assert!(!report.failed());
    let (calm, lossy) = (&report.rows[0].coverage, &report.rows[1].coverage);
    assert_eq!((calm.runs, lossy.runs), (20, 20));
    assert!(calm.marks.is_empty(), "no faults, no recovery: {calm:?}");
    let recovered =
        lossy.get(Mark::AtomWriteLostApplied).runs + lossy.get(Mark::AtomWriteLostNotApplied).runs;
    assert!(recovered > 0, "{lossy:?}");
    let all = report.coverage();
    assert_eq!(all.runs, 40);
    assert!(all.unreached().any(|m| m == Mark::StmMvccBargedRunning));
}

#[test]
fn a_run_counts_the_same_marks_and_hash_each_time() {
    let registry = Registry::builtins();
    let mut w = registry.workload("mutex", 3).unwrap();
    w.ops = 6;
    let faults = Faults::Swarm(Swarm::of(&FaultKind::DEFAULT));
    let a = registry.run(&w).with_faults(&faults).sim().unwrap();
    let b = registry.run(&w).with_faults(&faults).sim().unwrap();
    assert_eq!((a.hash, &a.coverage), (b.hash, &b.coverage));
    assert_eq!(a.plan, Swarm::default().plan(3));
}

#[test]
fn a_swarm_soak_runs_a_mix_per_seed() {
    let config = FaultConfig::all().swarm();
    assert_eq!(config.name, "swarm:all");
    let mut s = Soak::new(vec!["counter".into()], vec![config.clone()], 100, 12);
    s.ops = Some(4);
    s.threads = 2;
    let report = soak(&Registry::builtins(), &s, &|_| {}).unwrap();
    assert_eq!(report.runs, 12);
    let mixes: std::collections::BTreeSet<String> = (100..112)
        .map(|seed| format!("{:?}", config.faults().plan(seed)))
        .collect();
    assert!(mixes.len() > 10, "{} mixes of 12 seeds", mixes.len());
}
