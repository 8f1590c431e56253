//! SASL authentication of a session (features `sasl-digest-md5`, `sasl-gssapi`): [`Sasl`].
//!
//! zookeeper-client runs the exchange right after the session is established, on every
//! connection of the session. A server that refuses it (ZooKeeper's
//! `SASLAuthenticationProvider` with a JAAS `Server` section) answers `AUTHFAILED` and closes
//! the session, which [`ZkClient::connect`](super::ZkClient::connect) reports as
//! [`Error::SaslRefused`], at once rather than after the connect timeout. For GSSAPI, the
//! connect first asks Kerberos for this process's ticket to the servers' principal, so a
//! missing ticket or an unknown principal is named too, before any server is dialled.

use std::fmt;
use std::time::Duration;

use zookeeper_client as zk;

use crate::{Error, Result};

/// A SASL mechanism and its credentials.
///
/// ```
/// # #[cfg(feature = "sasl-digest-md5")] {
/// use avout::zk::{Sasl, ZkConfig};
/// let config = ZkConfig::new("127.0.0.1:2181").with_sasl(Sasl::digest_md5("app", "secret"));
/// assert!(!format!("{config:?}").contains("secret"));
/// # }
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sasl {
    /// DIGEST-MD5 with a user and password of the server's JAAS `Server` section
    /// (`user_NAME="PASSWORD"` of `DigestLoginModule`).
    #[cfg(feature = "sasl-digest-md5")]
    DigestMd5 {
        /// The user.
        user: String,
        /// The password; never shown by `Debug`.
        password: String,
    },
    /// GSSAPI (Kerberos) with the ticket in the process's credential cache (`kinit`,
    /// `KRB5CCNAME`): this client gets no ticket of its own.
    #[cfg(feature = "sasl-gssapi")]
    Gssapi {
        /// The primary of the servers' principal (Java's `zookeeper.sasl.client.username`),
        /// `zookeeper` by default.
        service: String,
        /// The instance of the servers' principal; `None` for the host of the connect
        /// string being dialled.
        hostname: Option<String>,
    },
}

impl fmt::Debug for Sasl {
    /// Never shows a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "sasl-digest-md5")]
            Sasl::DigestMd5 { user, .. } => f
                .debug_struct("DigestMd5")
                .field("user", user)
                .finish_non_exhaustive(),
            #[cfg(feature = "sasl-gssapi")]
            Sasl::Gssapi { service, hostname } => f
                .debug_struct("Gssapi")
                .field("service", service)
                .field("hostname", hostname)
                .finish(),
        }
    }
}

impl Sasl {
    /// DIGEST-MD5 as `user` with `password`.
    #[cfg(feature = "sasl-digest-md5")]
    pub fn digest_md5(user: impl Into<String>, password: impl Into<String>) -> Sasl {
        Sasl::DigestMd5 {
            user: user.into(),
            password: password.into(),
        }
    }

    /// GSSAPI to servers whose principal is `zookeeper/HOST` (HOST: the host dialled).
    ///
    /// ```
    /// # #[cfg(feature = "sasl-gssapi")] {
    /// let sasl = avout::zk::Sasl::gssapi();
    /// assert_eq!(sasl.mechanism(), "GSSAPI");
    /// # }
    /// ```
    #[cfg(feature = "sasl-gssapi")]
    pub fn gssapi() -> Sasl {
        Sasl::Gssapi {
            service: "zookeeper".to_owned(),
            hostname: None,
        }
    }

    /// The mechanism, as SASL names it.
    pub fn mechanism(&self) -> &'static str {
        match self {
            #[cfg(feature = "sasl-digest-md5")]
            Sasl::DigestMd5 { .. } => "DIGEST-MD5",
            #[cfg(feature = "sasl-gssapi")]
            Sasl::Gssapi { .. } => "GSSAPI",
        }
    }

    /// Who authenticates to whom: the user (DIGEST-MD5), or the servers' principal asked for
    /// (GSSAPI: `SERVICE/HOST`, HOST the given one or the host of `connect`'s first server).
    ///
    /// ```
    /// # #[cfg(feature = "sasl-digest-md5")] {
    /// assert_eq!(avout::zk::Sasl::digest_md5("app", "pw").principal("zk1:2181"), "app");
    /// # }
    /// # #[cfg(feature = "sasl-gssapi")] {
    /// assert_eq!(avout::zk::Sasl::gssapi().principal("zk1:2181,zk2:2181"), "zookeeper/zk1");
    /// # }
    /// ```
    pub fn principal(&self, connect: &str) -> String {
        let _ = connect;
        match self {
            #[cfg(feature = "sasl-digest-md5")]
            Sasl::DigestMd5 { user, .. } => user.clone(),
            #[cfg(feature = "sasl-gssapi")]
            Sasl::Gssapi { service, hostname } => {
                let host = hostname.clone().or_else(|| {
                    super::config::servers(connect)
                        .into_iter()
                        .next()
                        .map(|server| server.host)
                });
                format!("{service}/{}", host.unwrap_or_default())
            }
        }
    }

    /// The error for a refusal, `reason` in the server's or Kerberos' words.
    pub(super) fn refused(&self, connect: &str, reason: impl Into<String>) -> Error {
        Error::SaslRefused(Box::new(crate::SaslRefusal {
            servers: connect.to_owned(),
            mechanism: self.mechanism().to_owned(),
            principal: self.principal(connect),
            reason: reason.into(),
        }))
    }

    /// Checks, before connecting, what can be checked without a server: for GSSAPI, that
    /// Kerberos gives this process credentials and a ticket for the servers' principal.
    /// zookeeper-client starts its GSSAPI exchange only once connected, and when Kerberos
    /// fails it there, it counts a connection loss and tries again until the connect times
    /// out: this names the reason instead. DIGEST-MD5 has nothing to check.
    pub(super) async fn ready(&self, connect: &str, timeout: Duration) -> Result<()> {
        match self {
            #[cfg(feature = "sasl-digest-md5")]
            Sasl::DigestMd5 { .. } => {
                let _ = (connect, timeout);
                Ok(())
            }
            #[cfg(feature = "sasl-gssapi")]
            Sasl::Gssapi { .. } => {
                let principal = self.principal(connect);
                let target = principal.replacen('/', "@", 1);
                // Kerberos blocks on the KDC; a stuck KDC is waited for no longer than a connect.
                let ticket = tokio::task::spawn_blocking(move || kerberos_ticket(&target));
                match tokio::time::timeout(timeout, ticket).await {
                    Ok(Ok(Ok(()))) => Ok(()),
                    Ok(Ok(Err(reason))) => Err(self.refused(connect, reason)),
                    Ok(Err(joined)) => Err(self.refused(connect, joined.to_string())),
                    Err(_elapsed) => Err(self.refused(
                        connect,
                        format!("Kerberos gave no ticket for {principal} within {timeout:?}"),
                    )),
                }
            }
        }
    }

    /// zookeeper-client's options for the same mechanism.
    pub(super) fn zk_options(&self) -> zk::SaslOptions {
        match self {
            #[cfg(feature = "sasl-digest-md5")]
            Sasl::DigestMd5 { user, password } => {
                zk::SaslOptions::digest_md5(user.clone(), password.clone()).into()
            }
            #[cfg(feature = "sasl-gssapi")]
            Sasl::Gssapi { service, hostname } => {
                let options = zk::SaslOptions::gssapi().with_username(service.clone());
                match hostname {
                    Some(hostname) => options.with_hostname(hostname.clone()).into(),
                    None => options.into(),
                }
            }
        }
    }
}

/// Gets this process's Kerberos credentials and a ticket for `target` (`service@host`), as
/// the GSSAPI exchange will: the reason, in GSSAPI's words, if either fails.
#[cfg(feature = "sasl-gssapi")]
fn kerberos_ticket(target: &str) -> std::result::Result<(), String> {
    use libgssapi::context::{ClientCtx, CtxFlags};
    use libgssapi::credential::{Cred, CredUsage};
    use libgssapi::name::Name;
    use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE, OidSet};

    let mut kerberos = OidSet::new().map_err(|e| e.to_string())?;
    kerberos.add(&GSS_MECH_KRB5).map_err(|e| e.to_string())?;
    let credentials = Cred::acquire(None, None, CredUsage::Initiate, Some(&kerberos))
        .map_err(|e| format!("no Kerberos credentials: {e}"))?;
    let name = Name::new(target.as_bytes(), Some(&GSS_NT_HOSTBASED_SERVICE))
        .map_err(|e| format!("the service name {target}: {e}"))?;
    ClientCtx::new(
        Some(credentials),
        name,
        CtxFlags::GSS_C_MUTUAL_FLAG,
        Some(&GSS_MECH_KRB5),
    )
    .step(None, None)
    .map(drop)
    .map_err(|e| format!("no Kerberos ticket for {target}: {e}"))
}
