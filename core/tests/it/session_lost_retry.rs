//! A loop that tries again after a lost session waits until the client is past that session.
//!
//! Found by `avout endure` on a real ensemble (2026-11-29): two leader latches stood again and
//! again, each attempt failing at once with a lost session, and since every step of such a
//! loop is ready it never yields: they held both worker threads of the runtime for 30
//! minutes, starving the timers, the signal handler and the tasks that would have moved the
//! client to its next session. A session can refuse every call as lost while its state still
//! looks live: once `ZkClient::expire_session` has taken its handle, the end turns terminal
//! only when the service confirms it.
//!
//! Here a session refuses every request with `SessionExpired` while staying live, so the
//! client never moves on: a leader latch and a barrier's wait on it must wait (they cannot do
//! anything else), not spin; a first group join, which is no loop, says the session was lost. On the simulator's one thread a spinning loop
//! stops virtual time, so the test's own sleep would never return.

use std::sync::Arc;
use std::time::Duration;

use avout::recipes::barrier::Barrier;
use avout::recipes::election::{Election, LatchState};
use avout::recipes::group::{Group, GroupError};
use avout::{Client, Coordination, Error, Intercept, Intercepted, OpFuture, Reply, Request, Watch};
use futures::FutureExt;

use crate::support;

/// Refuses every request at once, as a session whose handle was taken does.
struct Refused;

impl Intercept for Refused {
    fn submit<'a>(
        &'a self,
        _inner: &'a dyn Coordination,
        _request: Request,
    ) -> OpFuture<'a, (Reply, Option<Watch>)> {
        futures::future::ready(Err(Error::SessionExpired)).boxed()
    }
}

#[test]
fn recipes_on_a_session_that_refuses_everything_wait_instead_of_spinning() {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let sim = support::plain_sim(7);
        let (outcome, _) = support::simulate(&sim, async |backend| {
            let session = support::session_of(backend).await;
            let client = Client::single(Arc::new(Intercepted::new(session, Refused)));
            let latch = Election::new(&client, "/leader").unwrap().latch();
            // A barrier's wait tries again on the next session (`Client::across_sessions`).
            let barrier = Barrier::new(&client, "/barrier").unwrap();
            let waiting = tokio::spawn(async move { barrier.wait().await });
            // A first join is not a loop: it says the session was lost.
            let group = Group::new(&client, "/group").unwrap();
            let joined = group.join("me", b"").await.map(drop);
            // Virtual time goes on only if no task holds the simulator's thread.
            tokio::time::sleep(Duration::from_secs(10)).await;
            let state = latch.events().current();
            let pending = !waiting.is_finished();
            drop(latch);
            (state, pending, joined)
        });
        let _ = done.send(outcome);
    });
    let (state, pending, joined) = result.recv_timeout(Duration::from_secs(60)).expect(
        "the simulation stopped: a loop tried a refused session again and again without \
         yielding",
    );
    assert!(matches!(state, LatchState::Candidate { .. }), "{state:?}");
    assert!(
        pending,
        "the barrier's wait waits for a session that serves"
    );
    assert!(
        matches!(joined, Err(GroupError::SessionLost(Error::SessionExpired))),
        "{joined:?}"
    );
}
