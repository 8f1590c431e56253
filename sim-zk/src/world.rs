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

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use avout::{
    Error, Reply, Request, Result, SessionId, SessionInfo, SessionState, SessionStatePublisher,
    Watch, WatchSender, WatchedEvent,
};
use futures::channel::oneshot;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::hash::{CLOSE, Canonical, canon_close, canon_closed};
use crate::kernel::{Fired, Kernel, Server};
use crate::log::{EventLog, LogEvent, canon_request, canon_watch};
use crate::rng::{Rng, Stream};
use crate::{Choices, Fault, FaultKind, SimConfig, When};

/// What a request's call waits for: the reply and, for a read that armed one, the watch.
pub(crate) type Answer = Result<(Reply, Option<Watch>)>;

/// What a client sends the service: one of avout's requests, or the end of its session
/// (which the trait offers as `close`, not as a request).
enum Message {
    Request(Request),
    Close,
}

impl Message {
    /// The name the log gives it.
    fn name(&self) -> &'static str {
        match self {
            Message::Request(r) => r.name(),
            Message::Close => CLOSE,
        }
    }

    /// The path the log gives it, if any.
    fn path(&self) -> Option<&str> {
        match self {
            Message::Request(Request::AddAuth { .. }) | Message::Close => None,
            Message::Request(r) => Some(r.path()),
        }
    }

    fn is_write(&self) -> bool {
        match self {
            Message::Request(r) => r.is_write(),
            Message::Close => true,
        }
    }

    /// The client-side watch table a read's watch joins, and the watched path.
    fn watch(&self) -> Option<(WatchKind, String)> {
        let (kind, path) = match self {
            Message::Request(Request::GetData { path, watch: true })
            | Message::Request(Request::Exists { path, watch: true }) => (WatchKind::Data, path),
            Message::Request(Request::GetChildren { path, watch: true }) => {
                (WatchKind::Child, path)
            }
            _ => return None,
        };
        Some((kind, path.clone()))
    }
}

/// Who waits for a call's answer.
enum Waiter {
    Request(oneshot::Sender<Answer>),
    Close(oneshot::Sender<Result<()>>),
}

impl Waiter {
    fn fail(self, error: Error) {
        // The caller may have dropped its future; nobody needs to hear of it then.
        let _ = match self {
            Waiter::Request(tx) => tx.send(Err(error)).map_err(drop),
            Waiter::Close(tx) => tx.send(Err(error)).map_err(drop),
        };
    }
}

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
    ) -> Arc<Self> {
        Arc::new(Shared {
            world: Mutex::new(World::new(config, start, tapes, record)),
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

    /// Wakes the driver: something was queued.
    pub(crate) fn kick(&self) {
        self.notify.notify_one();
    }
}

/// Why a run's driver stopped before the workload finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    TimeLimit(Duration),
}

/// Runs the world until it is told to stop; returns only on a time-limit overrun (the
/// workload finishing is noticed by the caller, which stops polling this future).
pub(crate) async fn drive(shared: Arc<Shared>) -> Stop {
    // One timer, re-armed for each deadline, rather than a new one per event.
    let sleep = tokio::time::sleep_until(Instant::now());
    tokio::pin!(sleep);
    loop {
        let next = {
            let w = shared.world();
            if let Some(stop) = &w.stopped {
                return stop.clone();
            }
            w.queue
                .next_time()
                .map(|at| w.start + Duration::from_nanos(at))
        };
        match next {
            None => shared.notify.notified().await,
            Some(deadline) => {
                if Instant::now() < deadline {
                    sleep.as_mut().reset(deadline);
                    tokio::select! {
                        biased;
                        () = shared.notify.notified() => continue,
                        () = &mut sleep => {}
                    }
                }
                shared.world().process_next();
            }
        }
    }
}

/// The pending happenings in (time, insertion) order: a heap of small keys over a slab of
/// entries, so that neither an event's allocation nor its bytes move as the heap reorders.
#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    slots: Vec<Option<Pending>>,
    free: Vec<usize>,
}

impl Queue {
    fn next_time(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    fn push(&mut self, at: u64, seq: u64, what: Pending) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(what);
                slot
            }
            None => {
                self.slots.push(Some(what));
                self.slots.len() - 1
            }
        };
        self.heap.push(Reverse((at, seq, slot)));
    }

    fn pop(&mut self) -> Option<(u64, Pending)> {
        let Reverse((at, _, slot)) = self.heap.pop()?;
        let what = self.slots[slot].take().expect("a queued slot is full");
        self.free.push(slot);
        Some((at, what))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Down {
    Disconnect,
    Pause,
    Outage,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    Up,
    Down { why: Down, since: u64, until: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WatchKind {
    Data,
    Child,
}

struct Call {
    waiter: Waiter,
    watch: Option<(WatchKind, String)>,
}

impl Call {
    fn is_close(&self) -> bool {
        matches!(self.waiter, Waiter::Close(_))
    }
}

#[derive(Default)]
struct WatchSet {
    data: Vec<WatchSender>,
    child: Vec<WatchSender>,
}

enum ClientMsg {
    /// A reply; `None` answers a close.
    Reply {
        xid: u64,
        result: Result<Option<Reply>>,
    },
    Event(WatchedEvent),
    /// The service closed the connection of an expired session.
    Expired,
}

struct Client {
    session: SessionId,
    timeout: Duration,
    publisher: SessionStatePublisher,
    terminal: Option<SessionState>,
    closing: bool,
    link: Link,
    epoch: u64,
    next_xid: u64,
    to_server_last: u64,
    to_client_last: u64,
    calls: BTreeMap<u64, Call>,
    watches: BTreeMap<String, WatchSet>,
    held: VecDeque<(u64, ClientMsg)>,
    server_expired: bool,
    stale_until: Option<u64>,
}

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
    Follower,
    TimeLimit,
}

/// Everything the simulation knows; see the [module docs](self).
pub(crate) struct World {
    pub(crate) kernel: Kernel,
    pub(crate) config: SimConfig,
    start: Instant,
    clock: u64,
    queue: Queue,
    seq: u64,
    net: Rng,
    faults: Rng,
    /// Its own stream, so that a recipe drawing GUIDs does not shift latencies or faults.
    guids: Rng,
    /// How long broken connections take to come back (see [`Stream::Reconnects`]).
    reconnects: Rng,
    /// Buggify decisions, if the run enables buggify: its own stream and, per point, whether
    /// the point is live in this run.
    buggify: Option<(Rng, BTreeMap<Site, bool>)>,
    pub(crate) buggify_fired: u64,
    clients: Vec<Client>,
    by_session: BTreeMap<SessionId, usize>,
    pub(crate) log: EventLog,
    step: u64,
    armed_request_loss: Vec<Option<usize>>,
    armed_reply_loss: Vec<Option<usize>>,
    step_faults: BTreeMap<u64, Vec<Fault>>,
    outage_until: Option<u64>,
    /// When the pending follower timer fires, if one is pending.
    follower_timer: Option<u64>,
    stopped: Option<Stop>,
    pub(crate) fault_counts: BTreeMap<FaultKind, u64>,
    pub(crate) requests: u64,
}

impl World {
    /// A unique id from the run's GUID stream.
    pub(crate) fn new_guid(&mut self) -> u128 {
        (u128::from(self.guids.next_u64()) << 64) | u128::from(self.guids.next_u64())
    }
}

impl World {
    /// Whether the buggify point at `site` fires now. A point is live in a run with
    /// probability 1/2, decided when the run first reaches it; a live point fires with
    /// probability 1/4 each time it is reached (FoundationDB's scheme: some points never fire,
    /// so a run also explores the paths they would have hidden).
    pub(crate) fn buggify(&mut self, site: &'static std::panic::Location<'static>) -> bool {
        let Some((rng, sites)) = &mut self.buggify else {
            return false;
        };
        let key = (site.file(), site.line(), site.column());
        let live = *sites.entry(key).or_insert_with(|| rng.below(2) == 0);
        let fire = live && rng.below(4) == 0;
        if fire {
            self.buggify_fired += 1;
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
}

/// A buggify point: file, line, column.
type Site = (&'static str, u32, u32);

const SESSION_CHECK_WHILE_CLOSING: u64 = u64::MAX;

impl World {
    fn new(config: SimConfig, start: Instant, tapes: Option<Choices>, record: bool) -> Self {
        let stream = |tape: Option<Vec<u64>>, s: Stream| match tape {
            Some(tape) => Rng::from_tape(tape, config.seed, s),
            None if record => Rng::recording(config.seed, s),
            None => Rng::new(config.seed, s),
        };
        let (net_tape, fault_tape) = match tapes {
            Some(c) => (Some(c.network), Some(c.faults)),
            None => (None, None),
        };
        let net = stream(net_tape, Stream::Network);
        let faults = stream(fault_tape, Stream::Faults);
        let guids = Rng::new(config.seed, Stream::Guids);
        let reconnects = Rng::new(config.seed, Stream::Reconnects);
        let kernel = if config.needs_follower() {
            Kernel::with_follower()
        } else {
            Kernel::new()
        };
        let mut w = World {
            kernel,
            start,
            clock: 0,
            queue: Queue::default(),
            seq: 0,
            net,
            faults,
            guids,
            reconnects,
            buggify: config
                .buggify
                .then(|| (Rng::new(config.seed, Stream::Buggify), BTreeMap::new())),
            buggify_fired: 0,
            clients: Vec::new(),
            by_session: BTreeMap::new(),
            log: EventLog::new(config.keep_log),
            step: 0,
            armed_request_loss: Vec::new(),
            armed_reply_loss: Vec::new(),
            step_faults: BTreeMap::new(),
            outage_until: None,
            follower_timer: None,
            stopped: None,
            fault_counts: BTreeMap::new(),
            requests: 0,
            config,
        };
        for (when, fault) in w.config.scheduled.clone() {
            match when {
                When::At(at) => w.schedule(nanos(at), Pending::Fault(fault)),
                When::Step(n) => w.step_faults.entry(n).or_default().push(fault),
            }
        }
        let limit = nanos(w.config.time_limit);
        w.schedule(limit, Pending::TimeLimit);
        w
    }

    /// Whether a replayed run needed more choices than its tapes held.
    pub(crate) fn tapes_exhausted(&self) -> bool {
        self.net.tape_exhausted() || self.faults.tape_exhausted()
    }

    /// Every choice made so far, recorded or not.
    pub(crate) fn choices_so_far(&self) -> Choices {
        Choices {
            network: self.net.drawn_so_far(),
            faults: self.faults.drawn_so_far(),
        }
    }

    /// The choices recorded so far.
    pub(crate) fn take_choices(&mut self) -> Choices {
        Choices {
            network: self.net.take_recording(),
            faults: self.faults.take_recording(),
        }
    }

    /// Virtual time now: the later of the last event processed and tokio's clock (which a
    /// workload may have advanced by sleeping).
    pub(crate) fn now(&self) -> u64 {
        let tokio_now = nanos(Instant::now().saturating_duration_since(self.start));
        self.clock.max(tokio_now)
    }

    fn now_ms(&self) -> i64 {
        self.config.epoch_ms + (self.clock / 1_000_000) as i64
    }

    fn schedule(&mut self, at: u64, what: Pending) {
        self.seq += 1;
        self.queue.push(at, self.seq, what);
    }

    fn latency(&mut self) -> u64 {
        let lo = nanos(self.config.min_latency);
        let hi = nanos(self.config.max_latency).max(lo);
        self.net.between(lo, hi)
    }

    pub(crate) fn publisher(&self, client: usize) -> &SessionStatePublisher {
        &self.clients[client].publisher
    }

    pub(crate) fn session_info(&self, client: usize) -> SessionInfo {
        let c = &self.clients[client];
        SessionInfo {
            id: c.session,
            timeout: c.timeout,
        }
    }

    pub(crate) fn client_of(&self, session: SessionId) -> Option<usize> {
        self.by_session.get(&session).copied()
    }

    /// Opens a session for a new client and returns the client's index.
    pub(crate) fn connect(&mut self, timeout: Duration) -> usize {
        self.clock = self.now();
        let session = self.kernel.create_session(self.now_ms(), timeout);
        let index = self.clients.len();
        self.clients.push(Client {
            session,
            timeout,
            publisher: SessionStatePublisher::new(SessionState::Connected),
            terminal: None,
            closing: false,
            link: Link::Up,
            epoch: 0,
            next_xid: 0,
            to_server_last: 0,
            to_client_last: 0,
            calls: BTreeMap::new(),
            watches: BTreeMap::new(),
            held: VecDeque::new(),
            server_expired: false,
            stale_until: None,
        });
        self.by_session.insert(session, index);
        let t = self.clock;
        self.log.push(
            LogEvent::Connect {
                t,
                client: index,
                session,
            },
            |_| {},
        );
        index
    }

    /// Submits a request of `client`; the reply (or error) arrives on the returned channel.
    pub(crate) fn submit(&mut self, client: usize, request: Request) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        self.send(client, Message::Request(request), Waiter::Request(tx));
        rx
    }

    /// Submits the close of `client`'s session; the answer arrives on the returned channel.
    pub(crate) fn close(&mut self, client: usize) -> oneshot::Receiver<Result<()>> {
        let (tx, rx) = oneshot::channel();
        self.send(client, Message::Close, Waiter::Close(tx));
        rx
    }

    fn send(&mut self, client: usize, message: Message, waiter: Waiter) {
        let now = self.now();
        let c = &self.clients[client];
        if let Some(state) = c.terminal {
            waiter.fail(state.terminal_error().expect("terminal state has an error"));
            return;
        }
        if c.closing {
            waiter.fail(Error::Closed);
            return;
        }
        let close = matches!(message, Message::Close);
        let base = match c.link {
            Link::Up => now,
            Link::Down { until, .. } => now.max(until),
        };
        let base = base.max(self.outage_until.unwrap_or(0));
        let latency = self.latency();
        let c = &mut self.clients[client];
        let at = (base + latency).max(c.to_server_last);
        c.to_server_last = at;
        c.next_xid += 1;
        let xid = c.next_xid;
        let epoch = c.epoch;
        c.calls.insert(
            xid,
            Call {
                watch: message.watch(),
                waiter,
            },
        );
        if close {
            c.closing = true;
        }
        let (op, path) = (message.name(), message.path());
        self.log.push_with(
            |h| {
                canon_request(h, now, client, xid, op, path);
                match &message {
                    Message::Request(r) => r.canon(h),
                    Message::Close => canon_close(h),
                }
            },
            || LogEvent::Request {
                t: now,
                client,
                xid,
                op: op.into(),
                path: path.map(str::to_owned),
            },
        );
        self.schedule(
            at,
            Pending::ToServer {
                client,
                epoch,
                xid,
                message,
            },
        );
        if close {
            // A close whose request or reply is lost leaves the session to time out.
            let check = now + nanos(self.clients[client].timeout);
            self.schedule(
                check,
                Pending::SessionCheck {
                    client,
                    since: SESSION_CHECK_WHILE_CLOSING,
                },
            );
        }
    }

    /// The last handle of a client is gone: close its session unless it already ended.
    pub(crate) fn release(&mut self, client: usize) {
        let c = &self.clients[client];
        if c.terminal.is_none() && !c.closing {
            drop(self.close(client));
        }
    }

    /// Applies a fault now (for tests and the service handle).
    pub(crate) fn inject(&mut self, fault: Fault) {
        self.clock = self.now();
        self.fire_fault(fault);
    }

    fn process_next(&mut self) {
        let Some((t, what)) = self.queue.pop() else {
            return;
        };
        self.clock = self.clock.max(t);
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
                if matches!(self.clients[client].link, Link::Down { since: s, .. } if s == since) {
                    self.timer("link-up");
                    self.link_up(client);
                }
            }
            Pending::OutageEnd => {
                if self.outage_until.is_some_and(|u| u <= self.clock) {
                    self.timer("outage-end");
                    self.outage_until = None;
                    for client in 0..self.clients.len() {
                        if matches!(
                            self.clients[client].link,
                            Link::Down {
                                why: Down::Outage,
                                ..
                            }
                        ) {
                            self.link_up(client);
                        }
                    }
                }
            }
            Pending::SessionCheck { client, since } => self.session_check(client, since),
            Pending::StaleEnd { client } => {
                let c = &mut self.clients[client];
                if c.stale_until.is_some_and(|u| u <= self.clock) {
                    c.stale_until = None;
                    let session = c.session;
                    self.timer("stale-end");
                    let events = self.kernel.attach(session, Server::Leader);
                    self.route(events);
                }
            }
            Pending::Follower => {
                self.follower_timer = None;
                let lag = self.config.follower_lag().as_millis() as i64;
                let events = self.kernel.advance_follower(self.now_ms() - lag);
                self.route(events);
                self.arm_follower();
            }
            Pending::TimeLimit => {
                self.stopped = Some(Stop::TimeLimit(self.config.time_limit));
            }
        }
    }

    /// Makes sure the follower applies its oldest pending transaction once it is `lag` old:
    /// one timer at a time, for the oldest, rather than one per write.
    fn arm_follower(&mut self) {
        if self.follower_timer.is_some() {
            return;
        }
        let Some(oldest_ms) = self.kernel.follower_next_ms() else {
            return;
        };
        let lag_ms = self.config.follower_lag().as_millis() as i64;
        let due_ms = oldest_ms - self.config.epoch_ms + lag_ms + 1;
        let at = (u64::try_from(due_ms).unwrap_or(0) * 1_000_000).max(self.clock);
        self.follower_timer = Some(at);
        self.schedule(at, Pending::Follower);
    }

    fn timer(&mut self, name: &'static str) {
        let t = self.clock;
        self.log.push(
            LogEvent::Timer {
                t,
                timer: name.into(),
            },
            |_| {},
        );
    }

    fn at_server(&mut self, client: usize, epoch: u64, xid: u64, message: Message) {
        let t = self.clock;
        if self.clients[client].epoch != epoch {
            self.log.push(
                LogEvent::Dropped {
                    t,
                    client,
                    xid: Some(xid),
                },
                |_| {},
            );
            return;
        }
        self.step += 1;
        if let Some(faults) = self.step_faults.remove(&self.step) {
            for f in faults {
                self.fire_fault(f);
            }
        }
        // The fault stream is drawn in the same order for every request, so a run's faults
        // depend only on the seed and the sequence of requests.
        let rates = self.config.rates;
        let lose_request = take_armed(&mut self.armed_request_loss, client)
            | self.faults.chance(rates.request_lost);
        let lose_reply = self.faults.chance(rates.reply_lost);
        let session_faults = [
            (self.faults.chance(rates.disconnect), FaultKind::Disconnect),
            (self.faults.chance(rates.expire), FaultKind::SessionExpiry),
            (self.faults.chance(rates.pause), FaultKind::Pause),
            (self.faults.chance(rates.stale_reads), FaultKind::StaleReads),
            (self.faults.chance(rates.outage), FaultKind::Outage),
        ];
        let close = matches!(message, Message::Close);
        if lose_request && !close {
            self.count(FaultKind::RequestLost, Some(client));
            self.break_connection(client);
        } else {
            self.requests += 1;
            let session = self.clients[client].session;
            let now_ms = self.now_ms();
            let (result, events) = match &message {
                Message::Request(request) => {
                    let applied = self.kernel.apply(now_ms, session, request);
                    (applied.result.map(Some), applied.events)
                }
                Message::Close => {
                    let applied = self.kernel.close_session(now_ms, session);
                    (applied.result.map(|()| None), applied.events)
                }
            };
            let zxid = self.kernel.last_zxid();
            let outcome = outcome(&result);
            self.log.push(
                LogEvent::Applied {
                    t,
                    client,
                    xid,
                    zxid,
                    outcome,
                },
                |h| match &result {
                    Ok(Some(r)) => r.canon(h),
                    Ok(None) => canon_closed(h),
                    Err(e) => e.canon(h),
                },
            );
            self.route(events);
            let lose_reply = take_armed(&mut self.armed_reply_loss, client) | lose_reply;
            if lose_reply && !close {
                self.count(FaultKind::ReplyLost, Some(client));
                self.break_connection(client);
            } else {
                self.send_to_client(client, ClientMsg::Reply { xid, result });
            }
            if message.is_write() {
                let reaped = self.kernel.reap_containers(self.now_ms());
                self.route(reaped);
            }
            self.arm_follower();
        }
        for (hit, kind) in session_faults {
            if hit {
                let fault = self.draw_fault(kind, client);
                self.fire_fault(fault);
            }
        }
    }

    fn draw_fault(&mut self, kind: FaultKind, client: usize) -> Fault {
        let timeout = nanos(self.clients[client].timeout);
        let mut frac =
            |lo: u64, hi: u64| Duration::from_nanos(timeout / 100 * self.faults.between(lo, hi));
        match kind {
            FaultKind::Disconnect => Fault::Disconnect {
                client,
                duration: frac(10, 50),
            },
            FaultKind::SessionExpiry => Fault::ExpireSession { client },
            FaultKind::Pause => Fault::Pause {
                client,
                duration: frac(150, 200),
            },
            FaultKind::StaleReads => Fault::StaleReads {
                client,
                duration: frac(100, 300),
            },
            FaultKind::Outage => Fault::Outage {
                duration: frac(20, 60),
            },
            FaultKind::RequestLost | FaultKind::ReplyLost => {
                unreachable!("message faults are not drawn as session faults")
            }
        }
    }

    fn count(&mut self, kind: FaultKind, client: Option<usize>) {
        self.count_lasting(kind, client, None);
    }

    /// Counts and logs a fault; the log keeps its `duration`.
    fn count_lasting(
        &mut self,
        kind: FaultKind,
        client: Option<usize>,
        duration: Option<Duration>,
    ) {
        *self.fault_counts.entry(kind).or_default() += 1;
        let t = self.clock;
        let duration = duration.map(nanos);
        self.log.push(
            LogEvent::Fault {
                t,
                kind,
                client,
                duration,
            },
            |_| {},
        );
    }

    fn fire_fault(&mut self, fault: Fault) {
        let now = self.clock;
        let target = match &fault {
            Fault::RequestLost { client } | Fault::ReplyLost { client } => *client,
            Fault::Disconnect { client, .. }
            | Fault::ExpireSession { client }
            | Fault::Pause { client, .. }
            | Fault::StaleReads { client, .. } => Some(*client),
            Fault::Outage { .. } => None,
        };
        if let Some(client) = target {
            assert!(
                client < self.clients.len(),
                "{fault:?} names client {client}, but the run has {} clients",
                self.clients.len()
            );
        }
        match fault {
            Fault::RequestLost { client } => self.armed_request_loss.push(client),
            Fault::ReplyLost { client } => self.armed_reply_loss.push(client),
            Fault::Disconnect { client, duration } => {
                if self.is_live_and_up(client) {
                    self.count_lasting(FaultKind::Disconnect, Some(client), Some(duration));
                    self.go_down(client, Down::Disconnect, now + nanos(duration));
                }
            }
            Fault::Pause { client, duration } => {
                if self.is_live_and_up(client) {
                    self.count_lasting(FaultKind::Pause, Some(client), Some(duration));
                    self.go_down(client, Down::Pause, now + nanos(duration));
                }
            }
            Fault::ExpireSession { client } => {
                if self.kernel.is_alive(self.clients[client].session) {
                    self.count(FaultKind::SessionExpiry, Some(client));
                    self.expire(client);
                }
            }
            Fault::StaleReads { client, duration } => {
                let session = self.clients[client].session;
                if !self.kernel.has_follower() {
                    panic!(
                        "a StaleReads fault needs a lagging follower: configure the run with \
                         Builder::follower_lag or a stale_reads rate"
                    );
                }
                if self.kernel.is_alive(session) && self.clients[client].stale_until.is_none() {
                    self.count_lasting(FaultKind::StaleReads, Some(client), Some(duration));
                    let until = now + nanos(duration);
                    self.clients[client].stale_until = Some(until);
                    let events = self.kernel.attach(session, Server::Follower);
                    self.route(events);
                    self.schedule(until, Pending::StaleEnd { client });
                }
            }
            Fault::Outage { duration } => {
                if self.outage_until.is_none() {
                    self.count_lasting(FaultKind::Outage, None, Some(duration));
                    let until = now + nanos(duration);
                    self.outage_until = Some(until);
                    for client in 0..self.clients.len() {
                        if self.is_live_and_up(client) {
                            self.go_down(client, Down::Outage, until);
                        }
                    }
                    self.schedule(until, Pending::OutageEnd);
                }
            }
        }
    }

    /// The connection a request or reply was lost with dies, as a TCP connection does: every
    /// call still waiting on it fails with `ConnectionLoss`, whether or not the service has
    /// applied it, and requests still in flight on it are never applied. The client is back
    /// on a new connection of the same session shortly after. Losing one message while the
    /// connection carries on would let a request pipelined behind a lost `sync` read a state
    /// the `sync` was meant to rule out, which ZooKeeper never does.
    fn break_connection(&mut self, client: usize) {
        let c = &self.clients[client];
        if c.terminal.is_some() {
            return;
        }
        match c.link {
            Link::Up => {
                let timeout = nanos(c.timeout);
                let back = timeout / 100 * self.reconnects.between(2, 10);
                self.go_down(client, Down::Disconnect, self.clock + back);
            }
            Link::Down { why, since, until } => {
                // Already cut off (a paused client's requests still reach the service): the
                // connection it had dies too, and it comes back when the link does.
                let c = &mut self.clients[client];
                c.epoch += 1;
                if why == Down::Pause {
                    c.link = Link::Down {
                        why: Down::Disconnect,
                        since,
                        until,
                    };
                }
                self.publish(client, SessionState::Disconnected);
                self.fail_calls(client, &Error::ConnectionLoss);
            }
        }
    }

    fn is_live_and_up(&self, client: usize) -> bool {
        let c = &self.clients[client];
        c.terminal.is_none() && !c.closing && c.link == Link::Up
    }

    fn go_down(&mut self, client: usize, why: Down, until: u64) {
        let now = self.clock;
        let c = &mut self.clients[client];
        c.link = Link::Down {
            why,
            since: now,
            until,
        };
        if why != Down::Pause {
            c.epoch += 1;
            self.publish(client, SessionState::Disconnected);
            self.fail_calls(client, &Error::ConnectionLoss);
        }
        match why {
            Down::Outage => {}
            Down::Disconnect | Down::Pause => {
                let timeout = nanos(self.clients[client].timeout);
                self.schedule(now + timeout, Pending::SessionCheck { client, since: now });
                self.schedule(until, Pending::LinkUp { client, since: now });
            }
        }
    }

    fn link_up(&mut self, client: usize) {
        let Link::Down { why, .. } = self.clients[client].link else {
            return;
        };
        if self.clients[client].terminal.is_some() {
            self.clients[client].link = Link::Up;
            return;
        }
        if let Some(until) = self.outage_until
            && why != Down::Outage
        {
            // Back from a disconnect or a pause into an outage: still cut off.
            self.go_down(client, Down::Outage, until);
            return;
        }
        self.clients[client].link = Link::Up;
        let session = self.clients[client].session;
        if self.clients[client].server_expired || !self.kernel.is_alive(session) {
            self.terminate(client, SessionState::Expired);
            return;
        }
        if why != Down::Pause {
            self.publish(client, SessionState::Connected);
        }
        let held = std::mem::take(&mut self.clients[client].held);
        for (epoch, msg) in held {
            self.deliver(client, epoch, msg);
        }
    }

    fn session_check(&mut self, client: usize, since: u64) {
        let c = &self.clients[client];
        let silent = match c.link {
            _ if since == SESSION_CHECK_WHILE_CLOSING => true,
            Link::Down {
                why: Down::Disconnect | Down::Pause,
                since: s,
                ..
            } => s == since,
            _ => false,
        };
        if silent && self.kernel.is_alive(c.session) {
            self.timer("session-timeout");
            self.expire(client);
        }
    }

    fn expire(&mut self, client: usize) {
        let session = self.clients[client].session;
        let events = self.kernel.expire_session(self.now_ms(), session);
        self.route(events);
        self.arm_follower();
        let c = &mut self.clients[client];
        c.server_expired = true;
        if c.terminal.is_none() && c.link == Link::Up && !c.closing {
            self.send_to_client(client, ClientMsg::Expired);
        }
    }

    fn route(&mut self, events: Vec<Fired>) {
        for fired in events {
            if let Some(client) = self.client_of(fired.session) {
                self.send_to_client(client, ClientMsg::Event(fired.event));
            }
        }
    }

    fn send_to_client(&mut self, client: usize, msg: ClientMsg) {
        let latency = self.latency();
        let c = &mut self.clients[client];
        let at = (self.clock + latency).max(c.to_client_last);
        c.to_client_last = at;
        let epoch = c.epoch;
        self.schedule(at, Pending::ToClient { client, epoch, msg });
    }

    fn at_client(&mut self, client: usize, epoch: u64, msg: ClientMsg) {
        if self.clients[client].terminal.is_some() {
            return;
        }
        if self.clients[client].link != Link::Up {
            self.clients[client].held.push_back((epoch, msg));
            return;
        }
        self.deliver(client, epoch, msg);
    }

    fn deliver(&mut self, client: usize, epoch: u64, msg: ClientMsg) {
        let t = self.clock;
        match msg {
            ClientMsg::Reply { xid, result } => {
                if epoch != self.clients[client].epoch {
                    self.log.push(
                        LogEvent::Dropped {
                            t,
                            client,
                            xid: Some(xid),
                        },
                        |_| {},
                    );
                    return;
                }
                let Some(call) = self.clients[client].calls.remove(&xid) else {
                    return;
                };
                self.log.push(
                    LogEvent::Reply {
                        t,
                        client,
                        xid,
                        outcome: outcome(&result),
                    },
                    |_| {},
                );
                let close = call.is_close();
                self.complete(client, call, result);
                if close {
                    self.terminate(client, SessionState::Closed);
                }
            }
            ClientMsg::Event(event) => {
                self.log.push_with(
                    |h| canon_watch(h, t, client, event.kind, &event.path),
                    || LogEvent::Watch {
                        t,
                        client,
                        kind: event.kind,
                        path: event.path.clone(),
                    },
                );
                self.fire_watches(client, event);
            }
            ClientMsg::Expired => self.terminate(client, SessionState::Expired),
        }
    }

    fn complete(&mut self, client: usize, call: Call, result: Result<Option<Reply>>) {
        // The caller may have dropped its future; the request still happened.
        match (call.waiter, result) {
            (waiter, Err(e)) => waiter.fail(e),
            (Waiter::Close(tx), Ok(None)) => {
                let _ = tx.send(Ok(()));
            }
            (Waiter::Request(tx), Ok(Some(reply))) => {
                let watch = call.watch.map(|(kind, path)| {
                    let (sender, watch) = Watch::channel();
                    let set = self.clients[client].watches.entry(path).or_default();
                    match kind {
                        WatchKind::Data => set.data.push(sender),
                        WatchKind::Child => set.child.push(sender),
                    }
                    watch
                });
                let _ = tx.send(Ok((reply, watch)));
            }
            (Waiter::Close(_), Ok(Some(_))) | (Waiter::Request(_), Ok(None)) => {
                unreachable!("the service answers a close with None and a request with a reply")
            }
        }
    }

    /// Fans a server event out to the client's watches, as ZooKeeper's client does: data and
    /// exists watches for created, changed and deleted; child watches for children changed
    /// and deleted.
    fn fire_watches(&mut self, client: usize, event: WatchedEvent) {
        use avout::EventKind::*;
        let watches = &mut self.clients[client].watches;
        let Some(set) = watches.get_mut(&event.path) else {
            return;
        };
        let mut fire: Vec<WatchSender> = Vec::new();
        match event.kind {
            NodeCreated | NodeDataChanged => fire.append(&mut set.data),
            NodeChildrenChanged => fire.append(&mut set.child),
            NodeDeleted => {
                fire.append(&mut set.data);
                fire.append(&mut set.child);
            }
            _ => {}
        }
        if set.data.is_empty() && set.child.is_empty() {
            watches.remove(&event.path);
        }
        for tx in fire {
            tx.fire(event.clone());
        }
    }

    fn fail_calls(&mut self, client: usize, error: &Error) {
        let calls = std::mem::take(&mut self.clients[client].calls);
        let mut closed = false;
        for (xid, call) in calls {
            let t = self.clock;
            self.log.push(
                LogEvent::Reply {
                    t,
                    client,
                    xid,
                    outcome: error.name().into(),
                },
                |_| {},
            );
            closed |= call.is_close();
            call.waiter.fail(error.clone());
        }
        if closed {
            self.terminate(client, SessionState::Closed);
        }
    }

    fn publish(&mut self, client: usize, state: SessionState) {
        let c = &self.clients[client];
        if c.publisher.current() == state || c.publisher.current().is_terminal() {
            return;
        }
        c.publisher.publish(state);
        let t = self.clock;
        self.log.push(LogEvent::State { t, client, state }, |_| {});
    }

    /// The client learns that its session is over: every call fails with the terminal
    /// error, every watch fires with the session event, later calls fail at once.
    fn terminate(&mut self, client: usize, state: SessionState) {
        if self.clients[client].terminal.is_some() {
            return;
        }
        if state == SessionState::Expired {
            self.publish(client, SessionState::Disconnected);
        }
        self.clients[client].terminal = Some(state);
        self.publish(client, state);
        let error = state.terminal_error().expect("terminal state has an error");
        self.fail_calls(client, &error);
        let c = &mut self.clients[client];
        c.held.clear();
        let watches = std::mem::take(&mut c.watches);
        for (_, set) in watches {
            for tx in set.data.into_iter().chain(set.child) {
                tx.fire(WatchedEvent::session_ended(state));
            }
        }
    }
}

fn take_armed(armed: &mut Vec<Option<usize>>, client: usize) -> bool {
    match armed.iter().position(|a| a.is_none_or(|c| c == client)) {
        Some(i) => {
            armed.remove(i);
            true
        }
        None => false,
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
