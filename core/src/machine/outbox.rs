//! What a machine hands its runner: the requests it wants sent (each named by a fresh
//! [`Token`]), the moment it started, and its result once it is done.
//!
//! Every machine needs the same four things — a token counter, a queue of requests, a
//! `started` flag that turns the driver's first session report into "begin", and an output
//! slot that, once filled, makes the machine deaf to what still arrives. [`Outbox`] holds them
//! all, so a machine's `poll_request` and `poll_output` are one line each and its
//! `handle_session` is a `match` on [`SessionEvent`]. [`Batch`] groups requests sent back to
//! back whose replies are handled together.

use std::collections::VecDeque;

use super::{Reply, Request, Stall, Token};
use crate::{CreateOptions, Error, SessionState};

/// A machine's requests, tokens, start and result; see the module docs.
///
/// ```
/// use avout::machine::{Outbox, Request, SessionEvent, Token};
/// use avout::SessionState;
///
/// let mut out: Outbox<Result<(), avout::Error>> = Outbox::default();
/// assert_eq!(out.session(SessionState::Connected), SessionEvent::Start);
/// let t = out.send(Request::Sync { path: "/".into() });
/// assert_eq!(t, Token(1));
/// assert!(matches!(out.pop(), Some((Token(1), Request::Sync { .. }))));
/// out.finish(Ok(()));
/// assert_eq!(out.session(SessionState::Expired), SessionEvent::Ignored, "done: deaf");
/// assert_eq!(out.take_output(), Some(Ok(())));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Outbox<O> {
    next: u64,
    queue: VecDeque<(Token, Request)>,
    started: bool,
    done: bool,
    output: Option<O>,
}

impl<O> Default for Outbox<O> {
    fn default() -> Self {
        Outbox {
            next: 0,
            queue: VecDeque::new(),
            started: false,
            done: false,
            output: None,
        }
    }
}

/// What a session report means to a machine, as [`Outbox::session`] classifies it.
///
/// ```
/// use avout::machine::SessionEvent;
/// assert_ne!(SessionEvent::Start, SessionEvent::Reconnected);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SessionEvent {
    /// The driver's first report, of a live session: begin.
    Start,
    /// The session is gone (the first report may say so too): finish with this error.
    Ended(Error),
    /// The session is connected again (or still): redo a stalled step now.
    Reconnected,
    /// Disconnected: nothing to do, requests in flight will fail by themselves.
    Disconnected,
    /// The machine is done: reports change nothing.
    Ignored,
}

/// A session report as a machine with a [`Stall`] acts on it: what
/// [`Outbox::session_stalled`] makes of [`SessionEvent`] once a reconnection has taken the
/// stalled step, so each machine's `handle_session` is one arm per thing to do.
///
/// ```
/// use avout::machine::{Millis, Outbox, Resumed, Stall};
/// use avout::SessionState;
/// let mut out: Outbox<()> = Outbox::default();
/// let mut stall = Stall::default();
/// assert_eq!(out.session_stalled(SessionState::Connected, &mut stall), Resumed::Start);
/// stall.start("read", Millis(0));
/// assert_eq!(out.session_stalled(SessionState::Connected, &mut stall), Resumed::Redo("read"));
/// assert_eq!(out.session_stalled(SessionState::Connected, &mut stall), Resumed::Quiet);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resumed<S> {
    /// The driver's first report, of a live session: begin.
    Start,
    /// The session is gone: finish with this error.
    Ended(Error),
    /// Connected again while a step was stalled: redo it now (the stall is cleared).
    Redo(S),
    /// Nothing to do: disconnected, connected with nothing stalled, or done.
    Quiet,
}

impl<O> Outbox<O> {
    /// A fresh token, not attached to a request (for a child's request relayed at poll time).
    ///
    /// ```
    /// let mut out: avout::machine::Outbox<()> = Default::default();
    /// assert_eq!(out.token(), avout::machine::Token(1));
    /// ```
    pub fn token(&mut self) -> Token {
        self.next += 1;
        Token(self.next)
    }

    /// Queues `request` under a fresh token, which its reply and watch will carry.
    ///
    /// ```
    /// let mut out: avout::machine::Outbox<()> = Default::default();
    /// let t = out.send(avout::machine::Request::Sync { path: "/".into() });
    /// assert_ne!(t, out.send(avout::machine::Request::Sync { path: "/".into() }));
    /// ```
    pub fn send(&mut self, request: Request) -> Token {
        let token = self.token();
        self.queue.push_back((token, request));
        token
    }

    /// Queues creates of `path` and each of its ancestors, root first, and returns the last
    /// one's token. `NodeExists` replies to them are expected; the machines ignore them.
    ///
    /// ```
    /// use avout::machine::{Outbox, Request};
    /// let mut out: Outbox<()> = Default::default();
    /// out.send_ancestors("/a/b");
    /// let paths: Vec<String> = std::iter::from_fn(|| out.pop()).map(|(_, r)| r.path().to_owned()).collect();
    /// assert_eq!(paths, ["/a", "/a/b"]);
    /// ```
    pub fn send_ancestors(&mut self, path: &str) -> Token {
        let mut last = None;
        for create in ancestor_creates(path) {
            last = Some(self.send(create));
        }
        last.expect("a path has at least one component")
    }

    /// The next request to send: what `Machine::poll_request` returns.
    ///
    /// ```
    /// let mut out: avout::machine::Outbox<()> = Default::default();
    /// assert_eq!(out.pop(), None);
    /// ```
    pub fn pop(&mut self) -> Option<(Token, Request)> {
        self.queue.pop_front()
    }

    /// Drops the requests not yet sent.
    ///
    /// ```
    /// let mut out: avout::machine::Outbox<()> = Default::default();
    /// out.send(avout::machine::Request::Sync { path: "/".into() });
    /// out.clear();
    /// assert_eq!(out.pop(), None);
    /// ```
    pub fn clear(&mut self) {
        self.queue.clear();
    }

    /// Classifies a session report: the first one starts the machine (or ends it, if the
    /// session is already gone); after [`finish`](Self::finish) every report is ignored.
    ///
    /// ```
    /// use avout::machine::{Outbox, SessionEvent};
    /// use avout::SessionState;
    /// let mut out: Outbox<()> = Default::default();
    /// assert_eq!(out.session(SessionState::Disconnected), SessionEvent::Start);
    /// assert_eq!(out.session(SessionState::Connected), SessionEvent::Reconnected);
    /// assert_eq!(out.session(SessionState::Expired), SessionEvent::Ended(avout::Error::SessionExpired));
    /// ```
    pub fn session(&mut self, state: SessionState) -> SessionEvent {
        if self.done {
            return SessionEvent::Ignored;
        }
        let first = !self.started;
        self.started = true;
        match state.terminal_error() {
            Some(error) => SessionEvent::Ended(error),
            None if first => SessionEvent::Start,
            None if state == SessionState::Connected => SessionEvent::Reconnected,
            None => SessionEvent::Disconnected,
        }
    }

    /// [`Outbox::session`] for a machine that redoes a [`Stall`]ed step on reconnection: a
    /// reconnection takes the stalled step (if any) out of `stall`; see [`Resumed`].
    pub fn session_stalled<S>(&mut self, state: SessionState, stall: &mut Stall<S>) -> Resumed<S> {
        match self.session(state) {
            SessionEvent::Start => Resumed::Start,
            SessionEvent::Ended(error) => Resumed::Ended(error),
            SessionEvent::Reconnected => stall.take().map_or(Resumed::Quiet, Resumed::Redo),
            SessionEvent::Disconnected | SessionEvent::Ignored => Resumed::Quiet,
        }
    }

    /// Whether the first session report has arrived.
    ///
    /// ```
    /// let out: avout::machine::Outbox<()> = Default::default();
    /// assert!(!out.started());
    /// ```
    pub fn started(&self) -> bool {
        self.started
    }

    /// Whether the machine has finished.
    ///
    /// ```
    /// let mut out: avout::machine::Outbox<u8> = Default::default();
    /// out.finish(1);
    /// assert!(out.is_done());
    /// ```
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Ends the machine with `output`: requests not yet sent are dropped (a machine may still
    /// queue a fire-and-forget cleanup after this).
    ///
    /// ```
    /// let mut out: avout::machine::Outbox<u8> = Default::default();
    /// out.send(avout::machine::Request::Sync { path: "/".into() });
    /// out.finish(7);
    /// assert_eq!(out.pop(), None);
    /// assert_eq!(out.take_output(), Some(7));
    /// ```
    pub fn finish(&mut self, output: O) {
        self.queue.clear();
        self.done = true;
        self.output = Some(output);
    }

    /// The result, once: what `Machine::poll_output` returns.
    ///
    /// ```
    /// let mut out: avout::machine::Outbox<u8> = Default::default();
    /// assert_eq!(out.take_output(), None);
    /// ```
    pub fn take_output(&mut self) -> Option<O> {
        self.output.take()
    }
}

/// Creates of `path` and each of its ancestors, root first (for a machine that sends them
/// among others of its own; [`Outbox::send_ancestors`] sends them all).
pub(crate) fn ancestor_creates(path: &str) -> Vec<Request> {
    let mut creates = Vec::new();
    let mut end = 0;
    while end < path.len() {
        end = path[end + 1..]
            .find('/')
            .map_or(path.len(), |i| end + 1 + i);
        creates.push(Request::Create {
            path: path[..end].to_owned(),
            data: Vec::new(),
            options: CreateOptions::default(),
        });
    }
    creates
}

/// Requests sent together whose replies are handled together.
///
/// ```
/// use avout::machine::{Batch, Outbox, Reply, Request};
/// let mut out: Outbox<()> = Default::default();
/// let mut batch = Batch::default();
/// batch.push(&mut out, Request::Sync { path: "/".into() });
/// let (t, _) = out.pop().unwrap();
/// assert!(!batch.complete());
/// assert!(batch.accept(t, Ok(Reply::Synced)));
/// assert!(batch.complete());
/// assert_eq!(batch.take(), vec![Ok(Reply::Synced)]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Batch {
    tokens: Vec<Token>,
    replies: Vec<Option<crate::Result<Reply>>>,
}

impl Batch {
    /// Sends `request` through `outbox` as the next one of the batch; returns its index in
    /// the batch.
    ///
    /// ```
    /// use avout::machine::{Batch, Outbox, Request};
    /// let mut out: Outbox<()> = Default::default();
    /// let mut batch = Batch::default();
    /// assert_eq!(batch.push(&mut out, Request::Sync { path: "/".into() }), 0);
    /// ```
    pub fn push<O>(&mut self, outbox: &mut Outbox<O>, request: Request) -> usize {
        self.tokens.push(outbox.send(request));
        self.replies.push(None);
        self.tokens.len() - 1
    }

    /// Takes `reply` if it is for this batch (and not yet in).
    ///
    /// ```
    /// let mut batch = avout::machine::Batch::default();
    /// assert!(!batch.accept(avout::machine::Token(9), Ok(avout::machine::Reply::Synced)));
    /// ```
    pub fn accept(&mut self, token: Token, reply: crate::Result<Reply>) -> bool {
        match self.tokens.iter().position(|t| *t == token) {
            Some(i) if self.replies[i].is_none() => {
                self.replies[i] = Some(reply);
                true
            }
            _ => false,
        }
    }

    /// Whether every reply is in (an empty batch is complete).
    ///
    /// ```
    /// assert!(avout::machine::Batch::default().complete());
    /// ```
    pub fn complete(&self) -> bool {
        self.replies.iter().all(Option::is_some)
    }

    /// The replies, in the order the requests were pushed; the batch is then empty.
    ///
    /// # Panics
    ///
    /// If a reply is missing: take a batch only once it is [`complete`](Self::complete).
    ///
    /// ```
    /// assert!(avout::machine::Batch::default().take().is_empty());
    /// ```
    pub fn take(&mut self) -> Vec<crate::Result<Reply>> {
        self.tokens.clear();
        std::mem::take(&mut self.replies)
            .into_iter()
            .map(|r| r.expect("taken only when complete"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_gone_at_the_first_report_ends_the_machine_without_starting_it() {
        let mut out: Outbox<()> = Outbox::default();
        assert_eq!(
            out.session(SessionState::Closed),
            SessionEvent::Ended(Error::Closed)
        );
        assert!(out.started());
    }

    #[test]
    fn tokens_are_never_reused_even_after_clear() {
        let mut out: Outbox<()> = Outbox::default();
        let a = out.send(Request::Sync { path: "/".into() });
        out.clear();
        let b = out.send(Request::Sync { path: "/".into() });
        assert!(b > a);
    }

    #[test]
    fn a_cleanup_queued_after_finishing_is_sent() {
        let mut out: Outbox<()> = Outbox::default();
        out.finish(());
        out.send(Request::Delete {
            path: "/a".into(),
            version: None,
        });
        assert!(out.pop().is_some());
    }

    #[test]
    fn a_batch_takes_each_reply_once() {
        let mut out: Outbox<()> = Outbox::default();
        let mut batch = Batch::default();
        batch.push(&mut out, Request::Sync { path: "/".into() });
        batch.push(&mut out, Request::Sync { path: "/".into() });
        let (a, _) = out.pop().unwrap();
        assert!(batch.accept(a, Ok(Reply::Synced)));
        assert!(!batch.accept(a, Ok(Reply::Synced)), "twice");
        assert!(!batch.complete());
    }
}
