//! Lock tables on the simulated ZooKeeper: the medical-records example under every fault kind,
//! judged against the simulator's tree; a lost commit reply resolved, not retried; a session
//! expiry that makes entries vanish. Seeds are printed on failure (`AVOUT_SIM_SEED` overrides).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use crate::support::{one_kind, sim_client, sim_clients, sweep_sim};
use avout::locktable::{LockTable, LockTableError, Transaction, assert, delete_var, set_var};
use avout::{
    Client, Coordination, Error, Op, OpFuture, Reply, Request, SessionId, SessionInfo,
    SessionState, SessionStates, Watch,
};
use avout_sim_zk::{FaultKind, FaultRates, Sim, SimClient, SimZk};
use futures::FutureExt;

use crate::locktable::{
    FACILITY, NS, PATIENT, assert_failed, mds_entry, mds_entry_done, mds_review, mds_review_done,
    month_end, month_end_done,
};

const SESSION: Duration = Duration::from_secs(2);

/// How the next writing `multi` is lost.
#[derive(Clone, Copy, Debug)]
enum Loss {
    /// Applied, reply lost.
    Reply,
    /// Never sent.
    Request,
}

/// A session whose next writing `multi` is lost as armed: the lock table's commit.
struct Lossy {
    inner: SimClient,
    armed: StdMutex<Option<Loss>>,
}

impl Coordination for Lossy {
    fn session(&self) -> SessionInfo {
        self.inner.session()
    }
    fn session_states(&self) -> SessionStates {
        self.inner.session_states()
    }
    fn session_state(&self) -> SessionState {
        self.inner.session_state()
    }
    fn submit(&self, request: Request) -> OpFuture<'_, (Reply, Option<Watch>)> {
        let writes = matches!(&request, Request::Multi(ops)
            if ops.iter().any(|op| !matches!(op, Op::Check { .. })));
        let loss = if writes {
            self.armed.lock().unwrap().take()
        } else {
            None
        };
        match loss {
            Some(Loss::Reply) => {
                let applied = self.inner.submit(request);
                async move {
                    applied.await.expect("the lost multi itself succeeds");
                    Err(Error::ConnectionLoss)
                }
                .boxed()
            }
            Some(Loss::Request) => async { Err(Error::ConnectionLoss) }.boxed(),
            None => self.inner.submit(request),
        }
    }
    fn new_guid(&self) -> u128 {
        self.inner.new_guid()
    }
    fn close(&self) -> OpFuture<'_, ()> {
        self.inner.close()
    }
}

/// The truth: every entry in slot `table`/FACILITY, by session, with its value.
fn entries(zk: &SimZk, table: &str) -> BTreeMap<i64, String> {
    let slot = format!("{NS}/vars/{table}/{FACILITY}");
    zk.with_kernel(|k| {
        let Some(node) = k.tree().node(&slot) else {
            return BTreeMap::new();
        };
        node.children
            .iter()
            .map(|c| {
                let data = &k.tree().node(&format!("{slot}/{c}")).expect("child").data;
                let v: serde_json::Value = serde_json::from_slice(data).expect("entry json");
                (
                    u64::from_str_radix(c, 16).expect("session name") as i64,
                    v["value"].as_str().expect("value").to_owned(),
                )
            })
            .collect()
    })
}

/// Runs `tx` through a handle whose commit is lost as `loss`, and returns the outcome and
/// the entries of `table` afterwards.
fn with_lost_commit(
    loss: Loss,
    setup: Vec<Transaction>,
    tx: Transaction,
    table: &'static str,
) -> (
    Result<avout::locktable::Committed, LockTableError>,
    BTreeMap<i64, String>,
) {
    let sim = Sim::builder()
        .seed(5)
        .clients(1)
        .session_timeout(SESSION)
        .build();
    sim.run(|ctx| async move {
        let lossy = Arc::new(Lossy {
            inner: ctx.clients[0].clone(),
            armed: StdMutex::new(None),
        });
        // Exactly the lossy session.
        let table_handle = LockTable::new(&Client::single(lossy.clone()), NS).expect("ns");
        for t in setup {
            table_handle.execute(&t).await.expect("setup");
        }
        *lossy.armed.lock().unwrap() = Some(loss);
        let outcome = table_handle.execute(&tx).await;
        assert!(lossy.armed.lock().unwrap().is_none(), "the commit was lost");
        (outcome, entries(&ctx.zk, table))
    })
    .0
}

#[test]
fn a_lost_commit_reply_is_resolved_not_retried() {
    // Retried blindly, the delete would find nothing to delete and report a failure.
    let delete = Transaction::new("done", vec![assert(delete_var("MDS-Entry", FACILITY))]);
    let (outcome, left) = with_lost_commit(
        Loss::Reply,
        vec![mds_entry(PATIENT)],
        delete.clone(),
        "MDS-Entry",
    );
    let committed = outcome.expect("committed, not failed");
    assert!(committed.resolved, "the outcome came from the marker");
    assert!(left.is_empty());

    // Not applied: evaluated again and applied once.
    let (outcome, left) =
        with_lost_commit(Loss::Request, vec![mds_entry(PATIENT)], delete, "MDS-Entry");
    assert!(outcome.expect("committed").resolved);
    assert!(left.is_empty());

    // A set without duplicates whose reply was lost: one entry, committed.
    let set = Transaction::new("review", vec![assert(set_var("MDS-Review", FACILITY, "x"))]);
    let (outcome, left) = with_lost_commit(Loss::Reply, vec![], set, "MDS-Review");
    assert_eq!(outcome.expect("committed").applied, vec![true]);
    assert_eq!(left.values().collect::<Vec<_>>(), vec!["x"]);
}

#[test]
fn an_expired_session_takes_its_entries_with_it() {
    let sim = Sim::builder()
        .seed(9)
        .clients(2)
        .session_timeout(SESSION)
        .build();
    sim.run(|ctx| async move {
        let b = &ctx.clients[1];
        let (clerk, accountant) = (
            LockTable::new(&sim_client(&ctx.zk, &ctx.clients[0]), NS).expect("ns"),
            LockTable::new(&sim_client(&ctx.zk, b), NS).expect("ns"),
        );
        accountant.execute(&month_end()).await.expect("month-end");
        let entry = mds_entry(PATIENT);
        assert_failed(clerk.execute(&entry).await, &entry, 0);
        ctx.zk.expire_session(b.session().id);
        assert!(
            entries(&ctx.zk, "Month-End").is_empty(),
            "gone with the session"
        );
        clerk.execute(&entry).await.expect("entry after the expiry");
        // The accountant's handle reports the loss of its entries once, applying nothing;
        // its next call runs on the client's new session, where there is nothing to delete.
        assert!(matches!(
            accountant.execute(&month_end_done()).await,
            Err(LockTableError::SessionLost(_))
        ));
        let done = accountant
            .execute(&month_end_done())
            .await
            .expect("the next call runs on the new session");
        assert_eq!(done.applied, vec![false]);
        assert!(entries(&ctx.zk, "Month-End").is_empty());
    });
}

fn rates(kind: FaultKind) -> FaultRates {
    one_kind(kind, [0.04, 0.04, 0.02, 0.01, 0.01, 0.03, 0.01])
}

/// The tables a worker may hold an entry in.
const TABLES: [&str; 3] = ["MDS-Entry", "MDS-Review", "Month-End"];

/// The state invariants of the example, on the simulator's tree (only live sessions' entries
/// are in it).
fn check_invariants(zk: &SimZk) {
    let (entry, review, month) = (
        entries(zk, "MDS-Entry"),
        entries(zk, "MDS-Review"),
        entries(zk, "Month-End"),
    );
    assert!(review.len() <= 1, "two reviewers: {review:?}");
    assert!(month.len() <= 1, "two month-ends: {month:?}");
    for (rs, patient) in &review {
        for (es, p) in &entry {
            assert!(
                rs == es || p != patient,
                "{patient} entered by {es:x} while {rs:x} reviews"
            );
        }
    }
    for ms in month.keys() {
        for s in entry.keys().chain(review.keys()) {
            assert!(s == ms, "MDS activity of {s:x} during month-end of {ms:x}");
        }
    }
}

#[test]
fn the_medical_records_example_holds_under_every_fault_kind() {
    const STEPS: usize = 30;
    let patients = ["R-1", "R-2"];
    // A lost reply takes its connection with it, so most lost replies fail a read of a
    // transaction (and the commit behind it is never applied); a lost *commit* reply, the
    // case the marker resolves, needs a few runs to come up.
    let runs = FaultKind::DEFAULT
        .into_iter()
        .enumerate()
        .flat_map(|(i, kind)| {
            let tries = if kind == FaultKind::ReplyLost { 4 } else { 1 };
            (0..tries).map(move |t| (i as u64 + 0x100 * t, kind, t + 1 == tries))
        });
    let mut resolved_lost_replies = 0;
    for (i, kind, last_try) in runs {
        if kind == FaultKind::ReplyLost && resolved_lost_replies > 0 {
            continue;
        }
        let seed = 0x70b1e + i;
        let sim = sweep_sim(seed, 4, SESSION, rates(kind));
        let (counts, summary) = sim.run(|ctx| async move {
            let zk = ctx.zk.clone();
            // Managed clients: after a lost session the same table handle carries on, on the
            // client's next session, once it has reported the loss.
            let workers = sim_clients(&ctx)
                .into_iter()
                .enumerate()
                .map(|(who, client)| {
                    let zk = zk.clone();
                    async move {
                        let table = LockTable::new(&client, NS).expect("ns");
                        // What this worker believes its session holds: table → value.
                        let mut mine: BTreeMap<&str, String> = BTreeMap::new();
                        let (mut committed, mut failed, mut lost, mut resolved) =
                            (0u64, 0u64, 0u64, 0u64);
                        for step in 0..STEPS {
                            let patient = patients[(who + step) % 2];
                            let (tx, effect): (Transaction, Option<(&str, Option<String>)>) =
                                match (who * 5 + step * 3) % 7 {
                                    0 | 1 => (
                                        mds_entry(patient),
                                        Some(("MDS-Entry", Some(patient.into()))),
                                    ),
                                    2 => (mds_entry_done(), Some(("MDS-Entry", None))),
                                    3 => (
                                        mds_review(patient),
                                        Some(("MDS-Review", Some(patient.into()))),
                                    ),
                                    4 => (mds_review_done(), Some(("MDS-Review", None))),
                                    5 => (month_end(), Some(("Month-End", Some("closing".into())))),
                                    _ => (month_end_done(), Some(("Month-End", None))),
                                };
                            let generation = client.generation();
                            match table.execute(&tx).await {
                                Ok(done) => {
                                    resolved += u64::from(done.resolved);
                                    if let (Some((t, v)), Some(&true)) =
                                        (effect, done.applied.last())
                                    {
                                        committed += 1;
                                        match v {
                                            Some(v) => mine.insert(t, v),
                                            None => mine.remove(t),
                                        };
                                    }
                                }
                                Err(LockTableError::Failed { .. }) => failed += 1,
                                // Nothing applied: the worker's belief stands.
                                Err(LockTableError::Contended { .. }) => {}
                                Err(LockTableError::SessionLost(_)) => {
                                    lost += 1;
                                    mine.clear();
                                }
                                Err(e) => panic!("worker {who}: {e}"),
                            }
                            check_invariants(&zk);
                            // What the worker believes is what its live session has: no entry
                            // applied twice or unknowingly, none missing. Judged only when the
                            // call ran on the client's current session: if the client replaced
                            // its session meanwhile, the handle reports the loss on its next call.
                            let sid = client.session().id.0;
                            if client.generation() == generation
                                && zk.with_kernel(|k| k.is_alive(SessionId(sid)))
                            {
                                for t in TABLES {
                                    assert_eq!(
                                        entries(&zk, t).get(&sid),
                                        mine.get(t),
                                        "worker {who} step {step}: {t}"
                                    );
                                }
                            }
                            tokio::time::sleep(Duration::from_millis(3 + who as u64)).await;
                        }
                        (committed, failed, lost, resolved)
                    }
                });
            futures::future::join_all(workers).await
        });
        let total = counts.iter().fold((0, 0, 0, 0), |a, c| {
            (a.0 + c.0, a.1 + c.1, a.2 + c.2, a.3 + c.3)
        });
        eprintln!(
            "locktable {:>14}: seed {seed}, {} faults, {} changes committed, {} failed, {} sessions lost, {} commits resolved through the marker",
            kind.name(),
            summary.fault_count(kind),
            total.0,
            total.1,
            total.2,
            total.3
        );
        if kind == FaultKind::ReplyLost {
            resolved_lost_replies += total.3;
            assert!(
                resolved_lost_replies > 0 || !last_try,
                "a lost commit reply was resolved"
            );
        }
        assert!(summary.fault_count(kind) > 0, "{kind:?} was injected");
        assert!(total.0 > 0 && total.1 > 0, "both outcomes happen");
    }
}
