//! The production backend over the `zookeeper-client` crate (placeholder until written).
