//! What every Mvcc machine shares: its outbox and tokens, the session's state, and batches —
//! requests sent back to back (one round trip) whose replies are handled together.

use std::collections::VecDeque;

use crate::machine::{Millis, Reply, Request, Token};
use crate::{Error, SessionState};

// The toolkit's pause before redoing a read after a connection loss (unless the session reconnects first).
pub(crate) use crate::machine::RETRY_PAUSE_MS;

/// Outbox, tokens and session state of one machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Io {
    next: u64,
    outbox: VecDeque<(Token, Request)>,
    /// The session's state as last reported (`None` before the driver's first call).
    pub(crate) session: Option<SessionState>,
    /// When to redo the current step after a connection loss.
    pub(crate) redo_at: Option<Millis>,
}

impl Io {
    pub(crate) fn new() -> Self {
        Io {
            next: 0,
            outbox: VecDeque::new(),
            session: None,
            redo_at: None,
        }
    }

    pub(crate) fn send(&mut self, request: Request) -> Token {
        self.next += 1;
        let token = Token(self.next);
        self.outbox.push_back((token, request));
        token
    }

    pub(crate) fn poll(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop_front()
    }

    pub(crate) fn clear(&mut self) {
        self.outbox.clear();
        self.redo_at = None;
    }

    /// Schedules a redo of the current step: at once on reconnection, else after a pause.
    pub(crate) fn redo_later(&mut self, now: Millis) {
        self.redo_at = Some(now.plus(RETRY_PAUSE_MS));
    }

    /// Records a session transition; the terminal error if the session is gone; whether a
    /// scheduled redo is due now (reconnected).
    pub(crate) fn session_changed(&mut self, state: SessionState) -> (Option<Error>, bool) {
        self.session = Some(state);
        let due = state == SessionState::Connected && self.redo_at.is_some();
        if due {
            self.redo_at = None;
        }
        (state.terminal_error(), due)
    }

    /// Reads a session report for a machine that is `done` or not, and says what it asks of
    /// the machine (see [`SessionStep`]).
    pub(crate) fn on_session(&mut self, state: SessionState, done: bool) -> SessionStep {
        let first = self.session.is_none();
        let (lost, due) = self.session_changed(state);
        match (done, lost) {
            (true, _) => SessionStep::Done,
            (false, Some(e)) => SessionStep::Lost(e),
            (false, None) if first => SessionStep::Start,
            (false, None) if due => SessionStep::Redo,
            (false, None) => SessionStep::Carry,
        }
    }

    /// Whether a machine not `done` redoes its step at `now` (a scheduled redo is due).
    pub(crate) fn on_timer(&mut self, now: Millis, done: bool) -> bool {
        !done && self.redo_due(now)
    }

    /// Whether a scheduled redo is due at `now` (and clears it).
    pub(crate) fn redo_due(&mut self, now: Millis) -> bool {
        if self.redo_at.is_some_and(|at| at <= now) {
            self.redo_at = None;
            true
        } else {
            false
        }
    }
}

/// What a session report asks of a step machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SessionStep {
    /// The machine has finished: nothing.
    Done,
    /// The session is gone (its terminal error).
    Lost(Error),
    /// The first report: send the first step.
    Start,
    /// Back after a connection loss, with a redo due: send the step again.
    Redo,
    /// Nothing due.
    Carry,
}

/// Requests sent together whose replies are handled together.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Batch {
    tokens: Vec<Token>,
    replies: Vec<Option<crate::Result<Reply>>>,
}

impl Batch {
    /// Sends `request` as the next one of the batch; returns its index in the batch.
    pub(crate) fn push(&mut self, io: &mut Io, request: Request) -> usize {
        self.tokens.push(io.send(request));
        self.replies.push(None);
        self.tokens.len() - 1
    }

    /// Sends an unconditional delete of each of `paths` as the next ones of the batch.
    pub(crate) fn push_deletes(&mut self, io: &mut Io, paths: impl IntoIterator<Item = String>) {
        for path in paths {
            self.push(
                io,
                Request::Delete {
                    path,
                    version: None,
                },
            );
        }
    }

    /// Takes `reply` if it is for this batch.
    pub(crate) fn accept(&mut self, token: Token, reply: crate::Result<Reply>) -> bool {
        match self.tokens.iter().position(|t| *t == token) {
            Some(i) if self.replies[i].is_none() => {
                self.replies[i] = Some(reply);
                true
            }
            _ => false,
        }
    }

    /// Whether every reply is in (an empty batch is complete).
    pub(crate) fn complete(&self) -> bool {
        self.replies.iter().all(Option::is_some)
    }

    /// The replies, in the order the requests were pushed; the batch is then empty.
    pub(crate) fn take(&mut self) -> Vec<crate::Result<Reply>> {
        self.tokens.clear();
        std::mem::take(&mut self.replies)
            .into_iter()
            .map(|r| r.expect("taken only when complete"))
            .collect()
    }
}

/// How a batch of replies went, worst first.
pub(crate) enum Verdict {
    /// The session is gone.
    SessionLost(Error),
    /// A connection was lost with a request in flight: it may or may not have applied.
    Indeterminate,
    /// Every reply arrived (each may still be a refusal).
    Replied,
}

/// Classifies a batch's replies.
pub(crate) fn verdict(replies: &[crate::Result<Reply>]) -> Verdict {
    if let Some(e) = replies.iter().find_map(|r| match r {
        Err(e) if e.is_session_lost() => Some(e.clone()),
        _ => None,
    }) {
        return Verdict::SessionLost(e);
    }
    if replies
        .iter()
        .any(|r| matches!(r, Err(e) if e.is_indeterminate()))
    {
        return Verdict::Indeterminate;
    }
    Verdict::Replied
}
