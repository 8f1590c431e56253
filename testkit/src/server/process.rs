//! One server process: spawning `java` on its `zoo.cfg`, waiting until it serves, and the
//! signals that crash, freeze and continue it.

use std::fs;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use super::config::{ProcessOptions, check_port_free, classpath, log_tail};
use super::detached::DetachedProcess;
use super::error::{Result, TestkitError, io_err};
use super::{BIND_FAILURE, MAIN_CLASS, POLL, START_TIMEOUT, ServerMode, serving_mode};

/// A server process's state, behind a mutex so that a shared server (an `Arc<ZkEnsemble>` in
/// a nemesis task) can be killed and restarted while clients run.
#[derive(Debug, Default)]
struct ProcState {
    child: Option<Child>,
    paused: bool,
}

/// One server process: its configuration on disk and, while it runs, the child.
#[derive(Debug)]
pub(super) struct Proc {
    /// How errors name it: its address, and its id in an ensemble.
    pub(super) name: String,
    /// Holds `zoo.cfg`, `data/` and `zk.log`.
    pub(super) dir: PathBuf,
    pub(super) client_port: u16,
    /// The TLS client port, if the server serves TLS.
    pub(super) secure_port: Option<u16>,
    own_process_group: bool,
    /// JVM options and jars beyond the defaults (TLS, SASL).
    jvm_options: Vec<String>,
    classpath: Vec<String>,
    state: Mutex<ProcState>,
}

impl Proc {
    /// A stopped server process in `dir` (which exists), whose `zoo.cfg` (`config`, then
    /// the lines TLS and SASL need, with TLS on `secure_port`) is written now.
    pub(super) fn configure(
        name: String,
        dir: PathBuf,
        (client_port, secure_port): (u16, Option<u16>),
        options: &ProcessOptions,
        mut config: String,
    ) -> Result<Proc> {
        config.push_str(&options.security.configure(&dir, secure_port)?);
        let proc = Proc {
            name,
            jvm_options: options.security.jvm_options(&dir),
            classpath: options.security.classpath(),
            dir,
            client_port,
            secure_port,
            own_process_group: options.own_process_group,
            state: Mutex::default(),
        };
        fs::write(proc.config_path(), config)
            .map_err(io_err(format!("writing {}", proc.config_path().display())))?;
        Ok(proc)
    }

    pub(super) fn config_path(&self) -> PathBuf {
        self.dir.join("zoo.cfg")
    }

    pub(super) fn log_path(&self) -> PathBuf {
        self.dir.join("zk.log")
    }

    fn lock(&self) -> MutexGuard<'_, ProcState> {
        // A panic while holding the lock leaves the state consistent (each field is set in one
        // step), and drop must still kill the child.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the process (it must not be running).
    pub(super) fn spawn(&self) -> Result<()> {
        let (mut cp, props) = classpath()?;
        for jar in &self.classpath {
            cp.push(':');
            cp.push_str(jar);
        }
        let log = fs::File::create(self.log_path())
            .map_err(io_err(format!("creating {}", self.log_path().display())))?;
        let log_err = log
            .try_clone()
            .map_err(io_err("duplicating the log file handle"))?;
        let mut cmd = Command::new("java");
        cmd.args(&props)
            .args(&self.jvm_options)
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
    pub(super) fn wait_serving(&self, deadline: Instant) -> Result<ServerMode> {
        loop {
            if let Some(status) = self.exit_status()? {
                return Err(self.exited(status));
            }
            // The secure port is Netty's channel of its own, which may open after `srvr`
            // answers on the plain one.
            if let Some(mode) = self.mode().filter(|_| self.secure_port_listens()) {
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

    /// Whether the TLS client port accepts connections (true without one).
    fn secure_port_listens(&self) -> bool {
        self.secure_port.is_none_or(|port| {
            let addr = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
        })
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

    pub(super) fn mode(&self) -> Option<ServerMode> {
        serving_mode(self.client_port)
    }

    pub(super) fn pid(&self) -> Option<u32> {
        self.lock().child.as_ref().map(Child::id)
    }

    pub(super) fn is_running(&self) -> bool {
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

    pub(super) fn is_paused(&self) -> bool {
        self.lock().paused
    }

    /// `SIGKILL`s the process, if running, and reaps it.
    pub(super) fn kill(&self) {
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

    pub(super) fn pause(&self) -> Result<()> {
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

    pub(super) fn resume(&self) -> Result<()> {
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
    pub(super) fn restart(&self) -> Result<ServerMode> {
        self.kill();
        check_port_free(self.client_port)?;
        self.spawn()?;
        self.wait_serving(Instant::now() + START_TIMEOUT)
    }

    /// Hands the process over: it is no longer killed on drop. A paused process is continued,
    /// since nobody would be left to continue it.
    pub(super) fn detach(&self) -> Option<DetachedProcess> {
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
pub(super) fn signal(pid: u32, sig: libc::c_int) -> io::Result<()> {
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
pub(super) fn process_state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name in parentheses may itself contain spaces or parentheses.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The read-only accessors a server handle ([`ZkServer`](super::ZkServer),
/// [`ZkMember`](super::ZkMember)) exposes, written once over its `proc: Proc` field.
macro_rules! process_accessors {
    () => {
        /// The client port.
        pub fn port(&self) -> u16 {
            self.proc.client_port
        }

        /// This server alone as a connect string, `127.0.0.1:PORT`.
        pub fn connect_string(&self) -> String {
            format!("127.0.0.1:{}", self.proc.client_port)
        }

        /// The TLS client port, if the server serves TLS
        /// ([`tls`](super::ZkServerBuilder::tls)).
        pub fn secure_port(&self) -> Option<u16> {
            self.proc.secure_port
        }

        /// This server's TLS client port as a connect string, `127.0.0.1:PORT`, if it serves
        /// TLS.
        pub fn secure_connect_string(&self) -> Option<String> {
            self.proc
                .secure_port
                .map(|port| format!("127.0.0.1:{port}"))
        }

        /// The server's directory (`zoo.cfg`, `data/`, `zk.log`).
        pub fn dir(&self) -> &std::path::Path {
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

        /// Whether the process is paused (`SIGSTOP`).
        pub fn is_paused(&self) -> bool {
            self.proc.is_paused()
        }

        /// The server's mode if it answers `srvr` now (a member only while it is in a quorum),
        /// `None` if it does not serve.
        pub fn mode(&self) -> Option<super::ServerMode> {
            self.proc.mode()
        }

        /// Sends a four-letter word (`mntr`, `cons`, `stat`, …) and returns the answer.
        pub fn four_letter_word(&self, word: &str) -> Result<String, super::TestkitError> {
            super::four_letter_word(self.proc.client_port, word).map_err(super::error::io_err(
                format!("sending `{word}` to {}", self.proc.name),
            ))
        }
    };
}
pub(super) use process_accessors;
