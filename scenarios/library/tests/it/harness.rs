//! The harness for users' tests: failures found, shrunk, kept and re-run first; determinism.

use std::sync::atomic::{AtomicUsize, Ordering};

use avout::Coordination;
use avout_check::history::{EventType, History};
use avout_check::{Anomaly, Rule};
use avout_scenarios::harness::{Harness, HarnessError};
use avout_scenarios::scenario::env::{Cluster, Recorder};
use avout_scenarios::scenario::{
    AnyCluster, Checks, Described, FaultPlan, Scenario, Workload, WorkloadError,
};
use futures::future::LocalBoxFuture;

/// Increments of one node by a read and a blind write: concurrent clients lose updates.
struct LostUpdate;

impl Scenario for LostUpdate {
    fn name(&self) -> &'static str {
        "test-lost-update"
    }
    fn about(&self) -> &'static str {
        "blind read-modify-write increments; checker: no increment lost"
    }
    fn defaults(&self) -> (usize, usize) {
        (3, 3)
    }
    fn workload<'a>(
        &'a self,
        cluster: AnyCluster<'a>,
        w: &'a Workload,
        rec: &'a Recorder,
    ) -> LocalBoxFuture<'a, Result<(), WorkloadError>> {
        Box::pin(async move {
            let setup = cluster.client().await?;
            setup.create("/n", b"0", &Default::default()).await?;
            let clients = (0..w.clients).map(|p| async move {
                let client = cluster.client().await?;
                for _ in 0..w.ops {
                    rec.invoke(p as u64, "add", 1.into(), None);
                    let (data, _) = client.get_data("/n").await?;
                    let n: u64 = String::from_utf8_lossy(&data).parse().unwrap_or(0);
                    client
                        .set_data("/n", (n + 1).to_string().as_bytes(), None)
                        .await?;
                    rec.complete(EventType::Ok, p as u64, "add", 1.into(), None);
                }
                Ok::<_, WorkloadError>(())
            });
            for done in futures::future::join_all(clients).await {
                done?;
            }
            let (data, _) = setup.get_data("/n").await?;
            let n: u64 = String::from_utf8_lossy(&data).parse().unwrap_or(0);
            rec.invoke(w.clients as u64, "read", serde_json::Value::Null, None);
            rec.complete(EventType::Ok, w.clients as u64, "read", n.into(), None);
            Ok(())
        })
    }
    fn checkers(&self, _: &Workload) -> Checks {
        Checks::of(Rule::new("test-lost-update", no_lost_increment))
    }
}

/// Every acknowledged increment is in the final read.
fn no_lost_increment(history: &History) -> Vec<Anomaly> {
    let events = history.events();
    let adds = events
        .iter()
        .filter(|e| e.kind == EventType::Ok && e.f.as_str() == "add")
        .count() as u64;
    let read = events
        .iter()
        .rfind(|e| e.kind == EventType::Ok && e.f.as_str() == "read")
        .and_then(|e| e.value.as_u64());
    match read {
        Some(n) if n == adds => vec![],
        other => vec![Anomaly::new(
            "lost-increment",
            format!("{adds} increments acknowledged, the node reads {other:?}"),
        )],
    }
}

#[test]
fn a_failure_is_shrunk_kept_and_then_run_first() {
    let dir = tempfile::tempdir().unwrap();
    let harness = || {
        Harness::new(LostUpdate)
            .faults(FaultPlan::none())
            .seeds(0..20)
            .regressions(dir.path())
            .shrink_budget(200)
    };
    let Err(HarnessError::Failed(failure)) = harness().try_run() else {
        panic!("the lost update was not found");
    };
    let text = failure.to_string();
    assert!(
        text.contains(&format!("seed {} fails", failure.seed)),
        "{text}"
    );
    assert!(text.contains("AVOUT_REPLAY="), "{text}");
    assert!(failure.case_file.exists());
    let kept = failure.shrunk_file.clone().expect("shrunk and kept");
    assert!(kept.starts_with(dir.path()) && kept.exists());
    let shrunk = failure.shrunk.as_ref().unwrap();
    assert!(shrunk.steps.1 < shrunk.steps.0, "{text}");
    assert_eq!(
        shrunk.case.workload.clients, 2,
        "two writers lose an update: {text}"
    );
    // Next time the kept case runs first, before any seed.
    match harness().seeds(1000..1001).try_run() {
        Err(HarnessError::Regression { file, .. }) => assert_eq!(file, kept.display().to_string()),
        other => panic!("the kept case did not run first: {other:?}"),
    }
}

pub(crate) static RUNS: AtomicUsize = AtomicUsize::new(0);

/// Makes one more request each run: the same seed gives another run.
pub(crate) const DRIFTING: Described = Described {
    name: "test-drifting",
    about: "one more request each run; checker: none",
    defaults: (1, 1),
    checkers: |_| Checks::of(Rule::new("test-drifting", |_| vec![])),
    workload: |cluster, _, _| {
        Box::pin(async move {
            let client = cluster.client().await?;
            for _ in 0..=RUNS.fetch_add(1, Ordering::SeqCst) {
                client.exists("/").await?;
            }
            Ok(())
        })
    },
};

#[test]
fn a_run_that_is_not_a_function_of_its_seed_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = Harness::new(DRIFTING)
        .faults(FaultPlan::none())
        .regressions(dir.path())
        .seeds(5..6)
        .try_run();
    match out {
        Err(HarnessError::Nondeterministic {
            seed,
            first,
            second,
        }) => {
            assert_eq!(seed, 5);
            assert_ne!(first, second);
        }
        other => panic!("not refused: {other:?}"),
    }
}
