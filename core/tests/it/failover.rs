//! The conformance suite on a three-server ensemble that loses, halfway through, the member a
//! long-lived "witness" session is connected to. The witness keeps writing (versioned sets) and
//! reading its own node meanwhile: every error it sees must be indeterminate, it must fail over
//! to another member with its session (id, ephemeral node) intact, and the rest of the suite
//! must pass on the two survivors.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::task::watch;
use avout::zk::{ZkClient, ZkConfig};
use avout::{Coordination, CreateMode, Error, SessionState};
use avout_testkit::conformance::{CASES, ZkBackend};
use tokio::time::Instant;

use crate::support;

/// What the witness saw.
#[derive(Debug, Default)]
struct Log {
    /// Errors, in order, with when they happened.
    errors: Vec<(Instant, Error)>,
    /// When each set or get succeeded.
    successes: Vec<Instant>,
    /// Session state transitions, in order.
    states: Vec<SessionState>,
}

/// A session that sets and reads its own node in a loop until told to stop.
struct Witness {
    client: Arc<ZkClient>,
    log: Arc<Mutex<Log>>,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    ephemeral: String,
}

impl Witness {
    async fn start(connect: &str) -> Witness {
        let config = ZkConfig::new(connect).with_session_timeout(Duration::from_secs(10));
        let client = Arc::new(support::connect(&config).await);
        let node = "/witness-data".to_owned();
        let ephemeral = "/witness-alive".to_owned();
        client
            .create(&node, b"0", &CreateMode::Persistent.into())
            .await
            .expect("create the witness's node");
        client
            .create(&ephemeral, b"", &CreateMode::Ephemeral.into())
            .await
            .expect("create the witness's ephemeral");
        let log = Arc::new(Mutex::new(Log::default()));
        let (stop, stopped) = watch::channel(false);

        let mut states = client.session_states();
        let state_log = log.clone();
        let mut stopped_states = stopped.clone();
        let watcher = tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    state = states.next() => match state {
                        Some(s) => state_log.lock().unwrap().states.push(s),
                        None => break,
                    },
                    _ = stopped_states.changed() => break,
                }
            }
        });

        let worker = tokio::spawn(Self::work(client.clone(), node, log.clone(), stopped));
        Witness {
            client,
            log,
            stop,
            tasks: vec![watcher, worker],
            ephemeral,
        }
    }

    /// Versioned set, then get, in a loop. After an error the version may or may not have moved
    /// (the set may have been applied), so the witness reads before writing again: as the only
    /// writer it never sends a stale version, so BadVersion can never be the honest answer.
    async fn work(
        client: Arc<ZkClient>,
        node: String,
        log: Arc<Mutex<Log>>,
        mut stopped: watch::Receiver<bool>,
    ) {
        let record = |r: Result<(), Error>| {
            let mut log = log.lock().unwrap();
            match r {
                Ok(()) => log.successes.push(Instant::now()),
                Err(e) => log.errors.push((Instant::now(), e)),
            }
        };
        let mut version: Option<i32> = Some(0);
        let mut counter = 0u64;
        while !*stopped.borrow_and_update() {
            let Some(expected) = version else {
                match client.get_data(&node).await {
                    Ok((_, stat)) => {
                        version = Some(stat.version);
                        record(Ok(()));
                    }
                    Err(e) => {
                        record(Err(e));
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                continue;
            };
            counter += 1;
            let value = counter.to_string();
            match client
                .set_data(&node, value.as_bytes(), Some(expected))
                .await
            {
                Ok(stat) => {
                    assert_eq!(
                        stat.version,
                        expected + 1,
                        "the witness's set bumps the version"
                    );
                    version = Some(stat.version);
                    record(Ok(()));
                }
                Err(e) => {
                    version = None;
                    record(Err(e));
                    continue;
                }
            }
            match client.get_data(&node).await {
                Ok((data, stat)) => {
                    // Read-your-writes, also across a failover: a client only reconnects to a
                    // server that has seen everything it has seen.
                    assert_eq!(
                        (data, Some(stat.version)),
                        (value.into_bytes(), version),
                        "the witness reads its own last write"
                    );
                    record(Ok(()));
                }
                Err(e) => record(Err(e)),
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn successes_since(&self, t: Instant) -> usize {
        self.log
            .lock()
            .unwrap()
            .successes
            .iter()
            .filter(|s| **s > t)
            .count()
    }

    /// Stops the loop and returns the log. Panics if the worker panicked.
    async fn stop(self) -> (Arc<ZkClient>, String, Log) {
        self.stop.send(true).expect("the witness is running");
        for task in self.tasks {
            task.await.expect("a witness task panicked");
        }
        let log = std::mem::take(&mut *self.log.lock().unwrap());
        (self.client, self.ephemeral, log)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite_on_an_ensemble_losing_the_witness_member() {
    let ensemble = support::ensemble();
    let connect = ensemble.connect_string();
    let backend = ZkBackend::new(ZkConfig::new(&connect));
    let witness = Witness::start(&connect).await;
    let sid = witness.client.session().id;

    let (first, second) = CASES.split_at(CASES.len() / 2);
    let mut failed = support::run_cases(&backend, "/ensemble-1", first).await;

    let start = Instant::now();
    support::eventually(
        "the witness works before the kill",
        Duration::from_secs(10),
        || async { (witness.successes_since(start) >= 10).then_some(()) },
    )
    .await;
    let member = support::eventually("the witness's member", Duration::from_secs(10), || async {
        tokio::task::block_in_place(|| ensemble.member_of_session(sid.0))
    })
    .await;
    tokio::task::block_in_place(|| ensemble.kill(member));
    let killed = Instant::now();

    failed.extend(support::run_cases(&backend, "/ensemble-2", second).await);

    support::eventually("the witness recovers", Duration::from_secs(20), || async {
        (witness.successes_since(killed) >= 10).then_some(())
    })
    .await;
    let (client, ephemeral, log) = witness.stop().await;

    eprintln!(
        "witness: {} successes, {} errors {:?}, states {:?}, member {member} killed",
        log.successes.len(),
        log.errors.len(),
        log.errors
            .iter()
            .map(|(_, e)| e.to_string())
            .collect::<Vec<_>>(),
        log.states
    );
    let bad: Vec<&Error> = log
        .errors
        .iter()
        .map(|(_, e)| e)
        .filter(|e| !e.is_indeterminate())
        .collect();
    assert!(
        bad.is_empty(),
        "the witness saw errors other than indeterminate ones: {bad:?} (all: {:?})",
        log.errors
    );
    let last_error = log.errors.iter().map(|(t, _)| *t).max();
    if let Some(t) = last_error {
        assert!(
            log.successes.iter().any(|s| *s > t),
            "the witness's operations succeed again after its last error"
        );
    }
    assert!(
        log.states.contains(&SessionState::Disconnected),
        "the witness was disconnected by the kill (states {:?})",
        log.states
    );
    assert_eq!(
        log.states.last(),
        Some(&SessionState::Connected),
        "the witness ends connected (states {:?})",
        log.states
    );
    assert!(
        !log.states.iter().any(|s| s.is_terminal()),
        "the witness's session survives (states {:?})",
        log.states
    );
    assert_eq!(client.session().id, sid, "same session after failover");
    let now_on = support::eventually(
        "the witness's new member",
        Duration::from_secs(10),
        || async { tokio::task::block_in_place(|| ensemble.member_of_session(sid.0)) },
    )
    .await;
    assert_ne!(now_on, member, "the witness moved to a surviving member");
    let own = client
        .exists(&ephemeral)
        .await
        .expect("the witness reads its ephemeral");
    assert_eq!(
        own.map(|s| s.ephemeral_owner),
        Some(sid.0),
        "the witness's ephemeral survives the failover"
    );
    let other = support::connect(&ZkConfig::new(&connect)).await;
    other.sync(&ephemeral).await.expect("sync");
    assert_eq!(
        other
            .exists(&ephemeral)
            .await
            .expect("exists")
            .map(|s| s.ephemeral_owner),
        Some(sid.0),
        "another session sees the witness's ephemeral"
    );
    support::assert_passed("an ensemble losing a member halfway", &failed);
}
