//! Real ZooKeeper servers on loopback, for tests: the role Curator's `TestingServer` and
//! `TestingCluster` play.
//!
//! # Why real servers, and how
//!
//! The simulator predicts reality only if the same test bodies pass on the real thing, so tests
//! start Debian's ZooKeeper 3.8 (`apt-get install -y zookeeper`) themselves: [`ZkServer`] is one
//! standalone server, [`ZkEnsemble`] a quorum of them (three for failover tests). Each server
//! is a `java … QuorumPeerMain <dir>/zoo.cfg` child process (not `zkServer.sh`, which ignores
//! configuration directories) in a fresh temporary directory holding `zoo.cfg`, `data/` and
//! `zk.log`, listening on `127.0.0.1` only.
//!
//! - **Ports** are chosen by binding `127.0.0.1:0` and dropping the listener; an ensemble's ports
//!   are all chosen while every listener is held, so they differ. Another process may still grab
//!   a port before ZooKeeper binds it, so a start whose port was taken is retried on new ports
//!   (unless the port was given explicitly, which fails with [`TestkitError::PortInUse`]).
//! - **Readiness** is ZooKeeper's own answer: the `srvr` four-letter word, polled every 50 ms
//!   for up to 30 s, reports a `Mode:` line (`standalone`, `leader` or `follower`) only once the
//!   server serves requests. A server that exits first fails the start with the tail of its log.
//! - **Short sessions** are allowed: `tickTime=500`, so the minimum session timeout is 1 s and
//!   tests that force an expiry (by [pausing](ZkServer::pause) the server) stay fast.
//! - **Faults** are signals: [`kill`](ZkServer::kill) is `SIGKILL` (a crash: no goodbye to
//!   clients), [`pause`](ZkServer::pause) is `SIGSTOP` (a process frozen past its clients'
//!   session timeouts, like a long GC pause), [`resume`](ZkServer::resume) is `SIGCONT`, and
//!   [`restart`](ZkServer::restart) starts the same configuration on the same port and data
//!   directory, so the data survives.
//! - **Cleanup** happens on drop, also while a failing test unwinds: every process is killed
//!   (stopped ones too) and reaped, and the directory is removed. A test process that is itself
//!   killed (`SIGKILL`) cannot clean up; its servers are left behind.
//! - **Detaching** ([`ZkServer::detach`], [`ZkEnsemble::detach`]) hands the processes over to
//!   someone else (the `avout zk start` command), who stops them later with
//!   [`DetachedZk::stop`].
//!
//! Every call here blocks the calling thread (process and socket I/O from `std`). Async tests
//! may call them directly — starting a server is a one-off before the test body — or through
//! `tokio::task::spawn_blocking` when other tasks must keep running meanwhile (on a
//! current-thread runtime a blocking call freezes every task, including a client's heartbeats).

use std::fs;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tempfile::TempDir;

/// Where Debian's `zookeeper` package installs its jars.
pub const JAVA_LIB_DIR: &str = "/usr/share/java";

/// The main class every server runs, standalone or as an ensemble member.
const MAIN_CLASS: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
/// How often readiness is polled.
const POLL: Duration = Duration::from_millis(50);
/// How long a server may take to serve after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How many fresh sets of ports a start tries when another process took an automatic one.
const PORT_ATTEMPTS: usize = 3;
/// How many lines of a server's log an error quotes.
const LOG_TAIL_LINES: usize = 25;
/// The log line ZooKeeper writes when its port is taken.
const BIND_FAILURE: &str = "Address already in use";

/// What can go wrong starting or controlling a test server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestkitError {
    /// `java` could not be run.
    #[error(
        "cannot run `java` ({source}); install ZooKeeper and a JRE with `apt-get install -y zookeeper`"
    )]
    JavaMissing {
        /// Why spawning `java` failed.
        #[source]
        source: io::Error,
    },
    /// ZooKeeper's jar is not installed.
    #[error("{} is missing; install ZooKeeper with `apt-get install -y zookeeper`", path.display())]
    JarMissing {
        /// The jar that was looked for.
        path: PathBuf,
    },
    /// A port the server needs is taken by another process.
    #[error("port {port} on 127.0.0.1 is already in use")]
    PortInUse {
        /// The port.
        port: u16,
    },
    /// The server process exited before it served.
    #[error("ZooKeeper {server} exited ({status}) before serving; the end of its log:\n{log_tail}")]
    Exited {
        /// Which server (its address, and its id in an ensemble).
        server: String,
        /// How it exited.
        status: ExitStatus,
        /// The last lines of its log.
        log_tail: String,
    },
    /// The server did not serve within the timeout (it is left running; drop stops it).
    #[error(
        "ZooKeeper {server} was not serving after {timeout:?}; the end of its log:\n{log_tail}"
    )]
    NotServing {
        /// Which server.
        server: String,
        /// How long was waited.
        timeout: Duration,
        /// The last lines of its log.
        log_tail: String,
    },
    /// The operation needs a running server, and this one was killed.
    #[error("ZooKeeper {server} is not running")]
    NotRunning {
        /// Which server.
        server: String,
    },
    /// An ensemble needs at least one member.
    #[error("an ensemble needs at least one member")]
    EmptyEnsemble,
    /// A file, directory, socket or signal operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

type Result<T, E = TestkitError> = std::result::Result<T, E>;

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> TestkitError {
    let context = context.into();
    move |source| TestkitError::Io { context, source }
}

/// What a serving server says it is, from the `Mode:` line of `srvr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerMode {
    /// A standalone server.
    Standalone,
    /// The ensemble's leader.
    Leader,
    /// A follower of the leader.
    Follower,
    /// A non-voting observer.
    Observer,
}

impl ServerMode {
    fn parse(srvr: &str) -> Option<ServerMode> {
        let mode = srvr.lines().find_map(|l| l.strip_prefix("Mode:"))?.trim();
        Some(match mode {
            "standalone" => ServerMode::Standalone,
            "leader" => ServerMode::Leader,
            "follower" => ServerMode::Follower,
            "observer" => ServerMode::Observer,
            _ => return None,
        })
    }
}

/// Sends a four-letter word (`srvr`, `cons`, `mntr`, …) to a server and returns its answer.
///
/// Short timeouts keep a paused (stopped) server from blocking the caller: the kernel still
/// accepts the connection, but nobody answers.
pub fn four_letter_word(port: u16, word: &str) -> io::Result<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    stream.set_write_timeout(Some(Duration::from_secs(1)))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// Ports that were free a moment ago. All listeners are held until every port is chosen, so
/// the ports differ from each other.
fn free_ports(n: usize) -> Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<io::Result<Vec<_>>>()
        .map_err(io_err("choosing a free port on 127.0.0.1"))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<io::Result<Vec<_>>>()
        .map_err(io_err("choosing a free port on 127.0.0.1"))
}

/// Fails with [`TestkitError::PortInUse`] if `port` cannot be bound now.
fn check_port_free(port: u16) -> Result<()> {
    match TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => Err(TestkitError::PortInUse { port }),
        Err(e) => Err(io_err(format!("binding 127.0.0.1:{port}"))(e)),
    }
}

/// The last lines of a log file (or why it could not be read).
fn log_tail(path: &Path) -> String {
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
fn classpath() -> Result<(String, Vec<String>)> {
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
    let mut cp = jar.display().to_string();
    if let Some(logger) = logger {
        cp.push(':');
        cp.push_str(&logger.display().to_string());
    }
    Ok((cp, props))
}

/// The `zoo.cfg` lines shared by standalone servers and ensemble members.
fn base_config(data_dir: &Path, client_port: u16, force_sync: bool) -> String {
    format!(
        "tickTime=500\n\
         maxSessionTimeout=60000\n\
         dataDir={}\n\
         clientPort={client_port}\n\
         clientPortAddress=127.0.0.1\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=*\n\
         maxClientCnxns=0\n\
         forceSync={}\n",
        data_dir.display(),
        if force_sync { "yes" } else { "no" },
    )
}

/// A server process's state, behind a mutex so that a shared server (an `Arc<ZkEnsemble>` in
/// a nemesis task) can be killed and restarted while clients run.
#[derive(Debug, Default)]
struct ProcState {
    child: Option<Child>,
    paused: bool,
}

/// One server process: its configuration on disk and, while it runs, the child.
#[derive(Debug)]
struct Proc {
    /// How errors name it: its address, and its id in an ensemble.
    name: String,
    /// Holds `zoo.cfg`, `data/` and `zk.log`.
    dir: PathBuf,
    client_port: u16,
    own_process_group: bool,
    state: Mutex<ProcState>,
}

impl Proc {
    fn new(name: String, dir: PathBuf, client_port: u16, own_process_group: bool) -> Proc {
        Proc {
            name,
            dir,
            client_port,
            own_process_group,
            state: Mutex::default(),
        }
    }

    fn config_path(&self) -> PathBuf {
        self.dir.join("zoo.cfg")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("zk.log")
    }

    fn lock(&self) -> MutexGuard<'_, ProcState> {
        // A panic while holding the lock leaves the state consistent (each field is set in one
        // step), and drop must still kill the child.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the process (it must not be running).
    fn spawn(&self) -> Result<()> {
        let (cp, props) = classpath()?;
        let log = fs::File::create(self.log_path())
            .map_err(io_err(format!("creating {}", self.log_path().display())))?;
        let log_err = log
            .try_clone()
            .map_err(io_err("duplicating the log file handle"))?;
        let mut cmd = Command::new("java");
        cmd.args(&props)
            .arg("-cp")
            .arg(cp)
            .arg(MAIN_CLASS)
            .arg(self.config_path())
            // Stray files a JVM may write (crash dumps) land in the temporary directory.
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        if self.own_process_group {
            // A server meant to outlive its starter must not receive the terminal's Ctrl-C.
            cmd.process_group(0);
        }
        let child = cmd.spawn().map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => TestkitError::JavaMissing { source },
            _ => io_err("spawning java")(source),
        })?;
        *self.lock() = ProcState {
            child: Some(child),
            paused: false,
        };
        Ok(())
    }

    /// Polls `srvr` until the server reports a mode accepted by `ready`, it exits, or the
    /// deadline passes.
    fn wait_serving(&self, deadline: Instant) -> Result<ServerMode> {
        loop {
            if let Some(status) = self.exit_status()? {
                return Err(self.exited(status));
            }
            if let Some(mode) = self.mode() {
                return Ok(mode);
            }
            if Instant::now() >= deadline {
                return Err(TestkitError::NotServing {
                    server: self.name.clone(),
                    timeout: START_TIMEOUT,
                    log_tail: log_tail(&self.log_path()),
                });
            }
            thread::sleep(POLL);
        }
    }

    /// The error for a server that exited while starting: a taken port is named as such.
    fn exited(&self, status: ExitStatus) -> TestkitError {
        let log_tail = log_tail(&self.log_path());
        if log_tail.contains(BIND_FAILURE) {
            return TestkitError::PortInUse {
                port: self.client_port,
            };
        }
        TestkitError::Exited {
            server: self.name.clone(),
            status,
            log_tail,
        }
    }

    /// `Some(status)` once the child has exited (it is reaped), `None` while it runs.
    fn exit_status(&self) -> Result<Option<ExitStatus>> {
        let mut state = self.lock();
        let Some(child) = state.child.as_mut() else {
            return Err(TestkitError::NotRunning {
                server: self.name.clone(),
            });
        };
        let status = child
            .try_wait()
            .map_err(io_err("waiting for the server process"))?;
        if status.is_some() {
            *state = ProcState::default();
        }
        Ok(status)
    }

    fn mode(&self) -> Option<ServerMode> {
        four_letter_word(self.client_port, "srvr")
            .ok()
            .and_then(|s| ServerMode::parse(&s))
    }

    fn pid(&self) -> Option<u32> {
        self.lock().child.as_ref().map(Child::id)
    }

    fn is_running(&self) -> bool {
        let mut state = self.lock();
        let exited = match state.child.as_mut() {
            None => return false,
            // An error from `try_wait` says nothing about the child; keep treating it as running.
            Some(child) => matches!(child.try_wait(), Ok(Some(_))),
        };
        if exited {
            *state = ProcState::default();
        }
        !exited
    }

    fn is_paused(&self) -> bool {
        self.lock().paused
    }

    /// `SIGKILL`s the process, if running, and reaps it.
    fn kill(&self) {
        let mut state = self.lock();
        if let Some(mut child) = state.child.take() {
            if state.paused {
                // SIGKILL ends a stopped process too; continuing it first costs nothing.
                let _ = signal(child.id(), libc::SIGCONT);
            }
            // Both fail only if the child was already reaped, which `take` rules out.
            let _ = child.kill();
            let _ = child.wait();
        }
        state.paused = false;
    }

    fn pause(&self) -> Result<()> {
        let mut state = self.lock();
        let pid = self.running_pid(&state)?;
        signal(pid, libc::SIGSTOP).map_err(io_err(format!("stopping {}", self.name)))?;
        state.paused = true;
        drop(state);
        // The signal is delivered asynchronously; wait until the process is really stopped so
        // the caller's next step (waiting out a session timeout) starts from a frozen server.
        let deadline = Instant::now() + Duration::from_secs(1);
        while process_state(pid) != Some('T') && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    fn resume(&self) -> Result<()> {
        let mut state = self.lock();
        let pid = self.running_pid(&state)?;
        signal(pid, libc::SIGCONT).map_err(io_err(format!("continuing {}", self.name)))?;
        state.paused = false;
        Ok(())
    }

    fn running_pid(&self, state: &ProcState) -> Result<u32> {
        state
            .child
            .as_ref()
            .map(Child::id)
            .ok_or_else(|| TestkitError::NotRunning {
                server: self.name.clone(),
            })
    }

    /// Kills the process if it runs, then starts it again with the same configuration and
    /// data, and waits until it serves.
    fn restart(&self) -> Result<ServerMode> {
        self.kill();
        check_port_free(self.client_port)?;
        self.spawn()?;
        self.wait_serving(Instant::now() + START_TIMEOUT)
    }

    /// Hands the process over: it is no longer killed on drop. A paused process is continued,
    /// since nobody would be left to continue it.
    fn detach(&self) -> Option<DetachedProcess> {
        let mut state = self.lock();
        let child = state.child.take()?;
        if state.paused {
            let _ = signal(child.id(), libc::SIGCONT);
        }
        state.paused = false;
        Some(DetachedProcess {
            pid: child.id(),
            client_port: self.client_port,
            config: self.config_path(),
            log: self.log_path(),
        })
    }
}

/// Sends `sig` to `pid`.
fn signal(pid: u32, sig: libc::c_int) -> io::Result<()> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: kill(2) takes plain integers and touches no memory of ours. Callers only signal
    // processes they own (an unreaped child, so its pid cannot have been reused) or whose
    // command line they have just checked.
    let rc = unsafe { libc::kill(pid, sig) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The state letter of `/proc/PID/stat` (`R`, `S`, `T` stopped, `Z` zombie, …), or `None` if
/// there is no such process.
fn process_state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name in parentheses may itself contain spaces or parentheses.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Builds a [`ZkServer`]; see [`ZkServer::builder`].
#[derive(Debug, Clone)]
pub struct ZkServerBuilder {
    port: Option<u16>,
    force_sync: bool,
    base_dir: Option<PathBuf>,
    own_process_group: bool,
}

impl ZkServerBuilder {
    /// Listens on this client port instead of a free one; a taken port fails the start with
    /// [`TestkitError::PortInUse`].
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Whether the server fsyncs its transaction log before acknowledging a write
    /// (ZooKeeper's `forceSync`; default `true`, ZooKeeper's own default). Turning it off makes
    /// writes much faster and loses nothing a test cares about unless the machine crashes.
    pub fn force_sync(mut self, force_sync: bool) -> Self {
        self.force_sync = force_sync;
        self
    }

    /// Creates the server's temporary directory inside `dir` (default: the system's temporary
    /// directory, `$TMPDIR` or `/tmp`).
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// Starts the server in a process group of its own, so that a Ctrl-C at the terminal does
    /// not reach it (default `false`, so that it does: a test run interrupted with Ctrl-C then
    /// leaves no server behind). Set it for a server that will be [detached](ZkServer::detach).
    pub fn own_process_group(mut self, own: bool) -> Self {
        self.own_process_group = own;
        self
    }

    /// Starts the server and waits until it serves.
    pub fn start(self) -> Result<ZkServer> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let port = match self.port {
                Some(port) => {
                    check_port_free(port)?;
                    port
                }
                None => free_ports(1)?[0],
            };
            match self.start_on(port) {
                // Another process took the port between choosing and binding it: choose again.
                Err(TestkitError::PortInUse { .. })
                    if self.port.is_none() && attempt < PORT_ATTEMPTS => {}
                other => return other,
            }
        }
    }

    fn start_on(&self, port: u16) -> Result<ZkServer> {
        let tmp = make_temp_dir(self.base_dir.as_deref(), "avout-zk-")?;
        let data = tmp.path().join("data");
        fs::create_dir(&data).map_err(io_err(format!("creating {}", data.display())))?;
        let proc = Proc::new(
            format!("server on 127.0.0.1:{port}"),
            tmp.path().to_owned(),
            port,
            self.own_process_group,
        );
        let config = base_config(&data, port, self.force_sync);
        fs::write(proc.config_path(), config)
            .map_err(io_err(format!("writing {}", proc.config_path().display())))?;
        // From here on, dropping the server kills the process and removes the directory.
        let server = ZkServer {
            proc,
            tmp: Some(tmp),
        };
        server.proc.spawn()?;
        server.proc.wait_serving(Instant::now() + START_TIMEOUT)?;
        Ok(server)
    }
}

fn make_temp_dir(base: Option<&Path>, prefix: &str) -> Result<TempDir> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    match base {
        Some(base) => {
            fs::create_dir_all(base).map_err(io_err(format!("creating {}", base.display())))?;
            builder.tempdir_in(base)
        }
        None => builder.tempdir(),
    }
    .map_err(io_err("creating a temporary directory"))
}

/// One standalone ZooKeeper server on `127.0.0.1`, with a free port and a temporary data
/// directory; killed and removed on drop.
///
/// ```no_run
/// use avout_testkit::server::ZkServer;
///
/// let server = ZkServer::start()?;
/// let connect = server.connect_string(); // "127.0.0.1:PORT"
/// // ... connect clients, run the test ...
/// server.kill(); // a crash: clients see connection loss
/// server.restart()?; // same port, same data
/// # Ok::<(), avout_testkit::server::TestkitError>(())
/// ```
///
/// The methods block (see the [module docs](self) for async tests). They take `&self`, so a
/// server can be shared (in an `Arc`) with a task that injects faults.
#[derive(Debug)]
pub struct ZkServer {
    proc: Proc,
    /// `None` once detached: the directory then belongs to whoever took it.
    tmp: Option<TempDir>,
}

impl ZkServer {
    /// Starts a server on a free port with default settings (fsync on) and waits until it
    /// serves.
    pub fn start() -> Result<ZkServer> {
        ZkServer::builder().start()
    }

    /// A builder for a server with a fixed port, fsync off, or another base directory.
    ///
    /// ```no_run
    /// use avout_testkit::server::ZkServer;
    ///
    /// let server = ZkServer::builder().port(24181).force_sync(false).start()?;
    /// assert_eq!(server.connect_string(), "127.0.0.1:24181");
    /// # Ok::<(), avout_testkit::server::TestkitError>(())
    /// ```
    pub fn builder() -> ZkServerBuilder {
        ZkServerBuilder {
            port: None,
            force_sync: true,
            base_dir: None,
            own_process_group: false,
        }
    }

    /// The client connect string, `127.0.0.1:PORT`.
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.proc.client_port)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.proc.client_port
    }

    /// The server's directory (`zoo.cfg`, `data/`, `zk.log`).
    pub fn dir(&self) -> &Path {
        &self.proc.dir
    }

    /// The process id while the server runs.
    pub fn pid(&self) -> Option<u32> {
        self.proc.pid()
    }

    /// Whether the process runs (a paused process runs).
    pub fn is_running(&self) -> bool {
        self.proc.is_running()
    }

    /// Whether the process is paused by [`pause`](Self::pause).
    pub fn is_paused(&self) -> bool {
        self.proc.is_paused()
    }

    /// The server's mode if it answers `srvr` now, `None` if it does not serve.
    pub fn mode(&self) -> Option<ServerMode> {
        self.proc.mode()
    }

    /// Sends a four-letter word (`mntr`, `cons`, `stat`, …) and returns the answer.
    pub fn four_letter_word(&self, word: &str) -> Result<String> {
        four_letter_word(self.proc.client_port, word)
            .map_err(io_err(format!("sending `{word}` to {}", self.proc.name)))
    }

    /// Crashes the server (`SIGKILL`) and waits until the process is gone. Clients see the
    /// connection drop. Does nothing if it is not running.
    pub fn kill(&self) {
        self.proc.kill();
    }

    /// Freezes the server (`SIGSTOP`): connections stay open but nothing is answered, so
    /// clients' sessions expire once it [resumes](Self::resume) after their timeout.
    pub fn pause(&self) -> Result<()> {
        self.proc.pause()
    }

    /// Continues a paused server (`SIGCONT`).
    pub fn resume(&self) -> Result<()> {
        self.proc.resume()
    }

    /// Starts the server again on the same port and data directory (killing it first if it
    /// runs) and waits until it serves. Nodes and sessions persisted before the kill survive.
    pub fn restart(&self) -> Result<()> {
        self.proc.restart().map(drop)
    }

    /// Kills the server and removes its directory now, reporting a failure to remove it
    /// (which [`Drop`] would ignore).
    pub fn stop(mut self) -> Result<()> {
        self.proc.kill();
        match self.tmp.take() {
            Some(tmp) => tmp
                .close()
                .map_err(io_err("removing the server's directory")),
            None => Ok(()),
        }
    }

    /// Lets the server outlive this value: it is no longer killed or removed on drop. Whoever
    /// takes it over stops it with [`DetachedZk::stop`]. A paused server is resumed first.
    ///
    /// Start such a server with [`own_process_group`](ZkServerBuilder::own_process_group), so
    /// that a Ctrl-C meant for its starter does not reach it.
    pub fn detach(mut self) -> DetachedZk {
        let dir = self
            .tmp
            .take()
            .map_or_else(|| self.proc.dir.clone(), TempDir::keep);
        DetachedZk {
            dir,
            connect_string: self.connect_string(),
            processes: self.proc.detach().into_iter().collect(),
        }
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        // The directory (`tmp`) is removed after this, when the fields drop.
        self.proc.kill();
    }
}

/// One member of a [`ZkEnsemble`].
#[derive(Debug)]
pub struct ZkMember {
    id: u32,
    peer_port: u16,
    election_port: u16,
    proc: Proc,
}

impl ZkMember {
    /// The server id (`myid`): the member's index plus one.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.proc.client_port
    }

    /// The port followers use to talk to the leader.
    pub fn peer_port(&self) -> u16 {
        self.peer_port
    }

    /// The leader election port.
    pub fn election_port(&self) -> u16 {
        self.election_port
    }

    /// This member alone as a connect string, `127.0.0.1:PORT`.
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.proc.client_port)
    }

    /// The member's directory (`zoo.cfg`, `data/myid`, `zk.log`).
    pub fn dir(&self) -> &Path {
        &self.proc.dir
    }

    /// The process id while the member runs.
    pub fn pid(&self) -> Option<u32> {
        self.proc.pid()
    }

    /// Whether the process runs (a paused process runs).
    pub fn is_running(&self) -> bool {
        self.proc.is_running()
    }

    /// Whether the process is paused.
    pub fn is_paused(&self) -> bool {
        self.proc.is_paused()
    }

    /// The member's mode if it serves now (it is in a quorum), else `None`.
    pub fn mode(&self) -> Option<ServerMode> {
        self.proc.mode()
    }

    /// Sends a four-letter word (`mntr`, `cons`, `stat`, …) and returns the answer.
    pub fn four_letter_word(&self, word: &str) -> Result<String> {
        four_letter_word(self.proc.client_port, word)
            .map_err(io_err(format!("sending `{word}` to {}", self.proc.name)))
    }
}

/// Builds a [`ZkEnsemble`]; see [`ZkEnsemble::builder`].
#[derive(Debug, Clone)]
pub struct ZkEnsembleBuilder {
    size: usize,
    base_port: Option<u16>,
    force_sync: bool,
    base_dir: Option<PathBuf>,
    own_process_group: bool,
}

impl ZkEnsembleBuilder {
    /// The number of members (default 3).
    pub fn size(mut self, n: usize) -> Self {
        self.size = n;
        self
    }

    /// Gives the members the client ports `port`, `port + 1`, … instead of free ones (peer and
    /// election ports stay free ones).
    pub fn base_port(mut self, port: u16) -> Self {
        self.base_port = Some(port);
        self
    }

    /// ZooKeeper's `forceSync` on every member; see [`ZkServerBuilder::force_sync`].
    pub fn force_sync(mut self, force_sync: bool) -> Self {
        self.force_sync = force_sync;
        self
    }

    /// Creates the ensemble's temporary directory inside `dir`.
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// Starts every member in a process group of its own; see
    /// [`ZkServerBuilder::own_process_group`].
    pub fn own_process_group(mut self, own: bool) -> Self {
        self.own_process_group = own;
        self
    }

    /// Starts every member and waits until each serves (the ensemble has a quorum).
    pub fn start(self) -> Result<ZkEnsemble> {
        if self.size == 0 {
            return Err(TestkitError::EmptyEnsemble);
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.start_once() {
                Err(TestkitError::PortInUse { .. }) if attempt < PORT_ATTEMPTS => {
                    // Peer and election ports are always free ones, so a clash there is worth
                    // a retry even with fixed client ports (which `start_once` checked).
                }
                other => return other,
            }
        }
    }

    fn start_once(&self) -> Result<ZkEnsemble> {
        let n = self.size;
        let client_ports: Vec<u16> = match self.base_port {
            Some(base) => {
                let ports: Vec<u16> = (0..n)
                    .map(|i| {
                        u16::try_from(usize::from(base) + i)
                            .ok()
                            .filter(|&p| p != 0)
                    })
                    .collect::<Option<_>>()
                    .ok_or_else(|| TestkitError::Io {
                        context: format!("{n} client ports from {base}"),
                        source: io::Error::new(io::ErrorKind::InvalidInput, "ports run past 65535"),
                    })?;
                ports.iter().try_for_each(|&p| check_port_free(p))?;
                ports
            }
            None => Vec::new(),
        };
        let free = free_ports(if self.base_port.is_some() {
            2 * n
        } else {
            3 * n
        })?;
        let (peer_ports, rest) = free.split_at(n);
        let (election_ports, rest) = rest.split_at(n);
        let client_ports = if client_ports.is_empty() {
            rest.to_vec()
        } else {
            client_ports
        };

        let tmp = make_temp_dir(self.base_dir.as_deref(), "avout-zk-ensemble-")?;
        let servers: String = (0..n)
            .map(|i| {
                format!(
                    "server.{}=127.0.0.1:{}:{}\n",
                    i + 1,
                    peer_ports[i],
                    election_ports[i]
                )
            })
            .collect();
        let mut members = Vec::with_capacity(n);
        for i in 0..n {
            let id = u32::try_from(i + 1).expect("ensemble sizes fit in u32");
            let dir = tmp.path().join(format!("member-{id}"));
            let data = dir.join("data");
            fs::create_dir_all(&data).map_err(io_err(format!("creating {}", data.display())))?;
            fs::write(data.join("myid"), format!("{id}\n"))
                .map_err(io_err(format!("writing {}/myid", data.display())))?;
            let config = format!(
                "{}initLimit=10\nsyncLimit=5\n{servers}",
                base_config(&data, client_ports[i], self.force_sync)
            );
            let proc = Proc::new(
                format!("member {id} on 127.0.0.1:{}", client_ports[i]),
                dir,
                client_ports[i],
                self.own_process_group,
            );
            fs::write(proc.config_path(), config)
                .map_err(io_err(format!("writing {}", proc.config_path().display())))?;
            members.push(ZkMember {
                id,
                peer_port: peer_ports[i],
                election_port: election_ports[i],
                proc,
            });
        }
        // From here on, dropping the ensemble kills what was started and removes the directory.
        let ensemble = ZkEnsemble {
            members,
            tmp: Some(tmp),
        };
        for member in &ensemble.members {
            member.proc.spawn()?;
        }
        let deadline = Instant::now() + START_TIMEOUT;
        for member in &ensemble.members {
            member.proc.wait_serving(deadline)?;
        }
        Ok(ensemble)
    }
}

/// A ZooKeeper ensemble on `127.0.0.1`: members with free client, peer and election ports and
/// temporary directories; everything killed and removed on drop.
///
/// Members are addressed by index (`0..n`); member `i` has server id `i + 1`.
///
/// ```no_run
/// use avout_testkit::server::ZkEnsemble;
///
/// let zk = ZkEnsemble::start(3)?;
/// let connect = zk.connect_string(); // "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"
/// // ... connect a client; find out which member it talks to ...
/// # let session_id = 0;
/// if let Some(i) = zk.member_of_session(session_id) {
///     zk.kill(i); // the client fails over to another member
///     zk.wait_for_quorum()?;
///     zk.restart(i)?;
/// }
/// # Ok::<(), avout_testkit::server::TestkitError>(())
/// ```
///
/// The methods block (see the [module docs](self) for async tests) and take `&self`, so an
/// ensemble can be shared (in an `Arc`) with a task that injects faults.
#[derive(Debug)]
pub struct ZkEnsemble {
    members: Vec<ZkMember>,
    /// `None` once detached.
    tmp: Option<TempDir>,
}

impl ZkEnsemble {
    /// Starts an `n`-member ensemble (fsync on) and waits until every member serves. A
    /// three-member ensemble takes a second or two.
    pub fn start(n: usize) -> Result<ZkEnsemble> {
        ZkEnsemble::builder().size(n).start()
    }

    /// A builder for other sizes, fixed client ports, fsync off, or another base directory.
    ///
    /// ```no_run
    /// use avout_testkit::server::ZkEnsemble;
    ///
    /// let zk = ZkEnsemble::builder().size(5).force_sync(false).start()?;
    /// assert_eq!(zk.members().len(), 5);
    /// # Ok::<(), avout_testkit::server::TestkitError>(())
    /// ```
    pub fn builder() -> ZkEnsembleBuilder {
        ZkEnsembleBuilder {
            size: 3,
            base_port: None,
            force_sync: true,
            base_dir: None,
            own_process_group: false,
        }
    }

    /// The connect string naming every member, `127.0.0.1:P1,127.0.0.1:P2,…`.
    pub fn connect_string(&self) -> String {
        self.members
            .iter()
            .map(ZkMember::connect_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The members, in index order.
    pub fn members(&self) -> &[ZkMember] {
        &self.members
    }

    /// Member `i`.
    ///
    /// # Panics
    ///
    /// If `i` is not below the ensemble's size.
    pub fn member(&self, i: usize) -> &ZkMember {
        &self.members[i]
    }

    /// The ensemble's directory (one `member-ID/` per member).
    pub fn dir(&self) -> &Path {
        self.members[0]
            .proc
            .dir
            .parent()
            .expect("member directories are inside the ensemble's")
    }

    /// Crashes member `i` (`SIGKILL`) and waits until its process is gone.
    ///
    /// # Panics
    ///
    /// If there is no member `i`.
    pub fn kill(&self, i: usize) {
        self.members[i].proc.kill();
    }

    /// Freezes member `i` (`SIGSTOP`). A frozen leader is replaced once the others notice.
    ///
    /// # Panics
    ///
    /// If there is no member `i`.
    pub fn pause(&self, i: usize) -> Result<()> {
        self.members[i].proc.pause()
    }

    /// Continues member `i` (`SIGCONT`).
    ///
    /// # Panics
    ///
    /// If there is no member `i`.
    pub fn resume(&self, i: usize) -> Result<()> {
        self.members[i].proc.resume()
    }

    /// Starts member `i` again with its configuration and data (killing it first if it runs)
    /// and waits until it serves, which needs a quorum: with too few members running this
    /// fails with [`TestkitError::NotServing`] after 30 s.
    ///
    /// # Panics
    ///
    /// If there is no member `i`.
    pub fn restart(&self, i: usize) -> Result<()> {
        self.members[i].proc.restart().map(drop)
    }

    /// Waits until the ensemble serves: every running, unpaused member reports `leader` or
    /// `follower`, one of them `leader`, and they are a majority of the ensemble. Fails with
    /// [`TestkitError::NotServing`] after 30 s (for instance when a majority is down).
    pub fn wait_for_quorum(&self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        let majority = self.members.len() / 2 + 1;
        loop {
            let live: Vec<&ZkMember> = self
                .members
                .iter()
                .filter(|m| m.is_running() && !m.is_paused())
                .collect();
            let modes: Vec<Option<ServerMode>> = live.iter().map(|m| m.mode()).collect();
            let serving = modes.iter().flatten().count();
            if serving == live.len()
                && serving >= majority
                && modes
                    .iter()
                    .any(|m| matches!(m, Some(ServerMode::Leader | ServerMode::Standalone)))
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let (server, log) = match live.iter().zip(&modes).find(|(_, m)| m.is_none()) {
                    Some((m, _)) => (m.proc.name.clone(), log_tail(&m.proc.log_path())),
                    None => (
                        "ensemble".to_owned(),
                        format!(
                            "{serving} of {} members serve; {majority} are needed",
                            self.members.len()
                        ),
                    ),
                };
                return Err(TestkitError::NotServing {
                    server,
                    timeout: START_TIMEOUT,
                    log_tail: log,
                });
            }
            thread::sleep(POLL);
        }
    }

    /// The index of the member that serves ZooKeeper session `session_id` (the member a client
    /// is connected to), found in each running, unpaused member's `cons` listing; `None` if no
    /// member lists it (for instance while the client reconnects).
    pub fn member_of_session(&self, session_id: i64) -> Option<usize> {
        // ZooKeeper prints session ids as unsigned hex (`Long.toHexString`), unpadded.
        let needle = format!("sid=0x{:x}", session_id as u64);
        self.members.iter().position(|m| {
            m.is_running()
                && !m.is_paused()
                && four_letter_word(m.port(), "cons")
                    .is_ok_and(|cons| lists_session(&cons, &needle))
        })
    }

    /// The index of the current leader, if a running member says it leads.
    pub fn leader(&self) -> Option<usize> {
        self.members
            .iter()
            .position(|m| m.is_running() && !m.is_paused() && m.mode() == Some(ServerMode::Leader))
    }

    /// Lets the ensemble outlive this value: no member is killed or removed on drop. Whoever
    /// takes it over stops it with [`DetachedZk::stop`]. Paused members are resumed first;
    /// killed members are left out.
    ///
    /// Start such an ensemble with [`own_process_group`](ZkEnsembleBuilder::own_process_group).
    pub fn detach(mut self) -> DetachedZk {
        let connect_string = self.connect_string();
        let dir = match self.tmp.take() {
            Some(tmp) => tmp.keep(),
            None => self.dir().to_owned(),
        };
        DetachedZk {
            dir,
            connect_string,
            processes: self
                .members
                .iter()
                .filter_map(|m| m.proc.detach())
                .collect(),
        }
    }
}

/// Whether a `cons` listing has the session `needle` (`sid=0x…`), as a whole field: `sid=0x1`
/// must not match `sid=0x10`.
fn lists_session(cons: &str, needle: &str) -> bool {
    cons.match_indices(needle).any(|(at, _)| {
        matches!(
            cons[at + needle.len()..].chars().next(),
            Some(',' | ')') | None
        )
    })
}

impl Drop for ZkEnsemble {
    fn drop(&mut self) {
        for member in &self.members {
            member.proc.kill();
        }
    }
}

/// Servers that were [detached](ZkServer::detach): they run on, and this record (which
/// serializes, to be kept in a state file) is how they are found and stopped later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetachedZk {
    /// The directory holding every server's configuration, data and log.
    pub dir: PathBuf,
    /// The client connect string naming every server.
    pub connect_string: String,
    /// The server processes.
    pub processes: Vec<DetachedProcess>,
}

/// One process of a [`DetachedZk`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetachedProcess {
    /// Its process id.
    pub pid: u32,
    /// Its client port.
    pub client_port: u16,
    /// Its `zoo.cfg`.
    pub config: PathBuf,
    /// Its log.
    pub log: PathBuf,
}

impl DetachedProcess {
    /// Whether `pid` is still this server: alive (not a zombie) and running `QuorumPeerMain`
    /// with this configuration. A pid alone could have been reused by an unrelated process.
    pub fn is_alive(&self) -> bool {
        let Ok(cmdline) = fs::read(format!("/proc/{}/cmdline", self.pid)) else {
            return false;
        };
        let config = self.config.as_os_str().as_encoded_bytes();
        let mut args = cmdline.split(|&b| b == 0);
        let ours = args.any(|a| a == MAIN_CLASS.as_bytes()) && args.any(|a| a == config);
        ours && !matches!(process_state(self.pid), Some('Z') | None)
    }

    /// The server's mode if it answers `srvr` now.
    pub fn mode(&self) -> Option<ServerMode> {
        four_letter_word(self.client_port, "srvr")
            .ok()
            .and_then(|s| ServerMode::parse(&s))
    }
}

impl DetachedZk {
    /// Kills every process that is still this server (see [`DetachedProcess::is_alive`]),
    /// waits up to 10 s for each to go, and removes the directory. Returns the pids that were
    /// killed.
    pub fn stop(&self) -> Result<Vec<u32>> {
        let mut killed = Vec::new();
        for p in self.processes.iter().filter(|p| p.is_alive()) {
            // SIGKILL ends a stopped (paused) process too, so no SIGCONT is needed.
            signal(p.pid, libc::SIGKILL).map_err(io_err(format!("killing pid {}", p.pid)))?;
            killed.push(p.pid);
        }
        // These are not our children: their new parent reaps them, and until it has, the
        // process is a zombie, which `is_alive` counts as gone.
        let deadline = Instant::now() + Duration::from_secs(10);
        for p in &self.processes {
            while p.is_alive() {
                if Instant::now() >= deadline {
                    return Err(TestkitError::Io {
                        context: format!("waiting for pid {} to exit", p.pid),
                        source: io::Error::from(io::ErrorKind::TimedOut),
                    });
                }
                thread::sleep(POLL);
            }
        }
        match fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(killed),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(killed),
            Err(e) => Err(io_err(format!("removing {}", self.dir.display()))(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether any process (zombies included) has this pid.
    fn pid_exists(pid: u32) -> bool {
        Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn parses_modes_and_session_ids() {
        let srvr = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n";
        assert_eq!(ServerMode::parse(srvr), Some(ServerMode::Follower));
        assert_eq!(
            ServerMode::parse("This ZooKeeper instance is not currently serving requests\n"),
            None
        );
        let cons = " /127.0.0.1:4242[1](queued=0,recved=3,sent=3,sid=0x10000abc,lop=PING)\n";
        assert!(lists_session(cons, "sid=0x10000abc"));
        assert!(!lists_session(cons, "sid=0x10000ab"));
        assert_eq!(
            format!("sid=0x{:x}", -1_i64 as u64),
            "sid=0xffffffffffffffff"
        );
    }

    #[test]
    fn standalone_starts_serves_kills_restarts_and_stops() {
        let server = ZkServer::builder()
            .force_sync(false)
            .start()
            .expect("server starts");
        assert_eq!(server.mode(), Some(ServerMode::Standalone));
        assert_eq!(
            server.connect_string(),
            format!("127.0.0.1:{}", server.port())
        );
        assert!(server.is_running());

        let pid = server.pid().expect("running");
        server.kill();
        assert!(!server.is_running());
        assert!(!pid_exists(pid), "killed process {pid} is reaped");
        assert_eq!(server.mode(), None);
        assert!(matches!(
            server.pause(),
            Err(TestkitError::NotRunning { .. })
        ));

        server.restart().expect("restarts");
        assert_eq!(server.mode(), Some(ServerMode::Standalone));
        assert_ne!(server.pid(), Some(pid));

        let (dir, pid) = (server.dir().to_owned(), server.pid().expect("running"));
        server.stop().expect("stops");
        assert!(!dir.exists());
        assert!(!pid_exists(pid));
    }

    #[test]
    fn pause_freezes_and_resume_continues() {
        let server = ZkServer::builder()
            .force_sync(false)
            .start()
            .expect("server starts");
        server.pause().expect("pauses");
        assert!(server.is_paused() && server.is_running());
        assert_eq!(process_state(server.pid().expect("running")), Some('T'));
        assert_eq!(server.mode(), None, "a frozen server answers nothing");
        server.resume().expect("resumes");
        assert_eq!(server.mode(), Some(ServerMode::Standalone));
    }

    #[test]
    fn drop_kills_the_process_and_removes_the_directory_even_when_paused() {
        let server = ZkServer::builder()
            .force_sync(false)
            .start()
            .expect("server starts");
        let (dir, pid) = (server.dir().to_owned(), server.pid().expect("running"));
        assert!(dir.join("zoo.cfg").exists());
        server.pause().expect("pauses");
        drop(server);
        assert!(!pid_exists(pid), "process {pid} is gone");
        assert!(!dir.exists(), "{} is removed", dir.display());
    }

    #[test]
    fn drop_cleans_up_while_a_test_panics() {
        let mut seen = None;
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let server = ZkServer::builder()
                .force_sync(false)
                .start()
                .expect("server starts");
            seen = Some((server.dir().to_owned(), server.pid().expect("running")));
            panic!("the test fails");
        }));
        assert!(unwound.is_err());
        let (dir, pid) = seen.expect("server started");
        assert!(!pid_exists(pid));
        assert!(!dir.exists());
    }

    #[test]
    fn a_taken_port_is_reported() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binds");
        let port = listener.local_addr().expect("bound").port();
        let err = ZkServer::builder()
            .port(port)
            .start()
            .expect_err("port is taken");
        assert!(
            matches!(err, TestkitError::PortInUse { port: p } if p == port),
            "{err}"
        );
    }

    #[test]
    fn detached_servers_outlive_their_handle_until_stopped() {
        let base = TempDir::new().expect("temp dir");
        let server = ZkServer::builder()
            .force_sync(false)
            .base_dir(base.path())
            .own_process_group(true)
            .start()
            .expect("server starts");
        let detached = server.detach();
        assert!(detached.dir.starts_with(base.path()));
        let [process] = detached.processes.as_slice() else {
            panic!("one process")
        };
        assert!(process.is_alive());
        assert_eq!(process.mode(), Some(ServerMode::Standalone));
        // The record survives a round trip through a state file.
        let json = serde_json::to_string(&detached).expect("serializes");
        let back: DetachedZk = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, detached);

        // The test process is the parent, so the killed server stays a zombie until reaped;
        // `is_alive` counts zombies as gone, which is what `stop` waits for.
        assert_eq!(back.stop().expect("stops"), vec![process.pid]);
        assert!(!process.is_alive());
        assert!(!detached.dir.exists());
    }

    #[test]
    fn ensemble_reaches_quorum_and_survives_a_killed_member() {
        let zk = ZkEnsemble::builder()
            .size(3)
            .force_sync(false)
            .start()
            .expect("ensemble starts");
        assert_eq!(zk.connect_string().split(',').count(), 3);
        let leader = zk.leader().expect("a leader");
        zk.kill(leader);
        zk.wait_for_quorum().expect("two of three still serve");
        assert_ne!(zk.leader(), Some(leader));
        zk.restart(leader).expect("rejoins");
        assert_eq!(zk.member(leader).mode(), Some(ServerMode::Follower));
        let dir = zk.dir().to_owned();
        let pids: Vec<u32> = zk.members().iter().filter_map(ZkMember::pid).collect();
        drop(zk);
        assert!(!dir.exists());
        assert!(pids.iter().all(|&pid| !pid_exists(pid)));
    }

    /// The way integration tests find "the member the client is connected to": after that
    /// member is killed, the session moves to another one, and `member_of_session` follows.
    #[cfg(feature = "zookeeper")]
    #[test]
    fn member_of_session_follows_a_failover() {
        let zk = ZkEnsemble::builder()
            .size(3)
            .force_sync(false)
            .start()
            .expect("ensemble starts");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let client = runtime
            .block_on(
                zookeeper_client::Client::connector()
                    .with_session_timeout(Duration::from_secs(10))
                    .connect(&zk.connect_string()),
            )
            .expect("client connects");
        let session = client.session_id().0;
        let first = zk
            .member_of_session(session)
            .expect("one member serves the session");
        assert_eq!(zk.member_of_session(session ^ 1), None);

        zk.kill(first);
        let deadline = Instant::now() + Duration::from_secs(20);
        let second = loop {
            // A request makes the client notice the dead connection and move on at once.
            let _ = runtime.block_on(client.check_stat("/"));
            if let Some(i) = zk.member_of_session(session) {
                break i;
            }
            assert!(Instant::now() < deadline, "the session never reappeared");
            thread::sleep(POLL);
        };
        assert_ne!(second, first);
    }
}
