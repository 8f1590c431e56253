//! Integration tests of the models: one binary.

mod models;
#[cfg(feature = "planted-bugs")]
mod planted;
