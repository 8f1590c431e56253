//! Which Maelstrom error code ([`avout_check::history::code`]) a workload records for each of
//! avout's typed errors.
//!
//! The code always agrees with the completion's type, which the error's own
//! `is_definite` decides: an error that may have taken effect is 13 (crash: the connection
//! or session was lost with the request in flight, or a lost reply could not be recovered);
//! a definite one is
//!
//! | error | code |
//! |---|---|
//! | STM retry limit reached (`StmError::RetryLimit`) | 30 txn-conflict |
//! | STM operation the protocol does not offer (`StmError::Unsupported`) | 10 not-supported |
//! | no server reachable, session closed or expired before anything was sent | 11 temporarily-unavailable |
//! | lin-kv's 20 key-does-not-exist and 22 precondition-failed | 20, 22 |
//! | a value that cannot be encoded, is too large or names nothing valid | 12 malformed-request |
//! | anything else refused (a validator, a body's error, a request ZooKeeper refused) | 14 abort |
//!
//! Besides these, the worker records 0 (timeout, indefinite) for an operation that outran
//! the run's deadline and 11 for one it refused itself because the client's connection was
//! down ([`disconnected`]).
//!
//! ```
//! use avout::stm::StmError;
//! use avout_check::history::ErrorCode;
//! use avout_scenarios::scenario::codes;
//! let e: StmError = StmError::RetryLimit { retries: 3 };
//! assert_eq!(codes::stm(&e), ErrorCode::TXN_CONFLICT);
//! ```

use avout::atom::AtomError;
use avout::atom::linkv::KvError;
use avout::stm::StmError;
use avout::{Client, SessionState};
use futures::FutureExt;

use avout_check::history::ErrorCode;

/// The code of a coordination error whose operation `definite`ly did not take effect (as
/// the caller judged it), else 13.
///
/// ```
/// use avout_check::history::ErrorCode;
/// use avout_scenarios::scenario::codes;
/// assert_eq!(codes::zk(&avout::Error::ConnectionLoss, false), ErrorCode::CRASH);
/// assert_eq!(codes::zk(&avout::Error::SessionExpired, true), ErrorCode::TEMPORARILY_UNAVAILABLE);
/// ```
pub fn zk(e: &avout::Error, definite: bool) -> ErrorCode {
    match e {
        _ if !definite => ErrorCode::CRASH,
        avout::Error::Unreachable { .. }
        | avout::Error::Closed
        | avout::Error::SessionExpired
        | avout::Error::ConnectionLoss => ErrorCode::TEMPORARILY_UNAVAILABLE,
        avout::Error::DataTooLarge { .. }
        | avout::Error::InvalidPath { .. }
        | avout::Error::BadArguments(_) => ErrorCode::MALFORMED_REQUEST,
        avout::Error::Unimplemented(_) => ErrorCode::NOT_SUPPORTED,
        _ => ErrorCode::ABORT,
    }
}

/// The code of an atom's error.
///
/// ```
/// use avout::atom::AtomError;
/// use avout_check::history::ErrorCode;
/// let e = AtomError::Invalid { path: "/a".into() };
/// assert_eq!(avout_scenarios::scenario::codes::atom(&e), ErrorCode::ABORT);
/// ```
pub fn atom(e: &AtomError) -> ErrorCode {
    match e {
        _ if !e.is_definite() => ErrorCode::CRASH,
        AtomError::Zk(z) => zk(z, true),
        AtomError::TooLarge { .. } | AtomError::Encode { .. } => ErrorCode::MALFORMED_REQUEST,
        _ => ErrorCode::ABORT,
    }
}

/// The code of a lin-kv error: [`KvError::code`].
///
/// ```
/// use avout::atom::linkv::KvError;
/// use avout_check::history::ErrorCode;
/// let e = KvError::KeyDoesNotExist { key: "k".into() };
/// assert_eq!(avout_scenarios::scenario::codes::kv(&e), ErrorCode::KEY_DOES_NOT_EXIST);
/// ```
pub fn kv(e: &KvError) -> ErrorCode {
    ErrorCode(e.code())
}

/// The code of an STM error.
///
/// ```
/// use avout::stm::StmError;
/// use avout_check::history::ErrorCode;
/// let e: StmError = StmError::Indeterminate { detail: "reply lost".into() };
/// assert_eq!(avout_scenarios::scenario::codes::stm(&e), ErrorCode::CRASH);
/// ```
pub fn stm<E>(e: &StmError<E>) -> ErrorCode {
    match e {
        _ if !e.is_definite() => ErrorCode::CRASH,
        StmError::RetryLimit { .. } => ErrorCode::TXN_CONFLICT,
        StmError::Unsupported { .. } => ErrorCode::NOT_SUPPORTED,
        StmError::Zk(z) => zk(z, true),
        StmError::Encode { .. }
        | StmError::TooLarge { .. }
        | StmError::BadName { .. }
        | StmError::TypeMismatch { .. }
        | StmError::NoRef { .. }
        | StmError::ForeignRef { .. } => ErrorCode::MALFORMED_REQUEST,
        _ => ErrorCode::ABORT,
    }
}

/// Whether `client`'s connection is down: its current session is disconnected or has ended
/// and the client has not opened the next yet. A request sent now would wait for the
/// reconnection; the Maelstrom workloads refuse it instead, with 11. Asks the session itself,
/// not the client's connection events, which its background task publishes a moment later.
///
/// ```no_run
/// # fn demo(client: &avout::Client) {
/// if avout_scenarios::scenario::codes::disconnected(client) { println!("answer 11"); }
/// # }
/// ```
pub fn disconnected(client: &Client) -> bool {
    match client.current_session().now_or_never() {
        Some(Ok(session)) => session.session_state() != SessionState::Connected,
        // Between sessions (or ended for good).
        None | Some(Err(_)) => true,
    }
}
