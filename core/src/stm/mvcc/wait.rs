//! Blocking behind another transaction: [`WaitMachine`] waits until a transaction's point
//! changes (its owner committed, retried, was killed or lost its session), or the bail wait
//! passes — Clojure's `blockAndBail`, after which the blocked try is retried.
//!
//! The blocked try has removed its own nodes first, so that nobody waits for it meanwhile.

use crate::machine::{Machine, Millis, Reply, Request, Token};
use crate::{SessionState, WatchedEvent};

use super::Halt;
use super::io::Io;

/// Waits for a node to change, at most `wait_ms`; see the module docs.
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::stm::mvcc::WaitMachine;
/// let mut m = WaitMachine::new("/s/stm/history/t-1", 100);
/// m.handle_session(Millis(0), avout::SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::Exists { watch: true, .. }))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WaitMachine {
    path: String,
    wait_ms: u64,
    until: Option<Millis>,
    exists: Option<Token>,
    io: Io,
    output: Option<Result<(), Halt>>,
}

impl WaitMachine {
    /// Waits for `path` to change (or to be gone), at most `wait_ms`.
    ///
    /// ```
    /// let m = avout::stm::mvcc::WaitMachine::new("/p", 10);
    /// assert!(format!("{m:?}").contains("/p"));
    /// ```
    pub fn new(path: &str, wait_ms: u64) -> Self {
        WaitMachine {
            path: path.to_owned(),
            wait_ms,
            until: None,
            exists: None,
            io: Io::new(),
            output: None,
        }
    }

    fn done(&mut self, out: Result<(), Halt>) {
        if self.output.is_none() && self.until.is_some() {
            self.until = None;
            self.io.clear();
            self.output = Some(out);
        }
    }
}

impl Machine for WaitMachine {
    type Output = Result<(), Halt>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.io.poll()
    }

    fn handle_reply(&mut self, _now: Millis, token: Token, reply: crate::Result<Reply>) {
        if Some(token) != self.exists {
            return;
        }
        match reply {
            // Still there: wait for the watch or the deadline.
            Ok(Reply::Exists(Some(_))) => {}
            Err(e) if e.is_session_lost() => self.done(Err(Halt::SessionLost(e))),
            // Gone already, or the wait cannot be armed: retry at once.
            Ok(_) | Err(_) => self.done(Ok(())),
        }
    }

    fn handle_watch(&mut self, _now: Millis, token: Token, _event: WatchedEvent) {
        if Some(token) == self.exists {
            self.done(Ok(()));
        }
    }

    fn handle_session(&mut self, now: Millis, state: SessionState) {
        let first = self.io.session.is_none();
        let (lost, _) = self.io.session_changed(state);
        if first {
            self.until = Some(now.plus(self.wait_ms));
            self.exists = Some(self.io.send(Request::Exists {
                path: self.path.clone(),
                watch: true,
            }));
        }
        if let Some(e) = lost {
            self.done(Err(Halt::SessionLost(e)));
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.until.is_some_and(|at| at <= now) {
            self.done(Ok(()));
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.until
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.output.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    /// A session lost under the wait ends it with the loss, whichever tells first: the watch's
    /// failed `exists` or the session event. Taken for a vanished blocker, the try would run
    /// again on a dead session: a retry that can only fail, counted as one.
    #[test]
    fn a_session_lost_under_the_wait_is_the_loss() {
        for error in [Error::SessionExpired, Error::Closed] {
            let mut m = WaitMachine::new("/s/stm/history/t-1", 100);
            m.handle_session(Millis(0), SessionState::Connected);
            let (token, _) = m.poll_request().expect("the exists");
            m.handle_reply(Millis(1), token, Err(error.clone()));
            assert_eq!(m.poll_output(), Some(Err(Halt::SessionLost(error))));
            assert_eq!(m.poll_timer(), None, "nothing left to wait for");
        }
    }

    /// Any other failure of the `exists` cannot arm the wait: the try runs again at once.
    #[test]
    fn a_wait_that_cannot_be_armed_ends_at_once() {
        let mut m = WaitMachine::new("/s/stm/history/t-1", 100);
        m.handle_session(Millis(0), SessionState::Connected);
        let (token, _) = m.poll_request().expect("the exists");
        m.handle_reply(Millis(1), token, Err(Error::ConnectionLoss));
        assert_eq!(m.poll_output(), Some(Ok(())));
    }
}
