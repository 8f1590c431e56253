//! TLS to a real server's secure client port (feature `tls`), with certificates from a CA the
//! test makes: a client with the CA and its own certificate works, and each wrong certificate
//! is refused with [`Error::TlsRefused`] saying why, well within the connect timeout, by
//! [`ZkClient::connect`] and by the managed [`Client`] alike (which does not retry it).

use std::time::{Duration, Instant};

use avout::zk::{TlsConfig, ZkClient, ZkConfig};
use avout::{Client, Coordination, CreateMode, Error, TlsRefusal};
use avout_testkit::server::{ClientAuth, ZkServer};
use avout_testkit::tls::{TestCa, Validity};

/// Long enough that a refusal reported before it was found, not waited out.
const CONNECT: Duration = Duration::from_secs(10);

fn start(builder: avout_testkit::server::ZkServerBuilder) -> ZkServer {
    tokio::task::block_in_place(|| builder.start())
        .unwrap_or_else(|e| panic!("cannot start a TLS ZooKeeper server (tests never skip): {e}"))
}

fn secure(server: &ZkServer) -> String {
    server
        .secure_connect_string()
        .expect("the server serves TLS")
}

/// A client of `ca` trusting `ca` and presenting a current certificate of its own.
fn client_tls(ca: &TestCa) -> TlsConfig {
    let me = ca.issue(&ca.client("app"));
    TlsConfig::from_pem(ca.cert_pem())
        .and_then(|tls| tls.with_identity_pem(me.cert_pem, me.key_pem))
        .expect("the test CA's PEMs parse")
}

/// Connects with `tls` to `connect`, expecting a refusal; returns why, checking that it came
/// before the connect timeout.
async fn refused(connect: &str, tls: TlsConfig) -> TlsRefusal {
    let config = ZkConfig::new(connect)
        .with_connect_timeout(CONNECT)
        .with_tls(tls);
    let started = Instant::now();
    let outcome = ZkClient::connect(&config).await;
    let took = started.elapsed();
    match outcome {
        Err(Error::TlsRefused { server, reason }) => {
            assert!(took < CONNECT, "the refusal took {took:?}");
            assert_eq!(server, connect, "the refusing server is named");
            *reason
        }
        Err(other) => panic!("{connect}: want a TLS refusal, got {other:?} after {took:?}"),
        Ok(_) => panic!("{connect}: connected with a certificate that must be refused"),
    }
}

/// A current server certificate of the test CA, client certificates required: the good
/// client works (a session, then a managed client), and every other client is refused for
/// its own reason, the managed client included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_good_client_works_and_each_bad_one_is_refused_for_its_reason() {
    let ca = TestCa::new("test CA");
    let server = start(ZkServer::builder().tls(ca.server_tls()));
    let connect = secure(&server);

    let config = ZkConfig::new(&connect)
        .with_connect_timeout(CONNECT)
        .with_tls(client_tls(&ca));
    let zk = ZkClient::connect(&config)
        .await
        .expect("a good client connects");
    let (path, _) = zk
        .create("/over-tls", b"yes", &CreateMode::Persistent.into())
        .await
        .unwrap();
    assert_eq!(zk.get_data(&path).await.unwrap().0, b"yes");
    let client = Client::connect(config.clone())
        .await
        .expect("a managed client connects");
    assert_eq!(client.get_data("/over-tls").await.unwrap().0, b"yes");
    client.close().await.unwrap();

    let other = TestCa::new("another CA");
    assert_eq!(
        refused(&connect, client_tls(&other)).await,
        TlsRefusal::UnknownIssuer,
        "a client trusting another CA refuses the server"
    );
    let stranger = other.issue(&other.client("stranger"));
    let mine = TlsConfig::from_pem(ca.cert_pem()).unwrap();
    let with = |cert: &avout_testkit::tls::IssuedCert| {
        mine.clone()
            .with_identity_pem(cert.cert_pem.clone(), cert.key_pem.clone())
            .unwrap()
    };
    assert!(
        matches!(
            refused(&connect, with(&stranger)).await,
            TlsRefusal::ClientCertificateRefused { .. }
        ),
        "the server refuses a client certificate of another CA"
    );
    let expired = ca.issue(&ca.client("old").validity(Validity::Expired));
    assert_eq!(
        refused(&connect, with(&expired)).await,
        TlsRefusal::ClientCertificateExpired {
            alert: "certificate_unknown".into()
        },
        "the server refuses an expired client certificate, and the client says why"
    );
    let early = ca.issue(&ca.client("early").validity(Validity::NotYetValid));
    assert!(
        matches!(
            refused(&connect, with(&early)).await,
            TlsRefusal::ClientCertificateNotYetValid { .. }
        ),
        "the server refuses a client certificate not valid yet"
    );
    assert!(
        matches!(
            refused(&connect, mine.clone()).await,
            TlsRefusal::ClientCertificateMissing { .. }
        ),
        "the server wants a client certificate"
    );

    let bad = ZkConfig::new(&connect)
        .with_connect_timeout(CONNECT)
        .with_tls(client_tls(&other));
    match Client::connect(bad).await {
        Err(Error::TlsRefused { reason, .. }) => assert_eq!(*reason, TlsRefusal::UnknownIssuer),
        other => panic!("the managed client reports the refusal: {other:?}"),
    }
    server.stop().unwrap();
}

/// A server presenting an expired certificate, then one not valid yet: refused by the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_certificate_out_of_its_validity_is_refused() {
    let ca = TestCa::new("test CA");
    for (validity, want) in [
        (Validity::Expired, TlsRefusal::CertificateExpired),
        (Validity::NotYetValid, TlsRefusal::CertificateNotYetValid),
    ] {
        let cert = ca.issue(&ca.server().validity(validity));
        let server = start(ZkServer::builder().tls(ca.server_tls_with(&cert)));
        assert_eq!(refused(&secure(&server), client_tls(&ca)).await, want);
        server.stop().unwrap();
    }
}

/// A server certificate naming another host: refused with hostname verification, accepted
/// without; and a connect string whose first server refuses connects to the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_host_is_refused_unless_hostnames_are_not_verified() {
    let ca = TestCa::new("test CA");
    let cert = ca.issue(&ca.server().hosts(&["zk.example"]));
    let elsewhere = start(
        ZkServer::builder()
            .tls(ca.server_tls_with(&cert))
            .force_sync(false),
    );
    let connect = secure(&elsewhere);
    assert_eq!(
        refused(&connect, client_tls(&ca)).await,
        TlsRefusal::WrongHost {
            host: "127.0.0.1".into(),
            presented: vec!["zk.example".into()],
        }
    );
    let lax = ZkConfig::new(&connect)
        .with_connect_timeout(CONNECT)
        .with_tls(client_tls(&ca).without_hostname_verification());
    let zk = ZkClient::connect(&lax)
        .await
        .expect("without hostname verification the CA's signature suffices");
    assert!(zk.exists("/").await.unwrap().is_some());

    let good = start(ZkServer::builder().tls(ca.server_tls()).force_sync(false));
    let both = ZkConfig::new(format!("{connect},{}", secure(&good)))
        .with_connect_timeout(CONNECT)
        .with_tls(client_tls(&ca));
    let zk = ZkClient::connect(&both)
        .await
        .expect("one refusing server of two does not fail the connect");
    zk.create("/reached", b"", &CreateMode::Persistent.into())
        .await
        .unwrap();
}

/// A server that asks for no client certificate accepts a client without one; the same
/// client on the plaintext port of a TLS server is not mistaken for a refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_client_authentication_the_ca_alone_suffices() {
    let ca = TestCa::new("test CA");
    let server = start(
        ZkServer::builder()
            .tls(ca.server_tls().client_auth(ClientAuth::None))
            .force_sync(false),
    );
    let tls = TlsConfig::from_pem(ca.cert_pem()).unwrap();
    let config = ZkConfig::new(secure(&server))
        .with_connect_timeout(CONNECT)
        .with_tls(tls.clone());
    let zk = ZkClient::connect(&config).await.expect("connects");
    assert!(zk.exists("/").await.unwrap().is_some());

    let plaintext = ZkConfig::new(server.connect_string())
        .with_connect_timeout(Duration::from_secs(2))
        .with_tls(tls);
    match ZkClient::connect(&plaintext).await {
        Err(Error::Unreachable { .. }) => {}
        other => panic!("TLS to a plaintext port cannot connect: {other:?}"),
    }
}
