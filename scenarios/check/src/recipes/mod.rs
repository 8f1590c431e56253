//! Checkers of the histories avout's recipe scenarios record: each judges one recipe's
//! promise from the operations alone (the history format is in each module's docs).
//!
//! | checker | module | what it holds the history to |
//! |---|---|---|
//! | `counter` | [`counter`] | distinct increments, reads within the increments surely and possibly done |
//! | `queue` | [`queue`] | nothing delivered twice, nothing taken that was not put, nothing acknowledged lost |
//! | `barrier` | [`barrier`] | nobody passes a set barrier |
//! | `rwlock` | [`rwlock`] | no writer inside a confirmed read hold, no lost increment |
//! | `holds` | [`holds`] | fenced increments never lost, no token granted twice, overlapping holds only where fencing excuses them |
//! | `agents` | [`agents`] | every acknowledged send applied exactly once, in order per sender, none while failed |
//! | `cache` | [`cache`] | every event a real change, none reported twice, every cache converged |
//! | `sessions` | [`sessions`] | each part by its own checker, and progress after every expiry |
//! | `semaphore` | [`semaphore`] | never more holds than leases, no lease lost |
//! | `double-barrier` | [`double_barrier`] | nobody enters before everyone arrived, nobody leaves before everyone left |
//! | `latch` | [`latch`] | a leader latch stands until closed, the leader can always be looked up |

pub mod agents;
pub mod barrier;
pub mod cache;
pub mod counter;
pub mod double_barrier;
pub mod holds;
pub mod latch;
pub mod queue;
pub mod rwlock;
pub mod semaphore;
pub mod sessions;

pub use crate::checker::Rule;
