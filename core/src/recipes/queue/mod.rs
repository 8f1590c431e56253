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
//! # Id and delay queues
//!
//! [`IdQueue`] (Curator's `DistributedIdQueue`) and [`DelayQueue`] (`DistributedDelayQueue`)
//! are this queue with a tag in each element's name, between two `|` separators before the
//! sequence number (`queue-<PPP>-<GUID>-|<tag>|<seq>`): an id, or a due time. Their takes are
//! this take over a selection of the listing — one id's elements for a removal, the due ones
//! by due time for a delay queue — so they keep the exactly-once claim and its recovery.
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
//!   been removed without being delivered. With no request in doubt, nothing is lost. The
//!   queue's elements are persistent: the handle's next put or take runs on the client's next
//!   session.
//! - Cancelling a put (dropping its future) leaves the element enqueued at most once.
//!   Cancelling a take whose claim is in flight does not lose the element: a background task
//!   settles the claim and, if it succeeded, keeps the element in the handle, where the next
//!   take on the same handle (or a clone) returns it first.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::client::Session;
use crate::lock::Patience;
use crate::machine::{
    Machine, Millis, Outbox, Reply, Request, Resumed, Stall, Token, drive, earliest, idempotent,
};
use crate::planted::{Bug, Bugs};
use crate::sync::{Mutex as StdMutex, lock};
use crate::{Client, CreateMode, Error, Op, SessionState, WatchedEvent, path};

use super::once::{Once, OnceMachine, Proof, guid_hex, spawn_cleanup};

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
    /// A removal ([`IdQueue::remove`]) stopped part-way: `removed` elements were removed (and
    /// will never be delivered) before `source` ended it. Calling it again removes the rest.
    #[error("removal interrupted after {removed} element(s): {source}")]
    Interrupted {
        /// How many elements were removed before the error.
        removed: usize,
        /// Why it stopped.
        source: Box<QueueError>,
    },
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
    tagged_put_machine(queue, priority, None, data, guid, session)
}

/// [`put_machine`] for an element whose name carries `tag` between separators (the id and
/// delay queues; see [`select`]).
fn tagged_put_machine(
    queue: &str,
    priority: u8,
    tag: Option<&str>,
    data: Vec<u8>,
    guid: u128,
    session: i64,
) -> OnceMachine {
    let mut prefix = element_prefix(priority, guid);
    if let Some(tag) = tag {
        prefix = format!("{prefix}{SEPARATOR}{tag}{SEPARATOR}");
    }
    let receipts = path::join(queue, RECEIPTS);
    let receipt = path::join(&receipts, &guid_hex(guid));
    let ops = vec![
        Op::create(
            path::join(queue, &prefix),
            data,
            CreateMode::PersistentSequential,
        ),
        Op::create(receipt.clone(), Vec::new(), CreateMode::Ephemeral),
    ];
    OnceMachine::new(ops, Proof::OwnedEphemeral(receipt.clone()), session)
        .create_parents(receipts)
        .cleanup(receipt)
}

mod delay_queue;
mod id_queue;
mod machine;
mod select;
pub use delay_queue::{Clock, DelayQueue, SystemClock, TokioClock};
pub use id_queue::IdQueue;
pub use machine::TakeMachine;
use select::{SEPARATOR, Select};

struct Inner {
    path: String,
    /// Elements whose take was cancelled after its claim succeeded, returned first.
    stash: StdMutex<VecDeque<Element>>,
    client: Client,
    /// The bugs planted in its takes.
    planted: Bugs,
}

/// A distributed FIFO queue; see the [module docs](self) for the algorithm and guarantees.
///
/// ```no_run
/// use avout::recipes::queue::Queue;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::recipes::queue::QueueError> {
/// let jobs = Queue::new(client, "/jobs")?;
/// jobs.put(b"resize 42.png").await?;
/// let job = jobs.take().await?;
/// assert_eq!(job.data, b"resize 42.png");
/// # Ok(()) }
/// ```
pub struct Queue {
    inner: Arc<Inner>,
}

impl Clone for Queue {
    fn clone(&self) -> Self {
        Queue {
            inner: self.inner.clone(),
        }
    }
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl Queue {
    /// A handle on the queue at `path` (created with its parents on first use).
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// assert!(avout::recipes::queue::Queue::new(client, "relative").is_err());
    /// # }
    /// ```
    pub fn new(client: &Client, path: impl Into<String>) -> Result<Self, QueueError> {
        let path = path.into();
        path::validate_path(&path, false)?;
        Ok(Queue {
            inner: Arc::new(Inner {
                path,
                stash: StdMutex::new(VecDeque::new()),
                client: client.clone(),
                planted: Bugs::NONE,
            }),
        })
    }

    /// The same handle with `bugs` planted in its takes (none by default; see
    /// [`crate::planted`]).
    ///
    /// # Panics
    ///
    /// If the handle has been cloned: bugs are planted in a new handle, before it is shared.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// use avout::recipes::queue::Queue;
    /// let q = Queue::new(client, "/jobs").unwrap().planted(avout::planted::Bugs::NONE);
    /// # }
    /// ```
    pub fn planted(mut self, bugs: Bugs) -> Self {
        Arc::get_mut(&mut self.inner)
            .expect("bugs are planted in a new handle, before it is shared")
            .planted = bugs;
        self
    }

    /// The queue's path.
    ///
    /// ```no_run
    /// # fn demo(q: avout::recipes::queue::Queue) {
    /// println!("{}", q.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Appends an element. Returns once it is enqueued, exactly once.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::Queue) -> Result<(), avout::recipes::queue::QueueError> {
    /// q.put(b"payload").await?;
    /// # Ok(()) }
    /// ```
    pub async fn put(&self, data: &[u8]) -> Result<(), QueueError> {
        self.put_priority(0, data).await
    }

    async fn put_priority(&self, priority: u8, data: &[u8]) -> Result<(), QueueError> {
        self.put_tagged(priority, None, data).await
    }

    async fn put_tagged(
        &self,
        priority: u8,
        tag: Option<&str>,
        data: &[u8],
    ) -> Result<(), QueueError> {
        let zk = &self.inner.client.current_session().await?;
        let mut machine = tagged_put_machine(
            &self.inner.path,
            priority,
            tag,
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
    /// # async fn demo(q: avout::recipes::queue::Queue) -> Result<(), avout::recipes::queue::QueueError> {
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
    /// # async fn demo(q: avout::recipes::queue::Queue) -> Result<(), avout::recipes::queue::QueueError> {
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
    /// # async fn demo(q: avout::recipes::queue::Queue) -> Result<(), avout::recipes::queue::QueueError> {
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
    /// # async fn demo(q: avout::recipes::queue::Queue) -> Result<(), avout::recipes::queue::QueueError> {
    /// println!("{} waiting", q.count().await?);
    /// # Ok(()) }
    /// ```
    pub async fn count(&self) -> Result<usize, QueueError> {
        let session = self.inner.client.current_session().await?;
        let zk = &*session;
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
        self.take_selecting(patience, || Select::All, true).await
    }

    /// Runs one take of the elements `select` picks; `select` is called once the session is
    /// at hand, just before the machine starts (a delay queue reads its clock there). `stash`: whether a cancelled take keeps its element for the next take (a
    /// removal's element is not to be delivered).
    async fn take_selecting(
        &self,
        patience: Patience,
        select: impl FnOnce() -> Select,
        stash: bool,
    ) -> Result<Option<Element>, QueueError> {
        let zk = &self.inner.client.current_session().await?;
        let machine = TakeMachine::new(&self.inner.path, zk.new_guid(), patience)
            .selecting(select())
            .planted(self.inner.planted);
        let mut taking = Taking {
            machine,
            stash,
            inner: Some((self.inner.clone(), zk.clone())),
        };
        let result = drive(&**zk, &mut taking.machine).await;
        taking.inner = None;
        result
    }
}

/// A take in progress; if dropped with a claim in doubt, settles it in the background.
struct Taking {
    machine: TakeMachine,
    /// Keep a claimed element for the next take (else the settling only drops the receipt).
    stash: bool,
    /// `Some` until the take finishes: the queue, and the session the take runs on.
    inner: Option<(Arc<Inner>, Session)>,
}

impl Drop for Taking {
    fn drop(&mut self) {
        let Some((inner, session)) = self.inner.take() else {
            return;
        };
        let Some((receipt, element)) = self.machine.in_doubt() else {
            return;
        };
        let stash = self.stash;
        spawn_cleanup("settling a cancelled take", async move {
            let zk = &*session;
            // Sent after the claim on the same session, so it sees the claim's outcome.
            if idempotent(zk, || zk.exists(&receipt)).await?.is_some() {
                if stash {
                    lock(&inner.stash).push_back(element);
                }
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
/// use avout::recipes::queue::PriorityQueue;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::recipes::queue::QueueError> {
/// let tasks = PriorityQueue::new(client, "/tasks")?;
/// tasks.put(9, b"batch").await?;
/// tasks.put(0, b"urgent").await?;
/// assert_eq!(tasks.take().await?.data, b"urgent");
/// # Ok(()) }
/// ```
pub struct PriorityQueue {
    queue: Queue,
}

impl Clone for PriorityQueue {
    fn clone(&self) -> Self {
        PriorityQueue {
            queue: self.queue.clone(),
        }
    }
}

impl std::fmt::Debug for PriorityQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PriorityQueue")
            .field("path", &self.queue.inner.path)
            .finish()
    }
}

impl PriorityQueue {
    /// A handle on the priority queue at `path` (created with its parents on first use).
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// let q = avout::recipes::queue::PriorityQueue::new(client, "/tasks").unwrap();
    /// # }
    /// ```
    pub fn new(client: &Client, path: impl Into<String>) -> Result<Self, QueueError> {
        Ok(PriorityQueue {
            queue: Queue::new(client, path)?,
        })
    }

    /// Appends an element with `priority` (0 is taken first), exactly once.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::PriorityQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// q.put(5, b"normal").await?;
    /// # Ok(()) }
    /// ```
    pub async fn put(&self, priority: u8, data: &[u8]) -> Result<(), QueueError> {
        self.queue.put_priority(priority, data).await
    }

    /// Removes and returns the most urgent element, waiting while the queue is empty.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::PriorityQueue) -> Result<(), avout::recipes::queue::QueueError> {
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
    /// # async fn demo(q: avout::recipes::queue::PriorityQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// let maybe = q.try_take().await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_take(&self) -> Result<Option<Element>, QueueError> {
        self.queue.try_take().await
    }

    /// Like [`take`](Self::take), waiting at most `timeout`.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::PriorityQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// let maybe = q.take_for(std::time::Duration::from_millis(200)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn take_for(&self, timeout: Duration) -> Result<Option<Element>, QueueError> {
        self.queue.take_for(timeout).await
    }

    /// The number of elements now in the queue.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::PriorityQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// println!("{}", q.count().await?);
    /// # Ok(()) }
    /// ```
    pub async fn count(&self) -> Result<usize, QueueError> {
        self.queue.count().await
    }
}

#[cfg(test)]
mod tests;
