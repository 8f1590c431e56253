//! The one way a handle retries an uncertain call: an idempotent request that failed with an
//! indeterminate error (a connection loss, a timeout) is sent again, paced by a [`Pace`].
//!
//! Machines retry through their [`Stall`](super::Stall); this is the same rule for the few
//! calls a handle makes outside any machine (raising a barrier, deleting its own node, a
//! read): wait for the session to change state or for a pause, whichever comes first, then
//! send again. Only for requests whose repetition cannot change the outcome — reads, deletes,
//! and writes of nodes only this caller writes, with the same bytes.

use std::future::Future;
use std::time::Duration;

use super::RETRY_PAUSE_MS;
use crate::{Coordination, Error, SessionStates};

/// How to wait before sending an uncertain call again.
///
/// ```
/// use avout::machine::Pace;
/// assert_eq!(Pace::RECIPE.pause_ms, avout::machine::RETRY_PAUSE_MS);
/// assert_eq!(Pace::AT_ONCE.pause_ms, 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pace {
    /// How long to wait for the session to change state before sending again (0: at once).
    pub pause_ms: u64,
    /// Whether to stop with the session's error once it has ended (instead of sending again
    /// and letting the request fail with it).
    pub end_with_session: bool,
}

impl Pace {
    /// The recipes' pace: [`RETRY_PAUSE_MS`], or a session transition if one comes first.
    pub const RECIPE: Pace = Pace {
        pause_ms: RETRY_PAUSE_MS,
        end_with_session: false,
    };

    /// Send again at once: for a client whose requests wait for a connection by themselves.
    pub const AT_ONCE: Pace = Pace {
        pause_ms: 0,
        end_with_session: false,
    };

    /// A slower pace that gives up when the session ends (for work on the session's behalf
    /// that is pointless without it).
    ///
    /// ```
    /// let p = avout::machine::Pace::patient(100);
    /// assert!(p.end_with_session);
    /// ```
    pub const fn patient(pause_ms: u64) -> Pace {
        Pace {
            pause_ms,
            end_with_session: true,
        }
    }

    /// Waits before a retry: until `states` reports a transition or the pause passes. Fails
    /// with the session's error if it has ended and this pace ends with the session.
    ///
    /// ```no_run
    /// # async fn demo(zk: &avout::zk::ZkClient) -> Result<(), avout::Error> {
    /// use avout::Coordination;
    /// let mut states = zk.session_states();
    /// avout::machine::Pace::patient(100).pause(&mut states).await?;
    /// # Ok(()) }
    /// ```
    pub async fn pause(self, states: &mut SessionStates) -> Result<(), Error> {
        if self.end_with_session
            && let Some(error) = states.current().terminal_error()
        {
            return Err(error);
        }
        if self.pause_ms == 0 {
            return Ok(());
        }
        let pause = Duration::from_millis(self.pause_ms);
        match tokio::time::timeout(pause, states.next()).await {
            Ok(Some(state)) if self.end_with_session => state.terminal_error().map_or(Ok(()), Err),
            Ok(None) if self.end_with_session => {
                Err(states.current().terminal_error().unwrap_or(Error::Closed))
            }
            Ok(_) | Err(_) => Ok(()),
        }
    }
}

/// Runs `request` until it gets a determinate answer, pausing by `pace` between tries.
///
/// ```no_run
/// # async fn demo(zk: &avout::zk::ZkClient) -> Result<(), avout::Error> {
/// use avout::Coordination;
/// use avout::machine::{Pace, until_certain};
/// let stat = until_certain(zk, Pace::RECIPE, || zk.exists("/a")).await?;
/// # let _ = stat; Ok(()) }
/// ```
pub async fn until_certain<C, T, F, Fut>(zk: &C, pace: Pace, mut request: F) -> Result<T, Error>
where
    C: Coordination + ?Sized,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut states = zk.session_states();
    loop {
        match request().await {
            Err(e) if e.is_indeterminate() => {
                crate::metrics::retried_after(&e);
                pace.pause(&mut states).await?;
            }
            other => return other,
        }
    }
}

/// [`until_certain`] at the recipes' pace.
///
/// ```no_run
/// # async fn demo(zk: &avout::zk::ZkClient) -> Result<(), avout::Error> {
/// use avout::Coordination;
/// avout::machine::idempotent(zk, || zk.delete("/a", None)).await?;
/// # Ok(()) }
/// ```
pub async fn idempotent<C, T, F, Fut>(zk: &C, request: F) -> Result<T, Error>
where
    C: Coordination + ?Sized,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    until_certain(zk, Pace::RECIPE, request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SessionState, SessionStatePublisher};

    #[tokio::test(start_paused = true)]
    async fn the_recipe_pace_waits_for_a_transition_or_the_pause() {
        let session = SessionStatePublisher::new(SessionState::Disconnected);
        let mut states = session.subscribe();
        let start = tokio::time::Instant::now();
        Pace::RECIPE.pause(&mut states).await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(RETRY_PAUSE_MS));
        session.publish(SessionState::Connected);
        Pace::RECIPE.pause(&mut states).await.unwrap();
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(RETRY_PAUSE_MS),
            "a transition ends the pause at once"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_patient_pace_ends_with_the_session_and_the_recipe_pace_does_not() {
        let session = SessionStatePublisher::new(SessionState::Disconnected);
        let mut states = session.subscribe();
        session.publish(SessionState::Expired);
        assert_eq!(
            Pace::patient(100).pause(&mut states).await,
            Err(Error::SessionExpired)
        );
        assert_eq!(Pace::RECIPE.pause(&mut states).await, Ok(()));
    }
}
