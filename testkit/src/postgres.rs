//! A real PostgreSQL server on loopback, for tests: what [`ZkServer`](crate::server::ZkServer)
//! is for ZooKeeper.
//!
//! [`PgServer::start`] runs Debian's PostgreSQL (`apt-get install -y postgresql`; binaries in
//! `/usr/lib/postgresql/<version>/bin`, the newest version found is used): `initdb` into a
//! fresh temporary directory (user `avout`, trust authentication, UTF-8), then `postgres` on
//! `127.0.0.1` with a free port, its unix socket in that directory, `fsync` off (a test
//! server: speed over durability), logging to `pg.log` there. Readiness is PostgreSQL's own
//! answer (`pg_isready`, polled every 50 ms for up to 30 s); a server that exits first fails
//! the start with the tail of its log (a start whose port another process took is tried again
//! on a new one, up to three times). Drop stops it (`SIGINT`, PostgreSQL's fast shutdown,
//! then `SIGKILL` if it lingers) and removes the directory.
//!
//! PostgreSQL refuses to run as root. Run as root (as CI does), the server runs as the
//! system user [`PG_USER`], made with `useradd` if missing, and owns its directory.
//!
//! Every call blocks the calling thread (as the ZooKeeper servers' do).

use std::fs;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// Where Debian's `postgresql` package installs its versions' binaries.
pub const PG_LIB_DIR: &str = "/usr/lib/postgresql";
/// The system user a server started by root runs as.
pub const PG_USER: &str = "avout-pg";
/// The database user (superuser) and database a test connects as and to.
pub const PG_ROLE: &str = "avout";

const POLL: Duration = Duration::from_millis(50);
const START_TIMEOUT: Duration = Duration::from_secs(30);
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
const LOG_TAIL_LINES: usize = 25;
/// How many free ports a start tries when another process took the one chosen.
const PORT_ATTEMPTS: usize = 3;

/// What can go wrong starting a PostgreSQL test server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// No PostgreSQL binaries are installed.
    #[error(
        "no PostgreSQL under {PG_LIB_DIR}/*/bin; install it with `apt-get install -y postgresql`"
    )]
    Missing,
    /// A step (`initdb`, `useradd`, `pg_isready`) failed.
    #[error("{step} failed ({status}): {output}")]
    Step {
        /// The step.
        step: String,
        /// How it exited.
        status: ExitStatus,
        /// What it printed.
        output: String,
    },
    /// The server exited before it accepted connections.
    #[error(
        "postgres on 127.0.0.1:{port} exited ({status}) before serving; the end of its log:\n{log_tail}"
    )]
    Exited {
        /// Its port.
        port: u16,
        /// How it exited.
        status: ExitStatus,
        /// The last lines of its log.
        log_tail: String,
    },
    /// The server did not accept connections in time (it is stopped).
    #[error(
        "postgres on 127.0.0.1:{port} was not serving after {START_TIMEOUT:?}; the end of its log:\n{log_tail}"
    )]
    NotServing {
        /// Its port.
        port: u16,
        /// The last lines of its log.
        log_tail: String,
    },
    /// A file, process or socket operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: io::Error,
    },
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> PgError {
    let context = context.into();
    move |source| PgError::Io { context, source }
}

/// The newest installed version's `bin` directory.
fn bin_dir() -> Result<PathBuf, PgError> {
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir(PG_LIB_DIR)
        .map_err(|_| PgError::Missing)?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or(PgError::Missing)
}

/// The uid and gid to run as: ours, or [`PG_USER`]'s (made if missing) when we are root.
fn run_as() -> Result<Option<(u32, u32)>, PgError> {
    // SAFETY: geteuid has no preconditions.
    #[allow(unsafe_code)]
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Ok(None);
    }
    if lookup_user().is_none() {
        let out = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                PG_USER,
            ])
            .output()
            .map_err(io_err("running useradd"))?;
        // Another test may have made it meanwhile.
        if !out.status.success() && lookup_user().is_none() {
            return Err(PgError::Step {
                step: format!("useradd {PG_USER}"),
                status: out.status,
                output: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
    }
    Ok(lookup_user())
}

fn lookup_user() -> Option<(u32, u32)> {
    let out = Command::new("id").arg(PG_USER).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| -> Option<u32> {
        let rest = text.split(&format!("{name}=")).nth(1)?;
        rest.split('(').next()?.parse().ok()
    };
    out.status
        .success()
        .then(|| Some((field("uid")?, field("gid")?)))
        .flatten()
}

fn free_port() -> Result<u16, PgError> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io_err("choosing a port"))?;
    Ok(l.local_addr().map_err(io_err("choosing a port"))?.port())
}

fn chown_tree(path: &Path, uid: u32, gid: u32) -> Result<(), PgError> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .map_err(io_err(format!("chown {}", path.display())))?;
    if path.is_dir() {
        for e in fs::read_dir(path).map_err(io_err(format!("listing {}", path.display())))? {
            let e = e.map_err(io_err("listing"))?;
            chown_tree(&e.path(), uid, gid)?;
        }
    }
    Ok(())
}

fn log_tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// One PostgreSQL server on `127.0.0.1`, with a free port and a temporary data directory;
/// stopped and removed on drop. See the [module docs](self).
///
/// ```no_run
/// let pg = avout_testkit::postgres::PgServer::start()?;
/// // "host=127.0.0.1 port=PORT user=avout dbname=avout", for tokio-postgres
/// println!("{}", pg.connect_string());
/// # Ok::<(), avout_testkit::postgres::PgError>(())
/// ```
#[derive(Debug)]
pub struct PgServer {
    port: u16,
    child: Option<Child>,
    tmp: TempDir,
}

impl PgServer {
    /// Makes a cluster and starts the server on a free port; waits until it accepts
    /// connections. Errors: [`PgError::Missing`] without PostgreSQL, [`PgError::Exited`],
    /// [`PgError::NotServing`], [`PgError::Step`], [`PgError::Io`].
    pub fn start() -> Result<PgServer, PgError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match PgServer::start_once() {
                // Another process took the free port before postgres bound it: choose again.
                Err(PgError::Exited { log_tail, .. })
                    if attempt < PORT_ATTEMPTS && log_tail.contains("already in use") => {}
                other => return other,
            }
        }
    }

    fn start_once() -> Result<PgServer, PgError> {
        let bin = bin_dir()?;
        let user = run_as()?;
        let tmp = tempfile::Builder::new()
            .prefix("avout-pg-")
            .tempdir()
            .map_err(io_err("making a temporary directory"))?;
        let dir = tmp.path().to_owned();
        let data = dir.join("data");
        if let Some((uid, gid)) = user {
            chown_tree(tmp.path(), uid, gid)?;
        }
        let command = |name: &str| {
            let mut cmd = Command::new(bin.join(name));
            cmd.current_dir(&dir).stdin(Stdio::null());
            if let Some((uid, gid)) = user {
                cmd.uid(uid).gid(gid);
            }
            cmd
        };
        let out = command("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", PG_ROLE, "--auth=trust", "-E", "UTF8", "--no-sync"])
            .output()
            .map_err(io_err("running initdb"))?;
        if !out.status.success() {
            return Err(PgError::Step {
                step: "initdb".into(),
                status: out.status,
                output: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        let port = free_port()?;
        let log_path = dir.join("pg.log");
        let log = fs::File::create(&log_path).map_err(io_err("creating pg.log"))?;
        let log_err = log.try_clone().map_err(io_err("duplicating pg.log"))?;
        if let Some((uid, gid)) = user {
            chown_tree(&log_path, uid, gid)?;
        }
        let mut postgres = command("postgres");
        postgres
            .arg("-D")
            .arg(&data)
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(&dir)
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .stdout(log)
            .stderr(log_err);
        let child = crate::tied::spawn(postgres).map_err(io_err("spawning postgres"))?;
        let mut server = PgServer {
            port,
            child: Some(child),
            tmp,
        };
        server.wait_serving(&bin, &log_path)?;
        let out = command("createdb")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                PG_ROLE,
                PG_ROLE,
            ])
            .output()
            .map_err(io_err("running createdb"))?;
        if !out.status.success() {
            return Err(PgError::Step {
                step: "createdb".into(),
                status: out.status,
                output: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        Ok(server)
    }

    fn wait_serving(&mut self, bin: &Path, log: &Path) -> Result<(), PgError> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let child = self.child.as_mut().expect("started");
            if let Some(status) = child.try_wait().map_err(io_err("waiting for postgres"))? {
                return Err(PgError::Exited {
                    port: self.port,
                    status,
                    log_tail: log_tail(log),
                });
            }
            let ready = Command::new(bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .status()
                .map_err(io_err("running pg_isready"))?;
            if ready.success() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(PgError::NotServing {
                    port: self.port,
                    log_tail: log_tail(log),
                });
            }
            thread::sleep(POLL);
        }
    }

    /// The port it listens on (on `127.0.0.1`).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its temporary directory (data, socket, `pg.log`).
    pub fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// A `tokio-postgres` configuration string for it: `host=127.0.0.1 port=PORT user=avout
    /// dbname=avout`.
    ///
    /// ```no_run
    /// # let pg = avout_testkit::postgres::PgServer::start().unwrap();
    /// assert!(pg.connect_string().contains("host=127.0.0.1"));
    /// ```
    pub fn connect_string(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user={PG_ROLE} dbname={PG_ROLE}",
            self.port
        )
    }

    /// Stops it now (drop does the same): a fast shutdown, then a kill.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SAFETY: kill with a valid signal on our own child's pid.
        #[allow(unsafe_code)]
        let _ = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            thread::sleep(POLL);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails, never skips, when PostgreSQL cannot start.
    #[test]
    fn starts_serves_and_stops() {
        let pg = PgServer::start().unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}"));
        let port = pg.port();
        let bin = bin_dir().unwrap();
        let ok = Command::new(bin.join("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let dir = pg.dir().to_owned();
        pg.stop();
        assert!(!dir.exists(), "directory removed");
        let down = Command::new(bin.join("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
            .status()
            .unwrap();
        assert!(!down.success(), "stopped");
    }
}
