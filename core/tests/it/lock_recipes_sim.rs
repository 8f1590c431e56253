//! The read-write lock, the semaphore and leader election on the simulated ZooKeeper, under
//! every fault kind the simulator injects: the production code, in virtual time, replayable
//! from the seed (printed on failure; `AVOUT_SIM_SEED` overrides the default).
//!
//! The simulator's kernel is the oracle. Each worker, once it believes it holds, is checked
//! against the true state of the tree:
//!
//! - **exclusion**: no two holders whose nodes both still exist overlap (a writer with anyone;
//!   more than N leases; two leaders);
//! - **fencing**: a true writer's or leader's token exceeds every earlier one, so a resource
//!   that keeps the largest token never refuses a true holder and always refuses a stale one;
//! - **downgrades**: a writer that takes the read lock and releases the write lock keeps
//!   excluding writers, including one that queued between its two nodes;
//! - **revocation**: a holder asked to release consents and the contender gets in;
//! - **detection**: a holder whose node is gone (its session expired while it was paused or
//!   cut off) learns it — `lost()` resolves — rather than being trusted.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use crate::support::{one_kind, single, sweep_sim};
use avout::Client;
use avout::lock::{LockError, RwLock};
use avout::recipes::election::Election;
use avout::recipes::semaphore::Semaphore;
use avout_sim_zk::{Fault, FaultKind, FaultRates, Sim, SimClient, SimZk};

const SESSION: Duration = Duration::from_secs(2);

/// Runs per fault kind, each from its own seed.
const SEEDS_PER_KIND: u64 = 4;

/// Rates that make `kind` happen several times in a run of a few hundred requests.
fn rates(kind: FaultKind) -> FaultRates {
    one_kind(kind, [0.03; 7])
}

fn sim(seed: u64, kind: FaultKind, clients: usize) -> Sim {
    sweep_sim(seed, clients, SESSION, rates(kind))
}

/// Whether `node` exists in the service's tree: the truth, not a client's view.
fn alive(zk: &SimZk, node: &str) -> bool {
    zk.with_kernel(|k| k.tree().node(node).is_some())
}

/// What the checker remembers of a run.
#[derive(Default, Debug)]
struct Record {
    /// Who believes it holds now: worker → (node, exclusive?, token).
    inside: BTreeMap<usize, (String, bool, i64)>,
    /// The largest token of a true exclusive holder so far.
    max_token: i64,
    /// Holds (leases, leaderships) entered while their node existed.
    true_holds: u64,
    /// Holds whose node went while the holder believed it held, all detected.
    stale_detected: u64,
    /// A stale holder's write refused by the token (the resource's view).
    fenced: u64,
    /// The most true holders at once.
    max_concurrent: usize,
    /// Writers that downgraded to a read lock.
    downgrades: u64,
}

impl Record {
    /// A worker believes it holds: check it against the tree and the other holders.
    fn enter(
        &mut self,
        zk: &SimZk,
        who: usize,
        node: &str,
        exclusive: bool,
        token: i64,
        max: usize,
    ) {
        let mine = alive(zk, node);
        let mut concurrent = usize::from(mine);
        for (other, (other_node, other_exclusive, _)) in &self.inside {
            if !alive(zk, other_node) {
                continue; // a stale holder: fenced and soon detected
            }
            if mine {
                assert!(
                    !(exclusive || *other_exclusive),
                    "exclusion violated: worker {who} ({node}) and worker {other} ({other_node}) both hold"
                );
                concurrent += 1;
            }
        }
        assert!(
            concurrent <= max,
            "{concurrent} true holders, at most {max} allowed"
        );
        self.max_concurrent = self.max_concurrent.max(concurrent);
        if mine {
            self.true_holds += 1;
            if exclusive {
                assert!(
                    token > self.max_token,
                    "worker {who}: token {token} not above an earlier holder's {}",
                    self.max_token
                );
                self.max_token = token;
            }
        }
        self.inside.insert(who, (node.to_owned(), exclusive, token));
    }

    /// A write guarded by the token, as a resource would accept it.
    fn write(&mut self, zk: &SimZk, node: &str, token: i64) {
        if token >= self.max_token {
            return;
        }
        assert!(!alive(zk, node), "a true holder's write was refused");
        self.fenced += 1;
    }

    fn exit(&mut self, who: usize) {
        self.inside.remove(&who);
    }
}

/// After the critical section: a holder whose node is gone must learn it.
async fn check_detected(
    zk: &SimZk,
    node: &str,
    lost: impl Future<Output = LockError>,
    record: &Rc<RefCell<Record>>,
) {
    if alive(zk, node) {
        return;
    }
    let why = tokio::time::timeout(SESSION * 4, lost)
        .await
        .unwrap_or_else(|_| panic!("the holder of {node} never learnt that it was gone"));
    assert!(
        matches!(
            why,
            LockError::SessionLost(_) | LockError::NodeDeleted { .. }
        ),
        "{why:?}"
    );
    record.borrow_mut().stale_detected += 1;
}

/// Freezes a worker's `client` past its session timeout while it believes it holds:
/// the GC-pause hazard. Its node expires and others take over; it must be fenced and learn it.
async fn pause_past_session(zk: &SimZk, client: usize) {
    zk.inject(Fault::Pause {
        client,
        duration: SESSION * 2,
    });
    tokio::time::sleep(SESSION * 3).await;
}

/// What the runs of one fault kind saw, together: each run is checked for safety, and the
/// runs of a kind together must have exercised what they claim to (faults, stale holders).
#[derive(Default)]
struct Seen {
    faults: u64,
    true_holds: u64,
    stale_detected: u64,
    fenced: u64,
    downgrades: u64,
}

impl Seen {
    fn add(&mut self, faults: u64, record: &Record) {
        self.faults += faults;
        self.true_holds += record.true_holds;
        self.stale_detected += record.stale_detected;
        self.fenced += record.fenced;
        self.downgrades += record.downgrades;
    }
}

fn report(what: &str, kind: FaultKind, seed: u64, faults: u64, record: &Record) {
    eprintln!(
        "{what:>9} {:>14}: seed {seed}, {faults} faults, {} true holds, {} stale detected, {} fenced, max {} at once",
        kind.name(),
        record.true_holds,
        record.stale_detected,
        record.fenced,
        record.max_concurrent
    );
}

/// One worker of a sweep's run: its index, the simulation, the run's record, and its
/// session (replaced after a session loss).
///
/// The worker's client is of exactly its current session ([`Client::single`]), not a
/// managed one: the pause is scheduled on the session's simulated client index, which a
/// managed client's next session would not have.
struct Worker {
    who: usize,
    zk: SimZk,
    record: Rc<RefCell<Record>>,
    session: SimClient,
    client: Client,
}

impl Worker {
    fn new(who: usize, zk: SimZk, record: Rc<RefCell<Record>>, session: SimClient) -> Worker {
        let client = single(&session);
        Worker {
            who,
            zk,
            record,
            session,
            client,
        }
    }

    /// After a lost session, carries on with a new one.
    fn reconnect_if_lost(&mut self, error: &LockError) {
        if matches!(error, LockError::SessionLost(_)) {
            self.session = self.zk.connect();
            self.client = single(&self.session);
        }
    }

    /// The worker believes it holds `node`: checked against the tree and the others.
    fn enter(&self, node: &str, exclusive: bool, token: i64, max: usize) {
        let (zk, who) = (&self.zk, self.who);
        self.record
            .borrow_mut()
            .enter(zk, who, node, exclusive, token, max);
    }

    /// After the critical section: a holder whose node is gone must learn it.
    async fn check_detected(&self, node: &str, lost: impl Future<Output = LockError>) {
        check_detected(&self.zk, node, lost, &self.record).await;
    }

    /// The first round of worker 0 pauses past its session while it holds.
    async fn maybe_pause(&self, done: usize) {
        if self.who == 0 && done == 0 {
            pause_past_session(&self.zk, self.session.index()).await;
        }
    }

    fn exit(&self) {
        self.record.borrow_mut().exit(self.who);
    }
}

/// Runs [`SEEDS_PER_KIND`] simulations of every fault kind (seeds `base + 16 × kind + run`)
/// with `clients` workers running `work`; each kind's runs together must have injected the
/// fault, seen true holds and pass `check`.
fn sweep<W, Fut>(what: &str, base: u64, clients: usize, work: W, check: impl Fn(FaultKind, &Seen))
where
    W: Fn(Worker) -> Fut,
    Fut: Future<Output = ()>,
{
    for (i, kind) in FaultKind::DEFAULT.into_iter().enumerate() {
        let mut seen = Seen::default();
        for run in 0..SEEDS_PER_KIND {
            let seed = base + 16 * i as u64 + run;
            let work = &work;
            let (record, summary) = sim(seed, kind, clients).run(|ctx| async move {
                let record = Rc::new(RefCell::new(Record::default()));
                let workers = ctx.clients.iter().enumerate().map(|(who, c)| {
                    work(Worker::new(who, ctx.zk.clone(), record.clone(), c.clone()))
                });
                futures::future::join_all(workers).await;
                Rc::try_unwrap(record).expect("workers done").into_inner()
            });
            report(what, kind, seed, summary.fault_count(kind), &record);
            seen.add(summary.fault_count(kind), &record);
        }
        assert!(seen.faults > 0, "{kind:?} was injected");
        assert!(seen.true_holds > 0);
        check(kind, &seen);
    }
}

#[test]
fn read_write_lock_excludes_under_every_fault_kind() {
    const ROUNDS: usize = 12;
    let work = |mut w: Worker| async move {
        let writer = w.who < 2;
        let mut done = 0;
        while done < ROUNDS {
            let rw = RwLock::new(&w.client, "/rw").expect("handle");
            let acquired = if writer {
                rw.write().await
            } else {
                rw.read().await
            };
            let guard = match acquired {
                Ok(guard) => guard,
                Err(e) => {
                    w.reconnect_if_lost(&e);
                    continue;
                }
            };
            let (node, token) = (guard.node().to_owned(), guard.fencing_token());
            w.enter(&node, writer, token, usize::MAX);
            tokio::time::sleep(Duration::from_millis(5 + 3 * w.who as u64)).await;
            w.maybe_pause(done).await;
            if writer {
                w.record.borrow_mut().write(&w.zk, &node, token);
            }
            w.check_detected(&node, guard.lost()).await;
            if writer && done % 2 == 1 {
                // Every other round a writer downgrades: it takes the read lock under its
                // write lock, then releases the write lock.
                match rw.read().await {
                    Ok(read) => {
                        w.exit();
                        let _ = guard.unlock().await;
                        let node = read.node().to_owned();
                        w.enter(&node, false, read.fencing_token(), usize::MAX);
                        tokio::time::sleep(Duration::from_millis(7)).await;
                        w.check_detected(&node, read.lost()).await;
                        w.record.borrow_mut().downgrades += 1;
                        w.exit();
                        if let Err(e) = read.unlock().await {
                            w.reconnect_if_lost(&e);
                        }
                        done += 1;
                        continue;
                    }
                    Err(e) => w.reconnect_if_lost(&e),
                }
            }
            w.exit();
            if let Err(e) = guard.unlock().await {
                w.reconnect_if_lost(&e);
            }
            done += 1;
        }
    };
    sweep("rwlock", 0x7e00, 4, work, |_, seen| {
        assert!(seen.stale_detected > 0, "the paused writer was detected");
        assert!(seen.fenced > 0, "the paused writer was fenced");
        assert!(seen.downgrades > 0, "writers downgraded");
    });
}

#[test]
fn semaphore_never_exceeds_its_leases_under_every_fault_kind() {
    const ROUNDS: usize = 10;
    const N: usize = 2;
    let work = |mut w: Worker| async move {
        let mut done = 0;
        while done < ROUNDS {
            let sem = Semaphore::new(&w.client, "/sem", N as u32).expect("sem");
            let lease = match sem.acquire().await {
                Ok(lease) => lease,
                Err(e) => {
                    w.reconnect_if_lost(&e);
                    continue;
                }
            };
            let (node, token) = (lease.node().to_owned(), lease.fencing_token());
            w.enter(&node, false, token, N);
            tokio::time::sleep(Duration::from_millis(5 + 3 * w.who as u64)).await;
            w.maybe_pause(done).await;
            w.check_detected(&node, lease.lost()).await;
            w.exit();
            if let Err(e) = lease.release().await {
                w.reconnect_if_lost(&e);
            }
            done += 1;
        }
    };
    sweep("semaphore", 0x5e00, 4, work, |_, seen| {
        assert!(seen.stale_detected > 0, "the paused holder was detected");
    });
}

#[test]
fn one_leader_per_term_under_every_fault_kind() {
    const TERMS: usize = 8;
    let work = |mut w: Worker| async move {
        let mut done = 0;
        while done < TERMS {
            let election = Election::new(&w.client, "/leader")
                .expect("election")
                .with_id(format!("w{}", w.who));
            let leadership = match election.campaign().await {
                Ok(leadership) => leadership,
                Err(e) => {
                    w.reconnect_if_lost(&e);
                    continue;
                }
            };
            let (node, term) = (leadership.node().to_owned(), leadership.term());
            w.enter(&node, true, term, 1);
            tokio::time::sleep(Duration::from_millis(20 + 7 * w.who as u64)).await;
            w.maybe_pause(done).await;
            w.record.borrow_mut().write(&w.zk, &node, term);
            w.check_detected(&node, leadership.lost()).await;
            if !alive(&w.zk, &node) {
                assert!(
                    !leadership.is_leader(),
                    "a former leader still thinks it leads"
                );
            }
            w.exit();
            if let Err(e) = leadership.resign().await {
                w.reconnect_if_lost(&e);
            }
            done += 1;
        }
    };
    sweep("election", 0xe1e0, 3, work, |_, seen| {
        assert!(seen.stale_detected > 0, "the paused leader was detected");
        assert!(seen.fenced > 0, "the paused leader was fenced");
    });
}

#[test]
fn revocation_is_asked_and_honoured_under_faults() {
    const ROUNDS: usize = 6;
    let kinds = [
        FaultKind::RequestLost,
        FaultKind::ReplyLost,
        FaultKind::Disconnect,
        FaultKind::StaleReads,
        FaultKind::Outage,
    ];
    for (i, kind) in kinds.into_iter().enumerate() {
        let seed = 0x4e70 + i as u64;
        let (honoured, summary) = sim(seed, kind, 2).run(|ctx| async move {
            let holder_zk = single(&ctx.clients[0]);
            let contender_zk = single(&ctx.clients[1]);
            let mut honoured = 0;
            for _ in 0..ROUNDS {
                let holder = RwLock::new(&holder_zk, "/revocable").expect("handle");
                let contender = RwLock::new(&contender_zk, "/revocable").expect("handle");
                let guard = holder.write().await.expect("write");
                let (held, asked) = tokio::sync::oneshot::channel::<()>();
                let holding = async {
                    held.send(()).expect("contender waits");
                    guard.revocation_requested().await.expect("asked");
                    guard.unlock().await.expect("consent");
                };
                let contending = async {
                    asked.await.expect("held");
                    assert!(contender.try_write().await.expect("try").is_none());
                    let revoked = avout::lock::revoke_holders(&contender_zk, "/revocable")
                        .await
                        .expect("revoke");
                    assert_eq!(revoked.len(), 1);
                    let w = contender.write().await.expect("write after consent");
                    w.unlock().await.expect("unlock");
                };
                futures::join!(holding, contending);
                honoured += 1;
            }
            honoured
        });
        eprintln!(
            "revocation {:>14}: seed {seed}, {} faults, {honoured} honoured",
            kind.name(),
            summary.fault_count(kind)
        );
        assert!(summary.fault_count(kind) > 0, "{kind:?} was injected");
        assert_eq!(honoured, ROUNDS);
    }
}

/// A handle whose hold died with its session does not hand out another guard for the dead
/// node. On a client of that one session, reentering after the expiry fails with the
/// session's error; on a managed client (the new semantics), it acquires a new node on the
/// client's next session while the old guard reports the loss.
#[test]
fn reentry_after_expiry_never_joins_a_dead_hold() {
    for managed in [false, true] {
        let sim = Sim::builder()
            .seed(11)
            .clients(1)
            .session_timeout(SESSION)
            .build();
        let ((old, status, again), _) = sim.run(|ctx: avout_sim_zk::SimCtx| async move {
            let zk = Arc::new(ctx.clients[0].clone());
            let client = if managed {
                Client::builder(ctx.zk.clone()).adopt(zk.clone())
            } else {
                Client::single(zk.clone())
            };
            let mutex = avout::lock::Mutex::new(&client, "/locks/reentry").unwrap();
            let held = mutex.lock().await.unwrap();
            ctx.zk.expire_session(avout::Coordination::session(&*zk).id);
            let mut states = avout::Coordination::session_states(&*zk);
            while !states.current().is_terminal() {
                states.next().await;
            }
            let again = mutex.lock().await.map(|g| {
                let node = g.node().to_owned();
                (node.clone(), alive(&ctx.zk, &node), client.generation())
            });
            let old = held.node().to_owned();
            let status = held.status();
            drop(held);
            (old, status, again)
        });
        assert_eq!(status, avout::lock::LockStatus::Lost, "managed: {managed}");
        if managed {
            let (node, alive, generation) = again.expect("the next lock() acquires");
            assert_ne!(node, old, "a new node, not the dead hold");
            assert!(alive, "held on the live session");
            assert_eq!(generation, 2, "on the client's next session");
        } else {
            assert!(
                matches!(again, Err(LockError::SessionLost(_))),
                "reentering a dead hold gave {again:?}"
            );
        }
    }
}
