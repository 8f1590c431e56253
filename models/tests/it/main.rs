//! Integration tests of the models: one binary.

mod conformance;
mod faults;
mod models;
mod museum;
#[cfg(feature = "planted-bugs")]
mod planted;
mod reduction;
mod space;
