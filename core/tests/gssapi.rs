//! SASL GSSAPI (Kerberos) against a real server, with a KDC the test starts (feature
//! `sasl-gssapi`; Debian's MIT Kerberos): without a ticket the connect is refused at once
//! saying so, with one the session authenticates as its principal (its nodes' `auth` ACL
//! names it), and a servers' principal the KDC does not know is refused too.
//!
//! A test binary of its own, holding this one test: a GSSAPI client finds its realm and its
//! credentials in the process's environment (`KRB5_CONFIG`, `KRB5CCNAME`), which the test
//! sets before any other thread exists. It fails, never skips, when the KDC or the server
//! cannot start.

use std::time::{Duration, Instant};

use avout::zk::{Sasl, ZkClient, ZkConfig};
use avout::{Acl, Coordination, CreateMode, CreateOptions, Error, Perms};
use avout_testkit::kdc::{Kdc, REALM};
use avout_testkit::server::ZkServer;

const CONNECT: Duration = Duration::from_secs(10);

/// Connects to `connect` with GSSAPI to the `zookeeper` service.
async fn connect(connect: String) -> avout::Result<ZkClient> {
    let config = ZkConfig::new(connect)
        .with_connect_timeout(CONNECT)
        .with_sasl(Sasl::gssapi());
    ZkClient::connect(&config).await
}

/// Expects a refusal naming `principal`, within the connect timeout; returns its reason.
async fn refused(to: String, principal: &str) -> String {
    let started = Instant::now();
    match connect(to.clone()).await {
        Err(Error::SaslRefused(refusal)) => {
            let asked = (refusal.mechanism.as_str(), refusal.principal.as_str());
            assert_eq!(asked, ("GSSAPI", principal));
            assert!(started.elapsed() < CONNECT, "{:?}", started.elapsed());
            refusal.reason
        }
        other => panic!("{to}: want a GSSAPI refusal, got {other:?}"),
    }
}

#[test]
fn a_kerberos_ticket_authenticates_and_no_ticket_or_an_unknown_service_is_refused() {
    let kdc = Kdc::start().unwrap_or_else(|e| panic!("cannot start a KDC (tests never skip): {e}"));
    let ccache = kdc.dir().join("app.ccache");
    for (key, value) in kdc.client_env(&ccache) {
        // SAFETY: this binary holds this one test and no thread of it has started yet (the
        // runtime below, the KDC and the server are started after), so nothing reads the
        // environment while it changes.
        unsafe { std::env::set_var(key, value) };
    }
    let server = ZkServer::builder()
        .kerberos(kdc.service("zookeeper/localhost").unwrap())
        .force_sync(false)
        .start()
        .unwrap_or_else(|e| panic!("cannot start a Kerberos ZooKeeper server: {e}"));
    let port = server.port();
    let app = kdc.principal("app").unwrap();

    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            // No ticket yet: the credential cache does not exist.
            let why = refused(format!("localhost:{port}"), "zookeeper/localhost").await;
            assert!(why.contains("no Kerberos credentials"), "{why}");

            kdc.kinit("app", &app, &ccache).unwrap();
            let zk = connect(format!("localhost:{port}"))
                .await
                .expect("app's ticket authenticates");
            let mine = CreateOptions::new(CreateMode::Persistent).with_acl(Acl::creator_all());
            zk.create("/kerberos", b"", &mine).await.unwrap();
            let (acl, _) = zk.get_acl("/kerberos").await.unwrap();
            assert_eq!(acl.len(), 1);
            assert_eq!(
                (acl[0].scheme.as_str(), acl[0].id.as_str(), acl[0].perms),
                ("sasl", format!("app@{REALM}").as_str(), Perms::ALL)
            );

            // Dialled by address, the servers' principal is zookeeper/127.0.0.1: unknown.
            let why = refused(format!("127.0.0.1:{port}"), "zookeeper/127.0.0.1").await;
            assert!(
                why.contains("no Kerberos ticket for zookeeper@127.0.0.1"),
                "{why}"
            );
        });
}
