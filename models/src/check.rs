//! Running a model: the checker, its figures, each property's verdict and, for a
//! counterexample or an example, the path as a readable step-by-step trace.

use std::fmt;
use std::time::{Duration, Instant};

use avout::planted::Bug;
use stateright::{Checker, Expectation, Model};

use crate::world::{Action, Agent, World};

/// A model over the [`World`]: what [`check`] and [`trace`] need to know of it.
///
/// ```
/// use avout_models::check::WorldModel;
/// assert_eq!(avout_models::atom::AtomModel::new(2).bug(), None);
/// ```
pub trait WorldModel:
    Model<State = World<Self::Agent>, Action = Action> + Clone + Send + Sync + 'static
{
    /// The clients' behaviour.
    type Agent: Agent;
    /// The planted bug in the clients' machines, if any.
    fn bug(&self) -> Option<Bug>;
}

impl WorldModel for crate::lock::LockModel {
    type Agent = crate::lock::LockAgent;
    fn bug(&self) -> Option<Bug> {
        self.bug
    }
}

impl WorldModel for crate::stm::StmModel {
    type Agent = crate::stm::StmAgent;
    fn bug(&self) -> Option<Bug> {
        self.bug
    }
}

impl WorldModel for crate::mvcc::MvccModel {
    type Agent = crate::mvcc::MvccAgent;
    fn bug(&self) -> Option<Bug> {
        self.bug
    }
}

impl WorldModel for crate::atom::AtomModel {
    type Agent = crate::atom::AtomAgent;
    fn bug(&self) -> Option<Bug> {
        self.bug
    }
}

/// How to search.
///
/// ```
/// let s = avout_models::Search { max_depth: Some(5), ..Default::default() };
/// assert!(!s.dfs);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Search {
    /// Depth-first instead of breadth-first (breadth-first finds the shortest traces).
    pub dfs: bool,
    /// Stop at this depth (steps from the initial state).
    pub max_depth: Option<usize>,
    /// Checker threads.
    pub threads: usize,
}

impl Default for Search {
    fn default() -> Self {
        Search {
            dfs: false,
            max_depth: None,
            threads: 1,
        }
    }
}

/// What the checker concluded about one property.
///
/// ```
/// let report = avout_models::check(avout_models::atom::AtomModel::new(1), Default::default());
/// assert!(matches!(report.property("no lost update").verdict, avout_models::Verdict::Holds));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `always`/`eventually`: no counterexample in the explored states.
    Holds,
    /// `always`/`eventually`: a counterexample, as a trace.
    Violated(String),
    /// `sometimes`: an example, as a trace.
    Found(String),
    /// `sometimes`: no example in the explored states (the model may be vacuous).
    NotFound,
}

/// One property's outcome.
///
/// ```
/// let report = avout_models::check(avout_models::atom::AtomModel::new(1), Default::default());
/// assert!(report.properties.iter().all(|p| p.ok()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PropertyOutcome {
    /// The property's name.
    pub name: &'static str,
    /// `always`, `sometimes` or `eventually`.
    pub expectation: Expectation,
    /// The verdict.
    pub verdict: Verdict,
    /// The verdict's counterexample or example as steps (what its text is made of), for
    /// machine-readable output; `None` when the verdict has no trace.
    pub trace: Option<Trace>,
}

/// A path through a model as numbered steps: where every client starts, what each action
/// did, where every client ends. Its `Display` is the text in a [`Verdict`].
///
/// ```
/// use stateright::Model;
/// use avout_models::{atom::AtomModel, check::trace_steps, world::Action};
/// let model = AtomModel::new(1);
/// let init = model.init_states().remove(0);
/// let next = model.next_state(&init, Action::Apply(0)).unwrap();
/// let trace = trace_steps(&model, vec![(init, Some(Action::Apply(0))), (next, None)]);
/// assert_eq!(trace.steps[0].action, "Apply(0)");
/// assert!(trace.steps[0].what.starts_with("server applies client 0's getData /atom"));
/// assert!(trace.to_string().contains("  1. server applies"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Each client's summary in the first state.
    pub initially: Vec<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Each client's summary in the last state.
    pub at_end: Vec<String>,
}

/// One step of a [`Trace`]; see there for an example.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Its number on the path (the first step is 1).
    pub number: usize,
    /// The model action taken (`Apply(0)`, `Expire(1)`, …).
    pub action: String,
    /// What happened, in a line.
    pub what: String,
    /// What followed from it: watch events fired, clients whose state changed.
    pub then: Vec<String>,
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clients = |f: &mut fmt::Formatter<'_>, lines: &[String]| {
            lines
                .iter()
                .enumerate()
                .try_for_each(|(i, line)| writeln!(f, "    client {i}: {line}"))
        };
        if !self.initially.is_empty() {
            writeln!(f, "initially:")?;
            clients(f, &self.initially)?;
        }
        for step in &self.steps {
            writeln!(f, "{:>3}. {}", step.number, step.what)?;
            for line in &step.then {
                writeln!(f, "         {line}")?;
            }
        }
        if !self.at_end.is_empty() {
            writeln!(f, "at the end:")?;
            clients(f, &self.at_end)?;
        }
        Ok(())
    }
}

impl PropertyOutcome {
    /// Whether the outcome is the wanted one (no counterexample; an example found). See
    /// [`PropertyOutcome`].
    pub fn ok(&self) -> bool {
        matches!(self.verdict, Verdict::Holds | Verdict::Found(_))
    }

    /// The property's kind: `always`, `sometimes` or `eventually`.
    ///
    /// ```
    /// let report = avout_models::check(avout_models::atom::AtomModel::new(1), Default::default());
    /// assert_eq!(report.property("no lost update").kind(), "always");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self.expectation {
            Expectation::Always => "always",
            Expectation::Eventually => "eventually",
            Expectation::Sometimes => "sometimes",
        }
    }
}

impl Verdict {
    /// The verdict in a word: `holds`, `violated`, `found` or `not-found`.
    ///
    /// ```
    /// assert_eq!(avout_models::Verdict::NotFound.name(), "not-found");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Violated(_) => "violated",
            Verdict::Found(_) => "found",
            Verdict::NotFound => "not-found",
        }
    }
}

/// The result of checking a model.
///
/// ```
/// let report = avout_models::check(avout_models::atom::AtomModel::new(1), Default::default());
/// assert!(report.ok() && report.unique_states > 0);
/// println!("{report}");
/// ```
#[derive(Clone, Debug)]
pub struct Report {
    /// States generated, repeats included.
    pub states: usize,
    /// Distinct states.
    pub unique_states: usize,
    /// The deepest path explored.
    pub max_depth: usize,
    /// Wall time of the check.
    pub elapsed: Duration,
    /// Each property, in the model's order.
    pub properties: Vec<PropertyOutcome>,
}

impl Report {
    /// Whether every property came out as wanted. See [`Report`].
    pub fn ok(&self) -> bool {
        self.properties.iter().all(PropertyOutcome::ok)
    }

    /// The outcome of the property named `name`. See [`Verdict`] for an example.
    ///
    /// # Panics
    ///
    /// If the model has no such property.
    pub fn property(&self, name: &str) -> &PropertyOutcome {
        self.properties
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no property {name:?}"))
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "states: {}, unique states: {}, max depth: {}, time: {:.2?}",
            self.states, self.unique_states, self.max_depth, self.elapsed
        )?;
        for p in &self.properties {
            let kind = p.kind();
            let verdict = match &p.verdict {
                Verdict::Holds => "holds",
                Verdict::Violated(_) => "VIOLATED",
                Verdict::Found(_) => "example found",
                Verdict::NotFound => "NO EXAMPLE FOUND",
            };
            writeln!(f, "  {kind:<10} {:<48} {verdict}", p.name)?;
        }
        for p in &self.properties {
            if let Verdict::Violated(trace) = &p.verdict {
                writeln!(f, "\ncounterexample to \"{}\":\n{trace}", p.name)?;
            }
        }
        Ok(())
    }
}

/// Checks `model` exhaustively (up to `search.max_depth`).
///
/// ```
/// let report = avout_models::check(avout_models::atom::AtomModel::new(1), Default::default());
/// assert!(report.ok());
/// ```
pub fn check<M: WorldModel>(model: M, search: Search) -> Report {
    let started = Instant::now();
    let mut builder = model.clone().checker().threads(search.threads.max(1));
    if let Some(depth) = search.max_depth {
        builder = builder.target_max_depth(depth);
    }
    if search.dfs {
        report(&model, builder.spawn_dfs().join(), started)
    } else {
        report(&model, builder.spawn_bfs().join(), started)
    }
}

fn report<M: WorldModel>(model: &M, checker: impl Checker<M>, started: Instant) -> Report {
    let elapsed = started.elapsed();
    let mut discoveries = checker.discoveries();
    let properties = model
        .properties()
        .into_iter()
        .map(|p| {
            let found = discoveries.remove(p.name).map(|path| {
                let mut path = path.into_vec();
                // The checker keeps the last path it found, which may run past the first
                // state showing the discovery: cut it there.
                let shows = |s: &M::State| match p.expectation {
                    Expectation::Always => !(p.condition)(model, s),
                    Expectation::Sometimes => (p.condition)(model, s),
                    Expectation::Eventually => false,
                };
                if let Some(at) = path.iter().position(|(s, _)| shows(s)) {
                    path.truncate(at + 1);
                    path[at].1 = None;
                }
                trace_steps(model, path)
            });
            let text = found.as_ref().map(ToString::to_string);
            let verdict = match (&p.expectation, text) {
                (Expectation::Sometimes, Some(t)) => Verdict::Found(t),
                (Expectation::Sometimes, None) => Verdict::NotFound,
                (_, Some(t)) => Verdict::Violated(t),
                (_, None) => Verdict::Holds,
            };
            PropertyOutcome {
                name: p.name,
                expectation: p.expectation,
                verdict,
                trace: found,
            }
        })
        .collect();
    Report {
        states: checker.state_count(),
        unique_states: checker.unique_state_count(),
        max_depth: checker.max_depth(),
        elapsed,
        properties,
    }
}

/// Serves stateright's explorer for `model` on `address` (blocks).
///
/// ```no_run
/// avout_models::check::serve(avout_models::atom::AtomModel::new(2), "127.0.0.1:3000");
/// ```
pub fn serve<M: WorldModel>(model: M, address: &str) {
    model.checker().serve(address);
}

/// A path of states and actions as numbered steps, each followed by the clients whose state
/// changed, and where every client is at the end.
///
/// ```
/// use stateright::Model;
/// use avout_models::{atom::AtomModel, world::Action};
/// let model = AtomModel::new(1);
/// let init = model.init_states().remove(0);
/// let next = model.next_state(&init, Action::Apply(0)).unwrap();
/// let trace = avout_models::trace(&model, vec![(init, Some(Action::Apply(0))), (next, None)]);
/// assert!(trace.contains("1. server applies client 0's getData /atom"), "{trace}");
/// ```
pub fn trace<M: WorldModel>(model: &M, path: Vec<(M::State, Option<Action>)>) -> String {
    trace_steps(model, path).to_string()
}

/// A path of states and actions as a [`Trace`]: the steps [`trace`] prints. `model` names
/// the states' type; the states carry all the rest (a planted bug too, in their clients'
/// machines), so the path is stepped again as it was checked.
pub fn trace_steps<M: WorldModel>(_model: &M, path: Vec<(M::State, Option<Action>)>) -> Trace {
    let summaries = |s: &M::State| s.clients.iter().map(|c| c.agent.summary()).collect();
    let initially = path.first().map_or_else(Vec::new, |(s, _)| summaries(s));
    let at_end = path.last().map_or_else(Vec::new, |(s, _)| summaries(s));
    let mut steps = Vec::new();
    for (n, (state, action)) in path.into_iter().enumerate() {
        let Some(action) = action else { continue };
        let mut next = state;
        let mut log = Vec::new();
        next.step(action, Some(&mut log));
        let mut lines = log.into_iter();
        steps.push(Step {
            number: n + 1,
            action: action.to_string(),
            what: lines.next().unwrap_or_default(),
            then: lines.map(|l| l.trim_start().to_owned()).collect(),
        });
    }
    Trace {
        initially,
        steps,
        at_end,
    }
}
