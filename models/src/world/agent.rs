//! [`Agent`], a client's behaviour as the world steps it, and [`Run`], a production machine
//! run by an agent with its tokens tagged by the run.

use std::fmt::Debug;
use std::hash::Hash;

use avout::machine::{Machine, Millis, Reply, Request, Token};
use avout::{SessionState, WatchedEvent};

use super::NOW;

/// A client's behaviour: the production machine it runs and the script around it, stepped
/// like a [`Machine`] by the world.
///
/// ```
/// use avout_models::world::Agent;
/// use avout_models::lock::LockAgent;
/// let mut a = LockAgent::new(0, avout::lock::LockKind::Exclusive, 1);
/// a.start(1);
/// let (_, first) = a.poll_request().unwrap();
/// assert!(matches!(first, avout::machine::Request::Create { .. }));
/// ```
pub trait Agent: Clone + Debug + PartialEq + Eq + Hash + Send + Sync + 'static {
    /// Starts the script on a connected session `session` (the session id).
    fn start(&mut self, session: i64);
    /// The next request to send, if any.
    fn poll_request(&mut self) -> Option<(Token, Request)>;
    /// A request's reply.
    fn handle_reply(&mut self, token: Token, reply: avout::Result<Reply>);
    /// A watch armed by request `token` fired.
    fn handle_watch(&mut self, token: Token, event: WatchedEvent);
    /// The session changed state.
    fn handle_session(&mut self, state: SessionState);
    /// When the agent wants [`handle_timer`](Self::handle_timer), if ever.
    fn poll_timer(&self) -> Option<Millis>;
    /// A timer fired at `now`.
    fn handle_timer(&mut self, now: Millis);
    /// A step the client's script may take on its own (releasing a held lock), described.
    fn script_step(&self) -> Option<&'static str> {
        None
    }
    /// Takes the step named by [`script_step`](Self::script_step).
    fn take_script_step(&mut self) {}
    /// Ghost bookkeeping: the server applied `request` of this client with `result`, and the
    /// reply was `lost` on the way back. Not visible to the client; used by properties.
    fn observe_applied(&mut self, request: &Request, result: &avout::Result<Reply>, lost: bool) {
        let _ = (request, result, lost);
    }
    /// Whether the script has finished (nothing it sends or receives matters any more).
    fn finished(&self) -> bool;
    /// One line on where the script is, for traces.
    fn summary(&self) -> String;
}

/// A machine run by an agent, tagging its tokens with the run's generation so that replies
/// and watch events meant for an earlier run (which the production driver drops with its
/// futures) are recognised and dropped.
///
/// ```
/// use avout::machine::Token;
/// use avout_models::world::Run;
/// let m = avout::atom::CasMachine::new("/a", avout::atom::Step::Read { sync: false });
/// let mut run = Run::start(3, m);
/// let (token, _) = run.poll_request().unwrap();
/// assert_eq!(run.own(token), Some(Token(1)));
/// assert_eq!(run.own(Token(1)), None, "another run's token");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Run<M> {
    generation: u32,
    /// The production machine.
    pub machine: M,
}

impl<M: Machine> Run<M> {
    /// Starts `machine` as run number `generation` on a connected session, as
    /// [`avout::machine::drive`] does. See [`Run`] for an example.
    pub fn start(generation: u32, mut machine: M) -> Self {
        machine.handle_session(NOW, SessionState::Connected);
        Run {
            generation,
            machine,
        }
    }

    /// The machine's next request, its token tagged. See [`Run`] for an example.
    pub fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.machine
            .poll_request()
            .map(|(t, r)| (Token((u64::from(self.generation) << 32) | t.0), r))
    }

    /// The machine's own token, if `token` belongs to this run. See [`Run`] for an example.
    pub fn own(&self, token: Token) -> Option<Token> {
        (token.0 >> 32 == u64::from(self.generation)).then_some(Token(token.0 & 0xffff_ffff))
    }

    /// Delivers a reply; replies of other runs are dropped.
    ///
    /// ```
    /// use avout_models::world::Run;
    /// let m = avout::atom::CasMachine::new("/a", avout::atom::Step::Read { sync: false });
    /// let mut run = Run::start(1, m);
    /// let (token, _) = run.poll_request().unwrap();
    /// run.handle_reply(token, Err(avout::Error::NoNode { path: "/a".into() }));
    /// assert!(avout::machine::Machine::poll_output(&mut run.machine).is_some());
    /// ```
    pub fn handle_reply(&mut self, token: Token, reply: avout::Result<Reply>) {
        if let Some(t) = self.own(token) {
            self.machine.handle_reply(NOW, t, reply);
        }
    }

    /// Delivers a watch event; events of other runs are dropped.
    ///
    /// ```
    /// use avout::{EventKind, SessionState, WatchedEvent};
    /// let m = avout::atom::CasMachine::new("/a", avout::atom::Step::Read { sync: false });
    /// let mut run = avout_models::world::Run::start(1, m);
    /// let event = WatchedEvent { kind: EventKind::NodeDeleted, state: SessionState::Connected, path: "/a".into() };
    /// run.handle_watch(avout::machine::Token(7), event); // not this run's: dropped
    /// ```
    pub fn handle_watch(&mut self, token: Token, event: WatchedEvent) {
        if let Some(t) = self.own(token) {
            self.machine.handle_watch(NOW, t, event);
        }
    }
}
