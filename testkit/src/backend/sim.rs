//! The simulated ZooKeeper as a [`Backend`].

use std::sync::Arc;

use avout::client::Connect;
use avout::{Client, Coordination, SessionId};
use avout_sim_zk::SimZk;
use futures::future::BoxFuture;

use super::Backend;

/// The simulator's service inside a run as a [`Backend`]: every session, a managed client's
/// later ones included, is a new simulated client (the next index, the number faults name it
/// by), and a managed client's reconnection backoff draws from the run's seed.
///
/// ```
/// use avout::Coordination;
/// use avout_testkit::backend::{Backend, SimBackend};
/// let (expired, _) = avout_sim_zk::Sim::builder().clients(0).build().run(|ctx| async move {
///     let backend = SimBackend::new(ctx.zk.clone());
///     let session = backend.session().await.unwrap();
///     let id = session.session().id;
///     backend.expire(id).await.unwrap();
///     // Not `session.session()` inside: `with_kernel` holds the simulator's lock.
///     backend.simulator().unwrap().with_kernel(|k| !k.is_alive(id))
/// });
/// assert!(expired);
/// ```
#[derive(Clone, Debug)]
pub struct SimBackend {
    zk: SimZk,
}

impl SimBackend {
    /// The run's service (`SimCtx::zk`) as a backend.
    pub fn new(zk: SimZk) -> Self {
        SimBackend { zk }
    }
}

impl Backend for SimBackend {
    fn connector(&self) -> Arc<dyn Connect> {
        Arc::new(self.zk.clone())
    }

    fn session(&self) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
        let session: Arc<dyn Coordination> = Arc::new(self.zk.connect());
        Box::pin(futures::future::ready(Ok(session)))
    }

    fn session_with_digest(
        &self,
        user: &str,
        password: &str,
    ) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
        let session = self.zk.connect();
        let auth = format!("{user}:{password}");
        Box::pin(async move {
            session.add_auth("digest", auth.as_bytes()).await?;
            Ok(Arc::new(session) as Arc<dyn Coordination>)
        })
    }

    fn client(&self) -> BoxFuture<'_, avout::Result<Client>> {
        Box::pin(Client::connect(self.zk.clone()))
    }

    fn expire(&self, session: SessionId) -> BoxFuture<'_, avout::Result<()>> {
        if self.zk.with_kernel(|k| k.is_alive(session)) {
            self.zk.expire_session(session);
        }
        Box::pin(futures::future::ready(Ok(())))
    }

    fn simulator(&self) -> Option<&SimZk> {
        Some(&self.zk)
    }
}
