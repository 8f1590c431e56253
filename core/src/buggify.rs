//! Buggify: fault points inside client code, live only inside a simulation.
//!
//! The simulator injects faults between client and service; some races live inside the
//! client, between two of its own steps (a pause after reading a list and before acting on
//! it). A *buggify point* marks such a place:
//!
//! ```
//! # async fn step() {}
//! # async fn demo() {
//! if avout::buggify::fires() {
//!     // Widen the window another client can act in.
//!     avout::buggify::pause().await;
//! }
//! step().await;
//! # }
//! ```
//!
//! Outside a simulation [`fires`] is one relaxed atomic load that is always false: no hook
//! is installed in production. A simulator [`install`]s a hook for the thread its run
//! executes on (a simulated run is single-threaded); the hook decides from the run's seed
//! whether a point fires, so a seed fires the same points at the same moments every time.
//! Each point is told apart by its source location.
//!
//! This module never depends on the simulator: `avout-sim-zk` enables it (see its
//! `Builder::buggify`).

use std::cell::RefCell;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Decides whether the buggify point at a source location fires.
pub type Hook = Box<dyn FnMut(&'static Location<'static>) -> bool>;

/// Set once any hook was ever installed in this process: until then [`fires`] reads nothing
/// else.
static EVER_INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
}

/// Whether the buggify point at the caller's location fires now: always `false` unless a
/// simulation installed a hook on this thread.
///
/// ```
/// assert!(!avout::buggify::fires());
/// ```
#[track_caller]
#[inline]
pub fn fires() -> bool {
    if !EVER_INSTALLED.load(Ordering::Relaxed) {
        return false;
    }
    ask(Location::caller())
}

#[cold]
#[inline(never)]
fn ask(site: &'static Location<'static>) -> bool {
    HOOK.with(|hook| match hook.try_borrow_mut() {
        Ok(mut hook) => hook.as_mut().is_some_and(|decide| decide(site)),
        // A point reached from inside the hook itself: not a point of the client's.
        Err(_) => false,
    })
}

/// How long [`pause`] waits: long against a simulated round trip (a few milliseconds), short
/// against a session timeout.
pub const PAUSE: Duration = Duration::from_millis(100);

/// The delay a fired point usually injects: sleeps [`PAUSE`] on the runtime's clock (virtual
/// time in a simulation).
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let start = tokio::time::Instant::now();
/// avout::buggify::pause().await;
/// assert_eq!(start.elapsed(), avout::buggify::PAUSE);
/// # }
/// ```
pub async fn pause() {
    tokio::time::sleep(PAUSE).await;
}

/// Installs `hook` for this thread until the returned guard is dropped (the previous hook,
/// if any, comes back then). For simulators.
///
/// ```
/// let guard = avout::buggify::install(Box::new(|site| site.line() % 2 == 0));
/// let a = avout::buggify::fires();
/// let b = avout::buggify::fires();
/// assert_ne!(a, b, "consecutive lines, one of them even");
/// drop(guard);
/// assert!(!avout::buggify::fires());
/// ```
#[must_use = "the hook is removed when the guard is dropped"]
pub fn install(hook: Hook) -> Installed {
    EVER_INSTALLED.store(true, Ordering::Relaxed);
    let previous = HOOK.with(|h| h.replace(Some(hook)));
    Installed { previous }
}

/// Keeps a hook installed; see [`install`].
pub struct Installed {
    previous: Option<Hook>,
}

impl std::fmt::Debug for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("buggify::Installed")
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.previous.take();
        // During thread teardown the slot may be gone already; nothing is left to restore.
        let _ = HOOK.try_with(|h| *h.borrow_mut() = previous);
    }
}
