//! Client processes as madsim nodes, under `--cfg madsim`.
//!
//! An application is more than its ZooKeeper calls: its own tasks and timers must stop when
//! its process stops and vanish when it dies. Under `--cfg madsim` a run is a madsim
//! simulation, and [`SimZk::node`] starts a client process as a madsim node: everything it
//! spawns (with `tokio::spawn`, which is madsim's there) runs on that node, so
//! [`SimNode::pause`] stops all of it, timers included, [`SimNode::kill`] drops all of it,
//! and [`SimNode::restart`] starts its initial task afresh, which opens new sessions. The
//! sessions the node opened follow it: paused with it (as by a `client-freeze`), and left to
//! expire when it dies (a dead process closes nothing).
//!
//! ```
//! let (_, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
//!     let zk = ctx.zk.clone();
//!     let node = ctx.zk.node("worker", move || {
//!         let zk = zk.clone();
//!         async move { let _session = zk.connect(); std::future::pending::<()>().await }
//!     });
//!     node.pause(std::time::Duration::from_secs(1));
//!     node.restart();
//! });
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use madsim::runtime::Handle;
use madsim::task::NodeId;

use crate::SimZk;
use crate::world::Shared;

/// A client process of a run under `--cfg madsim`: a madsim node (see the
/// [module docs](self)).
#[derive(Clone)]
pub struct SimNode {
    id: NodeId,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SimNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimNode").field("id", &self.id).finish()
    }
}

impl SimZk {
    /// Starts a client process named `name`, running `init()` on a madsim node of its own;
    /// a restart runs `init()` again. Must be called within the run.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// let (ran, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
    ///     let ran = Arc::new(AtomicBool::new(false));
    ///     let r = ran.clone();
    ///     ctx.zk.node("worker", move || {
    ///         let r = r.clone();
    ///         async move { r.store(true, Ordering::SeqCst) }
    ///     });
    ///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    ///     ran.load(Ordering::SeqCst)
    /// });
    /// assert!(ran);
    /// ```
    pub fn node<F, Fut>(&self, name: &str, init: F) -> SimNode
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let node = Handle::current()
            .create_node()
            .name(name)
            .init(init)
            .build();
        SimNode {
            id: node.id(),
            shared: self.shared.clone(),
        }
    }
}

impl SimNode {
    /// The node's madsim id.
    ///
    /// ```
    /// let (ids, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
    ///     let a = ctx.zk.node("a", || async {});
    ///     let b = ctx.zk.node("b", || async {});
    ///     (a.id(), b.id())
    /// });
    /// assert_ne!(ids.0, ids.1);
    /// ```
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// Stops every task of the node for `duration` of virtual time (timers that come due
    /// meanwhile fire when it resumes), and its sessions' connections with them: a session
    /// whose timeout the pause outlives is expired by the service, and the node finds out
    /// only when it runs again.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::time::Duration;
    /// let (_, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
    ///     let ticks = Arc::new(AtomicU64::new(0));
    ///     let t = ticks.clone();
    ///     let node = ctx.zk.node("ticker", move || {
    ///         let t = t.clone();
    ///         async move {
    ///             loop {
    ///                 tokio::time::sleep(Duration::from_millis(10)).await;
    ///                 t.fetch_add(1, Ordering::SeqCst);
    ///             }
    ///         }
    ///     });
    ///     tokio::time::sleep(Duration::from_millis(100)).await;
    ///     node.pause(Duration::from_secs(1));
    ///     let before = ticks.load(Ordering::SeqCst);
    ///     tokio::time::sleep(Duration::from_millis(500)).await;
    ///     assert_eq!(ticks.load(Ordering::SeqCst), before, "its timer is stopped");
    ///     tokio::time::sleep(Duration::from_secs(1)).await;
    ///     assert!(ticks.load(Ordering::SeqCst) > before, "and runs again");
    /// });
    /// ```
    pub fn pause(&self, duration: Duration) {
        self.shared.world().pause_node(self.id, duration);
        self.shared.kick();
    }

    /// Kills the node: its tasks are dropped, its sessions go silent and expire after their
    /// timeout (their ephemeral nodes with them).
    ///
    /// ```
    /// use avout::{Coordination, CreateMode};
    /// use std::time::Duration;
    /// let (_, _) = avout_sim_zk::Sim::builder().clients(1).build().run(|ctx| async move {
    ///     let zk = ctx.zk.clone();
    ///     let node = ctx.zk.node("worker", move || {
    ///         let zk = zk.clone();
    ///         async move {
    ///             let s = zk.connect();
    ///             s.create("/w", b"", &CreateMode::Ephemeral.into()).await.unwrap();
    ///             std::future::pending::<()>().await;
    ///         }
    ///     });
    ///     tokio::time::sleep(Duration::from_secs(1)).await;
    ///     node.kill();
    ///     let observer = &ctx.clients[0];
    ///     assert!(observer.exists("/w").await.unwrap().is_some(), "nothing closed it");
    ///     tokio::time::sleep(Duration::from_secs(11)).await;
    ///     assert!(observer.exists("/w").await.unwrap().is_none(), "its session expired");
    /// });
    /// ```
    pub fn kill(&self) {
        self.shared.world().crash_node(self.id, false);
        // Unlocked: dropping the node's session handles takes the world's lock.
        Handle::current().kill(self.id);
        self.shared.kick();
    }

    /// Kills the node and runs its initial task again, from scratch: new tasks, new sessions.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::time::Duration;
    /// let (starts, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
    ///     let starts = Arc::new(AtomicU64::new(0));
    ///     let s = starts.clone();
    ///     let node = ctx.zk.node("worker", move || {
    ///         let s = s.clone();
    ///         async move {
    ///             s.fetch_add(1, Ordering::SeqCst);
    ///             std::future::pending::<()>().await;
    ///         }
    ///     });
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    ///     node.restart();
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    ///     starts.load(Ordering::SeqCst)
    /// });
    /// assert_eq!(starts, 2);
    /// ```
    pub fn restart(&self) {
        self.shared.world().crash_node(self.id, true);
        Handle::current().restart(self.id);
        self.shared.kick();
    }
}
