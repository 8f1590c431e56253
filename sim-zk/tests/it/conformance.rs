//! The backend conformance suite of `avout-testkit`, unchanged, on the simulator.

use avout_sim_zk::Sim;
use avout_testkit::backend::SimBackend;
use avout_testkit::conformance::{self, CASES};

#[test]
fn every_case_passes_on_the_simulator() {
    for (i, case) in CASES.iter().enumerate() {
        Sim::builder()
            .seed_from_env(1_000 + i as u64)
            .clients(0)
            .build()
            .run(|ctx| async move {
                let backend = SimBackend::new(ctx.zk.clone());
                conformance::run_case(&backend, case, &format!("/conformance/{case}")).await;
            });
    }
}

#[test]
fn all_cases_pass_in_one_run() {
    Sim::builder()
        .seed_from_env(7)
        .clients(0)
        .build()
        .run(|ctx| async move {
            conformance::run_all(&SimBackend::new(ctx.zk.clone()), "/conformance").await;
        });
}

/// The suite on an ensemble of three (a leader and two lagging followers, each client on any
/// of them), as core's tests run it on a real three-member ensemble.
#[test]
fn every_case_passes_on_a_three_server_ensemble() {
    for (i, case) in CASES.iter().enumerate() {
        Sim::builder()
            .seed_from_env(3_000 + i as u64)
            .clients(0)
            .servers(3)
            .build()
            .run(|ctx| async move {
                let backend = SimBackend::new(ctx.zk.clone());
                conformance::run_case(&backend, case, &format!("/conformance/{case}")).await;
            });
    }
}
