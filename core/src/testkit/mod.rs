//! Test support, behind the `testkit` feature: real ZooKeeper servers on loopback
//! ([`server`]), and the backend conformance suite ([`conformance`]) that every
//! [`Coordination`](crate::Coordination) backend must pass unchanged.

pub mod conformance;
pub mod server;
