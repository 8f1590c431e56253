//! The backend conformance suite (placeholder until written).
