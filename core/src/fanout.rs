//! A value's transitions fanned out to every subscriber, each with its own queue: what the
//! session state stream and the managed client's connection events are made of.
//!
//! A subscriber sees every value published after it subscribed, in order, never a coalesced
//! summary: a lock holder must learn of a brief disconnect even if the connection came back
//! before it looked. Subscriptions that were dropped are forgotten at the next publish or
//! subscribe, so a long-lived publisher does not grow with every subscription ever taken.
//!
//! The publisher holds each queue strongly and forgets one whose subscription is gone (it is
//! the queue's last holder), rather than holding a `Weak`: loom has no `Weak`, and this way
//! loom explores the same code that runs.

use std::collections::VecDeque;
use std::task::{Context, Poll, Waker};

use crate::sync::{Arc, Mutex, lock};

struct Queue<T> {
    values: VecDeque<T>,
    /// Set with the last value: nothing follows it.
    closed: bool,
    waker: Option<Waker>,
}

struct Shared<T> {
    current: T,
    ended: bool,
    subscribers: Vec<Arc<Mutex<Queue<T>>>>,
}

/// The publishing side.
pub(crate) struct Fanout<T> {
    shared: Arc<Mutex<Shared<T>>>,
}

impl<T> Clone for Fanout<T> {
    fn clone(&self) -> Self {
        Fanout {
            shared: self.shared.clone(),
        }
    }
}

impl<T: Clone> Fanout<T> {
    pub(crate) fn new(initial: T) -> Self {
        Fanout {
            shared: Arc::new(Mutex::new(Shared {
                current: initial,
                ended: false,
                subscribers: Vec::new(),
            })),
        }
    }

    pub(crate) fn current(&self) -> T {
        lock(&self.shared).current.clone()
    }

    /// Publishes `value` if `accept(current)` allows it; with `last`, nothing more is ever
    /// published and every subscription ends after this value.
    pub(crate) fn publish_if(&self, value: T, last: bool, accept: impl FnOnce(&T) -> bool) {
        let mut shared = lock(&self.shared);
        if shared.ended || !accept(&shared.current) {
            return;
        }
        shared.current = value.clone();
        shared.ended = last;
        shared.subscribers.retain(|queue| {
            if !subscribed(queue) {
                return false;
            }
            let mut queue = lock(queue);
            queue.values.push_back(value.clone());
            queue.closed = last;
            if let Some(waker) = queue.waker.take() {
                waker.wake();
            }
            !last
        });
    }

    pub(crate) fn subscribe(&self) -> Subscription<T> {
        let mut shared = lock(&self.shared);
        let queue = Arc::new(Mutex::new(Queue {
            values: VecDeque::new(),
            closed: shared.ended,
            waker: None,
        }));
        if !shared.ended {
            shared.subscribers.retain(subscribed);
            shared.subscribers.push(Arc::clone(&queue));
        }
        Subscription {
            current: shared.current.clone(),
            queue,
        }
    }
}

/// Whether a queue's subscription is still there: the publisher is otherwise its only holder.
fn subscribed<T>(queue: &Arc<Mutex<Queue<T>>>) -> bool {
    Arc::strong_count(queue) > 1
}

/// The receiving side: the values published since it subscribed.
pub(crate) struct Subscription<T> {
    current: T,
    queue: Arc<Mutex<Queue<T>>>,
}

impl<T: Clone> Subscription<T> {
    /// The last value received (or the publisher's value when it subscribed).
    pub(crate) fn current(&self) -> &T {
        &self.current
    }

    /// The next value, `None` after the last one.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut queue = lock(&self.queue);
        if let Some(value) = queue.values.pop_front() {
            self.current = value.clone();
            return Poll::Ready(Some(value));
        }
        if queue.closed {
            return Poll::Ready(None);
        }
        queue.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[cfg(all(test, not(avout_loom)))]
mod tests {
    use super::*;

    #[test]
    fn dropped_subscriptions_are_forgotten() {
        let fanout = Fanout::new(0u32);
        for _ in 0..100 {
            drop(fanout.subscribe());
        }
        let _kept = fanout.subscribe();
        fanout.publish_if(1, false, |_| true);
        assert_eq!(lock(&fanout.shared).subscribers.len(), 1);
    }

    #[test]
    fn the_last_value_ends_every_subscription() {
        let fanout = Fanout::new(0u32);
        let mut s = fanout.subscribe();
        fanout.publish_if(1, false, |_| true);
        fanout.publish_if(2, true, |_| true);
        fanout.publish_if(3, false, |_| true);
        let next = |s: &mut Subscription<u32>| {
            futures::executor::block_on(std::future::poll_fn(|cx| s.poll_next(cx)))
        };
        assert_eq!(next(&mut s), Some(1));
        assert_eq!(next(&mut s), Some(2));
        assert_eq!(next(&mut s), None);
        assert_eq!(fanout.current(), 2);
        assert_eq!(*fanout.subscribe().current(), 2);
    }
}
