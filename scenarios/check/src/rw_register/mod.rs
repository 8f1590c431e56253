//! An Elle-style checker for read-write register transactions (Maelstrom's
//! `txn-rw-register`, Jepsen's `wr` workload, adya's `rw-register`).
//!
//! # History format
//!
//! Every operation is a transaction, `f: "txn"`, whose value is a list of micro-operations:
//! `["w", k, v]` writes `v` to the register at key `k`; `["r", k, null]` reads it, and on the
//! `ok` completion carries the value read (`null`: the initial, never written version).
//! Jepsen's EDN histories (`[:w k v]`, `[:r k v]`) read into the same shape
//! ([`crate::history::edn`]); adya's JSON lines are this format.
//!
//! ```text
//! {"type":"invoke","process":0,"f":"txn","value":[["r",1,null],["w",2,7]]}
//! {"type":"ok","process":0,"f":"txn","value":[["r",1,3],["w",2,7]]}
//! ```
//!
//! `ok` transactions committed; `fail` ones did not, and nothing may see their writes; `info`
//! ones (or ones never completed) may have: their writes may be seen, their reads are unknown.
//! Every write of a key must be a distinct value (else the history is refused,
//! [`CheckError::DuplicateWrite`]).
//!
//! # How it works
//!
//! A register shows one version at a time, so far less of each key's version order can be
//! recovered than from list-append's reads. Elle's rules (Kingsbury and Alvaro, VLDB 2020,
//! section 5) recover what they can:
//!
//! 1. **Within a transaction** (`ok` ones): a read of a key must show the transaction's own
//!    last read or write of it, or it is `internal`; a read of a value the transaction only
//!    writes later is a `future-read`.
//! 2. **Reads of other transactions' writes**: of a `fail` transaction's write, `G1a` (aborted
//!    read); of a write its transaction overwrote before committing, `G1b` (intermediate
//!    read); of a value nobody wrote, `garbage-read`.
//! 3. **Lost updates**: two committed transactions that read the same version of a key and
//!    both wrote it (Elle's `lost-update`).
//! 4. **Version orders**: a transaction's *external* reads (of a key before it wrote it) and
//!    *external* writes (its last write of each key: the version it installs). The initial
//!    `nil` precedes every installed version; a committed transaction that read `x` of a key
//!    and then wrote `y` installed `y` after `x` (writes follow reads, adya's `--wfr-keys`,
//!    sound for any database whose reads see committed versions). A key whose
//!    reads-then-writes close a cycle is `cyclic-versions`, and only the initial version's
//!    place is used for it.
//! 5. **The dependency graph** over committed and possibly committed transactions: `wr` from
//!    the installer of a version to each transaction that read it externally; for each known
//!    pair `x < y` of a key's versions, `ww` from the installer of `x` to that of `y`, and `rw`
//!    from each external reader of `x` (of `nil`, for the initial version) to the installer
//!    of `y`. A pair need not be adjacent in the version order: the edge then stands for a
//!    chain through the versions between, with the same count of `rw` edges, so it closes no
//!    cycle of a kind the chain would not. Process and real-time edges as for list-append.
//! 6. **Cycles**: as for list-append ([`crate::list_append`]): G0, G1c, G-single,
//!    G-nonadjacent, G2-item, each with the weakest order edges that show it.
//!
//! # Where this differs from Elle and adya
//!
//! - Writes follow reads is always assumed (adya and Elle make it an option, off by default).
//!   Compare with `adya check -m rw-register --wfr-keys`. Real-time or process order is never
//!   used to order versions (adya's `--linearizable-keys`, `--sequential-keys`): it only
//!   enters the graph as order edges, for the consistency model checked.
//! - A key with cyclic versions loses its read-then-write order alone; adya drops that order
//!   for every key once one key's is cyclic.
//! - `garbage-read` and `future-read` are reported; adya has neither for registers (a read of
//!   a value nobody wrote only gets the initial version's place there).
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::rw_register::RwRegister;
//! use avout_check::history::{Event, History, F};
//! use serde_json::json;
//!
//! let txn = || F::Other("txn".into());
//! // Both read x as nil and wrote it: a lost update. Each read the version the other's write
//! // follows (rw both ways): G2-item as well.
//! let h: History = [
//!     Event::invoke(0, txn(), json!([["r", "x", null], ["w", "x", 1]])),
//!     Event::invoke(1, txn(), json!([["r", "x", null], ["w", "x", 2]])),
//!     Event::ok(0, txn(), json!([["r", "x", null], ["w", "x", 1]])),
//!     Event::ok(1, txn(), json!([["r", "x", null], ["w", "x", 2]])),
//! ]
//! .into_iter()
//! .collect();
//! let verdict = RwRegister::new().check(&h).unwrap();
//! assert_eq!(verdict.kinds(), vec!["G2-item", "lost-update"]);
//! ```

mod anomaly;
#[cfg(any(test, feature = "synth"))]
pub mod corpus;
mod infer;
mod parse;
#[cfg(test)]
mod tests;

use crate::checker::CheckError;
pub use crate::elle::Consistency;
use crate::elle::Model;
use crate::history::History;
pub(crate) use anomaly::RegisterAnomaly;
use infer::Analysis;
use parse::Parsed;

/// The rw-register checker's findings.
pub(crate) type Findings = crate::elle::findings::Findings<RegisterAnomaly>;

/// The rw-register checker (`rw-register`), Elle's rules for a consistency model.
///
/// ```
/// use avout_check::Checker;
/// use avout_check::rw_register::{Consistency, RwRegister};
/// use avout_check::history::{Event, History, F};
/// use serde_json::json;
/// let t = || F::Other("txn".into());
/// // A read of nil after a write completed: fine for serializability, not strict.
/// let h: History = [
///     Event::invoke(0, t(), json!([["w", "x", 1]])),
///     Event::ok(0, t(), json!([["w", "x", 1]])),
///     Event::invoke(1, t(), json!([["r", "x", null]])),
///     Event::ok(1, t(), json!([["r", "x", null]])),
/// ]
/// .into_iter()
/// .collect();
/// let strict = RwRegister::new().check(&h).unwrap();
/// assert_eq!(strict.kinds(), vec!["G-single-realtime"]);
/// let plain = RwRegister::new().consistency(Consistency::Serializable).check(&h).unwrap();
/// assert!(plain.is_valid());
/// ```
#[derive(Clone, Debug, Default)]
pub struct RwRegister {
    model: Model,
}

impl RwRegister {
    /// Allows write skew: G2-item cycles are no anomalies, everything else still is (strong
    /// snapshot isolation within the consistency model, as for Clojure's refs under the Mvcc
    /// protocol; see [`crate::list_append::ListAppend::allow_write_skew`]).
    ///
    /// ```
    /// use avout_check::Checker;
    /// use avout_check::rw_register::RwRegister;
    /// use avout_check::history::{Event, History, F};
    /// use serde_json::json;
    /// let t = || F::Other("txn".into());
    /// // Write skew: each reads both keys nil and writes one.
    /// let h: History = [
    ///     Event::invoke(0, t(), json!([["r", "x", null], ["r", "y", null], ["w", "x", 1]])),
    ///     Event::invoke(1, t(), json!([["r", "x", null], ["r", "y", null], ["w", "y", 2]])),
    ///     Event::ok(0, t(), json!([["r", "x", null], ["r", "y", null], ["w", "x", 1]])),
    ///     Event::ok(1, t(), json!([["r", "x", null], ["r", "y", null], ["w", "y", 2]])),
    /// ]
    /// .into_iter()
    /// .collect();
    /// assert_eq!(RwRegister::new().check(&h).unwrap().kinds(), vec!["G2-item"]);
    /// assert!(RwRegister::new().allow_write_skew().check(&h).unwrap().is_valid());
    /// ```
    pub fn allow_write_skew(mut self) -> Self {
        self.model.allow_write_skew = true;
        self
    }
}

crate::elle::elle_checker!(RwRegister, "rw-register");
