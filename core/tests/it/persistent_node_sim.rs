//! The persistent node on the simulator, under every fault kind: a vandal deletes it again
//! and again while the owner's managed client loses connections and sessions; once the
//! vandal stops, the node stands, with the handle's latest data, owned by the owner's current
//! session. A TTL node is touched while kept and reaped once its handle is dropped.

use std::time::Duration;

use avout::recipes::persistent_node::PersistentNode;
use avout::{Client, Coordination, CreateMode, Stat};
use avout_sim_zk::{FaultKind, FaultRates, Sim, SimZk};

const PATH: &str = "/pn/services/me";

/// The node as the service holds it.
fn truth(zk: &SimZk, path: &str) -> Option<(Vec<u8>, Stat)> {
    zk.with_kernel(|k| {
        k.tree()
            .nodes()
            .find(|(p, _)| *p == path)
            .map(|(_, n)| (n.data.clone(), n.stat))
    })
}

/// One run: returns the faults fired and a description of what was wrong, if anything.
fn run(seed: u64, rates: FaultRates, mode: CreateMode) -> (u64, Option<String>) {
    let (out, _) = Sim::builder()
        .seed(seed)
        .clients(0)
        .rates(rates)
        .time_limit(Duration::from_secs(3600))
        .build()
        .run(|ctx| async move {
            let owner = Client::connect(ctx.zk.clone()).await.expect("owner");
            let vandal = Client::connect(ctx.zk.clone()).await.expect("vandal");
            let node = PersistentNode::start(&owner, PATH, b"v0", mode, None).expect("start");
            let mut x = seed | 1;
            for step in 1..=30u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                tokio::time::sleep(Duration::from_millis(100 + x % 400)).await;
                if x.is_multiple_of(3) {
                    let data = format!("v{step}");
                    // A lost connection may leave it unsent: the wanted data changes anyway.
                    let _ = node.set_data(data.as_bytes()).await;
                } else {
                    let _ = vandal.delete(PATH, None).await;
                }
            }
            let wanted = node.data();
            let mut last = String::new();
            for _ in 0..120 {
                let session = owner.session().id.0;
                match truth(&ctx.zk, PATH) {
                    Some((data, stat))
                        if data == wanted
                            && (mode != CreateMode::Ephemeral
                                || stat.ephemeral_owner == session)
                            && node.stat().is_some_and(|s| s.czxid == stat.czxid) =>
                    {
                        last.clear();
                        break;
                    }
                    found => {
                        last = format!(
                            "node {found:?}, wanted data {wanted:?}, owner session {session:#x}, \
                             handle's stat {:?}, error {:?}",
                            node.stat(),
                            node.error()
                        );
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            let faults = FaultKind::ALL.iter().map(|k| ctx.zk.fault_count(*k)).sum();
            let closed = node.close().await;
            let after = truth(&ctx.zk, PATH);
            if last.is_empty() && closed.is_ok() && after.is_some() {
                last = format!("closed, yet the node stands: {after:?}");
            }
            (faults, (!last.is_empty()).then_some(last))
        });
    out
}

#[test]
fn an_ephemeral_node_comes_back_under_every_fault_kind() {
    for (k, kind) in FaultKind::ALL.into_iter().enumerate() {
        for n in 0..crate::support::seeds_from_env("AVOUT_PN_SEEDS", 3, 1_000) {
            let seed = 9_820_100_000 + k as u64 * 1_000 + n;
            let (faults, wrong) = run(
                seed,
                crate::support::recipe_rates(kind),
                CreateMode::Ephemeral,
            );
            assert!(
                wrong.is_none(),
                "{kind:?}, seed {seed} ({faults} faults): {}",
                wrong.unwrap_or_default()
            );
        }
    }
}

#[test]
fn a_persistent_node_comes_back_under_every_fault_kind() {
    for (k, kind) in FaultKind::ALL.into_iter().enumerate() {
        let seed = 9_820_110_000 + k as u64 * 100;
        let (faults, wrong) = run(
            seed,
            crate::support::recipe_rates(kind),
            CreateMode::Persistent,
        );
        assert!(
            wrong.is_none(),
            "{kind:?}, seed {seed} ({faults} faults): {}",
            wrong.unwrap_or_default()
        );
    }
}

#[test]
fn a_ttl_node_is_touched_while_kept_and_reaped_once_dropped() {
    let ((), _) = Sim::builder()
        .seed(9_820_120_000)
        .clients(0)
        .build()
        .run(|ctx| async move {
            let owner = Client::connect(ctx.zk.clone()).await.expect("owner");
            let ttl = Duration::from_secs(2);
            let node =
                PersistentNode::start(&owner, PATH, b"t", CreateMode::PersistentWithTtl, Some(ttl))
                    .expect("start");
            node.wait_created(Duration::from_secs(5))
                .await
                .expect("created");
            // Five TTLs: untouched, the server would have reaped it.
            tokio::time::sleep(ttl * 5).await;
            let (data, stat) = truth(&ctx.zk, PATH).expect("kept past its TTL");
            assert_eq!(data, b"t");
            assert!(
                stat.version >= 4,
                "touched every half TTL: version {}",
                stat.version
            );
            drop(node);
            tokio::time::sleep(ttl * 3).await;
            assert_eq!(truth(&ctx.zk, PATH), None, "reaped once no longer touched");
        });
}

#[test]
fn a_single_session_client_stops_with_the_expiry() {
    let ((), _) = Sim::builder()
        .seed(9_820_130_000)
        .clients(1)
        .build()
        .run(|ctx| async move {
            let owner = Client::single(std::sync::Arc::new(ctx.clients[0].clone()));
            let node = PersistentNode::start(&owner, PATH, b"x", CreateMode::Ephemeral, None)
                .expect("start");
            node.wait_created(Duration::from_secs(5))
                .await
                .expect("created");
            ctx.zk.expire_session(ctx.clients[0].session().id);
            for _ in 0..100 {
                if node.error().is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert_eq!(node.error(), Some(avout::Error::SessionExpired));
            assert_eq!(node.stat(), None);
        });
}
