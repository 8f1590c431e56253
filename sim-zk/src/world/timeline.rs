//! The world's time and its agenda: the virtual clock and the queue of pending happenings.
//!
//! Happenings are kept in (time, insertion) order: two due at the same nanosecond come out in
//! the order they were scheduled, so nothing but the order of the simulator's own calls ever
//! decides between them.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::nanos;

/// How many times the run's thread came back from parking. tokio's paused clock moves only
/// while the runtime parks (it jumps to the next timer when every task waits), so between two
/// counts it stands still, and reading it once is enough. Counted by the runtime's
/// `on_thread_unpark` hook; a workload that moved the clock itself (`tokio::time::advance`)
/// would go unseen until the next park.
#[derive(Clone, Debug, Default)]
pub(crate) struct Parks(Arc<AtomicU64>);

impl Parks {
    /// The thread came back from parking.
    pub(crate) fn unparked(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The virtual clock and the agenda of happenings of type `T`.
pub(super) struct Timeline<T> {
    /// tokio's instant at virtual time zero.
    start: Instant,
    /// Milliseconds since the Unix epoch at virtual time zero.
    epoch_ms: i64,
    /// The time of the last happening processed (or the latest time caught up to).
    clock: u64,
    /// Insertion counter: the tie-break between happenings due at once.
    seq: u64,
    queue: Queue<T>,
    /// The driver sleeps until then (`u64::MAX`: until kicked, or it has not said): a
    /// happening scheduled earlier needs a kick, a later one does not.
    driver_until: u64,
    /// A happening was scheduled before [`driver_until`](Self::driver_until).
    kick: bool,
    /// The parks counted, if they are (else tokio's clock is read every time).
    parks: Option<Parks>,
    /// tokio's clock as read after the given count of parks.
    read: Cell<Option<(u64, u64)>>,
}

impl<T> Timeline<T> {
    pub(super) fn new(start: Instant, epoch_ms: i64, parks: Option<Parks>) -> Self {
        Timeline {
            start,
            epoch_ms,
            clock: 0,
            seq: 0,
            queue: Queue::default(),
            driver_until: u64::MAX,
            kick: false,
            parks,
            read: Cell::new(None),
        }
    }

    /// The time of the happening being processed, in nanoseconds since the start.
    pub(super) fn clock(&self) -> u64 {
        self.clock
    }

    /// Virtual time now: the later of the clock and tokio's (which a workload may have
    /// advanced by sleeping).
    pub(super) fn now(&self) -> u64 {
        let read = || nanos(Instant::now().saturating_duration_since(self.start));
        let tokio_now = match &self.parks {
            None => read(),
            Some(parks) => {
                let count = parks.count();
                match self.read.get() {
                    Some((seen, at)) if seen == count => at,
                    _ => {
                        let at = read();
                        self.read.set(Some((count, at)));
                        at
                    }
                }
            }
        };
        self.clock.max(tokio_now)
    }

    /// Moves the clock up to [`now`](Self::now): for what a caller does outside the agenda
    /// (opening a session, injecting a fault).
    pub(super) fn catch_up(&mut self) {
        self.clock = self.now();
    }

    /// The clock as ZooKeeper's wall time (`ctime`, `mtime`, session deadlines).
    pub(super) fn now_ms(&self) -> i64 {
        self.epoch_ms + (self.clock / 1_000_000) as i64
    }

    pub(super) fn schedule(&mut self, at: u64, what: T) {
        self.seq += 1;
        self.kick |= at < self.driver_until;
        self.queue.push(at, self.seq, what);
    }

    /// The driver goes to sleep until the next happening, due at `at` nanoseconds (`None`:
    /// until it is kicked).
    pub(super) fn driver_sleeps(&mut self, at: Option<u64>) {
        self.driver_until = at.unwrap_or(u64::MAX);
        self.kick = false;
    }

    /// Whether something was scheduled before the driver wakes on its own (and so it must be
    /// kicked), since it last went to sleep; the answer is given once.
    pub(super) fn take_kick(&mut self) -> bool {
        std::mem::take(&mut self.kick)
    }

    /// The next happening, the clock moved up to its time.
    pub(super) fn pop(&mut self) -> Option<T> {
        let (at, what) = self.queue.pop()?;
        self.clock = self.clock.max(at);
        Some(what)
    }

    /// When the next happening is due, in nanoseconds.
    pub(super) fn next_time(&self) -> Option<u64> {
        self.queue.next_time()
    }

    /// Virtual time `at` as tokio's instant.
    pub(super) fn instant(&self, at: u64) -> Instant {
        self.start + Duration::from_nanos(at)
    }

    /// Every happening still pending, in no particular order.
    pub(super) fn pending(&self) -> impl Iterator<Item = &T> {
        self.queue.slots.iter().flatten()
    }
}

/// The pending happenings in (time, insertion) order: a heap of small keys over a slab of
/// entries, so that neither an event's allocation nor its bytes move as the heap reorders.
struct Queue<T> {
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    slots: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Queue<T> {
    fn next_time(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    fn push(&mut self, at: u64, seq: u64, what: T) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(what);
                slot
            }
            None => {
                self.slots.push(Some(what));
                self.slots.len() - 1
            }
        };
        self.heap.push(Reverse((at, seq, slot)));
    }

    fn pop(&mut self) -> Option<(u64, T)> {
        let Reverse((at, _, slot)) = self.heap.pop()?;
        let what = self.slots[slot].take().expect("a queued slot is full");
        self.free.push(slot);
        Some((at, what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline() -> Timeline<&'static str> {
        Timeline::new(Instant::now(), 1_000, None)
    }

    #[test]
    fn happenings_come_out_by_time_then_by_insertion() {
        let mut t = timeline();
        t.schedule(20, "late");
        t.schedule(10, "first at 10");
        t.schedule(10, "second at 10");
        t.schedule(5, "early");
        assert_eq!(t.next_time(), Some(5));
        assert_eq!(t.instant(5), t.start + Duration::from_nanos(5));
        let order: Vec<_> = std::iter::from_fn(|| t.pop()).collect();
        assert_eq!(order, ["early", "first at 10", "second at 10", "late"]);
        assert_eq!(t.clock(), 20);
        assert_eq!(t.next_time(), None);
    }

    #[test]
    fn the_clock_never_goes_back_and_slots_are_reused() {
        let mut t = timeline();
        t.schedule(50, "a");
        assert_eq!(t.pop(), Some("a"));
        // Scheduled in the past (a happening due "now" that tokio's clock overtook).
        t.schedule(30, "b");
        t.schedule(40, "c");
        assert_eq!(t.pop(), Some("b"));
        assert_eq!(t.clock(), 50, "popping an older happening keeps the clock");
        assert_eq!(t.pending().copied().collect::<Vec<_>>(), ["c"]);
        assert_eq!(t.queue.slots.len(), 2, "a freed slot is taken again");
    }

    #[test]
    fn only_a_happening_due_before_the_driver_wakes_kicks_it() {
        let mut t = timeline();
        t.schedule(50, "a");
        assert!(
            t.take_kick(),
            "a driver that has not said when it wakes is kicked"
        );
        assert!(!t.take_kick(), "once");
        t.driver_sleeps(Some(50));
        t.schedule(50, "b");
        t.schedule(70, "c");
        assert!(!t.take_kick(), "the driver wakes for them on its own");
        t.schedule(49, "d");
        assert!(t.take_kick());
        t.driver_sleeps(None);
        t.schedule(1_000, "e");
        assert!(t.take_kick(), "a driver waiting for a kick only gets one");
    }

    #[cfg(not(madsim))]
    #[tokio::test(start_paused = true)]
    async fn tokio_clock_is_read_again_only_after_a_park() {
        let parks = Parks::default();
        let t = Timeline::<()>::new(Instant::now(), 0, Some(parks.clone()));
        assert_eq!(t.now(), 0);
        tokio::time::advance(Duration::from_millis(3)).await;
        assert_eq!(t.now(), 0, "no park counted: the clock read before stands");
        parks.unparked();
        assert_eq!(t.now(), 3_000_000);
    }

    #[test]
    fn wall_time_counts_whole_milliseconds_from_the_epoch() {
        let mut t = timeline();
        t.schedule(2_999_999, "x");
        t.pop();
        assert_eq!(t.now_ms(), 1_002);
    }
}
