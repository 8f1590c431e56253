//! Running a model: the checker within its budgets, its progress, each property's verdict
//! and, for a counterexample or an example, the path as a readable step-by-step trace.
//!
//! Three ways to search ([`Strategy`]): breadth-first (the shortest traces, and "every
//! schedule of at most N steps" when it stops; a checker of ours, `bfs`, which checks as
//! stateright's does in a fraction of its memory), stateright's depth-first checker (deep
//! states first), and seeded random walks ([`walk`]) for spaces too big for either.
//!
//! A check runs on its own threads while the caller watches it: every
//! [`Progress`] tick reports the states, the depth and the memory resident, and a [`Budget`]
//! (unique states, memory) ends it cleanly — the model's [`Space`] is
//! halted, so no state has a successor any more, the checker judges the states it already
//! generated and stops, and the report says what was covered ([`Coverage::Incomplete`]).

mod bfs;
pub mod memory;
mod report;
pub mod walk;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use avout::planted::Bug;
use stateright::{Checker, Expectation, Model};

use crate::world::{Action, Agent, Space, World};

pub use report::{
    Coverage, Outcome, PropertyOutcome, Report, Step, Stop, Trace, Verdict, trace, trace_steps,
};

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
    /// What the model's states share.
    fn space(&self) -> &Space<Self::Agent>;
    /// The same, to replace.
    fn space_mut(&mut self) -> &mut Space<Self::Agent>;
}

macro_rules! world_model {
    ($model:ty, $agent:ty) => {
        impl WorldModel for $model {
            type Agent = $agent;
            fn bug(&self) -> Option<Bug> {
                self.bug
            }
            fn space(&self) -> &Space<$agent> {
                &self.space
            }
            fn space_mut(&mut self) -> &mut Space<$agent> {
                &mut self.space
            }
        }
    };
}

world_model!(crate::lock::LockModel, crate::lock::LockAgent);
world_model!(crate::stm::StmModel, crate::stm::StmAgent);
world_model!(crate::mvcc::MvccModel, crate::mvcc::MvccAgent);
world_model!(crate::atom::AtomModel, crate::atom::AtomAgent);

/// No bug is planted in the executor's machines.
impl WorldModel for crate::executor::ExecutorModel {
    type Agent = crate::executor::ExecutorAgent;
    fn bug(&self) -> Option<Bug> {
        None
    }
    fn space(&self) -> &Space<Self::Agent> {
        &self.space
    }
    fn space_mut(&mut self) -> &mut Space<Self::Agent> {
        &mut self.space
    }
}

/// How to search.
///
/// ```
/// use avout_models::check::{Search, Strategy};
/// let s = Search { max_depth: Some(5), ..Default::default() };
/// assert_eq!(s.strategy, Strategy::BreadthFirst);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Search {
    /// How to explore.
    pub strategy: Strategy,
    /// Check every schedule of at most this many steps, no longer ones (for walks: cut each
    /// walk there).
    pub max_depth: Option<usize>,
    /// Checker threads.
    pub threads: usize,
    /// When to stop early.
    pub budget: Budget,
}

impl Default for Search {
    fn default() -> Self {
        Search {
            strategy: Strategy::BreadthFirst,
            max_depth: None,
            threads: 1,
            budget: Budget::default(),
        }
    }
}

/// How to explore a model.
///
/// ```
/// assert_ne!(avout_models::check::Strategy::DepthFirst, avout_models::check::Strategy::BreadthFirst);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Every state, nearest first: the shortest counterexamples.
    BreadthFirst,
    /// Every state, deepest first.
    DepthFirst,
    /// `walks` random walks (see [`walk`]), walk `i` drawn from seed `seed + i`.
    Walks {
        /// How many.
        walks: u64,
        /// The first walk's seed.
        seed: u64,
    },
}

/// When a check stops before it has covered everything. Both are checked a few times a
/// second; the check then ends as described in the [module docs](self).
///
/// ```
/// let b = avout_models::check::Budget::default();
/// assert_eq!(b.max_states, None);
/// # #[cfg(target_os = "linux")]
/// assert!(b.max_memory.is_some());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// At most this many unique states (for walks: steps).
    pub max_states: Option<usize>,
    /// At most this many bytes resident (the whole process's).
    pub max_memory: Option<u64>,
}

impl Default for Budget {
    /// No state budget; memory: [`Budget::fitting_memory`].
    fn default() -> Self {
        Budget {
            max_states: None,
            max_memory: Budget::fitting_memory(),
        }
    }
}

impl Budget {
    /// No budget at all.
    ///
    /// ```
    /// assert_eq!(avout_models::check::Budget::NONE.max_memory, None);
    /// ```
    pub const NONE: Budget = Budget {
        max_states: None,
        max_memory: None,
    };

    /// Two thirds of the memory available now (`MemAvailable`), leaving room for the
    /// checker's queue to grow while it stops and for whatever else runs; `None` where the
    /// figure is unknown.
    ///
    /// ```
    /// # #[cfg(target_os = "linux")]
    /// assert!(avout_models::check::Budget::fitting_memory().unwrap() > 0);
    /// ```
    pub fn fitting_memory() -> Option<u64> {
        memory::available().map(|a| a / 3 * 2)
    }

    fn exceeded(&self, unique_states: usize, resident: Option<u64>) -> Option<Stop> {
        if let Some(max) = self.max_states
            && unique_states >= max
        {
            return Some(Stop::States(max));
        }
        match (self.max_memory, resident) {
            (Some(max), Some(now)) if now >= max => Some(Stop::Memory(max)),
            _ => None,
        }
    }
}

/// Where a running check is, a few times a second.
///
/// ```
/// let p = avout_models::check::Progress::default();
/// assert_eq!(p.states, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// States generated so far (for walks: steps).
    pub states: usize,
    /// Distinct states so far (for walks: walks done).
    pub unique_states: usize,
    /// The most steps on a path so far.
    pub depth: usize,
    /// Bytes resident now, if known.
    pub memory: Option<u64>,
    /// Time since the check started.
    pub elapsed: Duration,
    /// Whether a budget stopped it and it is judging the states it has.
    pub stopping: bool,
}

impl Progress {
    /// The figures of a check started at `started`, measuring its memory and time now.
    fn now(
        (states, unique_states, depth): (usize, usize, usize),
        started: Instant,
        stopping: bool,
    ) -> Progress {
        Progress {
            states,
            unique_states,
            depth,
            memory: memory::resident(),
            elapsed: started.elapsed(),
            stopping,
        }
    }
}

/// How often a running check is looked at.
const TICK: Duration = Duration::from_millis(100);

/// Checks `model` as `search` says, without reporting progress. See [`check_with`].
///
/// ```
/// let report = avout_models::check(avout_models::atom::AtomModel::new(1), Default::default());
/// assert!(report.ok());
/// ```
pub fn check<M: WorldModel>(model: M, search: Search) -> Report {
    check_with(model, search, &mut |_| {})
}

/// Checks `model` as `search` says, calling `progress` a few times a second while it runs.
///
/// ```
/// use avout_models::check::{Budget, Coverage, Search, check_with};
/// let search = Search { budget: Budget { max_states: Some(50), max_memory: None }, ..Search::default() };
/// let mut ticks = 0;
/// let report = check_with(avout_models::mvcc::MvccModel::new(2), search, &mut |_| ticks += 1);
/// assert!(matches!(report.coverage, Coverage::Incomplete { .. }), "{report}");
/// assert!(ticks > 0);
/// ```
pub fn check_with<M: WorldModel>(
    mut model: M,
    search: Search,
    progress: &mut dyn FnMut(&Progress),
) -> Report {
    *model.space_mut() = Space::default();
    if let Strategy::Walks { walks, seed } = search.strategy {
        return walk::walk(&model, walks, seed, search, progress);
    }
    let started = Instant::now();
    // stateright counts the initial state as depth 1 and does not judge the states at its
    // target: `depth` steps are judged with a target two further.
    let target = search.max_depth.map(|depth| depth + 2);
    if search.strategy == Strategy::DepthFirst {
        let mut builder = model.clone().checker().threads(search.threads.max(1));
        if let Some(target) = target {
            builder = builder.target_max_depth(target);
        }
        run(&model, builder.spawn_dfs(), search, started, progress)
    } else {
        let checker = bfs::BfsChecker::spawn(model.clone(), search.threads, target);
        run(&model, checker, search, started, progress)
    }
}

/// Watches the running `checker` until it ends, halting it at a budget, and reports.
fn run<M: WorldModel>(
    model: &M,
    checker: impl Checker<M>,
    search: Search,
    started: Instant,
    progress: &mut dyn FnMut(&Progress),
) -> Report {
    let space = model.space();
    // What stopped the check, how deep it had fully gone, and the `eventually`
    // counterexamples found before: after the halt every state left looks terminal to the
    // checker, so its later ones are not real.
    let mut stopped: Option<(Stop, usize, Found<M>)> = None;
    loop {
        let done = checker.is_done();
        let counts = (
            checker.state_count(),
            checker.unique_state_count(),
            checker.max_depth().saturating_sub(1),
        );
        let now = Progress::now(counts, started, stopped.is_some());
        progress(&now);
        if done {
            break;
        }
        if stopped.is_none()
            && let Some(stop) = search.budget.exceeded(now.unique_states, now.memory)
        {
            let eventually = model
                .properties()
                .into_iter()
                .filter(|p| p.expectation == Expectation::Eventually)
                .filter_map(|p| Some((p.name, checker.discovery(p.name)?.into_vec())))
                .collect();
            space.halt();
            stopped = Some((stop, checker.max_depth(), eventually));
        }
        std::thread::sleep(TICK);
    }
    let checker = checker.join();
    space.resume();
    let max_depth = checker.max_depth();
    let mut discoveries: Found<M> = checker
        .discoveries()
        .into_iter()
        .map(|(name, path)| (name, path.into_vec()))
        .collect();
    let coverage = match stopped {
        Some((stop, depth, eventually)) => {
            for p in model.properties() {
                if p.expectation == Expectation::Eventually {
                    discoveries.remove(p.name);
                }
            }
            discoveries.extend(eventually);
            let exact = search.strategy == Strategy::BreadthFirst;
            Coverage::Incomplete {
                stopped: stop,
                // Breadth-first (level by level on any number of threads, see `bfs`): every
                // state `depth` deep was generated once the first of them was expanded, and
                // every one was judged before the end.
                steps: exact.then(|| depth.saturating_sub(1)),
            }
        }
        None => match search.max_depth {
            Some(depth) if max_depth >= depth + 2 => Coverage::Bounded { depth },
            _ => Coverage::Complete,
        },
    };
    Report {
        states: checker.state_count(),
        unique_states: checker.unique_state_count(),
        max_depth: max_depth
            .saturating_sub(1)
            .min(search.max_depth.unwrap_or(usize::MAX)),
        elapsed: started.elapsed(),
        coverage,
        peak_memory: memory::peak(),
        kept: space.kept(),
        properties: outcomes(model, discoveries),
    }
}

/// A path the checker found: each state with the action taken from it.
type Path<M> = Vec<(World<<M as WorldModel>::Agent>, Option<Action>)>;

/// The paths found, by property.
type Found<M> = HashMap<&'static str, Path<M>>;

/// Each property's verdict from the paths found for it.
fn outcomes<M: WorldModel>(model: &M, mut found: Found<M>) -> Vec<PropertyOutcome> {
    model
        .properties()
        .into_iter()
        .map(|p| {
            let found = found.remove(p.name).map(|mut path| {
                // A checker may keep a path running past the first state showing the
                // discovery: cut it there.
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
                seed: None,
                hits: None,
            }
        })
        .collect()
}

/// Serves stateright's explorer for `model` on `address` (blocks).
///
/// ```no_run
/// avout_models::check::serve(avout_models::atom::AtomModel::new(2), "127.0.0.1:3000");
/// ```
pub fn serve<M: WorldModel>(model: M, address: &str) {
    model.checker().serve(address);
}
