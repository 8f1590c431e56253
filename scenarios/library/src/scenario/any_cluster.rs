//! [`AnyCluster`]: a [`Cluster`] of any kind behind one type, so that a [`Scenario`] (a trait
//! object in the registry) runs its workload on the simulator and on real ZooKeeper alike.
//!
//! [`Scenario`]: super::Scenario

use std::sync::Arc;

use avout::planted::Bugs;
use avout::stm::store::RefStore;
use avout::{Client, SessionId};
use futures::future::LocalBoxFuture;

use super::env::Cluster;

/// [`Cluster`] with its futures boxed: what [`AnyCluster`] holds.
trait DynCluster {
    fn client(&self) -> LocalBoxFuture<'_, Result<Client, avout::Error>>;
    fn is_simulated(&self) -> bool;
    fn planted(&self) -> Bugs;
    fn ref_store(&self) -> Option<Arc<dyn RefStore>>;
    fn expire(&self, session: SessionId) -> LocalBoxFuture<'_, Result<(), avout::Error>>;
    fn sim_zk(&self) -> Option<avout_sim_zk::SimZk>;
}

impl<K: Cluster> DynCluster for K {
    fn client(&self) -> LocalBoxFuture<'_, Result<Client, avout::Error>> {
        Box::pin(Cluster::client(self))
    }
    fn is_simulated(&self) -> bool {
        Cluster::is_simulated(self)
    }
    fn planted(&self) -> Bugs {
        Cluster::planted(self)
    }
    fn ref_store(&self) -> Option<Arc<dyn RefStore>> {
        Cluster::ref_store(self)
    }
    fn expire(&self, session: SessionId) -> LocalBoxFuture<'_, Result<(), avout::Error>> {
        Box::pin(Cluster::expire(self, session))
    }
    fn sim_zk(&self) -> Option<avout_sim_zk::SimZk> {
        Cluster::sim_zk(self)
    }
}

/// The cluster a [`Scenario`](super::Scenario)'s workload runs against: the simulator's
/// service or a real ensemble, with the run's planted bugs and ref store. It is a
/// [`Cluster`]: open managed clients with [`Cluster::client`].
///
/// ```
/// use avout_scenarios::scenario::env::{Cluster, SimCluster};
/// use avout_scenarios::scenario::AnyCluster;
/// let (_, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
///     let sim = SimCluster::new(ctx.zk.clone());
///     let any = AnyCluster::new(&sim);
///     assert!(any.is_simulated());
///     any.client().await.unwrap().close().await.unwrap();
/// });
/// ```
#[derive(Clone, Copy)]
pub struct AnyCluster<'a>(&'a dyn DynCluster);

impl std::fmt::Debug for AnyCluster<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnyCluster")
            .field("simulated", &self.0.is_simulated())
            .finish_non_exhaustive()
    }
}

impl<'a> AnyCluster<'a> {
    /// `cluster`, behind one type.
    pub fn new<K: Cluster>(cluster: &'a K) -> Self {
        AnyCluster(cluster)
    }
}

impl Cluster for AnyCluster<'_> {
    fn client(&self) -> impl Future<Output = Result<Client, avout::Error>> {
        self.0.client()
    }
    fn is_simulated(&self) -> bool {
        self.0.is_simulated()
    }
    fn planted(&self) -> Bugs {
        self.0.planted()
    }
    fn ref_store(&self) -> Option<Arc<dyn RefStore>> {
        self.0.ref_store()
    }
    fn expire(&self, session: SessionId) -> impl Future<Output = Result<(), avout::Error>> {
        self.0.expire(session)
    }
    fn sim_zk(&self) -> Option<avout_sim_zk::SimZk> {
        self.0.sim_zk()
    }
}
