//! Servers handed over to someone else: the record that finds and stops them later.

use std::fs;
use std::io;
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::error::{Result, TestkitError, io_err};
use super::process::{process_state, signal};
use super::{MAIN_CLASS, POLL, ServerMode, serving_mode};

/// Servers that were [detached](super::ZkServer::detach): they run on, and this record (which
/// serializes, to be kept in a state file) is how they are found and stopped later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetachedZk {
    /// The directory holding every server's configuration, data and log.
    pub dir: PathBuf,
    /// The client connect string naming every server.
    pub connect_string: String,
    /// The same for the servers' TLS client ports, if they serve TLS.
    #[serde(default)]
    pub secure_connect_string: Option<String>,
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
        serving_mode(self.client_port)
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
