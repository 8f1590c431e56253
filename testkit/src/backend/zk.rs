//! Real ZooKeeper as a [`Backend`].

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use avout::client::Connect;
use avout::zk::{ZkClient, ZkConfig};
use avout::{Client, Coordination, SessionId};
use futures::future::BoxFuture;

use super::Backend;
use crate::server::{TestkitError, ZkEnsemble, ZkServer};

/// How many times [`ZkBackend::expire`] tries before it gives up.
const EXPIRE_ATTEMPTS: usize = 4;

/// Real ZooKeeper as a [`Backend`]: sessions are [`ZkClient`]s opened with one
/// [`ZkConfig`], and the backend remembers those it opened (a managed client's later sessions
/// too) so that it can [expire](Backend::expire) them with
/// [`ZkClient::expire_session`]: a `CloseSession` on the session's own connection, which the
/// service and every other session see as an expiry.
///
/// It may own the servers it runs on ([`standalone`](Self::standalone),
/// [`ensemble`](Self::ensemble)), which stop when the last clone of the backend is dropped.
///
/// ```no_run
/// use avout::{Coordination, CoordinationExt};
/// use avout_testkit::backend::{Backend, ZkBackend};
///
/// # async fn demo() {
/// let backend = ZkBackend::standalone().expect("Debian's ZooKeeper 3.8 starts");
/// let client = backend.client().await.expect("a session");
/// client.ensure_path("/a").await.expect("created");
/// backend.expire(client.session().id).await.expect("expired");
/// # }
/// ```
#[derive(Clone)]
pub struct ZkBackend {
    sessions: Sessions,
    servers: Option<Arc<Servers>>,
}

/// The servers a backend started, stopped with it.
#[derive(Debug)]
enum Servers {
    Standalone(ZkServer),
    Ensemble(ZkEnsemble),
}

impl std::fmt::Debug for ZkBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkBackend")
            .field("connect", &self.sessions.config.connect)
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

impl ZkBackend {
    /// Sessions of `config`, on servers someone else runs.
    ///
    /// ```
    /// let backend = avout_testkit::backend::ZkBackend::new(avout::zk::ZkConfig::new("127.0.0.1:2181"));
    /// assert_eq!(backend.config().connect, "127.0.0.1:2181");
    /// assert!(backend.sessions().is_empty());
    /// ```
    pub fn new(config: ZkConfig) -> Self {
        ZkBackend {
            sessions: Sessions {
                config,
                opened: Arc::default(),
                patience: Duration::ZERO,
            },
            servers: None,
        }
    }

    /// Starts a standalone server ([`ZkServer::start`]) and opens sessions on it with the
    /// default [`ZkConfig`]; the server stops when the last clone of the backend goes. Every
    /// call blocks while the server starts (in an async test, call it through
    /// `tokio::task::block_in_place`).
    ///
    /// # Errors
    ///
    /// When the server cannot start: tests fail on it, never skip.
    pub fn standalone() -> Result<Self, TestkitError> {
        let server = ZkServer::start()?;
        let config = ZkConfig::new(server.connect_string());
        Ok(ZkBackend {
            servers: Some(Arc::new(Servers::Standalone(server))),
            ..ZkBackend::new(config)
        })
    }

    /// Starts an ensemble of `n` servers ([`ZkEnsemble::start`]) and opens sessions on it
    /// with `config` (its connect string replaced by the ensemble's); see
    /// [`standalone`](Self::standalone).
    ///
    /// # Errors
    ///
    /// When the ensemble cannot start.
    pub fn ensemble(n: usize, config: ZkConfig) -> Result<Self, TestkitError> {
        let ensemble = ZkEnsemble::start(n)?;
        let config = ZkConfig {
            connect: ensemble.connect_string(),
            ..config
        };
        Ok(ZkBackend {
            servers: Some(Arc::new(Servers::Ensemble(ensemble))),
            ..ZkBackend::new(config)
        })
    }

    /// Opening a session tries again, for up to `patience`, while no server answers or the
    /// connection is lost during the handshake (a member killed, frozen or cut off while a
    /// client connects), instead of failing at once. Opening a session is safe to repeat: a
    /// half-opened one expires by itself. Refused credentials still fail at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// let backend = avout_testkit::backend::ZkBackend::new(avout::zk::ZkConfig::new("127.0.0.1:2181"))
    ///     .with_connect_patience(Duration::from_secs(30));
    /// assert_eq!(backend.connect_patience(), Duration::from_secs(30));
    /// ```
    pub fn with_connect_patience(mut self, patience: Duration) -> Self {
        self.sessions.patience = patience;
        self
    }

    /// How long opening a session tries again ([`with_connect_patience`](Self::with_connect_patience));
    /// zero by default.
    pub fn connect_patience(&self) -> Duration {
        self.sessions.patience
    }

    /// The configuration sessions connect with.
    pub fn config(&self) -> &ZkConfig {
        &self.sessions.config
    }

    /// The standalone server the backend started, if it did.
    pub fn server(&self) -> Option<&ZkServer> {
        match self.servers.as_deref() {
            Some(Servers::Standalone(server)) => Some(server),
            _ => None,
        }
    }

    /// The ensemble the backend started, if it did.
    pub fn zk_ensemble(&self) -> Option<&ZkEnsemble> {
        match self.servers.as_deref() {
            Some(Servers::Ensemble(ensemble)) => Some(ensemble),
            _ => None,
        }
    }

    /// The sessions it opened that are open now, oldest first.
    pub fn sessions(&self) -> Vec<Arc<ZkClient>> {
        self.sessions
            .opened
            .lock()
            .expect("never poisoned")
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|zk| !zk.session_state().is_terminal())
            .collect()
    }
}

/// A [`ZkConfig`] that remembers the sessions it opens: the backend's connector.
#[derive(Clone, Debug)]
struct Sessions {
    config: ZkConfig,
    opened: Arc<Mutex<Vec<Weak<ZkClient>>>>,
    /// How long a connect tries again while the service cannot be reached.
    patience: Duration,
}

impl Sessions {
    /// One new session, trying again within the patience.
    async fn open(&self) -> avout::Result<ZkClient> {
        let deadline = tokio::time::Instant::now() + self.patience;
        let mut pause = Duration::from_millis(100);
        loop {
            match ZkClient::connect(&self.config).await {
                Ok(zk) => return Ok(zk),
                Err(e)
                    if (matches!(e, avout::Error::Unreachable { .. }) || e.is_indeterminate())
                        && tokio::time::Instant::now() + pause < deadline =>
                {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Connect for Sessions {
    fn connect(&self) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
        Box::pin(async move {
            let zk = Arc::new(self.open().await?);
            let mut opened = self.opened.lock().expect("never poisoned");
            // Forget the sessions that are gone, so a long run does not grow the list.
            opened.retain(|s| s.strong_count() > 0);
            opened.push(Arc::downgrade(&zk));
            Ok(zk as Arc<dyn Coordination>)
        })
    }
}

impl Backend for ZkBackend {
    fn connector(&self) -> Arc<dyn Connect> {
        Arc::new(self.sessions.clone())
    }

    fn session_with_digest(
        &self,
        user: &str,
        password: &str,
    ) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
        let sessions = Sessions {
            config: self.sessions.config.clone().with_digest(user, password),
            opened: self.sessions.opened.clone(),
            patience: self.sessions.patience,
        };
        Box::pin(async move { sessions.connect().await })
    }

    fn client(&self) -> BoxFuture<'_, avout::Result<Client>> {
        Box::pin(Client::connect(self.sessions.clone()))
    }

    fn expire(&self, session: SessionId) -> BoxFuture<'_, avout::Result<()>> {
        Box::pin(async move {
            let Some(zk) = self
                .sessions()
                .into_iter()
                .find(|zk| zk.session().id == session)
            else {
                return Ok(());
            };
            // An attempt fails only if the service does not answer the session's
            // CloseSession in twice its timeout; a later attempt waits for the same end again.
            let mut last = None;
            for _ in 0..EXPIRE_ATTEMPTS {
                match zk.expire_session().await {
                    Ok(()) => return Ok(()),
                    Err(e) => last = Some(e),
                }
            }
            Err(last.expect("at least one attempt"))
        })
    }
}
