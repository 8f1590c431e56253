//! ZooKeeper's recipes beyond locks, each one sans-IO machine (see [`crate::machine`]) run by
//! the production driver, the simulator and the models alike.

pub mod election;
pub mod semaphore;
