//! Integration tests on real ZooKeeper, started by the test kit ([`avout_testkit::server`]):
//! the conformance suite on a standalone server and on a three-server ensemble that loses the
//! member a client is connected to, and a session expiry forced by pausing the server.
//!
//! One binary with modules, so the crate links once. Every test starts its own servers and
//! fails — never skips — when a server cannot start. Run with
//! `cargo test -p avout --test it`.

mod acl;
mod agent;
mod atom;
mod atom_failover;
mod atom_faults;
mod atom_probe;
mod barrier;
mod cache;
mod client_sim;
mod client_zk;
mod delay_queue;
mod election;
mod expiry;
mod failover;
mod group;
mod id_queue;
mod leader_selector;
mod lock_fenced;
mod lock_recipes_ensemble;
mod lock_recipes_sim;
mod lock_release;
mod lock_ride;
mod lock_status_sim;
mod locktable;
mod metrics_sim;
mod metrics_zk;
mod multi_lock;
#[cfg(feature = "planted-bugs")]
mod museum_sim;
mod persistent_node;
mod queue;
mod recipes_sim;
mod record_history;
mod refusals;
mod rwlock;
#[cfg(feature = "sasl-digest-md5")]
mod sasl;
mod semaphore;
mod semaphore_many;
mod session_lost_retry;
mod shared_value;
mod spawnable;
mod standalone;
mod stm;
mod stm_cases;
mod stm_failover;
mod stm_mvcc;
mod stm_mvcc_barge;
mod stm_mvcc_zk;
mod stm_store;
mod stm_store_cases;
mod stm_store_zk;
mod support;
#[cfg(feature = "tls")]
mod tls;
mod two_phase_commit;
mod watch_count;
mod zk_in_flight;
