//! The STM under protocol `Optimistic`: each client runs one small transaction over two refs,
//! `a` and `b`, through the production [`ReadMachine`] (a ref's first read in a try, when the
//! handle's cache does not have it) and [`CommitMachine`] (the commit `multi`, its refresh
//! after a refusal, its recovery after a lost reply), against the model ZooKeeper.
//!
//! The transactions (user code, which the model supplies): a **transfer** reads `a` and `b`
//! and writes `a - 1` and `b + 1`; a **reader** reads both and writes nothing. Client 1, 3, …
//! read; the others transfer (`avout model stm --clients 2`: one transfer, one reader).
//!
//! # The glue
//!
//! Between the machines runs what the engine (core's `stm/optimistic/mod.rs`, `Try`) does,
//! and the retry loop of `dosync` (`stm/tx.rs`):
//!
//! - a try's first read of a ref takes the client's cache ([`RefMap`], the production
//!   cache's logic) or reads the node with a `ReadMachine` (after a `sync`, sent with it)
//!   and remembers it;
//! - the commit is [`CommitSpec::of`] (production: the checks, the conditional writes with
//!   the header carrying the commit's id and the history) of what the try saw, with a fresh
//!   commit id, run by a `CommitMachine`;
//! - the outcome goes through [`CommitOutcome::settle`] (production: what goes into the
//!   cache or leaves it, and whether the transaction committed, runs its body again or
//!   fails).
//!
//! What is *mirrored*, not run: the few lines mapping a [`Settled`] to the transaction's
//! result, and `dosync`'s retry count (`tx.rs`: a retry past `StmConfig::retry_limit`
//! fails), async code over the `Attempt` trait; and the order in which the production driver
//! (core's `machine/driver.rs`) hands a machine what happens at a session's end: the calls
//! the client library fails first, then the session event (found by trace conformance:
//! [`crate::conformance`]). The cache is keyed by path here (the
//! engine keys it by ref name: the same map). The read-only shortcut (a try that read one ref from the server commits with
//! no request) never applies: the reader reads two refs, so it sends its checks.
//!
//! # Properties
//!
//! - `always` **a transfer conserves the total**: `a + b` on the server never changes.
//! - `always` **no lost update**: `b` equals the number of transfer commits the server
//!   applied (each applied transfer started from the value it replaced).
//! - `always` **applied at most once** (whatever replies were lost), and **acknowledged means
//!   applied**: a transfer that returned success had its commit applied. So the final value
//!   is the acknowledged commits plus at most the indeterminate ones.
//! - `always` **validated reads are a snapshot**: a reader that committed saw `a + b` equal
//!   to the total (a mix of two states would be off by one).
//! - `always` **retries are caused**: no client ran its body more often than once plus the
//!   commits other clients had applied plus the faults injected — no retry without a
//!   conflict, and no livelock. (The retry *limit* is the mirrored loop's, checked by
//!   nothing here; the bound above keeps every run far below `StmConfig`'s default.)
//! - `sometimes` **a conflict retried**, **a lost commit reply recovered** (the commit's id
//!   found in the written refs' headers), **a read-only transaction validates**.
//! - `eventually` **every transaction finishes** (committed, or failed with a fault).

use std::collections::BTreeMap;

use avout::machine::{Machine, Millis, Reply, Request, Token};
use avout::planted::Bug;
use avout::stm::optimistic::{
    CommitMachine, CommitOutcome, CommitSpec, Node, ReadMachine, RefMap, Settled, initial_data,
    value_of,
};
use avout::{Error, Op, SessionState, WatchedEvent};
use stateright::{Model, Property};

use crate::tx;
use crate::world::{Action, Agent, Faults, NOW, Run, Space, World};

/// The STM's root; refs live under `<root>/refs`.
///
/// ```
/// assert_eq!(avout_models::stm::REF_A, "/stm/refs/a");
/// ```
pub const ROOT: &str = "/stm";
/// Ref `a`'s node.
pub const REF_A: &str = "/stm/refs/a";
/// Ref `b`'s node.
pub const REF_B: &str = "/stm/refs/b";

/// Previous values kept in each node (`StmConfig::max_history - 1` with the default 10): the
/// history rides in the node's bytes and decides nothing, but is written as production does.
const KEEP: usize = 9;

/// What a client's transaction does.
///
/// ```
/// assert_eq!(avout_models::stm::Body::for_client(1), avout_models::stm::Body::Reader);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Body {
    /// Reads `a` and `b`, writes `a - 1` and `b + 1`.
    Transfer,
    /// Reads `a` and `b`, writes nothing.
    Reader,
}

impl Body {
    /// Client `index`'s body: odd clients read, even ones transfer.
    ///
    /// ```
    /// assert_eq!(avout_models::stm::Body::for_client(0), avout_models::stm::Body::Transfer);
    /// ```
    pub fn for_client(index: u8) -> Body {
        if index % 2 == 1 {
            Body::Reader
        } else {
            Body::Transfer
        }
    }
}

/// How a client's transaction ended.
///
/// ```
/// use avout_models::stm::Ended;
/// assert_ne!(Ended::Committed { a: 1, b: 0 }, Ended::Indeterminate);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ended {
    /// It committed, having read these values (in its last try).
    Committed {
        /// `a` as read.
        a: u64,
        /// `b` as read.
        b: u64,
    },
    /// It failed with this coordination error (session lost, …).
    Failed(Error),
    /// A lost commit reply could not be decided (`StmError::Indeterminate`).
    Indeterminate,
    /// The retry limit was passed.
    RetryLimit,
}

/// What a try saw of a ref.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Seen {
    node: Node,
    /// Read from the server in this try (not served by the cache).
    fresh: bool,
}

/// The machine a client is running.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[allow(
    clippy::large_enum_variant,
    reason = "one machine per client; boxing would allocate in every clone of a model state"
)]
enum Running {
    Reading(String, Run<ReadMachine>),
    Committing(Run<CommitMachine>),
}

/// A client running one transaction.
///
/// ```
/// use avout_models::stm::StmAgent;
/// let a = StmAgent::new(0, 100);
/// assert_eq!((a.tries, a.applied, a.ended.clone()), (0, 0, None));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StmAgent {
    /// The client's index.
    pub index: u8,
    /// Its transaction.
    pub body: Body,
    retry_limit: u32,
    /// The handle's cache (its own: one `Stm` handle per client).
    cache: RefMap,
    /// The current try's reads, by path.
    seen: BTreeMap<String, Seen>,
    /// Tries started (the body ran this often).
    pub tries: u32,
    commits: u32,
    /// The ops of the commit in flight (the engine keeps them to remember what it wrote).
    ops: Vec<Op>,
    /// Requests sent and not answered yet (the client library's calls in flight).
    in_flight: Vec<Token>,
    generation: u32,
    running: Option<Running>,
    /// How the transaction ended, once it has.
    pub ended: Option<Ended>,
    /// Ghost: how many of its writing commits the server applied.
    pub applied: u8,
    /// Ghost: a try was refused and the body ran again.
    pub conflicted: bool,
    /// Ghost: an applied commit was decided by the recovery read after a lost reply.
    pub recovered: bool,
}

impl StmAgent {
    /// Client `index` with the given retry limit, before its transaction.
    /// See [`StmAgent`] for an example.
    pub fn new(index: u8, retry_limit: u32) -> Self {
        StmAgent {
            index,
            body: Body::for_client(index),
            retry_limit,
            cache: RefMap::default(),
            seen: BTreeMap::new(),
            tries: 0,
            commits: 0,
            ops: Vec::new(),
            in_flight: Vec::new(),
            generation: 0,
            running: None,
            ended: None,
            applied: 0,
            conflicted: false,
            recovered: false,
        }
    }

    fn next_generation(&mut self) -> u32 {
        self.generation += 1;
        self.generation
    }

    /// A new try: the body runs again from its first read.
    fn begin(&mut self) {
        self.tries += 1;
        self.seen.clear();
        self.advance();
    }

    /// Runs the body as far as it goes without the server: reads served by the cache, then
    /// the next server read or the commit.
    fn advance(&mut self) {
        for path in [REF_A, REF_B] {
            if self.seen.contains_key(path) {
                continue;
            }
            match self.cache.get(path) {
                Some(node) => {
                    let node = node.clone();
                    self.seen.insert(path.into(), Seen { node, fresh: false });
                }
                None => {
                    let generation = self.next_generation();
                    let machine = ReadMachine::new(vec![path.into()], true);
                    self.running = Some(Running::Reading(
                        path.into(),
                        Run::start(generation, machine),
                    ));
                    return self.settle();
                }
            }
        }
        self.commit();
    }

    fn value(&self, path: &str) -> u64 {
        decode(&self.seen[path].node.data)
    }

    fn commit(&mut self) {
        self.commits += 1;
        let txn = (u128::from(self.index) + 1) << 64 | u128::from(self.commits);
        let refresh = self.seen.keys().cloned().collect();
        let node = |path: &str| self.seen[path].node.clone();
        let spec = match self.body {
            Body::Transfer => {
                let (a, b) = (self.value(REF_A), self.value(REF_B));
                let writes = vec![
                    (REF_A.into(), node(REF_A), (a - 1).to_string().into_bytes()),
                    (REF_B.into(), node(REF_B), (b + 1).to_string().into_bytes()),
                ];
                CommitSpec::of(txn, KEEP, Vec::new(), writes, Vec::new(), refresh)
            }
            Body::Reader => {
                debug_assert!(
                    self.seen.len() == 2,
                    "the one-fresh-read shortcut does not apply"
                );
                let checks = self
                    .seen
                    .iter()
                    .map(|(path, seen)| (path.clone(), seen.node.stat.version))
                    .collect();
                CommitSpec::of(txn, KEEP, checks, Vec::new(), Vec::new(), refresh)
            }
        };
        self.ops = spec.ops.clone();
        let generation = self.next_generation();
        self.running = Some(Running::Committing(Run::start(
            generation,
            CommitMachine::new(spec),
        )));
        self.settle();
    }

    /// The body runs again, within the retry limit (`tx.rs`'s loop).
    fn retry(&mut self) {
        self.conflicted = true;
        if self.tries > self.retry_limit {
            self.ended = Some(Ended::RetryLimit);
        } else {
            self.begin();
        }
    }

    fn settle(&mut self) {
        match self.running.take() {
            Some(Running::Reading(path, mut run)) => match run.machine.poll_output() {
                None => self.running = Some(Running::Reading(path, run)),
                Some(Ok(mut nodes)) => {
                    let node = nodes.pop().flatten().expect("refs are never deleted here");
                    self.cache.remember([(path.clone(), Some(node.clone()))]);
                    self.seen.insert(path, Seen { node, fresh: true });
                    self.advance();
                }
                Some(Err(e)) => self.ended = Some(Ended::Failed(e)),
            },
            Some(Running::Committing(mut run)) => {
                let Some(outcome) = run.machine.poll_output() else {
                    self.running = Some(Running::Committing(run));
                    return;
                };
                let ops = std::mem::take(&mut self.ops);
                let touched: Vec<String> = self.seen.keys().cloned().collect();
                // The cache is keyed by path here: the key of a path is the path.
                match outcome.settle(&mut self.cache, &ops, &touched, str::to_owned) {
                    Settled::Committed => {
                        self.recovered |= run.machine.recovered();
                        let (a, b) = (self.value(REF_A), self.value(REF_B));
                        self.ended = Some(Ended::Committed { a, b });
                    }
                    Settled::Retry => self.retry(),
                    Settled::Unknown => self.ended = Some(Ended::Indeterminate),
                    Settled::Failed => {
                        let CommitOutcome::Failed(e) = outcome else {
                            unreachable!("settled as failed: {outcome:?}")
                        };
                        self.ended = Some(Ended::Failed(e));
                    }
                    Settled::Deleted => unreachable!("refs are never deleted here"),
                    Settled::Recompute { .. } => unreachable!("nothing is commuted"),
                }
            }
            None => {}
        }
    }

    fn with_running(
        &mut self,
        read: impl FnOnce(&mut Run<ReadMachine>),
        commit: impl FnOnce(&mut Run<CommitMachine>),
    ) {
        match &mut self.running {
            Some(Running::Reading(_, run)) => read(run),
            Some(Running::Committing(run)) => commit(run),
            None => return,
        }
        self.settle();
    }
}

/// The number in a ref's node data.
///
/// ```
/// let data = avout::stm::optimistic::initial_data(b"41");
/// assert_eq!(avout_models::stm::decode(&data), 41);
/// ```
pub fn decode(data: &[u8]) -> u64 {
    std::str::from_utf8(&value_of(data))
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("a number")
}

crate::tx::tx_client!(StmAgent);

impl Agent for StmAgent {
    fn start(&mut self, _session: i64) {
        self.begin();
    }

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        let sent = match &mut self.running {
            Some(Running::Reading(_, run)) => run.poll_request(),
            Some(Running::Committing(run)) => run.poll_request(),
            None => None,
        };
        if let Some((token, _)) = &sent {
            self.in_flight.push(*token);
        }
        sent
    }

    fn handle_reply(&mut self, token: Token, reply: avout::Result<Reply>) {
        self.in_flight.retain(|t| *t != token);
        match &mut self.running {
            Some(Running::Reading(_, run)) => run.handle_reply(token, reply),
            Some(Running::Committing(run)) => run.handle_reply(token, reply),
            None => return,
        }
        self.settle();
    }

    fn handle_watch(&mut self, _token: Token, _event: WatchedEvent) {
        // Neither machine arms a watch.
    }

    fn handle_session(&mut self, state: SessionState) {
        if let Some(error) = state.terminal_error() {
            // The session ended: the client library fails every call in flight, and the
            // production driver (core's `machine/driver.rs`, `Driving::finish`) hands a
            // machine its replies before session events, so the machine reads those
            // failures first. It matters to a commit refreshing the refs after a refusal:
            // a failed refresh settles as a conflict (the body runs again, or the retry
            // limit is reached) where the session event would fail it. The world ends the
            // session with the event alone (it is moot for the other models' machines);
            // trace conformance found the difference (2 clients, seed 41, retry limit 0:
            // production reported the retry limit, the model the lost session).
            for token in std::mem::take(&mut self.in_flight) {
                self.handle_reply(token, Err(error.clone()));
            }
        }
        self.with_running(
            |run| run.machine.handle_session(NOW, state),
            |run| run.machine.handle_session(NOW, state),
        );
    }

    fn poll_timer(&self) -> Option<Millis> {
        match &self.running {
            Some(Running::Reading(_, run)) => run.machine.poll_timer(),
            Some(Running::Committing(run)) => run.machine.poll_timer(),
            None => None,
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        self.with_running(
            |run| run.machine.handle_timer(now),
            |run| run.machine.handle_timer(now),
        );
    }

    fn observe_applied(&mut self, request: &Request, result: &avout::Result<Reply>, _lost: bool) {
        if let (Request::Multi(ops), Ok(_)) = (request, result)
            && ops.iter().any(|op| matches!(op, Op::SetData { .. }))
        {
            self.applied += 1;
        }
    }

    fn finished(&self) -> bool {
        self.ended.is_some()
    }

    fn summary(&self) -> String {
        let what = match self.body {
            Body::Transfer => "transfer",
            Body::Reader => "reader",
        };
        let state = match &self.ended {
            Some(Ended::Committed { a, b }) => format!("committed, read a={a} b={b}"),
            Some(Ended::Failed(e)) => format!("failed: {e}"),
            Some(Ended::Indeterminate) => "failed: indeterminate".into(),
            Some(Ended::RetryLimit) => "failed: retry limit".into(),
            None => match &self.running {
                Some(Running::Reading(path, _)) => format!("reading {path}"),
                Some(Running::Committing(_)) => "committing".into(),
                None => "between steps".into(),
            },
        };
        let mut line = format!("{what} try {}: {state}", self.tries);
        if self.applied > 0 {
            line.push_str(&format!(
                "; the server applied {} of its commits",
                self.applied
            ));
        }
        line
    }
}

/// The STM model; see the [module docs](self).
///
/// ```
/// let report = avout_models::check(avout_models::stm::StmModel::new(2), Default::default());
/// assert!(report.ok(), "{report}");
/// ```
#[derive(Clone, Debug)]
pub struct StmModel {
    /// How many clients (odd ones read, even ones transfer).
    pub clients: u8,
    /// The faults the environment may inject.
    pub faults: Faults,
    /// `StmConfig::retry_limit`.
    pub retry_limit: u32,
    /// A planted bug, in the configuration of the clients' machines (feature `planted-bugs`).
    pub bug: Option<Bug>,
    /// What the model's states share (see [`Space`]); [`crate::check()`] gives each check a
    /// fresh one.
    pub space: Space<StmAgent>,
}

impl StmModel {
    /// `clients` clients, at most one fault of any kind, the default retry limit.
    /// See [`StmModel`] for an example.
    pub fn new(clients: u8) -> Self {
        StmModel {
            clients,
            faults: Faults::classic(1),
            retry_limit: avout::stm::StmConfig::default().retry_limit,
            bug: None,
            space: Space::default(),
        }
    }

    fn transfers(&self) -> u64 {
        (0..self.clients)
            .filter(|&i| Body::for_client(i) == Body::Transfer)
            .count() as u64
    }
}

fn on_server(state: &World<StmAgent>, path: &str) -> u64 {
    decode(&state.kernel.tree().node(path).expect("a ref").data)
}

fn applied(state: &World<StmAgent>) -> u64 {
    state
        .clients
        .iter()
        .map(|c| u64::from(c.agent.applied))
        .sum()
}

fn faults_used(model: &StmModel, state: &World<StmAgent>) -> u64 {
    u64::from(model.faults.budget - state.faults_left)
}

/// No client ran its body more often than once, plus the commits the others had applied,
/// plus the faults so far.
fn retries_caused(model: &StmModel, state: &World<StmAgent>) -> bool {
    let total = applied(state);
    state.clients.iter().all(|c| {
        let others = total - u64::from(c.agent.applied);
        u64::from(c.agent.tries) <= 1 + others + faults_used(model, state)
    })
}

impl Model for StmModel {
    type State = World<StmAgent>;
    type Action = Action;

    fn init_states(&self) -> Vec<Self::State> {
        // No machine of the Optimistic STM has a planted bug: `bug` is only checked.
        crate::plant(self.bug);
        let agents = (0..self.clients)
            .map(|i| StmAgent::new(i, self.retry_limit))
            .collect();
        let create = |path: &str, data: Vec<u8>| Request::Create {
            path: path.into(),
            data,
            options: Default::default(),
        };
        // What production's `Stm::open` and `make_ref` leave: the root claimed for the
        // protocol (core's `stm/root.rs` marker), `<root>/refs`, the refs' first versions
        // with JSON numbers (trace conformance starts from the simulator's server instead).
        let setup = [
            create(ROOT, b"avout-stm:optimistic".to_vec()),
            create("/stm/refs", Vec::new()),
            create(REF_A, initial_data(self.transfers().to_string().as_bytes())),
            create(REF_B, initial_data(b"0")),
        ];
        vec![World::new(agents, self.faults, &setup)]
    }

    fn actions(&self, state: &Self::State, actions: &mut Vec<Self::Action>) {
        self.space.actions(state, &self.faults, actions);
    }

    fn next_state(&self, last: &Self::State, action: Self::Action) -> Option<Self::State> {
        Some(self.space.after(last, action))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always(
                "a transfer conserves the total",
                |m: &StmModel, s: &World<StmAgent>| {
                    on_server(s, REF_A) + on_server(s, REF_B) == m.transfers()
                },
            ),
            Property::always("no lost update", |_, s: &World<StmAgent>| {
                on_server(s, REF_B) == applied(s)
            }),
            Property::always("applied at most once", |_, s| tx::at_most_once(s)),
            Property::always("acknowledged means applied", |_, s| {
                tx::acknowledged_applied(s)
            }),
            Property::always(
                "validated reads are a snapshot",
                |m: &StmModel, s: &World<StmAgent>| {
                    s.clients.iter().all(|c| match c.agent.ended {
                        Some(Ended::Committed { a, b }) => a + b == m.transfers(),
                        _ => true,
                    })
                },
            ),
            Property::always("retries are caused", retries_caused),
            Property::eventually("every transaction finishes", |_, s| tx::all_finished(s)),
        ];
        if self.transfers() > 0 && self.clients > 1 {
            properties.push(Property::sometimes("a conflict retried", |_, s| {
                tx::conflict_retried(s)
            }));
        }
        if self.faults.budget > 0 && self.faults.reply_lost && self.transfers() > 0 {
            properties.push(Property::sometimes(
                "a lost commit reply recovered",
                |_, s| tx::lost_reply_recovered(s),
            ));
        }
        if self.clients > 1 {
            properties.push(Property::sometimes(
                "a read-only transaction validates",
                |_, s| tx::reader_validated(s),
            ));
        }
        properties.extend(crate::world::fault_examples(&self.faults));
        properties
    }
}
