//! Agents on a real standalone ZooKeeper and, with the same bodies, on the simulator:
//! semantics (send, await, error modes, restart, validators, watches), sends inside `dosync`
//! under both protocols (only committed tries send), and an executor whose client dies
//! mid-queue handing over to another without applying anything twice.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::Client;
use avout::agent::{Action, Agent, AgentError, ErrorMode};
use avout::stm::{Abort, Protocol, Stm, StmConfig, StmError};
use avout::zk::ZkConfig;
use avout_sim_zk::FaultRates;
use serde::{Deserialize, Serialize};

use crate::agent_sim::Append;
use crate::support::{self, sim_clients, sweep_sim};

/// A counter's actions; `Fail` always fails.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum Count {
    Add(i64),
    Fail,
}

impl Action<i64> for Count {
    type Error = String;
    fn apply(&self, n: &i64) -> Result<i64, String> {
        match self {
            Count::Add(k) => Ok(n + k),
            Count::Fail => Err(format!("refused at {n}")),
        }
    }
}

/// Send, await, the failed state and restart, continue mode with its handler, a validator,
/// a watch.
async fn semantics(client: &Client, path: &str) {
    let a: Agent<i64, Count> = Agent::open(client, path, 10).await.expect("open");
    let again: Agent<i64, Count> = Agent::open(client, path, 99).await.expect("reopen");
    assert_eq!(
        again.deref().await.expect("deref"),
        10,
        "an existing agent keeps its value"
    );
    let executor = tokio::spawn({
        let a = a.clone();
        async move { a.run_executor().await }
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    a.add_watch("log", {
        let seen = seen.clone();
        move |old, new| seen.lock().unwrap().push((*old, *new))
    })
    .await
    .expect("watch");

    let first = a.send(Count::Add(1)).await.expect("send");
    let second = a.send(Count::Add(2)).await.expect("send");
    assert!(second > first, "queue positions grow");
    a.await_applied().await.expect("await");
    assert_eq!(a.deref().await.expect("deref"), 13);
    assert_eq!(a.state().await.expect("state").applied, second);

    // Fail mode: the failing action stops the agent; what follows waits for a restart.
    a.send(Count::Fail).await.expect("send");
    a.send(Count::Add(100)).await.expect("send");
    match a.await_applied().await {
        Err(AgentError::Failed { error, .. }) => assert_eq!(error, "refused at 13"),
        other => panic!("await on a failed agent: {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        a.deref().await.expect("deref"),
        13,
        "nothing applied while failed"
    );
    assert!(a.error().await.expect("error").is_some());
    let cleared = a.restart(20, false).await.expect("restart");
    assert_eq!(cleared.error, "refused at 13");
    a.await_applied().await.expect("await after restart");
    assert_eq!(
        a.deref().await.expect("deref"),
        120,
        "the queued action ran after restart"
    );

    // Restart with the queue cleared drops what was pending.
    a.send(Count::Fail).await.expect("send");
    a.send(Count::Add(5)).await.expect("send");
    assert!(a.await_applied().await.is_err());
    a.restart(0, true).await.expect("restart");
    a.await_applied().await.expect("nothing pending");
    assert_eq!(
        a.deref().await.expect("deref"),
        0,
        "the cleared action never ran"
    );

    // Continue mode: the failure goes to the handler and the agent carries on.
    let handled = Arc::new(Mutex::new(Vec::new()));
    a.set_error_handler({
        let handled = handled.clone();
        move |f| handled.lock().unwrap().push(f.error.clone())
    });
    a.set_error_mode(ErrorMode::Continue).await.expect("mode");
    a.send(Count::Fail).await.expect("send");
    a.send(Count::Add(7)).await.expect("send");
    a.await_applied().await.expect("await in continue mode");
    assert_eq!(a.deref().await.expect("deref"), 7);
    assert_eq!(*handled.lock().unwrap(), vec!["refused at 0".to_owned()]);

    // A validator rejecting an action's result fails the action.
    a.set_validator(|n| *n < 50);
    a.send(Count::Add(100)).await.expect("send");
    a.send(Count::Add(1)).await.expect("send");
    a.await_applied().await.expect("await");
    assert_eq!(a.deref().await.expect("deref"), 8);
    assert_eq!(handled.lock().unwrap().len(), 2);
    assert!(
        matches!(a.restart(1, false).await, Err(AgentError::NotFailed { .. })),
        "a running agent is not restarted"
    );

    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen.first(),
        Some(&(10, 11)),
        "the watch saw the first change: {seen:?}"
    );
    assert_eq!(seen.last().map(|c| c.1), Some(8), "and the last: {seen:?}");
    executor.abort();
}

#[derive(Debug)]
enum Refused {
    Stm(#[allow(dead_code)] Abort),
    No,
}

impl From<Abort> for Refused {
    fn from(a: Abort) -> Self {
        Refused::Stm(a)
    }
}

/// Sends from `dosync`: a refused body and a retried try send nothing, a commit sends once,
/// a transaction that writes no ref still sends.
async fn sends_in_dosync(client: &Client, other: &Client, root: &str, protocol: Protocol) {
    let path = format!("{root}/log");
    let log: Agent<Vec<(u32, u32)>, Append> =
        Agent::open(client, &path, Vec::new()).await.expect("open");
    let stm = Stm::open(
        client,
        &format!("{root}/stm"),
        StmConfig::with_protocol(protocol),
    )
    .await
    .expect("stm");
    let r = stm.make_ref("r", 0i64).await.expect("ref");
    let stm2 = Stm::open(
        other,
        &format!("{root}/stm"),
        StmConfig::with_protocol(protocol),
    )
    .await
    .expect("stm");
    let r2 = stm2.get_ref::<i64>("r").expect("ref");

    // A body that refuses sends nothing.
    let out = stm
        .dosync_with(async |tx| {
            tx.alter(&r, |n| n + 1).await?;
            tx.send(&log, Append(0, 0))?;
            Err::<(), _>(Refused::No)
        })
        .await;
    assert!(matches!(out, Err(StmError::Body(Refused::No))));

    // The first try conflicts with another client's write and runs again: one send.
    let tries = Arc::new(Mutex::new(0u32));
    stm.dosync(async |tx| {
        let n = tx.deref(&r).await?;
        let try_no = {
            let mut t = tries.lock().unwrap();
            *t += 1;
            *t
        };
        tx.send(&log, Append(1, try_no))?;
        if try_no == 1 {
            stm2.dosync(async |tx2| {
                tx2.alter(&r2, |n| n + 10).await?;
                Ok(())
            })
            .await
            .expect("the other client's write");
        }
        tx.ref_set(&r, n + 1).await?;
        Ok(())
    })
    .await
    .expect("dosync");
    let tries = *tries.lock().unwrap();
    assert!(
        tries >= 2,
        "{protocol:?}: the first try was made to conflict"
    );

    // A transaction that only reads and sends.
    stm.dosync(async |tx| {
        let n = tx.deref(&r).await?;
        tx.send(&log, Append(2, n as u32))?;
        Ok(())
    })
    .await
    .expect("read-only dosync with a send");

    log.apply_pending().await.expect("apply");
    assert_eq!(
        log.deref().await.expect("deref"),
        vec![(1, tries), (2, 11)],
        "{protocol:?}: only the committed tries' sends were applied, once each"
    );
}

/// Two executors on two clients; the one applying dies (its client closed) mid-queue; the
/// other finishes the queue; nothing is applied twice or lost.
async fn executor_hand_off(a: Client, b: Client, path: &str) {
    const N: u32 = 40;
    let log_a: Agent<Vec<(u32, u32)>, Append> =
        Agent::open(&a, path, Vec::new()).await.expect("open");
    let log_b: Agent<Vec<(u32, u32)>, Append> =
        Agent::open(&b, path, Vec::new()).await.expect("open");
    for n in 0..N {
        log_b.send(Append(9, n)).await.expect("send");
    }
    let first = tokio::spawn({
        let log_a = log_a.clone();
        async move { log_a.run_executor().await }
    });
    // Let the first executor take the lock and start.
    loop {
        let applied = log_b.state().await.expect("state").applied;
        if applied >= 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let second = tokio::spawn({
        let log_b = log_b.clone();
        async move { log_b.run_executor().await }
    });
    a.close().await.expect("close the first executor's client");
    let ended = first.await.expect("the first executor ends");
    assert!(
        matches!(ended, AgentError::Zk(_) | AgentError::Lock(_)),
        "{ended:?}"
    );
    log_b
        .await_applied()
        .await
        .expect("the second executor finishes");
    let log = log_b.deref().await.expect("deref");
    assert_eq!(
        log,
        (0..N).map(|n| (9, n)).collect::<Vec<_>>(),
        "every action once, in order, across the hand-off"
    );
    second.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_on_a_real_server() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let clients = support::clients(&config, 3).await;
    semantics(&clients[0], "/agents/semantics").await;
    for p in Protocol::ALL {
        let root = format!("/agents/tx-{}", p.name());
        sends_in_dosync(&clients[0], &clients[1], &root, p).await;
    }
    let a = support::client(&config).await;
    executor_hand_off(a, clients[2].clone(), "/agents/hand-off").await;
}

#[test]
fn agents_on_the_simulator() {
    sweep_sim(0xa6e1, 3, Duration::from_secs(2), FaultRates::default()).run(|ctx| async move {
        let clients = sim_clients(&ctx);
        semantics(&clients[0], "/agents/semantics").await;
        for p in Protocol::ALL {
            let root = format!("/agents/tx-{}", p.name());
            sends_in_dosync(&clients[0], &clients[1], &root, p).await;
        }
        let a = Client::connect(ctx.zk.clone()).await.expect("session");
        executor_hand_off(a, clients[2].clone(), "/agents/hand-off").await;
    });
}

/// A restart whose reply is lost still reports the restart it made: under lost replies
/// (only), every restart of a failed agent returns the failure it cleared, never
/// `NotFailed`, and clears each failure once. (Before restarts were marked in the state, a
/// restart that applied but lost its reply reported `NotFailed` on its retry, and the
/// `agents` scenario's drain stopped with an action left in the queue.)
#[test]
fn a_restart_decides_its_own_lost_reply() {
    let rates = support::one_kind(avout_sim_zk::FaultKind::ReplyLost, [0.2; 7]);
    let (restarts, summary) =
        sweep_sim(0x7e57, 1, Duration::from_secs(2), rates).run(|ctx| async move {
            let client = sim_clients(&ctx).remove(0);
            let agent: Agent<i64, Count> = loop {
                if let Ok(a) = Agent::open(&client, "/agents/restart", 0).await {
                    break a;
                }
            };
            let mut cleared = Vec::new();
            for round in 0..30 {
                // Each round fails the agent once (the send is retried until it is known to
                // be queued exactly once), then restarts it once.
                while agent.send(Count::Fail).await.is_err() {}
                while agent.apply_pending().await.is_err() {}
                let failure = loop {
                    match agent.restart(round, false).await {
                        Ok(f) => break f,
                        Err(AgentError::NotFailed { .. }) => {
                            panic!("round {round}: a restart reported NotFailed for a failed agent")
                        }
                        Err(_) => {}
                    }
                };
                cleared.push(failure.seq);
            }
            cleared
        });
    assert!(
        summary.fault_count(avout_sim_zk::FaultKind::ReplyLost) >= 30,
        "lost replies happened: {summary:?}"
    );
    let mut sorted = restarts.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), 30, "each failure cleared once: {restarts:?}");
}
