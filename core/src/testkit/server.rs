//! Real ZooKeeper servers for tests (placeholder until written).
