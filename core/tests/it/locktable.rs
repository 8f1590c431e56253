//! Lock tables, each body on a real standalone ZooKeeper and on the simulator: the
//! medical-records example of the Azos locking document (MDS entry, review, month-end),
//! including a session expiry that makes entries vanish, and a lost commit reply resolved,
//! not retried. On the simulator, the example under every fault kind, judged against the
//! service's tree. Seeds are printed on failure (`AVOUT_SIM_SEED` overrides).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use avout::locktable::{
    LockTable, LockTableError, Transaction, anyway_continue_after, assert, delete_var,
    delete_var_value, exists, not, set_var,
};
use avout::{
    Client, Coordination, Error, Intercept, Intercepted, Op, OpFuture, Reply, Request, SessionId,
    Watch,
};
use avout_sim_zk::{FaultKind, FaultRates};
use avout_testkit::backend::{Backend, SimBackend};
use futures::FutureExt;

use crate::support::{
    client_of, expire, on_both, one_kind, plain_sim, session_of, sim_clients, sweep_sim,
};

pub(crate) const NS: &str = "/locking/Clinical";
pub(crate) const FACILITY: &str = "CGROVE-35";
pub(crate) const PATIENT: &str = "R-45899";

/// Azos's `mdsEnter`: several may enter at once; not during a review of the patient nor
/// month-end.
pub(crate) fn mds_entry(patient: &str) -> Transaction {
    Transaction::new(
        format!("MDS Entry for {patient}@'Cherry Grove'"),
        vec![
            assert(not(exists("Month-End", FACILITY))),
            assert(not(exists("MDS-Review", FACILITY).with_value(patient))),
            assert(set_var("MDS-Entry", FACILITY, patient).allow_duplicates()),
        ],
    )
}

/// Azos's `mdsReview`: one reviewer at a time, not while anyone enters for the patient.
pub(crate) fn mds_review(patient: &str) -> Transaction {
    Transaction::new(
        format!("MDS Review for {patient}@'Cherry Grove'"),
        vec![
            assert(not(exists("Month-End", FACILITY))),
            assert(not(exists("MDS-Entry", FACILITY).with_value(patient))),
            assert(set_var("MDS-Review", FACILITY, patient)),
        ],
    )
}

/// Azos's `mdsReviewUnlock`.
pub(crate) fn mds_review_done() -> Transaction {
    Transaction::new(
        "MDS Review is done",
        vec![anyway_continue_after(delete_var("MDS-Review", FACILITY))],
    )
}

pub(crate) fn mds_entry_done() -> Transaction {
    Transaction::new(
        "MDS Entry is done",
        vec![anyway_continue_after(delete_var("MDS-Entry", FACILITY))],
    )
}

/// The financial month-end: no MDS activity in the facility, whatever the patient.
pub(crate) fn month_end() -> Transaction {
    Transaction::new(
        "Month-End at Cherry Grove",
        vec![
            assert(not(exists("MDS-Entry", FACILITY))),
            assert(not(exists("MDS-Review", FACILITY))),
            assert(set_var("Month-End", FACILITY, "closing")),
        ],
    )
}

pub(crate) fn month_end_done() -> Transaction {
    Transaction::new(
        "Month-End is done",
        vec![anyway_continue_after(delete_var("Month-End", FACILITY))],
    )
}

/// Asserts that `result` is the failure of statement `index` of `tx`.
#[track_caller]
pub(crate) fn assert_failed<T: std::fmt::Debug>(
    result: Result<T, LockTableError>,
    tx: &Transaction,
    index: usize,
) {
    match result {
        Err(LockTableError::Failed {
            index: got,
            statement,
        }) => {
            assert_eq!(
                got, index,
                "failed at {got} ({statement}), expected {index}"
            );
            assert_eq!(statement, tx.statements[index]);
        }
        other => panic!("expected statement {index} to fail, got {other:?}"),
    }
}

async fn medical_records(backend: &dyn Backend) {
    let (z1, z2, z3, z4) = (
        client_of(backend).await,
        client_of(backend).await,
        client_of(backend).await,
        client_of(backend).await,
    );
    let (user1, user2, user3, user4) = (
        LockTable::new(&z1, NS).expect("ns"),
        LockTable::new(&z2, NS).expect("ns"),
        LockTable::new(&z3, NS).expect("ns"),
        LockTable::new(&z4, NS).expect("ns"),
    );
    assert_eq!(user1.namespace(), NS);
    let (entry, review) = (mds_entry(PATIENT), mds_review(PATIENT));

    // The document's run: two entries at once, then a review that must wait.
    user1.execute(&entry).await.expect("user1 enters");
    user2
        .execute(&entry)
        .await
        .expect("user2 enters too (duplicates)");
    assert_failed(user3.execute(&review).await, &review, 1);
    let entries = user3.entries("MDS-Entry", FACILITY).await.expect("entries");
    let mut sessions: Vec<i64> = vec![z1.session().id.0, z2.session().id.0];
    sessions.sort();
    assert_eq!(
        entries.iter().map(|e| e.session).collect::<Vec<_>>(),
        sessions
    );
    assert!(entries.iter().all(|e| e.value == PATIENT));
    assert_eq!(entries[0].description, entry.description);
    assert!(
        user3
            .entries("MDS-Review", FACILITY)
            .await
            .expect("entries")
            .is_empty(),
        "the failed review changed nothing"
    );

    // Entries done: the review gets in, and then excludes entries and a second reviewer.
    for user in [&user1, &user2] {
        let done = user.execute(&mds_entry_done()).await.expect("done");
        assert_eq!(done.applied, vec![true]);
    }
    user3.execute(&review).await.expect("user3 reviews");
    assert_failed(user1.execute(&entry).await, &entry, 1);
    assert_failed(user2.execute(&review).await, &review, 2);
    assert_failed(user4.execute(&month_end()).await, &month_end(), 1);
    user3
        .execute(&mds_review_done())
        .await
        .expect("review done");

    // Month-end shuts out all MDS activity, until its session expires.
    user4.execute(&month_end()).await.expect("month-end");
    assert_failed(user1.execute(&entry).await, &entry, 0);
    assert_failed(user3.execute(&review).await, &review, 0);
    expire(backend, &z4).await;
    // The handle reports the loss of what it committed on the ended session, once, and
    // applies nothing (its client meanwhile opens a new session).
    assert!(matches!(
        user4.execute(&month_end_done()).await,
        Err(LockTableError::SessionLost(_))
    ));
    // The server deletes the expired session's ephemerals at once or within a session
    // timeout (see expiry.rs); wait for it, bounded.
    let mut waited = Duration::ZERO;
    while !user1
        .entries("Month-End", FACILITY)
        .await
        .expect("entries")
        .is_empty()
    {
        assert!(
            waited < Duration::from_secs(20),
            "the month-end entry outlived its session"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += Duration::from_millis(100);
    }
    user1
        .execute(&entry)
        .await
        .expect("entries resume after the expiry");
    // User 4's next call runs on its client's new session, which holds no month-end entry.
    let done = user4
        .execute(&month_end_done())
        .await
        .expect("the call after the reported loss runs on the new session");
    assert_eq!(
        done.applied,
        vec![false],
        "nothing of the old session to delete"
    );

    // A change that cannot apply, under anyway-continue-after, commits as not applied.
    let nothing = user2.execute(&mds_review_done()).await.expect("commits");
    assert_eq!(nothing.applied, vec![false]);

    // Bad input changes nothing.
    let bad = Transaction::new("bad", vec![assert(set_var("", FACILITY, "x"))]);
    assert!(matches!(
        user2.execute(&bad).await,
        Err(LockTableError::Invalid { .. })
    ));
    assert!(LockTable::new(&z2, "no-slash").is_err());

    // Entries live under the namespace as ephemerals of their session.
    let slot = format!("{NS}/vars/MDS-Entry/{FACILITY}");
    let (children, _) = z2.get_children(&slot).await.expect("slot");
    assert_eq!(children, vec![format!("{:016x}", z1.session().id.0 as u64)]);
    let stat = z2
        .exists(&format!("{slot}/{}", children[0]))
        .await
        .expect("exists")
        .expect("entry");
    assert_eq!(stat.ephemeral_owner, z1.session().id.0);
    assert!(
        z2.exists(&format!("{NS}/vars"))
            .await
            .expect("exists")
            .is_some()
    );
}

const SESSION: Duration = Duration::from_secs(2);

/// How the next writing `multi` is lost.
#[derive(Clone, Copy, Debug)]
enum Loss {
    /// Applied, reply lost.
    Reply,
    /// Never sent.
    Request,
}

/// Loses a session's next writing `multi` as armed: the lock table's commit.
struct Armed(StdMutex<Option<Loss>>);

impl Intercept for Armed {
    fn submit<'a>(
        &'a self,
        inner: &'a dyn Coordination,
        request: Request,
    ) -> OpFuture<'a, (Reply, Option<Watch>)> {
        let writes = matches!(&request, Request::Multi(ops)
            if ops.iter().any(|op| !matches!(op, Op::Check { .. })));
        let loss = if writes {
            self.0.lock().unwrap().take()
        } else {
            None
        };
        match loss {
            Some(Loss::Reply) => {
                let applied = inner.submit(request);
                async move {
                    applied.await.expect("the lost multi itself succeeds");
                    Err(Error::ConnectionLoss)
                }
                .boxed()
            }
            Some(Loss::Request) => async { Err(Error::ConnectionLoss) }.boxed(),
            None => inner.submit(request),
        }
    }
}

/// The truth: every entry in slot `table`/FACILITY, by session, with its value (the kernel's
/// tree on the simulator, a read through a fresh session on real ZooKeeper).
async fn entries(backend: &dyn Backend, table: &str) -> BTreeMap<i64, String> {
    let slot = format!("{NS}/vars/{table}/{FACILITY}");
    let entry = |name: &str, data: &[u8]| {
        let v: serde_json::Value = serde_json::from_slice(data).expect("entry json");
        (
            u64::from_str_radix(name, 16).expect("session name") as i64,
            v["value"].as_str().expect("value").to_owned(),
        )
    };
    if let Some(zk) = backend.simulator() {
        return zk.with_kernel(|k| {
            let Some(node) = k.tree().node(&slot) else {
                return BTreeMap::new();
            };
            node.children
                .iter()
                .map(|c| {
                    entry(
                        c,
                        &k.tree().node(&format!("{slot}/{c}")).expect("child").data,
                    )
                })
                .collect()
        });
    }
    let session = session_of(backend).await;
    let Ok((children, _)) = session.get_children(&slot).await else {
        return BTreeMap::new();
    };
    let mut found = BTreeMap::new();
    for c in children {
        if let Ok((data, _)) = session.get_data(&format!("{slot}/{c}")).await {
            let (s, v) = entry(&c, &data);
            found.insert(s, v);
        }
    }
    found
}

/// Runs `tx` through a handle whose commit is lost as `loss`, and returns the outcome and
/// the entries of `table` afterwards. `setup` runs first, under `root`'s namespace.
async fn with_lost_commit(
    backend: &dyn Backend,
    loss: Loss,
    setup: Vec<Transaction>,
    tx: Transaction,
    table: &'static str,
) -> (
    Result<avout::locktable::Committed, LockTableError>,
    BTreeMap<i64, String>,
) {
    let lossy = Arc::new(Intercepted::new(
        session_of(backend).await,
        Armed(StdMutex::new(None)),
    ));
    // Exactly the lossy session.
    let table_handle = LockTable::new(&Client::single(lossy.clone()), NS).expect("ns");
    for t in setup {
        table_handle.execute(&t).await.expect("setup");
    }
    *lossy.intercept().0.lock().unwrap() = Some(loss);
    let outcome = table_handle.execute(&tx).await;
    assert!(
        lossy.intercept().0.lock().unwrap().is_none(),
        "the commit was lost"
    );
    let left = entries(backend, table).await;
    // Leave the tables empty for the next case.
    let _ = table_handle.execute(&mds_entry_done()).await;
    let _ = table_handle.execute(&mds_review_done()).await;
    (outcome, left)
}

fn rates(kind: FaultKind) -> FaultRates {
    one_kind(kind, [0.04, 0.04, 0.02, 0.01, 0.01, 0.03, 0.01])
}

/// The tables a worker may hold an entry in.
const TABLES: [&str; 3] = ["MDS-Entry", "MDS-Review", "Month-End"];

/// The state invariants of the example, on the service's tree (only live sessions' entries
/// are in it).
async fn check_invariants(backend: &dyn Backend) {
    let (entry, review, month) = (
        entries(backend, "MDS-Entry").await,
        entries(backend, "MDS-Review").await,
        entries(backend, "Month-End").await,
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
                            check_invariants(&SimBackend::new(zk.clone())).await;
                            // What the worker believes is what its live session has: no entry
                            // applied twice or unknowingly, none missing. Judged only when the
                            // call ran on the client's current session: if the client replaced
                            // its session meanwhile, the handle reports the loss on its next call.
                            let sid = client.session().id.0;
                            if client.generation() == generation
                                && zk.with_kernel(|k| k.is_alive(SessionId(sid)))
                            {
                                for t in TABLES {
                                    let found = entries(&SimBackend::new(zk.clone()), t).await;
                                    assert_eq!(
                                        found.get(&sid),
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
/// Lost commit replies and requests: resolved through the marker, applied once.
async fn lost_commits(backend: &dyn Backend) {
    // Retried blindly, the delete would find nothing to delete and report a failure.
    let delete = Transaction::new("done", vec![assert(delete_var("MDS-Entry", FACILITY))]);
    let (outcome, left) = with_lost_commit(
        backend,
        Loss::Reply,
        vec![mds_entry(PATIENT)],
        delete.clone(),
        "MDS-Entry",
    )
    .await;
    let committed = outcome.expect("committed, not failed");
    assert!(committed.resolved, "the outcome came from the marker");
    assert!(left.is_empty());

    // Not applied: evaluated again and applied once.
    let (outcome, left) = with_lost_commit(
        backend,
        Loss::Request,
        vec![mds_entry(PATIENT)],
        delete,
        "MDS-Entry",
    )
    .await;
    assert!(outcome.expect("committed").resolved);
    assert!(left.is_empty());

    // A set without duplicates whose reply was lost: one entry, committed.
    let set = Transaction::new("review", vec![assert(set_var("MDS-Review", FACILITY, "x"))]);
    let (outcome, left) = with_lost_commit(backend, Loss::Reply, vec![], set, "MDS-Review").await;
    assert_eq!(outcome.expect("committed").applied, vec![true]);
    assert_eq!(left.values().collect::<Vec<_>>(), vec!["x"]);
}

on_both!(
    /// The medical-records example, with an expiring month-end.
    the_medical_records_example_with_an_expiring_month_end,
    plain_sim(9),
    |b| medical_records(b),
);

/// `delete_var_value` deletes this session's entry only when its value is the one named: a
/// failed assertion and the entry left otherwise. (The mutation run found no test of it: an
/// inverted comparison passed every test and scenario.)
async fn conditional_delete(backend: &dyn Backend) {
    let client = client_of(backend).await;
    let table = LockTable::new(&client, "/lt-conditional").expect("ns");
    let set = Transaction::new("set", vec![assert(set_var("T", "V", "mine"))]);
    table.execute(&set).await.expect("set");
    let other = Transaction::new("not it", vec![assert(delete_var_value("T", "V", "theirs"))]);
    assert_failed(table.execute(&other).await, &other, 0);
    assert_eq!(table.entries("T", "V").await.expect("entries").len(), 1);
    let mine = Transaction::new("it", vec![assert(delete_var_value("T", "V", "mine"))]);
    assert_eq!(
        table.execute(&mine).await.expect("deleted").applied,
        vec![true]
    );
    assert!(table.entries("T", "V").await.expect("entries").is_empty());
}

on_both!(
    /// A conditional delete: only the entry of the value named.
    a_conditional_delete_takes_only_the_value_named,
    plain_sim(6),
    |b| conditional_delete(b),
);

on_both!(
    /// A lost commit reply is resolved, not retried.
    a_lost_commit_reply_is_resolved_not_retried,
    plain_sim(5),
    |b| lost_commits(b),
);
