//! A request in flight pins the session's `zookeeper-client` handle: the client crate's reply
//! futures borrow it until the reply arrives, so `ZkClient::close` must not free it under
//! them. (On 2026-11-29 it did, for every request: the handle was let go when the request
//! was sent, and a `multi` answered after `close` read freed memory, a SIGSEGV in CI.)

use std::sync::Arc;

use avout::zk::{ZkClient, ZkConfig};
use avout::{Coordination, CoordinationExt, CreateMode, Op, Request};

use crate::support;

/// Every kind of request the backend sends through the client crate, on a fresh node.
fn requests(root: &str) -> Vec<Request> {
    let node = format!("{root}/n");
    vec![
        Request::GetData {
            path: node.clone(),
            watch: false,
        },
        Request::GetData {
            path: node.clone(),
            watch: true,
        },
        Request::Exists {
            path: node.clone(),
            watch: true,
        },
        Request::GetChildren {
            path: root.into(),
            watch: false,
        },
        Request::SetData {
            path: node.clone(),
            data: b"x".to_vec(),
            version: None,
        },
        Request::Sync { path: node.clone() },
        Request::Multi(vec![
            Op::check(&node, None),
            Op::set_data(&node, b"y".to_vec(), None),
        ]),
        Request::Create {
            path: format!("{root}/seq-"),
            data: Vec::new(),
            options: CreateMode::PersistentSequential.into(),
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_in_flight_holds_the_handle_and_survives_close() {
    let server = support::standalone();
    let zk = ZkClient::connect(&ZkConfig::new(server.connect_string()))
        .await
        .unwrap();
    zk.ensure_path("/in-flight").await.unwrap();
    zk.create("/in-flight/n", b"", &CreateMode::Persistent.into())
        .await
        .unwrap();
    for request in requests("/in-flight") {
        let name = request.name();
        let raw = zk.raw().expect("a live session");
        let before = Arc::strong_count(&raw);
        let reply = zk.submit(request);
        assert_eq!(
            Arc::strong_count(&raw),
            before + 1,
            "{name}: the reply future pins the handle its client-crate future borrows"
        );
        reply.await.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            Arc::strong_count(&raw),
            before,
            "{name}: and lets go once answered"
        );
    }
    // Sent, and held unpolled while the session is closed: the close does not wait for the
    // callers, and every request still gets its answer, as on the simulator.
    let pending: Vec<_> = requests("/in-flight")
        .into_iter()
        .map(|r| (r.name(), zk.submit(r)))
        .collect();
    zk.close()
        .await
        .expect("a close while requests are held unpolled");
    for (name, reply) in pending {
        reply
            .await
            .unwrap_or_else(|e| panic!("{name} sent before the close: {e}"));
    }
    assert!(zk.raw().is_none());
    let after = zk
        .submit(Request::Sync {
            path: "/in-flight".into(),
        })
        .await;
    assert!(matches!(after, Err(avout::Error::Closed)), "{after:?}");
}
