//! Why a history could not be read, written or paired.

use std::io;
use std::path::PathBuf;

use serde_json::Value;

use super::{EdnError, ErrorCode, F};

/// Why a history could not be read, written or paired.
///
/// ```
/// use avout_check::history::{History, HistoryError};
/// let err = History::from_reader("{\"type\":\"invoke\"}\n".as_bytes()).unwrap_err();
/// assert!(matches!(err, HistoryError::Parse { line: 1, .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The file could not be opened or created.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Reading failed at a line.
    #[error("cannot read line {line}: {source}")]
    Read {
        /// The line, from 1.
        line: usize,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Writing failed.
    #[error("cannot write history: {0}")]
    Write(#[source] io::Error),
    /// A line is not a valid event.
    #[error("line {line}: not a history event: {source}")]
    Parse {
        /// The line, from 1.
        line: usize,
        /// What serde found wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A process invoked an operation while its previous one was still outstanding.
    #[error(
        "line {line}: process {process} invokes while its invocation at line {pending_line} is outstanding"
    )]
    AlreadyPending {
        /// The second invocation's line.
        line: usize,
        /// The process.
        process: u64,
        /// The outstanding invocation's line.
        pending_line: usize,
    },
    /// A completion with no outstanding invocation on its process.
    #[error("line {line}: process {process} completes an operation it never invoked")]
    NoInvocation {
        /// The completion's line.
        line: usize,
        /// The process.
        process: u64,
    },
    /// A completion whose `f` differs from its invocation's.
    #[error(
        "line {line}: completion of {completed} for the {invoked} invoked at line {invoke_line}"
    )]
    MismatchedF {
        /// The completion's line.
        line: usize,
        /// The invocation's line.
        invoke_line: usize,
        /// The invoked function.
        invoked: F,
        /// The completed function.
        completed: F,
    },
    /// An EDN history that could not be read.
    #[error(transparent)]
    Edn(#[from] EdnError),
    /// An `ok` completion that carries an error code: it cannot have both taken effect and
    /// failed.
    #[error("line {line}: an ok completion with error {code}")]
    OkWithError {
        /// The completion's line.
        line: usize,
        /// The code it carries.
        code: ErrorCode,
    },
    /// With [`Keys::Tuple`](super::Keys::Tuple), a client event whose value is not a `[key, value]` pair.
    #[error("line {line}: value {value} is not a [key, value] pair")]
    NotKeyed {
        /// The line.
        line: usize,
        /// The value found.
        value: Value,
    },
}
