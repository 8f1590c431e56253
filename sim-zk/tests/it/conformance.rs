//! The backend conformance suite of `avout-testkit`, unchanged, on the simulator.

use std::future::Future;

use avout::Coordination;
use avout_sim_zk::{Sim, SimClient, SimZk};
use avout_testkit::conformance::{self, Backend, CASES};

struct SimBackend(SimZk);

impl Backend for SimBackend {
    type Client = SimClient;

    fn connect(&self) -> impl Future<Output = SimClient> {
        let client = self.0.connect();
        async move { client }
    }

    fn connect_with_digest(&self, user: &str, password: &str) -> impl Future<Output = SimClient> {
        let client = self.0.connect();
        let auth = format!("{user}:{password}");
        async move {
            client
                .add_auth("digest", auth.as_bytes())
                .await
                .expect("digest auth on the simulator");
            client
        }
    }

    fn expire(&self, client: &SimClient) -> impl Future<Output = ()> {
        self.0.expire_session(client.session().id);
        async {}
    }
}

#[test]
fn every_case_passes_on_the_simulator() {
    for (i, case) in CASES.iter().enumerate() {
        Sim::builder()
            .seed_from_env(1_000 + i as u64)
            .clients(0)
            .build()
            .run(|ctx| async move {
                let backend = SimBackend(ctx.zk.clone());
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
            conformance::run_all(&SimBackend(ctx.zk.clone()), "/conformance").await;
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
                let backend = SimBackend(ctx.zk.clone());
                conformance::run_case(&backend, case, &format!("/conformance/{case}")).await;
            });
    }
}
