//! SASL authentication of a session (features `sasl-digest-md5`, `sasl-gssapi`): [`Sasl`].
//!
//! zookeeper-client runs the exchange right after the session is established, on every
//! connection of the session. A server that refuses it (ZooKeeper's
//! `SASLAuthenticationProvider` with a JAAS `Server` section) answers `AUTHFAILED` and closes
//! the session, which [`ZkClient::connect`](super::ZkClient::connect) reports as
//! [`Error::SaslRefused`](crate::Error::SaslRefused), at once rather than after the connect
//! timeout.

use std::fmt;

use zookeeper_client as zk;

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

    /// Who the client says it is: the user, or the Kerberos service it asks for.
    pub fn user(&self) -> &str {
        match self {
            #[cfg(feature = "sasl-digest-md5")]
            Sasl::DigestMd5 { user, .. } => user,
            #[cfg(feature = "sasl-gssapi")]
            Sasl::Gssapi { service, .. } => service,
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
