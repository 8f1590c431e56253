//! `avout zk start|stop|status`: a local ZooKeeper (standalone or an ensemble) to try the real
//! backend with, built on the test kit's servers.
//!
//! The servers must outlive the command that starts them, so the test kit's handles, which kill
//! their servers on drop, are [detached](avout_testkit::server::ZkServer::detach) once the
//! servers serve, and what is needed to find them again (pids, ports, configuration paths, the
//! data directory) goes into `state.json` in the state directory (`$TMPDIR/avout-zk` unless
//! `--dir` says otherwise). `stop` kills only processes that still run `QuorumPeerMain` with the
//! recorded configuration, so a pid reused by an unrelated process since is left alone.
//!
//! With `--tls` the servers also serve TLS on secure client ports, with certificates from a
//! CA made for them: `start` writes that CA's certificate and a client certificate and key
//! (`ca.pem`, `client.pem`, `client-key.pem`) into `client-tls/` of the servers' directory,
//! prints the secure connect string, and says which `--zk-tls-*` flags reach the servers
//! (see [`super::zk_auth`]). The servers ask clients for a certificate; `stop` deletes the
//! files with the servers' data.
//!
//! Two `avout zk start` racing on one state directory are not guarded against.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use avout_testkit::server::{DetachedZk, TestkitError, ZkEnsemble, ZkServer};
use avout_testkit::tls::TestCa;
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};

/// The `avout zk` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ZkCommand {
    /// Start a ZooKeeper on 127.0.0.1 in the background; prints its connect string.
    Start(StartArgs),
    /// Stop the ZooKeeper started by `avout zk start` and delete its data.
    Stop(DirArgs),
    /// Say whether the ZooKeeper started by `avout zk start` runs; prints its connect string.
    Status(DirArgs),
}

/// Options of `avout zk start`.
#[derive(Debug, Args)]
pub(crate) struct StartArgs {
    /// Start an ensemble of N members instead of one standalone server.
    #[arg(long, value_name = "N")]
    ensemble: Option<usize>,
    /// Client port (for an ensemble: of the first member; the others take the next ones).
    /// Default: free ports.
    #[arg(long, value_name = "P")]
    port: Option<u16>,
    /// Turn off the servers' fsync of their transaction logs (faster writes, less durable).
    #[arg(long)]
    no_fsync: bool,
    /// Serve TLS too, on secure client ports, with certificates of a CA made for these
    /// servers; prints the secure connect string and the --zk-tls-* flags that reach it.
    #[arg(long)]
    tls: bool,
    #[command(flatten)]
    dir: DirArgs,
}

/// Where the state lives.
#[derive(Debug, Args)]
pub(crate) struct DirArgs {
    /// State directory: holds state.json and the servers' data [default: $TMPDIR/avout-zk].
    #[arg(long, value_name = "D")]
    dir: Option<PathBuf>,
}

impl DirArgs {
    fn dir(&self) -> PathBuf {
        self.dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("avout-zk"))
    }

    /// The `--dir` flag to repeat in advice, if one was given.
    fn flag(&self) -> String {
        self.dir
            .as_ref()
            .map(|d| format!(" --dir {}", d.display()))
            .unwrap_or_default()
    }
}

/// Why an `avout zk` command failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ZkCmdError {
    /// A server could not be started or stopped.
    #[error(transparent)]
    Testkit(#[from] TestkitError),
    /// `start` found servers of an earlier `start` still running.
    #[error(
        "a ZooKeeper started by avout is already running at {connect} (state in {}); \
         stop it with `avout zk stop{flag}`",
        state.display()
    )]
    AlreadyRunning {
        /// Its connect string.
        connect: String,
        /// The state file.
        state: PathBuf,
        /// The `--dir` flag, if any.
        flag: String,
    },
    /// `stop` or `status` found no state file.
    #[error("nothing started by `avout zk start{flag}`: {} does not exist", state.display())]
    NothingStarted {
        /// The state file looked for.
        state: PathBuf,
        /// The `--dir` flag, if any.
        flag: String,
    },
    /// `status` found a state file whose servers all exited.
    #[error(
        "the ZooKeeper at {connect} is no longer running; `avout zk stop{flag}` removes its files"
    )]
    Dead {
        /// Its connect string.
        connect: String,
        /// The `--dir` flag, if any.
        flag: String,
    },
    /// A signal arrived while the servers started; they were stopped again.
    #[cfg_attr(madsim, allow(dead_code))]
    #[error("interrupted; the servers that were starting are stopped")]
    Interrupted,
    /// Signal handling could not be set up.
    #[cfg_attr(madsim, allow(dead_code))]
    #[error("cannot catch signals: {source}")]
    Signals {
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The state file could not be read, parsed or written.
    #[error("state file {}: {source}", path.display())]
    State {
        /// The state file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
}

/// What `start` records for `stop` and `status`.
#[derive(Debug, Serialize, Deserialize)]
struct State {
    /// What was started, in words: `a standalone ZooKeeper`, `a 3-member ZooKeeper ensemble`.
    kind: String,
    servers: DetachedZk,
}

impl State {
    /// What `--zk` takes: the secure client ports' connect string with `--tls`.
    fn connect_string(&self) -> &str {
        self.servers
            .secure_connect_string
            .as_deref()
            .unwrap_or(&self.servers.connect_string)
    }
}

/// Runs one `avout zk` subcommand.
pub(crate) fn run(command: ZkCommand) -> Result<(), ZkCmdError> {
    match command {
        ZkCommand::Start(args) => start(&args),
        ZkCommand::Stop(args) => stop(&args),
        ZkCommand::Status(args) => status(&args),
    }
}

fn start(args: &StartArgs) -> Result<(), ZkCmdError> {
    let dir = args.dir.dir();
    let state_path = dir.join("state.json");
    if let Some(old) = load(&state_path)? {
        if old.servers.processes.iter().any(|p| p.is_alive()) {
            return Err(ZkCmdError::AlreadyRunning {
                connect: old.servers.connect_string,
                state: state_path,
                flag: args.dir.flag(),
            });
        }
        // The servers died (a reboot, a kill by hand): their files are all that is left.
        old.servers.stop()?;
        remove_state(&state_path)?;
        eprintln!("note: removed the files of an earlier ZooKeeper that had exited");
    }
    let (ensemble, port, force_sync) = (args.ensemble, args.port, !args.no_fsync);
    let base = dir.clone();
    let ca = args.tls.then(|| TestCa::new("avout zk start"));
    let server_tls = ca.as_ref().map(TestCa::server_tls);
    let (kind, servers) = start_interruptibly(move || match ensemble {
        Some(n) => {
            let mut builder = ZkEnsemble::builder()
                .size(n)
                .force_sync(force_sync)
                .base_dir(base)
                .own_process_group(true);
            if let Some(port) = port {
                builder = builder.base_port(port);
            }
            if let Some(tls) = server_tls {
                builder = builder.tls(tls);
            }
            let servers = builder.start()?.detach();
            Ok((format!("a {n}-member ZooKeeper ensemble"), servers))
        }
        None => {
            let mut builder = ZkServer::builder()
                .force_sync(force_sync)
                .base_dir(base)
                .own_process_group(true);
            if let Some(port) = port {
                builder = builder.port(port);
            }
            if let Some(tls) = server_tls {
                builder = builder.tls(tls);
            }
            let servers = builder.start()?.detach();
            Ok(("a standalone ZooKeeper".to_owned(), servers))
        }
    })?;
    let state = State {
        kind: kind.to_owned(),
        servers,
    };
    let saved = ca
        .map(|ca| client_tls_files(&ca, &state.servers.dir))
        .transpose()
        .and_then(|flags| save(&state_path, &state).map(|()| flags));
    let tls_flags = match saved {
        Ok(flags) => flags,
        Err(e) => {
            // Without the state file nobody could find these servers again (nor, without
            // the client's files, reach them over TLS).
            let _ = state.servers.stop();
            return Err(e);
        }
    };
    println!("{}", state.connect_string());
    let pids: Vec<String> = state
        .servers
        .processes
        .iter()
        .map(|p| p.pid.to_string())
        .collect();
    eprintln!(
        "started {kind} at {} (pid {}), data in {}; stop it with `avout zk stop{}`",
        state.servers.connect_string,
        pids.join(", "),
        state.servers.dir.display(),
        args.dir.flag(),
    );
    if let Some(flags) = tls_flags {
        eprintln!(
            "TLS on {} (plaintext stays on {}): connect with --zk {} {flags}",
            state.connect_string(),
            state.servers.connect_string,
            state.connect_string(),
        );
    }
    Ok(())
}

/// Writes the CA's certificate and a client certificate and key of `ca` into
/// `client-tls/` of `dir`; returns the `--zk-tls-*` flags that use them.
fn client_tls_files(ca: &TestCa, dir: &Path) -> Result<String, ZkCmdError> {
    let tls_dir = dir.join("client-tls");
    let client = ca.issue(&ca.client("avout"));
    let files = [
        ("ca.pem", ca.cert_pem()),
        ("client.pem", client.cert_pem.as_str()),
        ("client-key.pem", client.key_pem.as_str()),
    ];
    let state_err = |path: &Path| {
        let path = path.to_owned();
        move |source| ZkCmdError::State { path, source }
    };
    fs::create_dir_all(&tls_dir).map_err(state_err(&tls_dir))?;
    for (name, pem) in files {
        let path = tls_dir.join(name);
        fs::write(&path, pem).map_err(state_err(&path))?;
    }
    Ok(format!(
        "--zk-tls-ca {} --zk-tls-cert {} --zk-tls-key {}",
        tls_dir.join("ca.pem").display(),
        tls_dir.join("client.pem").display(),
        tls_dir.join("client-key.pem").display(),
    ))
}

/// Runs `start` (which starts servers and detaches them) so that a signal meant to abort the
/// command cannot leave servers behind that no state file records.
///
/// The servers run in process groups of their own, so a Ctrl-C reaches only this command. The
/// test kit's handles would kill them on drop, but a signal ends the process without dropping
/// anything; so SIGINT, SIGTERM and SIGHUP are caught while the servers start, the start is
/// let finish, and then undone.
#[cfg(not(madsim))]
fn start_interruptibly(
    start: impl FnOnce() -> Result<(String, DetachedZk), TestkitError> + Send + 'static,
) -> Result<(String, DetachedZk), ZkCmdError> {
    use tokio::signal::unix::{SignalKind, signal};

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| ZkCmdError::Signals { source })?;
    runtime.block_on(async {
        let mut signals = Vec::new();
        for kind in [
            SignalKind::interrupt(),
            SignalKind::terminate(),
            SignalKind::hangup(),
        ] {
            signals.push(signal(kind).map_err(|source| ZkCmdError::Signals { source })?);
        }
        let mut starting = tokio::task::spawn_blocking(start);
        let signalled = any_signal(&mut signals);
        tokio::select! {
            biased;
            started = &mut starting => return unwrap_join(started),
            () = signalled => {}
        }
        eprintln!("interrupted: stopping the servers being started");
        if let Ok((_, servers)) = unwrap_join(starting.await) {
            servers.stop()?;
        }
        Err(ZkCmdError::Interrupted)
    })
}

/// Under `--cfg madsim` (a build for simulations, where real servers have no place) there are
/// no process signals to catch: the start just runs.
#[cfg(madsim)]
fn start_interruptibly(
    start: impl FnOnce() -> Result<(String, DetachedZk), TestkitError> + Send + 'static,
) -> Result<(String, DetachedZk), ZkCmdError> {
    Ok(start()?)
}

/// Waits until any of `signals` arrives.
#[cfg(not(madsim))]
async fn any_signal(signals: &mut [tokio::signal::unix::Signal]) {
    std::future::poll_fn(|cx| {
        for s in signals.iter_mut() {
            if s.poll_recv(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await;
}

/// A panic in the start is a bug: re-raise it here.
#[cfg(not(madsim))]
fn unwrap_join<T>(
    joined: Result<Result<T, TestkitError>, tokio::task::JoinError>,
) -> Result<T, ZkCmdError> {
    match joined {
        Ok(result) => Ok(result?),
        Err(e) => super::rethrow(e),
    }
}

fn stop(args: &DirArgs) -> Result<(), ZkCmdError> {
    let state_path = args.dir().join("state.json");
    let state = load(&state_path)?.ok_or_else(|| ZkCmdError::NothingStarted {
        state: state_path.clone(),
        flag: args.flag(),
    })?;
    let killed = state.servers.stop()?;
    remove_state(&state_path)?;
    if args.dir.is_none() {
        // The default directory is ours; leave no empty directory behind (a non-empty one,
        // holding something else, stays).
        let _ = fs::remove_dir(args.dir());
    }
    if killed.is_empty() {
        eprintln!(
            "the ZooKeeper at {} had already exited; removed its files",
            state.servers.connect_string
        );
    } else {
        let pids: Vec<String> = killed.iter().map(u32::to_string).collect();
        eprintln!(
            "stopped the ZooKeeper at {} (pid {}) and removed {}",
            state.servers.connect_string,
            pids.join(", "),
            state.servers.dir.display()
        );
    }
    Ok(())
}

fn status(args: &DirArgs) -> Result<(), ZkCmdError> {
    let state_path = args.dir().join("state.json");
    let state = load(&state_path)?.ok_or_else(|| ZkCmdError::NothingStarted {
        state: state_path.clone(),
        flag: args.flag(),
    })?;
    let mut alive = 0;
    for p in &state.servers.processes {
        let what = if p.is_alive() {
            alive += 1;
            match p.mode() {
                Some(mode) => format!("serving ({mode:?})").to_lowercase(),
                None => "running, not serving".to_owned(),
            }
        } else {
            "exited".to_owned()
        };
        eprintln!("127.0.0.1:{}  pid {}  {what}", p.client_port, p.pid);
    }
    if alive == 0 {
        return Err(ZkCmdError::Dead {
            connect: state.servers.connect_string,
            flag: args.flag(),
        });
    }
    eprintln!("{}, data in {}", state.kind, state.servers.dir.display());
    println!("{}", state.connect_string());
    Ok(())
}

fn load(path: &Path) -> Result<Option<State>, ZkCmdError> {
    let state_err = |source| ZkCmdError::State {
        path: path.to_owned(),
        source,
    };
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| state_err(e.into())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(state_err(e)),
    }
}

/// Writes the state through a temporary file and a rename, so a crash never leaves half a file.
fn save(path: &Path, state: &State) -> Result<(), ZkCmdError> {
    let state_err = |source| ZkCmdError::State {
        path: path.to_owned(),
        source,
    };
    let json = serde_json::to_vec_pretty(state).map_err(|e| state_err(e.into()))?;
    let tmp = path.with_extension("json.tmp");
    fs::write(&tmp, json)
        .and_then(|()| fs::rename(&tmp, path))
        .map_err(state_err)
}

fn remove_state(path: &Path) -> Result<(), ZkCmdError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(ZkCmdError::State {
            path: path.to_owned(),
            source: e,
        }),
        _ => Ok(()),
    }
}
