//! Applying a non-idempotent `multi` exactly once, across connection losses.
//!
//! Several recipes end in one atomic write that must not happen twice: a queue producer's
//! sequential create, a group member's ephemeral node, a two-phase-commit site's join. After
//! a connection loss such a write may or may not have been applied, and resending it blindly
//! would enqueue an element twice or fail with `NodeExists` against ourselves. So each write
//! carries a *proof*: a node only this write creates, whose presence after the loss says the
//! write happened ([`Proof::OwnedEphemeral`]: an ephemeral owned by this session, typically
//! named with a GUID; [`Proof::Data`]: a node holding bytes only this writer uses). Because the
//! `multi` is atomic, proof present ⇔ write applied; the machine resends only when the proof
//! is absent, and ZooKeeper's per-session FIFO order guarantees that the lost request cannot
//! still be applied after the proof was looked up. The lookup follows a `sync`: after a
//! connection loss the session may be served by a follower that has not applied the write
//! yet, where the proof would look absent.
//!
//! # Connection loss, session expiry, cancellation
//!
//! - Connection loss: the machine waits for the session to reconnect (or a short pause),
//!   checks the proof and resends only if it is absent.
//! - Session expiry ends the machine with the session's error. An ephemeral proof dies with
//!   the session, so a write whose outcome was unknown at that moment stays unknown.
//! - Dropping the driving future abandons the machine; a write already sent still applies.

use crate::machine::{self, Machine, Millis, Reply, Request, Resumed, Stall, Token};
use crate::{Error, Op, OpResult, SessionState, WatchedEvent};

pub(crate) use crate::machine::ancestor_creates;

/// A GUID as it appears in node names: 32 lowercase hex digits.
pub(crate) fn guid_hex(guid: u128) -> String {
    format!("{guid:032x}")
}

/// Runs a cleanup in the background, for `Drop` impls that cannot wait for one.
pub(crate) fn spawn_cleanup(
    what: &'static str,
    cleanup: impl std::future::Future<Output = Result<(), Error>> + Send + 'static,
) {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => {
            crate::task::spawn(async move {
                if let Err(e) = cleanup.await {
                    tracing::warn!(error = %e, "{what} failed");
                }
            });
        }
        Err(_) => tracing::warn!("{what} skipped: dropped outside a tokio runtime"),
    }
}

/// How to tell, after a connection loss, whether the write was applied.
///
/// ```
/// use avout::recipes::once::Proof;
/// let p = Proof::OwnedEphemeral("/group/alice".into());
/// assert_eq!(p.path(), "/group/alice");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Proof {
    /// The write creates this ephemeral node: applied iff it exists owned by this session.
    OwnedEphemeral(String),
    /// The write puts these bytes, which no other writer uses, in this node: applied iff the
    /// node holds them. Otherwise the write is sent again, so it MUST carry a precondition
    /// that refuses it if the node was written since (a create of the node, or a versioned
    /// set): a write of ours that was applied and then overwritten is then refused, not
    /// repeated.
    Data(String, Vec<u8>),
}

impl Proof {
    /// The proof node's path.
    ///
    /// ```
    /// use avout::recipes::once::Proof;
    /// assert_eq!(Proof::Data("/tx/owner".into(), b"g".to_vec()).path(), "/tx/owner");
    /// ```
    pub fn path(&self) -> &str {
        match self {
            Proof::OwnedEphemeral(path) | Proof::Data(path, _) => path,
        }
    }
}

/// How a [`OnceMachine`] ended.
///
/// `Conflict` arises only with [`Proof::OwnedEphemeral`]; with [`Proof::Data`] a conflicting
/// write shows as the write's precondition failing (an error).
///
/// ```
/// use avout::recipes::once::Once;
/// assert_ne!(Once::Conflict, Once::Applied { results: None });
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Once {
    /// The write was applied exactly once. `results` are the `multi`'s results when its reply
    /// arrived, `None` when the write was recognised by its proof after a connection loss.
    Applied {
        /// The results of the `multi`, if its reply arrived.
        results: Option<Vec<OpResult>>,
    },
    /// The proof node exists but is another session's ephemeral: the write was not applied
    /// and cannot be.
    Conflict,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// The `multi` is in flight.
    Writing {
        multi: Token,
    },
    /// Creating missing parents, then writing again.
    Ensuring {
        last: Token,
    },
    /// Catching our server up with the leader before reading the proof.
    Syncing {
        sync: Token,
    },
    /// Reading the proof after a connection loss or a `NodeExists` on it.
    Proving {
        read: Token,
    },
    /// Waiting to redo the step in `stall` after a connection loss.
    Stalled,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Step {
    /// Look the proof up: a write is in doubt.
    Prove,
    /// Send the write: the previous one was refused, nothing is in doubt.
    Write,
}

/// Applies one `multi` exactly once; see the [module docs](self).
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::recipes::once::{OnceMachine, Proof};
/// use avout::{CreateMode, Op, SessionState};
///
/// let ops = vec![Op::create("/group/alice", b"up".to_vec(), CreateMode::Ephemeral)];
/// let mut m = OnceMachine::new(ops, Proof::OwnedEphemeral("/group/alice".into()), 7)
///     .create_parents("/group");
/// m.handle_session(Millis(0), SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::Multi(_)))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OnceMachine {
    ops: Vec<Op>,
    proof: Proof,
    parents: Option<String>,
    ensured: bool,
    cleanup: Option<String>,
    session: i64,
    phase: Phase,
    stall: Stall<Step>,
    outbox: machine::Outbox<Result<Once, Error>>,
}

impl OnceMachine {
    /// A machine applying `ops` once for session `session`, recognising an applied write by
    /// `proof` (which one of `ops` must create).
    ///
    /// ```
    /// use avout::recipes::once::{OnceMachine, Proof};
    /// let m = OnceMachine::new(vec![], Proof::OwnedEphemeral("/a".into()), 1);
    /// # let _ = m;
    /// ```
    pub fn new(ops: Vec<Op>, proof: Proof, session: i64) -> Self {
        OnceMachine {
            ops,
            proof,
            parents: None,
            ensured: false,
            cleanup: None,
            session,
            phase: Phase::Done,
            stall: Stall::default(),
            outbox: machine::Outbox::default(),
        }
    }

    /// If the write fails with `NoNode`, create `path` and its ancestors (once) and write
    /// again; without this, `NoNode` is returned.
    ///
    /// ```
    /// use avout::recipes::once::{OnceMachine, Proof};
    /// let m = OnceMachine::new(vec![], Proof::OwnedEphemeral("/g/a".into()), 1).create_parents("/g");
    /// # let _ = m;
    /// ```
    pub fn create_parents(mut self, path: impl Into<String>) -> Self {
        self.parents = Some(path.into());
        self
    }

    /// After the write is known applied, delete this node (the proof, typically) without
    /// waiting for the reply: if that delete is lost, an ephemeral proof goes with the session.
    ///
    /// ```
    /// use avout::recipes::once::{OnceMachine, Proof};
    /// let m = OnceMachine::new(vec![], Proof::OwnedEphemeral("/q/_r/g".into()), 1).cleanup("/q/_r/g");
    /// # let _ = m;
    /// ```
    pub fn cleanup(mut self, path: impl Into<String>) -> Self {
        self.cleanup = Some(path.into());
        self
    }

    /// Whether a write was sent whose outcome this machine has not learned.
    ///
    /// ```
    /// use avout::recipes::once::{OnceMachine, Proof};
    /// let m = OnceMachine::new(vec![], Proof::OwnedEphemeral("/a".into()), 1);
    /// assert!(!m.in_doubt());
    /// ```
    pub fn in_doubt(&self) -> bool {
        match self.phase {
            Phase::Writing { .. } | Phase::Syncing { .. } | Phase::Proving { .. } => true,
            Phase::Stalled => self.stall.step() == Some(&Step::Prove),
            Phase::Ensuring { .. } | Phase::Done => false,
        }
    }

    fn write(&mut self) {
        let multi = self.outbox.send(Request::Multi(self.ops.clone()));
        self.phase = Phase::Writing { multi };
    }

    /// Looks the proof up, after a `sync`: the session may have reconnected to a follower
    /// that has not applied our write yet, and reading "no proof" there would send the write
    /// a second time.
    fn prove(&mut self) {
        let sync = self.outbox.send(Request::Sync { path: "/".into() });
        self.phase = Phase::Syncing { sync };
    }

    fn read_proof(&mut self) {
        let read = match &self.proof {
            Proof::OwnedEphemeral(path) => self.outbox.send(Request::Exists {
                path: path.clone(),
                watch: false,
            }),
            Proof::Data(path, _) => self.outbox.send(Request::GetData {
                path: path.clone(),
                watch: false,
            }),
        };
        self.phase = Phase::Proving { read };
    }

    fn finish(&mut self, result: Result<Once, Error>) {
        let cleanup = match (&result, self.cleanup.clone()) {
            (Ok(Once::Applied { .. }), Some(cleanup)) => Some(cleanup),
            _ => None,
        };
        self.phase = Phase::Done;
        self.stall.cancel();
        self.outbox.finish(result);
        if let Some(cleanup) = cleanup {
            self.outbox.send(Request::Delete {
                path: cleanup,
                version: None,
            });
        }
    }

    fn stall(&mut self, now: Millis, error: Error) {
        if error.is_indeterminate() {
            self.pause(Step::Prove, now);
        } else {
            self.finish(Err(error));
        }
    }

    fn pause(&mut self, step: Step, now: Millis) {
        self.phase = Phase::Stalled;
        self.stall.start(step, now);
    }

    fn resume(&mut self, step: Step) {
        match step {
            Step::Prove => self.prove(),
            Step::Write => self.write(),
        }
    }

    fn proof_index(&self) -> Option<usize> {
        self.ops
            .iter()
            .position(|op| matches!(op, Op::Create { path, .. } if path == self.proof.path()))
    }
}

impl Machine for OnceMachine {
    type Output = Result<Once, Error>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            Phase::Writing { multi } if token == multi => match reply {
                Ok(Reply::Multi(results)) => self.finish(Ok(Once::Applied {
                    results: Some(results),
                })),
                Err(Error::Multi { index, source })
                    if matches!(*source, Error::NodeExists { .. })
                        && Some(index) == self.proof_index() =>
                {
                    // Ours from an earlier attempt, or someone else's: the proof says which.
                    self.prove();
                }
                Err(e)
                    if matches!(e.root(), Error::NoNode { .. })
                        && !self.ensured
                        && self.parents.is_some() =>
                {
                    self.ensured = true;
                    let parents = self.parents.clone().expect("checked");
                    let last = self.outbox.send_ancestors(&parents);
                    self.phase = Phase::Ensuring { last };
                }
                Err(e) => self.stall(now, e),
                Ok(other) => unreachable!("multi replied {other:?}"),
            },
            Phase::Ensuring { last } if token == last => match reply {
                Ok(_) | Err(Error::NodeExists { .. }) => self.write(),
                // An ancestor's create was lost (so this one found no parent), or this one's
                // outcome is unknown: nothing of ours is in doubt (the write was refused), so
                // write again, creating the parents again if it still finds none.
                Err(e) if matches!(e, Error::NoNode { .. }) || e.is_indeterminate() => {
                    self.ensured = false;
                    self.pause(Step::Write, now);
                }
                Err(e) => self.finish(Err(e)),
            },
            Phase::Syncing { sync } if token == sync => match reply {
                Ok(_) => self.read_proof(),
                Err(e) => self.stall(now, e),
            },
            Phase::Proving { read } if token == read => match (&self.proof, reply) {
                (Proof::OwnedEphemeral(_), Ok(Reply::Exists(Some(stat)))) => {
                    if stat.ephemeral_owner == self.session {
                        self.finish(Ok(Once::Applied { results: None }));
                    } else {
                        self.finish(Ok(Once::Conflict));
                    }
                }
                (Proof::Data(_, ours), Ok(Reply::Data { data, .. })) if data == *ours => {
                    self.finish(Ok(Once::Applied { results: None }))
                }
                // No proof: the write was not applied, and after this read it never will be
                // (the session's requests are applied in order), so it may be sent again; a
                // `Data` write's precondition refuses it if someone else wrote meanwhile.
                (Proof::OwnedEphemeral(_), Ok(Reply::Exists(None)))
                | (Proof::Data(..), Ok(Reply::Data { .. }) | Err(Error::NoNode { .. })) => {
                    self.write()
                }
                (_, Err(e)) => self.stall(now, e),
                (_, Ok(other)) => unreachable!("proof read replied {other:?}"),
            },
            // Replies to the parents' creates, and to a fire-and-forget cleanup.
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, _token: Token, _event: WatchedEvent) {}

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.outbox.session_stalled(state, &mut self.stall) {
            Resumed::Start => self.write(),
            Resumed::Ended(error) => self.finish(Err(error)),
            Resumed::Redo(step) => self.resume(step),
            Resumed::Quiet => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Some(step) = self.stall.due(now) {
            self.resume(step);
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
mod tests;
