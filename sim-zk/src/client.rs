//! Simulated clients: one [`SimClient`] is one session, implementing
//! [`avout::Coordination`], and [`SimZk`] is the service they talk to.
//!
//! A call validates its input (bad input never leaves the client, as the trait requires),
//! then submits the request to the simulated network *before* returning its future, so calls
//! made one after another are pipelined and applied in call order. The future only waits for
//! the reply. Handles are cheap to clone and must be used inside the run that made them (they
//! share its paused tokio runtime).

use std::sync::Arc;
use std::time::Duration;

use avout::{
    AddWatchMode, Coordination, Error, OpFuture, PersistentWatch, Reply, Request, SessionId,
    SessionInfo, SessionState, SessionStates, Watch,
};
use futures::FutureExt;

use crate::kernel::Kernel;
use crate::world::Shared;
use crate::{Fault, FaultKind};

/// The simulated ZooKeeper service of one run.
///
/// ```
/// use avout::Coordination;
/// use avout_sim_zk::Sim;
///
/// let (path, _) = Sim::builder().seed(7).clients(1).build().run(|ctx| async move {
///     let zk = ctx.zk.clone();
///     let late = zk.connect();
///     late.create("/late", b"", &Default::default()).await.unwrap().0
/// });
/// assert_eq!(path, "/late");
/// ```
#[derive(Clone)]
pub struct SimZk {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for SimZk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SimZk")
    }
}

impl SimZk {
    /// Opens a new session with the run's default timeout.
    ///
    /// ```
    /// let (ids, _) = avout_sim_zk::Sim::builder().clients(0).build().run(|ctx| async move {
    ///     (ctx.zk.connect().index(), ctx.zk.connect().index())
    /// });
    /// assert_eq!(ids, (0, 1));
    /// ```
    pub fn connect(&self) -> SimClient {
        let timeout = self.shared.world().config.session_timeout;
        self.connect_with_timeout(timeout)
    }

    /// Opens a new session with the given timeout.
    ///
    /// ```
    /// use avout::Coordination;
    /// use std::time::Duration;
    /// let (t, _) = avout_sim_zk::Sim::builder().clients(0).build().run(|ctx| async move {
    ///     ctx.zk.connect_with_timeout(Duration::from_secs(3)).session().timeout
    /// });
    /// assert_eq!(t, Duration::from_secs(3));
    /// ```
    pub fn connect_with_timeout(&self, timeout: Duration) -> SimClient {
        // The session belongs to the process opening it: freezing that process stops it.
        let index = self
            .shared
            .world()
            .connect(timeout, avout::task::Gate::current());
        SimClient {
            handle: Arc::new(Handle {
                shared: self.shared.clone(),
                index,
            }),
        }
    }

    /// Expires a session now, as the service would after its timeout: its ephemerals are
    /// deleted and its client learns it (after a latency, or when its connection returns).
    ///
    /// ```
    /// use avout::{Coordination, CoordinationExt, Error};
    /// let (err, _) = avout_sim_zk::Sim::builder().clients(1).build().run(|ctx| async move {
    ///     let c = &ctx.clients[0];
    ///     ctx.zk.expire_session(c.session().id);
    ///     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    ///     c.exists("/").await.unwrap_err()
    /// });
    /// assert_eq!(err, Error::SessionExpired);
    /// ```
    pub fn expire_session(&self, session: SessionId) {
        self.shared.update(|w| {
            let client = w
                .client_of(session)
                .unwrap_or_else(|| panic!("expire_session: unknown session {session}"));
            w.inject(Fault::ExpireSession { client });
        });
    }

    /// Injects a fault now.
    ///
    /// ```
    /// use avout_sim_zk::Fault;
    /// let (_, summary) = avout_sim_zk::Sim::builder().clients(1).build().run(|ctx| async move {
    ///     ctx.zk.inject(Fault::Outage { duration: std::time::Duration::from_millis(100) });
    /// });
    /// assert_eq!(summary.fault_count(avout_sim_zk::FaultKind::Outage), 1);
    /// ```
    pub fn inject(&self, fault: Fault) {
        self.shared.update(|w| w.inject(fault));
    }

    /// Reads the kernel's state (for assertions in tests).
    ///
    /// `f` runs under the simulator's lock: it must not call back into the simulation (a
    /// client's `session()`, say), which would wait for that lock forever. Read what it
    /// needs first.
    ///
    /// ```
    /// let (n, _) = avout_sim_zk::Sim::builder().clients(2).build().run(|ctx| async move {
    ///     ctx.zk.with_kernel(|k| k.sessions().count())
    /// });
    /// assert_eq!(n, 2);
    /// ```
    pub fn with_kernel<R>(&self, f: impl FnOnce(&Kernel) -> R) -> R {
        f(self.shared.world().kernel())
    }

    /// The server `client`'s session is connected to now (0 with one server); it changes
    /// when the session moves.
    ///
    /// ```
    /// let (on, _) = avout_sim_zk::Sim::builder().servers(3).clients(1).build().run(|ctx| async move {
    ///     ctx.zk.server_of(&ctx.clients[0])
    /// });
    /// assert!(on < 3);
    /// ```
    pub fn server_of(&self, client: &SimClient) -> u8 {
        self.shared.world().server_of(client.index())
    }

    /// The server that leads now (0 with one server); it changes after an election.
    ///
    /// ```
    /// let (leader, _) = avout_sim_zk::Sim::builder().servers(3).build().run(|ctx| async move {
    ///     ctx.zk.leader()
    /// });
    /// assert!(leader < 3);
    /// ```
    pub fn leader(&self) -> u8 {
        self.shared.world().leader()
    }

    /// How many faults of a kind fired so far.
    ///
    /// ```
    /// let (n, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
    ///     ctx.zk.fault_count(avout_sim_zk::FaultKind::Pause)
    /// });
    /// assert_eq!(n, 0);
    /// ```
    pub fn fault_count(&self, kind: FaultKind) -> u64 {
        self.shared
            .world()
            .fault_counts()
            .get(&kind)
            .copied()
            .unwrap_or(0)
    }
}

/// The service opens a managed client's sessions: each new session is a new simulated
/// client (the next index), and the reconnection backoff's jitter comes from the run's
/// seeded GUID stream, so runs with reconnections replay.
///
/// ```
/// use avout::{Client, Coordination};
/// let (generation, _) = avout_sim_zk::Sim::builder().clients(0).build().run(|ctx| async move {
///     let client = Client::connect(ctx.zk.clone()).await.unwrap();
///     ctx.zk.expire_session(client.session().id);
///     client.exists("/").await.ok(); // fails or waits for the new session
///     client.current_session().await.unwrap().generation()
/// });
/// assert_eq!(generation, 2);
/// ```
impl avout::client::Connect for SimZk {
    fn connect(&self) -> futures::future::BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
        let session: Arc<dyn Coordination> = Arc::new(SimZk::connect(self));
        futures::future::ready(Ok(session)).boxed()
    }

    fn jitter(&self) -> u64 {
        self.shared.world().new_guid() as u64
    }
}

/// One simulated session; implements [`Coordination`]. Clones share the session, and
/// dropping the last clone closes it (without waiting), as dropping a real client does.
///
/// Beyond the trait it offers its index in the run (the number faults name it by).
///
/// ```
/// use avout::{Coordination, CreateMode};
/// let (stat, _) = avout_sim_zk::Sim::builder().seed(1).clients(1).build().run(|ctx| async move {
///     let c = &ctx.clients[0];
///     c.create("/e", b"x", &CreateMode::Ephemeral.into()).await.unwrap();
///     c.exists("/e").await.unwrap().unwrap()
/// });
/// assert!(stat.is_ephemeral());
/// ```
#[derive(Clone)]
pub struct SimClient {
    handle: Arc<Handle>,
}

/// The session's handle, shared by the clones of a client.
struct Handle {
    shared: Arc<Shared>,
    index: usize,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // If the simulator already panicked there is nothing left to close.
        if let Some(mut w) = self.shared.try_world() {
            w.release(self.index);
            drop(w);
            self.shared.kick();
        }
    }
}

impl std::fmt::Debug for SimClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimClient")
            .field("index", &self.handle.index)
            .finish()
    }
}

impl SimClient {
    /// The handle of client `index` of the world `shared`.
    #[cfg(madsim)]
    pub(crate) fn from_index(shared: Arc<Shared>, index: usize) -> SimClient {
        SimClient {
            handle: Arc::new(Handle { shared, index }),
        }
    }

    /// [`Coordination::submit`] with a future that borrows nothing, for callers that hand
    /// the reply on (the request is queued at the call, as `submit`'s is).
    ///
    /// ```
    /// use avout::{Reply, Request};
    /// let (reply, _) = avout_sim_zk::Sim::builder().build().run(|ctx| async move {
    ///     let sent = ctx.clients[0].send(Request::Exists { path: "/".into(), watch: false });
    ///     drop(ctx);
    ///     sent.await.unwrap().0
    /// });
    /// assert!(matches!(reply, Reply::Exists(Some(_))));
    /// ```
    pub fn send(&self, request: Request) -> OpFuture<'static, (Reply, Option<Watch>)> {
        if let Err(e) = request.validate() {
            return futures::future::ready(Err(e)).boxed();
        }
        if matches!(&request, Request::Multi(ops) if ops.is_empty()) {
            return futures::future::ready(Err(Error::BadArguments("empty multi".into()))).boxed();
        }
        let h = &self.handle;
        let call = h.shared.update(|w| w.submit(h.index, request));
        // A dropped sender means the run ended under the call.
        call.map(|answer| answer.unwrap_or(Err(Error::ConnectionLoss)))
            .boxed()
    }

    /// The world this client belongs to.
    #[cfg(madsim)]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    /// The client's index in its run.
    ///
    /// ```
    /// let (i, _) = avout_sim_zk::Sim::builder().clients(2).build().run(|ctx| async move {
    ///     ctx.clients[1].index()
    /// });
    /// assert_eq!(i, 1);
    /// ```
    pub fn index(&self) -> usize {
        self.handle.index
    }
}

impl Coordination for SimClient {
    fn session(&self) -> SessionInfo {
        self.handle.shared.world().session_info(self.handle.index)
    }

    fn session_states(&self) -> SessionStates {
        let h = &self.handle;
        h.shared.world().publisher(h.index).subscribe()
    }

    fn session_state(&self) -> SessionState {
        let h = &self.handle;
        h.shared.world().publisher(h.index).current()
    }

    /// Sends an `addWatch`; once the service armed it, the watch hears the events the
    /// service sends this session for its path (or subtree), and the session's connection
    /// changes. Events that reach the client across a broken connection (sent on the old one,
    /// or while it was down) are not reported to it, as with ZooKeeper (ZOOKEEPER-4698).
    fn add_watch(&self, path: &str, mode: AddWatchMode) -> OpFuture<'_, PersistentWatch> {
        if let Err(e) = avout::path::validate_path(path, false) {
            return futures::future::ready(Err(e)).boxed();
        }
        let h = &self.handle;
        let id = h.shared.world().next_watch_id();
        let weak = Arc::downgrade(h);
        let owned = path.to_owned();
        let remover: avout::Remover = Box::new(move || {
            async move {
                // The client is gone: so is its session, and every watch with it.
                let Some(h) = weak.upgrade() else {
                    return Ok(());
                };
                let sent = h
                    .shared
                    .update(|w| w.remove_persistent(h.index, &owned, id));
                let answer = match sent {
                    None => return Ok(()),
                    Some(answer) => answer.await.unwrap_or(Err(Error::ConnectionLoss)),
                };
                match answer {
                    // Already gone at the service (a one-shot watch armed on the same path
                    // replaced it there, ZOOKEEPER-4466): what removal asks for.
                    Ok(_) | Err(Error::NoWatcher { .. }) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            .boxed()
        });
        let (sender, watch) = PersistentWatch::channel(path, mode, Some(remover));
        let armed = h.shared.update(|w| {
            w.submit_persistent(
                h.index,
                crate::world::Persistent {
                    id,
                    path: path.to_owned(),
                    mode,
                    sender,
                },
            )
        });
        async move {
            armed.await.unwrap_or(Err(Error::ConnectionLoss))?;
            Ok(watch)
        }
        .boxed()
    }

    /// Drawn from the run's seeded GUID stream, so runs whose recipes name nodes replay.
    fn new_guid(&self) -> u128 {
        self.handle.shared.world().new_guid()
    }

    /// Validates the request (bad input, and an empty `multi`, never reach the service),
    /// queues it on the simulated network at once, and waits for the reply
    /// ([`SimClient::send`]).
    fn submit(&self, request: Request) -> OpFuture<'_, (Reply, Option<Watch>)> {
        // The same request as the real backend sends for a sync, so that the simulated
        // service judges what a real one would receive (`send` stays ZooKeeper's `sync`).
        if let Request::Sync { path } = &request {
            return Request::sync_by_quorum(path, |r| self.send(r));
        }
        self.send(request)
    }

    /// Closes the session. Calls made before still get their replies (the service applies
    /// them first); calls made after fail with `Closed`. Resolves once the service has
    /// deleted the session's ephemerals, or, if the close itself was lost, once the client
    /// gave up on it (the session then times out on the service). Closing a session that
    /// already ended is a no-op.
    fn close(&self) -> OpFuture<'_, ()> {
        let h = &self.handle;
        let call = h.shared.update(|w| w.close(h.index));
        async move {
            match call.await.unwrap_or(Err(Error::ConnectionLoss)) {
                Ok(())
                | Err(
                    Error::ConnectionLoss
                    | Error::Closed
                    | Error::SessionExpired
                    | Error::AuthFailed,
                ) => Ok(()),
                Err(e) => Err(e),
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod guid_tests {
    use avout::Coordination;

    use crate::Sim;

    fn guids(seed: u64) -> Vec<u128> {
        let sim = Sim::builder().seed(seed).clients(2).build();
        let (ids, _) = sim.run(|ctx: crate::SimCtx| async move {
            vec![
                ctx.clients[0].new_guid(),
                ctx.clients[1].new_guid(),
                ctx.clients[0].new_guid(),
            ]
        });
        ids
    }

    #[test]
    fn guids_come_from_the_seed() {
        let a = guids(7);
        assert_eq!(a, guids(7), "the same seed draws the same GUIDs");
        assert_ne!(a, guids(8), "another seed draws others");
        assert!(
            a[0] != a[1] && a[1] != a[2] && a[0] != a[2],
            "unique within a run"
        );
    }
}
