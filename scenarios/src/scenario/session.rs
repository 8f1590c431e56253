//! A workload client's ZooKeeper session and the recipe handles built on it, renewed together.
//!
//! A client holds one session and a few handles on it (an atom, a lock, an STM and its refs).
//! Once the session has ended the handles are useless, so the client opens a new session and
//! builds them again, from the constructor it gave when it opened the first. [`Session`] is
//! that loop's one home: a client that reconnects by itself would keep its session and only
//! rebuild (or keep) the handles here, without touching the workloads.

use std::sync::Arc;

use avout::Coordination;

use super::env::Cluster;

/// Opens a session on `cluster`, its error as text (the workloads' error type).
pub(crate) async fn connect<K: Cluster>(cluster: &K) -> Result<Arc<K::Client>, String> {
    cluster.connect().await.map_err(|e| e.to_string())
}

/// A session on a [`Cluster`] and the handles `H` that `build` makes on it.
///
/// `build` gets the cluster and the session, which it may replace (a constructor that retries
/// through [`super::env::retry_open`] reconnects when the session ends under it).
pub(crate) struct Session<'a, K: Cluster, H, B> {
    cluster: &'a K,
    zk: Arc<K::Client>,
    handles: H,
    build: B,
}

impl<'a, K, H, B> Session<'a, K, H, B>
where
    K: Cluster,
    B: AsyncFn(&K, &mut Arc<K::Client>) -> Result<H, String>,
{
    /// Opens a session and builds the handles on it.
    pub(crate) async fn open(cluster: &'a K, build: B) -> Result<Self, String> {
        let zk = connect(cluster).await?;
        Self::on(cluster, zk, build).await
    }

    /// Builds the handles on `zk`, a session already open.
    pub(crate) async fn on(
        cluster: &'a K,
        mut zk: Arc<K::Client>,
        build: B,
    ) -> Result<Self, String> {
        let handles = build(cluster, &mut zk).await?;
        Ok(Session {
            cluster,
            zk,
            handles,
            build,
        })
    }

    /// The session.
    pub(crate) fn zk(&self) -> &Arc<K::Client> {
        &self.zk
    }

    /// The handles built on the session.
    pub(crate) fn handles(&self) -> &H {
        &self.handles
    }

    /// Whether the session has ended (expired or closed): nothing more can be done on it.
    pub(crate) fn has_ended(&self) -> bool {
        self.zk.session_states().current().is_terminal()
    }

    /// Opens a new session and builds the handles on it again.
    pub(crate) async fn renew(&mut self) -> Result<(), String> {
        self.zk = connect(self.cluster).await?;
        self.handles = (self.build)(self.cluster, &mut self.zk).await?;
        Ok(())
    }

    /// [`renew`](Self::renew)s the session if it has ended.
    pub(crate) async fn renew_if_ended(&mut self) -> Result<(), String> {
        if self.has_ended() {
            self.renew().await?;
        }
        Ok(())
    }
}

/// A `build` for [`Session`] from a constructor that only wraps the session (no request to
/// send, nothing to retry), such as a lock's or a queue's `new`.
pub(crate) fn plain<K: Cluster, H, E: ToString>(
    new: impl Fn(Arc<K::Client>) -> Result<H, E>,
) -> impl AsyncFn(&K, &mut Arc<K::Client>) -> Result<H, String> {
    async move |_: &K, zk: &mut Arc<K::Client>| new(zk.clone()).map_err(|e| e.to_string())
}

/// A `build` for [`Session`] of a client that keeps no handles (it makes them per operation).
pub(crate) async fn no_handles<K: Cluster>(_: &K, _: &mut Arc<K::Client>) -> Result<(), String> {
    Ok(())
}
