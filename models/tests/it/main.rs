//! Integration tests of the models: one binary.
