//! Agents, each body on a real standalone ZooKeeper and on the simulator: semantics (send,
//! await, error modes, restart, validators, watches), sends inside `dosync` under both
//! protocols (only committed tries send), an executor whose client dies mid-queue handing
//! over to another without applying anything twice, a restart that decides its own lost
//! reply, and, under every fault kind on the simulator, three senders and executors whose
//! sends apply exactly once and in order (a session expiry or an outage takes executors
//! down and another takes over). And a rewrite of the state refused by the node's ACL fails
//! at once rather than being tried again.
//!
//! What no fault may break: every acknowledged send is applied exactly once, an indefinite
//! one at most once, one found not queued never; each sender's actions are applied in the
//! order sent; a transaction's send is applied only if it committed. Replayable from the
//! seed (printed on failure; `AVOUT_SIM_SEED` overrides).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::agent::{Action, Agent, AgentError, ErrorMode, SENDERS_KEPT};
use avout::stm::{Abort, Protocol, Stm, StmConfig, StmError};
use avout::{Client, CreateMode};
use avout_sim_zk::{Fault, FaultKind, FaultRates, Sim};
use avout_testkit::backend::Backend;
use serde::{Deserialize, Serialize};

use crate::lock_release::children;
use crate::support::{
    client_of, clients_of, on_both, one_kind, plain_sim, simulate, single, sweep_sim,
};

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

/// Appends `(sender, n)` to the log.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Append(pub(crate) u32, pub(crate) u32);

impl Action<Vec<(u32, u32)>> for Append {
    type Error = String;
    fn apply(&self, log: &Vec<(u32, u32)>) -> Result<Vec<(u32, u32)>, String> {
        let mut log = log.clone();
        log.push((self.0, self.1));
        Ok(log)
    }
}

type Log = Agent<Vec<(u32, u32)>, Append>;

async fn open(client: &Client) -> Log {
    loop {
        match Agent::open(client, "/log", Vec::new()).await {
            Ok(agent) => return agent,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

async fn open_stm(client: &Client, protocol: Protocol) -> Stm {
    loop {
        match Stm::open(client, "/stm", StmConfig::with_protocol(protocol)).await {
            Ok(stm) => return stm,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// What a sender knows of each of its sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Acknowledged (or its transaction committed): applied exactly once.
    Sent,
    /// May have been queued: applied at most once.
    Maybe,
    /// Certainly not queued (a rejected send, an aborted transaction): never applied.
    Never,
}

/// Sends `per` actions from client `me`: even ones plainly, odd ones from a transaction
/// (every third of which the body refuses, so it sends nothing).
async fn sender(client: Client, me: u32, per: u32, protocol: Protocol) -> Vec<(u32, Fate)> {
    let log = open(&client).await;
    let stm = open_stm(&client, protocol).await;
    let counter = loop {
        match stm.make_ref("shared", 0u64).await {
            Ok(r) => break r,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    };
    let mut fates = Vec::new();
    for n in 0..per {
        let fate = if n % 2 == 0 {
            match log.send(Append(me, n)).await {
                Ok(_) => Fate::Sent,
                Err(AgentError::NotQueued { .. }) => Fate::Never,
                Err(e) if e.is_definite() => Fate::Never,
                Err(_) => Fate::Maybe,
            }
        } else {
            let refuse = n % 3 == 0;
            let (log, counter) = (log.clone(), counter.clone());
            let out = stm
                .dosync_with(async move |tx| {
                    tx.alter(&counter, |c| c + 1).await?;
                    tx.send(&log, Append(me, n))?;
                    if refuse {
                        return Err(Refused::No);
                    }
                    Ok(())
                })
                .await;
            match out {
                Ok(()) => Fate::Sent,
                Err(StmError::Body(Refused::No)) => Fate::Never,
                Err(StmError::Indeterminate { .. } | StmError::SessionLost(_)) => Fate::Maybe,
                Err(_) => Fate::Never,
            }
        };
        fates.push((n, fate));
    }
    fates
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

/// Send, await, the failed state and restart, continue mode with its handler, a validator,
/// a watch.
async fn semantics(backend: &dyn Backend, path: &str) {
    let client = &client_of(backend).await;
    let a: Agent<i64, Count> = Agent::open(client, path, 10).await.expect("open");
    let again: Agent<i64, Count> = Agent::open(client, path, 99).await.expect("reopen");
    assert_eq!(
        again.deref().await.expect("deref"),
        10,
        "an existing agent keeps its value"
    );
    assert_ne!(a.sender(), again.sender(), "each handle sends as itself");
    // A log line names the agent and the handle.
    let shown = format!("{a:?}");
    assert!(
        shown.starts_with("Agent {")
            && shown.contains(path)
            && shown.contains(&format!("sender: {}", a.sender())),
        "{shown}"
    );
    // A refusal ends `open` at once with that error: no agent can live under an ephemeral
    // node, and retrying (as for an error in doubt) would go on for ever.
    let ephemeral = format!("{path}-ephemeral");
    let session = client.current_session().await.expect("session");
    session
        .create(&ephemeral, b"", &CreateMode::Ephemeral.into())
        .await
        .expect("an ephemeral node");
    let under = Agent::<i64, Count>::open(client, format!("{ephemeral}/a"), 0);
    match tokio::time::timeout(Duration::from_secs(10), under).await {
        Ok(Err(e)) => assert!(e.is_definite(), "a refusal, definite: {e:?}"),
        Ok(Ok(_)) => panic!("an agent opened under an ephemeral node"),
        Err(_) => panic!("opening under an ephemeral node was retried, not refused"),
    }
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
    // Without the validator the same action applies.
    a.clear_validator();
    a.send(Count::Add(100)).await.expect("send");
    a.await_applied().await.expect("await");
    assert_eq!(a.deref().await.expect("deref"), 108, "no validator left");
    assert_eq!(handled.lock().unwrap().len(), 2, "and nothing failed");

    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen.first(),
        Some(&(10, 11)),
        "the watch saw the first change: {seen:?}"
    );
    assert_eq!(
        seen.last().map(|c| c.1),
        Some(108),
        "and the last: {seen:?}"
    );
    executor.abort();
}

/// Sends from `dosync`: a refused body and a retried try send nothing, a commit sends once,
/// a transaction that writes no ref still sends.
async fn sends_in_dosync(backend: &dyn Backend, root: &str, protocol: Protocol) {
    let (client, other) = (&client_of(backend).await, &client_of(backend).await);
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
async fn executor_hand_off(backend: &dyn Backend, path: &str) {
    let (a, b) = (client_of(backend).await, client_of(backend).await);
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

/// A restart whose reply is lost still reports the restart it made: every restart of a
/// failed agent returns the failure it cleared, never `NotFailed`, and clears each failure
/// once; returns the failures cleared. (Before restarts were marked in the state, a restart
/// that applied but lost its reply reported `NotFailed` on its retry, and the `agents`
/// scenario's drain stopped with an action left in the queue.)
async fn restarts(backend: &dyn Backend) -> Vec<i64> {
    let client = client_of(backend).await;
    let agent: Agent<i64, Count> = loop {
        if let Ok(a) = Agent::open(&client, "/agents/restart", 0).await {
            break a;
        }
    };
    let mut cleared = Vec::new();
    for round in 0..30 {
        // Each round fails the agent once (the send is retried until it is known to be
        // queued exactly once), then restarts it once.
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
    let mut once = cleared.clone();
    once.dedup();
    assert_eq!(once.len(), 30, "each failure cleared once: {cleared:?}");
    cleared
}

/// Three clients send `PER` actions each (plainly, and from transactions on one shared ref
/// under `protocol`, so tries conflict and retry, and some bodies refuse) while each runs an
/// executor; then a fresh client drains the queue. Returns the log and each sender's fates.
async fn sends(backend: &dyn Backend, protocol: Protocol) -> (Vec<(u32, u32)>, Fates) {
    let clients = clients_of(backend, 3).await;
    let mut executors = Vec::new();
    for client in &clients {
        let agent = open(client).await;
        executors.push(tokio::spawn(async move { agent.run_executor().await }));
    }
    let senders = clients
        .iter()
        .enumerate()
        .map(|(me, c)| sender(c.clone(), me as u32, PER, protocol));
    let fates: Fates = futures::future::join_all(senders)
        .await
        .into_iter()
        .enumerate()
        .map(|(me, f)| (me as u32, f))
        .collect();
    // An executor returns only when its client ends or on an error that would only fail
    // again; here neither happens, whatever the faults: one that stopped after an outcome in
    // doubt would leave the queue to the drain below, which hid it.
    for (i, e) in executors.into_iter().enumerate() {
        if e.is_finished() {
            panic!(
                "executor {i} returned while its client lives: {:?}",
                e.await
            );
        }
        e.abort();
    }
    let reader = client_of(backend).await;
    let agent = open(&reader).await;
    let log = loop {
        let drained = agent.apply_pending().await;
        match (drained, agent.deref().await) {
            (Ok(_), Ok(log)) => break log,
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    };
    (log, fates)
}

/// Judges the final log against the senders' fates; panics with what is wrong.
fn judge(log: &[(u32, u32)], fates: &BTreeMap<u32, Vec<(u32, Fate)>>, what: &str) {
    let mut seen: BTreeMap<(u32, u32), usize> = BTreeMap::new();
    let mut last: BTreeMap<u32, u32> = BTreeMap::new();
    for &(s, n) in log {
        *seen.entry((s, n)).or_default() += 1;
        if let Some(&before) = last.get(&s) {
            assert!(
                n > before,
                "{what}: sender {s} applied {n} after {before}: order broken"
            );
        }
        last.insert(s, n);
    }
    for (s, list) in fates {
        for &(n, fate) in list {
            let times = seen.get(&(*s, n)).copied().unwrap_or(0);
            match fate {
                Fate::Sent => assert_eq!(times, 1, "{what}: ({s},{n}) acknowledged"),
                Fate::Maybe => assert!(times <= 1, "{what}: ({s},{n}) applied {times} times"),
                Fate::Never => assert_eq!(times, 0, "{what}: ({s},{n}) was never queued"),
            }
        }
    }
}

/// Each sender's fates, by sender.
type Fates = BTreeMap<u32, Vec<(u32, Fate)>>;

const PER: u32 = 24;

/// The sweep's simulation: `kind` alone, sessions of 2 s.
fn sim(seed: u64, kind: FaultKind) -> Sim {
    let rates = one_kind(kind, [0.02, 0.02, 0.01, 0.003, 0.003, 0.01, 0.002]);
    sweep_sim(seed, 0, Duration::from_secs(2), rates)
}

/// Judges a run of [`sends`]; returns its counts.
fn judge_run(log: &[(u32, u32)], fates: &Fates, what: &str) {
    let count = |f: Fate| fates.values().flatten().filter(|(_, x)| *x == f).count();
    eprintln!(
        "{what}: {} applied, {} sent, {} maybe, {} never",
        log.len(),
        count(Fate::Sent),
        count(Fate::Maybe),
        count(Fate::Never),
    );
    judge(log, fates, what);
    assert!(
        count(Fate::Sent) > PER as usize,
        "{what}: most sends went through"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_apply_exactly_once_in_order_on_zookeeper() {
    for protocol in Protocol::ALL {
        // A server each: the agent and the STM live at fixed paths, and an STM's protocol
        // is fixed when it is created.
        let backend = crate::support::zookeeper();
        let (log, fates) = sends(&backend, protocol).await;
        judge_run(&log, &fates, protocol.name());
    }
}

#[test]
fn sends_apply_exactly_once_in_order_under_every_fault_kind() {
    for (i, kind) in FaultKind::DEFAULT.into_iter().enumerate() {
        // Small runs draw few faults: the kind must fire in one of the two protocols' runs.
        let mut fired = 0;
        for protocol in Protocol::ALL {
            let seed = 0xa6e0 + i as u64 * 2 + (protocol == Protocol::Mvcc) as u64;
            let ((log, fates), summary) =
                simulate(&sim(seed, kind), async |b| sends(b, protocol).await);
            fired += summary.fault_count(kind);
            let what = format!("{} {} seed {seed}", kind.name(), protocol.name());
            judge_run(&log, &fates, &what);
        }
        assert!(fired > 0, "{} was injected", kind.name());
    }
}

on_both!(
    /// Send, await, error modes, restart, validators, watches.
    semantics_of_one_agent,
    plain_sim(0xa6e1),
    |b| semantics(b, "/agents/semantics"),
);

on_both!(
    /// Sends from `dosync` under both protocols.
    sends_from_transactions,
    plain_sim(0xa6e2),
    |b| async {
        for p in Protocol::ALL {
            sends_in_dosync(b, &format!("/agents/tx-{}", p.name()), p).await;
        }
    },
);

on_both!(
    /// An executor's client closes mid-queue; another executor finishes.
    executors_hand_off,
    plain_sim(0xa6e3),
    |b| executor_hand_off(b, "/agents/hand-off"),
);

/// A rewrite of the state refused for a cause other than a race (here the node's ACL lets
/// nobody write) fails at once with that cause: only a race is tried again.
async fn refused_rewrite(backend: &dyn Backend, path: &str) {
    let client = &client_of(backend).await;
    let a: Agent<i64, Count> = Agent::open(client, path, 10).await.expect("open");
    let session = client.current_session().await.expect("session");
    session
        .set_acl(path, &avout::Acl::read_unsafe(), None)
        .await
        .expect("make the agent read-only");
    let mode = tokio::time::timeout(
        Duration::from_secs(10),
        a.set_error_mode(ErrorMode::Continue),
    )
    .await
    .expect("a refused rewrite is not tried again");
    assert!(
        matches!(&mode, Err(AgentError::Zk(e)) if matches!(e.root(), avout::Error::NoAuth { .. })),
        "{mode:?}"
    );
    assert_eq!(a.deref().await.expect("still readable"), 10);
}

on_both!(
    /// A refused rewrite fails at once.
    a_rewrite_refused_by_the_acl_fails_at_once,
    plain_sim(0xa6e4),
    |b| refused_rewrite(b, "/agents/read-only"),
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_decides_its_own_reply_on_zookeeper() {
    restarts(&crate::support::zookeeper()).await;
}

/// Under lost replies (only), each restart still reports the failure it cleared.
#[test]
fn a_restart_decides_its_own_lost_reply() {
    let rates = one_kind(FaultKind::ReplyLost, [0.2; 7]);
    let sim = sweep_sim(0x7e57, 0, Duration::from_secs(2), rates);
    let (_, summary) = simulate(&sim, async |b| restarts(b).await);
    assert!(
        summary.fault_count(FaultKind::ReplyLost) >= 30,
        "lost replies happened: {summary:?}"
    );
}

#[test]
fn judge_refuses_each_violation() {
    let fates: BTreeMap<u32, Vec<(u32, Fate)>> =
        [(0, vec![(0, Fate::Sent), (1, Fate::Never), (2, Fate::Maybe)])]
            .into_iter()
            .collect();
    let refused =
        |log: Vec<(u32, u32)>| std::panic::catch_unwind(|| judge(&log, &fates, "planted")).is_err();
    assert!(!refused(vec![(0, 0), (0, 2)]));
    assert!(!refused(vec![(0, 0)]));
    assert!(refused(vec![]), "an acknowledged send lost");
    assert!(refused(vec![(0, 0), (0, 0)]), "applied twice");
    assert!(refused(vec![(0, 0), (0, 1)]), "an aborted send applied");
    assert!(refused(vec![(0, 2), (0, 0)]), "order broken");
    assert!(
        refused(vec![(0, 0), (0, 2), (0, 2)]),
        "a maybe applied twice"
    );
}

/// A plain send whose reply is lost, recovered only after its entry was applied and then
/// `SENDERS_KEPT` other senders' sends: its mark, the oldest, is the one the state dropped
/// (the first entry, at position 0), so nothing tells whether it was applied, and the send
/// must say it is in doubt, never a definite "not queued". (The mutation run found no test
/// with more senders than the state remembers.)
#[test]
fn a_lost_send_recovered_after_its_senders_mark_was_evicted_is_in_doubt() {
    const PATH: &str = "/agents/evicted";
    let sim = sweep_sim(0xe71c, 3, Duration::from_secs(60), FaultRates::default());
    let ((outcome, value), _) = sim.run(|ctx| async move {
        let zk = ctx.zk.clone();
        let (mine, theirs, executor) = (
            single(&ctx.clients[0]),
            single(&ctx.clients[1]),
            single(&ctx.clients[2]),
        );
        let agent = Agent::<i64, Count>::open(&mine, PATH, 0).await.unwrap();
        let mut others = Vec::new();
        for _ in 0..SENDERS_KEPT {
            others.push(Agent::<i64, Count>::open(&theirs, PATH, 0).await.unwrap());
        }
        // The send is applied by the server and its reply lost; once its entry is there, its
        // client freezes until the executor has applied it and every other sender's send.
        zk.inject(Fault::ReplyLost { client: Some(0) });
        let send = tokio::spawn(async move { agent.send(Count::Add(1000)).await });
        while children(&zk, &format!("{PATH}/queue")).is_empty() {
            tokio::time::sleep(Duration::from_micros(50)).await;
        }
        zk.inject(Fault::Pause {
            client: 0,
            duration: Duration::from_secs(20),
        });
        let runner = Agent::<i64, Count>::open(&executor, PATH, 0).await.unwrap();
        let task = tokio::spawn(async move { runner.run_executor().await });
        for other in &others {
            other
                .send(Count::Add(1))
                .await
                .expect("no fault on the others");
        }
        let reader = Agent::<i64, Count>::open(&executor, PATH, 0).await.unwrap();
        while reader.deref().await.unwrap() != 1000 + others.len() as i64 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let outcome = send.await.expect("the send returns");
        task.abort();
        (outcome, reader.deref().await.unwrap())
    });
    assert_eq!(value, 1000 + SENDERS_KEPT as i64, "every send applied once");
    assert!(
        matches!(outcome, Err(AgentError::Indeterminate { .. })),
        "in doubt, not {outcome:?}"
    );
}

/// A send whose request was lost (never applied), from a sender with no mark and no mark ever
/// evicted, is definitely not queued: the recovery may say so rather than answer in doubt.
#[test]
fn a_lost_send_never_applied_by_a_sender_without_a_mark_is_not_queued() {
    const PATH: &str = "/agents/never";
    let sim = sweep_sim(0xe71d, 1, Duration::from_secs(60), FaultRates::default());
    let (outcome, _) = sim.run(|ctx| async move {
        let zk = ctx.zk.clone();
        let mine = single(&ctx.clients[0]);
        let agent = Agent::<i64, Count>::open(&mine, PATH, 0).await.unwrap();
        zk.inject(Fault::RequestLost { client: Some(0) });
        agent.send(Count::Add(1)).await
    });
    assert!(
        matches!(outcome, Err(AgentError::NotQueued { .. })),
        "definitely not queued, not {outcome:?}"
    );
}
