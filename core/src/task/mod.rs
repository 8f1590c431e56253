//! Background tasks that belong to the process that started them, and a watch channel
//! ([`watch`]) that wakes its observers in a deterministic order.
//!
//! A real process that stops (a long GC pause, `SIGSTOP`, a VM migration) stops *all* its
//! code: the task that holds a lock, the managed client's supervisor, the task releasing a
//! lock on drop, their timers. A simulator can only stop what it can reach, so avout starts
//! its background tasks with [`spawn`], which runs them under the [`Gate`] of the code that
//! spawned them. A simulator that runs each simulated process under its own gate freezes a
//! process, background tasks included, with [`Gate::freeze`]; outside any gate (a real
//! deployment) [`spawn`] is `tokio::spawn`.
//!
//! Timers that expire while a process is frozen fire when it thaws, as after a real pause.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use avout::task::{Gate, spawn};
//! let gate = Gate::new();
//! let inner = gate.run(async { spawn(async { Gate::current().is_some() }).await.unwrap() });
//! assert!(inner.await, "a task spawned under a gate runs under it");
//! assert!(Gate::current().is_none());
//! # });
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tokio::task::JoinHandle;

pub mod watch;

tokio::task_local! {
    static CURRENT: Gate;
}

/// A switch that freezes every future run under it (see the [module docs](self)).
///
/// ```
/// let gate = avout::task::Gate::new();
/// gate.freeze();
/// assert!(gate.is_frozen());
/// gate.thaw();
/// assert!(!gate.is_frozen());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Gate {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    frozen: AtomicBool,
    waiting: Mutex<Vec<Waker>>,
}

impl Gate {
    /// An open gate.
    pub fn new() -> Self {
        Gate::default()
    }

    /// The gate the calling code runs under, if any.
    ///
    /// ```
    /// assert!(avout::task::Gate::current().is_none());
    /// ```
    pub fn current() -> Option<Gate> {
        CURRENT.try_with(Gate::clone).ok()
    }

    /// Runs `future` under this gate: it makes no progress while the gate is frozen, and
    /// the tasks it starts with [`spawn`] run under the gate too.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let gate = avout::task::Gate::new();
    /// assert_eq!(gate.run(async { 7 }).await, 7);
    /// # });
    /// ```
    pub fn run<F: Future>(&self, future: F) -> impl Future<Output = F::Output> + use<F> {
        CURRENT.scope(
            self.clone(),
            Gated {
                gate: self.clone(),
                future: Box::pin(future),
            },
        )
    }

    /// Stops everything under the gate at its next poll.
    pub fn freeze(&self) {
        self.inner.frozen.store(true, Ordering::SeqCst);
    }

    /// Lets everything under the gate run again.
    pub fn thaw(&self) {
        self.inner.frozen.store(false, Ordering::SeqCst);
        let waiting = std::mem::take(&mut *self.lock());
        for waker in waiting {
            waker.wake();
        }
    }

    /// Whether `other` is this very gate (a clone of it).
    ///
    /// ```
    /// let gate = avout::task::Gate::new();
    /// assert!(gate.same(&gate.clone()));
    /// assert!(!gate.same(&avout::task::Gate::new()));
    /// ```
    pub fn same(&self, other: &Gate) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether the gate is frozen.
    pub fn is_frozen(&self) -> bool {
        self.inner.frozen.load(Ordering::SeqCst)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Waker>> {
        self.inner
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

struct Gated<F> {
    gate: Gate,
    future: Pin<Box<F>>,
}

impl<F: Future> Future for Gated<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if self.gate.is_frozen() {
            self.gate.lock().push(cx.waker().clone());
            // A thaw between the check and the push took the wakers before ours joined.
            if self.gate.is_frozen() {
                return Poll::Pending;
            }
        }
        self.future.as_mut().poll(cx)
    }
}

/// Starts `future` as a task under the caller's [`Gate`], if it has one.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(avout::task::spawn(async { 3 }).await.unwrap(), 3);
/// # });
/// ```
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match Gate::current() {
        Some(gate) => tokio::spawn(gate.run(future)),
        None => tokio::spawn(future),
    }
}
