//! TLS and SASL for `--zk`: the settings of [`ZkConfig`] on the command line, for every
//! command that takes `--zk` (`run`, `lock hold`, `watch`, `tree`, `bench …`).
//! (`report bench --zk` runs `avout bench` for its figures and passes on `--zk` only.)
//!
//! - `--zk-tls-ca FILE` connects over TLS (ZooKeeper's secure client port), trusting the CA
//!   certificates in `FILE`; `--zk-tls-cert FILE --zk-tls-key FILE` present this client's
//!   certificate; `--zk-tls-no-hostname-check` accepts a server certificate for any host.
//! - `--zk-sasl-user USER` authenticates with SASL DIGEST-MD5; the password is the first line
//!   of `--zk-sasl-password-file FILE`, else `$AVOUT_ZK_SASL_PASSWORD` (never an argument,
//!   which `ps` would show). `--zk-sasl-gssapi` (built with the `gssapi` feature)
//!   authenticates with the process's Kerberos ticket.
//!
//! `avout zk start --tls` makes a test CA and prints the `--zk` flags that reach its servers.
//! A refused certificate or secret ends the command with the error that says which and why
//! (exit status 2).

use std::path::PathBuf;

use avout::zk::{Sasl, TlsConfig, ZkConfig};
use clap::Args;

/// Where `--zk-sasl-user`'s password comes from when no file is given.
const PASSWORD_VAR: &str = "AVOUT_ZK_SASL_PASSWORD";

/// TLS and SASL options beside `--zk`; see the [module docs](self). Commands flatten it
/// boxed, which keeps their options (and the command enums holding them) small.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ZkAuth {
    /// With --zk: connect over TLS (the servers' secure client port), trusting the CA
    /// certificates in this PEM file.
    #[arg(long, value_name = "FILE", requires = "zk")]
    pub(crate) zk_tls_ca: Option<PathBuf>,
    /// With --zk-tls-ca: this client's certificate chain (PEM), for servers that ask for one.
    #[arg(long, value_name = "FILE", requires_all = ["zk_tls_ca", "zk_tls_key"])]
    pub(crate) zk_tls_cert: Option<PathBuf>,
    /// With --zk-tls-cert: its private key (PEM).
    #[arg(long, value_name = "FILE", requires = "zk_tls_cert")]
    pub(crate) zk_tls_key: Option<PathBuf>,
    /// With --zk-tls-ca: accept a server certificate signed by the CA whatever host it names.
    #[arg(long, requires = "zk_tls_ca")]
    pub(crate) zk_tls_no_hostname_check: bool,
    /// With --zk: authenticate with SASL DIGEST-MD5 as this user.
    #[arg(long, value_name = "USER", requires = "zk")]
    pub(crate) zk_sasl_user: Option<String>,
    /// With --zk-sasl-user: the password, the first line of this file [default:
    /// $AVOUT_ZK_SASL_PASSWORD].
    #[arg(long, value_name = "FILE", requires = "zk_sasl_user")]
    pub(crate) zk_sasl_password_file: Option<PathBuf>,
    /// With --zk: authenticate with SASL GSSAPI (Kerberos), with the process's ticket.
    #[cfg(feature = "gssapi")]
    #[arg(long, requires = "zk", conflicts_with = "zk_sasl_user")]
    pub(crate) zk_sasl_gssapi: bool,
}

impl ZkAuth {
    /// A configuration for `connect` with these settings; [`avout::Error::BadArguments`] for
    /// a file that cannot be read or holds no usable PEM, or a missing password.
    pub(crate) fn config(&self, connect: &str) -> Result<ZkConfig, avout::Error> {
        let mut config = ZkConfig::new(connect);
        if let Some(ca) = &self.zk_tls_ca {
            let mut tls = TlsConfig::from_ca_file(ca)?;
            if let (Some(cert), Some(key)) = (&self.zk_tls_cert, &self.zk_tls_key) {
                tls = tls.with_identity_files(cert, key)?;
            }
            if self.zk_tls_no_hostname_check {
                tls = tls.without_hostname_verification();
            }
            config = config.with_tls(tls);
        }
        if let Some(user) = &self.zk_sasl_user {
            config = config.with_sasl(Sasl::digest_md5(user.clone(), self.password()?));
        }
        #[cfg(feature = "gssapi")]
        if self.zk_sasl_gssapi {
            config = config.with_sasl(Sasl::gssapi());
        }
        Ok(config)
    }

    fn password(&self) -> Result<String, avout::Error> {
        let bad = |what: String| avout::Error::BadArguments(what);
        match &self.zk_sasl_password_file {
            Some(file) => std::fs::read_to_string(file)
                .map(|text| text.lines().next().unwrap_or_default().to_owned())
                .map_err(|e| bad(format!("cannot read {}: {e}", file.display()))),
            None => std::env::var(PASSWORD_VAR).map_err(|_| {
                bad(format!(
                    "--zk-sasl-user needs a password: --zk-sasl-password-file FILE, or \
                     ${PASSWORD_VAR}"
                ))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_options_is_plain_zookeeper_and_bad_files_are_refused() {
        let config = ZkAuth::default().config("127.0.0.1:2181").unwrap();
        assert_eq!(config, ZkConfig::new("127.0.0.1:2181"));
        let missing = ZkAuth {
            zk_tls_ca: Some("/nonexistent/ca.pem".into()),
            ..ZkAuth::default()
        };
        assert!(matches!(
            missing.config("h:1"),
            Err(avout::Error::BadArguments(why)) if why.contains("/nonexistent/ca.pem")
        ));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, "s3cret\nignored\n").unwrap();
        let sasl = ZkAuth {
            zk_sasl_user: Some("app".into()),
            zk_sasl_password_file: Some(file),
            ..ZkAuth::default()
        };
        let config = sasl.config("h:1").unwrap();
        assert_eq!(config.sasl, Some(Sasl::digest_md5("app", "s3cret")));
    }
}
