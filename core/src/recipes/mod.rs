//! ZooKeeper's recipes beyond locks, each one sans-IO machine (see [`crate::machine`]) run by
//! the production driver, the simulator and the models alike.
//!
//! Among them, Curator's everyday recipes:
//!
//! - [`semaphore::Semaphore`] (`InterProcessSemaphoreV2`), with
//!   [`acquire_many`](semaphore::Semaphore::acquire_many) taking several leases all or
//!   nothing under one hold of its mutex (`acquire(qty)`);
//! - [`crate::lock::MultiLock`] (`InterProcessMultiLock`, in [`crate::lock`]): several
//!   mutexes all or nothing, acquired in sorted order so that overlapping sets never
//!   deadlock;
//! - [`queue::Queue`] and [`queue::PriorityQueue`] (`DistributedQueue`,
//!   `DistributedPriorityQueue`) with exactly-once delivery;
//! - [`queue::IdQueue`] (`DistributedIdQueue`): elements carry an id and
//!   [`remove`](queue::IdQueue::remove) takes out every element with one, none of them ever
//!   delivered;
//! - [`queue::DelayQueue`] (`DistributedDelayQueue`): each element is taken only once due,
//!   by an injected [`queue::Clock`], consumers waiting on a timer and a watch;
//! - [`persistent_node`], [`shared_value`], [`cache`] and the [`election`] selector.

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
