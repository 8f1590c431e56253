//! The delay queue (Curator's `DistributedDelayQueue`): each element is due at a time, and is
//! taken only once due. Time comes from an injected [`Clock`].

use super::*;

/// Where a [`DelayQueue`] reads the time: milliseconds since the UNIX epoch.
///
/// Due times are compared across processes, so every producer and consumer of a queue must
/// read the same time scale; see [`DelayQueue`] on clock skew. Simulations inject a
/// [`TokioClock`], so that nothing they run reads the wall clock.
///
/// ```
/// use avout::recipes::queue::Clock;
/// #[derive(Debug)]
/// struct Fixed(u64);
/// impl Clock for Fixed {
///     fn now_ms(&self) -> u64 { self.0 }
/// }
/// assert_eq!(Fixed(7).now_ms(), 7);
/// ```
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The time now, in milliseconds since the UNIX epoch.
    fn now_ms(&self) -> u64;
}

/// The system's wall clock: the default, for production.
///
/// ```
/// use avout::recipes::queue::{Clock, SystemClock};
/// assert!(SystemClock.now_ms() > 1_600_000_000_000);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Tokio's clock, counted from a given epoch reading: virtual and deterministic under a
/// simulation (or a paused runtime). Processes sharing a queue must share one such clock (or
/// ones built at the same virtual instant with the same epoch).
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use avout::recipes::queue::{Clock, TokioClock};
/// let clock = TokioClock::new(1_000);
/// tokio::time::sleep(std::time::Duration::from_millis(5)).await;
/// assert_eq!(clock.now_ms(), 1_005);
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct TokioClock {
    epoch_at_start: u64,
    start: tokio::time::Instant,
}

impl TokioClock {
    /// A clock that reads `epoch_at_start` now and advances with tokio's time.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use avout::recipes::queue::{Clock, TokioClock};
    /// assert_eq!(TokioClock::new(42).now_ms(), 42);
    /// # }
    /// ```
    pub fn new(epoch_at_start: u64) -> Self {
        TokioClock {
            epoch_at_start,
            start: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now_ms(&self) -> u64 {
        let elapsed = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.epoch_at_start.saturating_add(elapsed)
    }
}

/// A queue whose elements are each due at a time, and taken only once due, earliest due
/// first (Curator's `DistributedDelayQueue`).
///
/// # Layout and algorithm
///
/// An element is named `queue-000-<GUID>-|<due>|<seq>`, `due` being epoch milliseconds in
/// 16 hex digits between two `|` separators (Curator writes `queue-|<due hex>|<seq>`). Puts and
/// claims are the [`Queue`]'s, exactly once. A take lists the queue, and claims the due
/// element with the earliest (due, sequence). If none is due it does not poll: it waits on a
/// children watch (a new element may be due sooner) *and* a timer set for the earliest due
/// time it saw, and lists again when either fires.
///
/// # Time and clock skew
///
/// The due time is read from the producer's [`Clock`] and compared with the consumer's. Two
/// processes whose clocks differ by `d` see an element due `d` early or late: the guarantee
/// is "never taken before due *by the consumer's clock*". Keep clocks synchronised (NTP) and
/// delays long compared with the skew; [`put_after`](Self::put_after) is relative to the
/// producer's clock. The machine itself reads no clock: the handle reads its clock once just
/// before a take starts and the machine counts from there with the driver's monotonic time,
/// so a wall-clock step during one take does not move its due times.
///
/// # Connection loss, session expiry, cancellation
///
/// As for [`Queue`] (see the [module docs](super)): exactly-once puts and takes, a take
/// ending in [`QueueError::TakeInDoubt`] if its session expires with a claim in doubt, the
/// handle carrying on on the client's next session; a cancelled take with its claim in flight
/// keeps the element for this handle's next take. A take waiting for a due time is cancelled
/// by dropping it; nothing was claimed.
///
/// ```no_run
/// use std::time::Duration;
/// use avout::recipes::queue::DelayQueue;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::recipes::queue::QueueError> {
/// let retries = DelayQueue::new(client, "/retries")?;
/// retries.put_after(Duration::from_secs(30), b"call back").await?;
/// let due = retries.take().await?; // about 30 s later
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct DelayQueue {
    queue: Queue,
    clock: Arc<dyn Clock>,
}

impl DelayQueue {
    /// A handle on the delay queue at `path`, on the [`SystemClock`].
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// assert!(avout::recipes::queue::DelayQueue::new(client, "relative").is_err());
    /// # }
    /// ```
    pub fn new(client: &Client, path: impl Into<String>) -> Result<Self, QueueError> {
        Self::with_clock(client, path, Arc::new(SystemClock))
    }

    /// A handle reading the time from `clock` (a [`TokioClock`] in simulations).
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// use std::sync::Arc;
    /// use avout::recipes::queue::{DelayQueue, TokioClock};
    /// let q = DelayQueue::with_clock(client, "/later", Arc::new(TokioClock::new(0))).unwrap();
    /// # }
    /// ```
    pub fn with_clock(
        client: &Client,
        path: impl Into<String>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, QueueError> {
        Ok(DelayQueue {
            queue: Queue::new(client, path)?,
            clock,
        })
    }

    /// The queue's path.
    ///
    /// ```no_run
    /// # fn demo(q: avout::recipes::queue::DelayQueue) {
    /// println!("{}", q.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        self.queue.path()
    }

    /// The clock's reading now (epoch milliseconds).
    ///
    /// ```no_run
    /// # fn demo(q: avout::recipes::queue::DelayQueue) {
    /// let now = q.now_ms();
    /// # }
    /// ```
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Appends an element due at `due_ms` (epoch milliseconds; a past time is due at once),
    /// exactly once.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::DelayQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// q.put(q.now_ms() + 60_000, b"in a minute").await?;
    /// # Ok(()) }
    /// ```
    pub async fn put(&self, due_ms: u64, data: &[u8]) -> Result<(), QueueError> {
        let tag = select::due_tag(due_ms);
        self.queue.put_tagged(0, Some(&tag), data).await
    }

    /// Appends an element due `delay` from now by this handle's clock.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::DelayQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// q.put_after(std::time::Duration::from_secs(5), b"soon").await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_after(&self, delay: Duration, data: &[u8]) -> Result<(), QueueError> {
        let delay = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.put(self.clock.now_ms().saturating_add(delay), data)
            .await
    }

    /// Removes and returns the due element with the earliest due time, waiting (on a watch
    /// and a timer, not polling) until one is due.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::DelayQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// let e = q.take().await?;
    /// println!("due at {:?}", e.due_ms());
    /// # Ok(()) }
    /// ```
    pub async fn take(&self) -> Result<Element, QueueError> {
        Ok(self
            .take_with(Patience::Forever)
            .await?
            .expect("an unbounded take returns an element"))
    }

    /// Removes and returns the earliest due element, or `None` if none is due now.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::DelayQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// while let Some(e) = q.try_take().await? { println!("{:?}", e.data); }
    /// # Ok(()) }
    /// ```
    pub async fn try_take(&self) -> Result<Option<Element>, QueueError> {
        self.take_with(Patience::None).await
    }

    /// Like [`take`](Self::take), waiting at most `timeout` for an element to be due.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::DelayQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// let maybe = q.take_for(std::time::Duration::from_secs(1)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn take_for(&self, timeout: Duration) -> Result<Option<Element>, QueueError> {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.take_with(Patience::Millis(ms)).await
    }

    /// The number of elements in the queue, due or not.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::DelayQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// println!("{}", q.count().await?);
    /// # Ok(()) }
    /// ```
    pub async fn count(&self) -> Result<usize, QueueError> {
        self.queue.count().await
    }

    async fn take_with(&self, patience: Patience) -> Result<Option<Element>, QueueError> {
        // An element a cancelled take claimed was due when claimed.
        if let Some(element) = lock(&self.queue.inner.stash).pop_front() {
            return Ok(Some(element));
        }
        let clock = &self.clock;
        let select = || Select::Due {
            epoch_at_start: clock.now_ms(),
        };
        self.queue.take_selecting(patience, select, true).await
    }
}

impl Element {
    /// The due time a [`DelayQueue`] element was put with (epoch milliseconds): its tag read
    /// as hex (`None` for a FIFO or priority queue's element, or an id that is not hex).
    ///
    /// ```
    /// # use avout::recipes::queue::Element;
    /// let e = Element { name: "queue-000-00000000000000000000000000000001-|00000000000003E8|0000000009".into(), data: vec![] };
    /// assert_eq!(e.due_ms(), Some(1000));
    /// ```
    pub fn due_ms(&self) -> Option<u64> {
        select::due(&self.name)
    }
}
