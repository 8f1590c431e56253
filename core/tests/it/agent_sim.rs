//! Agents on the simulated ZooKeeper under every fault kind: three clients send actions
//! (plainly and from transactions on one shared ref under both STM protocols, so tries
//! conflict and retry, and some bodies refuse) while
//! each runs an executor; a session expiry or an outage takes executors down and another
//! takes over. Replayable from the seed (printed on failure; `AVOUT_SIM_SEED` overrides).
//!
//! What is checked is what no fault may break: every acknowledged send is applied exactly
//! once, an indefinite one at most once, one found not queued never; each sender's actions
//! are applied in the order sent; a transaction's send is applied only if it committed.

use std::collections::BTreeMap;
use std::time::Duration;

use avout::Client;
use avout::agent::{Action, Agent, AgentError};
use avout::stm::{Abort, Protocol, Stm, StmConfig, StmError};
use avout_sim_zk::{FaultKind, Sim};
use serde::{Deserialize, Serialize};

use crate::support::{one_kind, sim_clients, sweep_sim};

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

fn sim(seed: u64, kind: FaultKind) -> Sim {
    let rates = one_kind(kind, [0.02, 0.02, 0.01, 0.003, 0.003, 0.01, 0.002]);
    sweep_sim(seed, 3, Duration::from_secs(2), rates)
}

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

#[test]
fn sends_apply_exactly_once_in_order_under_every_fault_kind() {
    const PER: u32 = 24;
    for (i, kind) in FaultKind::DEFAULT.into_iter().enumerate() {
        // Small runs draw few faults: the kind must fire in one of the two protocols' runs.
        let mut fired = 0;
        for protocol in Protocol::ALL {
            let seed = 0xa6e0 + i as u64 * 2 + (protocol == Protocol::Mvcc) as u64;
            let ((log, fates), summary) = sim(seed, kind).run(|ctx| async move {
                let zk = ctx.zk.clone();
                let clients = sim_clients(&ctx);
                let mut executors = Vec::new();
                for client in &clients {
                    let agent = open(client).await;
                    executors.push(tokio::spawn(async move { agent.run_executor().await }));
                }
                let senders = clients
                    .iter()
                    .enumerate()
                    .map(|(me, c)| sender(c.clone(), me as u32, PER, protocol));
                let fates: BTreeMap<u32, Vec<(u32, Fate)>> = futures::future::join_all(senders)
                    .await
                    .into_iter()
                    .enumerate()
                    .map(|(me, f)| (me as u32, f))
                    .collect();
                for e in executors {
                    e.abort();
                }
                let reader = Client::connect(zk)
                    .await
                    .expect("a simulated session opens");
                let agent = open(&reader).await;
                let log = loop {
                    let drained = agent.apply_pending().await;
                    match (drained, agent.deref().await) {
                        (Ok(_), Ok(log)) => break log,
                        _ => tokio::time::sleep(Duration::from_millis(10)).await,
                    }
                };
                (log, fates)
            });
            let what = format!("{} {} seed {seed}", kind.name(), protocol.name());
            let count = |f: Fate| fates.values().flatten().filter(|(_, x)| *x == f).count();
            eprintln!(
                "{what}: {} faults, {} applied, {} sent, {} maybe, {} never",
                summary.fault_count(kind),
                log.len(),
                count(Fate::Sent),
                count(Fate::Maybe),
                count(Fate::Never),
            );
            fired += summary.fault_count(kind);
            judge(&log, &fates, &what);
            assert!(
                count(Fate::Sent) > PER as usize,
                "{what}: most sends went through"
            );
        }
        assert!(fired > 0, "{} was injected", kind.name());
    }
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
