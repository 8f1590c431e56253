//! One try of an Mvcc transaction as one sans-IO machine: [`TryMachine`], which sequences the
//! step machines (read, tag, ensure, prepare, write, cleanup, wait) exactly as a try needs
//! them, so that the engine's async [`Try`](super::attempt) and the model checker run the same
//! protocol.
//!
//! The transaction's body is user code, so the machine is driven by commands — [`read`],
//! [`write`], [`ensure`], [`commit`], [`abort`] — each answered by one [`Outcome`] through
//! [`Machine::poll_output`]; between commands the body runs and the machine waits (replies
//! arriving meanwhile are held by the driver, or by the machine itself, see below).
//!
//! A write starts its tagging ([`TagMachine`]) and is answered at once: the tagging's
//! requests travel with whatever the try sends next. Steps are **settled in the order they
//! started**: replies, watch events and session changes for a step are handed to it only
//! once every step started before it has finished (until then they wait in the step's queue,
//! as they would wait in their futures), so a read or a prepare sent right behind a tagging
//! learns nothing before the tagging has decided, and a tagging that finds a conflict or an
//! owner to wait for gives the whole try up before anything after it takes effect.
//!
//! [`read`]: TryMachine::read
//! [`write`]: TryMachine::write
//! [`ensure`]: TryMachine::ensure
//! [`commit`]: TryMachine::commit
//! [`abort`]: TryMachine::abort

use std::collections::{BTreeMap, VecDeque};

mod commands;
mod commit;
mod config;

pub use config::{CommitOrder, Outcome, TryConfig, TryStats};

use crate::lock::blocked_wait;
use crate::machine::{Machine, Millis, Reply, Request, Token};
use crate::planted::Bug;
use crate::{SessionState, WatchedEvent};

use super::super::protocol::Change;
use super::ensure::{CleanupMachine, EnsureMachine};
use super::layout::{self, Layout};
use super::locks::Held;
use super::{
    Barging, Base, Halt, LOCK_WAIT_MS, Me, PrepareMachine, Prepared, ReadMachine, TagMachine,
    Tagged, WaitMachine, WriteMachine,
};

/// One of the step machines.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    Tag(TagMachine),
    Read(ReadMachine),
    Ensure(EnsureMachine),
    Prepare(PrepareMachine),
    Write(WriteMachine),
    Cleanup(CleanupMachine),
    Wait(WaitMachine),
}

macro_rules! each {
    ($step:expr, $m:ident => $e:expr) => {
        match $step {
            Step::Tag($m) => $e,
            Step::Read($m) => $e,
            Step::Ensure($m) => $e,
            Step::Prepare($m) => $e,
            Step::Write($m) => $e,
            Step::Cleanup($m) => $e,
            Step::Wait($m) => $e,
        }
    };
}

impl Step {
    /// Lock nodes it may hold.
    fn held(&self) -> Vec<Held> {
        match self {
            Step::Ensure(m) => m.held(),
            Step::Prepare(m) => m.held(),
            _ => Vec::new(),
        }
    }
}

/// Something for a step that it has not been told yet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Event {
    Reply(Token, crate::Result<Reply>),
    Watch(Token, WatchedEvent),
    Session(SessionState),
}

/// A running step: its id (the high half of its tokens) and the events it is owed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Running {
    id: u64,
    step: Step,
    owed: VecDeque<Event>,
}

impl Running {
    fn tell(&mut self, now: Millis, event: Event) {
        each!(&mut self.step, m => match event {
            Event::Reply(t, r) => m.handle_reply(now, t, r),
            Event::Watch(t, e) => m.handle_watch(now, t, e),
            Event::Session(s) => m.handle_session(now, s),
        })
    }
}

/// What the try is doing for the command in progress.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Between commands (the body runs).
    Idle,
    /// Reading `name` (the current step), for `then`.
    Reading { name: String, then: AfterRead },
    /// Ensuring `name`: the current step, started once the taggings in flight are settled.
    Ensuring { name: String, guid: u128 },
    /// Moving to `COMMITTING` and taking the write locks (the current step).
    Preparing(CommitOrder),
    /// Waiting for [`TryMachine::recomputed`].
    Recomputing(CommitOrder, Prepared),
    /// The commit `multi` (the current step).
    Writing(Vec<Change>),
    /// Removing what the try created (the current step), then `then`.
    Cleaning(AfterCleanup),
    /// A blocked try waits for its blocker's point (the current step), then reports the halt.
    Waiting(Halt),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum AfterRead {
    Report,
    Ensure(u128),
    Commit(CommitOrder),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum AfterCleanup {
    /// Report the halt (or the cleanup's failure, if the halt only asked for a retry), after
    /// waiting for a blocker.
    GiveUp(Halt),
    /// Report the halt whatever the cleanup did.
    Report(Halt),
    /// Report `Done` (or the cleanup's failure).
    Finish,
}

/// One try of an Mvcc transaction; see the module docs.
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::stm::mvcc::{TryConfig, TryMachine};
/// let mut m = TryMachine::new(TryConfig { root: "/s".into(), guid: 7, session: 3, age: None, max_history: 10, planted: avout::planted::Bugs::NONE });
/// m.handle_session(Millis(0), avout::SessionState::Connected);
/// m.read(Millis(0), "a");
/// // `sync`, the clock and the ref, back to back.
/// assert!(matches!(m.poll_request(), Some((_, Request::Sync { .. }))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TryMachine {
    config: TryConfig,
    layout: Layout,
    /// The transaction id, once the first write names it.
    txid: String,
    age: Option<i64>,
    point: Option<i64>,
    /// The read point was fixed without a `sync` (it may trail commits acknowledged before
    /// the try began): a later read of a ref committed past it is a conflict.
    strict: bool,
    /// The ref read without a `sync`, until a tagging of it checks it against the ref node.
    unvalidated: Option<String>,
    /// Ensured refs and their read-lock nodes.
    ensured: BTreeMap<String, String>,
    /// Lock nodes a failed step may have left.
    leftovers: Vec<Held>,
    /// Refs whose tag this try may have created.
    tagged: Vec<String>,
    /// Whether this try's point may exist.
    point_made: bool,
    /// What the settled taggings learnt, by ref.
    bases: BTreeMap<String, Base>,
    /// Taggings in flight, oldest first.
    tags: VecDeque<Running>,
    /// The command's own step, settled after the taggings.
    current: Option<Running>,
    next_id: u64,
    /// The steps' tokens behind the ones this machine gave out: (step id, step's token).
    tokens: BTreeMap<u64, (u64, Token)>,
    next_token: u64,
    session: Option<SessionState>,
    /// When the first step was launched, and how long its first reply took: the server's
    /// round trip, which a wait for a blocker must outlast.
    first_launch: Option<Millis>,
    round_trip: Option<u64>,
    phase: Phase,
    stats: TryStats,
    output: Option<Outcome>,
}

impl TryMachine {
    /// A try; see the [type docs](TryMachine).
    pub fn new(config: TryConfig) -> Self {
        TryMachine {
            layout: Layout::new(&config.root),
            age: config.age,
            config,
            txid: String::new(),
            point: None,
            strict: false,
            unvalidated: None,
            ensured: BTreeMap::new(),
            leftovers: Vec::new(),
            tagged: Vec::new(),
            point_made: false,
            bases: BTreeMap::new(),
            tags: VecDeque::new(),
            current: None,
            next_id: 0,
            tokens: BTreeMap::new(),
            next_token: 0,
            session: None,
            first_launch: None,
            round_trip: None,
            phase: Phase::Idle,
            stats: TryStats::default(),
            output: None,
        }
    }

    /// The transaction's age once a read fixed it (keep it for the next try).
    ///
    /// ```
    /// let m = avout::stm::mvcc::TryMachine::new(avout::stm::mvcc::TryConfig { root: "/s".into(), guid: 1, session: 1, age: Some(4), max_history: 10, planted: avout::planted::Bugs::NONE });
    /// assert_eq!(m.age(), Some(4));
    /// ```
    pub fn age(&self) -> Option<i64> {
        self.age
    }

    /// The try's transaction id (empty until its first write).
    ///
    /// ```
    /// let m = avout::stm::mvcc::TryMachine::new(avout::stm::mvcc::TryConfig { root: "/s".into(), guid: 1, session: 1, age: None, max_history: 10, planted: avout::planted::Bugs::NONE });
    /// assert_eq!(m.txid(), "");
    /// ```
    pub fn txid(&self) -> &str {
        &self.txid
    }

    /// The counts since the last call, reset.
    ///
    /// ```
    /// let mut m = avout::stm::mvcc::TryMachine::new(avout::stm::mvcc::TryConfig { root: "/s".into(), guid: 1, session: 1, age: None, max_history: 10, planted: avout::planted::Bugs::NONE });
    /// assert_eq!(m.take_stats(), Default::default());
    /// ```
    pub fn take_stats(&mut self) -> TryStats {
        std::mem::take(&mut self.stats)
    }

    /// The nodes the try created and may still hold (paths, and lock nodes), for a cleanup
    /// when the try is abandoned mid-command.
    ///
    /// ```
    /// let m = avout::stm::mvcc::TryMachine::new(avout::stm::mvcc::TryConfig { root: "/s".into(), guid: 1, session: 1, age: None, max_history: 10, planted: avout::planted::Bugs::NONE });
    /// assert_eq!(m.owned_nodes(), (vec![], vec![]));
    /// ```
    pub fn owned_nodes(&self) -> (Vec<String>, Vec<Held>) {
        let l = &self.layout;
        let mut paths: Vec<String> = self.tagged.iter().map(|n| l.tag(n, &self.txid)).collect();
        if self.point_made {
            paths.push(l.point(&self.txid));
        }
        paths.extend(self.ensured.values().cloned());
        let mut held = self.leftovers.clone();
        if let Some(r) = &self.current {
            held.extend(r.step.held());
        }
        (paths, held)
    }

    /// How long a blocked try waits for its blocker: the lock wait, or on a distant server
    /// a few of its round trips (what the blocker needs to finish) if longer.
    fn blocker_wait(&self) -> u64 {
        blocked_wait(LOCK_WAIT_MS, self.round_trip.unwrap_or(0))
    }

    fn launch(&mut self, now: Millis, step: Step) -> Running {
        self.first_launch.get_or_insert(now);
        self.next_id += 1;
        let mut run = Running {
            id: self.next_id,
            step,
            owed: VecDeque::new(),
        };
        if let Some(state) = self.session {
            run.tell(now, Event::Session(state));
        }
        run
    }

    /// Starts reading `name`; `unsynced`: fix the read point without a `sync` (see
    /// [`read_for_write`](Self::read_for_write)).
    fn start_read(&mut self, now: Millis, name: &str, then: AfterRead, unsynced: bool) {
        let l = &self.layout;
        let mut m = ReadMachine::new(
            &l.ref_node(name),
            &l.history(name),
            &l.points(),
            self.point,
            !self.config.planted.contains(Bug::StmNoReadPointCheck),
        );
        if unsynced {
            m = m.unsynced();
            self.strict = true;
            self.unvalidated = Some(name.to_owned());
        } else if self.strict {
            m = m.strict();
        }
        self.current = Some(self.launch(now, Step::Read(m)));
        self.phase = Phase::Reading {
            name: name.to_owned(),
            then,
        };
    }

    /// Sends the tagging of `names` (and the point, on the first).
    fn start_tag(&mut self, now: Millis, names: Vec<String>, may_barge: bool) {
        let point = self.point.expect("a read point");
        let age = *self.age.get_or_insert(point);
        if self.txid.is_empty() {
            self.txid = layout::txid(age, self.config.guid);
        }
        let me = Me {
            txid: self.txid.clone(),
            age,
            read_point: point,
        };
        let barging = Barging {
            may_barge,
            barge_committing: self.config.planted.contains(Bug::StmBargeCommitting),
        };
        if self.unvalidated.as_ref().is_some_and(|n| names.contains(n)) {
            self.unvalidated = None;
        }
        let mut m = TagMachine::new(&self.config.root, me, names.clone(), barging);
        if self.point_made {
            m = m.without_point();
        }
        self.point_made = true;
        self.tagged.extend(names);
        let run = self.launch(now, Step::Tag(m));
        self.tags.push_back(run);
    }

    /// Removes everything the try created and still holds, then `then`. Steps in flight are
    /// dropped: the deletes are ordered after their creates.
    fn start_cleanup(&mut self, now: Millis, then: AfterCleanup) {
        let (paths, held) = self.owned_nodes();
        self.tags.clear();
        self.current = None;
        self.tagged.clear();
        self.point_made = false;
        self.ensured.clear();
        self.leftovers.clear();
        let m = CleanupMachine::of(paths, held);
        self.current = Some(self.launch(now, Step::Cleanup(m)));
        self.phase = Phase::Cleaning(then);
    }

    /// Gives the try up with `halt` (the cleanup takes the lock nodes the failed step may
    /// hold: it is still the current one).
    fn give_up(&mut self, now: Millis, halt: Halt) {
        self.start_cleanup(now, AfterCleanup::GiveUp(halt));
    }

    fn finish(&mut self, outcome: Outcome) {
        self.current = None;
        self.phase = Phase::Idle;
        self.output = Some(outcome);
    }

    /// Hands the front step what it is owed, then takes the steps' outputs in order and moves
    /// the try on, until it waits for the network or answers the command.
    fn advance(&mut self, now: Millis) {
        self.settle(now);
        // Forget the tokens of dropped steps: their replies and events are dropped.
        let live: Vec<u64> = self
            .tags
            .iter()
            .chain(&self.current)
            .map(|r| r.id)
            .collect();
        self.tokens.retain(|_, (id, _)| live.contains(id));
    }

    fn settle(&mut self, now: Millis) {
        while self.output.is_none() && self.phase != Phase::Idle {
            if let Some(front) = self.tags.front_mut() {
                if let Some(event) = front.owed.pop_front() {
                    front.tell(now, event);
                    continue;
                }
                let Step::Tag(tag) = &mut front.step else {
                    unreachable!("only taggings are queued")
                };
                match tag.poll_output() {
                    Some(Ok(tagged)) => {
                        self.tags.pop_front();
                        self.settled(tagged);
                        continue;
                    }
                    Some(Err(halt)) => {
                        self.tags.pop_front();
                        self.give_up(now, halt);
                        continue;
                    }
                    None => return,
                }
            }
            if let Phase::Ensuring { name, guid } = &self.phase
                && self.current.is_none()
            {
                let m = EnsureMachine::new(
                    &self.config.root,
                    name,
                    self.point.expect("a read point"),
                    *guid,
                    self.config.session,
                    LOCK_WAIT_MS,
                )
                .planted(self.config.planted);
                self.current = Some(self.launch(now, Step::Ensure(m)));
                continue;
            }
            let Some(current) = &mut self.current else {
                unreachable!("{:?} runs a step", self.phase)
            };
            if let Some(event) = current.owed.pop_front() {
                current.tell(now, event);
                continue;
            }
            if !self.take_current_output(now) {
                return;
            }
        }
    }

    fn settled(&mut self, tagged: Tagged) {
        self.stats.barges += u64::from(tagged.barged);
        for base in tagged.bases {
            self.bases.insert(base.name.clone(), base);
        }
    }

    /// Takes the current step's output if it has one, and moves on; false if it has none.
    fn take_current_output(&mut self, now: Millis) -> bool {
        let current = &mut self.current.as_mut().expect("a current step").step;
        match (std::mem::replace(&mut self.phase, Phase::Idle), current) {
            (Phase::Reading { name, then }, Step::Read(m)) => {
                let Some(out) = m.poll_output() else {
                    self.phase = Phase::Reading { name, then };
                    return false;
                };
                match out {
                    Ok(out) => {
                        if self.point.is_none() {
                            self.point = Some(out.read_point);
                            self.age.get_or_insert(out.read_point);
                        }
                        self.current = None;
                        match then {
                            AfterRead::Report => self.finish(Outcome::Read(out.value)),
                            AfterRead::Ensure(guid) => self.phase = Phase::Ensuring { name, guid },
                            AfterRead::Commit(order) => self.prepare(now, order),
                        }
                    }
                    Err(halt) => {
                        if halt == Halt::ReadFault {
                            self.stats.read_faults += 1;
                        }
                        self.give_up(now, halt);
                    }
                }
            }
            (Phase::Ensuring { name, guid }, Step::Ensure(m)) => {
                let Some(out) = m.poll_output() else {
                    self.phase = Phase::Ensuring { name, guid };
                    return false;
                };
                match out {
                    Ok(node) => {
                        self.ensured.insert(name, node);
                        self.finish(Outcome::Done);
                    }
                    Err(halt) => self.give_up(now, halt),
                }
            }
            (Phase::Preparing(order), Step::Prepare(m)) => {
                let Some(out) = m.poll_output() else {
                    self.phase = Phase::Preparing(order);
                    return false;
                };
                match out {
                    Ok(prepared) => {
                        self.leftovers
                            .extend(prepared.locks.iter().map(|(_, n)| Held::Node(n.clone())));
                        self.current = None;
                        if order.commutes.is_empty() {
                            self.write_record(now, order, prepared, Vec::new());
                        } else {
                            let newest = prepared.commuted.clone();
                            self.phase = Phase::Recomputing(order, prepared);
                            self.output = Some(Outcome::Recompute(newest));
                        }
                    }
                    Err(halt) => {
                        if halt == Halt::Barged {
                            self.stats.killed += 1;
                        }
                        self.give_up(now, halt);
                    }
                }
            }
            (Phase::Writing(changes), Step::Write(m)) => {
                let Some(out) = m.poll_output() else {
                    self.phase = Phase::Writing(changes);
                    return false;
                };
                match out {
                    Ok(written) => {
                        if written.recovered {
                            self.stats.recoveries += 1;
                        }
                        // The multi removed the point, tags and locks.
                        self.point_made = false;
                        self.tagged.clear();
                        self.leftovers.clear();
                        self.ensured.clear();
                        self.finish(Outcome::Committed(changes));
                    }
                    // A violation is reported as it is; after a lost session the commit may
                    // have applied and the session took the rest: nothing to clean.
                    Err(halt @ (Halt::Violation(_) | Halt::SessionLost(_))) => {
                        self.finish(Outcome::Failed(halt));
                    }
                    Err(halt) => self.give_up(now, halt),
                }
            }
            (Phase::Cleaning(then), Step::Cleanup(m)) => {
                let Some(out) = m.poll_output() else {
                    self.phase = Phase::Cleaning(then);
                    return false;
                };
                match (then, out) {
                    (AfterCleanup::GiveUp(halt), Ok(())) => match &halt {
                        Halt::Blocked { blocker, .. } => {
                            let path = self.layout.point(blocker);
                            let wait = WaitMachine::new(&path, self.blocker_wait());
                            self.current = Some(self.launch(now, Step::Wait(wait)));
                            self.phase = Phase::Waiting(halt);
                        }
                        _ => self.finish(Outcome::Failed(halt)),
                    },
                    (AfterCleanup::GiveUp(halt), Err(cleanup)) => {
                        // A retry cannot be reported if the cleanup failed: its failure is
                        // worse. A failure stays the first one.
                        let report = if halt.retries() { cleanup } else { halt };
                        self.finish(Outcome::Failed(report));
                    }
                    (AfterCleanup::Report(halt), _) => self.finish(Outcome::Failed(halt)),
                    (AfterCleanup::Finish, Ok(())) => self.finish(Outcome::Done),
                    (AfterCleanup::Finish, Err(cleanup)) => self.finish(Outcome::Failed(cleanup)),
                }
            }
            (Phase::Waiting(halt), Step::Wait(m)) => {
                let Some(out) = m.poll_output() else {
                    self.phase = Phase::Waiting(halt);
                    return false;
                };
                match out {
                    Err(lost @ Halt::SessionLost(_)) => self.finish(Outcome::Failed(lost)),
                    _ => self.finish(Outcome::Failed(halt)),
                }
            }
            (phase, step) => unreachable!("{phase:?} does not run {step:?}"),
        }
        true
    }

    /// Gives `event` (for step `token`'s) to its step; events of dropped steps are dropped.
    fn route(&mut self, now: Millis, token: Token, event: impl FnOnce(Token) -> Event) {
        let Some(&(id, own)) = self.tokens.get(&token.0) else {
            return;
        };
        let runs = self.tags.iter_mut().chain(self.current.as_mut());
        if let Some((i, run)) = runs.enumerate().find(|(_, r)| r.id == id) {
            offer(run, i == 0, now, event(own));
        }
    }
}

/// Tells `run` `event` now if it is the front step (every step started before it is
/// settled) and owes nothing older, else queues it for its turn.
fn offer(run: &mut Running, front: bool, now: Millis, event: Event) {
    if front && run.owed.is_empty() {
        run.tell(now, event);
    } else {
        run.owed.push_back(event);
    }
}

impl Halt {
    /// Whether the try may run its body again after this halt (else the transaction fails).
    ///
    /// ```
    /// assert!(avout::stm::mvcc::Halt::Barged.retries());
    /// assert!(!avout::stm::mvcc::Halt::NoRef("a".into()).retries());
    /// ```
    pub fn retries(&self) -> bool {
        matches!(
            self,
            Halt::ReadFault
                | Halt::Conflict(_)
                | Halt::Barged
                | Halt::Blocked { .. }
                | Halt::Interrupted
        )
    }
}

impl Machine for TryMachine {
    type Output = Outcome;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        let runs = self.tags.iter_mut().chain(self.current.as_mut());
        for run in runs {
            let next = each!(&mut run.step, m => m.poll_request());
            if let Some((token, request)) = next {
                self.next_token += 1;
                self.tokens.insert(self.next_token, (run.id, token));
                return Some((Token(self.next_token), request));
            }
        }
        None
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        if let (None, Some(at)) = (self.round_trip, self.first_launch) {
            self.round_trip = Some(now.0.saturating_sub(at.0));
        }
        self.route(now, token, |t| Event::Reply(t, reply));
        self.advance(now);
    }

    fn handle_watch(&mut self, now: Millis, token: Token, event: WatchedEvent) {
        self.route(now, token, |t| Event::Watch(t, event));
        self.advance(now);
    }

    fn handle_session(&mut self, now: Millis, state: SessionState) {
        self.session = Some(state);
        let runs = self.tags.iter_mut().chain(self.current.as_mut());
        for (i, run) in runs.enumerate() {
            offer(run, i == 0, now, Event::Session(state));
        }
        self.advance(now);
    }

    fn handle_timer(&mut self, now: Millis) {
        // Only the front step's time runs (the others are not being waited on).
        let run = self.tags.front_mut().or(self.current.as_mut());
        if let Some(run) = run
            && run.owed.is_empty()
        {
            let due = each!(&run.step, m => m.poll_timer()).is_some_and(|at| at <= now);
            if due {
                each!(&mut run.step, m => m.handle_timer(now));
            }
        }
        self.advance(now);
    }

    fn poll_timer(&self) -> Option<Millis> {
        let run = self.tags.front().or(self.current.as_ref())?;
        if !run.owed.is_empty() {
            return None;
        }
        each!(&run.step, m => m.poll_timer())
    }

    fn poll_output(&mut self) -> Option<Outcome> {
        self.output.take()
    }
}

#[cfg(test)]
mod tests;
