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
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// Stops every task of the node for `duration` of virtual time (timers that come due
    /// meanwhile fire when it resumes), and its sessions' connections with them: a session
    /// whose timeout the pause outlives is expired by the service, and the node finds out
    /// only when it runs again.
    pub fn pause(&self, duration: Duration) {
        self.shared.world().pause_node(self.id, duration);
        self.shared.kick();
    }

    /// Kills the node: its tasks are dropped, its sessions go silent and expire after their
    /// timeout (their ephemeral nodes with them).
    pub fn kill(&self) {
        self.shared.world().crash_node(self.id, false);
        // Unlocked: dropping the node's session handles takes the world's lock.
        Handle::current().kill(self.id);
        self.shared.kick();
    }

    /// Kills the node and runs its initial task again, from scratch: new tasks, new sessions.
    pub fn restart(&self) {
        self.shared.world().crash_node(self.id, true);
        Handle::current().restart(self.id);
        self.shared.kick();
    }
}
