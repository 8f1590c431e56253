//! An Elle-style checker for list-append transactions (Maelstrom's `txn-list-append`, Jepsen's
//! `append` workload).
//!
//! # History format
//!
//! Every operation is a transaction, `f: "txn"`, whose value is a list of micro-operations:
//! `["append", k, v]` appends `v` to the list at key `k`; `["r", k, null]` reads it, and on the
//! `ok` completion carries the list read (`null` there means the key does not exist: the empty
//! list). Jepsen's EDN histories (`[:append k v]`, `[:r k [..]]`) read into the same shape
//! ([`crate::history::edn`]).
//!
//! ```text
//! {"type":"invoke","process":0,"f":"txn","value":[["r",1,null],["append",2,7]]}
//! {"type":"ok","process":0,"f":"txn","value":[["r",1,[3,4]],["append",2,7]]}
//! ```
//!
//! `ok` transactions committed. `fail` transactions did not: nothing may see their appends.
//! `info` transactions (or ones never completed) may or may not have committed: their appends
//! may be seen, and if seen they committed; their reads are unknown and constrain nothing. As in
//! Elle, every append of a key must be a distinct value.
//!
//! # How it works
//!
//! Elle's idea (Kingsbury and Alvaro, *Elle: Inferring Isolation Anomalies from Experimental
//! Observations*, VLDB 2020) is that appends make versions recoverable: a read of `[1, 2, 3]`
//! shows not just one version but the whole order of the appends before it.
//!
//! 1. **Within a transaction** (`ok` ones): a read of a key must show what the transaction
//!    already knows of it — the previous read plus its own appends since, or, before any read,
//!    a list ending with its own appends — or it is `internal`. A read showing an element the
//!    transaction only appends later is a `future-read`.
//! 2. **Version orders**: per key, the longest read is the order of the appends it shows; every
//!    other read must be a prefix of it, or the key has an `incompatible-order` (its reads
//!    cannot come from one sequence of versions; the key then adds no version-order edges). A
//!    read with an element twice is `duplicate-elements`; an element nobody appended is
//!    `garbage-read`. **Unread appends**: an append of an `ok` transaction that no read shows
//!    still has a place: after every element read (had it come before one, every read showing
//!    that element would show it too). A key nobody read non-empty has the empty order, so its
//!    appends — one or several — all come after the initial empty list.
//! 3. **Aborted and intermediate reads**: a committed read showing an append of a `fail`
//!    transaction is `G1a`; one whose last element another transaction appended before appending
//!    to the same key again is `G1b` (it saw that transaction's intermediate state).
//! 4. **Lost updates**: two committed transactions that read the same version of a key (before
//!    appending to it themselves) and both append to it: `lost-update`, found directly as Elle
//!    does, whether or not the version order shows the resulting cycle.
//! 5. **The dependency graph** over committed and possibly committed transactions, with Adya's
//!    edges: `ww` from the appender of each element to the appender of the next in the version
//!    order; `wr` from the appender of the last element of a read to the reader; `rw` from a
//!    reader to the appender of the element right after what it read (it did not see that
//!    append, so it came first). For unread appends: `ww` from the appender of the key's last
//!    element read to each, and `rw` to each from every transaction that read the whole order
//!    (the empty list, for a key nobody read non-empty). Such an edge stands for a chain
//!    through the appends in between, which the history does not show; it adds no cycle that
//!    the chain would not close. Only a transaction's *external* reads (of a key before it
//!    appended to it) make `wr` and `rw` edges. For strict serializability, `realtime` edges go
//!    from each transaction to every transaction that began after it completed (a transitive
//!    reduction of that order, as Elle builds it), and `process` edges from each committed
//!    transaction to its process's next.
//! 6. **Cycles**: the strongly connected components of the graph (Tarjan), then, inside each,
//!    the shortest simple cycle of each kind (`graph.rs` searches breadth-first over
//!    transactions and a few bits of rule state): `G0` (write cycle: only `ww`), `G1c`
//!    (circular information flow: `ww` and `wr`, at least one `wr`), `G-single` (exactly one
//!    `rw`: read skew), `G-nonadjacent` (two or more `rw`, no two adjacent, counting round the
//!    cycle: snapshot isolation forbids it), `G2-item` (two or more `rw`, two adjacent: write
//!    skew, which snapshot isolation allows). A kind is reported with the fewest order edges
//!    needed: without any, then with `process` edges (`G-single-process`), then with
//!    `realtime` edges too (`G0-realtime`, …), which are anomalies for strict serializability
//!    but not for plain serializability. As in Elle, a `G-single` makes the search for
//!    `G-nonadjacent` moot (it is the one-`rw` case of it).
//!
//! Everything printed is deterministic: maps are only looked up, never iterated.
//!
//! # Where this differs from Elle
//!
//! - **`info` appends that nobody read** take no inferred place: the transaction may never
//!   have committed. (Elle places them after every element read too; the edges it gets only
//!   enter the transaction, which has no way out — its reads are unknown and nothing follows
//!   it in real time — so they close no cycle. Skipping them changes no verdict and keeps every
//!   edge backed by a committed write.) Likewise Elle's "a key's only append is its first
//!   version" counts `info` appends; here it falls out of the rule above for `ok` ones.
//! - **Lost update** looks at external reads only (before the transaction's own append to the
//!   key); Elle's scan also counts a read that follows the transaction's first append.
//! - **Dirty update** (a committed append right after a failed one in some read) is not
//!   reported on its own: the read that shows the failed append is already `G1a`.
//! - **Cycle search** is breadth-first per kind with a visit budget, not Elle's wall-clock
//!   timeout, so the result does not depend on the machine; past the budget the shortest cycle
//!   found so far is reported, and a component where no search finished still gets one cycle.
//!   Walks that revisit a transaction are dropped, so a cycle hidden behind such a walk can be
//!   missed (never invented).
//! - **Predicates** (Elle's `G2` as distinct from `G2-item`) do not arise: there are no
//!   predicate reads.
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::list_append::ListAppend;
//! use avout_check::history::{Event, History, F};
//! use serde_json::json;
//!
//! let txn = || F::Other("txn".into());
//! // Two transactions each read x empty and append to it; a later read shows 1 before 2, so
//! // T0 came first (ww T0 → T1), yet T1's read of x missed T0's append (rw T1 → T0): one
//! // anti-dependency in the cycle, G-single. Both read the same version and appended to it:
//! // a lost update too.
//! let h: History = [
//!     Event::invoke(0, txn(), json!([["r", "x", null], ["append", "x", 1]])),
//!     Event::invoke(1, txn(), json!([["r", "x", null], ["append", "x", 2]])),
//!     Event::ok(0, txn(), json!([["r", "x", []], ["append", "x", 1]])),
//!     Event::ok(1, txn(), json!([["r", "x", []], ["append", "x", 2]])),
//!     Event::invoke(2, txn(), json!([["r", "x", null]])),
//!     Event::ok(2, txn(), json!([["r", "x", [1, 2]]])),
//! ]
//! .into_iter()
//! .collect();
//! let verdict = ListAppend::new().check(&h).unwrap();
//! assert!(!verdict.is_valid());
//! assert_eq!(verdict.kinds(), vec!["G-single", "lost-update"]);
//! ```

mod anomaly;
mod cycles;
mod fast;
mod infer;
mod parse;
mod stream;
#[cfg(any(test, feature = "synth"))]
pub mod synth;
#[cfg(test)]
mod tests;

use crate::checker::CheckError;
pub use crate::elle::Consistency;
use crate::elle::Model;
#[cfg(test)]
pub(crate) use crate::elle::cycle::{Cycle, CycleKind, EdgeKind, Order};
use crate::history::History;
pub(crate) use anomaly::{ElleAnomaly, Expected};

/// The list-append checker's findings.
pub(crate) type Findings = crate::elle::findings::Findings<ElleAnomaly>;
use infer::Analysis;
use parse::Parsed;

/// The list-append checker (`list-append`), Elle's rules for a consistency model.
///
/// ```
/// use avout_check::Checker;
/// use avout_check::list_append::{Consistency, ListAppend};
/// use avout_check::history::{Event, History, F};
/// use serde_json::json;
/// let t = || F::Other("txn".into());
/// // A stale read after a completed append: fine for serializability, not strict.
/// let h: History = [
///     Event::invoke(0, t(), json!([["append", "x", 1]])),
///     Event::ok(0, t(), json!([["append", "x", 1]])),
///     Event::invoke(1, t(), json!([["r", "x", null]])),
///     Event::ok(1, t(), json!([["r", "x", []]])),
///     Event::invoke(2, t(), json!([["r", "x", null]])),
///     Event::ok(2, t(), json!([["r", "x", [1]]])),
/// ]
/// .into_iter()
/// .collect();
/// let strict = ListAppend::new().check(&h).unwrap();
/// assert_eq!(strict.kinds(), vec!["G-single-realtime"]);
/// let plain = ListAppend::new().consistency(Consistency::Serializable).check(&h).unwrap();
/// assert!(plain.is_valid());
/// ```
#[derive(Clone, Debug, Default)]
pub struct ListAppend {
    model: Model,
}

impl ListAppend {
    /// Allows write skew: G2-item cycles (two or more `rw` edges, two of them adjacent) are not
    /// anomalies, everything else still is — strong snapshot isolation within the
    /// consistency model, as for Clojure's refs, whose reads only `ensure` protects. (G-single
    /// and G-nonadjacent stay anomalies: snapshot isolation forbids them, per Cerone and
    /// Gotsman.)
    ///
    /// ```
    /// use avout_check::Checker;
    /// use avout_check::list_append::ListAppend;
    /// use avout_check::history::{Event, History, F};
    /// use serde_json::json;
    /// let t = || F::Other("txn".into());
    /// // Write skew: each reads both keys empty and appends to one; a later read sees both.
    /// let h: History = [
    ///     Event::invoke(0, t(), json!([["r", "x", null], ["r", "y", null], ["append", "x", 1]])),
    ///     Event::invoke(1, t(), json!([["r", "x", null], ["r", "y", null], ["append", "y", 2]])),
    ///     Event::ok(0, t(), json!([["r", "x", []], ["r", "y", []], ["append", "x", 1]])),
    ///     Event::ok(1, t(), json!([["r", "x", []], ["r", "y", []], ["append", "y", 2]])),
    ///     Event::invoke(2, t(), json!([["r", "x", null], ["r", "y", null]])),
    ///     Event::ok(2, t(), json!([["r", "x", [1]], ["r", "y", [2]]])),
    /// ]
    /// .into_iter()
    /// .collect();
    /// assert_eq!(ListAppend::new().check(&h).unwrap().kinds(), vec!["G2-item"]);
    /// let si = ListAppend::new().allow_write_skew();
    /// assert!(si.check(&h).unwrap().is_valid());
    /// assert!(si.name().contains("but G2-item: snapshot isolation"));
    /// ```
    pub fn allow_write_skew(mut self) -> Self {
        self.model.allow_write_skew = true;
        self
    }
}

crate::elle::elle_checker!(ListAppend, "list-append");

/// Checks a history for strict serializability, every anomaly in detail; asserts that the
/// history written to a file and read back in small blocks on several threads gets the same.
#[cfg(test)]
pub(crate) fn check_list_append(history: &History) -> Result<Findings, CheckError> {
    let loaded = ListAppend::new().analyse(history);
    let streamed = tests::streamed(history);
    match (&loaded, &streamed) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "streamed from a file"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "streamed from a file"),
        (a, b) => panic!("loaded: {a:?}\nstreamed from a file: {b:?}"),
    }
    loaded
}
