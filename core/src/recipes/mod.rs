//! ZooKeeper's recipes beyond locks, each one sans-IO machine (see [`crate::machine`]) run by
//! the production driver, the simulator and the models alike.

pub mod election;
pub mod semaphore;
pub mod once;
pub mod queue;
pub mod barrier;
pub mod double_barrier;
pub mod group;
pub mod two_phase_commit;
