//! [`AgentError`]: why an agent operation failed, and whether it may have taken effect.

use crate::lock::LockError;
use crate::{Error, ErrorClass};

/// Why an agent operation failed.
///
/// ```
/// use avout::agent::AgentError;
/// let e = AgentError::Failed { path: "/a".into(), seq: 4, error: "no".into() };
/// assert!(e.is_definite());
/// assert!(e.to_string().contains("restart"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// There is no agent at the path (use [`Agent::open`](super::Agent::open)).
    #[error("no agent at {path}")]
    Missing {
        /// The agent's path.
        path: String,
    },
    /// The agent is failed: the action at `seq` failed and nothing is applied until
    /// [`restart`](super::Agent::restart).
    #[error("agent {path} is failed (action {seq}: {error}); it needs a restart")]
    Failed {
        /// The agent's path.
        path: String,
        /// The failed action's queue position.
        seq: i64,
        /// Its error.
        error: String,
    },
    /// [`restart`](super::Agent::restart) of an agent that is not failed; nothing was
    /// written.
    #[error("agent {path} is not failed; nothing to restart")]
    NotFailed {
        /// The agent's path.
        path: String,
    },
    /// A value or an action could not be encoded; nothing was sent or written.
    #[error("cannot encode for agent {path}: {source}")]
    Encode {
        /// The agent's path.
        path: String,
        /// serde_json's error.
        source: serde_json::Error,
    },
    /// The node holds bytes that are not this agent's state.
    #[error("agent {path} holds bytes that do not decode: {source}")]
    Decode {
        /// The agent's path.
        path: String,
        /// serde_json's error.
        source: serde_json::Error,
    },
    /// The validator rejected the value given to [`restart`](super::Agent::restart);
    /// nothing was written.
    #[error("the validator of agent {path} rejected the value; nothing was written")]
    Invalid {
        /// The agent's path.
        path: String,
    },
    /// A send's reply was lost and whether its action was queued cannot be told (more than
    /// [`SENDERS_KEPT`](super::SENDERS_KEPT) other senders' sends were applied since). It
    /// may have been queued: do not blindly send it again.
    #[error("whether the send to agent {path} was queued cannot be told: {detail}")]
    Indeterminate {
        /// The agent's path.
        path: String,
        /// What was seen.
        detail: String,
    },
    /// A send's reply was lost, and it was found not queued: nothing happened, and sending
    /// the action again is safe.
    #[error("the send to agent {path} lost its reply and was not queued; nothing happened")]
    NotQueued {
        /// The agent's path.
        path: String,
    },
    /// The executor's lock failed.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The coordination service failed (see [`Error::class`]).
    #[error(transparent)]
    Zk(#[from] Error),
}

impl AgentError {
    /// Whether the operation certainly changed nothing: `false` for
    /// [`AgentError::Indeterminate`] and for a coordination error that may have been applied
    /// or that lost the session.
    ///
    /// ```
    /// let e = avout::agent::AgentError::Zk(avout::Error::ConnectionLoss);
    /// assert!(!e.is_definite());
    /// ```
    pub fn is_definite(&self) -> bool {
        match self {
            AgentError::Indeterminate { .. } => false,
            AgentError::Zk(e) => e.class() == ErrorClass::Rejected,
            AgentError::Lock(_) => false,
            _ => true,
        }
    }

    /// Whether the session the operation ran on was lost (the next operation runs on the
    /// client's next session).
    ///
    /// ```
    /// use avout::{Error, agent::AgentError, lock::LockError};
    /// assert!(AgentError::Zk(Error::SessionExpired).is_session_lost());
    /// // However the executor's lock reported it.
    /// assert!(AgentError::Lock(LockError::Zk(Error::SessionExpired)).is_session_lost());
    /// assert!(AgentError::Lock(LockError::SessionLost(Error::SessionExpired)).is_session_lost());
    /// assert!(!AgentError::Lock(LockError::Zk(Error::ConnectionLoss)).is_session_lost());
    /// ```
    pub fn is_session_lost(&self) -> bool {
        match self {
            AgentError::Zk(e) => e.is_session_lost(),
            AgentError::Lock(LockError::Zk(e)) => e.is_session_lost(),
            AgentError::Lock(LockError::SessionLost(_) | LockError::NodeDeleted { .. }) => true,
            _ => false,
        }
    }
}

impl From<super::StepError> for AgentError {
    /// A step's error as the executor reports it: a lost lock node is the lock's
    /// [`LockError::NodeDeleted`] (a lost session, for [`AgentError::is_session_lost`]).
    fn from(e: super::StepError) -> Self {
        use super::StepError;
        match e {
            StepError::Missing { path } => AgentError::Missing { path },
            StepError::Decode { path, detail } => AgentError::Decode {
                path,
                source: <serde_json::Error as serde::de::Error>::custom(detail),
            },
            StepError::Fenced { node } => AgentError::Lock(LockError::NodeDeleted { node }),
            StepError::Zk(e) => AgentError::Zk(e),
        }
    }
}
