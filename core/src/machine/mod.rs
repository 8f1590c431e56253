//! Protocol machines: every recipe's logic as a sans-IO state machine, run by one async driver.
//!
//! A machine never performs I/O, reads a clock or spawns a task. It says what it wants sent
//! ([`Machine::poll_request`]), when it wants to be woken ([`Machine::poll_timer`]) and when it
//! is done ([`Machine::poll_output`]); it is told what happened through `handle_*` calls —
//! replies, watch events, session transitions and timer firings, each with the current time.
//! The same machine is run by [`drive`] against any [`Coordination`] backend in production and
//! in the simulator, and stepped directly by the model checker, which plays the scheduler: so
//! the checked protocol is the one that runs.
//!
//! Requests a machine returns from consecutive `poll_request` calls are sent back to back, so
//! they travel together (ZooKeeper applies one session's requests in order): a lock can send its
//! create and the children read that follows it in one round trip.
//!
//! # The toolkit
//!
//! What every machine needs is written once here:
//!
//! - [`Outbox`]: tokens, the queue of requests, the start on the first session report
//!   ([`SessionEvent`]) and the output; [`Batch`]: requests whose replies are handled together.
//! - [`Stall`] and [`RETRY_PAUSE_MS`]: redoing a step after a connection loss, on reconnection
//!   or after a pause.
//! - [`Routes`]: child machines run inside a machine, each with its own token space.
//! - [`ProtectedCreate`]: Curator's GUID-named create and its recovery.
//! - [`until_certain`] and [`Pace`]: the one way a handle retries an uncertain call outside a
//!   machine.
//!
//! [`Coordination`]: crate::Coordination

mod child;
mod driver;
mod outbox;
mod protected;
mod retry;
mod stall;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
pub(crate) mod transcript;

pub use crate::request::{Reply, Request};
pub use child::Routes;
pub use driver::{Driving, drive};
pub(crate) use outbox::ancestor_creates;
pub use outbox::{Batch, Outbox, Resumed, SessionEvent};
pub use protected::{Protected, ProtectedCreate};
pub use retry::{Pace, idempotent, until_certain};
pub use stall::{RETRY_PAUSE_MS, Stall, earliest};

use serde::{Deserialize, Serialize};

use crate::{Result, SessionState, WatchedEvent};

/// Identifies a request of a machine, so that its reply and its watch come back to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Token(pub u64);

/// Milliseconds on the driver's clock (real or virtual time, from an arbitrary origin).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct Millis(pub u64);

impl Millis {
    /// This instant plus `ms` milliseconds, saturating.
    ///
    /// ```
    /// use avout::machine::Millis;
    /// assert_eq!(Millis(5).plus(10), Millis(15));
    /// ```
    pub fn plus(self, ms: u64) -> Millis {
        Millis(self.0.saturating_add(ms))
    }
}

/// A protocol as a sans-IO state machine; see the [module docs](self).
///
/// # Contract
///
/// - The driver MUST send the requests returned by consecutive `poll_request` calls in that
///   order, and MUST deliver each request's reply exactly once through `handle_reply`.
/// - A watch armed by a request is delivered through `handle_watch` with that request's token,
///   at most once, and before any later reply of the same session that reflects the change.
/// - After `poll_output` returns `Some`, the driver stops; replies still in flight are dropped.
/// - A machine MUST NOT read a clock, draw randomness or perform I/O: everything arrives
///   through `handle_*` (randomness, such as a lock's GUID, is given at construction).
pub trait Machine {
    /// What the machine produces when it finishes.
    type Output;

    /// The next request to send, if any.
    fn poll_request(&mut self) -> Option<(Token, Request)>;

    /// A request's reply.
    fn handle_reply(&mut self, now: Millis, token: Token, reply: Result<Reply>);

    /// A watch armed by request `token` fired.
    fn handle_watch(&mut self, now: Millis, token: Token, event: WatchedEvent);

    /// The session changed state.
    fn handle_session(&mut self, now: Millis, state: SessionState);

    /// The deadline from [`poll_timer`](Self::poll_timer) passed.
    fn handle_timer(&mut self, now: Millis);

    /// When the machine wants [`handle_timer`](Self::handle_timer) called, if ever.
    fn poll_timer(&self) -> Option<Millis>;

    /// The result, once the machine is done.
    fn poll_output(&mut self) -> Option<Self::Output>;
}

/// A machine borrowed: what lets [`drive`] run a machine the caller keeps.
impl<M: Machine + ?Sized> Machine for &mut M {
    type Output = M::Output;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        (**self).poll_request()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: Result<Reply>) {
        (**self).handle_reply(now, token, reply)
    }

    fn handle_watch(&mut self, now: Millis, token: Token, event: WatchedEvent) {
        (**self).handle_watch(now, token, event)
    }

    fn handle_session(&mut self, now: Millis, state: SessionState) {
        (**self).handle_session(now, state)
    }

    fn handle_timer(&mut self, now: Millis) {
        (**self).handle_timer(now)
    }

    fn poll_timer(&self) -> Option<Millis> {
        (**self).poll_timer()
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        (**self).poll_output()
    }
}
