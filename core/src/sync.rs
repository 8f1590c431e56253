//! The synchronisation primitives shared in-process, switched to loom's under
//! `cfg(avout_loom)` so that loom can explore their interleavings.
//!
//! The cfg is avout's own, not loom's customary `loom`: tokio reads `cfg(loom)` as its own
//! test build and leaves out parts (`tokio::net`, runtime hooks) that the simulator and the
//! dev-dependencies need, so `--cfg loom` for the whole build would not compile.

#[cfg(avout_loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
#[cfg(not(avout_loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

/// Locks a mutex, treating poisoning as the bug it is: every critical section here is a few
/// infallible statements, so a poisoned lock means a panic already broke an invariant.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().expect("a critical section panicked")
}
