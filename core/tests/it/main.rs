//! Integration tests on real ZooKeeper, started by the test kit ([`avout::testkit::server`]):
//! the conformance suite on a standalone server and on a three-server ensemble that loses the
//! member a client is connected to, and a session expiry forced by pausing the server.
//!
//! One binary with modules, so the crate links once. Every test starts its own servers and
//! fails — never skips — when a server cannot start. Run with
//! `cargo test -p avout --features testkit --test it`.

mod expiry;
mod failover;
mod standalone;
mod support;
mod rwlock;
mod watch_count;
mod atom;
mod atom_probe;
mod election;
mod semaphore;
mod barrier;
mod group;
mod queue;
mod two_phase_commit;
mod atom_sim;
mod lock_recipes_sim;
mod queue_sim;
mod lock_recipes_ensemble;
mod recipes_sim;
mod atom_failover;
