//! The leader selector and the observer of leaders on the simulator, under every fault kind:
//! three selectors whose tasks lead for a while and give up; one task per term, a task that
//! starts after a later term did is cancelled (its leadership was won on a session that had
//! expired unseen), leadership keeps moving, and an observer
//! sees leaders in growing terms and, once every selector is closed, no leader.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::Client;
use avout::recipes::election::{Election, LeaderSelector};
use avout_sim_zk::{FaultRates, Sim};

const PATH: &str = "/selector";

fn run(seed: u64, rates: FaultRates) -> Option<String> {
    let (out, _) = Sim::builder()
        .seed(seed)
        .clients(0)
        .rates(rates)
        .time_limit(Duration::from_secs(3600))
        .build()
        .run(|ctx| async move {
            let watcher = Client::connect(ctx.zk.clone()).await.expect("watcher");
            let election = Election::new(&watcher, PATH).expect("election");
            let mut observer = loop {
                match election.observe().await {
                    Ok(o) => break o,
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            };
            // (term, client, whether the task ran to its end), in the order tasks started.
            let led: Arc<Mutex<Vec<(i64, usize, bool)>>> = Arc::default();
            let mut selectors = Vec::new();
            for i in 0..3usize {
                let client = Client::connect(ctx.zk.clone()).await.expect("client");
                let election = Election::new(&client, PATH)
                    .expect("election")
                    .with_id(format!("c{i}"));
                let led = led.clone();
                let mut x = seed.wrapping_add(i as u64) | 1;
                selectors.push(LeaderSelector::start(election, move |term| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let hold = Duration::from_millis(100 + x % 300);
                    let led = led.clone();
                    async move {
                        let at = {
                            let mut led = led.lock().unwrap();
                            led.push((term, i, false));
                            led.len() - 1
                        };
                        tokio::time::sleep(hold).await;
                        led.lock().unwrap()[at].2 = true;
                    }
                }));
            }
            let mut seen: Vec<i64> = Vec::new();
            let until = tokio::time::Instant::now() + Duration::from_secs(20);
            while tokio::time::Instant::now() < until {
                if let Ok(Some(Some(leader))) =
                    tokio::time::timeout(Duration::from_millis(200), observer.next()).await
                {
                    seen.push(leader.term);
                }
            }
            for s in selectors {
                s.close().await;
            }
            let led = led.lock().unwrap().clone();
            let mut terms: Vec<i64> = led.iter().map(|(t, _, _)| *t).collect();
            // A leadership can start late: won on a session that has expired unseen (a reply
            // sent before the expiry), after the next leader started. It is lost, so its task
            // is cancelled; one that ran to its end after a later term started is a fault.
            let mut highest = i64::MIN;
            for (term, client, finished) in &led {
                if *term < highest && *finished {
                    return Some(format!(
                        "client {client}'s task of term {term} started after term {highest} and                          ran to its end: {led:?}"
                    ));
                }
                highest = highest.max(*term);
            }
            terms.sort_unstable();
            if terms.windows(2).any(|w| w[0] == w[1]) {
                return Some(format!("two tasks led in one term: {led:?}"));
            }
            if led.len() < 5 {
                return Some(format!("only {} leaderships in 20 s: {led:?}", led.len()));
            }
            if seen.windows(2).any(|w| w[0] >= w[1]) {
                return Some(format!("observed terms not growing: {seen:?}"));
            }
            for _ in 0..120 {
                match tokio::time::timeout(Duration::from_millis(500), observer.next()).await {
                    _ if observer.leader().is_none() => return None,
                    _ => {}
                }
            }
            Some(format!(
                "the observer still sees {:?} after every selector closed (error {:?})",
                observer.leader(),
                observer.error()
            ))
        });
    out
}

#[test]
fn leadership_moves_in_growing_terms_under_every_fault_kind() {
    crate::support::every_kind_alone("AVOUT_SELECTOR_SEEDS", 2, 9_820_300_000, |seed, kind| {
        run(seed, crate::support::recipe_rates(kind))
    });
}
