//! What a check found: each property's [`Verdict`], the figures, how much of the space was
//! covered ([`Coverage`]), and a counterexample or example as a step-by-step [`Trace`].

use std::fmt;
use std::time::Duration;

use stateright::Expectation;

use super::{WorldModel, memory};
use crate::world::{Action, Agent};

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
    /// For random walks: the seed of the walk that found the trace (`--walks 1 --seed S`
    /// takes it again).
    pub seed: Option<u64>,
    /// For random walks: how many walks found a trace.
    pub hits: Option<u64>,
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

/// How much of a model's state space a check covered.
///
/// ```
/// use avout_models::check::{Coverage, Stop};
/// let c = Coverage::Incomplete { stopped: Stop::States(10), steps: Some(4) };
/// assert_eq!(c.name(), "incomplete");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// Every reachable state was checked.
    Complete,
    /// Every schedule of at most `depth` steps was checked; longer ones were not.
    Bounded {
        /// The bound, in steps.
        depth: usize,
    },
    /// A budget stopped the check: every state it generated was checked, but not all states.
    Incomplete {
        /// Which budget.
        stopped: Stop,
        /// Every schedule of at most this many steps was checked (known for a breadth-first
        /// check, on any number of threads).
        steps: Option<usize>,
    },
    /// Random walks from the initial state: a sample, not a proof.
    Walks {
        /// Walks taken.
        walks: u64,
        /// The first walk's seed (walk `i`'s is `seed + i`).
        seed: u64,
        /// The most steps a walk took before it was cut.
        depth: usize,
    },
}

/// Which budget stopped a check.
///
/// ```
/// assert_eq!(avout_models::check::Stop::Memory(1 << 30).to_string(), "the memory budget (1 GiB resident)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The unique states budget (`--max-states`).
    States(usize),
    /// The memory budget (`--max-memory`), in bytes resident.
    Memory(u64),
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::States(n) => write!(f, "the state budget ({n} unique states)"),
            Stop::Memory(b) => write!(f, "the memory budget ({} resident)", memory::show(*b)),
        }
    }
}

impl Coverage {
    /// The coverage in a word: `complete`, `bounded`, `incomplete` or `walks`. See
    /// [`Coverage`].
    pub fn name(&self) -> &'static str {
        match self {
            Coverage::Complete => "complete",
            Coverage::Bounded { .. } => "bounded",
            Coverage::Incomplete { .. } => "incomplete",
            Coverage::Walks { .. } => "walks",
        }
    }

    /// Whether `always` properties that hold and `sometimes` ones not found are so only as
    /// far as the check went (a budget stopped it, or it walked at random).
    ///
    /// ```
    /// assert!(!avout_models::check::Coverage::Complete.partial());
    /// ```
    pub fn partial(&self) -> bool {
        matches!(self, Coverage::Incomplete { .. } | Coverage::Walks { .. })
    }
}

impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Coverage::Complete => write!(f, "complete: every reachable state checked"),
            Coverage::Bounded { depth } => {
                write!(
                    f,
                    "bounded: every schedule of at most {depth} steps checked"
                )
            }
            Coverage::Incomplete { stopped, steps } => {
                write!(f, "INCOMPLETE: stopped at {stopped}")?;
                match steps {
                    Some(s) => write!(f, "; every schedule of at most {s} steps checked"),
                    None => write!(f, "; every state generated was checked"),
                }
            }
            Coverage::Walks { walks, seed, depth } => write!(
                f,
                "random walks: {walks} walks from seed {seed} (walk i: seed {seed} + i), at most {depth} steps each"
            ),
        }
    }
}

/// How a check came out.
///
/// ```
/// let report = avout_models::check(avout_models::atom::AtomModel::new(1), Default::default());
/// assert_eq!(report.outcome(), avout_models::check::Outcome::Passed);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every property came out as wanted.
    Passed,
    /// A counterexample; or, with every reachable state checked, an example not found.
    Failed,
    /// No counterexample, but not everything was checked (a budget, a depth bound, random
    /// walks) and some example is missing: it may lie beyond what was checked.
    Incomplete,
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
    /// States generated, repeats included (for walks: steps taken).
    pub states: usize,
    /// Distinct states (0 for walks, which keep none).
    pub unique_states: usize,
    /// The most steps on a path explored.
    pub max_depth: usize,
    /// Wall time of the check.
    pub elapsed: Duration,
    /// How much of the state space was covered.
    pub coverage: Coverage,
    /// The process's peak resident memory when the check ended, if known.
    pub peak_memory: Option<u64>,
    /// Distinct kernels and clients the states shared (see [`crate::shared`]).
    pub kept: (usize, usize),
    /// Each property, in the model's order.
    pub properties: Vec<PropertyOutcome>,
}

impl Report {
    /// Whether every property came out as wanted (an incomplete check may still: nothing
    /// violated, every example found). See [`Report`].
    pub fn ok(&self) -> bool {
        self.properties.iter().all(PropertyOutcome::ok)
    }

    /// Passed, failed or incomplete. See [`Outcome`].
    pub fn outcome(&self) -> Outcome {
        let violated = self
            .properties
            .iter()
            .any(|p| matches!(p.verdict, Verdict::Violated(_)));
        if violated {
            Outcome::Failed
        } else if self.ok() {
            Outcome::Passed
        } else if self.coverage == Coverage::Complete {
            Outcome::Failed
        } else {
            Outcome::Incomplete
        }
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
        write!(f, "states: {}", self.states)?;
        if !matches!(self.coverage, Coverage::Walks { .. }) {
            write!(f, ", unique states: {}", self.unique_states)?;
        }
        write!(
            f,
            ", max depth: {}, time: {:.2?}",
            self.max_depth, self.elapsed
        )?;
        if let Some(peak) = self.peak_memory {
            write!(f, ", peak memory: {}", memory::show(peak))?;
        }
        writeln!(f)?;
        writeln!(f, "coverage: {}", self.coverage)?;
        let so_far = self.coverage.partial();
        for p in &self.properties {
            let kind = p.kind();
            let verdict = match (&p.verdict, so_far) {
                (Verdict::Holds, false) => "holds",
                (Verdict::Holds, true) => "holds so far",
                (Verdict::Violated(_), _) => "VIOLATED",
                (Verdict::Found(_), _) => "example found",
                (Verdict::NotFound, false) if self.coverage == Coverage::Complete => {
                    "NO EXAMPLE FOUND"
                }
                (Verdict::NotFound, false) => "not found within the bound",
                (Verdict::NotFound, true) => "not found so far",
            };
            let hits = match (p.hits, &self.coverage) {
                (Some(h), Coverage::Walks { walks, .. }) if h > 0 => {
                    format!(" (in {h} of {walks} walks)")
                }
                _ => String::new(),
            };
            writeln!(f, "  {kind:<10} {:<48} {verdict}{hits}", p.name)?;
        }
        for p in &self.properties {
            if let Verdict::Violated(trace) = &p.verdict {
                let walk = p.seed.map_or(String::new(), |s| {
                    format!(" (walk seed {s}: --walks 1 --seed {s} takes it again)")
                });
                writeln!(f, "\ncounterexample to \"{}\"{walk}:\n{trace}", p.name)?;
            }
        }
        Ok(())
    }
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
