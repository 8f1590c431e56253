//! The synchronisation primitives shared in-process, switched to loom's under `cfg(loom)` so
//! that loom can explore their interleavings.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

/// Locks a mutex, treating poisoning as the bug it is: every critical section here is a few
/// infallible statements, so a poisoned lock means a panic already broke an invariant.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().expect("a critical section panicked")
}
