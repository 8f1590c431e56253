//! A watch channel (one value, many observers) whose observers wake in the order they began
//! waiting: tokio's `sync::watch` with a deterministic wake order.
//!
//! tokio's watch spreads its waiters over eight queues, each waiter on one drawn at random
//! from a thread-local generator the operating system seeds, and wakes the queues in turn. Two
//! tasks waiting for the same change therefore run in an order no seed fixes, and a simulated
//! run of code that watches (a session's state, a leader's term) could not be replayed: a
//! tree cache and a session monitor that waited for the managed client's new session logged
//! different runs from one seed. This channel has the same calls and the same meaning, with
//! one queue ([`tokio::sync::Notify`], first come, first woken). Use it, not tokio's, in code
//! that simulations run.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use avout::task::watch;
//! let (tx, mut rx) = watch::channel(0);
//! let seen = tokio::spawn(async move {
//!     rx.changed().await.unwrap();
//!     *rx.borrow_and_update()
//! });
//! tokio::task::yield_now().await;
//! tx.send_replace(7);
//! assert_eq!(seen.await.unwrap(), 7);
//! # });
//! ```
//!
//! What it does when the other side goes: a receiver's [`Receiver::changed`] fails with
//! [`RecvError`] once every sender is dropped and it has seen the last value; a sender's
//! [`Sender::send`] fails with [`SendError`] (keeping its value out) when no receiver is left,
//! as tokio's does; [`Sender::send_replace`] always stores.

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use tokio::sync::Notify;

/// A borrowed value; hold it briefly (it blocks senders) and never across an `.await`.
#[derive(Debug)]
pub struct Ref<'a, T> {
    guard: RwLockReadGuard<'a, Versioned<T>>,
    changed: bool,
}

impl<T> Ref<'_, T> {
    /// Whether this value was not yet seen by the receiver that borrowed it (always `false`
    /// for [`Sender::borrow`]).
    pub fn has_changed(&self) -> bool {
        self.changed
    }
}

impl<T> Deref for Ref<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard.value
    }
}

#[derive(Debug)]
struct Versioned<T> {
    value: T,
    version: u64,
}

#[derive(Debug)]
struct Shared<T> {
    value: RwLock<Versioned<T>>,
    senders: AtomicUsize,
    receivers: AtomicUsize,
    /// Woken on every new value and when the last sender goes.
    changed: Notify,
    /// Woken when the last receiver goes.
    unobserved: Notify,
}

impl<T> Shared<T> {
    fn read(&self) -> RwLockReadGuard<'_, Versioned<T>> {
        // A panic while storing a value leaves it whole (the store is one assignment).
        self.value
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn version(&self) -> u64 {
        self.read().version
    }

    fn closed(&self) -> bool {
        self.senders.load(Ordering::SeqCst) == 0
    }
}

/// The sending half; clones send to the same receivers.
#[derive(Debug)]
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

/// The receiving half; each clone has its own idea of what it has seen.
#[derive(Debug)]
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    seen: u64,
}

/// Every sender is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the watch channel's senders are gone")]
pub struct RecvError;

/// No receiver is left: the value was not stored and is given back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the watch channel's receivers are gone")]
pub struct SendError<T>(pub T);

/// A channel holding `init`, which its receivers have seen.
///
/// ```
/// let (tx, rx) = avout::task::watch::channel("a");
/// assert_eq!(*rx.borrow(), "a");
/// assert_eq!(tx.send_replace("b"), "a");
/// assert!(rx.has_changed().unwrap());
/// ```
pub fn channel<T>(init: T) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        value: RwLock::new(Versioned {
            value: init,
            version: 0,
        }),
        senders: AtomicUsize::new(1),
        receivers: AtomicUsize::new(1),
        changed: Notify::new(),
        unobserved: Notify::new(),
    });
    let rx = Receiver {
        shared: shared.clone(),
        seen: 0,
    };
    (Sender { shared }, rx)
}

impl<T> Sender<T> {
    /// Stores `value` if some receiver is left, waking those that wait.
    ///
    /// ```
    /// let (tx, rx) = avout::task::watch::channel(1);
    /// tx.send(2).unwrap();
    /// drop(rx);
    /// assert_eq!(tx.send(3), Err(avout::task::watch::SendError(3)));
    /// assert_eq!(*tx.borrow(), 2);
    /// ```
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        if self.is_closed() {
            return Err(SendError(value));
        }
        self.send_replace(value);
        Ok(())
    }

    /// Stores `value` whether or not a receiver is left, and returns the old one.
    pub fn send_replace(&self, mut value: T) -> T {
        self.send_modify(|old| std::mem::swap(old, &mut value));
        value
    }

    /// Changes the value in place, and wakes the receivers.
    ///
    /// ```
    /// let (tx, rx) = avout::task::watch::channel(vec![1]);
    /// tx.send_modify(|v| v.push(2));
    /// assert_eq!(*rx.borrow(), [1, 2]);
    /// ```
    pub fn send_modify(&self, modify: impl FnOnce(&mut T)) {
        self.send_if_modified(|v| {
            modify(v);
            true
        });
    }

    /// Changes the value in place; wakes the receivers only if `modify` says it changed it.
    ///
    /// ```
    /// let (tx, rx) = avout::task::watch::channel(1);
    /// assert!(!tx.send_if_modified(|_| false));
    /// assert!(!rx.has_changed().unwrap());
    /// ```
    pub fn send_if_modified(&self, modify: impl FnOnce(&mut T) -> bool) -> bool {
        let mut slot = self
            .shared
            .value
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !modify(&mut slot.value) {
            return false;
        }
        slot.version += 1;
        drop(slot);
        self.shared.changed.notify_waiters();
        true
    }

    /// The value now.
    pub fn borrow(&self) -> Ref<'_, T> {
        Ref {
            guard: self.shared.read(),
            changed: false,
        }
    }

    /// A new receiver, which has seen the value now.
    pub fn subscribe(&self) -> Receiver<T> {
        self.shared.receivers.fetch_add(1, Ordering::SeqCst);
        Receiver {
            shared: self.shared.clone(),
            seen: self.shared.version(),
        }
    }

    /// Whether every receiver is gone.
    pub fn is_closed(&self) -> bool {
        self.shared.receivers.load(Ordering::SeqCst) == 0
    }

    /// How many receivers are left.
    pub fn receiver_count(&self) -> usize {
        self.shared.receivers.load(Ordering::SeqCst)
    }

    /// Waits until every receiver is gone.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let (tx, rx) = avout::task::watch::channel(());
    /// drop(rx);
    /// tx.closed().await;
    /// # });
    /// ```
    pub async fn closed(&self) {
        loop {
            let gone = self.shared.unobserved.notified();
            tokio::pin!(gone);
            gone.as_mut().enable();
            if self.is_closed() {
                return;
            }
            gone.await;
        }
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::SeqCst);
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.shared.changed.notify_waiters();
        }
    }
}

impl<T> Receiver<T> {
    /// The value now, without marking it seen.
    pub fn borrow(&self) -> Ref<'_, T> {
        let guard = self.shared.read();
        let changed = guard.version != self.seen;
        Ref { guard, changed }
    }

    /// The value now, marked seen.
    pub fn borrow_and_update(&mut self) -> Ref<'_, T> {
        let guard = self.shared.read();
        let changed = guard.version != self.seen;
        self.seen = guard.version;
        Ref { guard, changed }
    }

    /// Whether a value not yet seen is there; `Err` once every sender is gone.
    pub fn has_changed(&self) -> Result<bool, RecvError> {
        if self.shared.closed() {
            return Err(RecvError);
        }
        Ok(self.shared.version() != self.seen)
    }

    /// Marks the value now as seen.
    pub fn mark_unchanged(&mut self) {
        self.seen = self.shared.version();
    }

    /// Waits for a value not yet seen and marks it seen; `Err` once every sender is gone and
    /// the last value was seen. Cancelling it loses nothing.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let (tx, mut rx) = avout::task::watch::channel(0);
    /// tx.send_replace(1);
    /// drop(tx);
    /// assert!(rx.changed().await.is_ok(), "the last value is seen first");
    /// assert!(rx.changed().await.is_err());
    /// # });
    /// ```
    pub async fn changed(&mut self) -> Result<(), RecvError> {
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let version = self.shared.version();
            if version != self.seen {
                self.seen = version;
                return Ok(());
            }
            if self.shared.closed() {
                return Err(RecvError);
            }
            notified.await;
        }
    }

    /// Waits until `ready` holds for the value (the value now included), marks it seen and
    /// returns it; `Err` once every sender is gone and it never held.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let (tx, mut rx) = avout::task::watch::channel(0);
    /// tokio::spawn(async move {
    ///     for i in 1..=3 {
    ///         tx.send_replace(i);
    ///         tokio::task::yield_now().await;
    ///     }
    /// });
    /// assert_eq!(*rx.wait_for(|v| *v == 3).await.unwrap(), 3);
    /// # });
    /// ```
    pub async fn wait_for(
        &mut self,
        mut ready: impl FnMut(&T) -> bool,
    ) -> Result<Ref<'_, T>, RecvError> {
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let guard = self.shared.read();
                if ready(&guard.value) {
                    let changed = guard.version != self.seen;
                    self.seen = guard.version;
                    return Ok(Ref { guard, changed });
                }
                self.seen = guard.version;
            }
            if self.shared.closed() {
                return Err(RecvError);
            }
            notified.await;
        }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.shared.receivers.fetch_add(1, Ordering::SeqCst);
        Receiver {
            shared: self.shared.clone(),
            seen: self.seen,
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if self.shared.receivers.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.shared.unobserved.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn waiters_wake_in_the_order_they_began_waiting() {
        // tokio's watch woke these in an order drawn from the OS; here it is always 0..16.
        runtime().block_on(async {
            let (tx, rx) = channel(0);
            let order = Arc::new(std::sync::Mutex::new(Vec::new()));
            let tasks: Vec<_> = (0..16)
                .map(|i| {
                    let (mut rx, order) = (rx.clone(), order.clone());
                    tokio::spawn(async move {
                        rx.changed().await.unwrap();
                        order.lock().unwrap().push(i);
                    })
                })
                .collect();
            tokio::task::yield_now().await;
            tx.send_replace(1);
            for t in tasks {
                t.await.unwrap();
            }
            assert_eq!(*order.lock().unwrap(), (0..16).collect::<Vec<_>>());
        });
    }

    #[test]
    fn a_receiver_learns_its_senders_are_gone_after_the_last_value() {
        runtime().block_on(async {
            let (tx, mut rx) = channel(0);
            let tx2 = tx.clone();
            drop(tx);
            tx2.send_replace(5);
            let waiting = tokio::spawn(async move {
                assert!(rx.changed().await.is_ok());
                assert_eq!(*rx.borrow(), 5);
                rx.changed().await
            });
            tokio::task::yield_now().await;
            drop(tx2);
            assert_eq!(waiting.await.unwrap(), Err(RecvError));
        });
    }

    #[test]
    fn a_cancelled_wait_loses_no_value_and_a_clone_keeps_what_it_saw() {
        runtime().block_on(async {
            let (tx, mut rx) = channel(0);
            {
                let wait = rx.changed();
                futures::pin_mut!(wait);
                assert!(futures::poll!(wait.as_mut()).is_pending());
            }
            tx.send_replace(1);
            let copy = rx.clone();
            assert!(copy.has_changed().unwrap());
            assert!(rx.borrow_and_update().has_changed());
            assert!(!rx.has_changed().unwrap());
            assert!(copy.has_changed().unwrap());
            let fresh = tx.subscribe();
            assert!(!fresh.has_changed().unwrap());
            assert_eq!(tx.receiver_count(), 3);
        });
    }

    #[test]
    fn wait_for_returns_a_value_that_already_holds_and_fails_when_none_can() {
        runtime().block_on(async {
            let (tx, mut rx) = channel(2);
            assert_eq!(*rx.wait_for(|v| *v == 2).await.unwrap(), 2);
            drop(tx);
            assert!(rx.wait_for(|v| *v == 3).await.is_err());
        });
    }
}
