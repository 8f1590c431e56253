//! Leaving a double barrier: the recipe's lowest/highest protocol (see the
//! [module docs](super)).

use super::{READY, participants};
use crate::machine::{Machine, Millis, Outbox, Reply, Request, Resumed, Stall, Token};
use crate::recipes::barrier::BarrierError;
use crate::{Error, Op, SessionState, WatchedEvent, path};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum LeavePhase {
    /// Listing the participants.
    Listing {
        list: Token,
    },
    /// Deleting our node and `ready` together: we are the last.
    Closing {
        multi: Token,
    },
    /// Deleting our node alone (`ready` was already gone).
    Deleting {
        delete: Token,
    },
    /// Watching another participant's node: `exists` armed the watch (and, when `delete` is
    /// set, our node's delete was sent just before).
    Watching {
        delete: Option<Token>,
        exists: Token,
    },
    /// Waiting to list again after a connection loss (see `stall`).
    Stalled,
    Done,
}

/// Leaves a double barrier; see the [module docs](super).
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::recipes::double_barrier::LeaveMachine;
/// use avout::SessionState;
///
/// let mut m = LeaveMachine::new("/round", "/round/p-00000000000000000000000000000001");
/// m.handle_session(Millis(0), SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::GetChildren { .. }))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LeaveMachine {
    barrier: String,
    node: String,
    phase: LeavePhase,
    stall: Stall<()>,
    outbox: Outbox<Result<(), BarrierError>>,
}

impl LeaveMachine {
    /// A machine leaving the barrier at `barrier`, where our node is `node`.
    ///
    /// ```
    /// let m = avout::recipes::double_barrier::LeaveMachine::new("/r", "/r/p-1");
    /// # let _ = m;
    /// ```
    pub fn new(barrier: &str, node: &str) -> Self {
        LeaveMachine {
            barrier: barrier.to_owned(),
            node: node.to_owned(),
            phase: LeavePhase::Done,
            stall: Stall::default(),
            outbox: Outbox::default(),
        }
    }

    fn list(&mut self) {
        let list = self.outbox.send(Request::GetChildren {
            path: self.barrier.clone(),
            watch: false,
        });
        self.phase = LeavePhase::Listing { list };
    }

    fn finish(&mut self, result: Result<(), BarrierError>) {
        self.phase = LeavePhase::Done;
        self.stall.cancel();
        self.outbox.finish(result);
    }

    fn failed(&mut self, now: Millis, error: Error) {
        if error.is_indeterminate() {
            self.phase = LeavePhase::Stalled;
            self.stall.start((), now);
        } else {
            self.finish(Err(error.into()));
        }
    }

    /// Decides from the participants present and whether `ready` is.
    ///
    /// Our node gone and `ready` gone means the round is over: the last participant deletes
    /// `ready` together with its node, and only once every other node had gone. Nodes present
    /// then are newcomers who never entered this round (a participant whose session ended
    /// inside it, entering again on its next session): waiting for one would wait for ever, as
    /// it waits for a `ready` nobody will create (found by the double-barrier scenario,
    /// seed 12010003449 under every fault kind).
    fn decide(&mut self, present: Vec<String>, ready: bool) {
        let ours = path::name(&self.node).to_owned();
        let mine = present.contains(&ours);
        match (present.first(), present.last()) {
            (None, _) | (_, None) => self.finish(Ok(())),
            _ if !mine && !ready => self.finish(Ok(())),
            _ if present.len() == 1 && mine => {
                let multi = self.outbox.send(Request::Multi(vec![
                    Op::delete(self.node.clone(), None),
                    Op::delete(path::join(&self.barrier, READY), None),
                ]));
                self.phase = LeavePhase::Closing { multi };
            }
            (Some(lowest), Some(highest)) if *lowest == ours => {
                let exists = self.outbox.send(Request::Exists {
                    path: path::join(&self.barrier, highest),
                    watch: true,
                });
                self.phase = LeavePhase::Watching {
                    delete: None,
                    exists,
                };
            }
            (Some(lowest), Some(_)) => {
                let lowest = path::join(&self.barrier, lowest);
                let delete = mine.then(|| {
                    self.outbox.send(Request::Delete {
                        path: self.node.clone(),
                        version: None,
                    })
                });
                let exists = self.outbox.send(Request::Exists {
                    path: lowest,
                    watch: true,
                });
                self.phase = LeavePhase::Watching { delete, exists };
            }
        }
    }
}

impl Machine for LeaveMachine {
    type Output = Result<(), BarrierError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            LeavePhase::Listing { list } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => {
                    let ready = children.iter().any(|c| c == READY);
                    self.decide(participants(children), ready)
                }
                Err(Error::NoNode { .. }) => self.finish(Ok(())),
                Err(e) => self.failed(now, e),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            LeavePhase::Closing { multi } if token == multi => match reply {
                Ok(_) => self.finish(Ok(())),
                Err(Error::Multi { index: 1, .. }) => {
                    let delete = self.outbox.send(Request::Delete {
                        path: self.node.clone(),
                        version: None,
                    });
                    self.phase = LeavePhase::Deleting { delete };
                }
                // Our node is gone already: look again.
                Err(Error::Multi { index: 0, source })
                    if matches!(*source, Error::NoNode { .. }) =>
                {
                    self.list()
                }
                Err(e) => self.failed(now, e),
            },
            LeavePhase::Deleting { delete } if token == delete => match reply {
                Ok(_) | Err(Error::NoNode { .. }) => self.finish(Ok(())),
                Err(e) => self.failed(now, e),
            },
            LeavePhase::Watching {
                delete: Some(delete),
                ..
            } if token == delete => match reply {
                Ok(_) | Err(Error::NoNode { .. }) => {}
                // Our node may still be there, and the participant we watch may be waiting for
                // it to go: list again (which deletes it again) rather than wait.
                Err(e) => self.failed(now, e),
            },
            LeavePhase::Watching { exists, .. } if token == exists => match reply {
                Ok(Reply::Exists(None)) => self.list(),
                Ok(Reply::Exists(Some(_))) => {}
                Err(e) => self.failed(now, e),
                Ok(other) => unreachable!("exists replied {other:?}"),
            },
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, token: Token, _event: WatchedEvent) {
        if matches!(self.phase, LeavePhase::Watching { exists, .. } if exists == token) {
            self.list();
        }
    }

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.outbox.session_stalled(state, &mut self.stall) {
            Resumed::Start => self.list(),
            Resumed::Ended(error) => self.finish(Err(error.into())),
            Resumed::Redo(()) => self.list(),
            Resumed::Quiet => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.stall.due(now).is_some() {
            self.list();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.stall.deadline()
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.outbox.take_output()
    }
}
