//! The simulated network and scheduler around the kernel.
//!
//! # Time and order
//!
//! The world keeps one queue of pending happenings (a message reaching the service, a
//! message reaching a client, a fault, a timer) ordered by virtual delivery time in
//! nanoseconds, ties broken by insertion order. The driver ([`drive`]) pops them one at a
//! time, after sleeping on tokio's paused clock until their time, so production code that
//! uses `tokio::time` sees the same virtual time; nothing else ever decides an order. Latencies
//! come from the network stream of the seed.
//!
//! Each client has two FIFO links (to the service, and back): a message is delivered no
//! earlier than the previous one on its link, which gives ZooKeeper's guarantees for free:
//! one session's requests are applied in the order they were made, and a watch event queued
//! for a client before a reply reaches it before that reply.
//!
//! # Connections
//!
//! A client's connection is *up* or *down* (disconnected, paused, or in an outage) until a
//! known time. Requests made while it is down leave when it comes back. Each disconnect starts
//! a new *epoch*: messages of an older epoch still in flight are dropped on arrival, and the
//! calls waiting for them fail at once with `ConnectionLoss` (so they may or may not have
//! been applied, exactly as on a real connection). Watch events are never dropped: ZooKeeper
//! re-registers watches on reconnect and reports what changed, so events for a client whose
//! connection is down are held and delivered when it comes back. A paused client keeps its
//! connection (no new epoch) but receives nothing until it wakes.
//!
//! A session that stays silent (down, not counting outages, or closed without an answer)
//! longer than its timeout is expired by the service; the client finds out when its
//! connection comes back, or at once (after a latency) if it was connected.
//!
//! # Parts
//!
//! The world's state lives in parts that own it, each with its own tests:
//!
//! | part | holds |
//! |------|-------|
//! | [`Timeline`] | the clock and the agenda of pending happenings |
//! | [`Network`] | each client's links: up or down, epochs, FIFO delivery times, held messages; latencies |
//! | [`Ensemble`] | the servers and their replicas (the kernel), the leader, cuts, outages and elections, stalled disks, where each session is attached |
//! | [`Sessions`] | each client's session as the client knows it: its state, calls, watches, and its process |
//! | [`FaultPlan`] | faults scheduled by step, armed for the next request, drawn at the rates, counted; buggify |
//!
//! The world routes between them: a request goes from [`Sessions`] (its call) through
//! [`Network`] (when it arrives) onto the [`Timeline`]; at the service the [`FaultPlan`] draws
//! what goes wrong and the [`Ensemble`]'s kernel applies it; the reply goes back the same way.
//! The routing is split by what happens: [`requests`] (a client sends), [`service`] (a
//! request arrives), [`links`] (connections break and come back, messages reach clients) and
//! [`faults`] (a fault fires).

use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use avout::{Result, SessionId, SessionInfo, SessionStatePublisher};
use tokio::sync::Notify;
use tokio::time::Instant;

mod calls;
#[cfg(madsim)]
mod dropin;
mod ensemble;
mod faults;
mod links;
mod network;
#[cfg(madsim)]
mod nodes;
mod plan;
mod requests;
mod service;
mod sessions;
mod timeline;

pub(crate) use calls::Persistent;
use calls::{ClientMsg, Message};
use ensemble::Ensemble;
use network::{Down, Network, State};
use plan::FaultPlan;
use sessions::Sessions;
pub(crate) use timeline::Parks;
use timeline::Timeline;

use crate::kernel::Kernel;
use crate::log::{EventLog, LogEvent};
use crate::rng::{Rng, Stream};
use crate::{Choices, Fault, FaultKind, SimConfig, When};

/// The state shared by the driver, the service handle and every client handle.
pub(crate) struct Shared {
    world: Mutex<World>,
    notify: Notify,
}

impl Shared {
    pub(crate) fn new(
        config: SimConfig,
        start: Instant,
        tapes: Option<Choices>,
        record: bool,
        parks: Option<Parks>,
    ) -> Arc<Self> {
        Arc::new(Shared {
            world: Mutex::new(World::new(config, start, tapes, record, parks)),
            notify: Notify::new(),
        })
    }

    pub(crate) fn world(&self) -> MutexGuard<'_, World> {
        self.world
            .lock()
            .expect("the simulator panicked while holding its state")
    }

    /// The world, even if a panic poisoned it (to report on a failed run).
    pub(crate) fn world_even_if_poisoned(&self) -> MutexGuard<'_, World> {
        self.world
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The world, unless a panic poisoned it.
    pub(crate) fn try_world(&self) -> Option<MutexGuard<'_, World>> {
        self.world.lock().ok()
    }

    /// The world, if nobody holds it (never blocks, so it is safe from code the simulator
    /// itself may be running).
    pub(crate) fn world_if_free(&self) -> Option<MutexGuard<'_, World>> {
        self.world.try_lock().ok()
    }

    /// Wakes the driver if something was queued before it would wake on its own (under
    /// madsim, always: a wake-up is a scheduling choice there, and runs replay theirs).
    pub(crate) fn kick(&self) {
        let wanted = match self.world.lock() {
            Ok(mut w) => w.time.take_kick(),
            Err(_) => true,
        };
        self.ring(wanted);
    }

    /// Runs `f` on the world, then [`kick`](Self::kick)s the driver, under one lock.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut World) -> R) -> R {
        let mut w = self.world();
        let out = f(&mut w);
        let wanted = w.time.take_kick();
        drop(w);
        self.ring(wanted);
        out
    }

    fn ring(&self, wanted: bool) {
        if wanted || cfg!(madsim) {
            self.notify.notify_one();
        }
    }
}

/// Why a run's driver stopped before the workload finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    TimeLimit(Duration),
}

/// Runs the world until it is told to stop; returns only on a time-limit overrun (the
/// workload finishing is noticed by the caller, which stops polling this future).
///
/// Everything due by tokio's clock is processed at once; then the driver sleeps until the
/// next happening, or until a client queues an earlier one ([`Shared::kick`]).
pub(crate) async fn drive(shared: Arc<Shared>) -> Stop {
    // One timer, re-armed for each deadline, rather than a new one per event; and one
    // registration for kicks, renewed only once it is used.
    let sleep = tokio::time::sleep_until(Instant::now());
    tokio::pin!(sleep);
    let kicked = shared.notify.notified();
    tokio::pin!(kicked);
    // tokio's paused clock only moves while every task waits, so it is read once per wake-up.
    let mut now = Instant::now();
    loop {
        if cfg!(madsim) {
            // madsim's clock is its own business.
            now = Instant::now();
        }
        let next = {
            let mut w = shared.world();
            if let Some(stop) = &w.stopped {
                return stop.clone();
            }
            let next = w.time.next_time();
            match next.map(|at| w.time.instant(at)) {
                Some(deadline) if deadline <= now => {
                    w.process_next();
                    continue;
                }
                deadline => {
                    w.time.driver_sleeps(next);
                    deadline
                }
            }
        };
        let was_kicked = match next {
            None => {
                kicked.as_mut().await;
                true
            }
            Some(deadline) => {
                sleep.as_mut().reset(deadline);
                tokio::select! {
                    biased;
                    () = kicked.as_mut() => true,
                    () = &mut sleep => false,
                }
            }
        };
        if was_kicked {
            kicked.set(shared.notify.notified());
        }
        now = Instant::now();
    }
}

/// A happening on the world's [`Timeline`].
enum Pending {
    ToServer {
        client: usize,
        epoch: u64,
        xid: u64,
        message: Message,
    },
    ToClient {
        client: usize,
        epoch: u64,
        msg: ClientMsg,
    },
    Fault(Fault),
    LinkUp {
        client: usize,
        since: u64,
    },
    OutageEnd,
    SessionCheck {
        client: usize,
        since: u64,
    },
    StaleEnd {
        client: usize,
    },
    Follower(u8),
    Notice {
        server: u8,
    },
    Heal {
        server: u8,
    },
    /// The leader without a quorum notices and steps down.
    StepDown,
    /// A lagging leader may have caught up.
    LeaderLagEnd,
    Thaw {
        client: usize,
    },
    /// A madsim node paused until now may resume.
    #[cfg(madsim)]
    NodeResume(madsim::task::NodeId),
    /// TTL nodes may be due for deletion.
    TtlCheck,
    TimeLimit,
}

/// Everything the simulation knows; see the [module docs](self). Its state lives in its
/// parts; the world routes between them.
pub(crate) struct World {
    pub(crate) config: SimConfig,
    /// The clock and the agenda.
    time: Timeline<Pending>,
    /// The links between the clients and the service.
    net: Network<ClientMsg>,
    /// The servers, their replicas (the kernel), and where each session is attached.
    ensemble: Ensemble,
    /// Each client's session: its state, calls and watches, and its process.
    sessions: Sessions,
    /// The faults: scheduled, armed, drawn and counted; buggify.
    plan: FaultPlan,
    /// Its own stream, so that a recipe drawing GUIDs does not shift latencies or faults.
    guids: Rng,
    pub(crate) log: EventLog,
    stopped: Option<Stop>,
    /// Requests the service processed (lost ones excluded).
    pub(crate) requests: u64,
    #[cfg(madsim)]
    nodes: nodes::Nodes,
    #[cfg(madsim)]
    dropin: dropin::DropIn,
}

/// A session check scheduled by a close: the session times out unless the close completes.
const SESSION_CHECK_WHILE_CLOSING: u64 = u64::MAX;

impl World {
    fn new(
        config: SimConfig,
        start: Instant,
        tapes: Option<Choices>,
        record: bool,
        parks: Option<Parks>,
    ) -> Self {
        let stream = |tape: Option<Vec<u64>>, s: Stream| match tape {
            Some(tape) => Rng::from_tape(tape, config.seed, s),
            None if record => Rng::recording(config.seed, s),
            None => Rng::new(config.seed, s),
        };
        let (net_tape, fault_tape) = match tapes {
            Some(c) => (Some(c.network), Some(c.faults)),
            None => (None, None),
        };
        let mut w = World {
            time: Timeline::new(start, config.epoch_ms, parks),
            net: Network::new(stream(net_tape, Stream::Network), &config),
            ensemble: Ensemble::new(
                &config,
                Rng::new(config.seed, Stream::Reconnects),
                Rng::new(config.seed, Stream::Placement),
            ),
            sessions: Sessions::default(),
            plan: FaultPlan::new(stream(fault_tape, Stream::Faults), &config),
            guids: Rng::new(config.seed, Stream::Guids),
            log: EventLog::new(config.keep_log),
            stopped: None,
            requests: 0,
            #[cfg(madsim)]
            nodes: nodes::Nodes::new(),
            #[cfg(madsim)]
            dropin: dropin::DropIn::default(),
            config,
        };
        for (when, fault) in w.config.scheduled.clone() {
            if let When::At(at) = when {
                w.time.schedule(nanos(at), Pending::Fault(fault));
            }
        }
        let limit = nanos(w.config.time_limit);
        w.time.schedule(limit, Pending::TimeLimit);
        w
    }

    /// A unique id from the run's GUID stream.
    pub(crate) fn new_guid(&mut self) -> u128 {
        (u128::from(self.guids.next_u64()) << 64) | u128::from(self.guids.next_u64())
    }

    /// Whether the buggify point at `site` fires now (see [`FaultPlan::buggify`]); a firing
    /// is logged.
    pub(crate) fn buggify(&mut self, site: &'static std::panic::Location<'static>) -> bool {
        let key = (site.file(), site.line(), site.column());
        let fire = self.plan.buggify(key);
        if fire {
            let t = self.now();
            self.log.push(
                LogEvent::Buggify {
                    t,
                    site: format!("{}:{}:{}", key.0, key.1, key.2),
                },
                |_| {},
            );
        }
        fire
    }

    /// How many times a buggify point fired.
    pub(crate) fn buggified(&self) -> u64 {
        self.plan.buggified()
    }

    /// The faults that fired so far, by kind.
    pub(crate) fn fault_counts(&self) -> &std::collections::BTreeMap<FaultKind, u64> {
        self.plan.counts()
    }

    /// The service's state.
    pub(crate) fn kernel(&self) -> &Kernel {
        self.ensemble.kernel()
    }

    /// Whether a replayed run needed more choices than its tapes held.
    pub(crate) fn tapes_exhausted(&self) -> bool {
        self.net.rng().tape_exhausted() || self.plan.rng().tape_exhausted()
    }

    /// Every choice made so far, recorded or not.
    pub(crate) fn choices_so_far(&self) -> Choices {
        Choices {
            network: self.net.rng().drawn_so_far(),
            faults: self.plan.rng().drawn_so_far(),
        }
    }

    /// The choices recorded so far.
    pub(crate) fn take_choices(&mut self) -> Choices {
        Choices {
            network: self.net.rng_mut().take_recording(),
            faults: self.plan.rng_mut().take_recording(),
        }
    }

    /// Virtual time now (see [`Timeline::now`]).
    pub(crate) fn now(&self) -> u64 {
        self.time.now()
    }

    pub(crate) fn publisher(&self, client: usize) -> &SessionStatePublisher {
        self.sessions.publisher(client)
    }

    pub(crate) fn session_info(&self, client: usize) -> SessionInfo {
        self.sessions.info(client)
    }

    pub(crate) fn client_of(&self, session: SessionId) -> Option<usize> {
        self.sessions.client_of(session)
    }

    /// The server `client` is connected to (0 with one server).
    pub(crate) fn server_of(&self, client: usize) -> u8 {
        self.ensemble.server_of(client)
    }

    /// The server that leads now (0 with one server).
    pub(crate) fn leader(&self) -> u8 {
        self.ensemble.leader()
    }

    /// Opens a session for a new client (of the process under `gate`, if any) and returns
    /// the client's index.
    pub(crate) fn connect(&mut self, timeout: Duration, gate: Option<avout::task::Gate>) -> usize {
        self.time.catch_up();
        let now_ms = self.time.now_ms();
        let session = self.ensemble.kernel_mut().create_session(now_ms, timeout);
        let index = self.sessions.open(
            session,
            timeout,
            gate,
            #[cfg(madsim)]
            self.nodes.of_caller(),
        );
        let link = self.net.add();
        debug_assert_eq!(link, index, "one link per client");
        self.ensemble.seat();
        let t = self.time.clock();
        self.log.push(
            LogEvent::Connect {
                t,
                client: index,
                session,
            },
            |_| {},
        );
        if self.ensemble.is_ensemble() {
            // As a real client does from its connect string: any server, most often a
            // follower, so reads can be stale from the first one (sync exists for that).
            let server = self.ensemble.place();
            self.attach_to(index, server);
        }
        index
    }

    /// The last handle of a client is gone: close its session unless it already ended.
    pub(crate) fn release(&mut self, client: usize) {
        if self.sessions.wants_close(client) {
            drop(self.close(client));
        }
    }

    /// Applies a fault now (for tests and the service handle).
    pub(crate) fn inject(&mut self, fault: Fault) {
        self.time.catch_up();
        self.fire_fault(fault);
    }

    fn process_next(&mut self) {
        let Some(what) = self.time.pop() else {
            return;
        };
        let now = self.time.clock();
        match what {
            Pending::ToServer {
                client,
                epoch,
                xid,
                message,
            } => self.at_server(client, epoch, xid, message),
            Pending::ToClient { client, epoch, msg } => self.at_client(client, epoch, msg),
            Pending::Fault(f) => self.fire_fault(f),
            Pending::LinkUp { client, since } => {
                if self.net.down_since(client) == Some(since) {
                    self.timer("link-up");
                    self.link_up(client);
                }
            }
            Pending::OutageEnd => self.end_outage(),
            Pending::SessionCheck { client, since } => self.session_check(client, since),
            Pending::StaleEnd { client } => {
                if self.ensemble.stale_until(client).is_some_and(|u| u <= now) {
                    self.ensemble.set_stale_until(client, None);
                    self.timer("stale-end");
                    // A follower cut off from the leader cannot catch up, and the requests it
                    // holds are answered only by the end of its connection when it notices:
                    // moving the session off it now would leave them unanswered for ever.
                    let server = self.ensemble.server_of(client);
                    if !self.ensemble.is_cut_off(server) {
                        let leader = self.ensemble.leader();
                        self.attach_to(client, leader);
                    }
                }
            }
            Pending::Follower(i) => {
                let now_ms = self.time.now_ms();
                if let Some(events) = self.ensemble.advance_follower(i, now_ms) {
                    self.route(events);
                    self.arm_follower_of(i);
                }
            }
            Pending::Notice { server } => self.notice_cut_off(server),
            Pending::Heal { server } => self.heal(server),
            Pending::StepDown => self.step_down(),
            Pending::LeaderLagEnd => self.end_leader_lag(),
            Pending::Thaw { client } => self.thaw(client),
            #[cfg(madsim)]
            Pending::NodeResume(node) => self.node_resume(node),
            Pending::TtlCheck => {
                if self.ensemble.ttl_due(now) {
                    self.timer("ttl-check");
                    self.reap_ttls();
                }
            }
            Pending::TimeLimit => {
                self.stopped = Some(Stop::TimeLimit(self.config.time_limit));
            }
        }
    }

    /// Deletes the TTL nodes due now and schedules a check for the next one to fall due.
    /// ZooKeeper checks on a timer (`znode.container.checkIntervalMs`); checking at the very
    /// time a node falls due, and after every write, is one of the schedules it allows.
    fn reap_ttls(&mut self) {
        let now_ms = self.time.now_ms();
        let reaped = self.ensemble.kernel_mut().reap_ttls(now_ms);
        self.route(reaped);
        if let Some(at) = self.ensemble.arm_ttl(self.time.clock() + 1) {
            self.time.schedule(at, Pending::TtlCheck);
        }
    }

    /// Makes sure each follower applies its oldest pending transaction once it is `lag` old.
    fn arm_follower(&mut self) {
        for i in 0..self.ensemble.kernel().followers() {
            self.arm_follower_of(i);
        }
    }

    fn arm_follower_of(&mut self, i: u8) {
        if let Some(at) = self.ensemble.arm_follower(i, self.time.clock()) {
            self.time.schedule(at, Pending::Follower(i));
        }
    }

    fn timer(&mut self, name: &'static str) {
        let t = self.time.clock();
        self.log.push(
            LogEvent::Timer {
                t,
                timer: name.into(),
            },
            |_| {},
        );
    }
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn outcome<T>(result: &Result<T>) -> Cow<'static, str> {
    match result {
        Ok(_) => "ok".into(),
        Err(e) => e.name().into(),
    }
}
