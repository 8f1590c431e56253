//! avout-zookeeper-client's tests: one body against the real crate and the simulation
//! (`api`), and, under madsim, every fault kind reaching an application's sessions
//! (`faults`).

mod api;
#[cfg(madsim)]
mod faults;
#[cfg(madsim)]
mod watchers;
