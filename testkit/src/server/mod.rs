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
//!
//! - **TLS and SASL** ([`ZkServerBuilder::tls`], [`ZkServerBuilder::sasl_digest_user`],
//!   [`ZkServerBuilder::kerberos`], the same on [`ZkEnsembleBuilder`]): a secure client port
//!   of its own beside the plain one, DIGEST-MD5 users and a Kerberos service principal in a
//!   JAAS file; see `security`. The test CA to make certificates with is
//!   [`crate::tls::TestCa`] (feature `tls`), the KDC for GSSAPI [`crate::kdc::Kdc`].
//!
//! The parts: `config` (ports, directories, `zoo.cfg`, classpath, the options both builders
//! share), `security` (TLS and SASL), `process` (one `java` process and its signals, and the accessors every server
//! handle shares), `standalone` ([`ZkServer`]), `ensemble` ([`ZkEnsemble`], [`ZkMember`]),
//! `detached` ([`DetachedZk`]) and `error` ([`TestkitError`]).

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

mod config;
mod detached;
mod ensemble;
mod error;
mod process;
mod relay;
mod security;
mod standalone;
#[cfg(test)]
mod tests;

pub use detached::{DetachedProcess, DetachedZk};
pub use ensemble::{ZkEnsemble, ZkEnsembleBuilder, ZkMember};
pub use error::TestkitError;
pub use security::{ClientAuth, ServerKerberos, ServerTls};
pub use standalone::{ZkServer, ZkServerBuilder};

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

/// A port of `127.0.0.1` that was free a moment ago (another process may take it before the
/// caller binds it).
pub fn free_port() -> Result<u16, TestkitError> {
    config::free_ports(1).map(|ports| ports[0])
}

/// The mode a server on `port` reports if it answers `srvr` now, `None` if it does not serve.
fn serving_mode(port: u16) -> Option<ServerMode> {
    four_letter_word(port, "srvr")
        .ok()
        .and_then(|s| ServerMode::parse(&s))
}
