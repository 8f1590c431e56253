//! What consuming one queue entry writes: the action applied to the value (or its failure under
//! the agent's error mode), as the state's next bytes. Pure, so that the executor's
//! [`StepMachine`](super::StepMachine) and a model share it.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::MAX_DATA_LEN;

use super::{Action, AgentFailure, AgentState, EntryName, ErrorMode, StepError};

/// The state's bytes after consuming an entry, and the failure to hand the error handler if
/// the action was skipped ([`ErrorMode::Continue`]).
pub type Consumed = (Vec<u8>, Option<AgentFailure>);

/// How an executor consumes an entry; see [`StepMachine`](super::StepMachine).
///
/// Any `FnMut(&AgentState, &EntryName, &[u8]) -> Result<Consumed, StepError>` is one.
///
/// ```
/// use avout::agent::{AgentState, Consume, Consumed, EntryName, StepError};
/// let mut keep = |s: &AgentState, e: &EntryName, _: &[u8]| -> Result<Consumed, StepError> {
///     Ok((s.consumed(e, s.value.clone(), None).encode(), None))
/// };
/// let e = EntryName::parse("p-0000000000000001-00000000000000000000000000000002-0000000000").unwrap();
/// let (next, _) = keep.consume(&AgentState::new(serde_json::json!(1)), &e, b"null").unwrap();
/// assert_eq!(AgentState::decode(&next).unwrap().applied, 0);
/// ```
pub trait Consume {
    /// Consumes `entry`, whose action is `bytes`, on `state`.
    fn consume(
        &mut self,
        state: &AgentState,
        entry: &EntryName,
        bytes: &[u8],
    ) -> Result<Consumed, StepError>;
}

impl<F> Consume for F
where
    F: FnMut(&AgentState, &EntryName, &[u8]) -> Result<Consumed, StepError>,
{
    fn consume(
        &mut self,
        state: &AgentState,
        entry: &EntryName,
        bytes: &[u8],
    ) -> Result<Consumed, StepError> {
        self(state, entry, bytes)
    }
}

/// Consumes `entry` (holding the action `bytes`, JSON of an `A`) on `state` of the agent at
/// `path`: applies the action to the value and checks the result with `valid`. An action that
/// does not decode, fails, is refused by the validator or makes the state too large for a
/// node fails under the agent's error mode: the agent stops ([`ErrorMode::Fail`]) or the
/// action is skipped with the failure returned for the handler ([`ErrorMode::Continue`]).
/// Fails only when the state's value is not a `T`.
///
/// ```
/// use avout::agent::{AgentState, EntryName, consume};
/// let e = EntryName::parse("p-0000000000000001-00000000000000000000000000000002-0000000000").unwrap();
/// let (next, skipped) = consume::<u64, ()>("/a", &AgentState::new(serde_json::json!(4)), &e, b"null", |_| true).unwrap();
/// let next = AgentState::decode(&next).unwrap();
/// assert_eq!((next.value, next.applied, skipped), (serde_json::json!(4), 0, None));
/// ```
pub fn consume<T, A>(
    path: &str,
    state: &AgentState,
    entry: &EntryName,
    bytes: &[u8],
    valid: impl FnOnce(&T) -> bool,
) -> Result<Consumed, StepError>
where
    T: Serialize + DeserializeOwned,
    A: Action<T>,
{
    let outcome = match serde_json::from_slice::<A>(bytes) {
        Err(e) => Err(format!("the action does not decode: {e}")),
        Ok(action) => {
            let current = T::deserialize(&state.value).map_err(|e| StepError::Decode {
                path: path.to_owned(),
                detail: e.to_string(),
            })?;
            match action.apply(&current) {
                Ok(new) if valid(&new) => {
                    serde_json::to_value(&new).map_err(|e| format!("cannot encode: {e}"))
                }
                Ok(_) => Err("the validator rejected the new value".to_owned()),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    let failed = |error: String| AgentFailure {
        seq: entry.seq,
        error,
    };
    let unchanged = || state.consumed(entry, state.value.clone(), None);
    let next = match outcome {
        Ok(value) => state.consumed(entry, value, None).encode(),
        Err(error) => return Ok(fail_or_skip(state, unchanged(), failed(error))),
    };
    if next.len() > MAX_DATA_LEN {
        let f = failed(format!(
            "the new state takes {} bytes, over ZooKeeper's {MAX_DATA_LEN}",
            next.len()
        ));
        return Ok(fail_or_skip(state, unchanged(), f));
    }
    Ok((next, None))
}

/// A failed action under the agent's error mode: the state that stops the agent, or the one
/// that skips the action with the failure for the handler.
fn fail_or_skip(state: &AgentState, mut next: AgentState, failure: AgentFailure) -> Consumed {
    match state.mode {
        ErrorMode::Fail => {
            next.failure = Some(failure);
            (next.encode(), None)
        }
        ErrorMode::Continue => (next.encode(), Some(failure)),
    }
}
