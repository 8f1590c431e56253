//! Integration tests of the scenarios library: one test binary with modules.

mod harness;
mod maelstrom_codes;
#[cfg(feature = "planted-bugs")]
mod museum;
mod scenarios;
#[cfg(feature = "planted-bugs")]
mod scenarios_planted;
mod shard;
mod shrink;
mod soak;
mod swarm;
