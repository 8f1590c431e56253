//! The multi-lock on the simulator, under every fault kind (the ensemble kinds included):
//! three workers lock overlapping pairs of paths given in cyclic order (`[a, b]`, `[b, c]`,
//! `[c, a]`, which taken in the given order could deadlock). Checked against the kernel's
//! tree: no member lock ever has two believed holders whose nodes both exist, each path's
//! true holders carry growing fencing tokens, and every worker finishes its rounds. A second
//! test expires the session under a held multi-lock: the guard reports the loss and the same
//! handle locks again on the managed client's next session.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use avout::lock::{LockStatus, MultiLock};
use avout::{Client, Coordination};
use avout_sim_zk::{FaultKind, Sim, SimZk};

use crate::support::{every_kind_alone, recipe_sim};

const SETS: [[&str; 2]; 3] = [["/ml/a", "/ml/b"], ["/ml/b", "/ml/c"], ["/ml/c", "/ml/a"]];
const ROUNDS: usize = 5;

fn alive(zk: &SimZk, node: &str) -> bool {
    zk.with_kernel(|k| k.tree().node(node).is_some())
}

/// Who believes it holds what, and the largest true token per lock path.
#[derive(Default)]
struct Record {
    inside: BTreeMap<usize, Vec<(String, String, i64)>>,
    max_token: BTreeMap<String, i64>,
    true_holds: u64,
}

impl Record {
    /// Worker `who` believes it holds `members` (lock path, node, token): check it.
    fn enter(
        &mut self,
        zk: &SimZk,
        who: usize,
        members: Vec<(String, String, i64)>,
    ) -> Option<String> {
        let all_alive = members.iter().all(|(_, node, _)| alive(zk, node));
        for (lock, node, token) in &members {
            if !alive(zk, node) {
                continue;
            }
            for (other, held) in &self.inside {
                for (other_lock, other_node, _) in held {
                    if other_lock == lock && alive(zk, other_node) {
                        return Some(format!(
                            "{lock}: worker {who} ({node}) and worker {other} ({other_node}) both hold"
                        ));
                    }
                }
            }
            let max = self.max_token.entry(lock.clone()).or_default();
            if *token <= *max {
                return Some(format!("{lock}: token {token} not above {max}"));
            }
            *max = *token;
        }
        if all_alive {
            self.true_holds += 1;
        }
        self.inside.insert(who, members);
        None
    }
}

fn run(seed: u64, kind: FaultKind) -> (u64, Result<u64, String>) {
    let (out, summary) = recipe_sim(seed, kind).run(|ctx| async move {
        let record = Rc::new(RefCell::new(Record::default()));
        let workers = SETS.iter().enumerate().map(|(who, set)| {
            let (zk, record) = (ctx.zk.clone(), record.clone());
            async move {
                let client = Client::connect(zk.clone()).await.expect("client");
                let multi = MultiLock::new(&client, *set).expect("handle");
                let mut done = 0;
                let mut failures = 0;
                while done < ROUNDS {
                    let guard = match multi.lock().await {
                        Ok(guard) => guard,
                        Err(e) => {
                            failures += 1;
                            assert!(failures < 200, "worker {who} keeps failing: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    if guard.members().len() != 2 {
                        return Err(format!("worker {who} holds {:?}", guard.fencing_tokens()));
                    }
                    let members = guard
                        .members()
                        .iter()
                        .zip(guard.fencing_tokens())
                        .map(|(g, (lock, token))| (lock, g.node().to_owned(), token))
                        .collect();
                    if let Some(wrong) = record.borrow_mut().enter(&zk, who, members) {
                        return Err(wrong);
                    }
                    tokio::time::sleep(Duration::from_millis(10 + 7 * who as u64)).await;
                    record.borrow_mut().inside.remove(&who);
                    let _ = guard.unlock().await;
                    done += 1;
                }
                Ok(())
            }
        });
        for result in futures::future::join_all(workers).await {
            result?;
        }
        let holds = record.borrow().true_holds;
        Ok(holds)
    });
    (summary.fault_count(kind), out)
}

#[test]
fn no_member_lock_has_two_live_holders_under_every_fault_kind() {
    // Per kind: faults fired, holds taken.
    let mut seen: BTreeMap<FaultKind, (u64, u64)> = BTreeMap::new();
    every_kind_alone("AVOUT_MULTI_LOCK_SEEDS", 2, 9_830_100_000, |seed, kind| {
        let (fired, out) = run(seed, kind);
        let (faults, holds) = seen.entry(kind).or_default();
        *faults += fired;
        out.map(|h| *holds += h).err()
    });
    for kind in FaultKind::ALL {
        let (faults, holds) = seen[&kind];
        assert!(faults > 0, "{kind:?} was injected");
        assert!(holds > 0, "{kind:?}: some holds were true");
    }
}

#[test]
fn a_multi_lock_lost_with_its_session_is_taken_again_on_the_next() {
    let sim = Sim::builder()
        .seed(17)
        .clients(1)
        .session_timeout(Duration::from_secs(2))
        .build();
    let ((status, nodes_alive, generation), _) = sim.run(|ctx| async move {
        let first = Arc::new(ctx.clients[0].clone());
        let client = Client::builder(ctx.zk.clone()).adopt(first.clone());
        let multi = MultiLock::new(&client, ["/ml/x", "/ml/y"]).unwrap();
        let held = multi.lock().await.unwrap();
        ctx.zk.expire_session(first.session().id);
        let lost = tokio::time::timeout(Duration::from_secs(10), held.lost()).await;
        assert!(lost.is_ok(), "the loss is reported");
        let status = held.status();
        drop(held);
        let again = multi.lock().await.expect("locked on the next session");
        let alive = again.members().iter().all(|g| alive(&ctx.zk, g.node()));
        (status, alive, client.generation())
    });
    assert_eq!(status, LockStatus::Lost);
    assert!(nodes_alive, "held on the live session");
    assert_eq!(generation, 2);
}
