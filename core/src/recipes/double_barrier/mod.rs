//! A distributed double barrier (ZooKeeper's double-barrier recipe): a fixed number of
//! processes enter together and leave together.
//!
//! # Layout
//!
//! ```text
//! <barrier>/p-<GUID>   one ephemeral node per participant present
//! <barrier>/ready      created by the participant that completes the count
//! ```
//!
//! # The algorithm
//!
//! **Enter** sends three requests together: `exists(ready)` with a watch, the create of our
//! ephemeral node, and the children read (ZooKeeper applies them in order, so the read sees
//! our node). If `ready` exists, or the children now number the count, we are in (creating
//! `ready` in the second case, which wakes everyone waiting); otherwise we wait for the watch.
//! Waiting participants wake only when it is time to go.
//!
//! **Leave** is the recipe's lowest/highest protocol: list the participant nodes; none left,
//! or ours and `ready` both gone (the round is over: a node there now is a newcomer's, who
//! never entered it): done; only ours: delete it (with `ready`, atomically, so the path can be
//! used again) and go;
//! ours is the lowest: watch the highest and look again when it goes; otherwise delete ours and
//! watch the lowest. Each deletion wakes one process, except the last, which wakes the rest.
//!
//! Participant nodes are ephemeral, so a participant that dies inside the barrier does not
//! block the others from leaving. A path can be used for a new round once every participant
//! of the previous one has left (a newcomer earlier would see the old `ready` node).
//!
//! # Connection loss, session expiry, cancellation
//!
//! - Connection loss: every step is idempotent (our node's name holds our GUID, so `NodeExists`
//!   on it means a create of ours went through); the step is redone after reconnecting.
//! - Session expiry ends enter or leave with [`BarrierError::SessionLost`]; our node is gone
//!   with the session, so the others count us out (or as left). A participant is its node,
//!   so it is not re-created on the client's next session: call
//!   [`enter`](DoubleBarrier::enter) again on the same handle to take part in a later round.
//! - Dropping an enter future, or a [`DoubleBarrierGuard`] without [`leave`](DoubleBarrierGuard::leave),
//!   deletes our node in the background.

use crate::client::Session;
use crate::machine::{
    Machine, Millis, Outbox, Reply, Request, Resumed, Stall, Token, drive, idempotent,
};
use crate::planted::{Bug, Bugs};
use crate::{Client, CreateMode, CreateOptions, Error, SessionState, WatchedEvent, path};

use super::barrier::BarrierError;
use super::once::{guid_hex, spawn_cleanup};

mod leave;
pub use leave::LeaveMachine;

const PARTICIPANT: &str = "p-";
const READY: &str = "ready";

/// Participant names, sorted.
fn participants(children: Vec<String>) -> Vec<String> {
    let mut names: Vec<String> = children
        .into_iter()
        .filter(|c| c.starts_with(PARTICIPANT))
        .collect();
    names.sort();
    names
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum EnterPhase {
    /// The ready check, our create and the children read, sent together.
    Entering {
        exists: Token,
        create: Token,
        list: Token,
        ready: Option<bool>,
        created: bool,
        present: Option<usize>,
        /// The watch armed by `exists` fired before the decision: the driver hands watch
        /// events over before replies, so `ready`'s creation can be heard before the listing
        /// made ahead of it.
        woken: bool,
    },
    /// Creating the barrier node's ancestors, then entering again.
    Ensuring {
        last: Token,
    },
    /// Creating `ready`.
    Readying {
        create: Token,
    },
    /// Waiting for `ready` (the watch armed by `exists`).
    Waiting {
        exists: Token,
    },
    /// Re-checking `ready` after an event.
    Checking {
        exists: Token,
    },
    /// Waiting to redo the entry after a connection loss (see `stall`).
    Stalled,
    Done,
}

/// Enters a double barrier; see the [module docs](self).
///
/// ```
/// use avout::machine::{Machine, Millis};
/// use avout::recipes::double_barrier::EnterMachine;
/// use avout::SessionState;
///
/// let mut m = EnterMachine::new("/round", 3, 0x42);
/// m.handle_session(Millis(0), SessionState::Connected);
/// let sent: Vec<_> = std::iter::from_fn(|| m.poll_request()).collect();
/// assert_eq!(sent.len(), 3, "exists(ready), create, children: one round trip");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EnterMachine {
    barrier: String,
    node: String,
    count: usize,
    ensured: bool,
    phase: EnterPhase,
    stall: Stall<()>,
    outbox: Outbox<Result<(), BarrierError>>,
    planted: Bugs,
}

impl EnterMachine {
    /// A machine entering the barrier at `barrier` for `count` participants, with a node
    /// named by `guid`.
    ///
    /// ```
    /// let m = avout::recipes::double_barrier::EnterMachine::new("/round", 2, 1);
    /// assert!(m.node().starts_with("/round/p-"));
    /// ```
    pub fn new(barrier: &str, count: usize, guid: u128) -> Self {
        EnterMachine {
            barrier: barrier.to_owned(),
            node: path::join(barrier, &format!("{PARTICIPANT}{}", guid_hex(guid))),
            count,
            ensured: false,
            phase: EnterPhase::Done,
            stall: Stall::default(),
            outbox: Outbox::default(),
            planted: Bugs::NONE,
        }
    }

    /// The same machine with `planted` bugs on (none by default; see [`crate::planted`]).
    ///
    /// ```
    /// let m = avout::recipes::double_barrier::EnterMachine::new("/r", 2, 1)
    ///     .planted(avout::planted::Bugs::NONE);
    /// assert!(m.node().starts_with("/r/p-"));
    /// ```
    pub fn planted(mut self, planted: Bugs) -> Self {
        self.planted = planted;
        self
    }

    /// The planted ZOOKEEPER-1011: the tutorial's barrier, which counts the participants on
    /// every change of them and never looks at `ready`.
    fn counts_only(&self) -> bool {
        self.planted.contains(Bug::Zookeeper1011)
    }

    /// Our participant node's path.
    ///
    /// ```
    /// let m = avout::recipes::double_barrier::EnterMachine::new("/r", 2, 1);
    /// assert_eq!(m.node(), "/r/p-00000000000000000000000000000001");
    /// ```
    pub fn node(&self) -> &str {
        &self.node
    }

    fn ready_path(&self) -> String {
        path::join(&self.barrier, READY)
    }

    fn enter(&mut self) {
        let exists = self.outbox.send(Request::Exists {
            path: self.ready_path(),
            watch: true,
        });
        let create = self.outbox.send(Request::Create {
            path: self.node.clone(),
            data: Vec::new(),
            options: CreateOptions::new(CreateMode::Ephemeral),
        });
        let list = self.outbox.send(Request::GetChildren {
            path: self.barrier.clone(),
            watch: self.counts_only(),
        });
        self.phase = EnterPhase::Entering {
            exists,
            create,
            list,
            ready: None,
            created: false,
            present: None,
            woken: false,
        };
    }

    fn finish(&mut self, result: Result<(), BarrierError>) {
        self.phase = EnterPhase::Done;
        self.stall.cancel();
        self.outbox.finish(result);
    }

    fn failed(&mut self, now: Millis, error: Error) {
        if error.is_indeterminate() {
            self.stalled(now);
        } else {
            self.finish(Err(error.into()));
        }
    }

    /// Redoes the entry on a reconnection or after the pause.
    fn stalled(&mut self, now: Millis) {
        self.phase = EnterPhase::Stalled;
        self.stall.start((), now);
    }

    fn create_ready(&mut self) {
        let create = self.outbox.send(Request::Create {
            path: self.ready_path(),
            data: Vec::new(),
            options: CreateOptions::default(),
        });
        self.phase = EnterPhase::Readying { create };
    }

    fn decide(&mut self) {
        let EnterPhase::Entering {
            exists,
            list,
            ready: Some(ready),
            created: true,
            present: Some(present),
            woken,
            ..
        } = self.phase
        else {
            return;
        };
        if self.counts_only() {
            if present >= self.count {
                self.finish(Ok(()));
            } else {
                // Woken by the listing's child watch.
                self.phase = EnterPhase::Waiting { exists: list };
            }
        } else if ready {
            self.finish(Ok(()));
        } else if present >= self.count {
            self.create_ready();
        } else if woken {
            self.check_ready();
        } else {
            self.phase = EnterPhase::Waiting { exists };
        }
    }

    /// Looks at `ready` again (re-arming its watch).
    fn check_ready(&mut self) {
        let exists = self.outbox.send(Request::Exists {
            path: self.ready_path(),
            watch: true,
        });
        self.phase = EnterPhase::Checking { exists };
    }
}

impl Machine for EnterMachine {
    type Output = Result<(), BarrierError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            EnterPhase::Entering { exists, .. } if token == exists => match reply {
                Ok(Reply::Exists(stat)) => {
                    if let EnterPhase::Entering { ready, .. } = &mut self.phase {
                        *ready = Some(stat.is_some());
                    }
                    self.decide();
                }
                Err(e) => self.failed(now, e),
                Ok(other) => unreachable!("exists replied {other:?}"),
            },
            EnterPhase::Entering { create, .. } if token == create => match reply {
                // The node's name holds our GUID: if it exists, an earlier create of ours
                // went through.
                Ok(_) | Err(Error::NodeExists { .. }) => {
                    if let EnterPhase::Entering { created, .. } = &mut self.phase {
                        *created = true;
                    }
                    self.decide();
                }
                Err(Error::NoNode { .. }) if !self.ensured => {
                    self.ensured = true;
                    let last = self.outbox.send_ancestors(&self.barrier);
                    self.phase = EnterPhase::Ensuring { last };
                }
                Err(e) => self.failed(now, e),
            },
            EnterPhase::Entering { list, .. } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => {
                    if let EnterPhase::Entering { present, .. } = &mut self.phase {
                        *present = Some(participants(children).len());
                    }
                    self.decide();
                }
                // The create's reply decides (a missing barrier node fails it too).
                Err(Error::NoNode { .. }) => {}
                Err(e) => self.failed(now, e),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            EnterPhase::Ensuring { last } if token == last => match reply {
                Ok(_) | Err(Error::NodeExists { .. }) => self.enter(),
                // An ancestor's create was lost: let the next create find out and retry.
                Err(Error::NoNode { .. }) => {
                    self.ensured = false;
                    self.enter();
                }
                // The ancestors may not have been made: a `NoNode` on our create after the
                // pause must ensure them again rather than end the enter.
                Err(e) if e.is_indeterminate() => {
                    self.ensured = false;
                    self.failed(now, e);
                }
                Err(e) => self.failed(now, e),
            },
            EnterPhase::Readying { create } if token == create => match reply {
                Ok(_) | Err(Error::NodeExists { .. }) => self.finish(Ok(())),
                // Creating a fixed path is idempotent: NodeExists next time is success.
                Err(e) if e.is_indeterminate() => self.stalled(now),
                Err(e) => self.finish(Err(e.into())),
            },
            EnterPhase::Checking { exists } if token == exists => match reply {
                Ok(Reply::Exists(Some(_))) => self.finish(Ok(())),
                Ok(Reply::Exists(None)) => self.phase = EnterPhase::Waiting { exists },
                Err(e) => self.failed(now, e),
                Ok(other) => unreachable!("exists replied {other:?}"),
            },
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, token: Token, _event: WatchedEvent) {
        if self.phase == (EnterPhase::Waiting { exists: token }) && self.counts_only() {
            return self.enter();
        }
        match &mut self.phase {
            EnterPhase::Waiting { exists } if *exists == token => self.check_ready(),
            EnterPhase::Entering { exists, woken, .. } if *exists == token => *woken = true,
            _ => {}
        }
    }

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        let waiting = matches!(self.phase, EnterPhase::Waiting { .. });
        match self.outbox.session_stalled(state, &mut self.stall) {
            Resumed::Start => self.enter(),
            Resumed::Ended(error) => self.finish(Err(error.into())),
            Resumed::Redo(()) => self.enter(),
            // The planted Curator GH-1290: the reconnection wakes the waiter, which takes any
            // wake-up for the barrier being ready.
            Resumed::Quiet
                if waiting
                    && state == SessionState::Connected
                    && self.planted.contains(Bug::CuratorGh1290) =>
            {
                self.finish(Ok(()))
            }
            Resumed::Quiet => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.stall.due(now).is_some() {
            self.enter();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.stall.deadline()
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.outbox.take_output()
    }
}

/// A double barrier for a fixed number of participants; see the [module docs](self).
///
/// ```no_run
/// use avout::recipes::double_barrier::DoubleBarrier;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::recipes::barrier::BarrierError> {
/// let round = DoubleBarrier::new(client, "/rounds/7", 3)?;
/// let inside = round.enter().await?; // returns when all 3 have entered
/// // ... compute ...
/// inside.leave().await?;             // returns when all 3 have left
/// # Ok(()) }
/// ```
pub struct DoubleBarrier {
    client: Client,
    path: String,
    count: usize,
    planted: Bugs,
}

impl Clone for DoubleBarrier {
    fn clone(&self) -> Self {
        DoubleBarrier {
            client: self.client.clone(),
            path: self.path.clone(),
            count: self.count,
            planted: self.planted,
        }
    }
}

impl std::fmt::Debug for DoubleBarrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoubleBarrier")
            .field("path", &self.path)
            .field("count", &self.count)
            .finish()
    }
}

impl DoubleBarrier {
    /// A handle on the double barrier at `path` for `count` participants.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// assert!(avout::recipes::double_barrier::DoubleBarrier::new(client, "/r", 0).is_err());
    /// # }
    /// ```
    pub fn new(
        client: &Client,
        path: impl Into<String>,
        count: usize,
    ) -> Result<Self, BarrierError> {
        let path = path.into();
        path::validate_path(&path, false)?;
        if count == 0 {
            return Err(Error::BadArguments(
                "a double barrier needs at least one participant".into(),
            )
            .into());
        }
        Ok(DoubleBarrier {
            client: client.clone(),
            path,
            count,
            planted: Bugs::NONE,
        })
    }

    /// The same handle with `bugs` planted in its entries (none by default; see
    /// [`crate::planted`]).
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// use avout::recipes::double_barrier::DoubleBarrier;
    /// let b = DoubleBarrier::new(client, "/r", 3).unwrap().planted(avout::planted::Bugs::NONE);
    /// # }
    /// ```
    pub fn planted(mut self, bugs: Bugs) -> Self {
        self.planted = bugs;
        self
    }

    /// Enters the barrier: returns once `count` participants have entered.
    ///
    /// ```no_run
    /// # async fn demo(b: avout::recipes::double_barrier::DoubleBarrier) -> Result<(), avout::recipes::barrier::BarrierError> {
    /// let guard = b.enter().await?;
    /// guard.leave().await?;
    /// # Ok(()) }
    /// ```
    pub async fn enter(&self) -> Result<DoubleBarrierGuard, BarrierError> {
        let zk = self.client.current_session().await?;
        let mut entering = Entering {
            machine: EnterMachine::new(&self.path, self.count, zk.new_guid()).planted(self.planted),
            zk: Some(zk.clone()),
        };
        let result = drive(&*zk, &mut entering.machine).await;
        entering.zk = None;
        result?;
        Ok(DoubleBarrierGuard {
            zk,
            path: self.path.clone(),
            node: entering.machine.node().to_owned(),
            left: false,
        })
    }
}

/// An entry in progress; if dropped unfinished, removes our node.
struct Entering {
    machine: EnterMachine,
    zk: Option<Session>,
}

impl Drop for Entering {
    fn drop(&mut self) {
        if let Some(zk) = self.zk.take() {
            delete_in_background(zk, self.machine.node().to_owned());
        }
    }
}

fn delete_in_background(zk: Session, node: String) {
    spawn_cleanup("removing a double-barrier node", async move {
        let zk = &*zk;
        match idempotent(zk, || zk.delete(&node, None)).await {
            Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    });
}

/// Proof of being inside a [`DoubleBarrier`]. [`leave`](Self::leave) waits for everyone;
/// dropping it deletes our node without waiting.
#[must_use = "dropping the guard leaves without waiting for the others"]
pub struct DoubleBarrierGuard {
    zk: Session,
    path: String,
    node: String,
    left: bool,
}

impl std::fmt::Debug for DoubleBarrierGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoubleBarrierGuard")
            .field("node", &self.node)
            .finish()
    }
}

impl DoubleBarrierGuard {
    /// Our participant node.
    ///
    /// ```no_run
    /// # fn demo(g: avout::recipes::double_barrier::DoubleBarrierGuard) {
    /// println!("{}", g.node());
    /// # }
    /// ```
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Leaves the barrier: returns once every participant has left (or died).
    ///
    /// ```no_run
    /// # async fn demo(g: avout::recipes::double_barrier::DoubleBarrierGuard) -> Result<(), avout::recipes::barrier::BarrierError> {
    /// g.leave().await?;
    /// # Ok(()) }
    /// ```
    pub async fn leave(mut self) -> Result<(), BarrierError> {
        let result = drive(&*self.zk, &mut LeaveMachine::new(&self.path, &self.node)).await;
        // Finished, successfully or not: our node is gone (deleted, or with the session), or a
        // request was refused and deleting it again would be refused too.
        self.left = result.is_ok();
        result
    }
}

impl Drop for DoubleBarrierGuard {
    fn drop(&mut self) {
        if !self.left {
            delete_in_background(self.zk.clone(), std::mem::take(&mut self.node));
        }
    }
}

#[cfg(test)]
mod tests;
