//! [`Space`]: what the states of one check share.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use avout_sim_zk::kernel::{Fired, Kernel};

use avout::SessionId;
use avout::machine::Request;

use super::{Action, Agent, Client, Faults, Served, World};
use crate::shared::{ByAddress, Interner, Memo, Shared};

/// What the states of one check share: one copy of each distinct kernel and client (see
/// [`crate::shared`]), the moves taken on them, and whether the check was told to stop. A
/// cheap handle: clones share it. Each model holds one; [`crate::check()`] gives the model a
/// fresh one for every check.
///
/// A move depends on a few parts of a state only: a client's own move (a delivery, its timer,
/// its script step) and its reading ahead on that client, the server's applying a client's
/// request on the kernel and that client. The checker takes the same move on the same parts
/// in many states (a state's successors are mostly states it meets again, and two clients'
/// moves interleave in every order), so the space remembers what each move made of its
/// parts, by their (interned) allocations, and a state that takes it again reuses the
/// result: no copying, changing, hashing or comparing of kernels and clients. The moves are
/// deterministic (time does not flow, see [`crate::world`]), so the states are the same.
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
    /// The kernel and the client after the server applied the client's next request (losing
    /// the reply, or not) or expired its session, with the events it fired.
    served_clients: Memo<(KernelKey, ClientKey<A>, Action), ServedClient<A>>,
    /// What the server did with a session's request on a kernel.
    served: Memo<(ByAddress<Kernel>, SessionId, Request), Served>,
    /// The kernel after it expired a session, and the events it fired.
    expired: Memo<(KernelKey, SessionId), Expired>,
    /// A client after a move of its own (with replies read in batches, or not).
    moved: Memo<(ClientKey<A>, Action, bool), Shared<Client<A>>>,
    /// A client after it read ahead, if it must (its session expirable, or not; replies read
    /// in batches, or not).
    read_ahead: Memo<(ClientKey<A>, bool, bool), Option<SharedClient<A>>>,
    /// Whether a kernel satisfies a named condition (see [`Space::holds`]).
    judged: Memo<(ByAddress<Kernel>, &'static str), bool>,
    halted: AtomicBool,
}

type KernelKey = ByAddress<Kernel>;
type ClientKey<A> = ByAddress<Client<A>>;
type SharedClient<A> = Shared<Client<A>>;
/// The kernel and a client after the server's move, and the events it fired.
pub(super) type ServedClient<A> = (Shared<Kernel>, Shared<Client<A>>, Vec<Fired>);
/// The kernel after an expiry, and the events it fired.
type Expired = (Shared<Kernel>, Vec<Fired>);

impl<A> Default for Space<A> {
    fn default() -> Self {
        Space {
            inner: Arc::new(Inner {
                kernels: Interner::default(),
                clients: Interner::default(),
                served_clients: Memo::default(),
                served: Memo::default(),
                expired: Memo::default(),
                moved: Memo::default(),
                read_ahead: Memo::default(),
                judged: Memo::default(),
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
        next.step_in(action, None, Some(self));
        next.kernel = self.inner.kernels.intern(next.kernel);
        for c in &mut next.clients {
            *c = self.inner.clients.intern(c.clone());
        }
        next
    }

    /// `kernel` and `client` after `action`, the server's applying the client's next request
    /// (`Apply`, `LoseReply`) or expiring its session (`Expire`), with the events it fired:
    /// remembered, or what `serve` makes of them.
    pub(super) fn served_client(
        &self,
        kernel: &Shared<Kernel>,
        client: &Shared<Client<A>>,
        action: Action,
        serve: impl FnOnce() -> ServedClient<A>,
    ) -> ServedClient<A> {
        let key = (ByAddress(kernel.clone()), ByAddress(client.clone()), action);
        self.inner.served_clients.get_or(key, || {
            let (kernel, client, events) = serve();
            (kernel, self.inner.clients.intern(client), events)
        })
    }

    /// `kernel` after it expired `session`, with the events it fired: remembered, or what
    /// `expire` makes of them.
    pub(super) fn expired(
        &self,
        kernel: &Shared<Kernel>,
        session: SessionId,
        expire: impl FnOnce() -> Expired,
    ) -> Expired {
        let key = (ByAddress(kernel.clone()), session);
        self.inner.expired.get_or(key, || {
            let (kernel, events) = expire();
            (self.inner.kernels.intern(kernel), events)
        })
    }

    /// What the server does with `session`'s `request` on `kernel`: remembered, or what
    /// `serve` makes of it.
    pub(super) fn served(
        &self,
        kernel: &Shared<Kernel>,
        session: SessionId,
        request: &Request,
        serve: impl FnOnce() -> Served,
    ) -> Served {
        let key = (ByAddress(kernel.clone()), session, request.clone());
        self.inner.served.get_or(key, || {
            let mut served = serve();
            served.kernel = self.inner.kernels.intern(served.kernel);
            served
        })
    }

    /// `client` after `action`, a move of its own, reading replies in batches if `batch`:
    /// remembered, or what `take` makes of it.
    pub(super) fn moved(
        &self,
        client: &Shared<Client<A>>,
        action: Action,
        batch: bool,
        take: impl FnOnce() -> Shared<Client<A>>,
    ) -> Shared<Client<A>> {
        let key = (ByAddress(client.clone()), action, batch);
        self.inner
            .moved
            .get_or(key, || self.inner.clients.intern(take()))
    }

    /// `client` after it read ahead, if it must: remembered, or what `read` makes of it.
    pub(super) fn read_ahead(
        &self,
        client: &Shared<Client<A>>,
        expirable: bool,
        batch: bool,
        read: impl FnOnce() -> Option<Shared<Client<A>>>,
    ) -> Option<Shared<Client<A>>> {
        let key = (ByAddress(client.clone()), expirable, batch);
        self.inner
            .read_ahead
            .get_or(key, || read().map(|c| self.inner.clients.intern(c)))
    }

    /// Whether `kernel` satisfies the condition `named`, which `holds` judges: remembered
    /// by kernel (a property that reads only the server's state is judged once per distinct
    /// kernel, not once per state). One name, one condition.
    ///
    /// ```
    /// let space: avout_models::world::Space<avout_models::atom::AtomAgent> = Default::default();
    /// let kernel = avout_models::shared::Shared::new(avout_sim_zk::kernel::Kernel::new());
    /// assert!(space.holds(&kernel, "fresh", |k| k.last_zxid() == 0));
    /// assert!(space.holds(&kernel, "fresh", |_| unreachable!("remembered")));
    /// ```
    pub fn holds(
        &self,
        kernel: &Shared<Kernel>,
        named: &'static str,
        holds: impl FnOnce(&Kernel) -> bool,
    ) -> bool {
        let key = (ByAddress(kernel.clone()), named);
        self.inner.judged.get_or(key, || holds(kernel))
    }

    /// Forgets the kept kernels and clients and the moves taken on them (states holding
    /// them keep them alive; later equal ones are no longer shared with them).
    pub fn forget(&self) {
        self.inner.kernels.clear();
        self.inner.clients.clear();
        self.inner.served_clients.clear();
        self.inner.served.clear();
        self.inner.expired.clear();
        self.inner.moved.clear();
        self.inner.read_ahead.clear();
        self.inner.judged.clear();
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

/// `actions` and `next_state` of stateright's `Model` for a model over [`World`]s, inside its
/// `impl Model`: the moves are taken through the model's `space` with its `faults` (fields
/// every model has). A macro because `Model` is stateright's: it can carry no default for
/// them, and a blanket impl of it is not ours to write.
macro_rules! world_moves {
    () => {
        fn actions(&self, state: &Self::State, actions: &mut Vec<Self::Action>) {
            self.space.actions(state, &self.faults, actions);
        }

        fn next_state(&self, last: &Self::State, action: Self::Action) -> Option<Self::State> {
            Some(self.space.after(last, action))
        }
    };
}
pub(crate) use world_moves;
