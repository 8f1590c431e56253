//! Quantity acquisitions of the semaphore on the simulator, under every fault kind (the
//! ensemble kinds included): three workers take 1, 2 and 3 leases of a semaphore of 3, over
//! and over. Checked against the kernel's tree: the leases of believed holders whose nodes
//! exist never exceed 3, every acquisition returns exactly the quantity asked, and the
//! workers (which could deadlock if two took part of what they want and waited for the rest)
//! all finish. A second test expires the session under held leases: they are reported lost,
//! and the same handle acquires again on the managed client's next session.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use avout::lock::LockStatus;
use avout::recipes::semaphore::Semaphore;
use avout::{Client, Coordination};
use avout_sim_zk::{FaultKind, Sim, SimZk};

use crate::support::{every_kind_alone, recipe_sim};

const MAX: u32 = 3;
const ROUNDS: usize = 5;

fn alive(zk: &SimZk, node: &str) -> bool {
    zk.with_kernel(|k| k.tree().node(node).is_some())
}

fn run(seed: u64, kind: FaultKind) -> (u64, Result<usize, String>) {
    let (out, summary) = recipe_sim(seed, kind).run(|ctx| async move {
        let inside: Rc<RefCell<BTreeMap<usize, Vec<String>>>> = Rc::default();
        let most = Rc::new(RefCell::new(0));
        let workers = (0..3usize).map(|who| {
            let (zk, inside, most) = (ctx.zk.clone(), inside.clone(), most.clone());
            async move {
                let client = Client::connect(zk.clone()).await.expect("client");
                let sem = Semaphore::new(&client, "/sem/many", MAX).expect("handle");
                let want = who as u32 + 1;
                let (mut done, mut failures) = (0, 0);
                while done < ROUNDS {
                    let leases = match sem.acquire_many(want).await {
                        Ok(leases) => leases,
                        Err(e) => {
                            failures += 1;
                            assert!(failures < 200, "worker {who} keeps failing: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    if leases.len() != want as usize {
                        return Err(format!("asked {want} leases, got {}", leases.len()));
                    }
                    let nodes: Vec<String> = leases.iter().map(|l| l.node().to_owned()).collect();
                    inside.borrow_mut().insert(who, nodes);
                    let held = inside
                        .borrow()
                        .values()
                        .flatten()
                        .filter(|n| alive(&zk, n))
                        .count();
                    if held > MAX as usize {
                        return Err(format!("{held} leases truly held, at most {MAX}"));
                    }
                    let top = most.borrow().max(inside.borrow().len());
                    *most.borrow_mut() = top;
                    tokio::time::sleep(Duration::from_millis(10 + 5 * who as u64)).await;
                    inside.borrow_mut().remove(&who);
                    for lease in leases {
                        let _ = lease.release().await;
                    }
                    done += 1;
                }
                Ok(())
            }
        });
        for result in futures::future::join_all(workers).await {
            result?;
        }
        let most = *most.borrow();
        Ok(most)
    });
    (summary.fault_count(kind), out)
}

#[test]
fn quantity_acquisitions_never_exceed_the_leases_under_every_fault_kind() {
    // Per kind: faults fired, the most leases held at once.
    let mut seen: BTreeMap<FaultKind, (u64, usize)> = BTreeMap::new();
    every_kind_alone(
        "AVOUT_SEMAPHORE_MANY_SEEDS",
        2,
        9_830_200_000,
        |seed, kind| {
            let (fired, out) = run(seed, kind);
            let (faults, most) = seen.entry(kind).or_default();
            *faults += fired;
            out.map(|held| *most = (*most).max(held)).err()
        },
    );
    for kind in FaultKind::ALL {
        let (faults, most) = seen[&kind];
        assert!(faults > 0, "{kind:?} was injected");
        assert!(
            most >= 2,
            "{kind:?}: holders overlapped (at most {most} at once)"
        );
    }
}

#[test]
fn leases_lost_with_their_session_are_taken_again_on_the_next() {
    let sim = Sim::builder()
        .seed(23)
        .clients(1)
        .session_timeout(Duration::from_secs(2))
        .build();
    let ((status, count, alive_now, generation), _) = sim.run(|ctx| async move {
        let first = Arc::new(ctx.clients[0].clone());
        let client = Client::builder(ctx.zk.clone()).adopt(first.clone());
        let sem = Semaphore::new(&client, "/sem/expiry", 2).unwrap();
        let held = sem.acquire_many(2).await.unwrap();
        ctx.zk.expire_session(first.session().id);
        let lost = tokio::time::timeout(Duration::from_secs(10), held[0].lost()).await;
        assert!(lost.is_ok(), "the loss is reported");
        let status = held[1].status();
        drop(held);
        let again = sem
            .acquire_many(2)
            .await
            .expect("acquired on the next session");
        let alive_now = again.iter().all(|l| alive(&ctx.zk, l.node()));
        (status, again.len(), alive_now, client.generation())
    });
    assert_eq!(status, LockStatus::Lost);
    assert_eq!(count, 2);
    assert!(alive_now, "held on the live session");
    assert_eq!(generation, 2);
}
