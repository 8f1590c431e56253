//! Random walks: a signal from state spaces too big to check.
//!
//! Each walk starts in the initial state and takes one enabled action after another, drawn
//! at random, until no action is enabled (a terminal state: the `eventually` properties are
//! judged there) or the walk is as long as the depth cap. Every state on the way is judged
//! against the `always` and `sometimes` properties. Walk `i` of a check seeded `s` draws
//! everything from ChaCha8 seeded `s + i`, so `--walks 1 --seed s+i` takes it again, step
//! for step.
//!
//! **Swarm** (Groce et al., "Swarm testing", ISSTA 2012): a uniform choice among enabled
//! actions rarely strings together what a deep bug needs — one client running far ahead of
//! another, or a run of faults. So each walk first draws its own weights: each client a
//! speed (1, 3 or 9) and each kind of fault an appetite (none, rare or frequent), and then
//! chooses actions in proportion to its client's speed times its kind's weight. Different
//! walks lean different ways; each still reaches only states the model allows.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stateright::Expectation;

use super::{Coverage, Path, Progress, Report, Search, TICK, WorldModel, memory, outcomes};
use crate::world::Action;

/// The depth a walk is cut at unless the search says otherwise: longer than any schedule of
/// the default configurations (the deepest, mvcc-bank with two clients, ends within 72).
pub const DEFAULT_DEPTH: usize = 400;

/// Kept kernels and clients past which the space forgets them between walks (walks revisit
/// few states, so sharing saves little and the memory would only grow).
const FORGET_PAST: usize = 20_000;

/// What one walk leans towards (see the [module docs](self)).
struct Swarm {
    speeds: Vec<u32>,
    appetite: [u32; 6],
}

impl Swarm {
    fn draw(rng: &mut ChaCha8Rng, clients: usize) -> Self {
        let speeds = (0..clients)
            .map(|_| [1, 3, 9][rng.random_range(0..3)])
            .collect();
        let appetite = std::array::from_fn(|_| [0, 1, 6][rng.random_range(0..3)]);
        Swarm { speeds, appetite }
    }

    /// An action's weight; faults are weighed against the client's ordinary steps (6 each),
    /// the environment's own steps (an outage, a follower catching up) as a middling
    /// client's.
    fn weight(&self, action: Action) -> u32 {
        let kind = match action {
            Action::LoseRequest(_) => self.appetite[0],
            Action::LoseReply(_) => self.appetite[1],
            Action::Expire(_) => self.appetite[2],
            Action::Disconnect(_) => self.appetite[3],
            Action::Lag(_) => self.appetite[4],
            Action::Outage => self.appetite[5],
            _ => 6,
        };
        action.client().map_or(3, |c| self.speeds[c]) * kind
    }

    fn choose(&self, rng: &mut ChaCha8Rng, actions: &[Action]) -> Action {
        let total: u32 = actions.iter().map(|a| self.weight(*a)).sum();
        if total == 0 {
            // Only faults this walk has no appetite for: take one anyway rather than stop.
            return actions[rng.random_range(0..actions.len())];
        }
        let mut pick = rng.random_range(0..total);
        for a in actions {
            let w = self.weight(*a);
            if pick < w {
                return *a;
            }
            pick -= w;
        }
        unreachable!("the pick is below the total")
    }
}

/// What the walks share while they run.
struct Shared<M: WorldModel> {
    steps: AtomicUsize,
    walks: AtomicU64,
    depth: AtomicUsize,
    next: AtomicU64,
    stop: AtomicBool,
    /// Per property, the lowest-numbered walk that found it and its path.
    found: Mutex<HashMap<&'static str, (u64, Path<M>)>>,
    /// Per property, how many walks found it.
    hits: Mutex<HashMap<&'static str, u64>>,
}

/// Takes `walks` random walks of `model` from `seed` (see the [module docs](self)).
pub(super) fn walk<M: WorldModel>(
    model: &M,
    walks: u64,
    seed: u64,
    search: Search,
    progress: &mut dyn FnMut(&Progress),
) -> Report {
    let started = Instant::now();
    let cap = search.max_depth.unwrap_or(DEFAULT_DEPTH);
    let shared = Arc::new(Shared::<M> {
        steps: AtomicUsize::new(0),
        walks: AtomicU64::new(0),
        depth: AtomicUsize::new(0),
        next: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        found: Mutex::new(HashMap::new()),
        hits: Mutex::new(HashMap::new()),
    });
    let threads: Vec<_> = (0..search.threads.max(1))
        .map(|_| {
            let (model, shared) = (model.clone(), Arc::clone(&shared));
            std::thread::spawn(move || {
                while !shared.stop.load(Ordering::Relaxed) {
                    let i = shared.next.fetch_add(1, Ordering::Relaxed);
                    if i >= walks {
                        break;
                    }
                    one(&model, i, seed.wrapping_add(i), cap, &shared);
                    shared.walks.fetch_add(1, Ordering::Relaxed);
                    let (kernels, clients) = model.space().kept();
                    if kernels + clients > FORGET_PAST {
                        model.space().forget();
                    }
                }
            })
        })
        .collect();
    let mut stopped = None;
    loop {
        let done = threads.iter().all(|t| t.is_finished());
        let counts = (
            shared.steps.load(Ordering::Relaxed),
            shared.walks.load(Ordering::Relaxed) as usize,
            shared.depth.load(Ordering::Relaxed),
        );
        let now = Progress::now(counts, started, stopped.is_some());
        progress(&now);
        if done {
            break;
        }
        if stopped.is_none()
            && let Some(stop) = search.budget.exceeded(now.states, now.memory)
        {
            shared.stop.store(true, Ordering::Relaxed);
            stopped = Some(stop);
        }
        std::thread::sleep(TICK);
    }
    for t in threads {
        t.join().expect("a walk panicked");
    }
    let found = std::mem::take(&mut *shared.found.lock().unwrap_or_else(PoisonError::into_inner));
    let seeds: HashMap<&'static str, u64> = found
        .iter()
        .map(|(name, (i, _))| (*name, seed.wrapping_add(*i)))
        .collect();
    let mut properties = outcomes(model, found.into_iter().map(|(n, (_, p))| (n, p)).collect());
    let hits = shared.hits.lock().unwrap_or_else(PoisonError::into_inner);
    for p in &mut properties {
        p.seed = seeds.get(p.name).copied();
        p.hits = Some(hits.get(p.name).copied().unwrap_or(0));
    }
    Report {
        states: shared.steps.load(Ordering::Relaxed),
        unique_states: 0,
        max_depth: shared.depth.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
        coverage: Coverage::Walks {
            walks: shared.walks.load(Ordering::Relaxed),
            seed,
            depth: cap,
        },
        peak_memory: memory::peak(),
        kept: model.space().kept(),
        properties,
    }
}

/// Walk number `index`, drawn from `seed`.
fn one<M: WorldModel>(model: &M, index: u64, seed: u64, cap: usize, shared: &Shared<M>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let properties = model.properties();
    let mut state = model.init_states().remove(0);
    let swarm = Swarm::draw(&mut rng, state.clients.len());
    let mut path: Path<M> = Vec::new();
    let mut waiting: Vec<usize> = (0..properties.len())
        .filter(|&i| properties[i].expectation == Expectation::Eventually)
        .collect();
    let mut actions = Vec::new();
    let mut hit = Vec::new();
    let mut record = |name: &'static str, path: &Path<M>, last: &M::State| {
        if hit.contains(&name) {
            return;
        }
        hit.push(name);
        *shared
            .hits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name)
            .or_default() += 1;
        let mut found = shared.found.lock().unwrap_or_else(PoisonError::into_inner);
        if found.get(name).is_none_or(|(i, _)| *i > index) {
            let mut path = path.clone();
            path.push((last.clone(), None));
            found.insert(name, (index, path));
        }
    };
    loop {
        for p in &properties {
            let holds = (p.condition)(model, &state);
            let shows = match p.expectation {
                Expectation::Always => !holds,
                Expectation::Sometimes => holds,
                Expectation::Eventually => false,
            };
            if shows {
                record(p.name, &path, &state);
            }
        }
        waiting.retain(|&i| !(properties[i].condition)(model, &state));
        if path.len() >= cap {
            break;
        }
        actions.clear();
        model.actions(&state, &mut actions);
        if actions.is_empty() {
            for &i in &waiting {
                record(properties[i].name, &path, &state);
            }
            break;
        }
        let action = swarm.choose(&mut rng, &actions);
        let next = model
            .next_state(&state, action)
            .expect("every enabled action has a next state");
        path.push((std::mem::replace(&mut state, next), Some(action)));
    }
    shared.steps.fetch_add(path.len(), Ordering::Relaxed);
    shared.depth.fetch_max(path.len(), Ordering::Relaxed);
}
