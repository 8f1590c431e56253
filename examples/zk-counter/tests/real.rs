//! The application on a real ZooKeeper server, through the real `zookeeper-client` (a normal
//! build): three counting processes and a leader, every addition counted.
#![cfg(not(madsim))]

use std::sync::atomic::{AtomicU64, Ordering};

use avout_example_zk_counter::service::{COUNTER, EPOCH};
use avout_example_zk_counter::{Config, Events, Role, Service, Step, run};

/// Counts acknowledged writes.
#[derive(Default)]
struct Acks(AtomicU64);

impl Events for Acks {
    fn step(&self, step: Step<'_>) {
        if let Step::Written(Ok(())) = step {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_counters_and_a_leader_on_a_real_server() {
    let server = tokio::task::block_in_place(avout_testkit::server::ZkServer::start)
        .unwrap_or_else(|e| panic!("cannot start a ZooKeeper server (tests never skip): {e}"));
    let config = Config::new(&server.connect_string());
    let acks = Acks::default();
    let processes = (0..3)
        .map(|_| run(&config, Role::Counter, 5, &acks))
        .chain([run(&config, Role::Leader, 3, &acks)]);
    for done in futures::future::join_all(processes).await {
        done.unwrap();
    }
    assert_eq!(acks.0.load(Ordering::SeqCst), 18);
    let service = Service::connect(&config.cluster, config.session_timeout)
        .await
        .unwrap();
    let client = service.client();
    assert_eq!(client.get_data(COUNTER).await.unwrap().0, b"15");
    assert_eq!(client.get_data(EPOCH).await.unwrap().0, b"3");
}
