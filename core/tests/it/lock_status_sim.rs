//! What a holder's `status()` says while its connection is down: suspended (the session may
//! survive, so the holder stops touching the resource but keeps its place), held again once
//! back on the same session, lost once the session ends. The mutation run found that nothing
//! told a suspended holder from a lost one: a `status` that called every disconnection a loss
//! passed every test and scenario.

use std::time::Duration;

use avout::client::ConnectionState;
use avout::lock::{LockStatus, Mutex, RwLock};
use avout::recipes::election::Election;
use avout::recipes::semaphore::Semaphore;
use avout::{Client, Coordination};
use avout_sim_zk::{Fault, Sim};

use crate::support::until_state;

#[test]
fn holders_are_suspended_while_disconnected_held_again_after_and_lost_with_the_session() {
    Sim::builder()
        .seed(31)
        .clients(0)
        .build()
        .run(|ctx| async move {
            let client = Client::connect(ctx.zk.clone()).await.unwrap();
            let mutex = Mutex::new(&client, "/lock").unwrap();
            let rw = RwLock::new(&client, "/rw").unwrap();
            let election = Election::new(&client, "/leader").unwrap();
            let semaphore = Semaphore::new(&client, "/sem", 2).unwrap();
            let guard = mutex.lock().await.unwrap();
            let read = rw.read().await.unwrap();
            let leadership = election.campaign().await.unwrap();
            let lease = semaphore.acquire().await.unwrap();
            let statuses = || {
                [
                    guard.status(),
                    read.status(),
                    leadership.status(),
                    lease.status(),
                ]
            };
            assert_eq!(statuses(), [LockStatus::Held; 4]);

            // An outage shorter than the session: suspended, then held on the same session.
            ctx.zk.inject(Fault::Outage {
                duration: Duration::from_millis(500),
            });
            until_state(&client, ConnectionState::Suspended).await;
            assert_eq!(statuses(), [LockStatus::Suspended; 4]);
            assert!(!leadership.is_leader(), "no leader while suspended");
            until_state(&client, ConnectionState::Reconnected).await;
            assert_eq!(statuses(), [LockStatus::Held; 4]);

            // The session ends: lost, whatever comes after.
            ctx.zk.expire_session(client.session().id);
            until_state(&client, ConnectionState::Lost).await;
            assert_eq!(statuses(), [LockStatus::Lost; 4]);
        });
}
