//! TLS on a secure client port and SASL DIGEST-MD5 users: what a server needs for them in
//! `zoo.cfg`, in files beside it and on its command line.
//!
//! - **TLS**: ZooKeeper serves TLS only through Netty (`serverCnxnFactory=…Netty…`), on a
//!   `secureClientPort` of its own; the plain `clientPort` stays, for the readiness check.
//!   Keys and certificates are PEM files (`ssl.keyStore.type=PEM`: the key then the
//!   certificate; `ssl.trustStore.type=PEM`: the CA clients' certificates must chain to).
//!   Debian's `zookeeper.jar` names Netty's transport and handler jars in its manifest but
//!   not `netty-codec.jar`, which Netty's handler needs, so the classpath adds it.
//! - **SASL**: a JAAS file with a `Server` section for `DigestLoginModule` listing the users,
//!   passed as `java.security.auth.login.config`, and ZooKeeper's SASL authentication
//!   provider. A wrong secret is then answered `AUTHFAILED` and the session closed.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use super::JAVA_LIB_DIR;
use super::error::{Result, io_err};

/// Whether a server asks TLS clients for a certificate (ZooKeeper's `ssl.clientAuth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// A client without a certificate, or with one the server does not trust, is refused
    /// (ZooKeeper's default).
    #[default]
    Need,
    /// A certificate is asked for; none is accepted, an untrusted one is refused.
    Want,
    /// No certificate is asked for.
    None,
}

impl ClientAuth {
    fn config_value(self) -> &'static str {
        match self {
            ClientAuth::Need => "need",
            ClientAuth::Want => "want",
            ClientAuth::None => "none",
        }
    }
}

/// TLS on a server's secure client port: what it presents, whom it trusts.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerTls {
    key_store_pem: String,
    trust_store_pem: String,
    client_auth: ClientAuth,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("client_auth", &self.client_auth)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Presents the key and certificate chain in `key_store_pem` (the key first) and trusts
    /// client certificates chaining to a CA of `trust_store_pem`; asks clients for one.
    pub fn new(key_store_pem: impl Into<String>, trust_store_pem: impl Into<String>) -> Self {
        ServerTls {
            key_store_pem: key_store_pem.into(),
            trust_store_pem: trust_store_pem.into(),
            client_auth: ClientAuth::Need,
        }
    }

    /// Sets whether clients are asked for a certificate.
    pub fn client_auth(mut self, client_auth: ClientAuth) -> Self {
        self.client_auth = client_auth;
        self
    }
}

/// A server's Kerberos identity, for SASL GSSAPI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerKerberos {
    /// The keytab holding the service principal's key.
    pub keytab: PathBuf,
    /// The service principal, with its realm (`zookeeper/localhost@AVOUT.TEST`).
    pub principal: String,
    /// The realm's `krb5.conf`.
    pub krb5_conf: PathBuf,
}

/// TLS and SASL, as both builders keep them.
#[derive(Debug, Clone, Default)]
pub(super) struct Security {
    pub(super) tls: Option<ServerTls>,
    /// DIGEST-MD5 users and their passwords.
    pub(super) sasl_users: Vec<(String, String)>,
    pub(super) kerberos: Option<ServerKerberos>,
}

impl Security {
    /// Writes what the server reads into `dir` and returns its `zoo.cfg` lines; with TLS,
    /// `secure_port` is the port to serve it on.
    pub(super) fn configure(&self, dir: &Path, secure_port: Option<u16>) -> Result<String> {
        let mut lines = String::new();
        if let (Some(tls), Some(port)) = (&self.tls, secure_port) {
            let key_store = dir.join("server-key-store.pem");
            let trust_store = dir.join("server-trust-store.pem");
            write(&key_store, &tls.key_store_pem)?;
            write(&trust_store, &tls.trust_store_pem)?;
            lines.push_str(&format!(
                "secureClientPort={port}\n\
                 secureClientPortAddress=127.0.0.1\n\
                 serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
                 ssl.keyStore.location={}\n\
                 ssl.keyStore.type=PEM\n\
                 ssl.trustStore.location={}\n\
                 ssl.trustStore.type=PEM\n\
                 ssl.clientAuth={}\n",
                key_store.display(),
                trust_store.display(),
                tls.client_auth.config_value(),
            ));
        }
        if self.sasl() {
            write(&dir.join("jaas.conf"), &self.jaas())?;
            lines.push_str(
                "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n",
            );
        }
        Ok(lines)
    }

    /// The JVM options the server needs beyond the defaults, given its directory.
    pub(super) fn jvm_options(&self, dir: &Path) -> Vec<String> {
        let mut options = Vec::new();
        if self.sasl() {
            options.push(format!(
                "-Djava.security.auth.login.config={}",
                dir.join("jaas.conf").display()
            ));
        }
        if let Some(kerberos) = &self.kerberos {
            options.push(format!(
                "-Djava.security.krb5.conf={}",
                kerberos.krb5_conf.display()
            ));
        }
        options
    }

    fn sasl(&self) -> bool {
        !self.sasl_users.is_empty() || self.kerberos.is_some()
    }

    /// Jars the server needs beyond the defaults.
    pub(super) fn classpath(&self) -> Vec<String> {
        match self.tls {
            Some(_) => vec![format!("{JAVA_LIB_DIR}/netty-codec.jar")],
            None => Vec::new(),
        }
    }

    /// The JAAS `Server` section: a login module per mechanism.
    fn jaas(&self) -> String {
        let mut modules = String::new();
        if !self.sasl_users.is_empty() {
            let users: String = self
                .sasl_users
                .iter()
                .map(|(user, password)| {
                    format!("\n    user_{user}=\"{}\"", password.replace('"', "\\\""))
                })
                .collect();
            modules.push_str(&format!(
                "    org.apache.zookeeper.server.auth.DigestLoginModule required{users};\n"
            ));
        }
        if let Some(kerberos) = &self.kerberos {
            modules.push_str(&format!(
                "    com.sun.security.auth.module.Krb5LoginModule required\n    useKeyTab=true\n    \
                 keyTab=\"{}\"\n    storeKey=true\n    useTicketCache=false\n    principal=\"{}\";\n",
                kerberos.keytab.display(),
                kerberos.principal
            ));
        }
        format!("Server {{\n{modules}}};\n")
    }
}

fn write(path: &Path, contents: &str) -> Result<()> {
    fs::write(path, contents).map_err(io_err(format!("writing {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jaas_file_lists_every_user() {
        let security = Security {
            tls: None,
            kerberos: None,
            sasl_users: vec![
                ("alice".into(), "s3cret".into()),
                ("bob".into(), "a\"b".into()),
            ],
        };
        assert_eq!(
            security.jaas(),
            "Server {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n    \
             user_alice=\"s3cret\"\n    user_bob=\"a\\\"b\";\n};\n"
        );
    }
}
