//! The shared count on the simulator, under every fault kind: clients increment it with
//! `try_set` on the version they saw; no increment is lost or applied twice (the final count
//! lies between those acknowledged and those plus the ones in doubt), each client hears
//! strictly newer versions, and every client's view converges to the node.

use std::time::Duration;

use avout::Client;
use avout::recipes::shared_value::SharedCount;
use avout_sim_zk::{FaultRates, Sim, SimZk};

const PATH: &str = "/shared/count";

fn truth(zk: &SimZk) -> Option<(i64, i32)> {
    zk.with_kernel(|k| {
        k.tree().nodes().find(|(p, _)| *p == PATH).map(|(_, n)| {
            let bytes: [u8; 8] = n.data.as_slice().try_into().expect("a count");
            (i64::from_be_bytes(bytes), n.stat.version)
        })
    })
}

/// What one client did: increments acknowledged, increments in doubt, versions heard.
struct Done {
    ok: i64,
    doubt: i64,
    heard: Vec<i32>,
}

async fn incrementer(client: Client, n: usize) -> Done {
    let mut count = loop {
        match SharedCount::start(&client, PATH, 0).await {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    let mut done = Done {
        ok: 0,
        doubt: 0,
        heard: Vec::new(),
    };
    for _ in 0..n {
        for _ in 0..500 {
            while let Ok(Ok(Some(v))) =
                tokio::time::timeout(Duration::ZERO, count.next_change()).await
            {
                done.heard.push(v.version);
            }
            let Some(seen) = count.get() else {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            };
            match count.try_set(&seen, seen.value + 1).await {
                Ok(true) => {
                    done.ok += 1;
                    break;
                }
                Ok(false) => tokio::time::sleep(Duration::from_millis(5)).await,
                Err(e) if e.is_rejected() => panic!("rejected: {e}"),
                Err(_) => {
                    // May have been applied: count it as in doubt, and move on.
                    done.doubt += 1;
                    break;
                }
            }
        }
    }
    done
}

fn run(seed: u64, rates: FaultRates) -> Option<String> {
    let (out, _) = Sim::builder()
        .seed(seed)
        .clients(0)
        .rates(rates)
        .time_limit(Duration::from_secs(3600))
        .build()
        .run(|ctx| async move {
            let mut clients = Vec::new();
            for _ in 0..3 {
                clients.push(Client::connect(ctx.zk.clone()).await.expect("client"));
            }
            let watcher = clients[0].clone();
            let mut view = loop {
                match SharedCount::start(&watcher, PATH, 0).await {
                    Ok(c) => break c,
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            };
            let done =
                futures::future::join_all(clients.into_iter().map(|c| incrementer(c, 10))).await;
            let ok: i64 = done.iter().map(|d| d.ok).sum();
            let doubt: i64 = done.iter().map(|d| d.doubt).sum();
            if ok + doubt != 30 {
                return Some(format!(
                    "{ok} acknowledged and {doubt} in doubt of 30 increments"
                ));
            }
            let (final_count, version) = truth(&ctx.zk).expect("the count stands");
            if final_count < ok || final_count > ok + doubt {
                return Some(format!(
                    "count {final_count}, {ok} acknowledged, {doubt} in doubt"
                ));
            }
            for (i, d) in done.iter().enumerate() {
                if d.heard.windows(2).any(|w| w[0] >= w[1]) {
                    return Some(format!("client {i} heard versions {:?}", d.heard));
                }
            }
            for _ in 0..120 {
                if view.get().map(|v| (v.value, v.version)) == Some((final_count, version)) {
                    return None;
                }
                let _ = tokio::time::timeout(Duration::from_millis(500), view.next_change()).await;
            }
            Some(format!(
                "the view {:?} never reached {final_count} at version {version} (error {:?})",
                view.get(),
                view.error()
            ))
        });
    out
}

#[test]
fn increments_are_neither_lost_nor_doubled_under_every_fault_kind() {
    crate::support::every_kind_alone("AVOUT_SHARED_SEEDS", 2, 9_820_200_000, |seed, kind| {
        run(seed, crate::support::recipe_rates(kind))
    });
}
