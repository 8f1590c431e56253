//! STM test bodies written once, generic over the backend (real ZooKeeper in `stm.rs`, the
//! simulator in `stm.rs`) and over the protocol: every case takes a [`Protocol`] and
//! runs for each of [`protocols`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use avout::stm::{Abort, Protocol, Ref, Stm, StmConfig, StmError};
use avout::{Acl, Client, Coordination, Error};

/// The protocols every generic case runs on.
pub(crate) fn protocols() -> Vec<Protocol> {
    vec![Protocol::Optimistic]
}

/// Whether the protocol validates every read at commit (so write skew cannot happen even
/// without `ensure`). A protocol with snapshot reads (Clojure's) answers `false`.
pub(crate) fn validates_reads(p: Protocol) -> bool {
    match p {
        Protocol::Optimistic => true,
        Protocol::Mvcc => false,
    }
}

pub(crate) async fn open(zk: &Client, root: &str, protocol: Protocol) -> Stm {
    open_with(zk, root, StmConfig::with_protocol(protocol)).await
}

/// [`open`] with `config`.
pub(crate) async fn open_with(zk: &Client, root: &str, config: StmConfig) -> Stm {
    let protocol = config.protocol;
    Stm::open(zk, root, config)
        .await
        .unwrap_or_else(|e| panic!("open {root} ({protocol:?}): {e}"))
}

/// A body error that carries aborts.
#[derive(Debug, PartialEq)]
pub(crate) enum Refused {
    Stm,
    Overdrawn { from: String },
}

impl From<Abort> for Refused {
    fn from(_: Abort) -> Self {
        Refused::Stm
    }
}

/// deref/alter/ref_set/commute/ensure, validators, watchers, body errors and the typed
/// errors of misuse, on one client.
pub(crate) async fn semantics(zk: &Client, root: &str, protocol: Protocol) {
    let stm = open(zk, root, protocol).await;
    let a = stm.make_ref("a", 10i64).await.unwrap();
    let b = stm.make_ref("b", 0i64).await.unwrap();
    // make_ref on an existing ref keeps its value.
    stm.dosync(async |tx| tx.ref_set(&a, 5).await)
        .await
        .unwrap();
    let again = stm.make_ref("a", 999i64).await.unwrap();
    assert_eq!(again.deref().await.unwrap(), 5);

    let seen: Arc<Mutex<Vec<(i64, i64)>>> = Arc::default();
    let log = seen.clone();
    a.add_watch("log", move |old, new| {
        log.lock().unwrap().push((*old, *new))
    });

    // A body's own values, what it reads after writing, and its result.
    let out = stm
        .dosync(async |tx| {
            let x = tx.deref(&a).await?;
            let y = tx.alter(&a, |v| v * 2).await?;
            let z = tx.deref(&a).await?;
            let c = tx.commute(&b, |v| v + 1).await?;
            let e = tx.ensure(&b).await?;
            Ok::<_, Abort>((x, y, z, c, e))
        })
        .await
        .unwrap();
    assert_eq!(out, (5, 10, 10, 1, 1));
    assert_eq!(a.deref().await.unwrap(), 10);
    assert_eq!(b.deref().await.unwrap(), 1);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(5, 10)],
        "watcher after commit, old and new"
    );

    // A validator's rejection names the ref and writes nothing, not even the other ref.
    b.set_validator(|v| *v >= 0);
    let err = stm
        .dosync(async |tx| {
            tx.alter(&a, |v| v + 100).await?;
            tx.alter(&b, |v| v - 50).await?;
            Ok::<_, Abort>(())
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StmError::Invalid { name } if name == "b"),
        "{err:?}"
    );
    assert!(err.is_definite());
    assert_eq!(
        (a.deref().await.unwrap(), b.deref().await.unwrap()),
        (10, 1)
    );
    // The validator also judges commuted values, at commit.
    let err = stm
        .dosync(async |tx| tx.commute(&b, |v| v - 10).await)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StmError::Invalid { name } if name == "b"),
        "{err:?}"
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "no watcher call without a commit"
    );

    // The body's own error is returned and nothing is written.
    let err = stm
        .dosync_with(async |tx| {
            tx.ref_set(&a, 0).await?;
            Err::<(), _>(Refused::Overdrawn { from: "a".into() })
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StmError::Body(Refused::Overdrawn { .. })));
    assert_eq!(a.deref().await.unwrap(), 10);

    // Misuse is a typed error that writes nothing.
    let err = stm
        .dosync(async |tx| {
            tx.ref_set(&a, 1).await?;
            tx.commute(&b, |v| v + 1).await?;
            tx.ref_set(&b, 7).await
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StmError::SetAfterCommute { name } if name == "b"),
        "{err:?}"
    );
    assert_eq!(a.deref().await.unwrap(), 10);
    assert!(matches!(
        stm.make_ref("x/y", 0).await,
        Err(StmError::BadName { .. })
    ));
    let missing: Ref<i64> = stm.get_ref("missing").unwrap();
    assert!(matches!(missing.deref().await, Err(StmError::NoRef { .. })));
    let err = stm
        .dosync(async |tx| tx.deref(&missing).await)
        .await
        .unwrap_err();
    assert!(matches!(err, StmError::NoRef { .. }), "{err:?}");
    let other = open(zk, &format!("{root}-other"), protocol).await;
    let foreign = other.make_ref("f", 0i64).await.unwrap();
    let err = stm
        .dosync(async |tx| tx.deref(&foreign).await)
        .await
        .unwrap_err();
    assert!(matches!(err, StmError::ForeignRef { .. }), "{err:?}");
    let twice: Ref<String> = stm.get_ref("a").unwrap();
    let err = stm
        .dosync(async |tx| {
            tx.deref(&a).await?;
            tx.deref(&twice).await
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StmError::TypeMismatch { .. }), "{err:?}");

    // The root is bound to its protocol.
    for p in Protocol::ALL.into_iter().filter(|p| *p != protocol) {
        let err = Stm::open(zk, root, StmConfig::with_protocol(p))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StmError::ProtocolMismatch { wanted, .. } if *wanted == p),
            "{err:?}"
        );
    }
    assert_eq!(stm.stats().retries, 0, "one client, no conflicts");
}

/// Transfers between `accounts` from every client at once; validators forbid negative
/// balances.
pub(crate) struct BankOutcome {
    pub(crate) committed: u64,
    pub(crate) overdrawn: u64,
    pub(crate) failed: BTreeMap<&'static str, u64>,
    pub(crate) retries: u64,
    /// Commits whose reply was lost, settled by reading.
    pub(crate) recoveries: u64,
}

impl std::fmt::Display for BankOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} committed, {} overdrawn, failed {:?}, {} retries, {} settled after a lost reply",
            self.committed, self.overdrawn, self.failed, self.retries, self.recoveries
        )
    }
}

/// A deterministic pseudo-random stream for workloads (no OS randomness).
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// The name of a failure, for tallies.
pub(crate) fn kind<E>(e: &StmError<E>) -> &'static str {
    match e {
        StmError::Body(_) => "body",
        StmError::RetryLimit { .. } => "retry-limit",
        StmError::Invalid { .. } => "invalid",
        StmError::Indeterminate { .. } => "indeterminate",
        StmError::SessionLost(_) => "session-lost",
        StmError::Zk(_) => "zk",
        _ => "other",
    }
}

pub(crate) async fn bank(
    stms: &[Stm],
    accounts: usize,
    initial: i64,
    transfers_per_client: usize,
    seed: u64,
) -> BankOutcome {
    let committed = AtomicU64::new(0);
    let overdrawn = AtomicU64::new(0);
    let failed: Mutex<BTreeMap<&'static str, u64>> = Mutex::default();
    let mut refs = Vec::new();
    for stm in stms {
        let mut mine = Vec::new();
        for i in 0..accounts {
            let r = stm.make_ref(&format!("acct{i}"), initial).await.unwrap();
            r.set_validator(|b| *b >= 0);
            mine.push(r);
        }
        refs.push(mine);
    }
    let mut counts = Vec::new();
    for stm in stms {
        counts.push(stm.make_ref("transfers", 0i64).await.unwrap());
    }
    let runs = stms
        .iter()
        .zip(&refs)
        .zip(&counts)
        .enumerate()
        .map(|(c, ((stm, accts), count))| {
            let (committed, overdrawn, failed) = (&committed, &overdrawn, &failed);
            async move {
                let mut rng = Lcg(seed ^ (c as u64 + 1).wrapping_mul(0x9e37_79b9));
                for _ in 0..transfers_per_client {
                    let from = rng.below(accounts as u64) as usize;
                    let to = (from + 1 + rng.below(accounts as u64 - 1) as usize) % accounts;
                    let amount = 1 + rng.below(initial as u64 / 2) as i64;
                    let out = stm
                        .dosync(async |tx| {
                            tx.alter(&accts[from], |b| b - amount).await?;
                            tx.alter(&accts[to], |b| b + amount).await?;
                            // Counts the transfers that take effect, without adding conflicts.
                            tx.commute(count, |n| n + 1).await?;
                            Ok::<_, Abort>(())
                        })
                        .await;
                    match out {
                        Ok(()) => committed.fetch_add(1, Ordering::Relaxed),
                        Err(StmError::Invalid { .. }) => overdrawn.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            eprintln!("client {c}: transfer failed: {e}");
                            *failed.lock().unwrap().entry(kind(&e)).or_default() += 1;
                            // A managed client goes on with its next session; a client of
                            // one session has ended with it.
                            if matches!(e, StmError::SessionLost(_)) && stm.client().has_ended() {
                                return;
                            }
                            0
                        }
                    };
                }
            }
        });
    futures::future::join_all(runs).await;
    let retries = stms.iter().map(|s| s.stats().retries).sum();
    let recoveries = stms.iter().map(|s| s.stats().recoveries).sum();
    BankOutcome {
        committed: committed.into_inner(),
        overdrawn: overdrawn.into_inner(),
        failed: failed.into_inner().unwrap(),
        retries,
        recoveries,
    }
}

/// Checks that every acknowledged transfer took effect once, and only those or ones whose
/// outcome was unknown: `committed ≤ count ≤ committed + indefinite failures`.
pub(crate) fn check_count(out: &BankOutcome, count: i64) {
    let indefinite: u64 = out
        .failed
        .iter()
        .filter(|(k, _)| matches!(**k, "indeterminate" | "session-lost"))
        .map(|(_, n)| *n)
        .sum();
    let count = count as u64;
    assert!(
        out.committed <= count && count <= out.committed + indefinite,
        "transfers counted {count}, acknowledged {}, indefinite {indefinite}",
        out.committed
    );
}

/// Checks a bank run under faults (`what` names it in messages): the money is conserved
/// (`total`), transfers committed, and every failure is one a fault may cause (a lost session,
/// an unknown outcome).
pub(crate) fn check_bank_under_faults(out: &BankOutcome, balances: &[i64], total: i64, what: &str) {
    assert_eq!(
        balances.iter().sum::<i64>(),
        total,
        "{what}: money conserved"
    );
    assert!(out.committed > 0, "{what}: transfers committed");
    let unexpected: Vec<_> = out
        .failed
        .keys()
        .filter(|k| !matches!(**k, "session-lost" | "indeterminate"))
        .collect();
    assert!(unexpected.is_empty(), "{what}: {:?}", out.failed);
}

/// Reads every account in one transaction (a consistent snapshot), retrying failures.
pub(crate) async fn audit(stm: &Stm, accounts: usize) -> Vec<i64> {
    audit_with_count(stm, accounts).await.0
}

/// Reads every account and the transfer count in one transaction, retrying failures.
pub(crate) async fn audit_with_count(stm: &Stm, accounts: usize) -> (Vec<i64>, i64) {
    let refs: Vec<Ref<i64>> = (0..accounts)
        .map(|i| stm.get_ref(&format!("acct{i}")).unwrap())
        .chain(std::iter::once(stm.get_ref("transfers").unwrap()))
        .collect();
    for _ in 0..100 {
        let out = stm
            .dosync(async |tx| {
                let mut all = Vec::new();
                for r in &refs {
                    all.push(tx.deref(r).await?);
                }
                Ok::<_, Abort>(all)
            })
            .await;
        match out {
            Ok(mut all) => {
                let count = all.pop().expect("the count");
                return (all, count);
            }
            Err(e) if !matches!(e, StmError::SessionLost(_)) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await
            }
            Err(e) => panic!("audit: {e}"),
        }
    }
    panic!("audit never committed")
}

/// Two "doctors on call": each transaction reads both and, if both are on call, takes itself
/// off. Both run their reads before either commits. With `ensure` at most one goes off
/// call; without it, a protocol that validates reads keeps one on call too, and one with
/// snapshot reads lets both go (write skew). Returns how many remain on call.
pub(crate) async fn on_call(stms: [&Stm; 2], root_tag: &str, use_ensure: bool) -> i64 {
    let barrier = tokio::sync::Barrier::new(2);
    let mut refs = Vec::new();
    for stm in stms {
        let a = stm
            .make_ref(&format!("{root_tag}-alice"), 1i64)
            .await
            .unwrap();
        let b = stm
            .make_ref(&format!("{root_tag}-bob"), 1i64)
            .await
            .unwrap();
        refs.push((a, b));
    }
    let runs = stms
        .iter()
        .zip(&refs)
        .enumerate()
        .map(|(i, (stm, (a, b)))| {
            let barrier = &barrier;
            async move {
                let mut first = true;
                stm.dosync(async |tx| {
                    let (me, other) = if i == 0 { (a, b) } else { (b, a) };
                    let mine = tx.deref(me).await?;
                    let theirs = if use_ensure {
                        tx.ensure(other).await?
                    } else {
                        tx.deref(other).await?
                    };
                    if first {
                        first = false;
                        barrier.wait().await;
                    }
                    if mine + theirs >= 2 {
                        tx.ref_set(me, 0).await?;
                    }
                    Ok::<_, Abort>(())
                })
                .await
                .unwrap();
            }
        });
    futures::future::join_all(runs).await;
    let (a, b) = &refs[0];
    a.deref().await.unwrap() + b.deref().await.unwrap()
}

/// Clients commute one counter at once: every increment lands and no body runs twice.
pub(crate) async fn commutes_never_retry(stms: &[Stm], per_client: u64) -> u64 {
    let runs = stms.iter().map(|stm| async move {
        let hits = stm.make_ref("hits", 0u64).await.unwrap();
        let mut bodies = 0u64;
        for _ in 0..per_client {
            stm.dosync(async |tx| {
                bodies += 1;
                tx.commute(&hits, |n| n + 1).await
            })
            .await
            .unwrap();
        }
        assert_eq!(
            bodies, per_client,
            "a commute never makes the body run again"
        );
    });
    futures::future::join_all(runs).await;
    let hits: Ref<u64> = stms[0].get_ref("hits").unwrap();
    assert_eq!(hits.deref().await.unwrap(), per_client * stms.len() as u64);
    assert!(stms.iter().all(|s| s.stats().retries == 0));
    stms.iter().map(|s| s.stats().commit_redos).sum()
}

/// A transaction whose read is overwritten before every commit fails with the retry limit
/// and writes nothing.
pub(crate) async fn retry_limit(zk: &Client, other_zk: &Client, root: &str, protocol: Protocol) {
    let config = StmConfig {
        retry_limit: 3,
        ..StmConfig::with_protocol(protocol)
    };
    let stm = Stm::open(zk, root, config).await.unwrap();
    let rival = open(other_zk, root, protocol).await;
    let x = stm.make_ref("x", 0i64).await.unwrap();
    let rx: Ref<i64> = rival.get_ref("x").unwrap();
    let mut bodies = 0;
    let err = stm
        .dosync(async |tx| {
            bodies += 1;
            let v = tx.deref(&x).await?;
            rival
                .dosync(async |t2| t2.alter(&rx, |n| n + 1).await)
                .await
                .unwrap();
            tx.ref_set(&x, v + 1000).await
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, StmError::RetryLimit { retries: 3 }),
        "{err:?}"
    );
    assert_eq!(bodies, 4, "the first try and three retries");
    assert_eq!(x.deref().await.unwrap(), 4, "only the rival's increments");
    assert_eq!(stm.stats().retries, 4);
    assert_eq!(stm.stats().commits, 0);
}

/// Protocol Mvcc only: a ZooKeeper refusal while taking a ref's lock (here an ACL on its
/// lock directory that lets nobody create) is that refusal, reported at once. It is not a
/// conflict: no retry can be granted a lock the service refuses to make. Both the commit's
/// write lock (`alter`) and `ensure`'s read lock are tried; each body runs once and nothing
/// is written.
pub(crate) async fn refused_lock_is_the_refusal(zk: &Client, root: &str) {
    let config = StmConfig {
        retry_limit: 3,
        ..StmConfig::with_protocol(Protocol::Mvcc)
    };
    let stm = Stm::open(zk, root, config).await.unwrap();
    let a = stm.make_ref("a", 1i64).await.unwrap();
    let b = stm.make_ref("b", 1i64).await.unwrap();
    // A first commit makes sure the lock directory exists before it is closed.
    stm.dosync(async |tx| tx.alter(&a, |v| v + 1).await)
        .await
        .unwrap();
    zk.set_acl(&format!("{root}/refs/a/lock"), &Acl::read_unsafe(), None)
        .await
        .unwrap();
    let (mut writes, mut ensures) = (0, 0);
    let err = stm
        .dosync(async |tx| {
            writes += 1;
            tx.alter(&a, |v| v + 1).await
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StmError::Zk(Error::NoAuth { .. })),
        "alter: {err:?}"
    );
    let err = stm
        .dosync(async |tx| {
            ensures += 1;
            tx.ensure(&a).await?;
            tx.alter(&b, |v| v + 1).await
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StmError::Zk(Error::NoAuth { .. })),
        "ensure: {err:?}"
    );
    assert_eq!((writes, ensures), (1, 1), "each body ran once: no retry");
    assert_eq!((a.deref().await.unwrap(), b.deref().await.unwrap()), (2, 1));
    assert_eq!(stm.stats().commits, 1);
}

/// The session is closed in the middle of a body: the transaction fails with SessionLost
/// and writes nothing. What the handle does next depends on its client: a client of that one
/// session has ended, so every later use fails with SessionLost; a managed client has opened
/// a new session, on which the next transaction commits (the new semantics of issue 17).
pub(crate) async fn session_loss(zk: &Client, observer: &Client, root: &str, config: StmConfig) {
    let protocol = config.protocol;
    let stm = open_with(zk, root, config).await;
    let watcher = open(observer, root, protocol).await;
    let a = stm.make_ref("a", 1i64).await.unwrap();
    let b = stm.make_ref("b", 1i64).await.unwrap();
    let session = zk.current_session().await.unwrap();
    let err = stm
        .dosync(async |tx| {
            tx.alter(&a, |v| v + 1).await?;
            // The session, not the client: a managed client opens the next one.
            session.close().await.unwrap();
            tx.alter(&b, |v| v + 1).await?;
            Ok::<_, Abort>(())
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StmError::SessionLost(_)), "{err:?}");
    let (oa, ob): (Ref<i64>, Ref<i64>) =
        (watcher.get_ref("a").unwrap(), watcher.get_ref("b").unwrap());
    assert_eq!(
        (oa.deref().await.unwrap(), ob.deref().await.unwrap()),
        (1, 1)
    );
    let read = stm.dosync(async |tx| tx.deref(&a).await).await;
    let write = stm.dosync(async |tx| tx.alter(&a, |v| v + 1).await).await;
    if zk.has_ended() {
        // The handle's one session is gone: every later use says so.
        assert!(
            matches!(read, Err(StmError::SessionLost(_))) || read.is_ok(),
            "a cached read may still serve a read-only single-ref transaction: {read:?}"
        );
        assert!(matches!(write, Err(StmError::SessionLost(_))), "{write:?}");
    } else {
        // The handle carries on, on the client's next session.
        assert_eq!(read.expect("a read on the next session"), 1);
        assert_eq!(write.expect("a commit on the next session"), 2);
        assert_eq!(zk.generation(), session.generation() + 1);
        assert_eq!(
            (oa.deref().await.unwrap(), ob.deref().await.unwrap()),
            (2, 1)
        );
    }
}

/// The message of a caught panic (empty if it carried none).
#[cfg_attr(not(feature = "planted-bugs"), allow(dead_code))]
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// History and Concourse's revert: values at past commit points, newest first, bounded by
/// `max_history`; `revert` is a transaction (watchers fire). A protocol without history
/// says so with `Unsupported`.
pub(crate) async fn history_and_revert(zk: &Client, root: &str, protocol: Protocol) {
    let config = StmConfig {
        max_history: 4,
        ..StmConfig::with_protocol(protocol)
    };
    let stm = Stm::open(zk, root, config).await.unwrap();
    let r = stm.make_ref("h", 0i64).await.unwrap();
    for _ in 0..5 {
        stm.dosync(async |tx| tx.alter(&r, |v| v + 1).await)
            .await
            .unwrap();
    }
    let history = match r.history().await {
        Ok(h) => h,
        Err(StmError::Unsupported { .. }) => {
            assert!(matches!(
                r.revert(1).await,
                Err(StmError::Unsupported { .. })
            ));
            return;
        }
        Err(e) => panic!("history: {e}"),
    };
    let values: Vec<i64> = history.iter().map(|(_, v)| *v).collect();
    assert_eq!(values, vec![5, 4, 3, 2], "newest first, max_history values");
    assert!(
        history.windows(2).all(|w| w[0].0 > w[1].0),
        "points decrease"
    );
    let (point_of_3, _) = history[2];
    assert_eq!(r.value_at(point_of_3).await.unwrap(), Some(3));
    // A point between two commits sees the older one.
    let (point_of_4, _) = history[1];
    if point_of_4 > point_of_3 + 1 {
        assert_eq!(r.value_at(point_of_4 - 1).await.unwrap(), Some(3));
    }
    assert_eq!(
        r.value_at(history[3].0 - 1).await.unwrap(),
        None,
        "older than kept"
    );

    let seen: Arc<Mutex<Vec<(i64, i64)>>> = Arc::default();
    let log = seen.clone();
    r.add_watch("revert", move |old, new| {
        log.lock().unwrap().push((*old, *new))
    });
    assert_eq!(r.revert(point_of_3).await.unwrap(), 3);
    assert_eq!(r.deref().await.unwrap(), 3);
    assert_eq!(*seen.lock().unwrap(), vec![(5, 3)]);
    let after: Vec<i64> = r.history().await.unwrap().iter().map(|(_, v)| *v).collect();
    assert_eq!(after, vec![3, 5, 4, 3]);
    // A revert the validator refuses writes nothing.
    r.set_validator(|v| *v != 4);
    let err = r.revert(point_of_4).await.unwrap_err();
    assert!(matches!(err, StmError::Invalid { .. }), "{err:?}");
    assert_eq!(r.deref().await.unwrap(), 3);
    // Older than the history kept: an error, nothing written.
    assert!(matches!(r.revert(1).await, Err(StmError::NoRef { .. })));
}
