//! `bank` with its values in a ref store: the in-process store on the simulator under every
//! fault kind, both protocols; `avout run bank --ref-store postgres --value-size 2MiB` on a
//! real ZooKeeper and a real PostgreSQL (both started here; a server that cannot start fails
//! the test); and the command line's refusals.

use crate::avout_in;

use avout_scenarios::scenario::store::RefStoreKind;
use avout_scenarios::scenario::{FaultPlan, Protocol, Registry};
use avout_sim_zk::FaultKind;
use avout_testkit::postgres::PgServer;
use avout_testkit::server::ZkServer;

#[test]
fn bank_with_the_memory_store_is_valid_under_every_fault_kind_with_both_protocols() {
    for protocol in [Protocol::Optimistic, Protocol::Mvcc] {
        for (i, kind) in FaultKind::DEFAULT.into_iter().enumerate() {
            let mut w = Registry::builtins()
                .workload("bank", 9_710_000_100 + i as u64)
                .unwrap();
            w.protocol = protocol;
            w.ref_store = RefStoreKind::Memory;
            w.clients = 3;
            w.ops = 20;
            let report = Registry::builtins()
                .run(&w)
                .faults(&FaultPlan::kinds(&[kind], Some(0.02)))
                .sim()
                .unwrap();
            assert!(
                report.verdict.is_valid(),
                "{protocol:?} {kind:?} seed {}: {}",
                w.seed,
                report.verdict
            );
            assert!(
                report.counts.ok >= 10,
                "{protocol:?} {kind:?}: {:?}",
                report.counts
            );
        }
    }
}

#[test]
fn avout_run_bank_with_two_mib_values_in_memory_on_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let out = avout_in(
        &[
            "run",
            "bank",
            "--ref-store",
            "memory",
            "--value-size",
            "2MiB",
            "--ops",
            "4",
            "--faults",
            "none",
            "--seed",
            "9710000200",
            "--json",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["valid"], true);
    assert_eq!(report["ref_store"], "memory");
    assert_eq!(report["value_size"], 2 << 20);
}

#[test]
fn avout_run_bank_with_two_mib_values_in_postgres_on_a_real_server() {
    let zk = ZkServer::start().expect("a ZooKeeper server starts (install zookeeper)");
    let pg = PgServer::start()
        .unwrap_or_else(|e| panic!("cannot start PostgreSQL (tests never skip): {e}"));
    let dir = tempfile::tempdir().unwrap();
    for protocol in ["optimistic", "mvcc"] {
        let out = avout_in(
            &[
                "run",
                "bank",
                "--protocol",
                protocol,
                "--ref-store",
                "postgres",
                "--value-size",
                "2MiB",
                "--clients",
                "3",
                "--ops",
                "6",
                "--zk",
                &zk.connect_string(),
                "--pg",
                &pg.connect_string(),
                "--json",
            ],
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(0), "{protocol}: {out:?}");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["valid"], true, "{protocol}: {report}");
        assert_eq!(report["ref_store"], "postgres");
        assert!(
            report["operations"]["ok"].as_u64().unwrap() >= 10,
            "{report}"
        );
    }
}

#[test]
fn avout_run_refuses_ref_store_misuse_with_exit_two() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["run", "bank", "--ref-store", "redis"][..],
            "unknown ref store",
        ),
        (
            &["run", "bank", "--value-size", "2GB"],
            "expected bytes, KiB or MiB",
        ),
        (&["run", "bank", "--ref-store", "postgres"], "no PostgreSQL"),
        (
            &["run", "bank", "--pg", "host=x"],
            "--pg needs real ZooKeeper",
        ),
    ] {
        let out = avout_in(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn the_soak_runs_bank_again_with_the_memory_store() {
    use avout_scenarios::scenario::soak::{FaultConfig, Soak, soak};
    let mut s = Soak::new(
        vec!["bank".into()],
        vec![FaultConfig::all()],
        9_710_000_300,
        3,
    );
    s.ops = Some(10);
    let report = soak(&Registry::builtins(), &s, &|_| {}).unwrap();
    let labels: Vec<String> = report.rows.iter().map(|r| r.label()).collect();
    assert_eq!(
        labels,
        ["bank", "bank+memory", "bank+optimistic", "bank+60ms"]
    );
    assert_eq!(report.runs, 12);
    assert_eq!(report.rows[3].latency_ms, Some(60));
    assert!(!report.failed(), "{:?}", report.rows);
    let without = Soak::new(vec!["counter".into()], vec![FaultConfig::all()], 1, 1);
    assert_eq!(without.rows(), 1, "no store or distant row without bank");
}

/// Seeds where, before a value gone from the store made Optimistic re-read its ref after a
/// sync, some transactions read the same missing value (from the handle's cache, or from a
/// lagging server under stale reads) until the retry limit: 40,015 to 130,027 retries a run,
/// and on 9710600161 transfers stuck past the 60 s deadline (a liveness anomaly), all found by
/// `avout explore bank --ref-store memory`.
#[test]
fn a_collected_value_behind_a_cached_or_stale_pointer_does_not_livelock_optimistic() {
    for seed in [
        9_710_500_102,
        9_710_500_104,
        9_710_500_108,
        9_710_500_109,
        9_710_600_161,
    ] {
        let registry = Registry::builtins();
        let mut w = registry.workload("bank", seed).unwrap();
        w.protocol = Protocol::Optimistic;
        w.ref_store = RefStoreKind::Memory;
        let report = registry.run(&w).faults(&FaultPlan::all()).sim().unwrap();
        assert!(report.verdict.is_valid(), "seed {seed}: {}", report.verdict);
        assert!(
            report.retries < 1_000,
            "seed {seed}: {} retries",
            report.retries
        );
    }
}
