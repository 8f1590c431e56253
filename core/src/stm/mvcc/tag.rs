//! Tagging a ref when a transaction first writes it, and barging: [`TagMachine`].
//!
//! Clojure takes a ref's write ownership when a transaction first writes it (`ref-set`,
//! `alter`; not `commute`); so does Mvcc, with the recipe's tag. The frontend's write hook
//! starts this machine and the body goes on: its requests travel with the body's next reads,
//! or with the commit's first burst, and its replies are handled then. In one round trip:
//! the transaction's point (`RUNNING`, on its first write) and the ref's tag (one `multi`:
//! one write), the ref's tags, the ref node (the *read-point check*: its newest commit must be at or before the read point,
//! or another transaction wrote it since this one's snapshot — a conflict) and the ref's
//! history (for trimming at commit).
//!
//! Another transaction's tag on the same ref names it, and its id starts with its age (the
//! read point of its first try), so who is older is known without reading anything:
//!
//! - an **older** transaction's tag is looked up by its point: `RUNNING` or `COMMITTING`, it
//!   owns the ref — this try is [`Halt::Blocked`]: its caller removes the try's nodes (the
//!   recipe's `RETRY`), waits until that point changes (at most the bail wait) and retries
//!   (Clojure's `blockAndBail`); gone, `KILLED` or foreign, the tag is stale and ignored;
//! - a **younger** transaction is *barged* once this one has run for BARGE-WAIT: a
//!   compare-and-set of its point from `RUNNING` (version 0) to `KILLED`, sent at once (no read
//!   first, so the barge races the victim's own move to `COMMITTING` fairly). A point that has
//!   moved on is looked up: `COMMITTING` is never killed (this try is blocked by it).
//!   Before BARGE-WAIT, younger tags are looked up and block like older ones.
//!
//! The victim learns it was barged when its own compare-and-set to `COMMITTING` fails.
//!
//! A reply lost with the connection does not give the try up: once the session is back the
//! step is sent again. The creates then find our own nodes if the first sending applied (the
//! `multi` is all or nothing, and the names are this try's alone), and a barge finds its
//! victim no longer `RUNNING` at version 0 and looks at it. Before, the whole try started
//! over, and a transaction of several writes rarely finished while elections kept breaking
//! connections (`scenarios/known-failures/`).
//! Tags order who may proceed, which keeps older transactions from starving; correctness does
//! not rest on them: the commit `multi` is conditional on each written ref's version read here.

use std::collections::BTreeMap;

use crate::coverage::{self, Mark};
use crate::machine::{Machine, Millis, Reply, Request, Token};
use crate::{CreateMode, CreateOptions, Error, Op, SessionState, WatchedEvent};

use super::Halt;
use super::io::{Batch, Io, SessionStep, Verdict, verdict};
use super::layout::{Layout, State};

/// What tagging learnt about one written ref.
///
/// ```
/// let b = avout::stm::mvcc::Base { name: "a".into(), value: vec![], version: 2, history: vec![] };
/// assert_eq!(b.version, 2);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Base {
    /// The ref.
    pub name: String,
    /// Its newest committed value (the value before this commit).
    pub value: Vec<u8>,
    /// The ref node's version: the commit is conditional on it.
    pub version: i32,
    /// The history's node names.
    pub history: Vec<String>,
}

/// How tagging went.
///
/// ```
/// let t = avout::stm::mvcc::Tagged { bases: vec![], barged: 1 };
/// assert_eq!(t.barged, 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tagged {
    /// One entry per written ref, in the order given.
    pub bases: Vec<Base>,
    /// How many younger transactions this one barged.
    pub barged: u32,
}

/// Whom a transaction is: its id, its age and its read point.
///
/// ```
/// let me = avout::stm::mvcc::Me { txid: "t-1".into(), age: 4, read_point: 9 };
/// assert!(me.age <= me.read_point);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Me {
    /// The try's transaction id (its point's name).
    pub txid: String,
    /// The read point of the transaction's first try: smaller is older (ties: by id).
    pub age: i64,
    /// This try's read point.
    pub read_point: i64,
}

/// Barging policy for one tagging step.
///
/// ```
/// let b = avout::stm::mvcc::Barging { may_barge: true, barge_committing: false };
/// assert!(b.may_barge);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Barging {
    /// Whether BARGE-WAIT has passed since the transaction started.
    pub may_barge: bool,
    /// The planted bug: barge `COMMITTING` transactions too.
    pub barge_committing: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Start,
    Tagging(Batch),
    /// Reading the points of other transactions' tags.
    Looking {
        batch: Batch,
        others: Vec<String>,
        /// Whether the younger ones are still to be dealt with afterwards.
        then_younger: bool,
    },
    /// Killing younger running transactions.
    Barging {
        batch: Batch,
        victims: Vec<String>,
    },
    Done,
}

/// Tags the written refs and barges; see the module docs.
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::stm::mvcc::{Barging, Me, TagMachine};
/// let me = Me { txid: "t-1".into(), age: 1, read_point: 1 };
/// let barging = Barging { may_barge: false, barge_committing: false };
/// let mut m = TagMachine::new("/s", me, vec!["a".into()], barging);
/// m.handle_session(Millis(0), avout::SessionState::Connected);
/// // The point and the first tag, in one `multi`.
/// assert!(matches!(m.poll_request(), Some((_, Request::Multi(ops))) if ops.len() == 2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TagMachine {
    layout: Layout,
    me: Me,
    writes: Vec<String>,
    barging: Barging,
    bases: Vec<Base>,
    /// Other transactions' ids and the refs they tagged (the first one, for messages).
    others: BTreeMap<String, String>,
    barged: u32,
    /// Younger transactions' tags, dealt with once no older one blocks.
    younger: Vec<String>,
    persistent: bool,
    /// Whether this machine creates the transaction's point (its first write).
    with_point: bool,
    /// The tagging was sent again after a connection loss: its creates may have applied the
    /// first time, so our own node already existing is no error.
    redone: bool,
    phase: Phase,
    io: Io,
    output: Option<Result<Tagged, Halt>>,
}

impl TagMachine {
    /// Tags the refs `writes` (sorted names) of the STM rooted at `root` for `me`.
    ///
    /// ```
    /// use avout::stm::mvcc::{Barging, Me, TagMachine};
    /// let me = Me { txid: "t-1".into(), age: 1, read_point: 1 };
    /// let b = Barging { may_barge: true, barge_committing: false };
    /// let _ = TagMachine::new("/s", me, vec![], b);
    /// ```
    pub fn new(root: &str, me: Me, writes: Vec<String>, barging: Barging) -> Self {
        TagMachine {
            layout: Layout::new(root),
            me,
            writes,
            barging,
            bases: Vec::new(),
            others: BTreeMap::new(),
            barged: 0,
            younger: Vec::new(),
            persistent: false,
            with_point: true,
            redone: false,
            phase: Phase::Start,
            io: Io::new(),
            output: None,
        }
    }

    /// The recipe's weakened variant, for tests that show the wedge it causes: the point and
    /// the tags are persistent nodes, so a client that dies while `COMMITTING` leaves a point
    /// nobody may kill and tags that block its refs forever.
    ///
    /// ```
    /// use avout::stm::mvcc::{Barging, Me, TagMachine};
    /// let me = Me { txid: "t-1".into(), age: 1, read_point: 1 };
    /// let b = Barging { may_barge: true, barge_committing: false };
    /// let _recipe = TagMachine::new("/s", me, vec![], b).with_persistent_points();
    /// ```
    pub fn with_persistent_points(mut self) -> Self {
        self.persistent = true;
        self
    }

    /// Tags for a transaction whose point an earlier tagging of this try created: only the
    /// tags are made.
    ///
    /// ```
    /// use avout::stm::mvcc::{Barging, Me, TagMachine};
    /// let me = Me { txid: "t-1".into(), age: 1, read_point: 1 };
    /// let b = Barging { may_barge: true, barge_committing: false };
    /// let _second = TagMachine::new("/s", me, vec!["b".into()], b).without_point();
    /// ```
    pub fn without_point(mut self) -> Self {
        self.with_point = false;
        self
    }

    fn mode(&self) -> CreateMode {
        if self.persistent {
            CreateMode::Persistent
        } else {
            CreateMode::Ephemeral
        }
    }

    fn finish(&mut self, out: Result<Tagged, Halt>) {
        self.phase = Phase::Done;
        self.io.clear();
        self.output = Some(out);
    }

    /// Whether the point and the first tag are created by one `multi` (one write instead of
    /// two: the first tagging of a try that writes a ref).
    fn combined(&self) -> bool {
        self.with_point && !self.writes.is_empty()
    }

    fn start(&mut self) {
        let mode = self.mode();
        let point = self.layout.point(&self.me.txid);
        let running = State::Running.encode(self.me.age);
        let mut batch = Batch::default();
        if self.combined() {
            let tag = self.layout.tag(&self.writes[0], &self.me.txid);
            batch.push(
                &mut self.io,
                Request::Multi(vec![
                    Op::create(point, running, mode),
                    Op::create(tag, Vec::new(), mode),
                ]),
            );
        } else if self.with_point {
            batch.push(
                &mut self.io,
                Request::Create {
                    path: point,
                    data: running,
                    options: CreateOptions::new(mode),
                },
            );
        }
        for (i, name) in self.writes.clone().into_iter().enumerate() {
            if i > 0 || !self.combined() {
                batch.push(
                    &mut self.io,
                    Request::Create {
                        path: self.layout.tag(&name, &self.me.txid),
                        data: Vec::new(),
                        options: CreateOptions::new(mode),
                    },
                );
            }
            for request in [
                Request::GetChildren {
                    path: self.layout.txn(&name),
                    watch: false,
                },
                Request::GetData {
                    path: self.layout.ref_node(&name),
                    watch: false,
                },
                Request::GetChildren {
                    path: self.layout.history(&name),
                    watch: false,
                },
            ] {
                batch.push(&mut self.io, request);
            }
        }
        self.phase = Phase::Tagging(batch);
    }

    fn tagged(&mut self, replies: Vec<crate::Result<Reply>>) {
        let mut it = replies.into_iter();
        let combined = self.combined();
        let redone = self.redone;
        // Our own node, created by the first sending of a tagging sent again: the names are
        // this try's alone (the point and its tags share one GUID).
        let already = |e: &Error| redone && matches!(e, Error::NodeExists { .. });
        if combined {
            match it.next() {
                Some(Ok(Reply::Multi(_))) => {}
                // The multi is all or nothing: the point there means the tag is too.
                Some(Err(Error::Multi { index: 0, source })) if already(&source) => {}
                Some(Err(Error::Multi { index: 1, source }))
                    if matches!(*source, Error::NoNode { .. }) =>
                {
                    return self.finish(Err(Halt::NoRef(self.writes[0].clone())));
                }
                Some(Err(e)) => return self.finish(Err(Halt::Zk(e))),
                other => unreachable!("multi replied {other:?}"),
            }
        } else if self.with_point {
            match it.next() {
                Some(Ok(Reply::Created { .. })) => {}
                Some(Err(e)) if already(&e) => {}
                Some(Err(e)) => return self.finish(Err(Halt::Zk(e))),
                other => unreachable!("create replied {other:?}"),
            }
        }
        for (i, name) in self.writes.clone().into_iter().enumerate() {
            let tag = if i == 0 && combined {
                // Created by the multi.
                None
            } else {
                it.next()
            };
            let (tags, node, history) = (it.next(), it.next(), it.next());
            match tag {
                None => {}
                Some(Ok(Reply::Created { .. })) => {}
                Some(Err(e)) if already(&e) => {}
                Some(Err(Error::NoNode { .. })) => return self.finish(Err(Halt::NoRef(name))),
                Some(Err(e)) => return self.finish(Err(Halt::Zk(e))),
                other => unreachable!("create replied {other:?}"),
            }
            match tags {
                Some(Ok(Reply::Children { children, .. })) => {
                    for c in children.into_iter().filter(|c| *c != self.me.txid) {
                        self.others.entry(c).or_insert_with(|| name.clone());
                    }
                }
                Some(Err(e)) => return self.finish(Err(Halt::Zk(e))),
                other => unreachable!("children replied {other:?}"),
            }
            let (value, stat) = match node {
                Some(Ok(Reply::Data { data, stat })) => (data, stat),
                Some(Err(Error::NoNode { .. })) => return self.finish(Err(Halt::NoRef(name))),
                Some(Err(e)) => return self.finish(Err(Halt::Zk(e))),
                other => unreachable!("get_data replied {other:?}"),
            };
            // The read-point check: a commit after this try's snapshot means the value it
            // computed from is stale.
            if stat.mzxid > self.me.read_point {
                return self.finish(Err(Halt::Conflict(Some(name))));
            }
            let history = match history {
                Some(Ok(Reply::Children { children, .. })) => children,
                Some(Err(e)) => return self.finish(Err(Halt::Zk(e))),
                other => unreachable!("children replied {other:?}"),
            };
            self.bases.push(Base {
                name,
                value,
                version: stat.version,
                history,
            });
        }
        let (older, younger): (Vec<String>, Vec<String>) = self
            .others
            .keys()
            .cloned()
            .partition(|o| !self.is_older_than(o));
        self.younger = younger;
        if older.is_empty() {
            self.deal_with_younger();
        } else {
            // An older transaction's tag: live, it has priority (wait for it); stale (its
            // point gone, killed or retrying), it is ignored.
            self.look(older, true);
        }
    }

    /// Whether this transaction is older than the one whose id is `other` (ids start with
    /// the age; a foreign name counts as older, so that its point is looked at).
    fn is_older_than(&self, other: &str) -> bool {
        match super::layout::txid_age(other) {
            Some(age) => (self.me.age, self.me.txid.as_str()) < (age, other),
            None => false,
        }
    }

    fn look(&mut self, others: Vec<String>, then_younger: bool) {
        let mut batch = Batch::default();
        for o in &others {
            batch.push(
                &mut self.io,
                Request::GetData {
                    path: self.layout.point(o),
                    watch: false,
                },
            );
        }
        self.phase = Phase::Looking {
            batch,
            others,
            then_younger,
        };
    }

    /// Younger tags: barged at once once BARGE-WAIT has passed (a compare-and-set from
    /// `RUNNING`, version 0, to `KILLED`: no read first, so the barge races the victim's own
    /// move to `COMMITTING` fairly); else looked at, and waited for if live.
    fn deal_with_younger(&mut self) {
        let younger = std::mem::take(&mut self.younger);
        if younger.is_empty() {
            return self.done();
        }
        if !self.barging.may_barge {
            return self.look(younger, false);
        }
        let mut batch = Batch::default();
        for victim in &younger {
            batch.push(
                &mut self.io,
                Request::SetData {
                    path: self.layout.point(victim),
                    data: State::Killed.encode(super::layout::txid_age(victim).unwrap_or(0)),
                    // The planted bug kills whatever state the victim is in.
                    version: if self.barging.barge_committing {
                        None
                    } else {
                        Some(0)
                    },
                },
            );
        }
        self.phase = Phase::Barging {
            batch,
            victims: younger,
        };
    }

    /// Sends the current step again after a connection loss (see `handle_reply`).
    fn redo(&mut self) {
        match self.phase.clone() {
            Phase::Tagging(_) => {
                self.redone = true;
                self.start();
            }
            Phase::Looking {
                others,
                then_younger,
                ..
            } => self.look(others, then_younger),
            Phase::Barging { victims, .. } => {
                self.younger = victims;
                self.deal_with_younger();
            }
            Phase::Start | Phase::Done => {}
        }
    }

    fn done(&mut self) {
        let out = Tagged {
            bases: std::mem::take(&mut self.bases),
            barged: self.barged,
        };
        self.finish(Ok(out));
    }

    fn looked(
        &mut self,
        replies: Vec<crate::Result<Reply>>,
        others: Vec<String>,
        then_younger: bool,
    ) {
        for (reply, other) in replies.into_iter().zip(others) {
            let data = match reply {
                Ok(Reply::Data { data, .. }) => data,
                // Its owner finished (or its session ended): the tag is stale.
                Err(Error::NoNode { .. }) => continue,
                Err(e) => return self.finish(Err(Halt::Zk(e))),
                Ok(other) => unreachable!("get_data replied {other:?}"),
            };
            match State::parse(&data) {
                Some((State::Running | State::Committing, _)) => {
                    coverage::reach(Mark::StmMvccBlocked);
                    let name = self.others.get(&other).cloned();
                    return self.finish(Err(Halt::Blocked {
                        blocker: other,
                        name,
                    }));
                }
                _ => continue,
            }
        }
        if then_younger {
            self.deal_with_younger();
        } else {
            self.done();
        }
    }

    fn barged(&mut self, replies: Vec<crate::Result<Reply>>, victims: Vec<String>) {
        let mut moved_on = Vec::new();
        for (reply, victim) in replies.into_iter().zip(victims) {
            match reply {
                Ok(_) => {
                    coverage::reach(Mark::StmMvccBargedRunning);
                    self.barged += 1;
                }
                // Gone: finished meanwhile.
                Err(Error::NoNode { .. }) => {}
                // Not RUNNING any more: COMMITTING (wait for it) or killed by another.
                Err(Error::BadVersion { .. }) => {
                    coverage::reach(Mark::StmMvccBargeRaceLost);
                    moved_on.push(victim);
                }
                Err(e) => return self.finish(Err(Halt::Zk(e))),
            }
        }
        if moved_on.is_empty() {
            self.done();
        } else {
            self.look(moved_on, false);
        }
    }
}

impl Machine for TagMachine {
    type Output = Result<Tagged, Halt>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.io.poll()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        let batch = match &mut self.phase {
            Phase::Tagging(batch) | Phase::Looking { batch, .. } | Phase::Barging { batch, .. } => {
                batch
            }
            Phase::Start | Phase::Done => return,
        };
        if !batch.accept(token, reply) || !batch.complete() {
            return;
        }
        let replies = batch.take();
        match verdict(&replies) {
            Verdict::SessionLost(e) => return self.finish(Err(Halt::SessionLost(e))),
            // Creates and compare-and-sets whose outcome is unknown: sent again once the
            // session is back, they find out (our own node exists; a victim's point is no
            // longer `RUNNING` at version 0), so the try goes on rather than start over. A
            // try as long as a transaction of several writes would otherwise rarely finish
            // while connections keep breaking (leader elections).
            Verdict::Indeterminate => {
                coverage::reach(Mark::StmMvccTagRedone);
                return self.io.redo_later(now);
            }
            Verdict::Replied => {}
        }
        match self.phase.clone() {
            Phase::Tagging(_) => self.tagged(replies),
            Phase::Looking {
                others,
                then_younger,
                ..
            } => self.looked(replies, others, then_younger),
            Phase::Barging { victims, .. } => self.barged(replies, victims),
            Phase::Start | Phase::Done => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, _token: Token, _event: WatchedEvent) {}

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.io.on_session(state, self.phase == Phase::Done) {
            SessionStep::Lost(e) => self.finish(Err(Halt::SessionLost(e))),
            SessionStep::Start => self.start(),
            // The tagging, a look or a barge, sent again.
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
