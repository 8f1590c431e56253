//! loom checks of the state the lock and the session share in-process: a handle's hold count
//! (reentrancy) against concurrent guards, and the fan-out of session transitions to every
//! subscriber. Run with the command in models/README.md (`.ci/test` runs it).

use std::sync::Arc;

use futures::FutureExt;

use super::LockGuard;
use crate::lock::side::{Held, Side};
use crate::lock::{Acquired, LockKind};
use crate::{
    Client, Coordination, Error, OpFuture, Reply, Request, SessionId, SessionInfo, SessionState,
    SessionStatePublisher, SessionStates, Watch,
};

/// A session that is connected and refuses every request: the hold bookkeeping under test
/// never reaches the service.
struct Offline {
    states: SessionStatePublisher,
}

impl Offline {
    fn new() -> Arc<Self> {
        Arc::new(Offline {
            states: SessionStatePublisher::new(SessionState::Connected),
        })
    }
}

fn refused<'a, T: Send + 'a>() -> OpFuture<'a, T> {
    async { Err(Error::ConnectionLoss) }.boxed()
}

impl Coordination for Offline {
    fn session(&self) -> SessionInfo {
        SessionInfo {
            id: SessionId(1),
            timeout: std::time::Duration::from_secs(10),
        }
    }
    fn session_states(&self) -> SessionStates {
        self.states.subscribe()
    }
    fn submit(&self, _: Request) -> OpFuture<'_, (Reply, Option<Watch>)> {
        refused()
    }
    fn close(&self) -> OpFuture<'_, ()> {
        refused()
    }
}

/// Runs `f` with a managed client of an [`Offline`] session. The client's supervisor is
/// spawned on a current-thread runtime that nothing drives: the bookkeeping under test is
/// synchronous, and the runtime (with the supervisor) ends inside the loom execution.
fn with_client(f: impl FnOnce(&Client)) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime builds");
    let _enter = rt.enter();
    let client = Client::single(Offline::new());
    f(&client);
}

/// A side holding its node once, and the guard of that hold.
fn held_side(client: &Client) -> (Arc<Side>, LockGuard) {
    let side = Side::new(client, "/l".into(), LockKind::Exclusive);
    let acquired = Acquired {
        node: "/l/_c_x-lock-0000000001".into(),
        fencing_token: 7,
    };
    let session = client
        .current_session()
        .now_or_never()
        .expect("a live client's session is at hand")
        .expect("the session is live");
    *crate::sync::lock(&side.held) = Some(Held {
        acquired: acquired.clone(),
        count: 1,
        session: session.clone(),
    });
    let guard = LockGuard::new(side.clone(), acquired, session);
    (side, guard)
}

/// Releases a hold as `unlock` does, without the delete: whether it was the last.
fn release(mut guard: LockGuard) -> bool {
    guard.released = true;
    guard.release_hold().is_some()
}

#[test]
fn loom_reentry_racing_the_last_release_deletes_the_node_exactly_once() {
    loom::model(|| {
        with_client(|client| {
            let (side, guard) = held_side(client);
            let joiner = {
                let side = side.clone();
                loom::thread::spawn(move || match side.reenter() {
                    Some(again) => {
                        assert_eq!(again.fencing_token(), 7, "joins the same hold");
                        u32::from(release(again))
                    }
                    // The hold was already released: nothing to join, nothing to release.
                    None => 0,
                })
            };
            let mine = u32::from(release(guard));
            let theirs = joiner.join().unwrap();
            assert_eq!(
                mine + theirs,
                1,
                "the node is released by exactly one guard"
            );
            assert!(crate::sync::lock(&side.held).is_none(), "no hold left");
        })
    });
}

#[test]
fn loom_concurrent_reentries_count_every_hold() {
    loom::model(|| {
        with_client(|client| {
            let (side, guard) = held_side(client);
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let side = side.clone();
                    loom::thread::spawn(move || side.reenter().expect("held while a guard lives"))
                })
                .collect();
            let guards: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            assert_eq!(crate::sync::lock(&side.held).as_ref().unwrap().count, 3);
            let lasts: u32 = std::iter::once(guard)
                .chain(guards)
                .map(|g| u32::from(release(g)))
                .sum();
            assert_eq!(lasts, 1);
            assert!(crate::sync::lock(&side.held).is_none());
        })
    });
}

/// loom with at most `bound` preemptions per execution: the session's fan-out takes several
/// locks per transition, and an unbounded search of three threads does not end in minutes.
fn bounded(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    builder.check(f);
}

#[test]
fn loom_session_transitions_reach_a_waiting_subscriber_in_order() {
    bounded(3, || {
        let publisher = SessionStatePublisher::new(SessionState::Connected);
        let mut states = publisher.subscribe();
        let publishing = {
            let publisher = publisher.clone();
            loom::thread::spawn(move || {
                publisher.publish(SessionState::Disconnected);
                publisher.publish(SessionState::Expired);
            })
        };
        // Blocks between transitions: a lost wake-up would deadlock, which loom reports.
        let mut seen = Vec::new();
        while let Some(state) = loom::future::block_on(states.next()) {
            seen.push(state);
        }
        assert_eq!(seen, [SessionState::Disconnected, SessionState::Expired]);
        publishing.join().unwrap();
    });
}

#[test]
fn loom_a_subscriber_joining_during_a_publish_sees_each_transition_once() {
    bounded(3, || {
        let publisher = SessionStatePublisher::new(SessionState::Connected);
        let publishing = {
            let publisher = publisher.clone();
            loom::thread::spawn(move || {
                publisher.publish(SessionState::Disconnected);
                publisher.publish(SessionState::Expired);
            })
        };
        let mut late = publisher.subscribe();
        let mut seen = vec![late.current()];
        while let Some(state) = loom::future::block_on(late.next()) {
            seen.push(state);
        }
        publishing.join().unwrap();
        // From the state current when it joined, every later transition, none twice.
        let all = [
            SessionState::Connected,
            SessionState::Disconnected,
            SessionState::Expired,
        ];
        assert!(all.ends_with(&seen), "the late subscriber saw {seen:?}");
    });
}
