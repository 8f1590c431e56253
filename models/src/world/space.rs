//! [`Space`]: what the states of one check share.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use avout_sim_zk::kernel::Kernel;

use super::{Action, Agent, Client, Faults, World};
use crate::shared::Interner;

/// What the states of one check share: one copy of each distinct kernel and client (see
/// [`crate::shared`]), and whether the check was told to stop. A cheap handle: clones share
/// it. Each model holds one; [`crate::check()`] gives the model a fresh one for every check.
///
/// ```
/// use avout_models::world::Space;
/// let space: Space<avout_models::atom::AtomAgent> = Space::default();
/// assert!(!space.halted());
/// space.halt();
/// assert!(space.clone().halted());
/// ```
pub struct Space<A> {
    inner: Arc<Inner<A>>,
}

struct Inner<A> {
    kernels: Interner<Kernel>,
    clients: Interner<Client<A>>,
    halted: AtomicBool,
}

impl<A> Default for Space<A> {
    fn default() -> Self {
        Space {
            inner: Arc::new(Inner {
                kernels: Interner::default(),
                clients: Interner::default(),
                halted: AtomicBool::new(false),
            }),
        }
    }
}

impl<A> Clone for Space<A> {
    fn clone(&self) -> Self {
        Space {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<A: Agent> Space<A> {
    /// Every move possible in `state` (see [`World::actions`]); none once halted.
    pub fn actions(&self, state: &World<A>, faults: &Faults, actions: &mut Vec<Action>) {
        if !self.halted() {
            state.actions(faults, actions);
        }
    }

    /// The state after `action` (what every model's `next_state` is), its parts shared with
    /// equal parts of other states.
    pub fn after(&self, state: &World<A>, action: Action) -> World<A> {
        let mut next = state.clone();
        next.step(action, None);
        next.kernel = self.inner.kernels.intern(next.kernel);
        for c in &mut next.clients {
            *c = self.inner.clients.intern(c.clone());
        }
        next
    }

    /// Forgets the kept kernels and clients (states holding them keep them alive; later
    /// equal ones are no longer shared with them).
    pub fn forget(&self) {
        self.inner.kernels.clear();
        self.inner.clients.clear();
    }

    /// How many distinct kernels and clients the states share.
    ///
    /// ```
    /// let space: avout_models::world::Space<avout_models::atom::AtomAgent> = Default::default();
    /// assert_eq!(space.kept(), (0, 0));
    /// ```
    pub fn kept(&self) -> (usize, usize) {
        (self.inner.kernels.len(), self.inner.clients.len())
    }
}

impl<A> Space<A> {
    /// Tells the check to stop: from now on no state has a successor, so the checker only
    /// judges the states it already generated. See [`Space`].
    pub fn halt(&self) {
        self.inner.halted.store(true, Ordering::Relaxed);
    }

    /// Lets states have successors again (to replay the paths of what was found).
    pub fn resume(&self) {
        self.inner.halted.store(false, Ordering::Relaxed);
    }

    /// Whether the check was told to stop. See [`Space`].
    pub fn halted(&self) -> bool {
        self.inner.halted.load(Ordering::Relaxed)
    }
}

impl<A> fmt::Debug for Space<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Space")
            .field("kernels", &self.inner.kernels)
            .field("clients", &self.inner.clients)
            .field("halted", &self.halted())
            .finish()
    }
}
