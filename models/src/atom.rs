//! The atom's compare-and-set: each client increments a counter atom once, running the
//! production [`CasMachine`] for every read and conditional write, in the loop `Atom::update`
//! runs (core's `atom/mod.rs`): read the node, compute `value + 1`, write it conditional on
//! the version read with the payload `Atom` writes ([`avout::atom::payload`]), and on a
//! conflict start again from the value the machine read. The atom's cache, validator,
//! promotion and codec are left out: they decide nothing about whether a write lands.
//!
//! # Properties
//!
//! - `always` **no lost update**: the counter equals the number of increments the server
//!   applied (an applied increment always started from the value it replaced).
//! - `always` **applied at most once**: no client's increment is applied twice, whatever
//!   replies were lost (the writer list in the payload tells a lost write that landed from
//!   one that did not).
//! - `always` **acknowledged means applied**: a client told its swap succeeded had it applied.
//! - `sometimes` **a lost reply recovered**: a swap succeeded after its write's reply was lost,
//!   decided by the recovery read.
//! - `sometimes` **a conflict retried**: a client wrote more than once.
//! - `eventually` **every swap finishes**.

use avout::atom::{CasMachine, Outcome, Step, StepError, Versioned, payload, payload_value};
use avout::machine::{Machine, Millis, Reply, Request, Token};
use avout::planted::{Bug, Bugs};
use avout::{SessionState, WatchedEvent};
use stateright::{Model, Property};

use crate::world::{Action, Agent, Faults, NOW, Run, Space, World};

/// The atom's node.
///
/// ```
/// assert_eq!(avout_models::atom::ATOM_PATH, "/atom");
/// ```
pub const ATOM_PATH: &str = "/atom";

/// How a client's swap ended.
///
/// ```
/// assert_ne!(avout_models::atom::Ended::Swapped(1), avout_models::atom::Ended::Swapped(2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ended {
    /// It succeeded, writing this value.
    Swapped(u64),
    /// It failed.
    Failed(StepError),
}

/// A client incrementing the counter once.
///
/// ```
/// use avout_models::atom::AtomAgent;
/// let a = AtomAgent::new(0);
/// assert_eq!((a.ended, a.applied), (None, 0));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AtomAgent {
    /// The client's index.
    pub index: u8,
    writes: u32,
    /// The value the write in flight writes (what `swap` returns if it lands).
    value: u64,
    generation: u32,
    run: Option<Run<CasMachine>>,
    /// How the swap ended, once it has.
    pub ended: Option<Ended>,
    /// Ghost: how many of its writes the server applied.
    pub applied: u8,
    /// Ghost: whether a write's outcome was decided by a recovery read.
    pub recovered: bool,
    /// The bugs planted in its machines.
    planted: Bugs,
}

impl AtomAgent {
    /// Client `index`, about to swap. See [`AtomAgent`] for an example.
    pub fn new(index: u8) -> Self {
        AtomAgent {
            index,
            writes: 0,
            value: 0,
            generation: 0,
            run: None,
            ended: None,
            applied: 0,
            recovered: false,
            planted: Bugs::NONE,
        }
    }

    /// The same client with `planted` bugs in its machines.
    ///
    /// ```
    /// let a = avout_models::atom::AtomAgent::new(0).planted(avout::planted::Bugs::NONE);
    /// assert_eq!(a.applied, 0);
    /// ```
    pub fn planted(mut self, planted: Bugs) -> Self {
        self.planted = planted;
        self
    }

    fn writer(&self) -> u64 {
        1000 + u64::from(self.index)
    }

    fn launch(&mut self, step: Step) {
        self.generation += 1;
        self.run = Some(Run::start(
            self.generation,
            CasMachine::new(ATOM_PATH, step).planted(self.planted),
        ));
        self.settle();
    }

    /// The next try of `Atom::update`, from the node as last read.
    fn write_from(&mut self, current: Option<Versioned>) {
        let Some(node) = current else {
            // `update` on a missing node fails with `AtomError::Missing`; this model's node
            // is never deleted.
            unreachable!("the atom's node vanished");
        };
        let value = decode(&node.data) + 1;
        self.value = value;
        self.writes += 1;
        let write_id = u64::from(self.writes);
        let data = payload(
            self.writer(),
            write_id,
            Some(&node.data),
            value.to_string().into_bytes(),
        );
        self.launch(Step::Set {
            data,
            writer: self.writer(),
            write_id,
            version: node.stat.version,
            czxid: node.stat.czxid,
        });
    }

    fn settle(&mut self) {
        let Some(run) = &mut self.run else { return };
        let Some(output) = run.machine.poll_output() else {
            return;
        };
        self.recovered |= run.machine.recovered();
        self.run = None;
        match output {
            // After a recovery `current` may already be a later writer's state: what this
            // client wrote is its own value (found by trace conformance).
            Ok(Outcome::Applied { .. }) => self.ended = Some(Ended::Swapped(self.value)),
            Ok(Outcome::NotApplied { current }) => self.write_from(current),
            Err(e) => self.ended = Some(Ended::Failed(e)),
        }
    }

    fn with_run(&mut self, f: impl FnOnce(&mut Run<CasMachine>)) {
        if let Some(run) = &mut self.run {
            f(run);
            self.settle();
        }
    }
}

/// The counter in an atom payload.
///
/// ```
/// let data = avout::atom::payload(1, 1, None, b"41".to_vec());
/// assert_eq!(avout_models::atom::decode(&data), 41);
/// ```
pub fn decode(data: &[u8]) -> u64 {
    let value = payload_value(data).expect("inline value");
    std::str::from_utf8(&value)
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("a counter")
}

impl Agent for AtomAgent {
    fn start(&mut self, _session: i64) {
        // `update` with nothing cached reads first (no sync: a stale value only costs a retry).
        self.launch(Step::Read { sync: false });
    }

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.run.as_mut().and_then(Run::poll_request)
    }

    fn handle_reply(&mut self, token: Token, reply: avout::Result<Reply>) {
        self.with_run(|run| run.handle_reply(token, reply));
    }

    fn handle_watch(&mut self, token: Token, event: WatchedEvent) {
        self.with_run(|run| run.handle_watch(token, event));
    }

    fn handle_session(&mut self, state: SessionState) {
        self.with_run(|run| run.machine.handle_session(NOW, state));
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.run.as_ref().and_then(|r| r.machine.poll_timer())
    }

    fn handle_timer(&mut self, now: Millis) {
        self.with_run(|run| run.machine.handle_timer(now));
    }

    fn observe_applied(&mut self, request: &Request, result: &avout::Result<Reply>, _lost: bool) {
        if result.is_ok() && matches!(request, Request::SetData { .. }) {
            self.applied += 1;
        }
    }

    fn finished(&self) -> bool {
        self.ended.is_some()
    }

    fn summary(&self) -> String {
        let state = match &self.ended {
            Some(Ended::Swapped(v)) => format!("swapped, wrote {v}"),
            Some(Ended::Failed(e)) => format!("failed: {e}"),
            None if self.writes == 0 => "reading".into(),
            None => format!("writing (try {})", self.writes),
        };
        match self.applied {
            0 => state,
            n => format!("{state}; the server applied {n} of its writes"),
        }
    }
}

/// The atom model; see the [module docs](self).
///
/// ```
/// let report = avout_models::check(avout_models::atom::AtomModel::new(2), Default::default());
/// assert!(report.ok(), "{report}");
/// assert_eq!(report.unique_states, 1444);
/// ```
#[derive(Clone, Debug)]
pub struct AtomModel {
    /// How many clients increment.
    pub clients: u8,
    /// The faults the environment may inject.
    pub faults: Faults,
    /// A planted bug, in the configuration of the clients' machines (feature `planted-bugs`).
    pub bug: Option<Bug>,
    /// What the model's states share (see [`Space`]); [`crate::check()`] gives each check a
    /// fresh one.
    pub space: Space<AtomAgent>,
}

impl AtomModel {
    /// `clients` incrementing clients, at most one fault of any kind. See [`AtomModel`].
    pub fn new(clients: u8) -> Self {
        AtomModel {
            clients,
            faults: Faults::classic(1),
            bug: None,
            space: Space::default(),
        }
    }
}

fn counter(state: &World<AtomAgent>) -> u64 {
    let node = state.kernel.tree().node(ATOM_PATH).expect("the atom");
    decode(&node.data)
}

/// The counter equals the increments applied.
pub(crate) fn no_lost_update(state: &World<AtomAgent>) -> bool {
    let applied: u64 = state
        .clients
        .iter()
        .map(|c| u64::from(c.agent.applied))
        .sum();
    counter(state) == applied
}

/// No increment applied twice.
pub(crate) fn at_most_once(state: &World<AtomAgent>) -> bool {
    state.clients.iter().all(|c| c.agent.applied <= 1)
}

fn acknowledged_applied(state: &World<AtomAgent>) -> bool {
    state
        .clients
        .iter()
        .all(|c| !matches!(c.agent.ended, Some(Ended::Swapped(_))) || c.agent.applied == 1)
}

fn all_finished(state: &World<AtomAgent>) -> bool {
    state.clients.iter().all(|c| c.agent.finished())
}

fn retried(state: &World<AtomAgent>) -> bool {
    state.clients.iter().any(|c| c.agent.writes > 1)
}

fn recovered(state: &World<AtomAgent>) -> bool {
    state
        .clients
        .iter()
        .any(|c| c.agent.recovered && matches!(c.agent.ended, Some(Ended::Swapped(_))))
}

impl Model for AtomModel {
    type State = World<AtomAgent>;
    type Action = Action;

    fn init_states(&self) -> Vec<Self::State> {
        let planted = crate::plant(self.bug);
        let agents = (0..self.clients)
            .map(|i| AtomAgent::new(i).planted(planted))
            .collect();
        let setup = [Request::Create {
            path: ATOM_PATH.into(),
            data: payload(1, 1, None, b"0".to_vec()),
            options: Default::default(),
        }];
        vec![World::new(agents, self.faults, &setup)]
    }

    crate::world::world_moves!();

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always("no lost update", |_, s| no_lost_update(s)),
            Property::always("applied at most once", |_, s| at_most_once(s)),
            Property::always("acknowledged means applied", |_, s| acknowledged_applied(s)),
            Property::eventually("every swap finishes", |_, s| all_finished(s)),
        ];
        if self.clients > 1 {
            properties.push(Property::sometimes("a conflict retried", |_, s| retried(s)));
        }
        if self.faults.budget > 0 && self.faults.reply_lost {
            properties.push(Property::sometimes("a lost reply recovered", |_, s| {
                recovered(s)
            }));
        }
        properties.extend(crate::world::fault_examples(&self.faults));
        properties
    }
}
