//! Lock tables on a real ZooKeeper: the medical-records example of the Azos locking document
//! (MDS entry, review, month-end), including a session expiry that makes entries vanish.

use std::time::Duration;

use avout::locktable::{
    LockTable, LockTableError, Transaction, anyway_continue_after, assert, delete_var, exists, not,
    set_var,
};
use avout::zk::ZkConfig;
use avout::{Client, Coordination};

use crate::support;

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

async fn client(connect: &str, timeout: Duration) -> Client {
    support::client(&ZkConfig::new(connect).with_session_timeout(timeout)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_medical_records_example_with_an_expiring_month_end() {
    let server = support::standalone();
    let connect = server.connect_string();
    let long = Duration::from_secs(10);
    let (z1, z2, z3) = (
        client(&connect, long).await,
        client(&connect, long).await,
        client(&connect, long).await,
    );
    // User 4's client adopts a session the test keeps, to expire it.
    let config4 = ZkConfig::new(&connect).with_session_timeout(Duration::from_secs(2));
    let z4 = std::sync::Arc::new(support::connect(&config4).await);
    let (user1, user2, user3, user4) = (
        LockTable::new(&z1, NS).expect("ns"),
        LockTable::new(&z2, NS).expect("ns"),
        LockTable::new(&z3, NS).expect("ns"),
        LockTable::new(&support::adopt(&config4, &z4), NS).expect("ns"),
    );
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
    z4.expire_session().await.expect("expire user4's session");
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
