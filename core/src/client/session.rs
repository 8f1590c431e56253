//! One session of a managed client, as a handle pins it for an operation.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::Coordination;

/// One of a [`Client`](super::Client)'s sessions, held for the length of an operation.
///
/// A recipe pins the session that is current when an operation starts and runs the whole
/// operation on it: the session contract (one session's requests applied in call order,
/// every call failing with the terminal error once it has ended) then holds for the
/// operation, whatever the client does next. A lock guard keeps the session it acquired on;
/// when that session ends, the guard is lost even though the client has a new one.
///
/// It dereferences to the session's [`Coordination`].
///
/// ```
/// # async fn demo(client: &avout::Client) -> avout::Result<()> {
/// use avout::{Coordination, CoordinationExt};
/// let session = client.current_session().await?;
/// session.ensure_path("/app").await?;
/// println!("generation {} is session {}", session.generation(), session.session().id);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Session {
    zk: Arc<dyn Coordination>,
    generation: u64,
}

impl Session {
    pub(super) fn new(zk: Arc<dyn Coordination>, generation: u64) -> Self {
        Session { zk, generation }
    }

    /// The same session of the same generation, reached through `zk` (a wrapper of it).
    pub(super) fn wrapped(&self, zk: Arc<dyn Coordination>) -> Self {
        Session {
            zk,
            generation: self.generation,
        }
    }

    /// Which of the client's sessions this is: 1 for the first, one more per replacement.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The session as a shareable trait object.
    pub fn coordination(&self) -> &Arc<dyn Coordination> {
        &self.zk
    }

    /// Whether the session has ended (expired, closed or refused its credentials).
    pub fn has_ended(&self) -> bool {
        self.zk.session_state().is_terminal()
    }
}

impl Deref for Session {
    type Target = dyn Coordination;

    fn deref(&self) -> &Self::Target {
        &*self.zk
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.zk.session().id)
            .field("generation", &self.generation)
            .field("state", &self.zk.session_state())
            .finish()
    }
}
