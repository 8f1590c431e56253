//! The whole conformance suite on one standalone server, every case under its own root.

use avout::zk::ZkConfig;
use avout_testkit::backend::ZkBackend;
use avout_testkit::conformance::CASES;

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite_on_a_standalone_server() {
    let server = support::standalone();
    let backend = ZkBackend::new(ZkConfig::new(server.connect_string()));
    let failed = support::run_cases(&backend, "/standalone", CASES).await;
    support::assert_passed("a standalone server", &failed);
}
