//! [`Connector`]: the options of a connection, the connect string, and how a session is
//! established (or re-established) on a [`SimServer`](super::SimServer).
//!
//! A connect string names hosts; each is looked up among the simulated servers started in
//! this simulation, in order. None there: with [`Connector::with_fail_eagerly`] the connect
//! fails with `NoHosts`, else it keeps looking (a server may start meanwhile) until the
//! session timeout has passed, and fails with `Timeout`, as the real client does.

use std::time::Duration;

use avout::zk::convert::to_zk_error;
use avout::Coordination;

use super::path::Chroot;
use super::server::{self, Found};
use super::session::{give_up_after, Session};
use super::types::{SessionInfo, Version};
use super::{Client, Error, Result};

/// The real client's default session timeout.
const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// How often a connect looks for a server that is not there yet.
const RETRY: Duration = Duration::from_millis(100);

/// One host of a connect string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
}

/// The hosts and the root of a connect string (`[tcp://|tcp+tls://]host[:port],…[/chroot]`),
/// with the real client's errors.
pub(crate) fn parse_endpoints(s: &str) -> Result<(Vec<Endpoint>, Chroot)> {
    let mut chroot = None;
    let mut endpoints = Vec::new();
    for part in s.rsplit(',') {
        let mut hostport = match part
            .strip_prefix("tcp://")
            .or_else(|| part.strip_prefix("tcp+tls://"))
        {
            Some(rest) => rest,
            None if part.is_empty() => {
                return Err(match chroot {
                    None => Error::BadArguments(&"empty connect string"),
                    Some(_) => Error::BadArguments(&"invalid address"),
                });
            }
            None => part,
        };
        if chroot.is_none() {
            let mut root = Chroot::default();
            if let Some(i) = hostport.find('/') {
                root = Chroot::new(&hostport[i..])?;
                hostport = &hostport[..i];
            }
            chroot = Some(root);
        }
        let (host, port) =
            parse_address(hostport).ok_or(Error::BadArguments(&"invalid address"))?;
        endpoints.push(Endpoint {
            host: host.to_owned(),
            port,
        });
    }
    endpoints.reverse();
    Ok((endpoints, chroot.unwrap_or_default()))
}

/// `host[:port]` or `[v6][:port]`; the port defaults to 2181.
fn parse_address(s: &str) -> Option<(&str, u16)> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let close = rest.rfind(']')?;
        let after = &rest[close + 1..];
        let port = match after.strip_prefix(':') {
            Some(port) => port,
            None if after.is_empty() => "",
            None => return None,
        };
        (&rest[..close], port)
    } else {
        match s.rfind(':') {
            Some(i) => (&s[..i], &s[i + 1..]),
            None => (s, ""),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        "" => 2181,
        port => port.parse::<u16>().ok().filter(|p| *p != 0)?,
    };
    Some((host, port))
}

/// Options for connecting; made by [`Client::connector`].
///
/// ```
/// # async fn demo() -> Result<(), avout_zookeeper_client::Error> {
/// use std::time::Duration;
/// let client = avout_zookeeper_client::Client::connector()
///     .with_session_timeout(Duration::from_secs(10))
///     .with_auth("digest", b"app:secret")
///     .connect("zk1:2181,zk2:2181/app")
///     .await?;
/// # let _ = client;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Connector {
    #[cfg(feature = "tls")]
    tls: Option<super::TlsOptions>,
    #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
    sasl: Option<super::SaslOptions>,
    authes: Vec<(String, Vec<u8>)>,
    session: Option<SessionInfo>,
    readonly: bool,
    detached: bool,
    fail_eagerly: bool,
    server_version: Version,
    session_timeout: Duration,
    connection_timeout: Duration,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("session", &self.session)
            .field("readonly", &self.readonly)
            .field("detached", &self.detached)
            .field("fail_eagerly", &self.fail_eagerly)
            .field("server_version", &self.server_version)
            .field("session_timeout", &self.session_timeout)
            .field("connection_timeout", &self.connection_timeout)
            .finish()
    }
}

impl Connector {
    pub(crate) fn new() -> Self {
        Connector {
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
            sasl: None,
            authes: Vec::new(),
            session: None,
            readonly: false,
            detached: false,
            fail_eagerly: false,
            server_version: Version(u32::MAX, u32::MAX, u32::MAX),
            session_timeout: Duration::ZERO,
            connection_timeout: Duration::ZERO,
        }
    }

    /// The session timeout to ask the server for (6 s by default); the server grants one
    /// within its bounds ([`SimServer::session_timeouts`](super::SimServer::session_timeouts)).
    ///
    /// ```
    /// let c = avout_zookeeper_client::Client::connector().with_session_timeout(std::time::Duration::from_secs(10));
    /// # let _ = c;
    /// ```
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// See [`with_session_timeout`](Self::with_session_timeout).
    #[deprecated(since = "0.11.0", note = "use Connector::with_session_timeout instead")]
    pub fn session_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.session_timeout = timeout;
        self
    }

    /// How long a silent connection lasts before it counts as lost (2/5 of the session
    /// timeout by default). The simulated network tells a client at once that its connection
    /// broke, so this only bounds nothing here.
    ///
    /// ```
    /// let c = avout_zookeeper_client::Client::connector().with_connection_timeout(std::time::Duration::from_secs(2));
    /// # let _ = c;
    /// ```
    pub fn with_connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// See [`with_connection_timeout`](Self::with_connection_timeout).
    #[deprecated(
        since = "0.11.0",
        note = "use Connector::with_connection_timeout instead"
    )]
    pub fn connection_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.connection_timeout = timeout;
        self
    }

    /// Whether a read-only session is acceptable. The simulated servers have no read-only
    /// mode: sessions are always read-write.
    ///
    /// ```
    /// let c = avout_zookeeper_client::Client::connector().with_readonly(true);
    /// # let _ = c;
    /// ```
    pub fn with_readonly(mut self, readonly: bool) -> Self {
        self.readonly = readonly;
        self
    }

    /// See [`with_readonly`](Self::with_readonly).
    #[deprecated(since = "0.11.0", note = "use Connector::with_readonly instead")]
    pub fn readonly(&mut self, readonly: bool) -> &mut Self {
        self.readonly = readonly;
        self
    }

    /// An identity to add to the session when it is established (`digest`, `user:password`).
    ///
    /// ```
    /// let c = avout_zookeeper_client::Client::connector().with_auth("digest", b"bob:secret");
    /// # let _ = c;
    /// ```
    pub fn with_auth(mut self, scheme: &str, auth: &[u8]) -> Self {
        self.authes.push((scheme.to_owned(), auth.to_vec()));
        self
    }

    /// See [`with_auth`](Self::with_auth).
    #[deprecated(since = "0.11.0", note = "use Connector::with_auth instead")]
    pub fn auth(&mut self, scheme: String, auth: Vec<u8>) -> &mut Self {
        self.authes.push((scheme, auth));
        self
    }

    /// A session to take up again (one that outlived its clients: see
    /// [`with_detached`](Self::with_detached)).
    ///
    /// ```
    /// # fn demo(client: avout_zookeeper_client::Client) {
    /// let c = avout_zookeeper_client::Client::connector().with_session(client.into_session());
    /// # let _ = c;
    /// # }
    /// ```
    pub fn with_session(mut self, session: SessionInfo) -> Self {
        self.session = Some(session);
        self
    }

    /// See [`with_session`](Self::with_session).
    #[deprecated(since = "0.11.0", note = "use Connector::with_session instead")]
    pub fn session(&mut self, session: SessionInfo) -> &mut Self {
        self.session = Some(session);
        self
    }

    /// The server's version, so that the client sends what it understands (before 3.5, a
    /// create's reply carries no [`Stat`](super::Stat)).
    ///
    /// ```
    /// let c = avout_zookeeper_client::Client::connector().with_server_version(3, 4, 14);
    /// # let _ = c;
    /// ```
    pub fn with_server_version(mut self, major: u32, minor: u32, patch: u32) -> Self {
        self.server_version = Version(major, minor, patch);
        self
    }

    /// See [`with_server_version`](Self::with_server_version).
    #[deprecated(since = "0.11.0", note = "use Connector::with_server_version instead")]
    pub fn server_version(&mut self, major: u32, minor: u32, patch: u32) -> &mut Self {
        self.server_version = Version(major, minor, patch);
        self
    }

    /// Leaves the session open when the last client is dropped: the service expires it after
    /// its timeout unless [`with_session`](Self::with_session) takes it up first.
    ///
    /// ```
    /// let c = avout_zookeeper_client::Client::connector().with_detached();
    /// # let _ = c;
    /// ```
    pub fn with_detached(mut self) -> Self {
        self.detached = true;
        self
    }

    /// See [`with_detached`](Self::with_detached).
    #[deprecated(since = "0.11.0", note = "use Connector::with_detached instead")]
    pub fn detached(&mut self) -> &mut Self {
        self.detached = true;
        self
    }

    /// TLS options. There is no TLS handshake in the simulation: the connection is the
    /// simulated one, whatever certificates the options hold.
    ///
    /// ```
    /// use avout_zookeeper_client::{Client, TlsOptions};
    /// let c = Client::connector().with_tls(TlsOptions::new());
    /// # let _ = c;
    /// ```
    #[cfg(feature = "tls")]
    pub fn with_tls(mut self, options: super::TlsOptions) -> Self {
        self.tls = Some(options);
        self
    }

    /// See [`with_tls`](Self::with_tls).
    #[cfg(feature = "tls")]
    #[deprecated(since = "0.11.0", note = "use Connector::with_tls instead")]
    pub fn tls(&mut self, options: super::TlsOptions) -> &mut Self {
        self.tls = Some(options);
        self
    }

    /// SASL options. No SASL mechanism runs in the simulation: the session is established
    /// without it (and gets no SASL identity).
    ///
    /// ```
    /// # #[cfg(feature = "sasl-digest-md5")]
    /// # {
    /// use avout_zookeeper_client::{Client, SaslOptions};
    /// let c = Client::connector().with_sasl(SaslOptions::digest_md5("bob", "secret"));
    /// # let _ = c;
    /// # }
    /// ```
    #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
    pub fn with_sasl(mut self, options: impl Into<super::SaslOptions>) -> Self {
        self.sasl = Some(options.into());
        self
    }

    /// See [`with_sasl`](Self::with_sasl).
    #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
    #[deprecated(since = "0.11.0", note = "use Connector::with_sasl instead")]
    pub fn sasl(&mut self, options: impl Into<super::SaslOptions>) -> &mut Self {
        self.sasl = Some(options.into());
        self
    }

    /// Fails at once with `NoHosts` when no host of the connect string answers, instead of
    /// trying again until the session timeout.
    ///
    /// ```
    /// let c = avout_zookeeper_client::Client::connector().with_fail_eagerly();
    /// # let _ = c;
    /// ```
    pub fn with_fail_eagerly(mut self) -> Self {
        self.fail_eagerly = true;
        self
    }

    /// See [`with_fail_eagerly`](Self::with_fail_eagerly).
    #[deprecated(since = "0.11.0", note = "use Connector::with_fail_eagerly instead")]
    pub fn fail_eagerly(&mut self) -> &mut Self {
        self.fail_eagerly = true;
        self
    }

    /// Connects as [`connect`](Self::connect) does: `tcp+tls://` hosts and plain ones alike
    /// reach the simulated server.
    ///
    /// ```
    /// # async fn demo() -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::{Client, TlsOptions};
    /// let client = Client::connector()
    ///     .with_tls(TlsOptions::new())
    ///     .secure_connect("tcp+tls://zk1:2281")
    ///     .await?;
    /// # let _ = client;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tls")]
    pub async fn secure_connect(self, cluster: &str) -> Result<Client> {
        self.connect(cluster).await
    }

    /// Connects to the ensemble at `cluster` (`host:port,…[/chroot]`; a host may carry
    /// `tcp://` or `tcp+tls://`).
    ///
    /// Errors: `NoHosts` when no host answers and [`with_fail_eagerly`](Self::with_fail_eagerly)
    /// is on; `Timeout` when none answered within the session timeout; `SessionExpired` when
    /// the session to take up is gone; `AuthFailed` when an identity is refused;
    /// `BadArguments` for a malformed connect string.
    ///
    /// ```
    /// # async fn demo() -> Result<(), avout_zookeeper_client::Error> {
    /// let client = avout_zookeeper_client::Client::connector().connect("zk1:2181/app").await?;
    /// # let _ = client;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect(self, cluster: &str) -> Result<Client> {
        let (endpoints, chroot) = parse_endpoints(cluster)?;
        if let Some(session) = &self.session {
            if session.is_readonly() {
                return Err(Error::UnexpectedError(format!(
                    "can't reestablish readonly and hence local session {}",
                    session.id()
                )));
            }
        }
        let requested = if self.session_timeout.is_zero() {
            DEFAULT_SESSION_TIMEOUT
        } else {
            self.session_timeout
        };
        // A session to take up must be reached before it would expire on the client.
        let patience = match self.session {
            Some(_) => give_up_after(requested),
            None => requested,
        };
        let found = self.find(&endpoints, patience).await?;
        let (min, max) = found.settings.session_timeouts;
        let timeout = requested.clamp(min, max);
        let sim = match &self.session {
            Some(session) => found
                .zk
                .resume(avout::SessionId(session.id().0))
                .map_err(|e| to_zk_error(&e))?,
            None => found.zk.connect_with_timeout(timeout),
        };
        found.connected(&sim);
        let info = SessionInfo {
            id: super::SessionId(sim.session().id.0),
            readonly: false,
        };
        let timeout = sim.session().timeout;
        let session = Session::new(found.zk.clone(), sim, self.detached);
        let client = Client::new(chroot, self.server_version, session, info, timeout);
        // The identities go first on the new session, as the real client sends them with its
        // connect request; a refused one fails the connect.
        let auths: Vec<_> = self
            .authes
            .iter()
            .map(|(scheme, auth)| client.auth(scheme, auth))
            .collect();
        for added in futures::future::join_all(auths).await {
            added?;
        }
        Ok(client)
    }

    /// The first host of `endpoints` a server answers at, looking again every [`RETRY`] until
    /// `patience` has passed (or once, failing eagerly).
    async fn find(&self, endpoints: &[Endpoint], patience: Duration) -> Result<Found> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            if let Some(found) = endpoints
                .iter()
                .find_map(|e| server::lookup(&e.host, e.port))
            {
                return Ok(found);
            }
            if self.fail_eagerly {
                return Err(Error::NoHosts);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Timeout);
            }
            tokio::time::sleep(RETRY.min(deadline - tokio::time::Instant::now())).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_strings_parse_as_the_real_client_parses_them() {
        let (endpoints, chroot) =
            parse_endpoints("zk1:2181,tcp://zk2,tcp+tls://[::1]:2182/app/x").unwrap();
        let hosts: Vec<_> = endpoints
            .iter()
            .map(|e| (e.host.as_str(), e.port))
            .collect();
        assert_eq!(hosts, [("zk1", 2181), ("zk2", 2181), ("::1", 2182)]);
        assert_eq!(chroot.path(), "/app/x");
        assert_eq!(
            parse_endpoints("").unwrap_err(),
            Error::BadArguments(&"empty connect string")
        );
        assert_eq!(
            parse_endpoints("zk1:0").unwrap_err(),
            Error::BadArguments(&"invalid address")
        );
        assert_eq!(
            parse_endpoints("a,,b").unwrap_err(),
            Error::BadArguments(&"invalid address")
        );
        assert!(parse_endpoints("zk1/relative//").is_err());
    }
}
