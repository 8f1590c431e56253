//! What a client that is not avout's needs of the world (under `--cfg madsim` only): the
//! drop-in simulated `zookeeper-client` (`avout-zookeeper-client`) keeps a session when its
//! process lets go of it (a *detached* session) and takes it up again by its id, gives up on
//! a session it cannot reach, and sits behind a proxy that cuts the connection after a
//! notification (the peer suite's port forwarder).

use avout::{Error, Result, SessionId, SessionState};

use super::World;

/// The drop-in's state in the world.
#[derive(Default)]
pub(super) struct DropIn {
    /// Clients whose connection drops right after the next watch event reaches them.
    cut_after_event: std::collections::BTreeSet<usize>,
}

impl World {
    /// The client lets go of its session without closing it, as a process with a detached
    /// session does when it drops its last handle: the session goes silent and the service
    /// expires it after its timeout, unless [`resume`](Self::resume) takes it up first.
    pub(crate) fn detach(&mut self, client: usize) {
        self.clock = self.now();
        self.timer("detach");
        self.crash(client);
    }

    /// Takes up the detached `session` again from the calling process, on a new connection:
    /// `SessionExpired` if the service no longer has it, `SessionMoved` if a live handle still
    /// holds it.
    pub(crate) fn resume(&mut self, session: SessionId) -> Result<usize> {
        self.clock = self.now();
        let client = self.client_of(session).ok_or(Error::SessionExpired)?;
        let c = &self.clients[client];
        if c.terminal.is_some() || c.server_expired || !self.kernel.is_alive(session) {
            return Err(Error::SessionExpired);
        }
        if !c.crashed {
            return Err(Error::SessionMoved);
        }
        self.timer("resume");
        let node = self.nodes.of_caller();
        let c = &mut self.clients[client];
        c.crashed = false;
        c.gate = avout::task::Gate::current();
        c.node = node;
        self.link_up(client);
        Ok(client)
    }

    /// The client gives up on its session, as `zookeeper-client` does when it has reached no
    /// server for 7/5 of the session timeout: the session ends on the client's side as
    /// `Expired` (every call and watch hears it), and, silent from now on, the service
    /// expires it after its timeout.
    pub(crate) fn give_up(&mut self, client: usize) {
        self.clock = self.now();
        if self.clients[client].terminal.is_some() {
            return;
        }
        self.timer("give-up");
        self.crash(client);
        self.terminate(client, SessionState::Expired);
    }

    /// The client forgets its watches on `path`: none of them fires any more (the caller
    /// asks the service to remove them).
    pub(crate) fn forget_watches(&mut self, client: usize, path: &str) {
        self.clients[client].watches.remove(path);
    }

    /// The client's connection drops right after the next watch event reaches it.
    pub(crate) fn cut_after_event(&mut self, client: usize) {
        self.dropin.cut_after_event.insert(client);
    }

    /// A watch event reached `client`: cuts its connection if that was asked for.
    pub(super) fn after_event(&mut self, client: usize) {
        if self.dropin.cut_after_event.remove(&client) {
            self.timer("cut-after-event");
            self.break_connection(client);
        }
    }
}
