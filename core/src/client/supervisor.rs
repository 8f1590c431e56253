//! The client's background task: follows the current session, reports its transitions as
//! connection events, and opens the next session when it ends.

use std::sync::Arc;

use crate::coverage::{self, Mark};
use crate::{Coordination, Error, SessionState};

use super::{Connect, ConnectionState, Phase, Session, Shared, Slot};

/// Follows sessions until the client ends; see the [module docs](super).
pub(super) async fn supervise(shared: Arc<Shared>, mut session: Session) {
    loop {
        let end = follow(&shared, &session).await;
        crate::metrics::session_ended(match end {
            SessionState::Expired => "expired",
            SessionState::AuthFailed => "auth_failed",
            _ => "closed",
        });
        if end == SessionState::AuthFailed {
            shared.end(Error::AuthFailed);
            return;
        }
        shared.publish(ConnectionState::Lost, &session, false);
        shared
            .slot
            .send_modify(|slot| slot.phase = Phase::Replacing);
        let Some(connector) = shared.connector.clone() else {
            shared.end(end.terminal_error().unwrap_or(Error::Closed));
            return;
        };
        let zk = match open(&shared, &*connector).await {
            Ok(zk) => zk,
            Err(error) => {
                tracing::error!(%error, "giving up opening a new ZooKeeper session");
                shared.end(error);
                return;
            }
        };
        coverage::reach(Mark::ClientSessionReplaced);
        session = Session::new(zk, session.generation() + 1);
        crate::metrics::session_opened();
        shared.slot.send_replace(Slot {
            session: session.clone(),
            phase: Phase::Live,
        });
        shared.publish(ConnectionState::Reconnected, &session, true);
    }
}

/// Reports `session`'s transitions until it ends; returns how it ended.
async fn follow(shared: &Shared, session: &Session) -> SessionState {
    let mut states = session.session_states();
    if states.current() == SessionState::Disconnected {
        shared.publish(ConnectionState::Suspended, session, false);
    }
    while let Some(state) = states.next().await {
        match state {
            SessionState::Disconnected => {
                shared.publish(ConnectionState::Suspended, session, false);
            }
            SessionState::Connected => {
                shared.publish(ConnectionState::Reconnected, session, false);
            }
            _ => {}
        }
    }
    states.current()
}

/// Opens a session, retrying failures as the policy says.
async fn open(shared: &Shared, connector: &dyn Connect) -> Result<Arc<dyn Coordination>, Error> {
    let mut failures = 0u32;
    loop {
        match connector.connect().await {
            Ok(zk) => return Ok(zk),
            Err(error)
                if error.is_credentials_refused() || matches!(error, Error::BadArguments(_)) =>
            {
                return Err(error);
            }
            Err(error) => {
                crate::metrics::session_open_failed(&error);
                failures += 1;
                if shared.policy.gives_up(failures) {
                    return Err(error);
                }
                let pause = shared.policy.delay(failures, connector.jitter());
                tracing::warn!(%error, ?pause, failures, "could not open a ZooKeeper session");
                tokio::time::sleep(pause).await;
            }
        }
    }
}
