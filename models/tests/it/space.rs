//! The space's remembered moves (`Space::after`, see `avout_models::world::Space`) give the
//! states the moves themselves give: every successor of many states, remembered or not,
//! equals the one `World::step` computes from scratch.

use std::collections::{HashSet, VecDeque};

use avout_models::check::WorldModel;
use avout_models::lock::{Flavor, LockModel};
use avout_models::mvcc::MvccModel;
use avout_models::world::Faults;

/// Walks `model`'s graph breadth-first for `states` states, comparing each successor the
/// model gives (through its space) with `World::step`'s; returns how many successors it
/// compared.
fn compare<M>(model: &M, states: usize) -> usize
where
    M: WorldModel,
{
    let mut seen = HashSet::new();
    let mut queue: VecDeque<_> = model.init_states().into();
    let mut compared = 0;
    let mut actions = Vec::new();
    while let Some(state) = queue.pop_front() {
        if seen.len() >= states {
            break;
        }
        if !seen.insert(state.clone()) {
            continue;
        }
        model.actions(&state, &mut actions);
        for action in actions.drain(..) {
            let remembered = model.next_state(&state, action).expect("a successor");
            let mut computed = state.clone();
            computed.step(action, None);
            assert_eq!(remembered, computed, "{action} from {state:?}");
            compared += 1;
            queue.push_back(remembered);
        }
    }
    compared
}

#[test]
fn remembered_moves_give_the_states_the_moves_give() {
    let mut mvcc = MvccModel::new(2);
    mvcc.faults = Faults::classic(1);
    let compared = compare(&mvcc, 3_000);
    assert!(compared > 9_000, "{compared} successors compared");
    let (kernels, clients) = mvcc.space.kept();
    assert!(
        kernels > 10 && clients > 100,
        "{kernels} kernels, {clients} clients"
    );

    let mut lock = LockModel::new(Flavor::Mutex, 2);
    lock.faults = Faults::classic(1);
    assert!(compare(&lock, 2_000) > 4_000);
}
