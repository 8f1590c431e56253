//! Standing for leadership across sessions: Curator's `LeaderLatch` on the managed client.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::oneshot;

use crate::fanout::{Fanout, Subscription};
use crate::lock::{LockError, LockStatus};

use super::{Election, Leadership};

/// Where a [`LeaderLatch`] stands.
///
/// ```
/// use avout::recipes::election::LatchState;
/// assert_eq!(LatchState::Leading { term: 7, generation: 1 }.term(), Some(7));
/// assert_eq!(LatchState::Candidate { generation: 1 }.term(), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LatchState {
    /// A candidate, waiting to lead, on the client's session of this generation.
    Candidate {
        /// The session's generation.
        generation: u64,
    },
    /// The leader, in this term (a fencing token: larger than every earlier leader's), on
    /// the client's session of this generation.
    Leading {
        /// The term.
        term: i64,
        /// The session's generation.
        generation: u64,
    },
    /// The leadership of this term ended (its session expired, or its node was deleted);
    /// the latch stands again.
    Lost {
        /// The term that ended.
        term: i64,
        /// Why.
        reason: LockError,
    },
    /// The latch stopped for good: closed, the client ended, or the service refused the
    /// candidacy (the error says which).
    Closed(LockError),
}

impl LatchState {
    /// The term while leading.
    pub fn term(&self) -> Option<i64> {
        match self {
            LatchState::Leading { term, .. } => Some(*term),
            _ => None,
        }
    }
}

/// A standing candidacy in an [`Election`] that re-enters on each new session of the client
/// (Curator's `LeaderLatch`); from [`Election::latch`].
///
/// A background task campaigns, leads while elected, and when the leadership ends (the
/// session expired, or the node was deleted) reports [`LatchState::Lost`] and campaigns
/// again, on the client's next session if that one ended. Every transition goes to every
/// [`events`](Self::events) subscriber, so an observer sees each loss and then the new term.
///
/// - **Connection loss**: the leadership is in doubt while the connection is down:
///   [`is_leader`](Self::is_leader) is false until it comes back (or the session expires).
/// - **Session expiry**: the leadership is lost ([`LatchState::Lost`]); the latch campaigns
///   on the next session, with a new candidate node and, once elected, a larger term.
/// - **Cancellation**: [`close`](Self::close) resigns and waits for the node to go; dropping
///   the latch resigns in the background.
///
/// ```no_run
/// # async fn demo(client: &avout::Client) -> Result<(), avout::lock::LockError> {
/// use avout::recipes::election::{Election, LatchState};
/// let latch = Election::new(client, "/services/billing/leader")?.latch();
/// let mut events = latch.events();
/// while let Some(state) = events.next().await {
///     match state {
///         LatchState::Leading { term, .. } => println!("leading in term {term}"),
///         LatchState::Lost { term, reason } => println!("term {term} over: {reason}"),
///         LatchState::Closed(why) => return Err(why),
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
pub struct LeaderLatch {
    states: Fanout<LatchState>,
    leadership: crate::task::watch::Receiver<Option<LeadingOn>>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

/// The leadership the task holds now, as the handle needs it for `is_leader`.
#[derive(Clone)]
struct LeadingOn {
    session: crate::client::Session,
    term: i64,
}

impl fmt::Debug for LeaderLatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderLatch")
            .field("state", &self.state())
            .finish()
    }
}

impl LeaderLatch {
    pub(super) fn start(election: Election) -> Self {
        let generation = election.client.generation();
        let states = Fanout::new(LatchState::Candidate { generation });
        let (leading, leadership) = crate::task::watch::channel(None);
        let (stop, stopped) = oneshot::channel();
        let task = crate::task::spawn(stand(election, states.clone(), leading, stopped));
        LeaderLatch {
            states,
            leadership,
            stop: Some(stop),
            task,
        }
    }

    /// Where the latch stands now.
    pub fn state(&self) -> LatchState {
        self.states.current()
    }

    /// Every transition from now on; ends after [`LatchState::Closed`].
    pub fn events(&self) -> LatchEvents {
        LatchEvents {
            sub: self.states.subscribe(),
        }
    }

    /// Whether this process may act as leader now: elected, and its session connected.
    pub fn is_leader(&self) -> bool {
        self.leadership.borrow().as_ref().is_some_and(|on| {
            crate::lock::session_status(&*on.session) == LockStatus::Held
                && self.state().term() == Some(on.term)
        })
    }

    /// Waits until the latch leads and returns the term; fails if it closes first.
    pub async fn leading(&self) -> Result<i64, LockError> {
        let mut events = self.events();
        let mut state = events.current();
        loop {
            match state {
                LatchState::Leading { term, .. } => return Ok(term),
                LatchState::Closed(why) => return Err(why),
                _ => {}
            }
            state = match events.next().await {
                Some(next) => next,
                None => return Err(LockError::SessionLost(crate::Error::Closed)),
            };
        }
    }

    /// Stops standing: resigns (deleting the candidate node) and waits until it is done.
    pub async fn close(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for LeaderLatch {
    fn drop(&mut self) {
        // Aborting drops the task's leadership or campaign, which withdraws its node in the
        // background.
        self.task.abort();
    }
}

/// A [`LeaderLatch`]'s transitions; from [`LeaderLatch::events`]. Also a
/// [`futures::Stream`].
#[must_use = "a subscription does nothing unless polled"]
pub struct LatchEvents {
    sub: Subscription<LatchState>,
}

impl fmt::Debug for LatchEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatchEvents")
            .field("current", self.sub.current())
            .finish()
    }
}

impl LatchEvents {
    /// The last state received (or the latch's when subscribing).
    pub fn current(&self) -> LatchState {
        self.sub.current().clone()
    }

    /// The next transition, `None` after [`LatchState::Closed`].
    pub async fn next(&mut self) -> Option<LatchState> {
        std::future::poll_fn(|cx| self.sub.poll_next(cx)).await
    }
}

impl futures::Stream for LatchEvents {
    type Item = LatchState;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LatchState>> {
        self.get_mut().sub.poll_next(cx)
    }
}

fn publish(states: &Fanout<LatchState>, state: LatchState) {
    let last = matches!(state, LatchState::Closed(_));
    states.publish_if(state.clone(), last, |current| *current != state);
}

/// The latch's task: campaign, lead, and stand again when the leadership ends.
async fn stand(
    election: Election,
    states: Fanout<LatchState>,
    leading: crate::task::watch::Sender<Option<LeadingOn>>,
    mut stopped: oneshot::Receiver<()>,
) {
    let client = election.client.clone();
    loop {
        publish(
            &states,
            LatchState::Candidate {
                generation: client.generation(),
            },
        );
        let elected = tokio::select! {
            biased;
            elected = election.campaign() => elected,
            _ = &mut stopped => {
                publish(&states, LatchState::Closed(LockError::SessionLost(crate::Error::Closed)));
                return;
            }
        };
        let leadership: Leadership = match elected {
            Ok(leadership) => leadership,
            Err(LockError::SessionLost(_)) if !client.has_ended() => continue,
            Err(why) => {
                publish(&states, LatchState::Closed(why));
                return;
            }
        };
        let term = leadership.term();
        leading.send_replace(Some(LeadingOn {
            session: leadership.zk.clone(),
            term,
        }));
        publish(
            &states,
            LatchState::Leading {
                term,
                generation: leadership.zk.generation(),
            },
        );
        let reason = tokio::select! {
            biased;
            reason = leadership.lost() => reason,
            _ = &mut stopped => {
                leading.send_replace(None);
                if let Err(e) = leadership.resign().await {
                    tracing::warn!(error = %e, "resigning a closed latch");
                }
                publish(&states, LatchState::Closed(LockError::SessionLost(crate::Error::Closed)));
                return;
            }
        };
        leading.send_replace(None);
        publish(&states, LatchState::Lost { term, reason });
        drop(leadership);
        if client.has_ended() {
            publish(
                &states,
                LatchState::Closed(LockError::SessionLost(crate::Error::Closed)),
            );
            return;
        }
    }
}
