//! One standalone server: [`ZkServer`] and its builder.

use std::fs;
use std::time::Instant;

use tempfile::TempDir;

use super::config::{ProcessOptions, base_config, check_port_free, free_ports, process_options};
use super::detached::DetachedZk;
use super::error::{Result, TestkitError, io_err};
use super::process::{Proc, process_accessors};
use super::{PORT_ATTEMPTS, START_TIMEOUT};

/// Builds a [`ZkServer`]; see [`ZkServer::builder`].
#[derive(Debug, Clone)]
pub struct ZkServerBuilder {
    port: Option<u16>,
    options: ProcessOptions,
}

impl ZkServerBuilder {
    /// Listens on this client port instead of a free one; a taken port fails the start with
    /// [`TestkitError::PortInUse`].
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    process_options!("the server");

    /// Starts the server and waits until it serves.
    pub fn start(self) -> Result<ZkServer> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut free = free_ports(2)?;
            let secure = self.options.security.tls.as_ref().and(free.pop());
            let port = match self.port {
                Some(port) => {
                    check_port_free(port)?;
                    port
                }
                None => free[0],
            };
            match self.start_on(port, secure) {
                // Another process took the port between choosing and binding it: choose again.
                Err(TestkitError::PortInUse { .. })
                    if self.port.is_none() && attempt < PORT_ATTEMPTS => {}
                other => return other,
            }
        }
    }

    fn start_on(&self, port: u16, secure_port: Option<u16>) -> Result<ZkServer> {
        let tmp = self.options.temp_dir("avout-zk-")?;
        let data = tmp.path().join("data");
        fs::create_dir(&data).map_err(io_err(format!("creating {}", data.display())))?;
        let proc = Proc::configure(
            format!("server on 127.0.0.1:{port}"),
            tmp.path().to_owned(),
            (port, secure_port),
            &self.options,
            base_config(&data, port, self.options.force_sync),
        )?;
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
/// The methods block (see the [module docs](super) for async tests). They take `&self`, so a
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
            options: ProcessOptions::default(),
        }
    }

    process_accessors!();

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
            secure_connect_string: self.secure_connect_string(),
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
