//! The shared value and count, each body on a real standalone ZooKeeper and on the simulator:
//! seeded once, set, compare-and-set on the version seen, each change heard by another
//! process, and followed across an expiry of a managed client's session; and clients that
//! increment the count with `try_set` on the version they saw (on the simulator under every
//! fault kind): no increment is lost or applied twice (the final count lies between those
//! acknowledged and those plus the ones in doubt), each client hears strictly newer versions,
//! and every client's view converges to the node.

use std::time::Duration;

use avout::Client;
use avout::recipes::shared_value::{SharedCount, SharedValue};
use avout_testkit::backend::Backend;

use crate::support::{
    self, client_of, clients_of, every_kind_alone, expire, node_of, on_both, plain_sim, recipe_sim,
    simulate,
};

const WITHIN: Duration = Duration::from_secs(15);

/// Seeded once, set, compare-and-set, heard by another process, followed across an expiry.
async fn semantics(backend: &dyn Backend) {
    let (a, b) = (client_of(backend).await, client_of(backend).await);
    let count = SharedCount::start(&a, "/shared/real/n", 5)
        .await
        .expect("a");
    let mut other = SharedCount::start(&b, "/shared/real/n", 99)
        .await
        .expect("b");
    assert_eq!(other.get().expect("seeded").value, 5, "seeded once");

    let seen = count.get().expect("there");
    assert!(count.try_set(&seen, 6).await.expect("cas"));
    assert!(
        !count.try_set(&seen, 7).await.expect("stale cas"),
        "an old version is refused"
    );
    let heard = tokio::time::timeout(WITHIN, other.next_change())
        .await
        .expect("heard in time")
        .expect("running")
        .expect("set");
    assert_eq!((heard.value, heard.version), (6, 1));

    expire(backend, &a).await;
    support::eventually("set on the next session", WITHIN, || async {
        count.set(42).await.ok()
    })
    .await;
    let heard = tokio::time::timeout(WITHIN, other.next_change())
        .await
        .expect("heard in time")
        .expect("running")
        .expect("set");
    assert_eq!(heard.value, 42);
    support::eventually("the expired side follows too", WITHIN, || async {
        (count.get()?.value == 42).then_some(())
    })
    .await;
    assert_eq!(a.generation(), 2);

    let bytes = SharedValue::start(&b, "/shared/real/v", b"x")
        .await
        .expect("value");
    bytes.set(b"y").await.expect("set");
    support::eventually("value seen", WITHIN, || async {
        (bytes.get()?.value == b"y").then_some(())
    })
    .await;
    bytes.close().await;
    count.close().await;
    other.close().await;
}

const PATH: &str = "/shared/count";

/// The count and its version as the service holds them.
async fn truth(backend: &dyn Backend) -> Option<(i64, i32)> {
    let (data, stat) = node_of(backend, PATH).await?;
    let bytes: [u8; 8] = data.as_slice().try_into().expect("a count");
    Some((i64::from_be_bytes(bytes), stat.version))
}

/// Starts the count on `client`, retrying what a fault refuses.
async fn start(client: &Client) -> SharedCount {
    loop {
        match SharedCount::start(client, PATH, 0).await {
            Ok(c) => return c,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// What one client did: increments acknowledged, increments in doubt, versions heard.
struct Done {
    ok: i64,
    doubt: i64,
    heard: Vec<i32>,
}

async fn incrementer(client: Client, n: usize) -> Done {
    let mut count = start(&client).await;
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

/// Three clients increment the count ten times each while a fourth watches; says what was
/// wrong, if anything.
async fn increments(backend: &dyn Backend) -> Option<String> {
    let clients = clients_of(backend, 3).await;
    let mut view = start(&clients[0]).await;
    let done = futures::future::join_all(clients.into_iter().map(|c| incrementer(c, 10))).await;
    let ok: i64 = done.iter().map(|d| d.ok).sum();
    let doubt: i64 = done.iter().map(|d| d.doubt).sum();
    if ok + doubt != 30 {
        return Some(format!(
            "{ok} acknowledged and {doubt} in doubt of 30 increments"
        ));
    }
    let (final_count, version) = truth(backend).await.expect("the count stands");
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
}

on_both!(
    /// Seeded once, set, compared, heard, followed across an expiry.
    a_shared_count_is_set_compared_and_heard,
    plain_sim(0x5a1e),
    |b| semantics(b),
);

on_both!(
    /// Concurrent increments, no fault.
    increments_are_neither_lost_nor_doubled,
    plain_sim(0x5a1f),
    |b| async { assert_eq!(increments(b).await, None) },
);

#[test]
fn increments_are_neither_lost_nor_doubled_under_every_fault_kind() {
    every_kind_alone("AVOUT_SHARED_SEEDS", 2, 9_820_200_000, |seed, kind| {
        simulate(&recipe_sim(seed, kind), async |b| increments(b).await).0
    });
}
