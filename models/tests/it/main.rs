//! Integration tests of the models: one binary.

mod conformance;
mod models;
#[cfg(feature = "planted-bugs")]
mod planted;
