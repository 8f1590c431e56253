//! ZooKeeper's recipes beyond locks, each one sans-IO machine (see [`crate::machine`]) run by
//! the production driver, the simulator and the models alike.

pub mod barrier;
pub mod cache;
pub mod double_barrier;
pub mod election;
pub mod group;
pub mod once;
pub mod persistent_node;
pub mod queue;
pub mod semaphore;
pub mod shared_value;
pub mod two_phase_commit;
