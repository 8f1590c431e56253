//! A breadth-first checker that remembers where each state came from, not how.
//!
//! stateright's own breadth-first checker (0.31) queues every state with the whole path of
//! action indices that reached it: a `Vec<usize>` cloned and grown by one at every step. A
//! state 33 steps deep waits in the queue with 512 bytes of path (the copy's capacity
//! doubles on the push), several times the state itself, and the queue holds the whole next
//! level: at the depths the Mvcc model needs, the paths were most of the check's memory.
//!
//! This checker keeps, for each state seen, the fingerprint of the state it was first reached
//! from (16 bytes a state; stateright's table of states seen held the same). It rebuilds a
//! path only for what it found, by walking those back to an initial state and replaying the
//! model forward. It does not queue the states at its depth target either: they are counted,
//! never judged or expanded.
//!
//! Otherwise it checks as stateright's does, so a check's figures are the same with either:
//! the same states counted (every successor inside the boundary, and each distinct one
//! once), the properties judged as a state is taken from the queue (`eventually` ones at
//! terminal states), a later discovery replacing an earlier one, and the check ending once
//! every property has a discovery, looked at every 1,500 states. With one thread the order
//! is the same too (first in, first out).
//!
//! With more threads it goes level by level: the states of one depth are split between the
//! threads, and the next depth starts when they are all done. A state's depth is then the
//! length of its shortest path on any number of threads, so a stopped check knows exactly
//! which schedules it covered (see [`super::Coverage::Incomplete`]).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hash};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use stateright::{Checker, Expectation, Model, Path, Property};

use crate::shared::{Prehashed, content_hash};

/// How often (in states taken, per thread) the check looks whether every property has a
/// discovery: stateright's block size, so a check that ends that way ends where it did.
const BLOCK: usize = 1_500;

/// How many states of one depth the threads take at a time, at most.
const CHUNK: usize = 8_192;

/// A state's fingerprint: its hash, never 0 (0 is "no parent", an initial state).
type Fingerprint = u64;

/// A state waiting to be judged and expanded.
struct Job<S> {
    state: S,
    fingerprint: Fingerprint,
    /// The `eventually` properties (by index) not yet seen holding on the way here.
    eventually: u64,
    /// stateright's depth: 1 for an initial state.
    depth: usize,
}

/// What the checking threads and the watcher share.
struct Run {
    /// States generated, repeats included.
    states: AtomicUsize,
    /// The depth of the deepest state taken from the queue.
    max_depth: AtomicUsize,
    /// Each state seen, with the state it was first reached from (0 for an initial one).
    seen: DashMap<Fingerprint, Fingerprint, BuildHasherDefault<Prehashed>>,
    /// The properties with a discovery, as bits by index.
    found: AtomicU64,
    /// Each discovery: the state showing it.
    discoveries: Mutex<BTreeMap<&'static str, Fingerprint>>,
    /// Every property has a discovery: stop.
    finished: AtomicBool,
}

impl Run {
    fn discover(&self, index: usize, name: &'static str, at: Fingerprint) {
        self.discoveries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name, at);
        self.found.fetch_or(1 << index, Ordering::Relaxed);
    }
}

/// The checker: spawned by [`BfsChecker::spawn`], watched and joined through [`Checker`].
pub(super) struct BfsChecker<M> {
    model: Arc<M>,
    run: Arc<Run>,
    handle: Option<JoinHandle<()>>,
}

impl<M> BfsChecker<M>
where
    M: Model + Send + Sync + 'static,
    M::State: Hash + Send + Sync + Clone + PartialEq,
    M::Action: Clone + PartialEq,
{
    /// Starts checking `model` on `threads` threads, not judging states at depth `target`
    /// (stateright's depth: 1 for an initial state) or deeper.
    pub(super) fn spawn(model: M, threads: usize, target: Option<usize>) -> Self {
        let model = Arc::new(model);
        let run = Arc::new(Run {
            states: AtomicUsize::new(0),
            max_depth: AtomicUsize::new(0),
            seen: DashMap::default(),
            found: AtomicU64::new(0),
            discoveries: Mutex::new(BTreeMap::new()),
            finished: AtomicBool::new(false),
        });
        let handle = {
            let (model, run) = (Arc::clone(&model), Arc::clone(&run));
            std::thread::Builder::new()
                .name("checker".into())
                .spawn(move || Explorer::new(&*model, &run, target).explore(threads.max(1)))
                .expect("spawn the checker's thread")
        };
        BfsChecker {
            model,
            run,
            handle: Some(handle),
        }
    }

    /// The path to the state `at`: its ancestors back to an initial state, replayed.
    fn path(&self, at: Fingerprint) -> Option<Path<M::State, M::Action>> {
        let mut chain = vec![at];
        loop {
            let parent = *self.run.seen.get(chain.last()?)?;
            if parent == 0 {
                break;
            }
            chain.push(parent);
        }
        chain.reverse();
        let model = &*self.model;
        let init = model
            .init_states()
            .into_iter()
            .find(|s| fingerprint(s) == chain[0])?;
        let mut state = init.clone();
        let mut actions = Vec::with_capacity(chain.len() - 1);
        for &next in &chain[1..] {
            let (action, after) = model
                .next_steps(&state)
                .into_iter()
                .find(|(_, s)| fingerprint(s) == next)?;
            actions.push(action);
            state = after;
        }
        Path::from_actions(model, init, &actions)
    }
}

impl<M> Checker<M> for BfsChecker<M>
where
    M: Model + Send + Sync + 'static,
    M::State: Hash + Send + Sync + Clone + PartialEq,
    M::Action: Clone + PartialEq,
{
    fn model(&self) -> &M {
        &self.model
    }

    fn state_count(&self) -> usize {
        self.run.states.load(Ordering::Relaxed)
    }

    fn unique_state_count(&self) -> usize {
        self.run.seen.len()
    }

    fn max_depth(&self) -> usize {
        self.run.max_depth.load(Ordering::Relaxed)
    }

    fn discoveries(&self) -> HashMap<&'static str, Path<M::State, M::Action>> {
        let found = self
            .run
            .discoveries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        found
            .into_iter()
            .filter_map(|(name, at)| Some((name, self.path(at)?)))
            .collect()
    }

    fn handles(&mut self) -> Vec<JoinHandle<()>> {
        self.handle.take().into_iter().collect()
    }

    fn is_done(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

/// Queues `chunks` (of one depth, the deepest queued) after what is queued, filling up the
/// last chunk first: each take leaves a part-filled chunk, and chunks too small to split
/// would leave threads idle.
fn enqueue<S>(queue: &mut VecDeque<Vec<Job<S>>>, chunks: impl IntoIterator<Item = Vec<Job<S>>>) {
    for mut chunk in chunks {
        match queue.back_mut() {
            Some(last) if last[0].depth == chunk[0].depth && last.len() + chunk.len() <= CHUNK => {
                last.append(&mut chunk);
            }
            _ => queue.push_back(chunk),
        }
    }
}

fn fingerprint<T: Hash>(value: &T) -> Fingerprint {
    content_hash(value).max(1)
}

/// The checking itself, on the checker's thread and the ones it borrows for a level.
struct Explorer<'a, M: Model> {
    model: &'a M,
    run: &'a Run,
    properties: Vec<Property<M>>,
    target: Option<usize>,
    /// A state at the target depth was generated (and not queued).
    reached_target: AtomicBool,
}

impl<'a, M> Explorer<'a, M>
where
    M: Model + Sync,
    M::State: Hash + Send + Sync,
{
    fn new(model: &'a M, run: &'a Run, target: Option<usize>) -> Self {
        let properties = model.properties();
        assert!(properties.len() <= 64, "at most 64 properties");
        Explorer {
            model,
            run,
            properties,
            target,
            reached_target: AtomicBool::new(false),
        }
    }

    fn explore(&self, threads: usize) {
        let eventually = self
            .properties
            .iter()
            .enumerate()
            .filter(|(_, p)| p.expectation == Expectation::Eventually)
            .fold(0u64, |bits, (i, _)| bits | 1 << i);
        let init: Vec<_> = self
            .model
            .init_states()
            .into_iter()
            .filter(|s| self.model.within_boundary(s))
            .collect();
        self.run.states.store(init.len(), Ordering::Relaxed);
        let init = init
            .into_iter()
            .map(|state| {
                let fingerprint = fingerprint(&state);
                self.run.seen.insert(fingerprint, 0);
                Job {
                    state,
                    fingerprint,
                    eventually,
                    depth: 1,
                }
            })
            .collect();
        // First in, first out, in chunks of one depth: a queue as long as a whole depth is
        // never copied whole to grow, and a chunk is what the threads split.
        let mut queue: VecDeque<Vec<Job<M::State>>> = VecDeque::from([init]);
        let mut taken = vec![0usize; threads];
        while let Some(chunk) = queue.pop_front() {
            if self.run.finished.load(Ordering::Relaxed) {
                return;
            }
            // A chunk is of one depth, below the target (deeper states are never queued).
            if let Some(job) = chunk.first() {
                self.run.max_depth.fetch_max(job.depth, Ordering::Relaxed);
            }
            if threads == 1 || chunk.len() < 2 * threads {
                let next = self.take_all(chunk, &mut taken[0]);
                enqueue(&mut queue, next);
                continue;
            }
            let part = chunk.len().div_ceil(threads);
            let mut chunk = chunk.into_iter();
            let parts: Vec<Vec<_>> = (0..threads)
                .map(|_| chunk.by_ref().take(part).collect())
                .collect();
            let nexts: Vec<Vec<_>> = std::thread::scope(|scope| {
                let workers: Vec<_> = parts
                    .into_iter()
                    .zip(taken.iter_mut())
                    .map(|(jobs, taken)| scope.spawn(move || self.take_all(jobs, taken)))
                    .collect();
                workers
                    .into_iter()
                    .map(|w| w.join().expect("a checker thread panicked"))
                    .collect()
            });
            enqueue(&mut queue, nexts.into_iter().flatten());
        }
        if !self.run.finished.load(Ordering::Relaxed)
            && self.reached_target.load(Ordering::Relaxed)
            && let Some(target) = self.target
        {
            // stateright takes these from its queue only to skip them: its deepest.
            self.run.max_depth.fetch_max(target, Ordering::Relaxed);
        }
    }

    /// Judges and expands `jobs` in order; returns what is new, in chunks. `taken` counts
    /// the states this thread took, for the [`BLOCK`] rhythm.
    fn take_all(&self, jobs: Vec<Job<M::State>>, taken: &mut usize) -> Vec<Vec<Job<M::State>>> {
        let mut actions = Vec::new();
        let mut chunks = Vec::new();
        let mut next = Vec::new();
        for job in jobs {
            if self.run.finished.load(Ordering::Relaxed) {
                break;
            }
            if next.len() >= CHUNK {
                chunks.push(std::mem::replace(&mut next, Vec::with_capacity(CHUNK)));
            }
            let go_on = self.take(job, &mut next, &mut actions);
            *taken += 1;
            if !go_on || (taken.is_multiple_of(BLOCK) && self.all_found()) {
                self.run.finished.store(true, Ordering::Relaxed);
                break;
            }
        }
        if !next.is_empty() {
            chunks.push(next);
        }
        chunks
    }

    fn all_found(&self) -> bool {
        let all = u64::MAX >> (64 - self.properties.len().max(1));
        self.properties.is_empty() || self.run.found.load(Ordering::Relaxed) & all == all
    }

    /// Judges `job` and queues its new successors; false when no property awaits anything
    /// more (stateright's rule: the check then ends).
    fn take(
        &self,
        mut job: Job<M::State>,
        next: &mut Vec<Job<M::State>>,
        actions: &mut Vec<M::Action>,
    ) -> bool {
        let found = self.run.found.load(Ordering::Relaxed);
        let mut awaiting = false;
        for (i, p) in self.properties.iter().enumerate() {
            let bit = 1u64 << i;
            if found & bit != 0
                && p.expectation == Expectation::Eventually
                && job.eventually & bit == 0
            {
                continue;
            }
            let holds = (p.condition)(self.model, &job.state);
            match p.expectation {
                Expectation::Always if !holds => self.run.discover(i, p.name, job.fingerprint),
                Expectation::Sometimes if holds => self.run.discover(i, p.name, job.fingerprint),
                Expectation::Always | Expectation::Sometimes => awaiting = true,
                Expectation::Eventually => {
                    awaiting = true;
                    if holds {
                        job.eventually &= !bit;
                    }
                }
            }
        }
        if !awaiting {
            return false;
        }
        let mut terminal = true;
        self.model.actions(&job.state, actions);
        for action in actions.drain(..) {
            let Some(state) = self.model.next_state(&job.state, action) else {
                continue;
            };
            if !self.model.within_boundary(&state) {
                continue;
            }
            self.run.states.fetch_add(1, Ordering::Relaxed);
            terminal = false;
            let fingerprint = fingerprint(&state);
            match self.run.seen.entry(fingerprint) {
                Entry::Occupied(_) => continue,
                Entry::Vacant(entry) => {
                    entry.insert(job.fingerprint);
                }
            }
            let depth = job.depth + 1;
            if self.target.is_some_and(|t| depth >= t) {
                self.reached_target.store(true, Ordering::Relaxed);
                continue;
            }
            next.push(Job {
                state,
                fingerprint,
                eventually: job.eventually,
                depth,
            });
        }
        if terminal {
            for (i, p) in self.properties.iter().enumerate() {
                if job.eventually & (1 << i) != 0 {
                    self.run.discover(i, p.name, job.fingerprint);
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::BfsChecker;
    use crate::check::{Report, Search, Verdict, WorldModel, run};
    use crate::world::Space;
    use crate::{Config, Named, lock::Flavor};

    /// `model` checked by stateright's breadth-first checker on one thread and by ours on
    /// `threads` threads, through the same reporting. (stateright's on more threads is not
    /// level by level: its depths are not every state's shortest path.)
    fn both<M: WorldModel>(mut model: M, depth: Option<usize>, threads: usize) -> [Report; 2] {
        let search = Search {
            max_depth: depth,
            threads,
            budget: crate::check::Budget::NONE,
            ..Search::default()
        };
        let target = depth.map(|d| d + 2);
        *model.space_mut() = Space::default();
        let mut builder = model.clone().checker();
        if let Some(target) = target {
            builder = builder.target_max_depth(target);
        }
        let one = Search {
            threads: 1,
            ..search
        };
        let theirs = run(
            &model,
            builder.spawn_bfs(),
            one,
            Instant::now(),
            &mut |_| {},
        );
        *model.space_mut() = Space::default();
        let checker = BfsChecker::spawn(model.clone(), threads, target);
        let ours = run(&model, checker, search, Instant::now(), &mut |_| {});
        [theirs, ours]
    }

    fn kind(v: &Verdict) -> &'static str {
        match v {
            Verdict::Holds => "holds",
            Verdict::Violated(_) => "violated",
            Verdict::Found(_) => "found",
            Verdict::NotFound => "not found",
        }
    }

    /// The same states counted, the same depth, the same verdicts; on one thread the same
    /// traces too (both go first in, first out, so the same discoveries are the last ones).
    fn same(name: &str, [theirs, ours]: [Report; 2], threads: usize) {
        let figures = |r: &Report| (r.states, r.unique_states, r.max_depth, r.coverage);
        assert_eq!(
            figures(&ours),
            figures(&theirs),
            "{name}:\n{ours}\n{theirs}"
        );
        for (o, t) in ours.properties.iter().zip(&theirs.properties) {
            assert_eq!(o.name, t.name);
            if threads == 1 {
                assert_eq!(o.verdict, t.verdict, "{name}: {}", o.name);
            } else {
                assert_eq!(kind(&o.verdict), kind(&t.verdict), "{name}: {}", o.name);
            }
        }
    }

    fn config(faults: u8) -> Config {
        Config {
            faults,
            ..Config::default()
        }
    }

    #[test]
    fn checks_as_stateright_does() {
        for threads in [1, 2] {
            let mutex = config(1).lock(Flavor::Mutex).unwrap();
            same("mutex 2/1", both(mutex, None, threads), threads);
            let election = config(1).lock(Flavor::Election).unwrap();
            same("election 2/1", both(election, Some(14), threads), threads);
            same(
                "atom 2/1",
                both(config(1).atom().unwrap(), None, threads),
                threads,
            );
            same(
                "stm 2/1",
                both(config(1).stm().unwrap(), None, threads),
                threads,
            );
            let mvcc = config(1).mvcc(Named::Mvcc).unwrap();
            same(
                "mvcc 2/1 to 12 steps",
                both(mvcc, Some(12), threads),
                threads,
            );
            let bank = config(0).mvcc(Named::MvccBank).unwrap();
            same("mvcc-bank 2/0", both(bank, None, threads), threads);
            let agent = config(0).executor().unwrap();
            same("agent 2/0", both(agent, None, threads), threads);
        }
    }

    /// Level by level, a check that a budget stopped knows what it covered on any number of
    /// threads: every state of the depth it was expanding was generated, and judged.
    #[test]
    fn a_stopped_check_on_two_threads_knows_its_depth() {
        let search = Search {
            threads: 2,
            budget: crate::check::Budget {
                max_states: Some(30_000),
                max_memory: None,
            },
            ..Search::default()
        };
        let report = crate::check(config(1).mvcc(Named::Mvcc).unwrap(), search);
        let crate::check::Coverage::Incomplete {
            steps: Some(steps), ..
        } = report.coverage
        else {
            panic!("not stopped with a known depth: {report}");
        };
        // A bounded check of one step more generates more than 30,000 states: the budget
        // stopped this one inside that depth.
        let bounded = Search {
            max_depth: Some(steps + 1),
            budget: crate::check::Budget::NONE,
            ..Search::default()
        };
        let deeper = crate::check(config(1).mvcc(Named::Mvcc).unwrap(), bounded);
        assert!(deeper.unique_states >= 30_000, "{steps}: {deeper}");
        let violated =
            |p: &crate::check::PropertyOutcome| matches!(p.verdict, Verdict::Violated(_));
        assert!(!report.properties.iter().any(violated), "{report}");
    }

    /// A violated `always` property and an `eventually` one: their traces are rebuilt from
    /// the states' parents, and are stateright's.
    #[cfg(feature = "planted-bugs")]
    #[test]
    fn finds_what_stateright_finds_with_the_same_traces() {
        use avout::planted::Bug;
        let planted = |bug, faults| Config {
            bug: Some(bug),
            ..config(faults)
        };
        let mutex = planted(Bug::LockNoGuidRecovery, 1)
            .lock(Flavor::Mutex)
            .unwrap();
        let reports = both(mutex, None, 1);
        for violated in ["one node per GUID", "every client finishes"] {
            let verdict = &reports[1].property(violated).verdict;
            assert!(
                matches!(verdict, Verdict::Violated(_)),
                "{violated}: {verdict:?}"
            );
        }
        same("lock-no-guid-recovery", reports, 1);
        let atom = planted(Bug::AtomUncheckedWrite, 0).atom().unwrap();
        let reports = both(atom, None, 1);
        assert!(!reports[1].ok(), "{}", reports[1]);
        same("atom-unchecked-write", reports, 1);
    }
}
