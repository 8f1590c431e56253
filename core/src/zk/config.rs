//! How to reach an ensemble: [`ZkConfig`].

use std::time::Duration;

use crate::Acl;

#[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
use super::Sasl;
#[cfg(feature = "tls")]
use super::TlsConfig;

/// How to reach a ZooKeeper ensemble.
///
/// ```
/// use std::time::Duration;
/// use avout::{Acl, zk::ZkConfig};
///
/// let config = ZkConfig::new("10.0.0.1:2181,10.0.0.2:2181,10.0.0.3:2181/my-app")
///     .with_session_timeout(Duration::from_secs(6))
///     .with_digest("app", "secret")
///     .with_default_acl(Acl::creator_all());
/// assert_eq!(config.session_timeout, Duration::from_secs(6));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkConfig {
    /// Comma-separated `host:port` list, optionally followed by a chroot path (`/my-app`) under
    /// which every path of the session lives. The chroot node must exist.
    pub connect: String,
    /// The session timeout to ask for; the server bounds it to between 2 and 20 ticks.
    pub session_timeout: Duration,
    /// How long [`ZkClient::connect`](super::ZkClient::connect) tries before failing with
    /// [`Error::Unreachable`](crate::Error::Unreachable).
    pub connect_timeout: Duration,
    /// Authentication sent when the session is established: (scheme, credentials).
    pub auth: Vec<(String, Vec<u8>)>,
    /// The ACL of nodes created without an explicit one.
    pub default_acl: Vec<Acl>,
    /// TLS to the servers' secure client ports (feature `tls`); `None` for plaintext. With
    /// TLS, every server of the connect string is dialled over TLS except those written
    /// `tcp://host:port`.
    #[cfg(feature = "tls")]
    pub tls: Option<TlsConfig>,
    /// SASL authentication of the session (features `sasl-digest-md5`, `sasl-gssapi`).
    #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
    pub sasl: Option<Sasl>,
}

impl ZkConfig {
    /// A configuration with a 10 s session timeout, a 10 s connect timeout, no
    /// authentication and the open ACL.
    ///
    /// ```
    /// let config = avout::zk::ZkConfig::new("127.0.0.1:2181");
    /// assert_eq!(config.default_acl, avout::Acl::open_unsafe());
    /// ```
    pub fn new(connect: impl Into<String>) -> Self {
        ZkConfig {
            connect: connect.into(),
            session_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            auth: Vec::new(),
            default_acl: Acl::open_unsafe(),
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
            sasl: None,
        }
    }

    /// Sets the session timeout to ask for.
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = avout::zk::ZkConfig::new("127.0.0.1:2181").with_session_timeout(Duration::from_secs(4));
    /// assert_eq!(c.session_timeout.as_secs(), 4);
    /// ```
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Sets how long connecting may take.
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = avout::zk::ZkConfig::new("127.0.0.1:2181").with_connect_timeout(Duration::from_secs(1));
    /// assert_eq!(c.connect_timeout.as_secs(), 1);
    /// ```
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Authenticates the session with ZooKeeper's `digest` scheme as `user:password`.
    ///
    /// ```
    /// let c = avout::zk::ZkConfig::new("127.0.0.1:2181").with_digest("app", "secret");
    /// assert_eq!(c.auth[0], ("digest".to_string(), b"app:secret".to_vec()));
    /// ```
    pub fn with_digest(mut self, user: &str, password: &str) -> Self {
        self.auth
            .push(("digest".into(), format!("{user}:{password}").into_bytes()));
        self
    }

    /// Sets the ACL of nodes created without one.
    ///
    /// ```
    /// let c = avout::zk::ZkConfig::new("127.0.0.1:2181").with_default_acl(avout::Acl::creator_all());
    /// assert_eq!(c.default_acl[0].scheme, "auth");
    /// ```
    pub fn with_default_acl(mut self, acl: Vec<Acl>) -> Self {
        self.default_acl = acl;
        self
    }

    /// Connects over TLS (feature `tls`); see [`TlsConfig`].
    ///
    /// ```
    /// # fn demo(ca_pem: &str) -> avout::Result<()> {
    /// use avout::zk::{TlsConfig, ZkConfig};
    /// let config = ZkConfig::new("zk1:2281").with_tls(TlsConfig::from_pem(ca_pem)?);
    /// assert!(config.tls.is_some());
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "tls")]
    pub fn with_tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Authenticates the session with SASL (features `sasl-digest-md5`, `sasl-gssapi`).
    ///
    /// ```
    /// # #[cfg(feature = "sasl-digest-md5")] {
    /// use avout::zk::{Sasl, ZkConfig};
    /// let config = ZkConfig::new("zk1:2181").with_sasl(Sasl::digest_md5("app", "secret"));
    /// assert_eq!(config.sasl.unwrap().mechanism(), "DIGEST-MD5");
    /// # }
    /// ```
    #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
    pub fn with_sasl(mut self, sasl: Sasl) -> Self {
        self.sasl = Some(sasl);
        self
    }

    /// zookeeper-client's connector with these settings (timeouts, `auth`, TLS, SASL), for
    /// code that talks to ZooKeeper through that crate directly; [`ZkClient::connect`]
    /// connects with it. With TLS, connect with its `secure_connect`, so that servers the
    /// connect string does not mark `tcp://` are dialled over TLS. Fails with
    /// [`Error::BadArguments`](crate::Error::BadArguments) for TLS settings the crate refuses.
    ///
    /// [`ZkClient::connect`]: super::ZkClient::connect
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = avout::zk::ZkConfig::new("127.0.0.1:2181");
    /// let raw = config.connector()?.connect(&config.connect).await?;
    /// println!("session {}", raw.session_id());
    /// # Ok(()) }
    /// ```
    pub fn connector(&self) -> crate::Result<zookeeper_client::Connector> {
        let mut connector = zookeeper_client::Client::connector()
            .with_session_timeout(self.session_timeout)
            .with_connection_timeout(self.connect_timeout);
        for (scheme, credentials) in &self.auth {
            connector = connector.with_auth(scheme, credentials);
        }
        #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
        if let Some(sasl) = &self.sasl {
            connector = connector.with_sasl(sasl.zk_options());
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            connector = connector.with_tls(tls.zk_options()?);
        }
        Ok(connector)
    }
}

/// How a server of a connect string is marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scheme {
    /// `tcp://`: plaintext.
    Tcp,
    /// `tcp+tls://`: TLS.
    TcpTls,
}

/// One server of a connect string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Server {
    pub(super) host: String,
    pub(super) port: u16,
    /// `None` when unmarked (TLS with [`ZkConfig::tls`], plaintext without).
    pub(super) scheme: Option<Scheme>,
}

/// The servers of a connect string as zookeeper-client reads it: `[scheme://]host[:port]`,
/// comma-separated, the host possibly a bracketed IPv6 address, the port 2181 by default,
/// the chroot (from the first `/` after the host) dropped. What does not parse is left out:
/// the connect itself reports it.
#[cfg_attr(
    not(any(feature = "tls", feature = "sasl-gssapi")),
    allow(dead_code, reason = "only TLS and GSSAPI look at single servers")
)]
pub(super) fn servers(connect: &str) -> Vec<Server> {
    let mut servers = Vec::new();
    for part in connect.split(',') {
        let (scheme, address) = match (part.strip_prefix("tcp://"), part.strip_prefix("tcp+tls://"))
        {
            (Some(rest), _) => (Some(Scheme::Tcp), rest),
            (_, Some(rest)) => (Some(Scheme::TcpTls), rest),
            (None, None) => (None, part),
        };
        let address = address.split('/').next().unwrap_or_default();
        let (host, port) = match address.strip_prefix('[') {
            Some(rest) => match rest.split_once(']') {
                Some((host, port)) => (host, port.strip_prefix(':').unwrap_or(port)),
                None => continue,
            },
            None => address.rsplit_once(':').unwrap_or((address, "")),
        };
        let port = if port.is_empty() {
            Some(2181)
        } else {
            port.parse().ok()
        };
        if let (false, Some(port)) = (host.is_empty(), port) {
            servers.push(Server {
                host: host.to_owned(),
                port,
                scheme,
            });
        }
    }
    servers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_of_a_connect_string() {
        let hosts: Vec<_> = servers("a:1,tcp://b:2,tcp+tls://c:3,[::1]:4,d/chroot")
            .into_iter()
            .map(|s| (s.host, s.port, s.scheme))
            .collect();
        assert_eq!(
            hosts,
            vec![
                ("a".to_owned(), 1, None),
                ("b".to_owned(), 2, Some(Scheme::Tcp)),
                ("c".to_owned(), 3, Some(Scheme::TcpTls)),
                ("::1".to_owned(), 4, None),
                ("d".to_owned(), 2181, None),
            ]
        );
        assert!(servers("f:notaport,:7").is_empty());
    }
}
