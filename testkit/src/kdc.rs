//! A Kerberos KDC on loopback, for GSSAPI tests: MIT Kerberos (Debian's `krb5-kdc`,
//! `krb5-admin-server` and `krb5-user`), a realm of its own in a temporary directory, on a
//! free port, killed and removed on drop.
//!
//! Everything the realm needs is a file in that directory: `krb5.conf` (the realm, its KDC
//! at `127.0.0.1:PORT`, no DNS and no reverse lookups, so `zookeeper/localhost` stays what it
//! says), `kdc.conf`, the database, keytabs and credential caches. Tools run with
//! `KRB5_CONFIG` and `KRB5_KDC_PROFILE` pointing there; a client process of the realm needs
//! the same `KRB5_CONFIG` and a `KRB5CCNAME` ([`Kdc::client_env`]).
//!
//! ```no_run
//! use avout_testkit::kdc::Kdc;
//! use avout_testkit::server::ZkServer;
//!
//! let kdc = Kdc::start()?;
//! let server = ZkServer::builder().kerberos(kdc.service("zookeeper/localhost")?).start()?;
//! let app = kdc.principal("app")?;
//! let ccache = kdc.dir().join("app.ccache");
//! kdc.kinit("app", &app, &ccache)?;
//! // a client with KRB5_CONFIG and KRB5CCNAME from kdc.client_env(&ccache) authenticates
//! // with GSSAPI to localhost:PORT as app@AVOUT.TEST
//! # Ok::<(), avout_testkit::server::TestkitError>(())
//! ```

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::server::{ServerKerberos, TestkitError};

/// The realm every [`Kdc`] serves.
pub const REALM: &str = "AVOUT.TEST";

/// How long the KDC may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A running KDC; see the [module docs](self).
#[derive(Debug)]
pub struct Kdc {
    dir: TempDir,
    port: u16,
    child: Mutex<Option<Child>>,
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> TestkitError {
    let context = context.into();
    move |source| TestkitError::Io { context, source }
}

impl Kdc {
    /// Makes the realm and starts its KDC.
    ///
    /// Fails with [`TestkitError::ToolMissing`] if MIT Kerberos is not installed.
    pub fn start() -> Result<Kdc, TestkitError> {
        let dir = tempfile::Builder::new()
            .prefix("avout-kdc-")
            .tempdir()
            .map_err(io("creating the KDC's directory"))?;
        let port = crate::server::free_port()?;
        let d = dir.path().display();
        let krb5 = format!(
            "[libdefaults]\n    default_realm = {REALM}\n    dns_lookup_realm = false\n    \
             dns_lookup_kdc = false\n    dns_canonicalize_hostname = false\n    rdns = false\n    \
             udp_preference_limit = 1\n[realms]\n    {REALM} = {{\n        kdc = 127.0.0.1:{port}\n    \
             }}\n[domain_realm]\n    localhost = {REALM}\n"
        );
        let kdc = format!(
            "[kdcdefaults]\n    kdc_ports = {port}\n    kdc_tcp_ports = {port}\n[realms]\n    {REALM} = \
             {{\n        database_name = {d}/principal\n        key_stash_file = {d}/stash\n        \
             acl_file = {d}/kadm5.acl\n    }}\n[logging]\n    kdc = FILE:{d}/kdc.log\n"
        );
        for (name, text) in [
            ("krb5.conf", krb5),
            ("kdc.conf", kdc),
            ("kadm5.acl", String::new()),
        ] {
            let path = dir.path().join(name);
            fs::write(&path, text).map_err(io(format!("writing {}", path.display())))?;
        }
        let kdc = Kdc {
            dir,
            port,
            child: Mutex::new(None),
        };
        kdc.tool(
            "kdb5_util",
            &["create", "-s", "-r", REALM, "-P", "avout-master-key"],
        )?;
        let child = kdc
            .command("krb5kdc")
            .args(["-n", "-r", REALM])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(missing("krb5kdc"))?;
        *kdc.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
        kdc.wait_listening()?;
        Ok(kdc)
    }

    /// The directory holding the realm's files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The realm's `krb5.conf`.
    pub fn krb5_conf(&self) -> PathBuf {
        self.dir().join("krb5.conf")
    }

    /// Adds `name@REALM` with a random key, and returns its keytab.
    pub fn principal(&self, name: &str) -> Result<PathBuf, TestkitError> {
        let keytab = self
            .dir()
            .join(format!("{}.keytab", name.replace(['/', '@'], "_")));
        let principal = format!("{name}@{REALM}");
        self.tool(
            "kadmin.local",
            &["-r", REALM, "-q", &format!("addprinc -randkey {principal}")],
        )?;
        let ktadd = format!("ktadd -k {} {principal}", keytab.display());
        self.tool("kadmin.local", &["-r", REALM, "-q", &ktadd])?;
        Ok(keytab)
    }

    /// A service principal `name` (as `zookeeper/localhost`) with its keytab, for a server's
    /// [`kerberos`](crate::server::ZkServerBuilder::kerberos).
    pub fn service(&self, name: &str) -> Result<ServerKerberos, TestkitError> {
        Ok(ServerKerberos {
            keytab: self.principal(name)?,
            principal: format!("{name}@{REALM}"),
            krb5_conf: self.krb5_conf(),
        })
    }

    /// Gets `name`'s ticket-granting ticket with its `keytab` into the credential cache
    /// `ccache` (a file).
    pub fn kinit(&self, name: &str, keytab: &Path, ccache: &Path) -> Result<(), TestkitError> {
        let cache = format!("FILE:{}", ccache.display());
        let keytab = keytab.display().to_string();
        let principal = format!("{name}@{REALM}");
        self.tool("kinit", &["-k", "-t", &keytab, "-c", &cache, &principal])
    }

    /// The environment a client process of this realm needs, with its credentials in
    /// `ccache`: `KRB5_CONFIG` and `KRB5CCNAME`.
    pub fn client_env(&self, ccache: &Path) -> Vec<(String, String)> {
        vec![
            ("KRB5_CONFIG".into(), self.krb5_conf().display().to_string()),
            ("KRB5CCNAME".into(), format!("FILE:{}", ccache.display())),
        ]
    }

    fn command(&self, tool: &str) -> Command {
        // Debian puts the KDC's tools in /usr/sbin, which not every PATH holds.
        let sbin = Path::new("/usr/sbin").join(tool);
        let mut command = Command::new(if sbin.exists() { sbin } else { tool.into() });
        command
            .env("KRB5_CONFIG", self.krb5_conf())
            .env("KRB5_KDC_PROFILE", self.dir().join("kdc.conf"))
            .current_dir(self.dir());
        command
    }

    /// Runs a Kerberos tool to its end; fails with its output if it fails.
    fn tool(&self, tool: &str, args: &[&str]) -> Result<(), TestkitError> {
        let out = self
            .command(tool)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(missing(tool))?;
        if out.status.success() {
            return Ok(());
        }
        Err(TestkitError::Io {
            context: format!("{tool} {}", args.join(" ")),
            source: std::io::Error::other(format!(
                "{}: {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )),
        })
    }

    fn wait_listening(&self) -> Result<(), TestkitError> {
        let deadline = Instant::now() + START_TIMEOUT;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if Instant::now() >= deadline {
                return Err(TestkitError::Io {
                    context: format!("waiting for the KDC on {addr}"),
                    source: std::io::Error::from(std::io::ErrorKind::TimedOut),
                });
            }
            thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }
}

/// The error for a tool that could not be run: missing, or another I/O failure.
fn missing(tool: &str) -> impl FnOnce(std::io::Error) -> TestkitError + '_ {
    move |source| match source.kind() {
        std::io::ErrorKind::NotFound => TestkitError::ToolMissing {
            tool: tool.to_owned(),
            install: "apt-get install -y krb5-kdc krb5-admin-server krb5-user",
        },
        _ => io(format!("running {tool}"))(source),
    }
}

impl Drop for Kdc {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // Both fail only if the child was already reaped, which `take` rules out.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
