//! One step of an agent's executor, as a sans-IO machine: read the state and the queue,
//! consume the next entry in one compare-and-set `multi`, and decide that `multi` after a
//! connection loss. [`run_executor`](super::Agent::run_executor) and
//! [`apply_pending`](super::Agent::apply_pending) drive it; the model checker steps it.
//!
//! - **Reading.** A `sync`, the state node and the queue's children travel together (one
//!   round trip; the `sync` makes the read current, so an executor that took over sees every
//!   commit of the one before). With `wait`, both reads arm watches.
//! - **Consuming.** The next entry ([`next_entry`]) is read and consumed ([`Consume`]); the
//!   `multi` sets the state conditional on the version read (value and `applied` move
//!   together) and deletes the entry. A holder of the executor lock puts a `check` of its lock
//!   node first (the fence): an executor that lost its lock writes nothing.
//! - **Refused** (`BadVersion`, `NoNode`): another executor, or a restart, moved first;
//!   nothing was written ([`Stepped::Raced`]).
//! - **In doubt** (connection loss, timeout): the machine waits for the session (or a short
//!   pause), reads the state behind a `sync` and decides by `applied`: at or past the entry,
//!   it was consumed (by this executor, or by another after it: either way exactly once);
//!   before it, nothing was written.
//! - **Nothing to apply** (an empty queue, a failed agent): with `wait`, the machine waits for
//!   either watch and reports [`Stepped::Changed`]; without, it reports [`Stepped::Idle`].
//! - **Session lost**: reported as the error; a `multi` in flight was fenced by the lock node,
//!   which went with the session, or is decided by the next step's read.

use crate::coverage::{self, Mark};
use crate::machine::{Machine, Millis, Outbox, Reply, Request, Resumed, Stall, Token};
use crate::{Error, ErrorClass, Op, SessionState, WatchedEvent, path};

use super::{AgentFailure, AgentState, Consume, EntryName, next_entry};

/// How a step ended.
///
/// ```
/// use avout::agent::Stepped;
/// assert_ne!(Stepped::Raced, Stepped::Idle);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stepped {
    /// An entry was consumed (applied, failed or skipped).
    Consumed {
        /// The failure to hand the error handler, if the action was skipped.
        skipped: Option<AgentFailure>,
        /// Whether the `multi` was decided by a read after a connection loss (the entry was
        /// then consumed by this executor or by another after it).
        recovered: bool,
    },
    /// Another executor or a restart moved first; nothing was written. Step again.
    Raced,
    /// Nothing was to apply, and then the state or the queue changed. Step again.
    Changed,
    /// Nothing to apply (only without `wait`).
    Idle,
}

/// Why a step failed.
///
/// ```
/// let e = avout::agent::StepError::Fenced { node: "/a/executor/x".into() };
/// assert!(e.to_string().contains("/a/executor/x"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum StepError {
    /// There is no agent at the path.
    #[error("no agent at {path}")]
    Missing {
        /// The agent's path.
        path: String,
    },
    /// The state node, or its value, is not this agent's.
    #[error("agent {path} holds bytes that do not decode: {detail}")]
    Decode {
        /// The agent's path.
        path: String,
        /// The decoder's message.
        detail: String,
    },
    /// The executor's lock node is gone (its session ended or it was deleted): nothing was
    /// written.
    #[error("the executor lost its lock: {node} is gone; nothing was written")]
    Fenced {
        /// The lock node.
        node: String,
    },
    /// The coordination service refused, or the session was lost.
    #[error(transparent)]
    Zk(#[from] Error),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Start,
    Reading {
        sync: Token,
        data: Token,
        children: Token,
        /// The state's bytes and version, once read.
        state: Option<(Vec<u8>, i32)>,
        listed: Option<Vec<String>>,
    },
    Fetching {
        state: Vec<u8>,
        version: i32,
        entry: EntryName,
        get: Token,
    },
    Committing {
        entry: EntryName,
        multi: Token,
        skipped: Option<AgentFailure>,
    },
    Deciding {
        entry: EntryName,
        sync: Token,
        get: Token,
    },
    Waiting,
    Stalled,
    Done,
}

/// What a stalled step redoes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Redo {
    Read,
    Decide(EntryName),
}

/// One executor step; see the module docs.
///
/// ```
/// use avout::agent::{AgentState, Consumed, EntryName, StepError, StepMachine};
/// use avout::machine::{Machine, Millis, Request};
/// use avout::SessionState;
///
/// let keep = |s: &AgentState, e: &EntryName, _: &[u8]| -> Result<Consumed, StepError> {
///     Ok((s.consumed(e, s.value.clone(), None).encode(), None))
/// };
/// let mut m = StepMachine::new("/agent", None, true, keep);
/// m.handle_session(Millis(0), SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::Sync { .. }))));
/// assert!(matches!(m.poll_request(), Some((_, Request::GetData { watch: true, .. }))));
/// assert!(matches!(m.poll_request(), Some((_, Request::GetChildren { watch: true, .. }))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StepMachine<C> {
    path: String,
    queue: String,
    fence: Option<String>,
    wait: bool,
    consume: C,
    phase: Phase,
    stall: Stall<Redo>,
    changed: bool,
    outbox: Outbox<Result<Stepped, StepError>>,
}

impl<C: Consume> StepMachine<C> {
    /// A step of the agent at `path`. `fence`: the executor's lock node, checked in the
    /// commit. `wait`: when nothing is to apply, wait for a change instead of reporting
    /// [`Stepped::Idle`]. See [`StepMachine`] for an example.
    pub fn new(path: impl Into<String>, fence: Option<String>, wait: bool, consume: C) -> Self {
        let path = path.into();
        StepMachine {
            queue: super::queue_dir(&path),
            path,
            fence,
            wait,
            consume,
            phase: Phase::Start,
            stall: Stall::default(),
            changed: false,
            outbox: Outbox::default(),
        }
    }

    /// How the machine consumes entries.
    ///
    /// ```
    /// # use avout::agent::{AgentState, Consumed, EntryName, StepError, StepMachine};
    /// let f = |_: &AgentState, _: &EntryName, _: &[u8]| -> Result<Consumed, StepError> { unreachable!() };
    /// let m = StepMachine::new("/a", None, false, f);
    /// let _ = m.consumer();
    /// ```
    pub fn consumer(&self) -> &C {
        &self.consume
    }

    fn send(&mut self, request: Request) -> Token {
        self.outbox.send(request)
    }

    fn finish(&mut self, result: Result<Stepped, StepError>) {
        self.phase = Phase::Done;
        self.stall.cancel();
        self.outbox.finish(result);
    }

    fn read(&mut self) {
        let sync = self.send(Request::Sync {
            path: self.path.clone(),
        });
        let data = self.send(Request::GetData {
            path: self.path.clone(),
            watch: self.wait,
        });
        let children = self.send(Request::GetChildren {
            path: self.queue.clone(),
            watch: self.wait,
        });
        self.phase = Phase::Reading {
            sync,
            data,
            children,
            state: None,
            listed: None,
        };
    }

    fn decide(&mut self, entry: EntryName) {
        let sync = self.send(Request::Sync {
            path: self.path.clone(),
        });
        let get = self.send(Request::GetData {
            path: self.path.clone(),
            watch: false,
        });
        self.phase = Phase::Deciding { entry, sync, get };
    }

    /// An error of a request in `redo`'s step: a pause and the step again if it may not
    /// have been applied for good, the end otherwise.
    fn fail(&mut self, now: Millis, error: Error, redo: Redo) {
        match error.class() {
            ErrorClass::Indeterminate => {
                self.phase = Phase::Stalled;
                self.stall.start(redo, now);
            }
            ErrorClass::Rejected | ErrorClass::SessionLost => self.finish(Err(error.into())),
        }
    }

    fn redo(&mut self, redo: Redo) {
        match redo {
            Redo::Read => self.read(),
            Redo::Decide(entry) => self.decide(entry),
        }
    }

    fn decode(&self, bytes: &[u8]) -> Result<AgentState, StepError> {
        AgentState::decode(bytes).map_err(|e| StepError::Decode {
            path: self.path.clone(),
            detail: e.to_string(),
        })
    }

    /// Both reads are in: the next entry, or nothing to apply.
    fn choose(&mut self, bytes: Vec<u8>, version: i32, listed: Vec<String>) {
        let state = match self.decode(&bytes) {
            Ok(state) => state,
            Err(e) => return self.finish(Err(e)),
        };
        let entries: Vec<EntryName> = listed.iter().filter_map(|c| EntryName::parse(c)).collect();
        let Some(entry) = next_entry(&state, &entries).cloned() else {
            return match (self.wait, self.changed) {
                (false, _) => self.finish(Ok(Stepped::Idle)),
                (true, true) => self.finish(Ok(Stepped::Changed)),
                (true, false) => self.phase = Phase::Waiting,
            };
        };
        let get = self.send(Request::GetData {
            path: path::join(&self.queue, &entry.name()),
            watch: false,
        });
        self.phase = Phase::Fetching {
            state: bytes,
            version,
            entry,
            get,
        };
    }

    fn commit(&mut self, bytes: &[u8], version: i32, entry: EntryName, action: &[u8]) {
        let state = match self.decode(bytes) {
            Ok(state) => state,
            Err(e) => return self.finish(Err(e)),
        };
        let (next, skipped) = match self.consume.consume(&state, &entry, action) {
            Ok(consumed) => consumed,
            Err(e) => return self.finish(Err(e)),
        };
        let mut ops = Vec::with_capacity(3);
        if let Some(node) = &self.fence {
            ops.push(Op::check(node.clone(), None));
        }
        ops.push(Op::set_data(&self.path, next, Some(version)));
        ops.push(Op::delete(path::join(&self.queue, &entry.name()), None));
        let multi = self.send(Request::Multi(ops));
        self.phase = Phase::Committing {
            entry,
            multi,
            skipped,
        };
    }

    fn committed(&mut self, now: Millis, entry: EntryName, reply: crate::Result<Reply>) {
        let skipped = match &mut self.phase {
            Phase::Committing { skipped, .. } => skipped.take(),
            _ => None,
        };
        match reply {
            Ok(_) => self.finish(Ok(Stepped::Consumed {
                skipped,
                recovered: false,
            })),
            Err(Error::Multi { index: 0, .. }) if self.fence.is_some() => {
                let node = self.fence.clone().unwrap_or_default();
                self.finish(Err(StepError::Fenced { node }))
            }
            Err(e) if matches!(e.root(), Error::BadVersion { .. } | Error::NoNode { .. }) => {
                self.finish(Ok(Stepped::Raced))
            }
            // The value and `applied` moved together or not at all: the state will say.
            Err(e) => self.fail(now, e, Redo::Decide(entry)),
        }
    }

    fn decided(&mut self, now: Millis, entry: EntryName, reply: crate::Result<Reply>) {
        match reply {
            Ok(Reply::Data { data, .. }) => match self.decode(&data) {
                Ok(state) if state.applied >= entry.seq => {
                    coverage::reach(Mark::AgentStepLostApplied);
                    self.finish(Ok(Stepped::Consumed {
                        skipped: None,
                        recovered: true,
                    }))
                }
                Ok(_) => self.finish(Ok(Stepped::Raced)),
                Err(e) => self.finish(Err(e)),
            },
            Err(Error::NoNode { .. }) => self.finish(Err(StepError::Missing {
                path: self.path.clone(),
            })),
            Err(e) => self.fail(now, e, Redo::Decide(entry)),
            Ok(other) => unreachable!("a read replied {other:?}"),
        }
    }

    fn read_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        let Phase::Reading {
            sync,
            data,
            children,
            state,
            listed,
        } = &mut self.phase
        else {
            return;
        };
        match reply {
            Ok(Reply::Data { data: bytes, stat }) if token == *data => {
                *state = Some((bytes, stat.version));
            }
            Ok(Reply::Children {
                children: names, ..
            }) if token == *children => {
                *listed = Some(names);
            }
            Ok(_) if token == *sync => {}
            Err(Error::NoNode { .. }) if token == *data => {
                let path = self.path.clone();
                return self.finish(Err(StepError::Missing { path }));
            }
            Err(e) => return self.fail(now, e, Redo::Read),
            Ok(other) => unreachable!("a read replied {other:?}"),
        }
        if let (Some(_), Some(_)) = (state.as_ref(), listed.as_ref()) {
            let (bytes, version) = state.take().expect("checked");
            let names = listed.take().expect("checked");
            self.choose(bytes, version, names);
        }
    }
}

impl<C: Consume> Machine for StepMachine<C> {
    type Output = Result<Stepped, StepError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            Phase::Reading {
                sync,
                data,
                children,
                ..
            } if [sync, data, children].contains(&token) => self.read_reply(now, token, reply),
            Phase::Fetching {
                state,
                version,
                entry,
                get,
            } if get == token => match reply {
                Ok(Reply::Data { data, .. }) => self.commit(&state, version, entry, &data),
                // Consumed by another executor since the listing.
                Err(Error::NoNode { .. }) => self.finish(Ok(Stepped::Raced)),
                Err(e) => self.fail(now, e, Redo::Read),
                Ok(other) => unreachable!("a read replied {other:?}"),
            },
            Phase::Committing { entry, multi, .. } if multi == token => {
                self.committed(now, entry, reply)
            }
            Phase::Deciding { entry, sync, .. } if sync == token => {
                if let Err(e) = reply {
                    self.fail(now, e, Redo::Decide(entry));
                }
            }
            Phase::Deciding { entry, get, .. } if get == token => self.decided(now, entry, reply),
            // Replies to requests superseded by a redo.
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, _token: Token, _event: WatchedEvent) {
        // Every watch this machine arms is on the state or the queue: any event is a change.
        self.changed = true;
        if self.phase == Phase::Waiting {
            self.finish(Ok(Stepped::Changed));
        }
    }

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.outbox.session_stalled(state, &mut self.stall) {
            Resumed::Start => self.read(),
            Resumed::Ended(error) => self.finish(Err(error.into())),
            Resumed::Redo(redo) => self.redo(redo),
            Resumed::Quiet => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Some(redo) = self.stall.due(now) {
            self.redo(redo);
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.stall.deadline()
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.outbox.take_output()
    }
}

#[cfg(test)]
#[path = "step_tests.rs"]
mod tests;
