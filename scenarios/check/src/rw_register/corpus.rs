//! Hand-written rw-register histories: one per anomaly the checker reports, and valid ones,
//! each with the anomalies found in it under strict serializability. The checker's tests judge
//! them, and `examples/rw_register_corpus.rs` writes them out as JSON lines so that another
//! checker (adya, Elle) can judge the very same files (`reports/rw-register-adya.sh`).
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::rw_register::{RwRegister, corpus};
//! for case in corpus::cases() {
//!     let verdict = RwRegister::new().check(&case.history()).unwrap();
//!     assert_eq!(verdict.kinds(), case.anomalies, "{}", case.name);
//! }
//! ```

use serde_json::json;

use crate::elle::testing::{concurrent, failed, solo, unknown};
use crate::history::{Event, History};

/// One hand-written history.
#[derive(Clone, Debug)]
pub struct Case {
    /// Its name, as its file is named.
    pub name: &'static str,
    /// The anomalies the checker finds in it (strict serializability), sorted.
    pub anomalies: &'static [&'static str],
    /// Its events.
    pub events: Vec<Event>,
}

impl Case {
    /// Its events as a history.
    pub fn history(&self) -> History {
        self.events.iter().cloned().collect()
    }
}

fn seq(parts: impl IntoIterator<Item = Vec<Event>>) -> Vec<Event> {
    parts.into_iter().flatten().collect()
}

/// Every case, in a fixed order.
pub fn cases() -> Vec<Case> {
    let case = |name, anomalies, events| Case {
        name,
        anomalies,
        events,
    };
    vec![
        // Each read the other's write of one key and wrote over it: x is 1 then 2, y 2 then 1.
        case(
            "g0",
            &["G0", "G1c"],
            concurrent(&[
                (0, json!([["r", "y", 2], ["w", "y", 1], ["w", "x", 1]])),
                (1, json!([["r", "x", 1], ["w", "x", 2], ["w", "y", 2]])),
            ]),
        ),
        case(
            "g1a",
            &["G1a"],
            seq([
                failed(0, json!([["w", "x", 1]])).to_vec(),
                solo(1, json!([["r", "x", 1]])).to_vec(),
            ]),
        ),
        case(
            "g1b",
            &["G1b"],
            seq([
                solo(0, json!([["w", "x", 1], ["w", "x", 2]])).to_vec(),
                solo(1, json!([["r", "x", 1]])).to_vec(),
            ]),
        ),
        case(
            "g1c",
            &["G1c"],
            concurrent(&[
                (0, json!([["w", "x", 1], ["r", "y", 2]])),
                (1, json!([["w", "y", 2], ["r", "x", 1]])),
            ]),
        ),
        // T1 saw T0's y but not its x.
        case(
            "g-single",
            &["G-single"],
            concurrent(&[
                (0, json!([["w", "x", 1], ["w", "y", 1]])),
                (1, json!([["r", "x", null], ["r", "y", 1]])),
            ]),
        ),
        // x: 1 (T0), then 2 (T1, which read 1). T2 read x = 1, so it came before T1; yet it
        // read T1's y.
        case(
            "g-single-wfr",
            &["G-single"],
            seq([
                solo(0, json!([["w", "x", 1]])).to_vec(),
                concurrent(&[
                    (1, json!([["r", "x", 1], ["w", "x", 2], ["w", "y", 2]])),
                    (2, json!([["r", "x", 1], ["r", "y", 2]])),
                ]),
            ]),
        ),
        case(
            "g2-item",
            &["G2-item"],
            concurrent(&[
                (
                    0,
                    json!([["r", "x", null], ["r", "y", null], ["w", "x", 1]]),
                ),
                (
                    1,
                    json!([["r", "x", null], ["r", "y", null], ["w", "y", 2]]),
                ),
            ]),
        ),
        // T0 -rw-> T1 -wr-> T2 -rw-> T3 -wr-> T0: two anti-dependencies, never adjacent.
        case(
            "g-nonadjacent",
            &["G-nonadjacent"],
            concurrent(&[
                (0, json!([["r", "a", null], ["r", "d", 1]])),
                (1, json!([["w", "a", 1], ["w", "b", 1]])),
                (2, json!([["r", "b", 1], ["r", "c", null]])),
                (3, json!([["w", "c", 1], ["w", "d", 1]])),
            ]),
        ),
        case(
            "internal",
            &["internal"],
            seq([
                solo(1, json!([["w", "x", 2]])).to_vec(),
                solo(0, json!([["r", "x", 2], ["r", "x", null]])).to_vec(),
                solo(2, json!([["w", "y", 3], ["r", "y", 4]])).to_vec(),
                solo(3, json!([["w", "y", 4]])).to_vec(),
            ]),
        ),
        // T1 and T2 both read T0's 1 and wrote over it.
        case(
            "lost-update",
            &["G2-item", "lost-update"],
            seq([
                solo(0, json!([["w", "x", 1]])).to_vec(),
                concurrent(&[
                    (1, json!([["r", "x", 1], ["w", "x", 2]])),
                    (2, json!([["r", "x", 1], ["w", "x", 3]])),
                ]),
            ]),
        ),
        case(
            "garbage-read",
            &["garbage-read"],
            solo(0, json!([["r", "x", 9]])).to_vec(),
        ),
        case(
            "future-read",
            &["future-read"],
            solo(0, json!([["r", "x", 1], ["w", "x", 1]])).to_vec(),
        ),
        // Each read the other's value before writing its own: 1 < 2 and 2 < 1.
        case(
            "cyclic-versions",
            &["G1c", "cyclic-versions"],
            concurrent(&[
                (0, json!([["r", "x", 2], ["w", "x", 1]])),
                (1, json!([["r", "x", 1], ["w", "x", 2]])),
            ]),
        ),
        // A read of nil after a write completed.
        case(
            "g-single-realtime",
            &["G-single-realtime"],
            seq([
                solo(0, json!([["w", "x", 1]])).to_vec(),
                solo(1, json!([["r", "x", null]])).to_vec(),
            ]),
        ),
        // The same, on one process.
        case(
            "g-single-process",
            &["G-single-process"],
            seq([
                solo(0, json!([["w", "x", 1]])).to_vec(),
                solo(0, json!([["r", "x", null]])).to_vec(),
            ]),
        ),
        case(
            "valid-serial",
            &[],
            seq([
                solo(0, json!([["r", "x", null], ["w", "x", 1]])).to_vec(),
                solo(1, json!([["r", "x", 1], ["w", "x", 2], ["r", "x", 2]])).to_vec(),
                solo(0, json!([["w", "y", 3], ["r", "x", 2], ["r", "y", 3]])).to_vec(),
                solo(1, json!([["w", "x", 4], ["w", "x", 5], ["r", "x", 5]])).to_vec(),
                solo(2, json!([["r", "x", 5], ["r", "y", 3]])).to_vec(),
            ]),
        ),
        case(
            "valid-failed-and-unknown",
            &[],
            seq([
                failed(0, json!([["w", "x", 1]])).to_vec(),
                unknown(1, json!([["w", "x", 2], ["r", "y", null]])).to_vec(),
                solo(2, json!([["r", "x", 2]])).to_vec(),
                unknown(3, json!([["w", "y", 4]])).to_vec(),
                solo(4, json!([["r", "y", null]])).to_vec(),
            ]),
        ),
        case(
            "valid-concurrent",
            &[],
            concurrent(&[
                (0, json!([["r", "x", null], ["w", "x", 1]])),
                (1, json!([["r", "y", null], ["w", "y", 2]])),
                (2, json!([["r", "z", null]])),
            ]),
        ),
    ]
}

/// The case named `name`.
///
/// # Panics
///
/// If there is none.
pub fn case(name: &str) -> Case {
    cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no rw-register case {name:?}"))
}
