//! Integration tests of the scenarios library: one test binary with modules.

mod harness;
mod maelstrom_codes;
mod scenarios;
#[cfg(feature = "planted-bugs")]
mod scenarios_planted;
mod shrink;
mod soak;
mod swarm;
