//! The client's metrics on a real server: request latencies by operation (the real backend's
//! alone), request errors, sessions. A current-thread runtime keeps every task on the test's
//! thread, where the debugging recorder is installed.

use avout::metrics as m;
use avout::zk::ZkConfig;
use avout::{Client, Coordination, CreateMode, Error};

use crate::metrics_sim::Recorded;
use crate::support;

#[test]
fn requests_to_a_real_server_are_timed_by_operation() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    Recorded::run(|r| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let client = Client::connect(config).await.unwrap();
                assert_eq!(r.counter(m::SESSIONS_OPENED, &[]), 1);
                client
                    .create("/timed", b"x", &CreateMode::Persistent.into())
                    .await
                    .unwrap();
                assert!(matches!(
                    client
                        .create("/timed", b"x", &CreateMode::Persistent.into())
                        .await,
                    Err(Error::NodeExists { .. })
                ));
                assert_eq!(client.get_data("/timed").await.unwrap().0, b"x");

                let creates = r.samples(m::REQUEST_DURATION, &[("op", "create")]);
                assert_eq!(creates.len(), 2, "{creates:?}");
                assert!(creates.iter().all(|s| *s > 0.0 && *s < 60.0), "{creates:?}");
                assert_eq!(
                    r.samples(m::REQUEST_DURATION, &[("op", "getData")]).len(),
                    1
                );
                assert_eq!(
                    r.counter(
                        m::REQUEST_ERRORS,
                        &[("op", "create"), ("error", "node_exists")]
                    ),
                    1
                );
                client.close().await.unwrap();
                assert_eq!(r.counter(m::SESSIONS_ENDED, &[("reason", "closed")]), 1);
            });
    });
}
