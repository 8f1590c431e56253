//! The STM under protocol `Mvcc`: each client runs one small transaction over two refs, `a`
//! and `b`, through the production [`TryMachine`] (one try: reads at the read point, tagging
//! and barging at the first write of each ref, the move to `COMMITTING` with the write locks,
//! the commit `multi`, the cleanup and the blocked wait) against the model ZooKeeper.
//!
//! The transactions (user code, which the model supplies, as `dosync` bodies would): a
//! **transfer** is `alter(a, -1)` then `alter(b, +1)` — read `a`, write `a`, read `b`, write
//! `b`, commit — and a **reader** reads `a` and `b` and writes nothing. Clients 0 and 1
//! transfer, client 2 reads, client 3 transfers (`avout model mvcc --clients 2`: two
//! transfers, which may barge each other; `--clients 3` adds the reader, whose read of a
//! trimmed value is a read fault).
//!
//! # The glue
//!
//! Everything of a try is the machine's; what stays outside is what the frontend does
//! around it (`stm/tx.rs`, `stm/mvcc/attempt.rs`), mirrored here in a few lines: issue the
//! body's next command when the last one is answered, draw the GUIDs (try and lock nodes),
//! keep the transaction's age across tries, run the body again after a retryable halt
//! within the retry limit, and say whether BARGE-WAIT has passed.
//!
//! **BARGE-WAIT** is time, which the model does not have: with `barge_wait` set, a client
//! starts unable to barge and its script may at any moment take the step "BARGE-WAIT
//! passes" (once per transaction, as the wait is measured from the transaction's start);
//! without it, every client may barge from the start (BARGE-WAIT 0).
//!
//! **Timers** (a lock wait, a blocked try's wait for its blocker, the pause before a redo
//! after a connection loss) fire whenever the checker chooses, but at most `timers` times per
//! client plus once per fault: a timer is "long enough passed", and without a bound a
//! blocked try could time out and retry forever while its blocker is never scheduled — an
//! unfair schedule, and an unbounded state space. Past the bound, a waiting try waits for
//! its watch (its blocker's point changing, a lock released).
//!
//! # Properties
//!
//! - `always` a transfer **conserves the total**; **no lost update** (`b` equals the transfer
//!   commits the server applied); **applied at most once**; **acknowledged means applied**;
//!   a committed reader's reads are a **snapshot** (`a + b` equals the total).
//! - `always` **a COMMITTING transaction is never killed**: a point is killed only from
//!   `RUNNING` (version 0 to 1: a `KILLED` point at a later version was `COMMITTING` first),
//!   and no try's commit finds its point killed (`Halt::Violation`).
//! - `always` **only an older transaction barges a younger one, and only after BARGE-WAIT**:
//!   every compare-and-set to `KILLED` the server applies is sent by a client whose
//!   BARGE-WAIT has passed, against a point whose transaction id (age, then GUID) is greater
//!   than its own.
//! - `always` **the newest committed value is never trimmed**: each ref's history holds the
//!   node its newest value was committed with (created by the `multi` that set the ref).
//! - `always` **retries stay within the limit**: no transaction fails with the retry limit
//!   (`retry_limit`, by default production's, which the bounded timers keep far away).
//! - `eventually` **every transaction finishes**; without faults, **the oldest transaction
//!   commits** (the one with the smallest read point; with stateright's `eventually`, on
//!   every path, which the timer bound makes fair).
//! - `sometimes` **a barge happens** (two transfers), **a read fault happens** (a reader, two
//!   transfers, MAX-HISTORY 1), **a conflict retried**, **a lost commit reply recovered**
//!   (with reply faults), **a read-only transaction validates** (a reader).

use avout::machine::{Machine, Millis, Reply, Request, Token};
use avout::planted::Bug;
use avout::stm::mvcc::{
    CommitOrder, Halt, Outcome, TryConfig, TryMachine, create_ref_ops, root_paths,
};
use avout::{Op, SessionState, WatchedEvent};
use stateright::{Model, Property};

use crate::world::{Action, Agent, Faults, NOW, Run, World};

/// The STM's root.
///
/// ```
/// assert_eq!(avout_models::mvcc::ROOT, "/mvcc");
/// ```
pub const ROOT: &str = "/mvcc";

/// Ref `a`'s node.
///
/// ```
/// assert_eq!(avout_models::mvcc::REF_A, "/mvcc/refs/a");
/// ```
pub const REF_A: &str = "/mvcc/refs/a";

/// Ref `b`'s node.
pub const REF_B: &str = "/mvcc/refs/b";

/// Tries after which BARGE-WAIT has passed whatever the schedule: a try that retries has
/// waited for a conflicting commit or for its blocker (up to the lock wait, 100 ms), far
/// longer than BARGE-WAIT (10 ms by default).
pub const BARGE_WAIT_TRIES: u32 = 2;

/// The depth `avout model mvcc` stops at unless `--depth` says otherwise: the whole state
/// space of two clients is tens of millions of states (each try pipelines eleven requests
/// whose applications and replies interleave with the other client's), so the model is
/// checked to a bound — every schedule of at most this many steps, long enough for a barge
/// (two clients, no faults: 326,309 unique states, 23 s in a release build).
pub const DEFAULT_DEPTH: usize = 25;

/// The transaction points' directory.
const POINTS: &str = "/mvcc/stm/history";

/// What the clients run.
///
/// ```
/// use avout_models::mvcc::{Body, Workload};
/// assert_eq!(Workload::Increments.body(1), Body::Increment);
/// assert_eq!(Workload::Transfers.body(1), Body::Reader);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Writers increment `a` (`avout model mvcc`): the smallest contention, barging included.
    Increments,
    /// Writers transfer one from `a` to `b` (`avout model mvcc-bank`): two refs per commit.
    Transfers,
}

impl Workload {
    /// Client `index`'s body. Increments: the third of every three reads, the others
    /// write; transfers: odd clients read, even ones transfer (as the stm model). See
    /// [`Workload`].
    pub fn body(self, index: u8) -> Body {
        match self {
            Workload::Increments if index % 3 == 2 => Body::Reader,
            Workload::Increments => Body::Increment,
            Workload::Transfers if index % 2 == 1 => Body::Reader,
            Workload::Transfers => Body::Transfer,
        }
    }
}

/// What a client's transaction does.
///
/// ```
/// assert_ne!(avout_models::mvcc::Body::Increment, avout_models::mvcc::Body::Reader);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Body {
    /// `alter(a, +1)`.
    Increment,
    /// `alter(a, -1)`, `alter(b, +1)`.
    Transfer,
    /// Reads `b`, then `a` (its read point is fixed by the first read: the second may find
    /// its value trimmed).
    Reader,
}

impl Body {
    /// The body's commands in order.
    fn script(self) -> &'static [Command] {
        match self {
            Body::Increment => &[Command::Read("a"), Command::Write("a"), Command::Commit],
            Body::Transfer => &[
                Command::Read("a"),
                Command::Write("a"),
                Command::Read("b"),
                Command::Write("b"),
                Command::Commit,
            ],
            Body::Reader => &[Command::Read("b"), Command::Read("a"), Command::Commit],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Command {
    Read(&'static str),
    Write(&'static str),
    Commit,
}

/// How a client's transaction ended.
///
/// ```
/// use avout_models::mvcc::Ended;
/// assert_ne!(Ended::Committed { a: 1, b: 0 }, Ended::RetryLimit);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ended {
    /// It committed, having read these values in its last try.
    Committed {
        /// `a` as read.
        a: u64,
        /// `b` as read.
        b: u64,
    },
    /// It failed: the halt that is not retried (session lost, a protocol violation, …).
    Failed(Halt),
    /// The retry limit was passed.
    RetryLimit,
}

/// A client running one Mvcc transaction.
///
/// ```
/// use avout_models::mvcc::MvccAgent;
/// let a = MvccAgent::new(0, avout_models::mvcc::Body::Increment, 100, 1, true, 2);
/// assert_eq!((a.tries, a.applied), (0, 0));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MvccAgent {
    /// The client's index.
    pub index: u8,
    /// Its transaction.
    pub body: Body,
    retry_limit: u32,
    max_history: usize,
    session: i64,
    /// Whether BARGE-WAIT has passed.
    pub may_barge: bool,
    /// Timer firings left.
    timers_left: u8,
    /// The transaction's age, once its first read fixed it.
    pub age: Option<i64>,
    /// Tries started.
    pub tries: u32,
    guids: u32,
    generation: u32,
    run: Option<Run<TryMachine>>,
    /// The next command of the body.
    next: usize,
    read_a: Option<u64>,
    read_b: Option<u64>,
    /// How the transaction ended, once it has.
    pub ended: Option<Ended>,
    /// Ghost: writing commits the server applied.
    pub applied: u8,
    /// Ghost: a try was retried.
    pub conflicted: bool,
    /// Ghost: a commit was decided by the recovery read after a lost reply.
    pub recovered: bool,
    /// Ghost: younger transactions barged.
    pub barges: u32,
    /// Ghost: a read found its value trimmed.
    pub read_fault: bool,
    /// Ghost: a compare-and-set to `KILLED` this client sent that broke the barging rule.
    pub bad_barge: Option<String>,
}

impl MvccAgent {
    /// Client `index` running `body`; `may_barge`: BARGE-WAIT has passed from the start;
    /// `timers`: timer firings allowed. See [`MvccAgent`].
    pub fn new(
        index: u8,
        body: Body,
        retry_limit: u32,
        max_history: usize,
        may_barge: bool,
        timers: u8,
    ) -> Self {
        MvccAgent {
            index,
            body,
            retry_limit,
            max_history,
            session: 0,
            may_barge,
            timers_left: timers,
            age: None,
            tries: 0,
            guids: 0,
            generation: 0,
            run: None,
            next: 0,
            read_a: None,
            read_b: None,
            ended: None,
            applied: 0,
            conflicted: false,
            recovered: false,
            barges: 0,
            read_fault: false,
            bad_barge: None,
        }
    }

    /// A GUID of this client's: the client in the high bits, so trace lines stay readable.
    fn guid(&mut self) -> u128 {
        self.guids += 1;
        (u128::from(self.index) + 1) << 80 | u128::from(self.guids)
    }

    fn machine(&mut self) -> &mut TryMachine {
        &mut self.run.as_mut().expect("a try").machine
    }

    /// A new try: the body runs again from its first command.
    fn begin(&mut self) {
        self.tries += 1;
        // BARGE-WAIT is shorter than two tries (see the module docs).
        self.may_barge |= self.tries > BARGE_WAIT_TRIES;
        self.generation += 1;
        let config = TryConfig {
            root: ROOT.into(),
            guid: self.guid(),
            session: self.session,
            age: self.age,
            max_history: self.max_history,
        };
        self.run = Some(Run::start(self.generation, TryMachine::new(config)));
        self.next = 0;
        self.read_a = None;
        self.read_b = None;
        self.issue();
    }

    /// Gives the machine the body's next command.
    fn issue(&mut self) {
        match self.body.script()[self.next] {
            Command::Read(name) => self.machine().read(NOW, name),
            Command::Write(name) => {
                let may_barge = self.may_barge;
                self.machine().write(NOW, name, may_barge);
            }
            Command::Commit => {
                let order = match self.body {
                    Body::Increment => {
                        let a = self.read_a.expect("read");
                        CommitOrder {
                            writes: vec![("a".into(), (a + 1).to_string().into_bytes())],
                            commutes: Vec::new(),
                            lock: vec![("a".to_owned(), self.guid())],
                            may_barge: self.may_barge,
                        }
                    }
                    Body::Transfer => {
                        let (a, b) = (self.read_a.expect("read"), self.read_b.expect("read"));
                        let mut lock =
                            vec![("a".to_owned(), self.guid()), ("b".to_owned(), self.guid())];
                        lock.sort();
                        CommitOrder {
                            writes: vec![
                                ("a".into(), (a - 1).to_string().into_bytes()),
                                ("b".into(), (b + 1).to_string().into_bytes()),
                            ],
                            commutes: Vec::new(),
                            lock,
                            may_barge: self.may_barge,
                        }
                    }
                    Body::Reader => CommitOrder {
                        writes: Vec::new(),
                        commutes: Vec::new(),
                        lock: Vec::new(),
                        may_barge: self.may_barge,
                    },
                };
                self.machine().commit(NOW, order);
            }
        }
        self.settle();
    }

    /// Takes the machine's answer, if any, and moves the body on.
    fn settle(&mut self) {
        let Some(run) = &mut self.run else { return };
        let Some(outcome) = run.machine.poll_output() else {
            return;
        };
        let stats = run.machine.take_stats();
        if let Some(age) = run.machine.age() {
            self.age.get_or_insert(age);
        }
        self.barges += stats.barges as u32;
        self.recovered |= stats.recoveries > 0;
        self.read_fault |= stats.read_faults > 0;
        match outcome {
            Outcome::Read(value) => {
                let n = decode(&value);
                match self.body.script()[self.next] {
                    Command::Read("a") => self.read_a = Some(n),
                    _ => self.read_b = Some(n),
                }
                self.next += 1;
                self.issue();
            }
            Outcome::Done if self.body.script()[self.next] == Command::Commit => self.commit(),
            Outcome::Done => {
                self.next += 1;
                self.issue();
            }
            Outcome::Committed(_) => self.commit(),
            Outcome::Failed(halt) if halt.retries() => {
                self.conflicted = true;
                // `dosync`'s loop: a retry past the limit fails.
                if self.tries > self.retry_limit {
                    self.run = None;
                    self.ended = Some(Ended::RetryLimit);
                } else {
                    self.begin();
                }
            }
            Outcome::Failed(halt) => {
                self.run = None;
                self.ended = Some(Ended::Failed(halt));
            }
            Outcome::Recompute(_) => unreachable!("nothing is commuted"),
        }
    }

    fn commit(&mut self) {
        self.run = None;
        self.ended = Some(Ended::Committed {
            a: self.read_a.expect("read"),
            b: self.read_b.unwrap_or(0),
        });
    }

    /// Checks a compare-and-set to `KILLED` this client's machine sent and the server
    /// applied: the victim is younger (its transaction id, age then GUID, is greater) and
    /// BARGE-WAIT has passed.
    fn check_barge(&mut self, path: &str) {
        let Some(victim) = path.strip_prefix(POINTS).and_then(|p| p.strip_prefix('/')) else {
            return;
        };
        let me = self.run.as_ref().map(|r| r.machine.txid().to_owned());
        let older = me
            .as_deref()
            .is_some_and(|me| !me.is_empty() && me < victim);
        if !older || !self.may_barge {
            self.bad_barge = Some(format!(
                "{} killed {victim} (older: {older}, BARGE-WAIT passed: {})",
                me.unwrap_or_default(),
                self.may_barge
            ));
        }
    }
}

/// The number in a ref's value.
///
/// ```
/// assert_eq!(avout_models::mvcc::decode(b"41"), 41);
/// ```
pub fn decode(value: &[u8]) -> u64 {
    std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("a number")
}

fn is_kill(data: &[u8]) -> bool {
    data.starts_with(b"KILLED ")
}

impl Agent for MvccAgent {
    fn start(&mut self, session: i64) {
        self.session = session;
        self.begin();
    }

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.run.as_mut()?.poll_request()
    }

    fn handle_reply(&mut self, token: Token, reply: avout::Result<Reply>) {
        if let Some(run) = &mut self.run {
            run.handle_reply(token, reply);
            self.settle();
        }
    }

    fn handle_watch(&mut self, token: Token, event: WatchedEvent) {
        if let Some(run) = &mut self.run {
            run.handle_watch(token, event);
            self.settle();
        }
    }

    fn handle_session(&mut self, state: SessionState) {
        if let Some(run) = &mut self.run {
            run.machine.handle_session(NOW, state);
            self.settle();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        if self.timers_left == 0 {
            return None;
        }
        self.run.as_ref()?.machine.poll_timer()
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Some(run) = &mut self.run {
            self.timers_left -= 1;
            run.machine.handle_timer(now);
            self.settle();
        }
    }

    fn script_step(&self) -> Option<&'static str> {
        (!self.may_barge && self.ended.is_none()).then_some("lets BARGE-WAIT pass")
    }

    fn take_script_step(&mut self) {
        self.may_barge = true;
    }

    fn observe_applied(&mut self, request: &Request, result: &avout::Result<Reply>, _lost: bool) {
        match (request, result) {
            (Request::Multi(ops), Ok(_))
                if ops.iter().any(|op| matches!(op, Op::SetData { .. })) =>
            {
                self.applied += 1;
            }
            (Request::SetData { path, data, .. }, Ok(_)) if is_kill(data) => self.check_barge(path),
            _ => {}
        }
    }

    fn finished(&self) -> bool {
        self.ended.is_some()
    }

    fn summary(&self) -> String {
        let what = match self.body {
            Body::Increment => "increment",
            Body::Transfer => "transfer",
            Body::Reader => "reader",
        };
        let state = match &self.ended {
            Some(Ended::Committed { a, b }) => format!("committed, read a={a} b={b}"),
            Some(Ended::Failed(h)) => format!("failed: {h:?}"),
            Some(Ended::RetryLimit) => "failed: retry limit".into(),
            None => match self.body.script().get(self.next) {
                Some(Command::Read(n)) => format!("reading {n}"),
                Some(Command::Write(n)) => format!("tagging {n}"),
                Some(Command::Commit) => "committing".into(),
                None => "between steps".into(),
            },
        };
        let mut line = format!("{what} try {}: {state}", self.tries);
        if let Some(age) = self.age {
            line.push_str(&format!(" (age {age})"));
        }
        if self.may_barge {
            line.push_str(" [may barge]");
        }
        if self.applied > 0 {
            line.push_str(&format!("; the server applied {} commit(s)", self.applied));
        }
        line
    }
}

/// The Mvcc model; see the [module docs](self).
///
/// ```
/// use avout_models::{Search, check, mvcc::MvccModel};
/// // Two clients' whole state space is far too large for an example: a bound.
/// let search = Search { max_depth: Some(12), ..Search::default() };
/// let report = check(MvccModel::new(2), search);
/// assert_eq!(report.property("no lost update").verdict, avout_models::Verdict::Holds);
/// ```
#[derive(Clone, Debug)]
pub struct MvccModel {
    /// How many clients (see [`Workload::body`]).
    pub clients: u8,
    /// What the writers do.
    pub workload: Workload,
    /// The faults the environment may inject.
    pub faults: Faults,
    /// `StmConfig::retry_limit`.
    pub retry_limit: u32,
    /// `StmConfig::max_history`.
    pub max_history: usize,
    /// Whether BARGE-WAIT must pass (a script step) before a client may barge.
    pub barge_wait: bool,
    /// Timer firings per client (plus one per fault).
    pub timers: u8,
    /// A planted bug to switch on while stepping (feature `planted-bugs`).
    pub bug: Option<Bug>,
}

impl MvccModel {
    /// `clients` clients, no faults, production's retry limit, MAX-HISTORY 1, BARGE-WAIT to
    /// pass, one timer firing per client. See [`MvccModel`].
    pub fn new(clients: u8) -> Self {
        MvccModel {
            clients,
            workload: Workload::Increments,
            faults: Faults::NONE,
            retry_limit: avout::stm::StmConfig::default().retry_limit,
            max_history: 1,
            barge_wait: true,
            timers: 1,
            bug: None,
        }
    }

    fn count(&self, body: Body) -> u64 {
        (0..self.clients)
            .filter(|&i| self.workload.body(i) == body)
            .count() as u64
    }

    fn writers(&self) -> u64 {
        u64::from(self.clients) - self.count(Body::Reader)
    }

    /// `a`'s initial value: enough for every transfer.
    fn initial_a(&self) -> u64 {
        self.count(Body::Transfer)
    }
}

fn on_server(state: &World<MvccAgent>, path: &str) -> u64 {
    decode(&state.kernel.tree().node(path).expect("a ref").data)
}

/// Commits the server applied of clients running `body`.
fn applied(state: &World<MvccAgent>, body: Body) -> u64 {
    state
        .clients
        .iter()
        .filter(|c| c.agent.body == body)
        .map(|c| u64::from(c.agent.applied))
        .sum()
}

/// No point is `KILLED` after having been `COMMITTING`, and no commit found its point
/// killed.
fn committing_never_killed(state: &World<MvccAgent>) -> bool {
    let tree = state.kernel.tree();
    let points = tree.node(POINTS).expect("the clock");
    let killed_late = points.children.iter().any(|child| {
        let node = tree.node(&format!("{POINTS}/{child}")).expect("a child");
        is_kill(&node.data) && node.stat.version > 1
    });
    let violated = state
        .clients
        .iter()
        .any(|c| matches!(c.agent.ended, Some(Ended::Failed(Halt::Violation(_)))));
    !killed_late && !violated
}

/// Each ref's history holds the node created by the commit that set the ref's newest value.
fn newest_kept(state: &World<MvccAgent>) -> bool {
    let tree = state.kernel.tree();
    [REF_A, REF_B].into_iter().all(|r| {
        let newest = tree.node(r).expect("a ref").stat.mzxid;
        let history = format!("{r}/history");
        tree.node(&history)
            .expect("a history")
            .children
            .iter()
            .any(|c| {
                tree.node(&format!("{history}/{c}"))
                    .is_some_and(|n| n.stat.czxid == newest)
            })
    })
}

/// The client whose transaction is the oldest (smallest age, then GUID, whose high bits
/// are the client's index: the first to have read, as no try takes its point before
/// reading), once every client has read.
fn oldest(state: &World<MvccAgent>) -> Option<usize> {
    let ages: Option<Vec<i64>> = state.clients.iter().map(|c| c.agent.age).collect();
    let ages = ages?;
    (0..ages.len()).min_by_key(|&i| (ages[i], state.clients[i].agent.index))
}

impl Model for MvccModel {
    type State = World<MvccAgent>;
    type Action = Action;

    fn init_states(&self) -> Vec<Self::State> {
        let _bug = crate::plant(self.bug);
        let agents = (0..self.clients)
            .map(|i| {
                MvccAgent::new(
                    i,
                    self.workload.body(i),
                    self.retry_limit,
                    self.max_history,
                    !self.barge_wait,
                    self.timers.saturating_add(self.faults.budget),
                )
            })
            .collect();
        let create = |path: &str| Request::Create {
            path: path.into(),
            data: Vec::new(),
            options: Default::default(),
        };
        let [points, refs] = root_paths(ROOT);
        let a = self.initial_a().to_string();
        let setup = [
            create(ROOT),
            create(&format!("{ROOT}/stm")),
            create(&points),
            create(&refs),
            Request::Multi(create_ref_ops(ROOT, "a", a.as_bytes())),
            Request::Multi(create_ref_ops(ROOT, "b", b"0")),
        ];
        vec![World::new(agents, self.faults, &setup).batching_replies()]
    }

    fn actions(&self, state: &Self::State, actions: &mut Vec<Self::Action>) {
        state.actions(&self.faults, actions);
    }

    fn next_state(&self, last: &Self::State, action: Self::Action) -> Option<Self::State> {
        Some(last.after(action, self.bug))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always("no lost update", |m: &MvccModel, s: &World<MvccAgent>| {
                let transfers = applied(s, Body::Transfer);
                on_server(s, REF_A) + transfers == m.initial_a() + applied(s, Body::Increment)
                    && on_server(s, REF_B) == transfers
            }),
            Property::always("applied at most once", |_, s: &World<MvccAgent>| {
                s.clients.iter().all(|c| c.agent.applied <= 1)
            }),
            Property::always("acknowledged means applied", |_, s: &World<MvccAgent>| {
                s.clients.iter().all(|c| {
                    c.agent.body == Body::Reader
                        || !matches!(c.agent.ended, Some(Ended::Committed { .. }))
                        || c.agent.applied == 1
                })
            }),
            Property::always(
                "a COMMITTING transaction is never killed",
                |_, s: &World<MvccAgent>| committing_never_killed(s),
            ),
            Property::always(
                "only an older transaction barges, after BARGE-WAIT",
                |_, s: &World<MvccAgent>| s.clients.iter().all(|c| c.agent.bad_barge.is_none()),
            ),
            Property::always(
                "the newest committed value is never trimmed",
                |_, s: &World<MvccAgent>| newest_kept(s),
            ),
            Property::always(
                "retries stay within the limit",
                |_, s: &World<MvccAgent>| {
                    s.clients
                        .iter()
                        .all(|c| c.agent.ended != Some(Ended::RetryLimit))
                },
            ),
            Property::eventually("every transaction finishes", |_, s: &World<MvccAgent>| {
                s.clients.iter().all(|c| c.agent.finished())
            }),
        ];
        if self.workload == Workload::Transfers {
            properties.push(Property::always(
                "a transfer conserves the total",
                |m: &MvccModel, s: &World<MvccAgent>| {
                    on_server(s, REF_A) + on_server(s, REF_B) == m.initial_a()
                },
            ));
            properties.push(Property::always(
                "validated reads are a snapshot",
                |m: &MvccModel, s: &World<MvccAgent>| {
                    s.clients.iter().all(|c| match c.agent.ended {
                        Some(Ended::Committed { a, b }) if c.agent.body == Body::Reader => {
                            a + b == m.initial_a()
                        }
                        _ => true,
                    })
                },
            ));
        }
        if self.faults.budget == 0 {
            properties.push(Property::eventually(
                "the oldest transaction commits",
                |_, s: &World<MvccAgent>| {
                    oldest(s).is_some_and(|i| {
                        matches!(s.clients[i].agent.ended, Some(Ended::Committed { .. }))
                    })
                },
            ));
        }
        if self.writers() >= 2 {
            properties.push(Property::sometimes(
                "a barge happens",
                |_, s: &World<MvccAgent>| s.clients.iter().any(|c| c.agent.barges > 0),
            ));
            properties.push(Property::sometimes(
                "a conflict retried",
                |_, s: &World<MvccAgent>| s.clients.iter().any(|c| c.agent.conflicted),
            ));
        }
        let readers = self.count(Body::Reader);
        if self.writers() >= 2 && readers > 0 && self.max_history == 1 {
            properties.push(Property::sometimes(
                "a read fault happens",
                |_, s: &World<MvccAgent>| s.clients.iter().any(|c| c.agent.read_fault),
            ));
        }
        if self.faults.budget > 0 && self.faults.reply_lost && self.writers() > 0 {
            properties.push(Property::sometimes(
                "a lost commit reply recovered",
                |_, s: &World<MvccAgent>| {
                    s.clients.iter().any(|c| {
                        c.agent.recovered && matches!(c.agent.ended, Some(Ended::Committed { .. }))
                    })
                },
            ));
        }
        if readers > 0 {
            properties.push(Property::sometimes(
                "a read-only transaction validates",
                |_, s: &World<MvccAgent>| {
                    s.clients.iter().any(|c| {
                        c.agent.body == Body::Reader
                            && matches!(c.agent.ended, Some(Ended::Committed { .. }))
                    })
                },
            ));
        }
        properties
    }
}
