//! Reading ahead: a partial-order reduction. A client that must read the head of its inbox
//! before anything it does can interfere with any other move reads it at once, as part of
//! the step that put the world in that state, instead of the checker trying every moment
//! for it.
//!
//! Client `c` *reads ahead* in a state when
//!
//! - its connection is up and nothing of its is on its way to the server (its outbox is
//!   empty), so `Apply(c)`, `LoseRequest(c)` and `LoseReply(c)`, which would append a reply
//!   the batched read would take with it or turn the replies at its head into connection
//!   losses, cannot happen before it reads;
//! - the head of its inbox is a reply, a watch event or the reconnection notice (not the
//!   expiry notice, whose reading clears the outbox);
//! - its timer cannot fire, and its script step, if it has one, commutes with the read (the
//!   two orders leave the same client, the step still possible after the read, nothing
//!   sent by the step): these are the only moves of `c`'s own that could come first, and
//!   they stay as they are until `c` reads, since only `c`'s moves change its agent;
//! - if its session may still be expired (an expiry fault left, the session alive, the
//!   client not finished), the read does not finish the client: a finished client drops
//!   what it has not read, the expiry notice included, so the two orders would differ.
//!
//! Every other client's move, and the server expiring `c`'s session, only append watch
//! events or the expiry notice behind what `c` reads and change nothing the read looks at,
//! so the read commutes with all of them: it is a persistent set of one move. Reads pop
//! inbox elements and push none, so a chain of them ends, and every cycle of the reduced
//! graph takes a move chosen from a state where every move was offered (the cycle proviso).
//! Why every property keeps its verdict is in models/README.md ("Reading ahead"). The
//! disconnect, stale-read and outage faults rewrite what is in flight for every client, so
//! with any of them on nobody reads ahead.

use std::cell::Cell;

use super::{Agent, Client, Faults, Msg, Say, Space, World};
use crate::shared::Shared;

/// That clients read ahead, and what it must know of the faults to do it soundly. See the
/// module docs.
///
/// ```
/// use avout_models::world::{FaultKind, Faults, ReadAhead};
/// assert!(ReadAhead::allowed(&Faults::classic(1)).is_some());
/// assert!(ReadAhead::allowed(&Faults::of(1, &[FaultKind::Outage])).is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReadAhead {
    /// Whether the server may expire a session (see the module docs).
    expiry: bool,
}

impl ReadAhead {
    /// Reading ahead, if it is sound with `faults`: not with disconnects, stale reads or
    /// outages. See [`ReadAhead`].
    pub fn allowed(faults: &Faults) -> Option<ReadAhead> {
        let rewrites = faults.disconnect || faults.stale_read || faults.outage;
        (!rewrites).then_some(ReadAhead {
            expiry: faults.expiry,
        })
    }
}

impl<A: Agent> World<A> {
    /// This world, its clients reading ahead where `faults` allow it (see
    /// [`ReadAhead::allowed`] and `read_ahead`): the same verdicts from fewer states.
    ///
    /// ```
    /// use avout_models::{lock::LockAgent, world::{Faults, World}};
    /// let w = World::new(vec![LockAgent::new(0, avout::lock::LockKind::Exclusive, 1)], Faults::NONE, &[]);
    /// assert!(w.reading_ahead(&Faults::NONE).read_ahead.is_some());
    /// ```
    pub fn reading_ahead(mut self, faults: &Faults) -> Self {
        self.read_ahead = ReadAhead::allowed(faults);
        self.read_ahead_all(None, &mut |_| {});
        for c in &mut self.clients {
            c.rehash();
        }
        self
    }

    /// Lets every client that reads ahead read, until none does; with `space`, taking the
    /// reads it remembers (see [`Space`]).
    pub(super) fn read_ahead_all(&mut self, space: Option<&Space<A>>, say: &mut Say<'_>) {
        let Some(ahead) = self.read_ahead else { return };
        let batch = self.batch_replies;
        // A client's reading changes nothing another client's depends on: one pass does.
        for i in 0..self.clients.len() {
            loop {
                let c = &self.clients[i];
                if !c.may_read_ahead() {
                    break;
                }
                let expirable = ahead.expiry
                    && self.faults_left > 0
                    && self.kernel.is_alive(c.session)
                    && !c.agent.finished();
                let read = || c.forced_read(i, expirable, batch).map(Shared::new);
                let read = match space {
                    Some(space) => space.read_ahead(c, expirable, batch, read),
                    None => read(),
                };
                let Some(read) = read else { break };
                let said = Cell::new(false);
                say(&|| {
                    said.set(true);
                    format!("client {i} reads ahead:")
                });
                if said.get() {
                    // A trace is wanted: read again, saying what happens.
                    let c = self.clients[i].make_mut();
                    c.read(i, false, batch, say);
                    c.flush();
                    debug_assert!(*c == *read, "reading is deterministic");
                } else {
                    self.clients[i] = read;
                }
            }
        }
    }
}

impl<A: Agent> Client<A> {
    /// Whether client `i` may have to read ahead, on what is quick to see: the head of its
    /// inbox is a reply, a watch event or the reconnection notice, its connection is up, its
    /// outbox empty and its timer unable to fire (see the [module docs](self)).
    fn may_read_ahead(&self) -> bool {
        let local = matches!(
            self.inbox.front(),
            Some(Msg::Reply { .. } | Msg::Watch { .. } | Msg::Reconnected)
        );
        local && self.connected && self.outbox.is_empty() && self.agent.poll_timer().is_none()
    }

    /// Client `i` after it read ahead, if it must (see the [module docs](self)), given that
    /// it [may](Client::may_read_ahead) and whether its session may still be expired.
    fn forced_read(&self, i: usize, expirable: bool, batch: bool) -> Option<Client<A>> {
        let read = |c: &Client<A>| {
            let mut c = c.clone();
            c.read(i, false, batch, &mut |_| {});
            c.flush();
            c
        };
        let after = read(self);
        if expirable && after.agent.finished() {
            return None;
        }
        if self.agent.script_step().is_some() {
            let step = |c: &Client<A>| {
                let mut c = c.clone();
                c.agent.take_script_step();
                c.flush();
                c
            };
            let stepped = step(self);
            let quiet = stepped.outbox.is_empty() && stepped.agent.poll_timer().is_none();
            if after.agent.script_step().is_none() || !quiet || step(&after) != read(&stepped) {
                return None;
            }
        }
        Some(after)
    }
}
