//! Maelstrom's error codes, as a history's `error` field carries them.
//!
//! A completion that failed may name why with Maelstrom's code (JSON `"error": 30`,
//! `"crash"` or `["crash", "…"]`; EDN `:error 30`, `:error :txn-conflict` or Maelstrom's own
//! `:error [:txn-conflict "…"]`). The code decides whether the operation took effect, whatever its `type` says, as
//! Maelstrom's client does when it turns an error into `:fail` or `:info`:
//!
//! | code | name | meaning |
//! |---|---|---|
//! | 0 | timeout | indefinite |
//! | 1 | node-not-found | definite |
//! | 10 | not-supported | definite |
//! | 11 | temporarily-unavailable | definite |
//! | 12 | malformed-request | definite |
//! | 13 | crash | indefinite |
//! | 14 | abort | definite |
//! | 20 | key-does-not-exist | definite |
//! | 21 | key-already-exists | definite |
//! | 22 | precondition-failed | definite |
//! | 30 | txn-conflict | definite |
//!
//! Any other code (Maelstrom leaves 1000 and up to services) is taken as indefinite: a checker
//! that does not know what an error means must not assume the operation did nothing.
//!
//! What avout's own workloads record (see the scenario docs): 11 when the client's connection
//! is down and the operation is refused before anything is sent; 13 when an error leaves the
//! outcome unknown (a reply lost and not recovered, a session lost with a write in flight);
//! 0 when the operation outran the run's deadline; 30 when an STM transaction gave up after
//! its retry limit of conflicts; 10 for an operation the STM protocol does not offer; 20, 22,
//! 12 and 14 from lin-kv as avout's `KvError::code` says.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::EventType;

/// A Maelstrom error code.
///
/// ```
/// use avout_check::history::ErrorCode;
/// assert_eq!(ErrorCode::TXN_CONFLICT.name(), Some("txn-conflict"));
/// assert!(ErrorCode::TXN_CONFLICT.is_definite());
/// assert!(!ErrorCode::CRASH.is_definite());
/// assert_eq!(ErrorCode::from_name("crash"), Some(ErrorCode::CRASH));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub u32);

/// The codes Maelstrom names, with their names and whether they are definite.
const KNOWN: [(u32, &str, bool); 11] = [
    (0, "timeout", false),
    (1, "node-not-found", true),
    (10, "not-supported", true),
    (11, "temporarily-unavailable", true),
    (12, "malformed-request", true),
    (13, "crash", false),
    (14, "abort", true),
    (20, "key-does-not-exist", true),
    (21, "key-already-exists", true),
    (22, "precondition-failed", true),
    (30, "txn-conflict", true),
];

impl ErrorCode {
    /// 0: the operation timed out (indefinite).
    pub const TIMEOUT: ErrorCode = ErrorCode(0);
    /// 10: the operation is not supported (definite).
    pub const NOT_SUPPORTED: ErrorCode = ErrorCode(10);
    /// 11: the service is temporarily unavailable; nothing was done (definite).
    pub const TEMPORARILY_UNAVAILABLE: ErrorCode = ErrorCode(11);
    /// 12: the request was malformed (definite).
    pub const MALFORMED_REQUEST: ErrorCode = ErrorCode(12);
    /// 13: the node crashed or lost its connection mid-operation (indefinite).
    pub const CRASH: ErrorCode = ErrorCode(13);
    /// 14: the operation was aborted (definite).
    pub const ABORT: ErrorCode = ErrorCode(14);
    /// 20: the key does not exist (definite).
    pub const KEY_DOES_NOT_EXIST: ErrorCode = ErrorCode(20);
    /// 22: the precondition (a cas's expected value) failed (definite).
    pub const PRECONDITION_FAILED: ErrorCode = ErrorCode(22);
    /// 30: the transaction conflicted and was not committed (definite).
    pub const TXN_CONFLICT: ErrorCode = ErrorCode(30);

    /// Maelstrom's name for the code, if it names it.
    ///
    /// ```
    /// assert_eq!(avout_check::history::ErrorCode(1000).name(), None);
    /// ```
    pub fn name(self) -> Option<&'static str> {
        KNOWN.iter().find(|k| k.0 == self.0).map(|k| k.1)
    }

    /// The code Maelstrom names `name` (`"txn-conflict"`, with or without a leading colon).
    ///
    /// ```
    /// use avout_check::history::ErrorCode;
    /// assert_eq!(ErrorCode::from_name(":abort"), Some(ErrorCode::ABORT));
    /// ```
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        let name = name.strip_prefix(':').unwrap_or(name);
        KNOWN.iter().find(|k| k.1 == name).map(|k| ErrorCode(k.0))
    }

    /// Whether an operation that failed with this code certainly did not take effect.
    /// Unknown codes are not.
    ///
    /// ```
    /// use avout_check::history::ErrorCode;
    /// assert!(ErrorCode::TEMPORARILY_UNAVAILABLE.is_definite());
    /// assert!(!ErrorCode::TIMEOUT.is_definite() && !ErrorCode(1000).is_definite());
    /// ```
    pub fn is_definite(self) -> bool {
        KNOWN.iter().any(|k| k.0 == self.0 && k.2)
    }

    /// The completion type this code means: `fail` if definite, else `info`.
    ///
    /// ```
    /// use avout_check::history::{ErrorCode, EventType};
    /// assert_eq!(ErrorCode::CRASH.event_type(), EventType::Info);
    /// ```
    pub fn event_type(self) -> EventType {
        if self.is_definite() {
            EventType::Fail
        } else {
            EventType::Info
        }
    }
}

impl ErrorCode {
    /// The code in an `error` field's JSON, as [`super::edn`] reads EDN's: a number, a
    /// name Maelstrom gives (`"txn-conflict"`), or an array whose first element is one
    /// (`["txn-conflict", "text"]`); `None` for anything else (Jepsen's `"net-timeout"`, free
    /// text), which leaves the completion's `type` to decide.
    ///
    /// ```
    /// use avout_check::history::ErrorCode;
    /// use serde_json::json;
    /// assert_eq!(ErrorCode::from_json(&json!(["crash", "node died"])), Some(ErrorCode::CRASH));
    /// assert_eq!(ErrorCode::from_json(&json!("net-timeout")), None);
    /// ```
    pub fn from_json(value: &serde_json::Value) -> Option<ErrorCode> {
        match value {
            serde_json::Value::Number(n) => n.as_u64()?.try_into().ok().map(ErrorCode),
            serde_json::Value::String(name) => ErrorCode::from_name(name),
            serde_json::Value::Array(items) => items.first().and_then(ErrorCode::from_json),
            _ => None,
        }
    }
}

/// Reads an `error` field leniently ([`ErrorCode::from_json`]): a history whose `error` is
/// not a Maelstrom code is still a history.
pub(crate) fn lenient<'de, D>(d: D) -> Result<Option<ErrorCode>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let value = serde_json::Value::deserialize(d)?;
    Ok(ErrorCode::from_json(&value))
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_code_round_trips_by_name_and_only_timeout_and_crash_are_indefinite() {
        for (code, name, definite) in KNOWN {
            assert_eq!(ErrorCode::from_name(name), Some(ErrorCode(code)));
            assert_eq!(ErrorCode(code).is_definite(), definite);
        }
        let indefinite: Vec<u32> = KNOWN.iter().filter(|k| !k.2).map(|k| k.0).collect();
        assert_eq!(indefinite, [0, 13]);
        assert_eq!(ErrorCode::from_name("no-such-error"), None);
    }
}
