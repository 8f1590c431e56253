//! zookeeper-client 0.11.2's own test suite (`tests/zookeeper.rs`), read from cargo's registry
//! at build time and rewritten only in its runtime glue and server fixture (`build.rs`), run
//! against the simulation (`--cfg madsim` only). Which tests pass, and why the others cannot,
//! is in `PEER_SUITE.md`; `peer/run.sh` runs it and prints the table.
// Its TLS tests need rcgen and a TLS server: the suite runs without the `tls` feature.
#![cfg(all(madsim, not(feature = "tls")))]
#![allow(
    deprecated,
    dead_code,
    unused,
    missing_docs,
    unreachable_pub,
    clippy::all,
    clippy::pedantic
)]

include!(concat!(env!("OUT_DIR"), "/zookeeper.rs"));
