//! One optimistic step of an atom, as a sans-IO machine: a read, or a conditional write that
//! knows, even after a connection loss, whether it took effect.
//!
//! A write is a `create` (version `-1`: the node must not exist) or a `set_data` with the
//! version the writer read. Its payload records, in the node's list of writers, the writer
//! (one atom handle, which has one write in flight at a time) and a fresh id for this write
//! (see the node format in the [atom module docs](super)).
//!
//! - **Success** (one round trip): the node now holds our payload at the returned version.
//! - **Conflict** (`BadVersion`, `NodeExists`, `NoNode`): nothing was written; the machine
//!   reads the node (the reply comes from a server that has applied the conflicting write, so
//!   the read is current) and reports it, and the caller re-runs its function on it.
//! - **Indeterminate** (connection loss, timeout): the write may have been applied. The
//!   machine waits for the session to reconnect (or a short pause), reads the node behind a
//!   `sync`, and decides: a node still at the expected version was not written; at a later
//!   version, the writer's entry names its latest write that landed, which is ours if and
//!   only if ours landed (the writer had nothing else in flight, and a session's requests
//!   apply in order), however many other writers wrote since. The `sync` matters: after the
//!   loss the session may be served by a server that has not applied our write yet, and a
//!   "not applied" read there would let the caller apply its function a second time on top of
//!   the write that did land. A recovery read whose `sync` failed is not trusted: the machine
//!   waits and reads again. If our entry is missing and may have been pushed out (more than
//!   32 other writers since, or a foreign program overwrote the header), the outcome is
//!   reported as unknown, never guessed.
//! - **Session lost**: the outcome of an in-flight write is unknown; reported as the error.

use crate::coverage::{self, Mark};
use crate::machine::{Machine, Millis, Outbox, Reply, Request, Token};
use crate::planted::{Bug, Bugs};
use crate::{CreateOptions, Error, ErrorClass, SessionState, Stat, WatchedEvent};

use super::envelope;

// The toolkit's pause before re-reading after a connection loss (unless the session reconnects first).
use crate::machine::RETRY_PAUSE_MS;

/// A node's data and metadata.
///
/// ```
/// let v = avout::atom::Versioned { data: b"1".to_vec(), stat: avout::Stat::default() };
/// assert_eq!(v.stat.version, 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Versioned {
    /// The node's data.
    pub data: Vec<u8>,
    /// Its metadata.
    pub stat: Stat,
}

/// What a [`CasMachine`] does.
///
/// ```
/// use avout::atom::Step;
/// let s = Step::Set { data: b"x".to_vec(), writer: 1, write_id: 7, version: 3, czxid: 10 };
/// assert!(matches!(s, Step::Set { version: 3, .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// Read the node; with `sync`, first make the server catch up with the leader, so the
    /// read is linearizable (the sync and the read travel together: one round trip).
    Read {
        /// Whether to sync first.
        sync: bool,
    },
    /// Create the node with `data`, which records `write_id` as `writer`'s latest write.
    Create {
        /// The payload.
        data: Vec<u8>,
        /// The writer: an id with at most one write in flight at any time.
        writer: u64,
        /// This write's id, unique.
        write_id: u64,
    },
    /// Replace the node's data if it is at `version` of the node created at `czxid`.
    Set {
        /// The payload.
        data: Vec<u8>,
        /// The writer: an id with at most one write in flight at any time.
        writer: u64,
        /// This write's id, unique.
        write_id: u64,
        /// The version read.
        version: i32,
        /// The creation zxid of the node read (a recreated node has a new one).
        czxid: i64,
    },
}

/// How a step ended.
///
/// ```
/// use avout::atom::Outcome;
/// let o = Outcome::NotApplied { current: None };
/// assert!(!o.applied());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The write took effect. `current` is the node as last seen: our payload and version, or,
    /// after a recovery, a later state that includes our write.
    Applied {
        /// The node as last seen.
        current: Versioned,
        /// Whether the outcome was decided by a recovery read after a connection loss.
        recovered: bool,
    },
    /// The write did not take effect (or the step was a read). `current` is the node as read
    /// now; `None` if it does not exist.
    NotApplied {
        /// The node as read.
        current: Option<Versioned>,
    },
}

impl Outcome {
    /// Whether the write took effect.
    ///
    /// ```
    /// # use avout::atom::{Outcome, Versioned};
    /// let o = Outcome::Applied { current: Versioned { data: vec![], stat: Default::default() }, recovered: false };
    /// assert!(o.applied());
    /// ```
    pub fn applied(&self) -> bool {
        matches!(self, Outcome::Applied { .. })
    }
}

/// Why a step failed.
///
/// ```
/// use avout::atom::StepError;
/// let e = StepError::Unknown { path: "/a".into(), expected: 3, found: 90 };
/// assert!(e.to_string().contains("/a"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum StepError {
    /// The coordination service refused, or the session was lost (an in-flight write's
    /// outcome is then unknown).
    #[error(transparent)]
    Zk(#[from] Error),
    /// After a connection loss, too many writes (or a recreation of the node) happened before
    /// the node could be read again to tell whether ours took effect.
    #[error(
        "cannot tell whether the write to {path} took effect: sent against version {expected}, found version {found}"
    )]
    Unknown {
        /// The node.
        path: String,
        /// The version the write was conditional on.
        expected: i32,
        /// The version found afterwards.
        found: i32,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Start,
    Writing(Token),
    Reading {
        /// The `sync` sent ahead of the read, if any: a read behind a failed sync may be
        /// stale, so it is not trusted.
        sync: Option<Token>,
        get: Token,
        recovering: bool,
    },
    /// Waiting to read again after a connection loss.
    Paused {
        until: Millis,
        recovering: bool,
    },
    Done,
}

/// Runs one [`Step`]; see the [module docs](self). Driven by [`crate::machine::drive`], or
/// stepped by hand.
///
/// ```
/// use avout::atom::{CasMachine, Step};
/// use avout::machine::{Machine, Millis, Request};
/// use avout::SessionState;
///
/// let mut m = CasMachine::new("/counter", Step::Set { data: b"2".to_vec(), writer: 3, write_id: 1, version: 1, czxid: 5 });
/// m.handle_session(Millis(0), SessionState::Connected);
/// let (_, request) = m.poll_request().unwrap();
/// assert!(matches!(request, Request::SetData { version: Some(1), .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CasMachine {
    path: String,
    step: Step,
    phase: Phase,
    outbox: Outbox<()>,
    output: Option<Result<Outcome, StepError>>,
    recovered: bool,
    planted: Bugs,
}

impl CasMachine {
    /// A machine that performs `step` on the node at `path`.
    ///
    /// ```
    /// let m = avout::atom::CasMachine::new("/a", avout::atom::Step::Read { sync: true });
    /// assert_eq!(m.path(), "/a");
    /// ```
    pub fn new(path: impl Into<String>, step: Step) -> Self {
        CasMachine {
            path: path.into(),
            step,
            phase: Phase::Start,
            outbox: Outbox::default(),
            output: None,
            recovered: false,
            planted: Bugs::NONE,
        }
    }

    /// The same machine with `planted` bugs on (none by default; see [`crate::planted`]).
    ///
    /// ```
    /// use avout::atom::{CasMachine, Step};
    /// let m = CasMachine::new("/a", Step::Read { sync: true }).planted(avout::planted::Bugs::NONE);
    /// assert_eq!(m.path(), "/a");
    /// ```
    pub fn planted(mut self, planted: Bugs) -> Self {
        self.planted = planted;
        self
    }

    /// The node's path.
    ///
    /// ```
    /// let m = avout::atom::CasMachine::new("/b", avout::atom::Step::Read { sync: false });
    /// assert_eq!(m.path(), "/b");
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the outcome of the write was decided by a read after a connection loss
    /// (whichever way it was decided).
    ///
    /// ```
    /// let m = avout::atom::CasMachine::new("/b", avout::atom::Step::Read { sync: false });
    /// assert!(!m.recovered());
    /// ```
    pub fn recovered(&self) -> bool {
        self.recovered
    }

    fn finish(&mut self, result: Result<Outcome, StepError>) {
        self.phase = Phase::Done;
        self.outbox.clear();
        self.output = Some(result);
    }

    fn start(&mut self) {
        match self.step.clone() {
            Step::Read { sync } => self.read(sync, false),
            Step::Create { data, .. } => {
                let token = self.outbox.send(Request::Create {
                    path: self.path.clone(),
                    data,
                    options: CreateOptions::default(),
                });
                self.phase = Phase::Writing(token);
            }
            Step::Set { data, version, .. } => {
                let token = self.outbox.send(Request::SetData {
                    path: self.path.clone(),
                    data,
                    version: (!self.planted.contains(Bug::AtomUncheckedWrite)).then_some(version),
                });
                self.phase = Phase::Writing(token);
            }
        }
    }

    fn read(&mut self, sync: bool, recovering: bool) {
        let sync = sync.then(|| {
            self.outbox.send(Request::Sync {
                path: self.path.clone(),
            })
        });
        let get = self.outbox.send(Request::GetData {
            path: self.path.clone(),
            watch: false,
        });
        self.phase = Phase::Reading {
            sync,
            get,
            recovering,
        };
    }

    /// The writer, write id and the version the write was conditional on (`-1` for a
    /// create).
    fn write(&self) -> Option<(u64, u64, i32, Option<i64>)> {
        match self.step {
            Step::Read { .. } => None,
            Step::Create {
                writer, write_id, ..
            } => Some((writer, write_id, -1, None)),
            Step::Set {
                writer,
                write_id,
                version,
                czxid,
                ..
            } => Some((writer, write_id, version, Some(czxid))),
        }
    }

    fn pause(&mut self, now: Millis, recovering: bool) {
        self.phase = Phase::Paused {
            until: now.plus(RETRY_PAUSE_MS),
            recovering,
        };
    }

    fn fail(&mut self, now: Millis, error: Error, recovering: bool) {
        match error.class() {
            ErrorClass::Indeterminate => self.pause(now, recovering),
            ErrorClass::Rejected | ErrorClass::SessionLost => self.finish(Err(error.into())),
        }
    }

    /// Decides from a recovery read whether our write took effect.
    fn decide(&mut self, current: Option<Versioned>) {
        let (writer, write_id, expected, czxid) = self.write().expect("only writes recover");
        self.recovered = true;
        let Some(node) = current else {
            // Deleted (or never created): whatever we wrote is not there to be read.
            coverage::reach(Mark::AtomWriteLostNotApplied);
            return self.finish(Ok(Outcome::NotApplied { current: None }));
        };
        let unknown = StepError::Unknown {
            path: self.path.clone(),
            expected,
            found: node.stat.version,
        };
        if czxid.is_some_and(|c| c != node.stat.czxid) {
            coverage::reach(Mark::AtomWriteLostUnknown);
            return self.finish(Err(unknown));
        }
        match envelope::took_effect(writer, write_id, expected, node.stat.version, &node.data) {
            Some(true) => {
                coverage::reach(Mark::AtomWriteLostApplied);
                self.finish(Ok(Outcome::Applied {
                    current: node,
                    recovered: true,
                }))
            }
            Some(false) => {
                coverage::reach(Mark::AtomWriteLostNotApplied);
                self.finish(Ok(Outcome::NotApplied {
                    current: Some(node),
                }))
            }
            None => {
                coverage::reach(Mark::AtomWriteLostUnknown);
                self.finish(Err(unknown))
            }
        }
    }
}

impl Machine for CasMachine {
    type Output = Result<Outcome, StepError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            Phase::Writing(w) if w == token => match reply {
                Ok(Reply::Set(stat) | Reply::Created { stat, .. }) => {
                    let data = match &mut self.step {
                        Step::Set { data, .. } | Step::Create { data, .. } => std::mem::take(data),
                        Step::Read { .. } => unreachable!("a read does not write"),
                    };
                    self.finish(Ok(Outcome::Applied {
                        current: Versioned { data, stat },
                        recovered: false,
                    }));
                }
                // Refused: nothing written. The server that refused has applied the change
                // that made us lose, so a plain read sees it.
                Err(Error::BadVersion { .. } | Error::NodeExists { .. }) => self.read(false, false),
                // Deleted under us: the read reports it absent.
                Err(Error::NoNode { .. }) if matches!(self.step, Step::Set { .. }) => {
                    self.read(false, false)
                }
                Err(e) => self.fail(now, e, true),
                Ok(other) => unreachable!("a write replied {other:?}"),
            },
            Phase::Reading {
                sync: Some(sync),
                recovering,
                ..
            } if sync == token => {
                if let Err(e) = reply {
                    self.fail(now, e, recovering);
                }
            }
            Phase::Reading {
                get, recovering, ..
            } if get == token => {
                let current = match reply {
                    Ok(Reply::Data { data, stat }) => Some(Versioned { data, stat }),
                    Err(Error::NoNode { .. }) => None,
                    Err(e) => return self.fail(now, e, recovering),
                    Ok(other) => unreachable!("a read replied {other:?}"),
                };
                if recovering {
                    self.decide(current);
                } else {
                    self.finish(Ok(Outcome::NotApplied { current }));
                }
            }
            // Replies to requests superseded by a retry.
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, _token: Token, _event: WatchedEvent) {}

    fn handle_session(&mut self, now: Millis, state: SessionState) {
        if self.phase == Phase::Start {
            return match state.terminal_error() {
                Some(error) => self.finish(Err(error.into())),
                None => self.start(),
            };
        }
        if let Some(error) = state.terminal_error()
            && self.phase != Phase::Done
        {
            return self.finish(Err(error.into()));
        }
        if state == SessionState::Connected
            && let Phase::Paused { recovering, .. } = self.phase
        {
            self.resume(now, recovering);
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Phase::Paused { until, recovering } = self.phase
            && now >= until
        {
            self.resume(now, recovering);
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        match self.phase {
            Phase::Paused { until, .. } => Some(until),
            _ => None,
        }
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.output.take()
    }
}

impl CasMachine {
    fn resume(&mut self, _now: Millis, recovering: bool) {
        match self.step {
            // A plain read is idempotent: read again (with the sync, if asked).
            Step::Read { sync } => self.read(sync, false),
            // Deciding whether our write landed needs a read at least as new as it.
            _ => self.read(true, recovering),
        }
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
