//! avout-zookeeper-client's tests: one body against the real crate and the simulation
//! (`api`), and the simulation's own behaviour under madsim (`sim`).

mod api;
