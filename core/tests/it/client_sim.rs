//! The managed client on the simulator: a new session after each expiry, connection events in
//! Curator's vocabulary, the retry policy, closing, and every handle carrying on across an
//! expiry.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use avout::atom::Atom;
use avout::client::{Connect, ConnectionEvent, ConnectionState, RetryPolicy};
use avout::lock::{LockError, LockStatus, Mutex};
use avout::locktable::{LockTable, LockTableError, Transaction, assert as holds, set_var};
use avout::recipes::barrier::Barrier;
use avout::recipes::election::{Election, LatchState};
use avout::recipes::group::{Group, MemberStatus};
use avout::recipes::queue::Queue;
use avout::stm::{Stm, StmConfig};
use avout::{Client, Coordination, CoordinationExt, Error};
use avout_sim_zk::{Sim, SimZk};
use futures::future::BoxFuture;

/// Expires the client's current session and waits until the client has opened its next one.
async fn expire(zk: &SimZk, client: &Client) -> u64 {
    let before = client.generation();
    zk.expire_session(client.session().id);
    loop {
        let session = client
            .current_session()
            .await
            .expect("the client opens a new session");
        if session.generation() > before {
            return session.generation();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn an_expiry_is_reported_lost_then_a_new_session() {
    let (events, _) = Sim::builder()
        .seed(11)
        .clients(0)
        .build()
        .run(|ctx| async move {
            let client = Client::connect(ctx.zk.clone()).await.unwrap();
            let first = client.session().id;
            let mut events = client.connection_events();
            assert_eq!(events.current().state, ConnectionState::Connected);
            assert_eq!(expire(&ctx.zk, &client).await, 2);
            let second = client.session().id;
            assert_ne!(first, second, "a new session, not the old one back");
            client
                .create("/after", b"", &Default::default())
                .await
                .unwrap();
            client.close().await.unwrap();
            let mut seen = Vec::new();
            while let Some(event) = events.next().await {
                seen.push(event);
            }
            (first, second, seen)
        });
    let (first, second, seen) = events;
    let shape: Vec<_> = seen
        .iter()
        .map(|e: &ConnectionEvent| (e.state, e.generation, e.new_session))
        .collect();
    assert_eq!(
        shape,
        [
            (ConnectionState::Suspended, 1, false),
            (ConnectionState::Lost, 1, false),
            (ConnectionState::Reconnected, 2, true),
            (ConnectionState::Closed, 2, false),
        ],
        "{seen:?}"
    );
    assert_eq!(seen[1].session, first);
    assert_eq!(seen[2].session, second);
}

#[test]
fn every_handle_carries_on_across_an_expiry() {
    let (report, _) = Sim::builder()
        .seed(12)
        .clients(0)
        .build()
        .run(|ctx| async move {
            let client = Client::connect(ctx.zk.clone()).await.unwrap();
            let atom: Atom<u64> = Atom::open(&client, "/app/n", 0).await.unwrap();
            let stm = Stm::open(&client, "/app/stm", StmConfig::default())
                .await
                .unwrap();
            let (a, b) = (
                stm.make_ref("a", 10i64).await.unwrap(),
                stm.make_ref("b", 0i64).await.unwrap(),
            );
            let mutex = Mutex::new(&client, "/app/lock").unwrap();
            let queue = Queue::new(&client, "/app/q").unwrap();
            let barrier = Barrier::new(&client, "/app/gate").unwrap();
            let table = LockTable::new(&client, "/app/table").unwrap();
            let group = Group::new(&client, "/app/group").unwrap();

            atom.swap(|n| n + 1).await.unwrap();
            queue.put(b"before").await.unwrap();
            barrier.set().await.unwrap();
            let claim = Transaction::new("claim", vec![holds(set_var("t", "v", "x"))]);
            table.execute(&claim).await.unwrap();
            let mut member = group.join("me", b"data").await.unwrap();
            let guard = mutex.lock().await.unwrap();
            let old_token = guard.fencing_token();
            assert_eq!(guard.status(), LockStatus::Held);

            expire(&ctx.zk, &client).await;

            // Session-bound state is gone and says so; persistent state is intact.
            assert_eq!(guard.status(), LockStatus::Lost);
            assert!(matches!(guard.lost().await, LockError::SessionLost(_)));
            assert_eq!(
                atom.swap(|n| n + 1).await.unwrap(),
                2,
                "applied once, then once more"
            );
            let moved = stm
                .dosync(async |tx| {
                    tx.alter(&a, |x| x - 3).await?;
                    tx.alter(&b, |x| x + 3).await?;
                    Ok(())
                })
                .await;
            moved.unwrap();
            assert_eq!((a.deref().await.unwrap(), b.deref().await.unwrap()), (7, 3));
            let again = mutex
                .lock()
                .await
                .expect("the same handle locks on the new session");
            assert!(again.fencing_token() > old_token);
            assert_eq!(again.status(), LockStatus::Held);
            again.unlock().await.unwrap();
            drop(guard);
            assert_eq!(queue.take().await.unwrap().data, b"before");
            assert!(barrier.is_set().await.unwrap());
            // The lock table reports the entries of the ended session lost, once, and re-asserts
            // nothing; the next transaction runs on the new session.
            assert!(matches!(
                table.execute(&claim).await,
                Err(LockTableError::SessionLost(_))
            ));
            assert!(table.entries("t", "v").await.unwrap().is_empty());
            table.execute(&claim).await.unwrap();
            assert_eq!(table.entries("t", "v").await.unwrap().len(), 1);
            // The membership comes back, with its data.
            while !member.status().is_member() {
                member.changed().await;
            }
            assert_eq!(member.status(), MemberStatus::Member { generation: 2 });
            assert!(member.is_member().await.unwrap());
            let members = group.members().await.unwrap();
            assert_eq!(members.len(), 1);
            assert_eq!(members[0].data, b"data");
            member.leave().await.unwrap();
            assert!(group.members().await.unwrap().is_empty());
            client.close().await.unwrap();
            "ok"
        });
    assert_eq!(report, "ok");
}

#[test]
fn a_latch_reports_the_loss_then_leads_again_in_a_later_term() {
    let (states, _) = Sim::builder()
        .seed(13)
        .clients(0)
        .build()
        .run(|ctx| async move {
            let client = Client::connect(ctx.zk.clone()).await.unwrap();
            let latch = Election::new(&client, "/leader").unwrap().latch();
            let mut events = latch.events();
            let first = latch.leading().await.unwrap();
            assert!(latch.is_leader());
            expire(&ctx.zk, &client).await;
            let mut seen = Vec::new();
            loop {
                let state = events.next().await.unwrap();
                seen.push(state.clone());
                if matches!(state, LatchState::Leading { term, .. } if term > first) {
                    break;
                }
            }
            assert!(latch.is_leader());
            latch.close().await;
            let (leaders, _) = client.get_children("/leader").await.unwrap();
            assert!(leaders.is_empty(), "closing resigns: {leaders:?}");
            (first, seen)
        });
    let (first, seen) = states;
    let losses: Vec<_> = seen
        .iter()
        .filter_map(|s| match s {
            LatchState::Lost { term, reason } => Some((*term, reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(losses.len(), 1, "{seen:?}");
    assert_eq!(losses[0].0, first);
    assert!(matches!(losses[0].1, LockError::SessionLost(_)));
    let lost_at = seen
        .iter()
        .position(|s| matches!(s, LatchState::Lost { .. }));
    let led_at = seen.iter().rposition(|s| s.term().is_some());
    assert!(
        lost_at < led_at,
        "the loss is seen before the new term: {seen:?}"
    );
}

#[test]
fn an_operation_in_flight_at_the_expiry_fails_and_the_next_call_works() {
    let (outcome, _) = Sim::builder()
        .seed(14)
        .clients(0)
        .build()
        .run(|ctx| async move {
            let client = Client::connect(ctx.zk.clone()).await.unwrap();
            let holder = Client::connect(ctx.zk.clone()).await.unwrap();
            let taken = Mutex::new(&holder, "/lock").unwrap().lock().await.unwrap();
            let mutex = Mutex::new(&client, "/lock").unwrap();
            // Queued behind the holder when the session ends: the acquisition fails, typed.
            let waiting = tokio::spawn({
                let mutex = mutex.clone();
                async move { mutex.lock().await.map(|g| g.fencing_token()) }
            });
            tokio::time::sleep(Duration::from_millis(200)).await;
            expire(&ctx.zk, &client).await;
            let failed = waiting.await.unwrap();
            assert!(
                matches!(failed, Err(LockError::SessionLost(_))),
                "{failed:?}"
            );
            taken.unlock().await.unwrap();
            let next = mutex.lock().await.expect("the next call works");
            next.unlock().await.unwrap();
            "ok"
        });
    assert_eq!(outcome, "ok");
}

/// Sessions from the simulator, after refusing the `refuse` attempts after the first.
pub(crate) struct Flaky {
    pub(crate) zk: SimZk,
    pub(crate) refuse: u32,
    pub(crate) attempts: Arc<AtomicU32>,
}

impl Connect for Flaky {
    fn connect(&self) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
        let n = self.attempts.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if n > 0 && n <= self.refuse {
                return Err(Error::Unreachable {
                    servers: "sim".into(),
                    timeout: Duration::ZERO,
                });
            }
            Connect::connect(&self.zk).await
        })
    }

    fn jitter(&self) -> u64 {
        self.zk.jitter()
    }
}

/// When the client reopened a session after `refuse` refused attempts, under `policy`.
fn reconnect_after(seed: u64, refuse: u32, policy: RetryPolicy) -> (Option<Duration>, u32) {
    Sim::builder()
        .seed(seed)
        .clients(0)
        .build()
        .run(|ctx| async move {
            let attempts = Arc::new(AtomicU32::new(0));
            let flaky = Flaky {
                zk: ctx.zk.clone(),
                refuse,
                attempts: attempts.clone(),
            };
            let client = Client::builder(flaky)
                .retry(policy)
                .connect()
                .await
                .unwrap();
            let mut events = client.connection_events();
            let start = tokio::time::Instant::now();
            ctx.zk.expire_session(client.session().id);
            let mut reopened = None;
            while let Some(event) = events.next().await {
                match event.state {
                    ConnectionState::Reconnected if event.new_session => {
                        reopened = Some(start.elapsed());
                        break;
                    }
                    ConnectionState::Closed => break,
                    _ => {}
                }
            }
            if reopened.is_none() {
                let e = client.exists("/").await.unwrap_err();
                assert!(matches!(e, Error::Unreachable { .. }), "{e:?}");
                assert!(client.has_ended());
            }
            (reopened, attempts.load(Ordering::SeqCst))
        })
        .0
}

#[test]
fn failed_attempts_back_off_within_the_policy_and_replay_from_the_seed() {
    let policy =
        RetryPolicy::exponential(Duration::from_millis(100), Duration::from_millis(400)).unwrap();
    let (took, attempts) = reconnect_after(21, 4, policy);
    let took = took.expect("reconnected");
    assert_eq!(
        attempts,
        1 + 4 + 1,
        "the first session, 4 refusals, then success"
    );
    // Pauses after failures 1..=4: at least half of 100, 200, 400, 400 ms; at most all of it
    // (plus the simulated latencies of the expiry and the new session's first reply).
    assert!(took >= Duration::from_millis(550), "{took:?}");
    assert!(took <= Duration::from_millis(1100 + 500), "{took:?}");
    assert_eq!(
        reconnect_after(21, 4, policy).0,
        Some(took),
        "the jitter comes from the seed"
    );
    let elsewhere: Vec<_> = (22..30).map(|s| reconnect_after(s, 4, policy).0).collect();
    assert!(
        elsewhere.iter().any(|t| *t != Some(took)),
        "and differs between seeds"
    );
}

#[test]
fn a_policy_that_gives_up_ends_the_client() {
    let policy = RetryPolicy::default().with_max_attempts(3);
    let (reopened, attempts) = reconnect_after(31, 10, policy);
    assert_eq!(reopened, None);
    assert_eq!(attempts, 1 + 3);
}

#[test]
fn closing_ends_the_session_the_events_and_every_later_call() {
    let (outcome, _) = Sim::builder()
        .seed(41)
        .clients(1)
        .build()
        .run(|ctx| async move {
            let client = Client::connect(ctx.zk.clone()).await.unwrap();
            client.create_ephemeral("/mine", b"").await.unwrap();
            let mut events = client.connection_events();
            client.close().await.unwrap();
            assert_eq!(
                events.next().await.map(|e| e.state),
                Some(ConnectionState::Closed)
            );
            assert_eq!(events.next().await, None);
            assert_eq!(client.exists("/").await.unwrap_err(), Error::Closed);
            assert!(client.current_session().await.is_err());
            let other = &ctx.clients[0];
            assert_eq!(
                other.exists("/mine").await.unwrap(),
                None,
                "ephemerals go at once"
            );
            client.close().await.unwrap();
            "ok"
        });
    assert_eq!(outcome, "ok");
}

#[test]
fn a_single_session_client_ends_with_its_session() {
    let (outcome, _) = Sim::builder()
        .seed(51)
        .clients(1)
        .build()
        .run(|ctx| async move {
            let session = Arc::new(ctx.clients[0].clone());
            let client = Client::single(session.clone());
            let atom: Atom<u64> = Atom::open(&client, "/n", 0).await.unwrap();
            ctx.zk.expire_session(session.session().id);
            tokio::time::sleep(Duration::from_millis(100)).await;
            let e = atom.swap(|n| n + 1).await.unwrap_err();
            assert!(e.to_string().contains("expired"), "{e}");
            assert!(client.has_ended());
            "ok"
        });
    assert_eq!(outcome, "ok");
}
