//! Reading a ref at a read point: [`ReadMachine`].
//!
//! The ref's node holds its newest committed value; the node's `mzxid` is that value's commit
//! point. If it is at or before the read point, that is the answer: one round trip, together
//! with the `sync` and the clock read that fix the read point on a try's first read. If a
//! commit landed after the read point, the answer is in the ref's history: the committed value
//! with the largest commit point (history node `czxid`) at or before the read point. If that
//! value was trimmed away, the read is a *read fault*: the try is retried with a newer read
//! point (and the fault counted).

use crate::machine::{Machine, Millis, Reply, Request, Token};
use crate::{Error, SessionState, Stat, WatchedEvent};

use super::Halt;
use super::io::{Batch, Io, SessionStep, Verdict, verdict};

/// A value read, and where it stands in the ref's history.
///
/// ```
/// let r = avout::stm::mvcc::ReadOut { value: b"1".to_vec(), version: 0, commit_point: 5, read_point: 9 };
/// assert!(r.commit_point <= r.read_point);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReadOut {
    /// The value's bytes.
    pub value: Vec<u8>,
    /// The ref node's data version when it held this value (older history values: the
    /// version in the history node's name).
    pub version: i32,
    /// The value's commit point (a zxid).
    pub commit_point: i64,
    /// The read point the value was resolved against (fixed by this read when asked to).
    pub read_point: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Start,
    /// `sync`, the clock (if the read point is to be fixed) and the ref node.
    First {
        batch: Batch,
        clock: bool,
    },
    /// The history's children.
    Listing {
        batch: Batch,
        point: i64,
    },
    /// Every history node.
    Fetching {
        batch: Batch,
        names: Vec<String>,
        point: i64,
    },
    Done,
}

/// Reads one ref at a read point; see the module docs.
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::stm::mvcc::ReadMachine;
/// let mut m = ReadMachine::new("/stm/refs/a", "/stm/refs/a/history", "/stm/stm/history", None, true);
/// m.handle_session(Millis(0), avout::SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::Sync { .. }))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReadMachine {
    node: String,
    history: String,
    points: String,
    point: Option<i64>,
    check_point: bool,
    /// Whether fixing the read point sends a `sync` first.
    synced: bool,
    /// Whether a commit after the read point is a conflict rather than a history read.
    strict: bool,
    phase: Phase,
    io: Io,
    output: Option<Result<ReadOut, Halt>>,
}

impl ReadMachine {
    /// Reads the ref whose node is `node` (history under `history`) at `point`, or, with
    /// `None`, fixes the read point first from the clock at `points` (the newest commit
    /// point). `check_point: false` is the planted bug that reads the newest value whatever
    /// the read point.
    ///
    /// ```
    /// let m = avout::stm::mvcc::ReadMachine::new("/r/a", "/r/a/history", "/s/history", Some(3), true);
    /// assert!(format!("{m:?}").contains("/r/a"));
    /// ```
    pub fn new(
        node: &str,
        history: &str,
        points: &str,
        point: Option<i64>,
        check_point: bool,
    ) -> Self {
        ReadMachine {
            node: node.to_owned(),
            history: history.to_owned(),
            points: points.to_owned(),
            point,
            check_point,
            synced: true,
            strict: false,
            phase: Phase::Start,
            io: Io::new(),
            output: None,
        }
    }

    /// Fixes the read point without a `sync`: from whatever the session's server has applied,
    /// which may trail commits already acknowledged elsewhere. Only for a read the try then
    /// validates by a write of its own: see [`TryMachine::read_for_write`](super::TryMachine::read_for_write).
    ///
    /// ```
    /// use avout::machine::{Machine, Millis, Request};
    /// let mut m = avout::stm::mvcc::ReadMachine::new("/r/a", "/r/a/history", "/s/history", None, true)
    ///     .unsynced();
    /// m.handle_session(Millis(0), avout::SessionState::Connected);
    /// assert!(matches!(m.poll_request(), Some((_, Request::Exists { .. }))));
    /// ```
    pub fn unsynced(mut self) -> Self {
        self.synced = false;
        self
    }

    /// Answers a ref committed after the read point with [`Halt::Conflict`] instead of its
    /// older value from the history: for a try whose read point may be stale, where the value
    /// at that point may be older than what the transaction must see.
    ///
    /// ```
    /// let m = avout::stm::mvcc::ReadMachine::new("/r/a", "/r/a/history", "/s/history", Some(3), true)
    ///     .strict();
    /// assert!(format!("{m:?}").contains("strict: true"));
    /// ```
    pub fn strict(mut self) -> Self {
        self.strict = true;
        self
    }

    fn finish(&mut self, out: Result<ReadOut, Halt>) {
        self.phase = Phase::Done;
        self.io.clear();
        self.output = Some(out);
    }

    fn start(&mut self) {
        let mut batch = Batch::default();
        let clock = self.point.is_none();
        // The sync makes the clock read see every commit acknowledged before the read began
        // (a linearizable read point), at no extra round trip. A read at a point already
        // fixed needs none: the session's server has applied at least up to it (a session
        // never moves to a server behind what it has seen), and the value at a point does
        // not depend on what came after.
        if clock && self.synced {
            batch.push(
                &mut self.io,
                Request::Sync {
                    path: self.points.clone(),
                },
            );
        }
        if clock {
            batch.push(
                &mut self.io,
                Request::Exists {
                    path: self.points.clone(),
                    watch: false,
                },
            );
        }
        batch.push(
            &mut self.io,
            Request::GetData {
                path: self.node.clone(),
                watch: false,
            },
        );
        self.phase = Phase::First { batch, clock };
    }

    fn list(&mut self, point: i64) {
        let mut batch = Batch::default();
        batch.push(
            &mut self.io,
            Request::GetChildren {
                path: self.history.clone(),
                watch: false,
            },
        );
        self.phase = Phase::Listing { batch, point };
    }

    /// Redoes the current step after a connection loss (every request here is a read).
    fn redo(&mut self) {
        match self.phase.clone() {
            Phase::First { .. } => self.start(),
            Phase::Listing { point, .. } | Phase::Fetching { point, .. } => self.list(point),
            Phase::Start | Phase::Done => {}
        }
    }

    fn first(&mut self, replies: Vec<crate::Result<Reply>>, clock: bool) {
        let synced = usize::from(clock && self.synced);
        let mut it = replies.into_iter().skip(synced);
        let point = if clock {
            match it.next() {
                Some(Ok(Reply::Exists(Some(stat)))) => clock_point(&stat),
                Some(Ok(Reply::Exists(None))) | Some(Err(Error::NoNode { .. })) => {
                    return self.finish(Err(Halt::Zk(Error::NoNode {
                        path: self.points.clone(),
                    })));
                }
                Some(Err(e)) => return self.finish(Err(Halt::Zk(e))),
                other => unreachable!("exists replied {other:?}"),
            }
        } else {
            self.point.expect("a read point was given")
        };
        match it.next() {
            Some(Ok(Reply::Data { data, stat })) => {
                if stat.mzxid <= point || !self.check_point {
                    self.finish(Ok(ReadOut {
                        value: data,
                        version: stat.version,
                        commit_point: stat.mzxid,
                        read_point: point,
                    }));
                } else if self.strict {
                    crate::coverage::reach(crate::coverage::Mark::StmMvccStalePointConflict);
                    self.finish(Err(Halt::Conflict(Some(
                        crate::path::name(&self.node).to_owned(),
                    ))))
                } else {
                    self.list(point);
                }
            }
            // A server that has not caught up (no `sync` fixed this point) may not have the
            // ref yet although its creation was acknowledged to another session: not proof
            // that the ref does not exist. A point being fixed is fixed again, synced (a
            // retry would be a first try again, unsynced again); a point already fixed
            // cannot be, so the try gives up and its retry syncs.
            Some(Err(Error::NoNode { .. })) if clock && !self.synced => {
                crate::coverage::reach(crate::coverage::Mark::StmMvccStaleMissingRef);
                self.synced = true;
                self.start();
            }
            Some(Err(Error::NoNode { .. })) if self.strict => {
                crate::coverage::reach(crate::coverage::Mark::StmMvccStaleMissingRef);
                self.finish(Err(Halt::Conflict(Some(
                    crate::path::name(&self.node).to_owned(),
                ))))
            }
            Some(Err(Error::NoNode { .. })) => {
                self.finish(Err(Halt::NoRef(crate::path::name(&self.node).to_owned())))
            }
            Some(Err(e)) => self.finish(Err(Halt::Zk(e))),
            other => unreachable!("get_data replied {other:?}"),
        }
    }

    fn listed(&mut self, reply: crate::Result<Reply>, point: i64) {
        match reply {
            Ok(Reply::Children { children, .. }) => {
                let names: Vec<String> = super::layout::sorted_history(&children)
                    .into_iter()
                    .map(|(_, n)| n)
                    .collect();
                if names.is_empty() {
                    return self.finish(Err(Halt::ReadFault));
                }
                let mut batch = Batch::default();
                for n in &names {
                    batch.push(
                        &mut self.io,
                        Request::GetData {
                            path: crate::path::join(&self.history, n),
                            watch: false,
                        },
                    );
                }
                self.phase = Phase::Fetching {
                    batch,
                    names,
                    point,
                };
            }
            Err(Error::NoNode { .. }) => {
                self.finish(Err(Halt::NoRef(crate::path::name(&self.node).to_owned())))
            }
            Err(e) => self.finish(Err(Halt::Zk(e))),
            Ok(other) => unreachable!("children replied {other:?}"),
        }
    }

    fn fetched(&mut self, replies: Vec<crate::Result<Reply>>, names: Vec<String>, point: i64) {
        let mut best: Option<ReadOut> = None;
        for (reply, name) in replies.into_iter().zip(names) {
            match reply {
                Ok(Reply::Data { data, stat }) => {
                    if stat.czxid <= point
                        && best.as_ref().is_none_or(|b| stat.czxid > b.commit_point)
                    {
                        let version = super::layout::history_version(&name).unwrap_or(0) as i32;
                        best = Some(ReadOut {
                            value: data,
                            version,
                            commit_point: stat.czxid,
                            read_point: point,
                        });
                    }
                }
                // Trimmed since the listing: the value we need may have been it.
                Err(Error::NoNode { .. }) => return self.finish(Err(Halt::ReadFault)),
                Err(e) => return self.finish(Err(Halt::Zk(e))),
                Ok(other) => unreachable!("get_data replied {other:?}"),
            }
        }
        self.finish(best.ok_or(Halt::ReadFault));
    }
}

/// The newest commit point visible in the clock node's metadata: every commit deletes a
/// transaction point (moving `pzxid`) and creating a ref sets the node's data (`mzxid`).
pub(crate) fn clock_point(stat: &Stat) -> i64 {
    stat.pzxid.max(stat.mzxid)
}

impl Machine for ReadMachine {
    type Output = Result<ReadOut, Halt>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.io.poll()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        let batch = match &mut self.phase {
            Phase::First { batch, .. }
            | Phase::Listing { batch, .. }
            | Phase::Fetching { batch, .. } => batch,
            Phase::Start | Phase::Done => return,
        };
        if !batch.accept(token, reply) || !batch.complete() {
            return;
        }
        let replies = batch.take();
        match verdict(&replies) {
            Verdict::SessionLost(e) => return self.finish(Err(Halt::SessionLost(e))),
            Verdict::Indeterminate => return self.io.redo_later(now),
            Verdict::Replied => {}
        }
        match self.phase.clone() {
            Phase::First { clock, .. } => self.first(replies, clock),
            Phase::Listing { point, .. } => {
                let reply = replies.into_iter().next().expect("one request");
                self.listed(reply, point);
            }
            Phase::Fetching { names, point, .. } => self.fetched(replies, names, point),
            Phase::Start | Phase::Done => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, _token: Token, _event: WatchedEvent) {}

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.io.on_session(state, self.phase == Phase::Done) {
            SessionStep::Lost(e) => self.finish(Err(Halt::SessionLost(e))),
            SessionStep::Start => self.start(),
            SessionStep::Redo => self.redo(),
            SessionStep::Done | SessionStep::Carry => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if self.io.on_timer(now, self.phase == Phase::Done) {
            self.redo();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.io.redo_at
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.output.take()
    }
}
