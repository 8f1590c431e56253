//! What a server is started with: free ports, a temporary directory, `zoo.cfg`, the Java
//! classpath, and the options both builders share.

use std::fs;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::error::{Result, TestkitError, io_err};
use super::security::Security;
use super::{JAVA_LIB_DIR, LOG_TAIL_LINES};

/// Ports that were free a moment ago. All listeners are held until every port is chosen, so
/// the ports differ from each other.
pub(super) fn free_ports(n: usize) -> Result<Vec<u16>> {
    Ok(reserve_ports(n)?.ports)
}

/// `n` free ports on `127.0.0.1`, held bound until the value is dropped: what this process
/// binds meanwhile (a relay's listener on port 0) cannot be given one of them. Drop it just
/// before the servers that take them start.
pub(super) fn reserve_ports(n: usize) -> Result<Reserved> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<io::Result<Vec<_>>>()
        .map_err(io_err("choosing a free port on 127.0.0.1"))?;
    let ports = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<io::Result<Vec<_>>>()
        .map_err(io_err("choosing a free port on 127.0.0.1"))?;
    Ok(Reserved {
        ports,
        _held: listeners,
    })
}

/// Ports chosen and still held ([`reserve_ports`]).
pub(super) struct Reserved {
    pub(super) ports: Vec<u16>,
    _held: Vec<TcpListener>,
}

/// Fails with [`TestkitError::PortInUse`] if `port` cannot be bound now.
pub(super) fn check_port_free(port: u16) -> Result<()> {
    match TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => Err(TestkitError::PortInUse { port }),
        Err(e) => Err(io_err(format!("binding 127.0.0.1:{port}"))(e)),
    }
}

/// The last lines of a log file (or why it could not be read).
pub(super) fn log_tail(path: &Path) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
            if tail.is_empty() {
                "(the log is empty)".to_owned()
            } else {
                tail.join("\n")
            }
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// The classpath of a server: ZooKeeper's jar (whose manifest names its dependencies) and a
/// logging backend. `slf4j-simple` at `warn` puts the reason for a failed start into `zk.log`,
/// which the errors quote; `slf4j-nop` is the fallback, which keeps the log quiet.
pub(super) fn classpath() -> Result<(String, Vec<String>)> {
    let lib = Path::new(JAVA_LIB_DIR);
    let jar = lib.join("zookeeper.jar");
    if !jar.exists() {
        return Err(TestkitError::JarMissing { path: jar });
    }
    let simple = lib.join("slf4j-simple.jar");
    let nop = lib.join("slf4j-nop.jar");
    let (logger, props) = if simple.exists() {
        (
            Some(simple),
            vec![
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn".to_owned(),
                "-Dorg.slf4j.simpleLogger.showDateTime=true".to_owned(),
            ],
        )
    } else if nop.exists() {
        (Some(nop), Vec::new())
    } else {
        (None, Vec::new())
    };
    let mut props = props;
    // TTL and container nodes are reaped by a timer, a minute by default: a tenth of a second
    // lets a test see a TTL node go within its patience.
    props.push(format!(
        "-Dznode.container.checkIntervalMs={CONTAINER_CHECK_MS}"
    ));
    // A member whose election notifications go unanswered (a partition, a killed peer)
    // doubles its wait between rounds up to a minute by default: past a test's patience.
    props.push(format!(
        "-Dzookeeper.fastleader.maxNotificationInterval={MAX_NOTIFICATION_MS}"
    ));
    let mut cp = jar.display().to_string();
    if let Some(logger) = logger {
        cp.push(':');
        cp.push_str(&logger.display().to_string());
    }
    Ok((cp, props))
}

/// How often a test server looks for TTL and container nodes to delete, milliseconds.
pub(super) const CONTAINER_CHECK_MS: u64 = 100;

/// The longest wait between a test member's leader-election rounds, milliseconds
/// (ZooKeeper's default is 60,000).
pub(super) const MAX_NOTIFICATION_MS: u64 = 2_000;

/// The `zoo.cfg` lines shared by standalone servers and ensemble members; with
/// `extendedTypesEnabled`, so that TTL nodes can be created.
pub(super) fn base_config(data_dir: &Path, client_port: u16, force_sync: bool) -> String {
    format!(
        "tickTime=500\n\
         maxSessionTimeout=60000\n\
         dataDir={}\n\
         clientPort={client_port}\n\
         clientPortAddress=127.0.0.1\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=*\n\
         maxClientCnxns=0\n\
         extendedTypesEnabled=true\n\
         forceSync={}\n",
        data_dir.display(),
        if force_sync { "yes" } else { "no" },
    )
}

/// The settings [`ZkServerBuilder`](super::ZkServerBuilder) and
/// [`ZkEnsembleBuilder`](super::ZkEnsembleBuilder) share, with their defaults.
#[derive(Debug, Clone)]
pub(super) struct ProcessOptions {
    pub(super) force_sync: bool,
    pub(super) base_dir: Option<PathBuf>,
    pub(super) own_process_group: bool,
    pub(super) security: Security,
}

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            force_sync: true,
            base_dir: None,
            own_process_group: false,
            security: Security::default(),
        }
    }
}

impl ProcessOptions {
    /// A fresh temporary directory named `prefix…`, inside the base directory if one is set.
    pub(super) fn temp_dir(&self, prefix: &str) -> Result<TempDir> {
        let mut builder = tempfile::Builder::new();
        builder.prefix(prefix);
        match &self.base_dir {
            Some(base) => {
                fs::create_dir_all(base).map_err(io_err(format!("creating {}", base.display())))?;
                builder.tempdir_in(base)
            }
            None => builder.tempdir(),
        }
        .map_err(io_err("creating a temporary directory"))
    }
}

/// The builder methods for [`ProcessOptions`], written once for both builders (each has an
/// `options: ProcessOptions` field). `$server` names what the builder starts, for the docs.
macro_rules! process_options {
    ($server:literal) => {
        #[doc = concat!("Whether ", $server, " fsyncs its transaction log before acknowledging a")]
        /// write (ZooKeeper's `forceSync`; default `true`, ZooKeeper's own default). Turning it
        /// off makes writes much faster and loses nothing a test cares about unless the machine
        /// crashes.
        pub fn force_sync(mut self, force_sync: bool) -> Self {
            self.options.force_sync = force_sync;
            self
        }

        #[doc = concat!("Creates the temporary directory of ", $server, " inside `dir` (default:")]
        /// the system's temporary directory, `$TMPDIR` or `/tmp`).
        pub fn base_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
            self.options.base_dir = Some(dir.into());
            self
        }

        #[doc = concat!("Starts ", $server, " in a process group of its own, so that a Ctrl-C at")]
        /// the terminal does not reach it (default `false`, so that it does: a test run
        /// interrupted with Ctrl-C then leaves no server behind). Set it for servers that will
        /// be detached ([`ZkServer::detach`](super::ZkServer::detach),
        /// [`ZkEnsemble::detach`](super::ZkEnsemble::detach)).
        pub fn own_process_group(mut self, own: bool) -> Self {
            self.options.own_process_group = own;
            self
        }

        #[doc = concat!("Serves TLS on a secure client port of ", $server, " too (see")]
        /// `secure_port`), presenting and trusting what `tls` says (for a test CA's:
        /// `TestCa::server_tls`, feature `tls`). The plain client port stays.
        pub fn tls(mut self, tls: super::ServerTls) -> Self {
            self.options.security.tls = Some(tls);
            self
        }

        #[doc = concat!("Lets `user` authenticate to ", $server, " with SASL DIGEST-MD5 and")]
        /// `password` (a JAAS `Server` section of ZooKeeper's `DigestLoginModule`); a client
        /// giving another password is refused. Call once per user.
        pub fn sasl_digest_user(mut self, user: &str, password: &str) -> Self {
            self.options
                .security
                .sasl_users
                .push((user.to_owned(), password.to_owned()));
            self
        }

        #[doc = concat!("Lets clients authenticate to ", $server, " with SASL GSSAPI (Kerberos) as")]
        /// `kerberos` says: its service principal and keytab, and the realm's `krb5.conf`
        /// (for a test KDC's: `Kdc::service`).
        pub fn kerberos(mut self, kerberos: super::ServerKerberos) -> Self {
            self.options.security.kerberos = Some(kerberos);
            self
        }
    };
}
pub(super) use process_options;
