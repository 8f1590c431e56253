//! Integration tests of avout-sim-zk: one binary, one module per concern.

mod client;
mod conformance;
mod determinism;
mod faults;
mod kernel;
