//! Distributed FIFO and priority queues (ZooKeeper's queue recipe), with exactly-once
//! delivery across connection losses.
//!
//! # Layout
//!
//! ```text
//! <queue>/queue-<PPP>-<GUID>-<seq>   an element: persistent-sequential, data = payload
//! <queue>/_receipts/<GUID>           an ephemeral receipt proving one put or take applied
//! ```
//!
//! `PPP` is the priority (three digits, lower first, as UNIX nice values; a FIFO [`Queue`]
//! writes `000`) and `seq` ZooKeeper's sequence number, so elements are delivered in
//! (priority, sequence) order: FIFO within a priority, and across one producer's puts.
//!
//! # The algorithm
//!
//! **Put** is one `multi`: create the element *and* an ephemeral receipt named with a fresh
//! GUID. After a connection loss the producer looks the receipt up: present means the element
//! exists (or existed, if already consumed), absent means it was never created and the put is
//! sent again. Looking the element itself up would not do: a consumer may have taken it in the
//! meantime, and the producer would enqueue it twice. The receipt is deleted once the outcome
//! is known ([`OnceMachine`]).
//!
//! **Take** lists the children (fresh on every take, so a priority queue sees newly arrived
//! urgent elements), reads the lowest element, then claims it with one `multi`: delete the
//! element at the version read *and* create an ephemeral receipt named with the take's GUID.
//! The `multi` is atomic, so whoever's delete succeeds owns the element, and the receipt proves
//! it: after a connection loss the consumer checks its receipt, and either returns the element
//! (the data was read before the claim) or, with no receipt, knows the claim did not happen and
//! tries again (the receipt is read after a `sync`, so that a follower that has not applied
//! the claim yet cannot make it look absent). A consumer that loses the race (`NoNode`) moves
//! to the next element. An empty queue is waited on with a children watch, armed only when the
//! queue was found empty.
//!
//! # Guarantees
//!
//! - **Exactly once**: every element put is returned by exactly one take, however many
//!   requests or replies are lost, as long as the sessions involved survive.
//! - **Order**: elements are taken in (priority, sequence) order as of each take's listing;
//!   two puts by one producer, the second started after the first returned, are taken in
//!   order.
//!
//! # Connection loss, session expiry, cancellation
//!
//! - Connection loss: recovered as above; nothing non-idempotent is ever resent blindly.
//! - Session expiry while a put or take is in doubt (sent, outcome unknown) ends it with
//!   [`QueueError::SessionLost`] or [`QueueError::TakeInDoubt`]: the receipt died with the
//!   session, so a put may or may not have enqueued its element and a claimed element may have
//!   been removed without being delivered. With no request in doubt, nothing is lost.
//! - Cancelling a put (dropping its future) leaves the element enqueued at most once.
//!   Cancelling a take whose claim is in flight does not lose the element: a background task
//!   settles the claim and, if it succeeded, keeps the element in the handle, where the next
//!   take on the same handle (or a clone) returns it first.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::lock::Patience;
use crate::machine::{Machine, Millis, Reply, Request, Token, drive};
use crate::sync::{Mutex as StdMutex, lock};
use crate::{Coordination, CreateMode, Error, Op, SessionState, WatchedEvent, path};

use super::once::{
    Once, OnceMachine, Outbox, Proof, RETRY_PAUSE_MS, ancestor_creates, guid_hex, idempotent,
    spawn_cleanup,
};

/// The prefix of every element's name.
const ELEMENT: &str = "queue-";
/// The child of the queue node holding receipts.
const RECEIPTS: &str = "_receipts";

/// Why a queue operation failed.
///
/// ```
/// use avout::recipes::queue::QueueError;
/// let e = QueueError::from(avout::Error::SessionExpired);
/// assert!(matches!(e, QueueError::SessionLost(_)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// The session ended. If a put was in doubt, its element may or may not be enqueued.
    #[error("session lost: {0}")]
    SessionLost(Error),
    /// The session ended while a take's claim on `element` was in doubt: the element may have
    /// been removed from the queue without being delivered.
    #[error("session lost while taking {element}: {error}")]
    TakeInDoubt {
        /// The element's node name.
        element: String,
        /// The terminal session error.
        error: Error,
    },
    /// The coordination service refused a request (bad path, no access, data too large, …).
    #[error(transparent)]
    Zk(Error),
}

impl From<Error> for QueueError {
    fn from(error: Error) -> Self {
        if error.is_session_lost() {
            QueueError::SessionLost(error)
        } else {
            QueueError::Zk(error)
        }
    }
}

/// One element taken from a queue.
///
/// ```
/// use avout::recipes::queue::Element;
/// let e = Element { name: "queue-003-00000000000000000000000000000001-0000000042".into(), data: vec![] };
/// assert_eq!((e.priority(), e.sequence()), (Some(3), Some(42)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Element {
    /// The element's node name (`queue-<PPP>-<GUID>-<seq>`).
    pub name: String,
    /// The payload given to `put`.
    pub data: Vec<u8>,
}

impl Element {
    /// The element's priority (lower is taken first).
    ///
    /// ```
    /// # use avout::recipes::queue::Element;
    /// let e = Element { name: "queue-007-00000000000000000000000000000001-0000000000".into(), data: vec![] };
    /// assert_eq!(e.priority(), Some(7));
    /// ```
    pub fn priority(&self) -> Option<u8> {
        element_key(&self.name).map(|(p, _)| p)
    }

    /// ZooKeeper's sequence number for the element: its place in the queue's history.
    ///
    /// ```
    /// # use avout::recipes::queue::Element;
    /// let e = Element { name: "queue-000-00000000000000000000000000000001-0000000009".into(), data: vec![] };
    /// assert_eq!(e.sequence(), Some(9));
    /// ```
    pub fn sequence(&self) -> Option<i64> {
        element_key(&self.name).map(|(_, s)| s)
    }
}

/// The order of an element's name: (priority, sequence); `None` for a foreign child.
fn element_key(name: &str) -> Option<(u8, i64)> {
    let rest = name.strip_prefix(ELEMENT)?;
    let priority = rest.get(..3)?.parse().ok()?;
    Some((priority, path::sequence(rest)?))
}

/// The element name prefix a put creates (ZooKeeper appends the sequence).
fn element_prefix(priority: u8, guid: u128) -> String {
    format!("{ELEMENT}{priority:03}-{}-", guid_hex(guid))
}

/// The machine of one put: an [`OnceMachine`] creating the element and its receipt together.
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::SessionState;
/// let mut m = avout::recipes::queue::put_machine("/jobs", 0, b"job".to_vec(), 0x42, 7);
/// m.handle_session(Millis(0), SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::Multi(ops))) if ops.len() == 2));
/// ```
pub fn put_machine(
    queue: &str,
    priority: u8,
    data: Vec<u8>,
    guid: u128,
    session: i64,
) -> OnceMachine {
    let receipts = path::join(queue, RECEIPTS);
    let receipt = path::join(&receipts, &guid_hex(guid));
    let ops = vec![
        Op::create(
            path::join(queue, &element_prefix(priority, guid)),
            data,
            CreateMode::PersistentSequential,
        ),
        Op::create(receipt.clone(), Vec::new(), CreateMode::Ephemeral),
    ];
    OnceMachine::new(ops, Proof::OwnedEphemeral(receipt.clone()), session)
        .create_parents(receipts)
        .cleanup(receipt)
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    List,
    Read,
    Verify,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Listing the elements.
    Listing {
        list: Token,
    },
    /// Creating the queue node and the receipts node.
    Ensuring {
        last: Token,
    },
    /// Reading the first candidate's data.
    Reading {
        get: Token,
    },
    /// The claim `multi` is in flight.
    Claiming {
        multi: Token,
    },
    /// Catching our server up with the leader before checking the receipt.
    Syncing {
        sync: Token,
    },
    /// Checking our receipt after the claim's outcome was lost.
    Verifying {
        exists: Token,
    },
    /// The queue was empty: waiting for the children watch armed by `list`.
    Waiting {
        list: Token,
    },
    /// Waiting to redo `step` after a connection loss.
    Stalled {
        step: Step,
        until: Millis,
    },
    Done,
}

/// Takes one element; see the [module docs](self).
///
/// The output is `Ok(None)` when the queue stayed empty for the machine's patience.
///
/// ```
/// use avout::lock::Patience;
/// use avout::machine::{Machine, Millis, Request};
/// use avout::recipes::queue::TakeMachine;
/// use avout::SessionState;
///
/// let mut m = TakeMachine::new("/jobs", 0x42, Patience::Forever);
/// m.handle_session(Millis(0), SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::GetChildren { watch: false, .. }))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TakeMachine {
    queue: String,
    receipts: String,
    receipt: String,
    patience: Patience,
    deadline: Option<Millis>,
    /// Arm the children watch when listing: set once the queue was seen empty.
    watching: bool,
    /// Candidates in order; the first is the one being read, claimed or verified.
    candidates: VecDeque<String>,
    /// The first candidate's data and version, once read.
    read: Option<(Vec<u8>, i32)>,
    started: bool,
    phase: Phase,
    outbox: Outbox,
    output: Option<Result<Option<Element>, QueueError>>,
}

impl TakeMachine {
    /// A machine taking from `queue`, naming its receipt with `guid`.
    ///
    /// ```
    /// use avout::lock::Patience;
    /// let m = avout::recipes::queue::TakeMachine::new("/jobs", 1, Patience::None);
    /// assert!(m.in_doubt().is_none());
    /// ```
    pub fn new(queue: &str, guid: u128, patience: Patience) -> Self {
        let receipts = path::join(queue, RECEIPTS);
        TakeMachine {
            queue: queue.to_owned(),
            receipt: path::join(&receipts, &guid_hex(guid)),
            receipts,
            patience,
            deadline: None,
            watching: false,
            candidates: VecDeque::new(),
            read: None,
            started: false,
            phase: Phase::Done,
            outbox: Outbox::default(),
            output: None,
        }
    }

    /// If a claim was sent whose outcome is unknown: the receipt that proves it and the element
    /// it claims. A cancelled take must settle it (see the [module docs](self)).
    ///
    /// ```
    /// use avout::lock::Patience;
    /// let m = avout::recipes::queue::TakeMachine::new("/jobs", 1, Patience::None);
    /// assert_eq!(m.in_doubt(), None);
    /// ```
    pub fn in_doubt(&self) -> Option<(String, Element)> {
        let claimed = matches!(
            self.phase,
            Phase::Claiming { .. }
                | Phase::Syncing { .. }
                | Phase::Verifying { .. }
                | Phase::Stalled {
                    step: Step::Verify,
                    ..
                }
        );
        if !claimed {
            return None;
        }
        let (data, _) = self.read.clone().expect("a claim follows a read");
        let name = self
            .candidates
            .front()
            .expect("a claim has a candidate")
            .clone();
        Some((self.receipt.clone(), Element { name, data }))
    }

    fn finish(&mut self, result: Result<Option<Element>, QueueError>) {
        self.outbox.clear();
        self.phase = Phase::Done;
        self.output = Some(result);
    }

    fn list(&mut self) {
        self.read = None;
        let list = self.outbox.send(Request::GetChildren {
            path: self.queue.clone(),
            watch: self.watching,
        });
        self.phase = Phase::Listing { list };
    }

    fn ensure(&mut self) {
        let mut last = None;
        for request in ancestor_creates(&self.receipts) {
            last = Some(self.outbox.send(request));
        }
        self.phase = Phase::Ensuring {
            last: last.expect("a path has components"),
        };
    }

    /// Reads the first candidate, or lists again when none is left.
    fn read_first(&mut self) {
        self.read = None;
        match self.candidates.front() {
            Some(name) => {
                let get = self.outbox.send(Request::GetData {
                    path: path::join(&self.queue, name),
                    watch: false,
                });
                self.phase = Phase::Reading { get };
            }
            None => self.list(),
        }
    }

    fn next_candidate(&mut self) {
        self.candidates.pop_front();
        self.read_first();
    }

    fn claim(&mut self) {
        let name = self.candidates.front().expect("claiming a candidate");
        let (_, version) = self.read.clone().expect("claiming after a read");
        let multi = self.outbox.send(Request::Multi(vec![
            Op::delete(path::join(&self.queue, name), Some(version)),
            Op::create(self.receipt.clone(), Vec::new(), CreateMode::Ephemeral),
        ]));
        self.phase = Phase::Claiming { multi };
    }

    /// Checks the receipt, after a `sync`: a follower we reconnected to may not have applied
    /// our claim yet, and "no receipt" there would make us claim another element while the
    /// first one is already ours (and lost).
    fn verify(&mut self) {
        let sync = self.outbox.send(Request::Sync { path: "/".into() });
        self.phase = Phase::Syncing { sync };
    }

    fn check_receipt(&mut self) {
        let exists = self.outbox.send(Request::Exists {
            path: self.receipt.clone(),
            watch: false,
        });
        self.phase = Phase::Verifying { exists };
    }

    /// The claim succeeded: deliver, and drop the receipt without waiting (if that delete is
    /// lost, the ephemeral receipt goes with the session).
    fn taken(&mut self) {
        let (data, _) = self.read.take().expect("taken after a read");
        let name = self.candidates.pop_front().expect("taken a candidate");
        self.finish(Ok(Some(Element { name, data })));
        self.outbox.send(Request::Delete {
            path: self.receipt.clone(),
            version: None,
        });
    }

    fn failed(&mut self, now: Millis, step: Step, error: Error) {
        if error.is_indeterminate() {
            self.phase = Phase::Stalled {
                step,
                until: now.plus(RETRY_PAUSE_MS),
            };
        } else {
            self.fail(error);
        }
    }

    fn fail(&mut self, error: Error) {
        let error = match self.in_doubt() {
            Some((_, element)) if error.is_session_lost() => QueueError::TakeInDoubt {
                element: element.name,
                error,
            },
            _ => QueueError::from(error),
        };
        self.finish(Err(error));
    }

    fn resume(&mut self) {
        if let Phase::Stalled { step, .. } = self.phase.clone() {
            match step {
                Step::List => self.list(),
                Step::Read => self.read_first(),
                Step::Verify => self.verify(),
            }
        }
    }

    /// Whether a timed take may stop now: nothing claimed or in doubt, so giving up loses
    /// nothing.
    fn may_give_up(&self) -> bool {
        self.phase != Phase::Done && self.in_doubt().is_none()
    }

    fn empty(&mut self, now: Millis, watch: Option<Token>) {
        if self.patience == Patience::None || self.deadline.is_some_and(|d| now >= d) {
            return self.finish(Ok(None));
        }
        match watch {
            Some(list) => self.phase = Phase::Waiting { list },
            None => {
                // Look again with a watch armed, so that a put in between is not missed.
                self.watching = true;
                self.list();
            }
        }
    }
}

impl Machine for TakeMachine {
    type Output = Result<Option<Element>, QueueError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            Phase::Listing { list } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => {
                    let mut elements: Vec<_> = children
                        .into_iter()
                        .filter_map(|c| element_key(&c).map(|k| (k, c)))
                        .collect();
                    elements.sort();
                    self.candidates = elements.into_iter().map(|(_, c)| c).collect();
                    if self.candidates.is_empty() {
                        self.empty(now, self.watching.then_some(list));
                    } else {
                        self.read_first();
                    }
                }
                Err(Error::NoNode { .. }) if self.patience == Patience::None => {
                    self.finish(Ok(None))
                }
                Err(Error::NoNode { .. }) => {
                    self.watching = true;
                    self.ensure();
                }
                Err(e) => self.failed(now, Step::List, e),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Ensuring { last } if token == last => match reply {
                // NoNode: an ancestor's create was lost; the listing finds out and starts over.
                Ok(_) | Err(Error::NodeExists { .. } | Error::NoNode { .. }) => self.list(),
                Err(e) => self.failed(now, Step::List, e),
            },
            Phase::Reading { get } if token == get => match reply {
                Ok(Reply::Data { data, stat }) => {
                    self.read = Some((data, stat.version));
                    self.claim();
                }
                // Taken by someone else since the listing.
                Err(Error::NoNode { .. }) => self.next_candidate(),
                Err(e) => self.failed(now, Step::Read, e),
                Ok(other) => unreachable!("get_data replied {other:?}"),
            },
            Phase::Claiming { multi } if token == multi => match reply {
                Ok(Reply::Multi(_)) => self.taken(),
                Err(Error::Multi { index: 0, source })
                    if matches!(*source, Error::NoNode { .. } | Error::BadVersion { .. }) =>
                {
                    // Lost the race for this element (or it was rewritten: read it again
                    // from a fresh listing).
                    self.next_candidate()
                }
                Err(Error::Multi { index: 1, source })
                    if matches!(*source, Error::NoNode { .. }) =>
                {
                    // No receipts node yet (a queue made by hand): create it and start over.
                    self.ensure()
                }
                Err(Error::Multi { index: 1, source })
                    if matches!(*source, Error::NodeExists { .. }) =>
                {
                    panic!(
                        "receipt {} exists before its claim was applied: a GUID was reused",
                        self.receipt
                    )
                }
                Err(e) if e.is_indeterminate() => {
                    self.phase = Phase::Stalled {
                        step: Step::Verify,
                        until: now.plus(RETRY_PAUSE_MS),
                    }
                }
                Err(e) => self.fail(e),
                Ok(other) => unreachable!("multi replied {other:?}"),
            },
            Phase::Syncing { sync } if token == sync => match reply {
                Ok(_) => self.check_receipt(),
                Err(e) => self.failed(now, Step::Verify, e),
            },
            Phase::Verifying { exists } if token == exists => match reply {
                Ok(Reply::Exists(Some(_))) => self.taken(),
                // The claim was not applied and, our session's requests being ordered, never
                // will be: the element may still be first in line.
                Ok(Reply::Exists(None)) => self.read_first(),
                Err(e) => self.failed(now, Step::Verify, e),
                Ok(other) => unreachable!("exists replied {other:?}"),
            },
            // Replies to parents' creates, superseded reads, the receipt's cleanup.
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, token: Token, _event: WatchedEvent) {
        if self.phase == (Phase::Waiting { list: token }) {
            self.list();
        }
    }

    fn handle_session(&mut self, now: Millis, state: SessionState) {
        if !self.started {
            self.started = true;
            self.deadline = match self.patience {
                Patience::Millis(ms) => Some(now.plus(ms)),
                Patience::Forever | Patience::None => None,
            };
            if let Some(error) = state.terminal_error() {
                return self.fail(error);
            }
            return self.list();
        }
        if self.phase == Phase::Done {
            return;
        }
        if let Some(error) = state.terminal_error() {
            return self.fail(error);
        }
        if state == SessionState::Connected {
            self.resume();
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Phase::Stalled { until, .. } = self.phase
            && now >= until
        {
            self.resume();
        }
        if let Some(deadline) = self.deadline
            && now >= deadline
            && self.may_give_up()
        {
            self.finish(Ok(None));
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        let stalled = match self.phase {
            Phase::Stalled { until, .. } => Some(until),
            _ => None,
        };
        // While a claim is in doubt the deadline is not armed: the take must settle it first
        // (and a past deadline would otherwise fire again and again).
        let deadline = self.deadline.filter(|_| self.may_give_up());
        match (stalled, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.output.take()
    }
}

struct Inner<C: ?Sized> {
    path: String,
    /// Elements whose take was cancelled after its claim succeeded, returned first.
    stash: StdMutex<VecDeque<Element>>,
    zk: Arc<C>,
}

/// A distributed FIFO queue; see the [module docs](self) for the algorithm and guarantees.
///
/// ```no_run
/// use std::sync::Arc;
/// use avout::recipes::queue::Queue;
/// # async fn demo(zk: Arc<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
/// let jobs = Queue::new(zk, "/jobs")?;
/// jobs.put(b"resize 42.png").await?;
/// let job = jobs.take().await?;
/// assert_eq!(job.data, b"resize 42.png");
/// # Ok(()) }
/// ```
pub struct Queue<C: Coordination + ?Sized + 'static> {
    inner: Arc<Inner<C>>,
}

impl<C: Coordination + ?Sized + 'static> Clone for Queue<C> {
    fn clone(&self) -> Self {
        Queue {
            inner: self.inner.clone(),
        }
    }
}

impl<C: Coordination + ?Sized + 'static> std::fmt::Debug for Queue<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl<C: Coordination + ?Sized + 'static> Queue<C> {
    /// A handle on the queue at `path` (created with its parents on first use).
    ///
    /// ```no_run
    /// # fn demo(zk: std::sync::Arc<avout::zk::ZkClient>) {
    /// assert!(avout::recipes::queue::Queue::new(zk, "relative").is_err());
    /// # }
    /// ```
    pub fn new(zk: Arc<C>, path: impl Into<String>) -> Result<Self, QueueError> {
        let path = path.into();
        path::validate_path(&path, false)?;
        Ok(Queue {
            inner: Arc::new(Inner {
                path,
                stash: StdMutex::new(VecDeque::new()),
                zk,
            }),
        })
    }

    /// The queue's path.
    ///
    /// ```no_run
    /// # fn demo(q: avout::recipes::queue::Queue<avout::zk::ZkClient>) {
    /// println!("{}", q.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Appends an element. Returns once it is enqueued, exactly once.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::Queue<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
    /// q.put(b"payload").await?;
    /// # Ok(()) }
    /// ```
    pub async fn put(&self, data: &[u8]) -> Result<(), QueueError> {
        self.put_priority(0, data).await
    }

    async fn put_priority(&self, priority: u8, data: &[u8]) -> Result<(), QueueError> {
        let zk = &self.inner.zk;
        let mut machine = put_machine(
            &self.inner.path,
            priority,
            data.to_vec(),
            zk.new_guid(),
            zk.session().id.0,
        );
        match drive(&**zk, &mut machine).await? {
            Once::Applied { .. } => Ok(()),
            Once::Conflict => {
                panic!("a put's receipt is owned by another session: a GUID was reused")
            }
        }
    }

    /// Removes and returns the first element, waiting while the queue is empty.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::Queue<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
    /// let element = q.take().await?;
    /// println!("{} bytes", element.data.len());
    /// # Ok(()) }
    /// ```
    pub async fn take(&self) -> Result<Element, QueueError> {
        Ok(self
            .take_with(Patience::Forever)
            .await?
            .expect("an unbounded take returns an element"))
    }

    /// Removes and returns the first element, or `None` if the queue is empty.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::Queue<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
    /// while let Some(element) = q.try_take().await? {
    ///     println!("{:?}", element.data);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_take(&self) -> Result<Option<Element>, QueueError> {
        self.take_with(Patience::None).await
    }

    /// Like [`take`](Self::take), waiting at most `timeout` for an element to arrive.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::Queue<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
    /// use std::time::Duration;
    /// if q.take_for(Duration::from_secs(1)).await?.is_none() {
    ///     println!("idle");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn take_for(&self, timeout: Duration) -> Result<Option<Element>, QueueError> {
        self.take_with(Patience::Millis(timeout.as_millis() as u64))
            .await
    }

    /// The number of elements now in the queue.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::Queue<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
    /// println!("{} waiting", q.count().await?);
    /// # Ok(()) }
    /// ```
    pub async fn count(&self) -> Result<usize, QueueError> {
        let zk = &*self.inner.zk;
        match idempotent(zk, || zk.get_children(&self.inner.path)).await {
            Ok((children, _)) => Ok(children.iter().filter(|c| element_key(c).is_some()).count()
                + lock(&self.inner.stash).len()),
            Err(Error::NoNode { .. }) => Ok(lock(&self.inner.stash).len()),
            Err(e) => Err(e.into()),
        }
    }

    async fn take_with(&self, patience: Patience) -> Result<Option<Element>, QueueError> {
        if let Some(element) = lock(&self.inner.stash).pop_front() {
            return Ok(Some(element));
        }
        let zk = &self.inner.zk;
        let mut taking = Taking {
            machine: TakeMachine::new(&self.inner.path, zk.new_guid(), patience),
            inner: Some(self.inner.clone()),
        };
        let result = drive(&**zk, &mut taking.machine).await;
        taking.inner = None;
        result
    }
}

/// A take in progress; if dropped with a claim in doubt, settles it in the background.
struct Taking<C: Coordination + ?Sized + 'static> {
    machine: TakeMachine,
    /// `Some` until the take finishes.
    inner: Option<Arc<Inner<C>>>,
}

impl<C: Coordination + ?Sized + 'static> Drop for Taking<C> {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        let Some((receipt, element)) = self.machine.in_doubt() else {
            return;
        };
        spawn_cleanup("settling a cancelled take", async move {
            let zk = &*inner.zk;
            // Sent after the claim on the same session, so it sees the claim's outcome.
            if idempotent(zk, || zk.exists(&receipt)).await?.is_some() {
                lock(&inner.stash).push_back(element);
                idempotent(zk, || async {
                    match zk.delete(&receipt, None).await {
                        Err(Error::NoNode { .. }) => Ok(()),
                        other => other,
                    }
                })
                .await?;
            }
            Ok(())
        });
    }
}

/// A distributed priority queue: like [`Queue`], with a priority per element; lower
/// priorities are taken first, FIFO within a priority. See the [module docs](self).
///
/// ```no_run
/// use std::sync::Arc;
/// use avout::recipes::queue::PriorityQueue;
/// # async fn demo(zk: Arc<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
/// let tasks = PriorityQueue::new(zk, "/tasks")?;
/// tasks.put(9, b"batch").await?;
/// tasks.put(0, b"urgent").await?;
/// assert_eq!(tasks.take().await?.data, b"urgent");
/// # Ok(()) }
/// ```
pub struct PriorityQueue<C: Coordination + ?Sized + 'static> {
    queue: Queue<C>,
}

impl<C: Coordination + ?Sized + 'static> Clone for PriorityQueue<C> {
    fn clone(&self) -> Self {
        PriorityQueue {
            queue: self.queue.clone(),
        }
    }
}

impl<C: Coordination + ?Sized + 'static> std::fmt::Debug for PriorityQueue<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PriorityQueue")
            .field("path", &self.queue.inner.path)
            .finish()
    }
}

impl<C: Coordination + ?Sized + 'static> PriorityQueue<C> {
    /// A handle on the priority queue at `path` (created with its parents on first use).
    ///
    /// ```no_run
    /// # fn demo(zk: std::sync::Arc<avout::zk::ZkClient>) {
    /// let q = avout::recipes::queue::PriorityQueue::new(zk, "/tasks").unwrap();
    /// # }
    /// ```
    pub fn new(zk: Arc<C>, path: impl Into<String>) -> Result<Self, QueueError> {
        Ok(PriorityQueue {
            queue: Queue::new(zk, path)?,
        })
    }

    /// Appends an element with `priority` (0 is taken first), exactly once.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::PriorityQueue<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
    /// q.put(5, b"normal").await?;
    /// # Ok(()) }
    /// ```
    pub async fn put(&self, priority: u8, data: &[u8]) -> Result<(), QueueError> {
        self.queue.put_priority(priority, data).await
    }

    /// Removes and returns the most urgent element, waiting while the queue is empty.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::PriorityQueue<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
    /// let e = q.take().await?;
    /// println!("priority {:?}", e.priority());
    /// # Ok(()) }
    /// ```
    pub async fn take(&self) -> Result<Element, QueueError> {
        self.queue.take().await
    }

    /// Removes and returns the most urgent element, or `None` if the queue is empty.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::PriorityQueue<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
    /// let maybe = q.try_take().await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_take(&self) -> Result<Option<Element>, QueueError> {
        self.queue.try_take().await
    }

    /// Like [`take`](Self::take), waiting at most `timeout`.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::PriorityQueue<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
    /// let maybe = q.take_for(std::time::Duration::from_millis(200)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn take_for(&self, timeout: Duration) -> Result<Option<Element>, QueueError> {
        self.queue.take_for(timeout).await
    }

    /// The number of elements now in the queue.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::PriorityQueue<avout::zk::ZkClient>) -> Result<(), avout::recipes::queue::QueueError> {
    /// println!("{}", q.count().await?);
    /// # Ok(()) }
    /// ```
    pub async fn count(&self) -> Result<usize, QueueError> {
        self.queue.count().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::testing::{children, drain};
    use crate::{EventKind, OpResult, Stat};

    const GUID: u128 = 0xabc;

    /// Expects the `sync` that precedes a proof lookup, answers it, and returns what follows.
    fn synced(m: &mut impl Machine) -> Vec<(Token, Request)> {
        let sent = drain(m);
        assert!(
            matches!(&sent[..], [(_, Request::Sync { .. })]),
            "sync first: {sent:?}"
        );
        m.handle_reply(Millis(1000), sent[0].0, Ok(Reply::Synced));
        drain(m)
    }

    fn data(bytes: &[u8]) -> crate::Result<Reply> {
        Ok(Reply::Data {
            data: bytes.to_vec(),
            stat: Stat::default(),
        })
    }

    fn name(priority: u8, seq: i64) -> String {
        format!(
            "{}{}",
            element_prefix(priority, 0x1),
            path::format_sequence(seq)
        )
    }

    fn start(patience: Patience) -> (TakeMachine, Vec<(Token, Request)>) {
        let mut m = TakeMachine::new("/q", GUID, patience);
        m.handle_session(Millis(0), SessionState::Connected);
        let sent = drain(&mut m);
        (m, sent)
    }

    fn receipt() -> String {
        format!("/q/_receipts/{}", guid_hex(GUID))
    }

    #[test]
    fn takes_the_lowest_by_priority_then_sequence() {
        let (mut m, sent) = start(Patience::Forever);
        let (a, b, c) = (name(1, 1), name(0, 7), name(0, 3));
        m.handle_reply(Millis(1), sent[0].0, children(&[&a, &b, "_receipts", &c]));
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[..], [(_, Request::GetData { path, .. })] if *path == format!("/q/{c}"))
        );
        m.handle_reply(Millis(2), sent[0].0, data(b"x"));
        let sent = drain(&mut m);
        let [(token, Request::Multi(ops))] = &sent[..] else {
            panic!("{sent:?}")
        };
        assert_eq!(ops[0], Op::delete(format!("/q/{c}"), Some(0)));
        assert_eq!(ops[1], Op::create(receipt(), vec![], CreateMode::Ephemeral));
        m.handle_reply(
            Millis(3),
            *token,
            Ok(Reply::Multi(vec![
                OpResult::Delete,
                OpResult::Create { path: receipt() },
            ])),
        );
        let got = m
            .poll_output()
            .expect("done")
            .expect("ok")
            .expect("an element");
        assert_eq!((got.name, got.data), (c, b"x".to_vec()));
        assert!(
            matches!(&drain(&mut m)[..], [(_, Request::Delete { path, .. })] if *path == receipt()),
            "the receipt is dropped"
        );
    }

    #[test]
    fn a_lost_claim_reply_is_settled_by_the_receipt_without_a_second_claim() {
        let (mut m, sent) = start(Patience::Forever);
        let a = name(0, 1);
        m.handle_reply(Millis(1), sent[0].0, children(&[&a]));
        let sent = drain(&mut m);
        m.handle_reply(Millis(2), sent[0].0, data(b"job"));
        let sent = drain(&mut m);
        m.handle_reply(Millis(3), sent[0].0, Err(Error::ConnectionLoss));
        assert_eq!(
            m.in_doubt().map(|(r, e)| (r, e.name)),
            Some((receipt(), a.clone()))
        );
        assert!(drain(&mut m).is_empty(), "waits for the connection");
        m.handle_session(Millis(4), SessionState::Connected);
        let sent = synced(&mut m);
        assert!(matches!(&sent[..], [(_, Request::Exists { path, .. })] if *path == receipt()));
        m.handle_reply(
            Millis(5),
            sent[0].0,
            Ok(Reply::Exists(Some(Stat::default()))),
        );
        let got = m
            .poll_output()
            .expect("done")
            .expect("ok")
            .expect("an element");
        assert_eq!(got.data, b"job");
    }

    #[test]
    fn a_lost_claim_request_is_retried_only_after_the_receipt_is_found_absent() {
        let (mut m, sent) = start(Patience::Forever);
        let a = name(0, 1);
        m.handle_reply(Millis(1), sent[0].0, children(&[&a]));
        let sent = drain(&mut m);
        m.handle_reply(Millis(2), sent[0].0, data(b"job"));
        let sent = drain(&mut m);
        m.handle_reply(Millis(3), sent[0].0, Err(Error::ConnectionLoss));
        m.handle_timer(Millis(3 + RETRY_PAUSE_MS));
        let sent = synced(&mut m);
        m.handle_reply(Millis(30), sent[0].0, Ok(Reply::Exists(None)));
        // Not claimed: the element is read again, then claimed again.
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[..], [(_, Request::GetData { path, .. })] if *path == format!("/q/{a}"))
        );
        m.handle_reply(Millis(31), sent[0].0, data(b"job"));
        let sent = drain(&mut m);
        assert!(matches!(&sent[..], [(_, Request::Multi(_))]));
        m.handle_reply(Millis(32), sent[0].0, Ok(Reply::Multi(vec![])));
        assert!(m.poll_output().expect("done").expect("ok").is_some());
    }

    #[test]
    fn losing_the_race_moves_to_the_next_element() {
        let (mut m, sent) = start(Patience::Forever);
        let (a, b) = (name(0, 1), name(0, 2));
        m.handle_reply(Millis(1), sent[0].0, children(&[&b, &a]));
        let sent = drain(&mut m);
        m.handle_reply(Millis(2), sent[0].0, data(b"a"));
        let sent = drain(&mut m);
        let lost = Error::Multi {
            index: 0,
            source: Box::new(Error::NoNode {
                path: format!("/q/{a}"),
            }),
        };
        m.handle_reply(Millis(3), sent[0].0, Err(lost));
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[..], [(_, Request::GetData { path, .. })] if *path == format!("/q/{b}"))
        );
    }

    #[test]
    fn an_empty_queue_is_waited_on_with_one_watch() {
        let (mut m, sent) = start(Patience::Forever);
        m.handle_reply(Millis(1), sent[0].0, children(&["_receipts"]));
        let sent = drain(&mut m);
        assert!(matches!(
            &sent[..],
            [(_, Request::GetChildren { watch: true, .. })]
        ));
        m.handle_reply(Millis(2), sent[0].0, children(&["_receipts"]));
        assert!(drain(&mut m).is_empty() && m.poll_output().is_none());
        m.handle_watch(
            Millis(3),
            sent[0].0,
            WatchedEvent {
                kind: EventKind::NodeChildrenChanged,
                state: SessionState::Connected,
                path: "/q".into(),
            },
        );
        assert!(matches!(
            &drain(&mut m)[..],
            [(_, Request::GetChildren { watch: true, .. })]
        ));
    }

    #[test]
    fn try_take_on_an_empty_or_missing_queue_is_none() {
        let (mut m, sent) = start(Patience::None);
        m.handle_reply(
            Millis(1),
            sent[0].0,
            Err(Error::NoNode { path: "/q".into() }),
        );
        assert_eq!(m.poll_output(), Some(Ok(None)));
        let (mut m, sent) = start(Patience::None);
        m.handle_reply(Millis(1), sent[0].0, children(&[]));
        assert_eq!(m.poll_output(), Some(Ok(None)));
    }

    #[test]
    fn a_timed_take_gives_up_only_when_nothing_is_claimed() {
        let (mut m, sent) = start(Patience::Millis(100));
        m.handle_reply(Millis(1), sent[0].0, children(&[]));
        let sent = drain(&mut m);
        m.handle_reply(Millis(2), sent[0].0, children(&[]));
        assert_eq!(m.poll_timer(), Some(Millis(100)));
        m.handle_timer(Millis(100));
        assert_eq!(m.poll_output(), Some(Ok(None)));
    }

    #[test]
    fn a_deadline_never_abandons_a_claim_in_doubt() {
        let (mut m, sent) = start(Patience::Millis(10));
        let a = name(0, 1);
        m.handle_reply(Millis(1), sent[0].0, children(&[&a]));
        let sent = drain(&mut m);
        m.handle_reply(Millis(2), sent[0].0, data(b"job"));
        let sent = drain(&mut m);
        assert_eq!(
            m.poll_timer(),
            None,
            "no deadline while the claim is in flight"
        );
        m.handle_reply(Millis(50), sent[0].0, Err(Error::ConnectionLoss));
        assert_eq!(m.poll_timer(), Some(Millis(50 + RETRY_PAUSE_MS)));
        m.handle_timer(Millis(50 + RETRY_PAUSE_MS));
        assert!(
            m.poll_output().is_none(),
            "past the deadline, still settling the claim"
        );
        let sent = synced(&mut m);
        assert!(matches!(&sent[..], [(_, Request::Exists { .. })]));
        m.handle_reply(
            Millis(80),
            sent[0].0,
            Ok(Reply::Exists(Some(Stat::default()))),
        );
        assert_eq!(
            m.poll_output().expect("done").expect("ok").map(|e| e.data),
            Some(b"job".to_vec()),
            "the claimed element is delivered even though the deadline passed"
        );
    }

    #[test]
    fn session_expiry_with_a_claim_in_doubt_names_the_element() {
        let (mut m, sent) = start(Patience::Forever);
        let a = name(0, 1);
        m.handle_reply(Millis(1), sent[0].0, children(&[&a]));
        let sent = drain(&mut m);
        m.handle_reply(Millis(2), sent[0].0, data(b"job"));
        let sent = drain(&mut m);
        m.handle_reply(Millis(3), sent[0].0, Err(Error::ConnectionLoss));
        m.handle_session(Millis(4), SessionState::Expired);
        assert_eq!(
            m.poll_output(),
            Some(Err(QueueError::TakeInDoubt {
                element: a,
                error: Error::SessionExpired
            }))
        );
    }

    #[test]
    fn a_put_whose_reply_is_lost_is_recovered_by_its_receipt_not_resent() {
        let mut m = put_machine("/q", 0, b"job".to_vec(), GUID, 7);
        m.handle_session(Millis(0), SessionState::Connected);
        let sent = drain(&mut m);
        let [(token, Request::Multi(ops))] = &sent[..] else {
            panic!("{sent:?}")
        };
        assert!(matches!(&ops[0], Op::Create { path, options, .. }
            if path.starts_with("/q/queue-000-") && options.mode == CreateMode::PersistentSequential));
        m.handle_reply(Millis(1), *token, Err(Error::ConnectionLoss));
        m.handle_session(Millis(2), SessionState::Connected);
        let sent = synced(&mut m);
        assert!(matches!(&sent[..], [(_, Request::Exists { path, .. })] if *path == receipt()));
        m.handle_reply(
            Millis(3),
            sent[0].0,
            Ok(Reply::Exists(Some(Stat {
                ephemeral_owner: 7,
                ..Stat::default()
            }))),
        );
        assert_eq!(m.poll_output(), Some(Ok(Once::Applied { results: None })));
        let sent = drain(&mut m);
        assert!(
            matches!(&sent[..], [(_, Request::Delete { path, .. })] if *path == receipt()),
            "only the receipt's cleanup: {sent:?}"
        );
    }
}
