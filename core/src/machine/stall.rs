//! The retry pause and the stall timer: how a machine waits before redoing a step whose
//! request ended in doubt (a connection loss, a timeout).
//!
//! A machine that loses its connection must not resend at once — a disconnected client would
//! spin — nor wait for a reconnection alone, since a timeout need not come with a disconnect.
//! So it *stalls*: it remembers the step to redo and redoes it when the session reports
//! `Connected` or when [`RETRY_PAUSE_MS`] have passed, whichever comes first. [`Stall`] holds
//! that step and its deadline, answers `poll_timer`, and hands the step back once due.

use super::Millis;

/// Pause before redoing a step after a connection loss, unless the session reconnects first.
///
/// ```
/// assert_eq!(avout::machine::RETRY_PAUSE_MS, 20);
/// ```
pub const RETRY_PAUSE_MS: u64 = 20;

/// A step waiting to be redone; see the module docs.
///
/// ```
/// use avout::machine::{Millis, Stall, RETRY_PAUSE_MS};
///
/// let mut stall = Stall::default();
/// stall.start("list again", Millis(100));
/// assert_eq!(stall.deadline(), Some(Millis(100 + RETRY_PAUSE_MS)));
/// assert_eq!(stall.due(Millis(101)), None, "too early");
/// assert_eq!(stall.due(Millis(100 + RETRY_PAUSE_MS)), Some("list again"));
/// assert_eq!(stall.deadline(), None, "handed back once");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stall<S> {
    pending: Option<(S, Millis)>,
}

impl<S> Default for Stall<S> {
    fn default() -> Self {
        Stall { pending: None }
    }
}

impl<S> Stall<S> {
    /// Schedules `step` for a reconnection or `now` plus [`RETRY_PAUSE_MS`] (replacing any
    /// step already scheduled).
    ///
    /// ```
    /// let mut stall = avout::machine::Stall::default();
    /// stall.start((), avout::machine::Millis(0));
    /// assert!(stall.is_stalled());
    /// ```
    pub fn start(&mut self, step: S, now: Millis) {
        self.pending = Some((step, now.plus(RETRY_PAUSE_MS)));
    }

    /// Whether a step is waiting.
    ///
    /// ```
    /// assert!(!avout::machine::Stall::<()>::default().is_stalled());
    /// ```
    pub fn is_stalled(&self) -> bool {
        self.pending.is_some()
    }

    /// The waiting step, if any.
    ///
    /// ```
    /// let mut stall = avout::machine::Stall::default();
    /// stall.start(3, avout::machine::Millis(0));
    /// assert_eq!(stall.step(), Some(&3));
    /// ```
    pub fn step(&self) -> Option<&S> {
        self.pending.as_ref().map(|(step, _)| step)
    }

    /// When the step is due: what `Machine::poll_timer` returns for it.
    ///
    /// ```
    /// assert_eq!(avout::machine::Stall::<()>::default().deadline(), None);
    /// ```
    pub fn deadline(&self) -> Option<Millis> {
        self.pending.as_ref().map(|(_, at)| *at)
    }

    /// The step, if it is due at `now` (it is then no longer waiting): for `handle_timer`.
    ///
    /// ```
    /// let mut stall = avout::machine::Stall::default();
    /// stall.start((), avout::machine::Millis(0));
    /// assert_eq!(stall.due(avout::machine::Millis(0)), None);
    /// ```
    pub fn due(&mut self, now: Millis) -> Option<S> {
        if self.deadline().is_some_and(|at| now >= at) {
            self.take()
        } else {
            None
        }
    }

    /// The step, now, whatever the time (it is then no longer waiting): for a reconnection.
    ///
    /// ```
    /// let mut stall = avout::machine::Stall::default();
    /// stall.start(1, avout::machine::Millis(0));
    /// assert_eq!(stall.take(), Some(1));
    /// assert_eq!(stall.take(), None);
    /// ```
    pub fn take(&mut self) -> Option<S> {
        self.pending.take().map(|(step, _)| step)
    }

    /// Forgets the waiting step (a machine that finishes or gives up must not redo it).
    ///
    /// ```
    /// let mut stall = avout::machine::Stall::default();
    /// stall.start((), avout::machine::Millis(0));
    /// stall.cancel();
    /// assert!(!stall.is_stalled());
    /// ```
    pub fn cancel(&mut self) {
        self.pending = None;
    }
}

/// The earlier of two optional deadlines (`None`: never), for a machine with a stall and a
/// deadline of its own.
///
/// ```
/// use avout::machine::{Millis, earliest};
/// assert_eq!(earliest(Some(Millis(5)), Some(Millis(3))), Some(Millis(3)));
/// assert_eq!(earliest(None, Some(Millis(3))), Some(Millis(3)));
/// assert_eq!(earliest(None, None), None);
/// ```
pub fn earliest(a: Option<Millis>, b: Option<Millis>) -> Option<Millis> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_stall_replaces_the_waiting_one() {
        let mut stall = Stall::default();
        stall.start(1, Millis(0));
        stall.start(2, Millis(10));
        assert_eq!(stall.due(Millis(10 + RETRY_PAUSE_MS - 1)), None);
        assert_eq!(stall.due(Millis(10 + RETRY_PAUSE_MS)), Some(2));
    }

    #[test]
    fn a_late_timer_still_hands_the_step_back() {
        let mut stall = Stall::default();
        stall.start((), Millis(0));
        assert_eq!(stall.due(Millis(1_000)), Some(()));
    }
}
