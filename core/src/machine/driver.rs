//! The async driver that runs a [`Machine`] against a [`Coordination`] backend.

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use super::{Machine, Millis, Reply, Request, Token};
use crate::{Coordination, Result, Watch, WatchedEvent};

type Pending<'a> = BoxFuture<'a, (Token, Result<(Reply, Option<Watch>)>)>;

/// Sends one request (now: the backend submits at the call); the returned future resolves
/// to its token, the reply and the watch it armed.
fn send<'a, C: Coordination + ?Sized>(zk: &'a C, token: Token, request: Request) -> Pending<'a> {
    zk.submit(request).map(move |reply| (token, reply)).boxed()
}

/// Runs `machine` against `zk` until it produces its output.
///
/// The driver first reports the session's current state through
/// [`Machine::handle_session`] (which also gives the machine the starting time), then sends
/// what the machine asks, delivers replies, watch events, session transitions and timer
/// firings, and returns the output. When several things are ready at once, watch events are
/// delivered before replies, keeping ZooKeeper's order (an event precedes any reply that
/// reflects its change).
///
/// Cancellation: dropping the returned future stops the machine where it is; requests already
/// sent still take effect. Recipes that must clean up on cancellation (a lock removing its
/// node) do so in their own guards.
///
/// ```
/// use avout::machine::{drive, Machine, Millis, Reply, Request, Token};
/// use avout::{Coordination, Result, SessionState, WatchedEvent};
///
/// /// Reads one node's data: the smallest machine.
/// struct ReadOnce { path: String, sent: bool, out: Option<Result<Vec<u8>>> }
///
/// impl Machine for ReadOnce {
///     type Output = Result<Vec<u8>>;
///     fn poll_request(&mut self) -> Option<(Token, Request)> {
///         if self.sent { return None; }
///         self.sent = true;
///         Some((Token(0), Request::GetData { path: self.path.clone(), watch: false }))
///     }
///     fn handle_reply(&mut self, _: Millis, _: Token, reply: Result<Reply>) {
///         self.out = Some(reply.map(|r| match r { Reply::Data { data, .. } => data, _ => unreachable!() }));
///     }
///     fn handle_watch(&mut self, _: Millis, _: Token, _: WatchedEvent) {}
///     fn handle_session(&mut self, _: Millis, _: SessionState) {}
///     fn handle_timer(&mut self, _: Millis) {}
///     fn poll_timer(&self) -> Option<Millis> { None }
///     fn poll_output(&mut self) -> Option<Self::Output> { self.out.take() }
/// }
///
/// async fn read<C: Coordination>(zk: &C) -> Result<Vec<u8>> {
///     drive(zk, &mut ReadOnce { path: "/config".into(), sent: false, out: None }).await
/// }
/// ```
pub async fn drive<C, M>(zk: &C, machine: &mut M) -> M::Output
where
    C: Coordination + ?Sized,
    M: Machine,
{
    Driving::start(zk, machine).finish().await
}

/// A machine whose first requests are already sent, driven to its output later by
/// [`finish`](Driving::finish): what lets a caller pipeline a machine's requests with its own
/// work (or with another machine's requests) instead of waiting for the replies at once.
///
/// [`drive`] is `Driving::start(zk, machine).finish().await`. Replies that arrive before
/// `finish` is awaited wait in their futures; time keeps running on the machine's clock
/// (timers are absolute from `start`).
///
/// Cancellation: as for [`drive`]; dropping a `Driving` drops the replies, not the requests.
///
/// ```
/// use avout::machine::{Driving, Machine};
/// async fn pipelined<C: avout::Coordination, A: Machine, B: Machine>(zk: &C, a: A, b: B) {
///     let mut first = Driving::start(zk, a); // sent now
///     let mut second = Driving::start(zk, b); // sent right behind: one round trip for both
///     first.finish().await;
///     second.finish().await;
/// }
/// ```
pub struct Driving<'a, C: ?Sized, M> {
    zk: &'a C,
    machine: M,
    origin: Instant,
    states: crate::SessionStates,
    replies: FuturesUnordered<Pending<'a>>,
    watches: FuturesUnordered<BoxFuture<'static, (Token, WatchedEvent)>>,
    session_open: bool,
}

impl<C: ?Sized, M: std::fmt::Debug> std::fmt::Debug for Driving<'_, C, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driving")
            .field("machine", &self.machine)
            .field("in_flight", &self.replies.len())
            .finish_non_exhaustive()
    }
}

impl<'a, C, M> Driving<'a, C, M>
where
    C: Coordination + ?Sized,
    M: Machine,
{
    /// Reports the session's state to `machine` (giving it the starting time) and sends the
    /// requests it asks for at once.
    ///
    /// ```
    /// # async fn f<C: avout::Coordination, M: avout::machine::Machine>(zk: &C, m: M) {
    /// let mut d = avout::machine::Driving::start(zk, m);
    /// let _out = d.finish().await;
    /// # }
    /// ```
    pub fn start(zk: &'a C, mut machine: M) -> Self {
        let origin = Instant::now();
        let states = zk.session_states();
        machine.handle_session(Millis(0), states.current());
        let mut driving = Driving {
            zk,
            machine,
            origin,
            states,
            replies: FuturesUnordered::new(),
            watches: FuturesUnordered::new(),
            session_open: true,
        };
        driving.flush();
        driving
    }

    /// The machine (its state may be asked for after `finish`).
    ///
    /// ```
    /// # fn f<C: avout::Coordination, M: avout::machine::Machine>(d: &avout::machine::Driving<'_, C, M>) {
    /// let _m: &M = d.machine();
    /// # }
    /// ```
    pub fn machine(&self) -> &M {
        &self.machine
    }

    pub(crate) fn machine_mut(&mut self) -> &mut M {
        &mut self.machine
    }

    /// The machine's clock now (milliseconds since `start`).
    pub(crate) fn now(&self) -> Millis {
        Millis(self.origin.elapsed().as_millis() as u64)
    }

    fn flush(&mut self) {
        while let Some((token, request)) = self.machine.poll_request() {
            self.replies.push(send(self.zk, token, request));
        }
    }

    /// Delivers replies, watch events, session transitions and timer firings (watch events
    /// before replies, keeping ZooKeeper's order) and sends what the machine asks, until it
    /// produces its output.
    ///
    /// ```
    /// # async fn f<C: avout::Coordination, M: avout::machine::Machine>(zk: &C, m: M) {
    /// let _out = avout::machine::Driving::start(zk, m).finish().await;
    /// # }
    /// ```
    pub async fn finish(&mut self) -> M::Output {
        loop {
            self.flush();
            if let Some(output) = self.machine.poll_output() {
                return output;
            }
            let deadline = self.machine.poll_timer();
            let origin = self.origin;
            let sleep = async move {
                match deadline {
                    Some(Millis(at)) => {
                        tokio::time::sleep_until(origin + std::time::Duration::from_millis(at))
                            .await
                    }
                    None => std::future::pending().await,
                }
            };
            let session_open = self.session_open;
            tokio::select! {
                biased;
                Some((token, event)) = self.watches.next(), if !self.watches.is_empty() => {
                    let now = self.now();
                    self.machine.handle_watch(now, token, event);
                }
                Some((token, result)) = self.replies.next(), if !self.replies.is_empty() => {
                    let now = self.now();
                    match result {
                        Ok((reply, watch)) => {
                            if let Some(watch) = watch {
                                self.watches.push(watch.map(move |event| (token, event)).boxed());
                            }
                            self.machine.handle_reply(now, token, Ok(reply));
                        }
                        Err(e) => {
                            if e.is_indeterminate() {
                                crate::metrics::retried_after(&e);
                            }
                            self.machine.handle_reply(now, token, Err(e));
                        }
                    }
                }
                state = self.states.next(), if session_open => match state {
                    Some(state) => {
                        let now = self.now();
                        self.machine.handle_session(now, state);
                    }
                    None => self.session_open = false,
                },
                () = sleep => {
                    let now = self.now();
                    self.machine.handle_timer(now);
                }
            }
        }
    }
}
