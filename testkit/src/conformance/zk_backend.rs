//! The suite's backend for real ZooKeeper, over avout's production client.

use std::future::Future;

use avout::Coordination;

use super::Backend;

/// [`Backend`] for real ZooKeeper: sessions are [`ZkClient`](avout::zk::ZkClient)s opened
/// with one [`ZkConfig`](avout::zk::ZkConfig), and [`expire`](Backend::expire) uses
/// [`ZkClient::expire_session`](avout::zk::ZkClient::expire_session).
///
/// ```no_run
/// use avout_testkit::{conformance, server::ZkServer};
/// use avout::zk::ZkConfig;
///
/// # async fn demo() {
/// let server = ZkServer::start().expect("a ZooKeeper server");
/// let backend = conformance::ZkBackend::new(ZkConfig::new(server.connect_string()));
/// conformance::run_all(&backend, "/conformance").await;
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ZkBackend {
    config: avout::zk::ZkConfig,
}

impl ZkBackend {
    /// A backend whose sessions connect with `config` (authenticated sessions add a digest).
    ///
    /// ```
    /// let backend = avout_testkit::conformance::ZkBackend::new(avout::zk::ZkConfig::new("127.0.0.1:2181"));
    /// assert_eq!(backend.config().connect, "127.0.0.1:2181");
    /// ```
    pub fn new(config: avout::zk::ZkConfig) -> Self {
        ZkBackend { config }
    }

    /// The configuration sessions connect with.
    ///
    /// ```
    /// let backend = avout_testkit::conformance::ZkBackend::new(avout::zk::ZkConfig::new("127.0.0.1:2181"));
    /// assert_eq!(backend.config().session_timeout.as_secs(), 10);
    /// ```
    pub fn config(&self) -> &avout::zk::ZkConfig {
        &self.config
    }

    async fn open(config: &avout::zk::ZkConfig) -> avout::zk::ZkClient {
        match avout::zk::ZkClient::connect(config).await {
            Ok(client) => client,
            Err(e) => panic!("cannot open a session on {}: {e}", config.connect),
        }
    }
}

/// How many times [`ZkBackend`] tries to expire a session before failing the case.
const EXPIRE_ATTEMPTS: usize = 4;

impl Backend for ZkBackend {
    type Client = avout::zk::ZkClient;

    fn connect(&self) -> impl Future<Output = Self::Client> {
        Self::open(&self.config)
    }

    fn connect_with_digest(
        &self,
        user: &str,
        password: &str,
    ) -> impl Future<Output = Self::Client> {
        let config = self.config.clone().with_digest(user, password);
        async move { Self::open(&config).await }
    }

    async fn expire(&self, client: &Self::Client) {
        // An attempt times out only if the service does not answer the session's CloseSession
        // in twice its timeout; a later attempt waits for the same end again.
        let mut errors = Vec::new();
        for _ in 0..EXPIRE_ATTEMPTS {
            match client.expire_session().await {
                Ok(()) => return,
                Err(e) => errors.push(e.to_string()),
            }
        }
        panic!(
            "cannot expire session {} in {EXPIRE_ATTEMPTS} attempts: {errors:?}",
            client.session().id
        );
    }
}
