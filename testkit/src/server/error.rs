//! What can go wrong starting or controlling a test server.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

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
    /// A program a test server needs is not installed.
    #[error("cannot run `{tool}`; install it with `{install}`")]
    ToolMissing {
        /// The program.
        tool: String,
        /// How to install it.
        install: &'static str,
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
    /// Partitions need an ensemble started with
    /// [`partitionable`](super::ZkEnsembleBuilder::partitionable).
    #[error("this ensemble was not started partitionable: its members talk directly")]
    NotPartitionable,
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

pub(super) type Result<T, E = TestkitError> = std::result::Result<T, E>;

pub(super) fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> TestkitError {
    let context = context.into();
    move |source| TestkitError::Io { context, source }
}
