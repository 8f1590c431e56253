//! Integration tests of avout-sim-zk: one binary, one module per concern.

mod buggify;
mod client;
mod conformance;
mod determinism;
mod differential;
mod ensemble_differential;
mod faults;
mod kernel;
#[cfg(madsim)]
mod madsim_nodes;
#[cfg(madsim)]
mod serve;
