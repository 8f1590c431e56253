//! Buggify points in client code fire in simulations that enable them, from the seed.
//!
//! The point in `Election::leader` pauses between listing the candidates and reading the
//! first one's data. When it fires, the leader resigns inside that window, so the observer's
//! read fails with `NoNode` and it looks again (finding nobody); when it does not, the
//! observer reads the leader before the resignation.

use std::sync::Arc;
use std::time::Duration;

use avout::Client;
use avout::recipes::election::Election;
use avout_sim_zk::{LogEvent, RunSummary, Sim, SimCtx};

/// Who the observer saw leading, and whether its read of a resigned leader failed.
async fn resign_while_observed(ctx: SimCtx) -> Option<String> {
    // Each on exactly its simulated session: the run's seeds pick the schedule by index.
    let a = Client::single(Arc::new(ctx.clients[0].clone()));
    let b = Client::single(Arc::new(ctx.clients[1].clone()));
    let leadership = Election::new(&a, "/election")
        .unwrap()
        .campaign()
        .await
        .unwrap();
    let observer = Election::new(&b, "/election").unwrap();
    let look = tokio::spawn(async move { observer.leader().await.unwrap() });
    // Long after an unhindered listing and read (a few ms), well inside a buggify pause.
    tokio::time::sleep(Duration::from_millis(20)).await;
    leadership.resign().await.unwrap();
    look.await.unwrap().map(|leader| leader.node)
}

fn run(seed: u64, buggify: bool) -> (Option<String>, RunSummary) {
    Sim::builder()
        .seed(seed)
        .clients(2)
        .buggify(buggify)
        .build()
        .run(resign_while_observed)
}

#[test]
fn buggify_fires_deterministically_per_seed_and_exposes_the_race() {
    let (mut fired, mut quiet) = (Vec::new(), Vec::new());
    for seed in 0..64 {
        let (seen, first) = run(seed, true);
        let (again, second) = run(seed, true);
        assert_eq!((&seen, first.hash), (&again, second.hash), "seed {seed}");
        assert_eq!(first.buggified, second.buggified, "seed {seed}");
        match first.buggified {
            // The pause let the resignation in: the read failed and the second look found
            // nobody.
            1 => {
                assert_eq!(seen, None, "seed {seed}");
                fired.push(seed);
            }
            0 => {
                assert!(
                    seen.is_some(),
                    "seed {seed}: without the pause the leader is seen"
                );
                quiet.push(seed);
            }
            n => panic!("seed {seed}: the point is reached once, yet fired {n} times"),
        }
    }
    assert!(
        !fired.is_empty() && !quiet.is_empty(),
        "fired {fired:?}, quiet {quiet:?}"
    );
    // Off, the same seeds never fire and always see the leader.
    for &seed in &fired {
        let (seen, summary) = run(seed, false);
        assert_eq!(summary.buggified, 0);
        assert!(seen.is_some());
    }
    // The log names the point that fired.
    let (_, summary) = run(fired[0], true);
    let sites: Vec<&str> = summary
        .log
        .iter()
        .filter_map(|e| match e {
            LogEvent::Buggify { site, .. } => Some(site.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(sites.len(), 1, "{sites:?}");
    assert!(sites[0].contains("recipes/election"), "{sites:?}");
}

#[test]
fn outside_a_simulation_buggify_never_fires() {
    assert!(!avout::buggify::fires());
    // Nor inside one that did not enable it.
    let (fired, summary) = Sim::builder()
        .build()
        .run(|_| async { avout::buggify::fires() });
    assert!(!fired);
    assert_eq!(summary.buggified, 0);
}
