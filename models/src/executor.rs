//! The agent executor's hand-off: executors in several processes take the executor lock in
//! turn and apply an agent's queued actions, running the production machines — the lock's
//! [`AcquireMachine`] (as `Mutex::lock` on `P/executor`) and the executor's [`StepMachine`]
//! (core's `agent/step.rs`), which reads the state and the queue behind a `sync`, consumes the
//! next entry with the production [`consume`] and commits one `multi` fenced by the lock node
//! (`check` of the node, `set_data` of the state conditional on the version read, `delete` of
//! the entry), and decides a `multi` in doubt by the state's `applied` position.
//!
//! The script around the machines is `Agent::run_executor`'s: take the lock, then step while
//! it is held, a fresh step after each (consumed, raced, or woken by a change), waiting on
//! the state's and the queue's watches when nothing is to apply. An executor whose session
//! expires has crashed: in production it takes the lock again on its client's next session,
//! which the model leaves out (another executor takes over meanwhile, which is what is
//! checked).
//!
//! The agent holds a list; action `i` appends `i`, and the queue holds actions `0..n` in
//! order (sent before the executors start).
//!
//! # Properties
//!
//! - `always` **at most once, in order, none skipped**: the list is `0, 1, …, k-1` and the
//!   state's `applied` is the position of action `k-1`.
//! - `always` **every applied commit consumed one entry**: the commits the server applied
//!   (from every executor) are as many as the actions applied.
//! - `eventually` **every action applied while an executor survives**: at the end, all are
//!   applied, or every executor's session expired.
//! - `sometimes` **taken over after a crash**: an executor applied an action holding a lock
//!   taken after another executor, which had held it, lost its session.
//! - `sometimes` **a commit in doubt decided** (reply faults): a step decided a `multi` whose
//!   reply was lost by reading `applied`.

use std::convert::Infallible;

use avout::agent::{
    Action as AgentAction, AgentState, Consume, Consumed, EntryName, StepError, StepMachine,
    Stepped, consume,
};
use avout::lock::{AcquireMachine, Acquired, LockKind, Patience};
use avout::machine::{Machine, Millis, Reply, Request, Token};
use avout::{CreateMode, CreateOptions, SessionState, WatchedEvent, path};
use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use crate::world::{Action, Agent, Faults, NOW, Run, Space, World};

/// The agent's node.
///
/// ```
/// assert_eq!(avout_models::executor::AGENT_PATH, "/agent");
/// ```
pub const AGENT_PATH: &str = "/agent";

/// The model's action: appends its number to the agent's list.
///
/// ```
/// use avout::agent::Action;
/// assert_eq!(avout_models::executor::Append(2).apply(&vec![0, 1]), Ok(vec![0, 1, 2]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Append(pub u64);

impl AgentAction<Vec<u64>> for Append {
    type Error = Infallible;

    fn apply(&self, list: &Vec<u64>) -> Result<Vec<u64>, Infallible> {
        let mut next = list.clone();
        next.push(self.0);
        Ok(next)
    }
}

/// The executors' consumer: production's [`consume`] of an [`Append`] on a list, with no
/// validator.
///
/// ```
/// use avout::agent::{AgentState, Consume, EntryName};
/// let e = EntryName::parse("p-0000000000000001-00000000000000000000000000000002-0000000000").unwrap();
/// let s = AgentState::new(serde_json::json!([]));
/// let (next, _) = avout_models::executor::Appends.consume(&s, &e, b"7").unwrap();
/// assert_eq!(AgentState::decode(&next).unwrap().value, serde_json::json!([7]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Appends;

impl Consume for Appends {
    fn consume(
        &mut self,
        state: &AgentState,
        entry: &EntryName,
        bytes: &[u8],
    ) -> Result<Consumed, StepError> {
        consume::<Vec<u64>, Append>(AGENT_PATH, state, entry, bytes, |_| true)
    }
}

/// Where an executor's script is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Taking the executor lock.
    Locking(Box<Run<AcquireMachine>>),
    /// Holding it, stepping.
    Serving {
        /// The lock held.
        lock: Acquired,
        /// The step running.
        step: Box<Run<StepMachine<Appends>>>,
    },
    /// The script ended: the lock's acquisition or a step failed (the session was lost).
    Ended(String),
}

/// An executor.
///
/// ```
/// use avout_models::executor::ExecutorAgent;
/// let a = ExecutorAgent::new(0);
/// assert_eq!((a.consumed, a.commits_applied), (0, 0));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExecutorAgent {
    /// The executor's index.
    pub index: u8,
    generation: u32,
    /// The script's place (`None` before the start).
    pub phase: Option<Phase>,
    /// The fencing token of the lock it holds or last held.
    pub token: Option<i64>,
    /// Steps that reported an entry consumed.
    pub consumed: u8,
    /// Whether a step decided a commit in doubt by reading `applied`.
    pub recovered: bool,
    /// Ghost: its commits the server applied.
    pub commits_applied: u8,
}

impl ExecutorAgent {
    /// Executor `index`, not started. See [`ExecutorAgent`].
    pub fn new(index: u8) -> Self {
        ExecutorAgent {
            index,
            generation: 0,
            phase: None,
            token: None,
            consumed: 0,
            recovered: false,
            commits_applied: 0,
        }
    }

    fn step(&mut self, lock: Acquired) {
        self.generation += 1;
        let machine = StepMachine::new(AGENT_PATH, Some(lock.node.clone()), true, Appends);
        self.phase = Some(Phase::Serving {
            lock,
            step: Box::new(Run::start(self.generation, machine)),
        });
    }

    /// Takes the running machine's output, if it finished.
    fn settle(&mut self) {
        let next = match &mut self.phase {
            Some(Phase::Locking(run)) => match run.machine.poll_output() {
                None => return,
                Some(Ok(acquired)) => {
                    self.token = Some(acquired.fencing_token);
                    Ok(acquired)
                }
                Some(Err(e)) => Err(e.to_string()),
            },
            Some(Phase::Serving { lock, step }) => match step.machine.poll_output() {
                None => return,
                Some(Ok(stepped)) => {
                    if let Stepped::Consumed { recovered, .. } = stepped {
                        self.consumed += 1;
                        self.recovered |= recovered;
                    }
                    Ok(lock.clone())
                }
                Some(Err(e)) => Err(e.to_string()),
            },
            Some(Phase::Ended(_)) | None => return,
        };
        match next {
            Ok(lock) => self.step(lock),
            Err(why) => self.phase = Some(Phase::Ended(why)),
        }
    }

    /// The machine running, if any.
    fn running(&mut self) -> Option<&mut dyn Stepping> {
        match &mut self.phase {
            Some(Phase::Locking(run)) => Some(run.as_mut()),
            Some(Phase::Serving { step, .. }) => Some(step.as_mut()),
            Some(Phase::Ended(_)) | None => None,
        }
    }

    fn running_ref(&self) -> Option<&dyn Stepping> {
        match &self.phase {
            Some(Phase::Locking(run)) => Some(run.as_ref()),
            Some(Phase::Serving { step, .. }) => Some(step.as_ref()),
            Some(Phase::Ended(_)) | None => None,
        }
    }

    fn with_machine(&mut self, f: impl FnOnce(&mut dyn Stepping)) {
        if let Some(machine) = self.running() {
            f(machine);
            self.settle();
        }
    }

    /// Whether it holds the lock (as far as it knows).
    ///
    /// ```
    /// assert!(!avout_models::executor::ExecutorAgent::new(0).serving());
    /// ```
    pub fn serving(&self) -> bool {
        matches!(self.phase, Some(Phase::Serving { .. }))
    }
}

/// A run of either machine, as the agent delivers to it.
trait Stepping {
    fn poll_request(&mut self) -> Option<(Token, Request)>;
    fn handle_reply(&mut self, token: Token, reply: avout::Result<Reply>);
    fn handle_watch(&mut self, token: Token, event: WatchedEvent);
    fn handle_session(&mut self, state: SessionState);
    fn poll_timer(&self) -> Option<Millis>;
    fn handle_timer(&mut self, now: Millis);
}

impl<M: Machine> Stepping for Run<M> {
    fn poll_request(&mut self) -> Option<(Token, Request)> {
        Run::poll_request(self)
    }
    fn handle_reply(&mut self, token: Token, reply: avout::Result<Reply>) {
        Run::handle_reply(self, token, reply)
    }
    fn handle_watch(&mut self, token: Token, event: WatchedEvent) {
        Run::handle_watch(self, token, event)
    }
    fn handle_session(&mut self, state: SessionState) {
        self.machine.handle_session(NOW, state)
    }
    fn poll_timer(&self) -> Option<Millis> {
        self.machine.poll_timer()
    }
    fn handle_timer(&mut self, now: Millis) {
        self.machine.handle_timer(now)
    }
}

impl Agent for ExecutorAgent {
    fn start(&mut self, session: i64) {
        self.generation += 1;
        // `Mutex::lock` on the executor directory: an exclusive lock, a GUID per
        // acquisition (readable in traces: client C's is `…000C…`).
        let guid = (u128::from(self.index) + 1) << 80 | u128::from(self.generation);
        let machine = AcquireMachine::new(
            &path::join(AGENT_PATH, "executor"),
            LockKind::Exclusive,
            guid,
            session,
            Patience::Forever,
            Vec::new(),
        );
        self.phase = Some(Phase::Locking(Box::new(Run::start(
            self.generation,
            machine,
        ))));
        self.settle();
    }

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.running().and_then(|m| m.poll_request())
    }

    fn handle_reply(&mut self, token: Token, reply: avout::Result<Reply>) {
        self.with_machine(|m| m.handle_reply(token, reply));
    }

    fn handle_watch(&mut self, token: Token, event: WatchedEvent) {
        self.with_machine(|m| m.handle_watch(token, event));
    }

    fn handle_session(&mut self, state: SessionState) {
        self.with_machine(|m| m.handle_session(state));
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.running_ref().and_then(|m| m.poll_timer())
    }

    fn handle_timer(&mut self, now: Millis) {
        self.with_machine(|m| m.handle_timer(now));
    }

    fn observe_applied(&mut self, request: &Request, result: &avout::Result<Reply>, _lost: bool) {
        // A commit is a multi that writes; a `sync` goes out as a multi of one check.
        if result.is_ok()
            && matches!(request, Request::Multi(ops) if ops.iter().any(|op| !matches!(op, avout::Op::Check { .. })))
        {
            self.commits_applied += 1;
        }
    }

    fn finished(&self) -> bool {
        matches!(self.phase, Some(Phase::Ended(_)))
    }

    fn summary(&self) -> String {
        let place = match &self.phase {
            None => "not started".to_owned(),
            Some(Phase::Locking(_)) => "taking the executor lock".to_owned(),
            Some(Phase::Serving { lock, .. }) => format!("serving (lock {})", lock.fencing_token),
            Some(Phase::Ended(why)) => format!("ended: {why}"),
        };
        format!(
            "{place}; {} consumed, {} of its commits applied",
            self.consumed, self.commits_applied
        )
    }
}

/// The executor hand-off model; see the [module docs](self).
///
/// ```
/// let report = avout_models::check(avout_models::executor::ExecutorModel::new(2), Default::default());
/// assert!(report.ok(), "{report}");
/// ```
#[derive(Clone, Debug)]
pub struct ExecutorModel {
    /// How many executors run.
    pub clients: u8,
    /// How many actions are queued (1 to 4).
    pub actions: u8,
    /// The faults the environment may inject.
    pub faults: Faults,
    /// What the model's states share (see [`Space`]).
    pub space: Space<ExecutorAgent>,
}

impl ExecutorModel {
    /// `clients` executors, two actions queued, at most one classic fault. See
    /// [`ExecutorModel`].
    pub fn new(clients: u8) -> Self {
        ExecutorModel {
            clients,
            actions: 2,
            faults: Faults::classic(1),
            space: Space::default(),
        }
    }

    /// The requests that create the agent, its directories and the queued actions.
    fn setup(&self) -> Vec<Request> {
        let create = |path: String, data: Vec<u8>, mode: CreateMode| Request::Create {
            path,
            data,
            options: CreateOptions {
                mode,
                ..Default::default()
            },
        };
        let mut setup = vec![
            create(
                AGENT_PATH.into(),
                AgentState::new(serde_json::json!([])).encode(),
                CreateMode::Persistent,
            ),
            create(
                path::join(AGENT_PATH, "queue"),
                Vec::new(),
                CreateMode::Persistent,
            ),
            create(
                path::join(AGENT_PATH, "executor"),
                Vec::new(),
                CreateMode::Persistent,
            ),
        ];
        for i in 0..self.actions {
            let prefix = EntryName::prefix(true, 1, u128::from(i) + 1);
            setup.push(create(
                path::join(&path::join(AGENT_PATH, "queue"), &prefix),
                serde_json::to_vec(&Append(u64::from(i))).expect("an action encodes"),
                CreateMode::PersistentSequential,
            ));
        }
        setup
    }
}

/// The agent's state on the server.
fn state(world: &World<ExecutorAgent>) -> AgentState {
    let node = world.kernel.tree().node(AGENT_PATH).expect("the agent");
    AgentState::decode(&node.data).expect("a state")
}

fn list(state: &AgentState) -> Vec<u64> {
    serde_json::from_value(state.value.clone()).expect("a list")
}

/// The list is `0..k` and `applied` is action `k-1`'s position (the queue's positions start
/// at 0, one per action).
pub(crate) fn in_order(world: &World<ExecutorAgent>) -> bool {
    let state = state(world);
    let list = list(&state);
    let prefix = list.iter().enumerate().all(|(i, v)| *v == i as u64);
    prefix && state.applied == list.len() as i64 - 1
}

fn one_entry_per_commit(world: &World<ExecutorAgent>) -> bool {
    let commits: usize = world
        .clients
        .iter()
        .map(|c| usize::from(c.agent.commits_applied))
        .sum();
    commits == list(&state(world)).len()
}

fn done_or_all_crashed(model: &ExecutorModel, world: &World<ExecutorAgent>) -> bool {
    list(&state(world)).len() == usize::from(model.actions)
        || world
            .clients
            .iter()
            .all(|c| !world.kernel.is_alive(c.session))
}

/// An executor applied an action under a lock newer than one held by an executor whose
/// session is gone.
fn taken_over(world: &World<ExecutorAgent>) -> bool {
    world.clients.iter().any(|crashed| {
        let Some(old) = crashed.agent.token else {
            return false;
        };
        !world.kernel.is_alive(crashed.session)
            && world
                .clients
                .iter()
                .any(|c| c.agent.token.is_some_and(|t| t > old) && c.agent.commits_applied > 0)
    })
}

fn decided(world: &World<ExecutorAgent>) -> bool {
    world.clients.iter().any(|c| c.agent.recovered)
}

impl Model for ExecutorModel {
    type State = World<ExecutorAgent>;
    type Action = Action;

    fn init_states(&self) -> Vec<Self::State> {
        let agents = (0..self.clients).map(ExecutorAgent::new).collect();
        vec![World::new(agents, self.faults, &self.setup())]
    }

    crate::world::world_moves!();

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always("at most once, in order, none skipped", |_, s| in_order(s)),
            Property::always("every applied commit consumed one entry", |_, s| {
                one_entry_per_commit(s)
            }),
            Property::eventually(
                "every action applied while an executor survives",
                done_or_all_crashed,
            ),
        ];
        if self.clients > 1 && self.faults.budget > 0 && self.faults.expiry {
            properties.push(Property::sometimes("taken over after a crash", |_, s| {
                taken_over(s)
            }));
        }
        if self.faults.budget > 0 && self.faults.reply_lost {
            properties.push(Property::sometimes("a commit in doubt decided", |_, s| {
                decided(s)
            }));
        }
        properties.extend(crate::world::fault_examples(&self.faults));
        properties
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A world whose agent holds `list` with `applied` at `applied`, after `commits` commits
    /// of executor 0.
    fn world(list: &[u64], applied: i64, commits: u8) -> World<ExecutorAgent> {
        let mut state = AgentState::new(serde_json::json!(list));
        state.applied = applied;
        let mut model = ExecutorModel::new(1);
        model.actions = 0;
        let mut setup = model.setup();
        setup[0] = Request::Create {
            path: AGENT_PATH.into(),
            data: state.encode(),
            options: CreateOptions::default(),
        };
        let mut agent = ExecutorAgent::new(0);
        agent.commits_applied = commits;
        World::new(vec![agent], Faults::NONE, &setup)
    }

    #[test]
    fn the_order_rule_refuses_a_double_a_swap_a_gap_and_a_wrong_position() {
        assert!(in_order(&world(&[0, 1], 1, 2)));
        assert!(in_order(&world(&[], -1, 0)));
        assert!(!in_order(&world(&[0, 0], 1, 2)), "applied twice");
        assert!(!in_order(&world(&[1, 0], 1, 2)), "out of order");
        assert!(!in_order(&world(&[0, 2], 1, 2)), "one skipped");
        assert!(!in_order(&world(&[0, 1], 0, 2)), "applied lags the value");
    }

    #[test]
    fn the_commit_rule_refuses_a_commit_that_consumed_nothing() {
        assert!(one_entry_per_commit(&world(&[0], 0, 1)));
        assert!(!one_entry_per_commit(&world(&[0], 0, 2)));
    }
}
