//! The seam between the STM's frontend ([`Stm`](super::Stm), [`Tx`](super::Tx),
//! [`Ref`](super::Ref)) and a protocol ([`Protocol::Optimistic`](super::Protocol),
//! [`Protocol::Mvcc`](super::Protocol)): what a protocol must implement.
//!
//! Hidden from the rendered docs: it is an interface between this crate's modules, public only
//! so that its contract can be documented and tested.
//!
//! # What the frontend does, and what it leaves to the protocol
//!
//! The frontend owns everything about values: decoding and encoding with the ref's codec,
//! the transaction's in-memory values (what `deref` returns after a `ref_set` in the same
//! try), running `alter`/`commute` functions, validators (before commit, and inside the
//! recompute of a commuted value), watchers (after a commit), the retry loop and its limit,
//! the body's errors and the counters the frontend keeps (commits, retries, read faults).
//!
//! A protocol sees bytes and ref names only. It implements [`Engine`] (one per
//! [`Stm`](super::Stm) handle, built from an [`EngineContext`] by a match arm in
//! `Stm::open`) and [`Attempt`] (one per try of a transaction). For each try the frontend
//! calls:
//!
//! 1. [`Engine::begin`] once;
//! 2. [`Attempt::read`] the first time the body touches a ref in this try (deref, alter,
//!    ref_set, ensure or commute all need the ref's current bytes; the frontend keeps them
//!    for the rest of the try, so a protocol is asked once per ref per try), then
//!    [`Attempt::ensure`] for an `ensure`;
//! 3. exactly one of [`Attempt::commit`] (the body returned `Ok`) or [`Attempt::abort`] (the
//!    body failed, an operation failed, or validation rejected a value). After a commit that
//!    returned [`TryError::Retry`] the frontend calls nothing more on that attempt: a protocol
//!    that needs cleanup after a failed commit does it inside `commit`.
//!
//! A protocol MUST:
//!
//! - Make a committed transaction serializable with every other committed transaction on the
//!   root, counting the refs in [`CommitPlan::reads`] as read, [`CommitPlan::ensures`] as
//!   read and protected against concurrent writers (Clojure's `ensure`), and every written or
//!   commuted ref as written. (Mvcc may offer snapshot isolation for plain reads, as Clojure
//!   does; it MUST then document it.)
//! - Return [`TryError::Retry`] for a conflict (the frontend re-runs the body) and count what
//!   it should: [`Counters::read_faults`] for a read of a value it no longer holds.
//! - Never return `Retry` only because a commuted ref moved: re-read it, call
//!   [`Commute::recompute`] on its newest bytes and commit again (count
//!   [`Counters::commit_redos`]).
//! - Never blindly re-send a non-idempotent request after an indeterminate error: decide
//!   whether it took effect first, or fail with [`StmError::Indeterminate`](super::StmError).
//! - Map a lost session to [`StmError::SessionLost`](super::StmError) (see
//!   [`StmError::from_zk`](super::StmError::from_zk)) and leave nothing half-written that
//!   others would wait on forever.
//! - Run its request logic as sans-IO [`Machine`](crate::machine::Machine)s through
//!   [`run_machine`], which counts requests and round trips in [`Counters`].
//! - Be deterministic given the backend's behaviour (no clock reads outside what the driver
//!   gives machines, no OS randomness: ids from [`Coordination::new_guid`], no `HashMap`
//!   iteration), so simulated runs replay.
//!
//! ```
//! use avout::stm::protocol::{CommitPlan, TryError, RetryReason};
//! let plan = CommitPlan::default();
//! assert!(plan.is_read_only());
//! let conflict = TryError::Retry(RetryReason::Conflict { name: Some("a".into()) });
//! assert!(matches!(conflict, TryError::Retry(_)));
//! ```

use std::any::Any;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;

use crate::Coordination;
use crate::client::Session;
use crate::machine::{Driving, Machine, Millis, Reply, Request, Token, drive};
use crate::{SessionState, WatchedEvent};

use super::{Protocol, StmConfig, StmError};

/// A failure a protocol reports: an [`StmError`] that is never the body's.
pub type Failure = StmError<Infallible>;

/// Why a protocol step did not succeed.
///
/// ```
/// use avout::stm::protocol::{TryError, RetryReason};
/// let e = TryError::Retry(RetryReason::Barged);
/// assert!(matches!(e, TryError::Retry(RetryReason::Barged)));
/// ```
#[derive(Debug)]
pub enum TryError {
    /// A conflict: abandon this try and run the body again (counted as a retry).
    Retry(RetryReason),
    /// Stop the transaction with this error.
    Fail(Failure),
}

impl From<Failure> for TryError {
    fn from(f: Failure) -> Self {
        TryError::Fail(f)
    }
}

/// Why a try is retried.
///
/// ```
/// let r = avout::stm::protocol::RetryReason::ReadFault { name: "a".into() };
/// assert!(matches!(r, avout::stm::protocol::RetryReason::ReadFault { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RetryReason {
    /// Another transaction changed a ref this one read or wrote (named when known).
    Conflict {
        /// The ref, when known.
        name: Option<String>,
    },
    /// The value this try must read is no longer kept (trimmed history). The protocol counts
    /// it in [`Counters::read_faults`].
    ReadFault {
        /// The ref.
        name: String,
    },
    /// An older transaction barged this one (Mvcc).
    Barged,
    /// A connection loss interrupted the commit, and it was found not to have taken effect:
    /// nothing was committed, and no other transaction was involved.
    Interrupted,
}

/// What the frontend keeps for a protocol across the tries of one transaction.
///
/// ```
/// let slot = avout::stm::protocol::TxnSlot::default();
/// assert_eq!(slot.retries, 0);
/// ```
#[derive(Default)]
pub struct TxnSlot {
    /// Tries that ended in a retry so far (0 on the first try).
    pub retries: u32,
    /// The protocol's own state for the transaction (for example Mvcc's start point, which
    /// gives an older transaction priority when barging). `None` on the first try.
    pub state: Option<Box<dyn Any + Send>>,
}

/// Per-[`Stm`](super::Stm) counters, shared by the frontend and the protocol.
///
/// ```
/// let c = avout::stm::protocol::Counters::default();
/// c.add(&c.commits, 2);
/// assert_eq!(c.snapshot().commits, 2);
/// ```
#[derive(Debug, Default)]
pub struct Counters {
    /// Committed transactions (frontend).
    pub commits: AtomicU64,
    /// Tries abandoned for a conflict and run again (frontend).
    pub retries: AtomicU64,
    /// Of the retries, those for a conflict with another transaction's write or lock
    /// (frontend): [`RetryReason::Conflict`].
    pub conflicts: AtomicU64,
    /// Reads of a value no longer kept (protocol).
    pub read_faults: AtomicU64,
    /// Commit phases run again because only a commuted ref moved (protocol).
    pub commit_redos: AtomicU64,
    /// Requests sent ([`run_machine`]).
    pub requests: AtomicU64,
    /// Round trips: bursts of requests sent while waiting for nothing else
    /// ([`run_machine`]).
    pub round_trips: AtomicU64,
    /// Commits whose reply was lost and whose outcome was then decided by reading (protocol).
    pub recoveries: AtomicU64,
    /// Younger transactions killed by this handle's transactions (Mvcc's barging; protocol).
    pub barges: AtomicU64,
    /// Tries of this handle's transactions killed by an older transaction's barge (protocol).
    pub killed: AtomicU64,
}

impl Counters {
    /// Adds `n` to one counter.
    ///
    /// ```
    /// let c = avout::stm::protocol::Counters::default();
    /// c.add(&c.retries, 1);
    /// assert_eq!(c.snapshot().retries, 1);
    /// ```
    pub fn add(&self, counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The counts now.
    ///
    /// ```
    /// assert_eq!(avout::stm::protocol::Counters::default().snapshot().requests, 0);
    /// ```
    pub fn snapshot(&self) -> super::StmStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        super::StmStats {
            commits: get(&self.commits),
            retries: get(&self.retries),
            conflicts: get(&self.conflicts),
            read_faults: get(&self.read_faults),
            commit_redos: get(&self.commit_redos),
            requests: get(&self.requests),
            round_trips: get(&self.round_trips),
            recoveries: get(&self.recoveries),
            barges: get(&self.barges),
            killed: get(&self.killed),
        }
    }
}

/// What a protocol's engine is built from.
///
/// ```no_run
/// # fn f(cx: avout::stm::protocol::EngineContext) {
/// assert!(cx.root.starts_with('/'));
/// # }
/// ```
pub struct EngineContext {
    /// The session to prepare the root on (the engine keeps no session: every call gets the
    /// one it runs on).
    pub zk: Session,
    /// The root path (validated, no trailing `/`); the frontend has bound it to the protocol
    /// (its node exists and names the protocol). The protocol's nodes go under it.
    pub root: String,
    /// The configuration.
    pub config: StmConfig,
    /// The counters.
    pub counters: Arc<Counters>,
}

/// A value at a past commit point.
///
/// ```
/// let h = avout::stm::protocol::HistoryEntry { point: 7, value: b"1".to_vec() };
/// assert_eq!(h.point, 7);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HistoryEntry {
    /// The commit point (the protocol's clock: larger is later).
    pub point: u64,
    /// The value's bytes, as the ref's codec wrote them.
    pub value: Vec<u8>,
}

/// A protocol, for one [`Stm`](super::Stm) handle; see the [module docs](self).
pub trait Engine: Send + Sync + 'static {
    /// Which protocol this is.
    fn protocol(&self) -> Protocol;

    /// Creates the ref `name` holding `initial` if it does not exist; an existing ref keeps
    /// its value. MUST be safe to call concurrently from many clients and to repeat.
    fn create_ref<'a>(
        &'a self,
        zk: &'a Session,
        name: &'a str,
        initial: &'a [u8],
    ) -> BoxFuture<'a, Result<(), Failure>>;

    /// The newest committed value of `name`, outside any transaction (Clojure's `deref` of
    /// a ref outside `dosync`). It should be linearizable (see each protocol's docs).
    fn read_latest<'a>(
        &'a self,
        zk: &'a Session,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<u8>, Failure>>;

    /// Starts a try of a transaction on `zk`. `slot` lives across the transaction's tries,
    /// and every try of one transaction runs on the same session: if it ends, the
    /// transaction fails with [`StmError::SessionLost`](super::StmError::SessionLost).
    fn begin<'a>(
        &'a self,
        zk: &'a Session,
        slot: &'a mut TxnSlot,
    ) -> BoxFuture<'a, Result<Box<dyn Attempt + 'a>, TryError>>;

    /// Makes the next try's read of `name` see at least the newest committed node: what the
    /// frontend asks when the value a node it read points at is gone from the ref store
    /// (superseded and collected), so that a cached or lagging node is not read again and
    /// again. The default does nothing (a protocol that reads at a fresh point each try).
    fn refresh<'a>(&'a self, zk: &'a Session, name: &'a str) -> BoxFuture<'a, Result<(), Failure>> {
        let _ = (zk, name);
        Box::pin(async { Ok(()) })
    }

    /// The values of `name` at past commit points, newest first (the newest committed value
    /// first). Protocols that keep no history return
    /// [`StmError::Unsupported`](super::StmError) (the default).
    fn history<'a>(
        &'a self,
        zk: &'a Session,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<HistoryEntry>, Failure>> {
        let _ = (zk, name);
        let protocol = self.protocol();
        Box::pin(async move {
            Err(StmError::Unsupported {
                protocol,
                what: "history of a ref",
            })
        })
    }
}

/// One try of a transaction; see the [module docs](self).
pub trait Attempt: Send {
    /// The bytes of `name` as this try sees them. Called once per ref per try. The protocol
    /// records what it needs to validate the read at commit (a version, a read point). A ref
    /// that does not exist is [`StmError::NoRef`](super::StmError).
    fn read<'a>(&'a mut self, name: &'a str) -> BoxFuture<'a, Result<Vec<u8>, TryError>>;

    /// [`read`](Self::read) for a ref the body writes next (`ref_set`, `alter`): the
    /// protocol may take the read as cheaply as the [`write`](Self::write) that follows lets
    /// it validate (Mvcc's first read then skips its `sync`). [`write`](Self::write) of
    /// `name` comes next, before any other call, unless the try ends. The default reads.
    fn read_for_write<'a>(&'a mut self, name: &'a str) -> BoxFuture<'a, Result<Vec<u8>, TryError>> {
        self.read(name)
    }

    /// The body is about to write `name` (already read in this try) for the first time in this
    /// try (`ref_set` or `alter`): Clojure's moment to take the ref's write ownership, and to
    /// barge a younger owner. Called at most once per ref per try. A protocol may send
    /// requests here and return at once, collecting their replies at its next call (a
    /// conflict then surfaces there); the default does nothing.
    fn write<'a>(&'a mut self, name: &'a str) -> BoxFuture<'a, Result<(), TryError>> {
        let _ = name;
        Box::pin(async { Ok(()) })
    }

    /// Protects `name` (already read in this try) against writers until the try ends
    /// (Clojure's `ensure`). Called at most once per ref per try.
    fn ensure<'a>(&'a mut self, name: &'a str) -> BoxFuture<'a, Result<(), TryError>>;

    /// Commits the try. On success returns, for every written or commuted ref, its value
    /// before and after.
    fn commit<'a>(&'a mut self, plan: CommitPlan<'a>)
    -> BoxFuture<'a, Result<Committed, TryError>>;

    /// Abandons the try (the body failed, or a step before commit did), releasing whatever
    /// it holds. Errors here are secondary: the frontend reports the first failure, or
    /// this one when the try was only to be retried.
    fn abort(&mut self) -> BoxFuture<'_, Result<(), Failure>>;
}

/// What a try commits. Every ref the try touched appears in exactly one of the four lists,
/// which are sorted by name.
///
/// ```
/// use avout::stm::protocol::CommitPlan;
/// let plan = CommitPlan { reads: vec!["a".into()], ..CommitPlan::default() };
/// assert!(plan.is_read_only());
/// ```
#[derive(Default)]
pub struct CommitPlan<'a> {
    /// Refs read (by `deref` or `alter`'s function, before any commute of them) and not
    /// written: their values must still be the ones read (a protocol with snapshot reads
    /// may skip this; see the module docs).
    pub reads: Vec<String>,
    /// Refs `ensure`d and not written: read, and protected against concurrent writers.
    pub ensures: Vec<String>,
    /// Refs written (`ref_set`, `alter`, or a commute of a ref also read, ensured or set):
    /// their new bytes, validated. The write is conditional on the value the try read.
    pub writes: Vec<(String, Vec<u8>)>,
    /// Refs only commuted: their new values are computed at commit from the newest bytes.
    pub commutes: Vec<Commute<'a>>,
    /// Agent sends ([`Tx::send`](super::Tx::send)): creates of sequential queue entries the
    /// protocol MUST put in its commit `multi`, and nowhere else, so they are made if and
    /// only if the try commits. A try with sends is not read-only.
    pub sends: Vec<crate::Op>,
}

impl CommitPlan<'_> {
    /// Whether the try writes nothing.
    ///
    /// ```
    /// assert!(avout::stm::protocol::CommitPlan::default().is_read_only());
    /// ```
    pub fn is_read_only(&self) -> bool {
        self.writes.is_empty() && self.commutes.is_empty() && self.sends.is_empty()
    }
}

/// Computes a commuted ref's new bytes from its newest committed bytes; see
/// [`Commute::recompute`].
pub type Recompute<'a> = Box<dyn FnMut(&[u8]) -> Result<Vec<u8>, Failure> + Send + 'a>;

/// A ref whose new value is computed at commit from its newest committed bytes.
pub struct Commute<'a> {
    /// The ref.
    pub name: String,
    /// Decodes the newest bytes, applies the transaction's commute functions in order,
    /// validates and encodes. May be called several times (each time a commit phase is
    /// redone); fails with `Invalid`, `Decode` or `Encode`, which abort the transaction.
    pub recompute: Recompute<'a>,
}

/// A ref's value before and after a commit.
///
/// ```
/// let c = avout::stm::protocol::Change { name: "a".into(), old: b"1".to_vec(), new: b"2".to_vec() };
/// assert_ne!(c.old, c.new);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Change {
    /// The ref.
    pub name: String,
    /// Its bytes before the commit.
    pub old: Vec<u8>,
    /// Its bytes after.
    pub new: Vec<u8>,
}

/// A successful commit.
///
/// ```
/// let c = avout::stm::protocol::Committed::default();
/// assert!(c.changes.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Committed {
    /// One entry per written or commuted ref, sorted by name.
    pub changes: Vec<Change>,
}

/// Counts the requests and round trips of a machine as [`drive`] runs it.
struct Counted<M> {
    inner: M,
    requests: u64,
    round_trips: u64,
    in_burst: bool,
    /// The first burst travels with another machine's (see [`Started::start`]): not a round
    /// trip of its own.
    riding: bool,
}

impl<M> Counted<M> {
    fn new(inner: M, riding: bool) -> Self {
        Counted {
            inner,
            requests: 0,
            round_trips: 0,
            in_burst: false,
            riding,
        }
    }

    /// Adds the counts so far to `counters`, and starts counting from zero again.
    fn add_to(&mut self, counters: &Counters) {
        counters.add(&counters.requests, std::mem::take(&mut self.requests));
        counters.add(&counters.round_trips, std::mem::take(&mut self.round_trips));
    }
}

impl<M: Machine> Machine for Counted<M> {
    type Output = M::Output;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        let next = self.inner.poll_request();
        if next.is_some() {
            self.requests += 1;
            if !self.in_burst {
                if !std::mem::take(&mut self.riding) {
                    self.round_trips += 1;
                }
                self.in_burst = true;
            }
        }
        next
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        self.in_burst = false;
        self.riding = false;
        self.inner.handle_reply(now, token, reply);
    }

    fn handle_watch(&mut self, now: Millis, token: Token, event: WatchedEvent) {
        self.in_burst = false;
        self.riding = false;
        self.inner.handle_watch(now, token, event);
    }

    fn handle_session(&mut self, now: Millis, state: SessionState) {
        self.in_burst = false;
        self.inner.handle_session(now, state);
    }

    fn handle_timer(&mut self, now: Millis) {
        self.in_burst = false;
        self.riding = false;
        self.inner.handle_timer(now);
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.inner.poll_timer()
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.inner.poll_output()
    }
}

/// Runs `machine` with [`drive`], adding the requests it sent and the round trips it waited
/// for to `counters`.
///
/// A round trip is counted each time the machine sends after having been told something
/// (a reply, a watch, a session change, a timer): requests it sends back to back travel
/// together and count once.
pub async fn run_machine<C, M>(zk: &C, counters: &Counters, machine: &mut M) -> M::Output
where
    C: Coordination + ?Sized,
    M: Machine,
{
    let mut counted = Counted::new(machine, false);
    let output = drive(zk, &mut counted).await;
    counted.add_to(counters);
    output
}

/// A counted machine whose first requests are sent, to be finished later: what lets a
/// protocol send a step's requests while the transaction's body goes on (Mvcc tags a ref when
/// the body first writes it), or right behind another machine's requests.
///
/// ```no_run
/// # async fn f<C: avout::Coordination, M: avout::machine::Machine>(zk: &C, m: M) {
/// use avout::stm::protocol::{Counters, Started};
/// let counters = Counters::default();
/// let mut step = Started::start(zk, m, false); // sent now
/// // ... other work, other requests ...
/// let _out = step.finish(&counters).await;
/// # }
/// ```
pub struct Started<'a, C: ?Sized, M> {
    driving: Driving<'a, C, Counted<M>>,
}

impl<'a, C, M> Started<'a, C, M>
where
    C: Coordination + ?Sized,
    M: Machine,
{
    /// Starts `machine` on `zk`: its first requests are sent now. With `riding`, they travel
    /// with requests already in flight that nothing has waited for yet (another machine's,
    /// started just before), so they are not counted as a round trip of their own. (If the
    /// caller waited on something else meanwhile, such as a body sleeping between a write and
    /// a read, the earlier requests may have been answered already: the count is of the
    /// protocol's own waits.)
    ///
    /// ```no_run
    /// # fn f<C: avout::Coordination, M: avout::machine::Machine>(zk: &C, m: M) {
    /// let _step = avout::stm::protocol::Started::start(zk, m, true);
    /// # }
    /// ```
    pub fn start(zk: &'a C, machine: M, riding: bool) -> Self {
        Started {
            driving: Driving::start(zk, Counted::new(machine, riding)),
        }
    }

    /// The machine.
    ///
    /// ```no_run
    /// # fn f<C: avout::Coordination, M: avout::machine::Machine>(s: &avout::stm::protocol::Started<'_, C, M>) {
    /// let _m: &M = s.machine();
    /// # }
    /// ```
    pub fn machine(&self) -> &M {
        &self.driving.machine().inner
    }

    /// The machine, to give it a command between two `finish`es.
    pub(crate) fn machine_mut(&mut self) -> &mut M {
        &mut self.driving.machine_mut().inner
    }

    /// The machine's clock now.
    pub(crate) fn now(&self) -> Millis {
        self.driving.now()
    }

    /// Runs the machine to its output, adding its requests and round trips to `counters`.
    ///
    /// ```no_run
    /// # async fn f<C: avout::Coordination, M: avout::machine::Machine>(zk: &C, m: M) {
    /// let counters = avout::stm::protocol::Counters::default();
    /// let _out = avout::stm::protocol::Started::start(zk, m, false).finish(&counters).await;
    /// # }
    /// ```
    pub async fn finish(&mut self, counters: &Counters) -> M::Output {
        let output = self.driving.finish().await;
        self.driving.machine_mut().add_to(counters);
        output
    }
}

/// Commits a try that touched no ref and only sends to agents: one `multi` of the sends'
/// creates. A lost reply cannot be decided (the entries may have been consumed since), so
/// it fails with [`StmError::Indeterminate`](super::StmError::Indeterminate); nothing is sent
/// again.
pub(crate) async fn send_only(
    zk: &Session,
    counters: &Counters,
    sends: Vec<crate::Op>,
) -> Result<Committed, TryError> {
    if sends.is_empty() {
        return Ok(Committed::default());
    }
    counters.add(&counters.requests, 1);
    counters.add(&counters.round_trips, 1);
    match zk.multi(&sends).await {
        Ok(_) => Ok(Committed::default()),
        Err(e) if e.is_indeterminate() => Err(TryError::Fail(StmError::Indeterminate {
            detail: format!("the sends-only commit lost its reply: {e}"),
        })),
        Err(e) => Err(TryError::Fail(StmError::from_zk(e))),
    }
}
