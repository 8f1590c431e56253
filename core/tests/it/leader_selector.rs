//! The leader selector and the observer of leaders, each body on a real standalone ZooKeeper
//! and on the simulator: the task runs when elected, is cancelled when the leadership is lost
//! to a session expiry, and the selector stands again on the managed client's next session;
//! an observer sees each new leader. And three selectors whose tasks lead for a while and give
//! up (on the simulator under every fault kind): one task per term, a task that starts after a
//! later term did is cancelled (its leadership was won on a session that had expired unseen),
//! leadership keeps moving, and an observer sees leaders in growing terms and, once every
//! selector is closed, no leader.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::recipes::election::{Election, LeaderSelector};
use avout_testkit::backend::Backend;
use tokio::sync::mpsc;

use crate::support::{
    self, client_of, every_kind_alone, expire, on_both, plain_sim, recipe_sim, simulate,
};

const WITHIN: Duration = Duration::from_secs(15);

async fn next(rx: &mut mpsc::UnboundedReceiver<(i64, &'static str)>) -> (i64, &'static str) {
    tokio::time::timeout(WITHIN, rx.recv())
        .await
        .expect("in time")
        .expect("open")
}

/// One selector: cancelled with its leadership on expiry, leading again on the next session.
async fn cancelled_on_expiry_and_leads_again(backend: &dyn Backend) {
    let client = client_of(backend).await;
    let watcher = client_of(backend).await;
    let mut observer = Election::new(&watcher, "/sel/real")
        .expect("election")
        .observe()
        .await
        .expect("observe");
    assert_eq!(observer.next().await, Some(None), "nobody leads yet");

    // Each task reports its start, then its end or its cancellation (its guard dropped).
    let (tx, mut rx) = mpsc::unbounded_channel::<(i64, &'static str)>();
    struct Guard(i64, mpsc::UnboundedSender<(i64, &'static str)>);
    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = self.1.send((self.0, "stopped"));
        }
    }
    let election = Election::new(&client, "/sel/real")
        .expect("election")
        .with_id("me");
    let selector = LeaderSelector::start(election, move |term| {
        let tx = tx.clone();
        async move {
            let _ = tx.send((term, "started"));
            let _guard = Guard(term, tx);
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    });
    let (term, what) = next(&mut rx).await;
    assert_eq!(what, "started");
    assert_eq!(
        selector.leading(),
        Some(term),
        "its task's term while it runs"
    );
    let seen = tokio::time::timeout(WITHIN, observer.next())
        .await
        .expect("observed");
    let leader = seen.expect("running").expect("a leader");
    assert_eq!(
        (leader.term, leader.id.as_slice()),
        (term, b"me".as_slice())
    );

    expire(backend, &client).await;
    assert_eq!(
        next(&mut rx).await,
        (term, "stopped"),
        "cancelled with the leadership"
    );
    let (again, what) = next(&mut rx).await;
    assert_eq!(what, "started");
    assert!(again > term, "a later term on the next session");
    assert_eq!(selector.leading(), Some(again));
    assert_eq!(client.generation(), 2);

    selector.close().await;
    assert_eq!(
        next(&mut rx).await,
        (again, "stopped"),
        "cancelled on close"
    );
    support::eventually("no leader once closed", WITHIN, || async {
        observer.leader().is_none().then_some(())
    })
    .await;
}

const PATH: &str = "/selector";

/// Three selectors lead in turn for 20 s while an observer watches; says what was wrong, if
/// anything.
async fn leadership_moves(backend: &dyn Backend, seed: u64) -> Option<String> {
    let watcher = client_of(backend).await;
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
        let client = client_of(backend).await;
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
                "client {client}'s task of term {term} started after term {highest} and \
                 ran to its end: {led:?}"
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
}

on_both!(
    /// Cancelled on expiry, leading again on the next session.
    a_selector_is_cancelled_on_expiry_and_leads_again,
    plain_sim(0x5e1e),
    |b| cancelled_on_expiry_and_leads_again(b),
);

on_both!(
    /// Three selectors, no fault.
    leadership_moves_in_growing_terms,
    plain_sim(0x5e1f),
    |b| async { assert_eq!(leadership_moves(b, 7).await, None) },
);

#[test]
fn leadership_moves_in_growing_terms_under_every_fault_kind() {
    every_kind_alone("AVOUT_SELECTOR_SEEDS", 2, 9_820_300_000, |seed, kind| {
        simulate(&recipe_sim(seed, kind), async |b| {
            leadership_moves(b, seed).await
        })
        .0
    });
}
