//! A round's set-up on real ZooKeeper (its chroot and its ref store), and the signals that
//! end a run early.

use std::sync::Arc;
use std::time::Duration;

use avout::CoordinationExt;
use avout::stm::store::{PostgresStore, RefStore};
use avout::zk::ZkConfig;
use avout_scenarios::scenario::Workload;
use avout_scenarios::scenario::store::RefStoreKind;
use avout_testkit::backend::{Backend, ZkBackend};

use super::{ChaosError, SESSION_TIMEOUT};

/// Makes a fresh chroot for a round of `scenario`, trying again for up to `patience` while
/// the service cannot be reached or loses the connection: both steps are safe to repeat (a
/// session, and `ensure_path`, which creates only what is missing). Fails at once on
/// anything else (refused credentials, say), or with the last reason once the patience is
/// spent.
pub(super) async fn chroot(
    config: &ZkConfig,
    scenario: &str,
    patience: Duration,
) -> Result<String, ChaosError> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let base = format!("/avout-runs/{scenario}-{stamp}-{}", std::process::id());
    let unreachable = |reason: String| ChaosError::Unreachable {
        connect: config.connect.clone(),
        reason,
    };
    let backend = backend(config, "", patience);
    let deadline = tokio::time::Instant::now() + patience;
    let zk = backend.client().await.map_err(|e| match e {
        // Already says it could not reach the servers: only the wait is news.
        avout::Error::Unreachable { timeout, .. } => {
            unreachable(format!("no session within {timeout:?}"))
        }
        e => unreachable(e.to_string()),
    })?;
    let made = loop {
        match zk.ensure_path(&base).await {
            Ok(()) => break Ok(()),
            Err(e)
                if (e.is_indeterminate() || e.is_session_lost())
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => break Err(unreachable(format!("cannot create {base}: {e}"))),
        }
    };
    // The chroot is made or not; how this session ends changes nothing.
    let _ = zk.close().await;
    made.map(|()| base)
}

/// Sessions on `config`'s servers under `chroot` ("" for none), with real runs' session
/// timeout, trying to connect for up to `patience`.
pub(super) fn backend(config: &ZkConfig, chroot: &str, patience: Duration) -> ZkBackend {
    ZkBackend::new(
        ZkConfig {
            connect: format!("{}{chroot}", config.connect),
            ..config.clone()
        }
        .with_session_timeout(SESSION_TIMEOUT),
    )
    .with_connect_patience(patience)
}

/// The store a real run keeps its refs' values in: PostgreSQL at `pg` (scoped by the run's
/// chroot, so runs sharing a table never collect each other's values), a fresh in-process
/// one, or none.
pub(super) async fn ref_store(
    w: &Workload,
    pg: Option<&str>,
    scope: &str,
) -> Result<Option<Arc<dyn RefStore>>, ChaosError> {
    match (w.ref_store, pg) {
        (RefStoreKind::Postgres, Some(url)) => {
            let store = PostgresStore::connect(url)
                .await
                .map_err(|e| ChaosError::Store(e.to_string()))?;
            Ok(Some(Arc::new(store.scoped(scope))))
        }
        (RefStoreKind::Postgres, None) => Err(ChaosError::Store(
            "--ref-store postgres needs --pg URL".into(),
        )),
        (kind, Some(_)) => Err(ChaosError::Store(format!(
            "--pg is for --ref-store postgres, not {}",
            kind.name()
        ))),
        (kind, None) => Ok(kind.in_process()),
    }
}

/// SIGINT and SIGTERM, caught for the length of a run so that it ends by its own path: the
/// rounds so far reported, the servers it started stopped.
pub(super) struct Signals {
    #[cfg(not(madsim))]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(not(madsim))]
    terminate: tokio::signal::unix::Signal,
}

/// A signal that ended a run early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interrupt {
    /// Ctrl-C.
    Sigint,
    /// `kill`.
    Sigterm,
}

impl Interrupt {
    /// The signal's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Interrupt::Sigint => "SIGINT",
            Interrupt::Sigterm => "SIGTERM",
        }
    }

    /// The exit status of a process ended by this signal, as shells report it.
    pub(crate) fn exit_status(self) -> u8 {
        match self {
            Interrupt::Sigint => 130,
            Interrupt::Sigterm => 143,
        }
    }
}

impl Signals {
    /// Catches both (inside the runtime).
    pub(super) fn catch() -> Result<Signals, ChaosError> {
        #[cfg(not(madsim))]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt()).map_err(ChaosError::Runtime)?,
                terminate: signal(SignalKind::terminate()).map_err(ChaosError::Runtime)?,
            })
        }
        #[cfg(madsim)]
        Ok(Signals {})
    }

    /// The next signal.
    pub(super) async fn next(&mut self) -> Interrupt {
        #[cfg(not(madsim))]
        {
            tokio::select! {
                biased;
                _ = self.interrupt.recv() => Interrupt::Sigint,
                _ = self.terminate.recv() => Interrupt::Sigterm,
            }
        }
        #[cfg(madsim)]
        std::future::pending().await
    }
}
