//! Client processes as madsim nodes (under `--cfg madsim` only).
//!
//! A node's sessions are the world's clients it opened. Pausing a node stops every task of
//! it on madsim's scheduler (timers included: they fire when it resumes) and takes its
//! sessions' connections down for as long, as [`Fault::ClientFreeze`] does to one client;
//! the random `client-freeze` of a node's session pauses the whole node the same way. Killing
//! a node drops its tasks and leaves its sessions silent until the service expires them: a
//! dead process closes nothing. A restart kills, then runs the node's initial task again,
//! which opens new sessions.
//!
//! [`Fault::ClientFreeze`]: crate::Fault::ClientFreeze

use std::collections::BTreeMap;
use std::time::Duration;

use madsim::runtime::Handle;
use madsim::task::NodeId;

use super::{Down, Pending, World, nanos};

/// The world's view of the run's madsim nodes.
pub(super) struct Nodes {
    /// The run's own node (the workload's main task); never paused or killed here.
    supervisor: NodeId,
    /// Paused nodes, each until when.
    paused: BTreeMap<NodeId, u64>,
}

impl Nodes {
    /// Called from the run's main task, whose node is the supervisor.
    pub(super) fn new() -> Self {
        Nodes {
            supervisor: madsim::plugin::node(),
            paused: BTreeMap::new(),
        }
    }

    /// The node of the calling task, unless it is the supervisor.
    pub(super) fn of_caller(&self) -> Option<NodeId> {
        Some(madsim::plugin::node()).filter(|n| *n != self.supervisor)
    }
}

impl World {
    fn clients_of(&self, node: NodeId) -> Vec<usize> {
        (0..self.clients.len())
            .filter(|&c| self.clients[c].node == Some(node))
            .collect()
    }

    /// Pauses `node` for `duration` from now, its sessions' connections with it.
    pub(crate) fn pause_node(&mut self, node: NodeId, duration: Duration) {
        self.clock = self.now();
        for client in self.clients_of(node) {
            // Counted as the client-freeze it is; it holds the node too (see `hold_node`).
            self.fire_freeze(client, duration);
        }
        let until = self.clock + nanos(duration);
        self.hold_node(node, until);
    }

    /// Keeps `node` paused until `until` at least.
    pub(super) fn hold_node(&mut self, node: NodeId, until: u64) {
        let held = self.nodes.paused.entry(node).or_insert(0);
        if until > *held {
            *held = until;
            self.schedule(until, Pending::NodeResume(node));
        }
        Handle::current().pause(node);
    }

    /// A pause of `node` may be over (unless a later one holds it).
    pub(super) fn node_resume(&mut self, node: NodeId) {
        if self
            .nodes
            .paused
            .get(&node)
            .is_some_and(|&u| u <= self.clock)
        {
            self.nodes.paused.remove(&node);
            self.timer("node-resume");
            Handle::current().resume(node);
        }
    }

    /// `node` is about to be killed (or restarted: killed, then started again): its sessions
    /// crash first, so that dropping their handles with its tasks closes nothing. The caller
    /// kills it with the world unlocked, since dropping those handles takes the lock.
    pub(crate) fn crash_node(&mut self, node: NodeId, restart: bool) {
        self.clock = self.now();
        self.timer(if restart { "node-restart" } else { "node-kill" });
        for client in self.clients_of(node) {
            self.crash(client);
        }
        self.nodes.paused.remove(&node);
    }

    /// The client's process died: its connection goes silent, and the service expires the
    /// session when its timeout passes.
    pub(super) fn crash(&mut self, client: usize) {
        let c = &mut self.clients[client];
        if c.terminal.is_some() || c.closing || c.crashed {
            return;
        }
        c.crashed = true;
        // Down past the session check (at the timeout), which finds it silent and expires it.
        let until = self.clock + nanos(c.timeout) + 1;
        self.go_down(client, Down::Disconnect, until);
    }
}
