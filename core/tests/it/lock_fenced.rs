//! A mutex guard's fenced write, on a real standalone ZooKeeper and on the simulator: the ops
//! apply while the lock is held; an op that fails is reported at its own index among the
//! caller's ops (the lock node's check is not counted) and nothing applies; once the lock
//! node is gone the write is refused as a lost lock and applies nothing.

use avout::lock::{LockError, Mutex};
use avout::{Coordination, CoordinationExt, CreateMode, Error, Op, OpResult};
use avout_testkit::backend::Backend;

use crate::support::{client_of, on_both, plain_sim, session_of};

async fn fenced_writes(backend: &dyn Backend) {
    let observer = session_of(backend).await;
    let mutex = Mutex::new(&client_of(backend).await, "/fenced/lock").expect("handle");
    observer
        .ensure_path("/fenced/data")
        .await
        .expect("data dir");
    let guard = mutex.lock().await.expect("lock");

    let results = guard
        .fenced(vec![Op::create(
            "/fenced/data/a",
            b"1".to_vec(),
            CreateMode::Persistent,
        )])
        .await
        .expect("a fenced create while held");
    assert_eq!(
        results.len(),
        1,
        "the check's result is left out: {results:?}"
    );
    assert!(matches!(results[0], OpResult::Create { .. }), "{results:?}");

    // The second of the caller's ops fails: index 1, not 2 (the check is op 0 of the multi).
    let refused = guard
        .fenced(vec![
            Op::create("/fenced/data/b", b"2".to_vec(), CreateMode::Persistent),
            Op::create("/fenced/data/a", b"3".to_vec(), CreateMode::Persistent),
        ])
        .await;
    match refused {
        Err(LockError::Zk(Error::Multi { index, source })) => {
            assert_eq!(index, 1, "the failing op's index among the caller's ops");
            assert!(matches!(*source, Error::NodeExists { .. }), "{source:?}");
        }
        other => panic!("expected the second op refused, got {other:?}"),
    }
    assert!(
        observer
            .exists("/fenced/data/b")
            .await
            .expect("exists")
            .is_none(),
        "nothing of a refused fenced write applies"
    );

    // The lock node deleted behind the holder's back: the write is refused as a lost lock.
    observer
        .delete(guard.node(), None)
        .await
        .expect("delete the lock node");
    let lost = guard
        .fenced(vec![Op::create(
            "/fenced/data/c",
            b"4".to_vec(),
            CreateMode::Persistent,
        )])
        .await;
    assert!(
        matches!(&lost, Err(LockError::NodeDeleted { node }) if node == guard.node()),
        "{lost:?}"
    );
    assert!(
        observer
            .exists("/fenced/data/c")
            .await
            .expect("exists")
            .is_none()
    );
}

on_both!(
    /// Fenced writes: applied while held, a failing op at its own index, refused once lost.
    a_fenced_write_applies_reports_its_failing_op_and_is_refused_once_lost,
    plain_sim(0x3b1),
    |b| fenced_writes(b),
);
