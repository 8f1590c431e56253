//! The application's judge, shared by `tests/simulated.rs` and `examples/zk-avout.rs`: its
//! processes as madsim nodes on the run's simulated ensemble, their steps recorded in avout's
//! mutex-checker format, and the scenarios that run them (`--cfg madsim` only).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout_check::history::EventType;
use avout_example_zk_counter::{Config, Events, GaveUp, Role, Step, run};
use avout_scenarios::builtin::{election, mutex};
use avout_scenarios::scenario::env::{Cluster, Recorder};
use avout_scenarios::scenario::{AnyCluster, Described, FaultPlan, Workload, WorkloadError};
use avout_sim_zk::FaultKind;
use serde_json::{Value, json};
use zookeeper_client as zk;

/// Where the application finds its ensemble: the run's simulated one, served there.
pub(crate) const ADDRESS: &str = "zk-counter:2181";

/// A process's steps, recorded in the mutex checker's format: `acquire` (`ok` with the
/// token), `write` (`{"token", "counter"}`), `release` (`ok` if the hold lasted, `info` if it
/// was lost).
struct Recording {
    rec: Recorder,
    process: u64,
    /// The write in flight: its value, for its completion.
    writing: Mutex<Value>,
}

impl Events for Recording {
    fn step(&self, step: Step<'_>) {
        let (rec, p) = (&self.rec, self.process);
        match step {
            Step::Acquiring => rec.invoke(p, "acquire", Value::Null, None),
            Step::Acquired(token) => rec.complete(EventType::Ok, p, "acquire", token.into(), None),
            // Timed out, or failed: the process never holds it, whatever the lock node did.
            Step::NotAcquired(_) => rec.complete(EventType::Fail, p, "acquire", Value::Null, None),
            Step::Writing { token, value } => {
                let v = json!({"token": token, "counter": value});
                *self.writing.lock().unwrap() = v.clone();
                rec.invoke(p, "write", v, None);
            }
            Step::Written(result) => {
                let v = self.writing.lock().unwrap().clone();
                let end = match result {
                    Ok(()) => EventType::Ok,
                    // Refused: the lock node was gone, nothing written.
                    Err(zk::Error::RuntimeInconsistent) => EventType::Fail,
                    Err(_) => EventType::Info,
                };
                rec.complete(end, p, "write", v, None);
            }
            Step::Releasing(token) => rec.invoke(p, "release", token.into(), None),
            Step::Released { clean } => {
                let end = if clean {
                    EventType::Ok
                } else {
                    EventType::Info
                };
                rec.complete(end, p, "release", Value::Null, None);
            }
        }
    }
}

/// Each process's outcome, once it has finished.
type Outcomes = Arc<Mutex<Vec<Option<Result<(), GaveUp>>>>>;

/// The application's processes in `role`, each a madsim node, on the run's simulated
/// ensemble, with `config`; the run fails if one gives up.
async fn processes(
    cluster: AnyCluster<'_>,
    w: &Workload,
    rec: &Recorder,
    role: Role,
    config: Config,
) -> Result<(), WorkloadError> {
    let zk = cluster.sim_zk().ok_or_else(|| {
        WorkloadError::gave_up(
            "processes as madsim nodes (the simulator only)",
            None::<WorkloadError>,
        )
    })?;
    let _server = zookeeper_client::SimServer::attach(&zk, [ADDRESS]);
    let outcomes: Outcomes = Arc::new(Mutex::new(vec![None; w.clients]));
    let _nodes: Vec<_> = (0..w.clients)
        .map(|me| {
            let (rec, outcomes, ops, config) =
                (rec.clone(), outcomes.clone(), w.ops, config.clone());
            zk.node(&format!("process-{me}"), move || {
                let (rec, outcomes, config) = (rec.clone(), outcomes.clone(), config.clone());
                async move {
                    let events = Recording {
                        rec,
                        process: me as u64,
                        writing: Mutex::new(Value::Null),
                    };
                    let done = run(&config, role, ops, &events).await;
                    outcomes.lock().unwrap()[me] = Some(done);
                }
            })
        })
        .collect();
    while outcomes.lock().unwrap().iter().any(Option::is_none) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
    for (me, done) in outcomes.into_iter().enumerate() {
        if let Some(Err(gave_up)) = done {
            return Err(WorkloadError::gave_up(
                format!("process {me}"),
                Some(gave_up),
            ));
        }
    }
    Ok(())
}

/// Where the application is given its ensemble, and whether it renews its session after a
/// timed-out lock wait (the application's fix of the lock's leak; `false` is the
/// application as it first was).
fn config(renews: bool) -> Config {
    Config {
        renew_session_after_timeout: renews,
        ..Config::new(ADDRESS)
    }
}

/// The counter: processes add one under the lock; judged by the checkers avout binds to its
/// own mutex scenario (the history is in their format).
pub(crate) const ZK_COUNTER: Described = Described {
    name: "zk-counter",
    about: "a counter under zookeeper-client's Curator-compatible lock, on the drop-in \
            client; checker: avout's mutex (one holder at a time, fencing, no lost increment)",
    defaults: (3, 5),
    checkers: mutex::SCENARIO.checkers,
    workload: |cluster, w, rec| Box::pin(processes(cluster, w, rec, Role::Counter, config(true))),
};

/// The election: processes take leadership and add one to the epoch; judged by the checkers
/// of avout's own election scenario.
pub(crate) const ZK_ELECTION: Described = Described {
    name: "zk-election",
    about: "leadership by zookeeper-client's lock under Curator's LeaderLatch names, on the \
            drop-in client; checker: avout's election (one leader per term, no two live \
            leaders)",
    defaults: (3, 4),
    checkers: election::SCENARIO.checkers,
    workload: |cluster, w, rec| Box::pin(processes(cluster, w, rec, Role::Leader, config(true))),
};

/// The counter as the application first had it: trusting `Client::lock`'s documented
/// cancellation safety, a process that waited for the lock in vain tries again on the same
/// session. The simulator found what that costs (`tests/findings/madsim/`).
pub(crate) const ZK_COUNTER_TRUSTING: Described = Described {
    name: "zk-counter-trusting",
    about: "zk-counter with timed-out lock waits retried on the same session, trusting \
            zookeeper-client's cancellation safety; checker: avout's mutex",
    workload: |cluster, w, rec| Box::pin(processes(cluster, w, rec, Role::Counter, config(false))),
    ..ZK_COUNTER
};

/// Every fault kind of the simulator, the ensemble's included.
pub(crate) fn every_fault() -> FaultPlan {
    FaultPlan::kinds(&FaultKind::ALL, None)
}
