//! The queue on the simulated ZooKeeper under injected faults — above all reply-lost (the
//! request applied, its reply dropped), the case the receipts exist for — checking that every
//! element is delivered exactly once and in order per producer, over many seeds.
//!
//! A failing seed is printed by the simulator; rerun one seed with `AVOUT_SIM_SEED=<seed>`.

use std::collections::BTreeMap;
use std::time::Duration;

use avout::Client;
use avout::recipes::queue::{PriorityQueue, Queue};
use avout_sim_zk::{FaultKind, FaultRates, RunSummary, Sim};

use crate::support::{sim_client, single};

const PRODUCERS: usize = 2;
const CONSUMERS: usize = 3;
const EACH: usize = 25;

/// What one run delivered: per consumer, the (producer, index) pairs in the order taken.
type Deliveries = Vec<Vec<(usize, usize)>>;

fn parse(data: &[u8]) -> (usize, usize) {
    let text = std::str::from_utf8(data).expect("utf-8");
    let (p, i) = text[1..].split_once('-').expect("p<n>-<i>");
    (p.parse().expect("producer"), i.parse().expect("index"))
}

fn queue(client: &Client) -> Queue {
    Queue::new(client, "/sim/jobs").expect("queue")
}

/// Producers and consumers run concurrently; afterwards a fresh consumer drains what is left
/// (consumers give up after a quiet spell, possibly before the last puts).
fn run(seed: u64, rates: FaultRates) -> (Deliveries, RunSummary) {
    let sim = Sim::builder()
        .seed(seed)
        .clients(PRODUCERS + CONSUMERS)
        .session_timeout(Duration::from_secs(10))
        .rates(rates)
        .keep_log(false)
        .time_limit(Duration::from_secs(3600))
        .build();
    sim.run(|ctx| async move {
        let produce = ctx.clients[..PRODUCERS].iter().enumerate().map(|(p, c)| {
            let q = queue(&single(c));
            async move {
                for i in 0..EACH {
                    q.put(format!("p{p}-{i}").as_bytes()).await.expect("put");
                }
            }
        });
        let consume = ctx.clients[PRODUCERS..].iter().map(|c| {
            let q = queue(&single(c));
            async move {
                let mut got = Vec::new();
                while let Some(e) = q.take_for(Duration::from_secs(2)).await.expect("take") {
                    got.push(parse(&e.data));
                }
                got
            }
        });
        let (_, mut taken) = futures::join!(
            futures::future::join_all(produce),
            futures::future::join_all(consume)
        );
        let last = queue(&single(&ctx.clients[PRODUCERS]));
        let mut rest = Vec::new();
        while let Some(e) = last.try_take().await.expect("drain") {
            rest.push(parse(&e.data));
        }
        taken.push(rest);
        taken
    })
}

fn check(seed: u64, taken: &Deliveries) {
    let mut seen: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for (c, got) in taken.iter().enumerate() {
        for p in 0..PRODUCERS {
            let mine: Vec<usize> = got
                .iter()
                .filter(|(q, _)| *q == p)
                .map(|(_, i)| *i)
                .collect();
            assert!(
                mine.windows(2).all(|w| w[0] < w[1]),
                "seed {seed}: consumer {c} got producer {p}'s elements out of order: {mine:?}"
            );
        }
        for &key in got {
            *seen.entry(key).or_default() += 1;
        }
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "seed {seed}: delivered twice: {twice:?}");
    let missing: Vec<_> = (0..PRODUCERS)
        .flat_map(|p| (0..EACH).map(move |i| (p, i)))
        .filter(|k| !seen.contains_key(k))
        .collect();
    assert!(missing.is_empty(), "seed {seed}: lost: {missing:?}");
}

#[test]
fn exactly_once_under_reply_lost_faults() {
    let rates = FaultRates {
        reply_lost: 0.05,
        ..FaultRates::default()
    };
    let mut lost_replies = 0;
    for seed in 0..24 {
        let (taken, summary) = run(seed, rates);
        check(seed, &taken);
        lost_replies += summary.fault_count(FaultKind::ReplyLost);
    }
    assert!(
        lost_replies > 100,
        "the faults fired: {lost_replies} replies lost"
    );
}

#[test]
fn exactly_once_under_lost_requests_disconnects_and_outages() {
    let rates = FaultRates {
        reply_lost: 0.03,
        request_lost: 0.03,
        disconnect: 0.005,
        outage: 0.002,
        ..FaultRates::default()
    };
    let mut fired: BTreeMap<FaultKind, u64> = BTreeMap::new();
    for seed in 100..116 {
        let (taken, summary) = run(seed, rates);
        check(seed, &taken);
        for (kind, n) in summary.faults {
            *fired.entry(kind).or_default() += n;
        }
    }
    for kind in [
        FaultKind::ReplyLost,
        FaultKind::RequestLost,
        FaultKind::Disconnect,
        FaultKind::Outage,
    ] {
        assert!(
            fired.get(&kind).copied().unwrap_or(0) > 0,
            "{kind:?} fired: {fired:?}"
        );
    }
}

#[test]
fn a_priority_queue_keeps_its_order_under_reply_lost_faults() {
    let rates = FaultRates {
        reply_lost: 0.1,
        ..FaultRates::default()
    };
    for seed in 200..208 {
        let sim = Sim::builder()
            .seed(seed)
            .clients(2)
            .rates(rates)
            .keep_log(false)
            .build();
        let (order, _) = sim.run(|ctx| async move {
            let producer =
                PriorityQueue::new(&single(&ctx.clients[0]), "/sim/prio").expect("queue");
            let consumer =
                PriorityQueue::new(&single(&ctx.clients[1]), "/sim/prio").expect("queue");
            for i in 0..12u8 {
                producer.put(i % 3, &[i]).await.expect("put");
            }
            let mut order = Vec::new();
            while let Some(e) = consumer.try_take().await.expect("take") {
                order.push(e.data[0]);
            }
            order
        });
        let mut expected: Vec<u8> = (0..12).collect();
        expected.sort_by_key(|i| (i % 3, *i));
        assert_eq!(order, expected, "seed {seed}");
    }
}

#[test]
fn exactly_once_when_reconnecting_to_a_lagging_follower() {
    // Reads from a lagging follower: listings and element reads may be stale. (The
    // simulator's follower catches up with a session's own writes, so the case the `sync`
    // before a receipt check exists for — a session reconnected to a follower that has not
    // applied its lost write — is pinned by the machines' golden tests, not here.)
    let rates = FaultRates {
        reply_lost: 0.05,
        stale_reads: 0.02,
        ..FaultRates::default()
    };
    let mut stale = 0;
    for seed in 300..316 {
        let (taken, summary) = run(seed, rates);
        check(seed, &taken);
        stale += summary.fault_count(FaultKind::StaleReads);
    }
    assert!(stale > 0, "stale reads happened");
}

/// What a run under session-ending faults delivered, and what was in doubt.
struct Chaos {
    taken: Deliveries,
    /// Puts that ended with the session lost while their outcome was unknown.
    puts_in_doubt: Vec<(usize, usize)>,
    /// Takes that ended with the session lost while a claim was unknown.
    takes_in_doubt: usize,
}

#[test]
fn no_silent_loss_or_duplicate_when_sessions_expire() {
    use avout::recipes::queue::QueueError;
    let rates = FaultRates {
        reply_lost: 0.05,
        expire: 0.003,
        pause: 0.001,
        ..FaultRates::default()
    };
    let mut expiries = 0;
    for seed in 400..416 {
        let sim = Sim::builder()
            .seed(seed)
            .clients(PRODUCERS + CONSUMERS)
            .session_timeout(Duration::from_secs(10))
            .rates(rates)
            .keep_log(false)
            .time_limit(Duration::from_secs(3600))
            .build();
        let (chaos, summary) = sim.run(|ctx| async move {
            // Managed clients: after a lost session the same queue handle carries on, on the
            // client's next session.
            let service = &ctx.zk;
            let produce = ctx.clients[..PRODUCERS].iter().enumerate().map(|(p, c)| {
                let q = queue(&sim_client(service, c));
                async move {
                    let mut in_doubt = Vec::new();
                    for i in 0..EACH {
                        match q.put(format!("p{p}-{i}").as_bytes()).await {
                            Ok(()) => {}
                            // This element may or may not be in.
                            Err(QueueError::SessionLost(_)) => in_doubt.push((p, i)),
                            Err(e) => panic!("put: {e}"),
                        }
                    }
                    in_doubt
                }
            });
            let consume = ctx.clients[PRODUCERS..].iter().map(|c| {
                let q = queue(&sim_client(service, c));
                async move {
                    let (mut got, mut in_doubt) = (Vec::new(), 0);
                    loop {
                        match q.take_for(Duration::from_secs(2)).await {
                            Ok(Some(e)) => got.push(parse(&e.data)),
                            Ok(None) => break,
                            Err(QueueError::TakeInDoubt { .. }) => in_doubt += 1,
                            Err(QueueError::SessionLost(_)) => {}
                            Err(e) => panic!("take: {e}"),
                        }
                    }
                    (got, in_doubt)
                }
            });
            let (puts, takes) = futures::join!(
                futures::future::join_all(produce),
                futures::future::join_all(consume)
            );
            let last = queue(&Client::connect(service.clone()).await.expect("connect"));
            let (mut rest, mut drain_in_doubt) = (Vec::new(), 0);
            loop {
                match last.try_take().await {
                    Ok(Some(e)) => rest.push(parse(&e.data)),
                    Ok(None) => break,
                    Err(QueueError::TakeInDoubt { .. }) => drain_in_doubt += 1,
                    Err(QueueError::SessionLost(_)) => {}
                    Err(e) => panic!("drain: {e}"),
                }
            }
            let mut taken: Deliveries = Vec::new();
            let mut takes_in_doubt = drain_in_doubt;
            for (got, doubt) in takes {
                taken.push(got);
                takes_in_doubt += doubt;
            }
            taken.push(rest);
            Chaos {
                taken,
                puts_in_doubt: puts.into_iter().flatten().collect(),
                takes_in_doubt,
            }
        });
        expiries +=
            summary.fault_count(FaultKind::SessionExpiry) + summary.fault_count(FaultKind::Pause);
        let mut seen: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        for &key in chaos.taken.iter().flatten() {
            *seen.entry(key).or_default() += 1;
        }
        let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "seed {seed}: delivered twice: {twice:?}");
        // Every element not delivered is accounted for: its put or some take was in doubt
        // when a session ended.
        let unexplained: Vec<_> = (0..PRODUCERS)
            .flat_map(|p| (0..EACH).map(move |i| (p, i)))
            .filter(|k| !seen.contains_key(k) && !chaos.puts_in_doubt.contains(k))
            .collect();
        assert!(
            unexplained.len() <= chaos.takes_in_doubt,
            "seed {seed}: lost {unexplained:?} with only {} takes in doubt",
            chaos.takes_in_doubt
        );
    }
    assert!(expiries > 0, "sessions were lost");
}
