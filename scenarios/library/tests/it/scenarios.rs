//! The scenario registry on the simulator and on real ZooKeeper: every scenario's checker
//! passes its runs under every fault kind (and the fault did fire), the same workloads pass
//! on a real server, and every kept regression schedule passes on the correct code.

use avout_check::history::EventType;
use avout_scenarios::scenario::case::Case;
use avout_scenarios::scenario::{FaultPlan, Registry, Workload};
use avout_sim_zk::FaultKind;
use avout_testkit::backend::ZkBackend;
use avout_testkit::server::ZkServer;

/// A rate for `kind` that makes it fire a few times in a run of a few hundred requests.
fn plan_for(kind: FaultKind) -> FaultPlan {
    let total = match kind {
        FaultKind::RequestLost | FaultKind::ReplyLost => 0.03,
        FaultKind::Disconnect | FaultKind::StaleReads => 0.01,
        FaultKind::SessionExpiry | FaultKind::Pause => 0.004,
        FaultKind::Outage | FaultKind::LeaderElection => 0.003,
        FaultKind::Partition | FaultKind::SessionMoved => 0.01,
        FaultKind::ClientFreeze => 0.004,
        FaultKind::SlowDisk => 0.005,
        FaultKind::LeaderLag => 0.01,
    };
    FaultPlan::kinds(&[kind], Some(total))
}

fn small(scenario: &str, seed: u64) -> Workload {
    let mut w = Registry::builtins().workload(scenario, seed).unwrap();
    w.clients = 3;
    w.ops = w.ops.min(25);
    w
}

#[test]
fn every_scenario_is_valid_under_every_fault_kind() {
    for scenario in Registry::builtins().soaked() {
        for kind in FaultKind::ALL {
            // Runs until the fault fired a few times (small workloads send few requests).
            let mut fired = 0;
            for seed in 0..30 {
                if seed >= 4 && fired >= 3 {
                    break;
                }
                let w = small(scenario, 1000 + seed);
                let report = Registry::builtins()
                    .run(&w)
                    .faults(&plan_for(kind))
                    .sim()
                    .unwrap();
                assert!(
                    report.verdict.is_valid(),
                    "{scenario} under {} with seed {}: {}\nreplay: avout run {scenario} --seed {} \
                     --clients {} --ops {} --faults {}",
                    kind.name(),
                    w.seed,
                    report.verdict,
                    w.seed,
                    w.clients,
                    w.ops,
                    kind.name()
                );
                assert!(report.counts.ok > 0, "{scenario}: nothing succeeded");
                fired += report.faults.get(kind.name()).copied().unwrap_or(0);
            }
            assert!(
                fired > 0,
                "{scenario}: {} never fired in 30 runs",
                kind.name()
            );
            eprintln!("{scenario:>16} {:>14}: {fired} faults, valid", kind.name());
        }
    }
}

#[test]
fn every_scenario_is_valid_under_all_faults_at_once() {
    for scenario in Registry::builtins().soaked() {
        for seed in 0..6 {
            let w = Registry::builtins().workload(scenario, seed).unwrap();
            let report = Registry::builtins()
                .run(&w)
                .faults(&FaultPlan::all())
                .sim()
                .unwrap();
            assert!(
                report.verdict.is_valid(),
                "avout run {scenario} --seed {seed}: {}",
                report.verdict
            );
        }
    }
}

/// The two-phase-commit runs reach the interesting cases, so their checker does not pass
/// vacuously: commits, aborts, sites leaving before voting, and operations in doubt.
#[test]
fn two_phase_commit_runs_commit_abort_and_lose_sites() {
    let (mut commits, mut aborts, mut leaves, mut in_doubt) = (0, 0, 0, 0);
    let registry = Registry::builtins();
    for seed in 0..10 {
        let w = registry.workload("two-phase-commit", seed).unwrap();
        let report = registry.run(&w).faults(&FaultPlan::all()).sim().unwrap();
        assert!(report.verdict.is_valid(), "seed {seed}: {}", report.verdict);
        for e in report.history.events() {
            match (e.kind, e.f.as_str()) {
                (EventType::Ok, "outcome") if e.value["outcome"] == "commit" => commits += 1,
                (EventType::Ok, "outcome") => aborts += 1,
                (EventType::Ok, "leave") => leaves += 1,
                (EventType::Info, _) => in_doubt += 1,
                _ => {}
            }
        }
    }
    eprintln!(
        "two-phase-commit over 10 seeds: {commits} commits and {aborts} aborts learned, \
         {leaves} sites left before voting, {in_doubt} operations in doubt"
    );
    assert!(commits > 0 && aborts > 0 && leaves > 0 && in_doubt > 0);
}

#[test]
fn a_run_is_a_function_of_its_seed_and_a_case_replays_to_its_hash() {
    for scenario in Registry::builtins().soaked() {
        let w = small(scenario, 77);
        let a = Registry::builtins()
            .run(&w)
            .faults(&FaultPlan::all())
            .sim()
            .unwrap();
        let b = Registry::builtins()
            .run(&w)
            .faults(&FaultPlan::all())
            .sim()
            .unwrap();
        assert_eq!(a.hash, b.hash, "{scenario}");
        assert_eq!(a.history, b.history, "{scenario}");
        let case = Case::record(&Registry::builtins(), &w, &FaultPlan::all(), None).unwrap();
        assert_eq!(
            Some(case.sim.hash),
            a.hash,
            "recording does not change the run"
        );
        let replayed = Case::from_json(&case.to_json())
            .unwrap()
            .replay(&Registry::builtins())
            .unwrap();
        assert_eq!(replayed.hash, a.hash, "{scenario}");
    }
}

#[test]
fn the_same_workloads_pass_on_a_real_server() {
    let server = ZkServer::start().expect("a ZooKeeper server starts (install zookeeper)");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for scenario in Registry::builtins().soaked() {
        // Each scenario under its own chroot, so that none sees another's nodes.
        let base = format!("/{scenario}");
        let connect = server.connect_string();
        let report = rt.block_on(async {
            let setup = avout::Client::connect(avout::zk::ZkConfig::new(connect.clone()))
                .await
                .unwrap();
            avout::CoordinationExt::ensure_path(&setup, &base)
                .await
                .unwrap();
            let backend = ZkBackend::new(
                avout::zk::ZkConfig::new(format!("{connect}{base}"))
                    .with_session_timeout(std::time::Duration::from_secs(4)),
            );
            Registry::builtins()
                .run(&small(scenario, 5))
                .zk(&backend)
                .await
                .unwrap()
        });
        assert!(
            report.verdict.is_valid(),
            "{scenario} on a real server: {}",
            report.verdict
        );
        assert!(report.counts.ok >= 10, "{scenario}: {:?}", report.counts);
        eprintln!(
            "{scenario} on ZooKeeper: {:?} in {:?}",
            report.counts, report.wall_time
        );
    }
    server.stop().unwrap();
}

/// The kept regression cases (`scenarios/regressions/`, shrunk failures of planted bugs) run
/// first in spirit: whatever the features, the correct code must pass every one of their
/// schedules.
#[test]
fn the_correct_code_passes_every_kept_regression_schedule() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no regression cases in {}",
        dir.display()
    );
    for file in files {
        let case = Case::load(&file).unwrap();
        assert!(
            !case.anomalies.is_empty(),
            "{}: a kept case records its failure",
            file.display()
        );
        let report = case.rerun(&Registry::builtins(), None).unwrap();
        assert!(
            report.verdict.is_valid(),
            "{} without its planted bug: {}",
            file.display(),
            report.verdict
        );
    }
}
