//! A certificate authority made by the test (feature `tls`), and the certificates it issues:
//! for servers and clients, current, expired or not yet valid, naming the hosts a test wants.
//!
//! Keys are ECDSA P-256 (rcgen's default), in PKCS#8 PEM, which both rustls and ZooKeeper's
//! PEM key store (`ssl.keyStore.type=PEM`) read.
//!
//! ```no_run
//! use avout_testkit::server::ZkServer;
//! use avout_testkit::tls::TestCa;
//!
//! let ca = TestCa::new("test CA");
//! let server = ZkServer::builder().tls(ca.server_tls()).start()?;
//! let client = ca.issue(&ca.client("app"));
//! // connect to server.secure_connect_string() trusting ca.cert_pem(),
//! // presenting client.cert_pem and client.key_pem
//! # Ok::<(), avout_testkit::server::TestkitError>(())
//! ```

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, date_time_ymd,
};

use crate::server::ServerTls;

/// A self-signed CA that issues certificates.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

/// When a certificate is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// From 2000 to 2100.
    Current,
    /// During 2000 only.
    Expired,
    /// From 2090 on.
    NotYetValid,
}

/// What a certificate should say; from [`TestCa::server`] or [`TestCa::client`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertSpec {
    /// The subject's common name.
    pub common_name: String,
    /// The subject alternative names: IP addresses and DNS names.
    pub hosts: Vec<String>,
    /// When it is valid.
    pub validity: Validity,
    /// For a server (`serverAuth`) rather than a client (`clientAuth`).
    pub server: bool,
}

impl CertSpec {
    /// The same certificate for other hosts.
    pub fn hosts(mut self, hosts: &[&str]) -> CertSpec {
        self.hosts = hosts.iter().map(|h| (*h).to_owned()).collect();
        self
    }

    /// The same certificate valid at another time.
    pub fn validity(mut self, validity: Validity) -> CertSpec {
        self.validity = validity;
        self
    }
}

/// A certificate and its private key, as PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedCert {
    /// The certificate.
    pub cert_pem: String,
    /// Its private key (PKCS#8).
    pub key_pem: String,
}

impl IssuedCert {
    /// The key then the certificate in one PEM: ZooKeeper's PEM key store.
    pub fn bundle_pem(&self) -> String {
        format!("{}{}", self.key_pem, self.cert_pem)
    }
}

impl TestCa {
    /// A new CA named `name`, with a fresh key.
    ///
    /// # Panics
    /// If rcgen cannot make a key or sign (it can always, for these parameters).
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::CrlSign,
        ];
        params.not_before = date_time_ymd(2000, 1, 1);
        params.not_after = date_time_ymd(2100, 1, 1);
        let key = KeyPair::generate().expect("rcgen makes an ECDSA key");
        let cert = params.self_signed(&key).expect("rcgen self-signs a CA");
        TestCa {
            issuer: Issuer::new(params, key),
            cert_pem: cert.pem(),
        }
    }

    /// The CA's certificate: what clients and servers trust.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A current server certificate for `127.0.0.1` and `localhost`.
    pub fn server(&self) -> CertSpec {
        CertSpec {
            common_name: "zookeeper".to_owned(),
            hosts: vec!["127.0.0.1".to_owned(), "localhost".to_owned()],
            validity: Validity::Current,
            server: true,
        }
    }

    /// A current client certificate for `name`.
    pub fn client(&self, name: &str) -> CertSpec {
        CertSpec {
            common_name: name.to_owned(),
            hosts: Vec::new(),
            validity: Validity::Current,
            server: false,
        }
    }

    /// Issues a certificate as `spec` says.
    ///
    /// # Panics
    /// If a host is neither an IP address nor a valid DNS name.
    pub fn issue(&self, spec: &CertSpec) -> IssuedCert {
        let mut params = CertificateParams::new(spec.hosts.clone())
            .unwrap_or_else(|e| panic!("bad host in {:?}: {e}", spec.hosts));
        params
            .distinguished_name
            .push(DnType::CommonName, spec.common_name.as_str());
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![if spec.server {
            ExtendedKeyUsagePurpose::ServerAuth
        } else {
            ExtendedKeyUsagePurpose::ClientAuth
        }];
        let (from, to) = match spec.validity {
            Validity::Current => ((2000, 1, 1), (2100, 1, 1)),
            Validity::Expired => ((2000, 1, 1), (2001, 1, 1)),
            Validity::NotYetValid => ((2090, 1, 1), (2100, 1, 1)),
        };
        params.not_before = date_time_ymd(from.0, from.1, from.2);
        params.not_after = date_time_ymd(to.0, to.1, to.2);
        let key = KeyPair::generate().expect("rcgen makes an ECDSA key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("rcgen signs with the CA's key");
        IssuedCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    /// A server's TLS presenting a certificate from [`issue`](Self::issue)`(&self.server())`
    /// and trusting client certificates of this CA.
    pub fn server_tls(&self) -> ServerTls {
        self.server_tls_with(&self.issue(&self.server()))
    }

    /// A server's TLS presenting `cert` and trusting client certificates of this CA.
    pub fn server_tls_with(&self, cert: &IssuedCert) -> ServerTls {
        ServerTls::new(cert.bundle_pem(), self.cert_pem.clone())
    }
}
