//! Pairing invocations with completions, for every reader of operations: each process has at
//! most one operation outstanding, so a completion ends its process's last invocation.

use rustc_hash::FxHashMap;

use super::{ErrorCode, EventType, HistoryError, Outcome, Position};

/// The operations outstanding, by process (only looked up, never iterated).
#[derive(Default)]
pub(crate) struct Pairing {
    pending: FxHashMap<u64, usize>,
}

impl Pairing {
    /// Records that `process` invoked operation `op` at `here`; `line_of` gives an earlier
    /// operation's invocation line, for the error when one is still outstanding.
    pub(crate) fn invoke(
        &mut self,
        process: u64,
        op: usize,
        here: Position,
        line_of: impl FnOnce(usize) -> usize,
    ) -> Result<(), HistoryError> {
        if let Some(&open) = self.pending.get(&process) {
            return Err(HistoryError::AlreadyPending {
                line: here.line,
                process,
                pending_line: line_of(open),
            });
        }
        self.pending.insert(process, op);
        Ok(())
    }

    /// The operation that a completion by `process` at `here` ends.
    pub(crate) fn complete(&mut self, process: u64, here: Position) -> Result<usize, HistoryError> {
        self.pending
            .remove(&process)
            .ok_or(HistoryError::NoInvocation {
                line: here.line,
                process,
            })
    }
}

/// How a completion of `kind` at `line` ends its operation. A Maelstrom `error` code says
/// whether the failure was definite, whatever the type says.
pub(crate) fn outcome(
    kind: EventType,
    error: Option<ErrorCode>,
    line: usize,
) -> Result<Outcome, HistoryError> {
    let kind = match (kind, error) {
        (EventType::Ok, Some(code)) => return Err(HistoryError::OkWithError { line, code }),
        (_, Some(code)) => code.event_type(),
        (kind, None) => kind,
    };
    Ok(match kind {
        EventType::Ok => Outcome::Ok,
        EventType::Fail => Outcome::Fail,
        EventType::Info | EventType::Invoke => Outcome::Info,
    })
}
