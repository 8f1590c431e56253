//! Atoms and lin-kv on the simulated ZooKeeper, under every fault kind the simulator injects:
//! the same production code as on a real server, in virtual time, replayable from the seed
//! (printed on failure; `AVOUT_SIM_SEED` overrides the default).
//!
//! What is checked is what a fault must never break: an increment is applied at most once
//! (the counter ends between the acknowledged increments and those plus the indefinite ones;
//! every acknowledged increment saw a distinct value), and lin-kv histories are
//! linearizable (checked per key by exhaustive search, with indefinite operations allowed to
//! take effect or not).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::support::{one_kind, sim_clients};
use avout::Client;
use avout::atom::Atom;
use avout::atom::linkv::{KvError, LinKv};
use avout_sim_zk::{FaultKind, FaultRates, Sim};
use serde_json::{Value, json};

/// Rates that make `kind` happen several times in a run of a thousand requests (`scale`
/// times as often).
fn rates(kind: FaultKind, scale: f64) -> FaultRates {
    one_kind(
        kind,
        [0.03, 0.03, 0.01, 0.003, 0.003, 0.01, 0.002].map(|r| r * scale),
    )
}

fn sim(seed: u64, kind: FaultKind, scale: f64) -> Sim {
    Sim::builder()
        .seed_from_env(seed)
        .clients(3)
        .session_timeout(Duration::from_secs(2))
        .rates(rates(kind, scale))
        .keep_log(false)
        .build()
}

/// Opens the atom, retrying failures (after a lost session the client opens the next one).
async fn open_counter(client: &Client) -> Atom<u64> {
    loop {
        match Atom::open(client, "/counter", 0).await {
            Ok(atom) => return atom,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Opens lin-kv, retrying failures as [`open_counter`] does.
async fn open_kv(client: &Client) -> LinKv {
    loop {
        match LinKv::open(client, "/kv").await {
            Ok(kv) => return kv,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

#[derive(Default, Debug)]
struct Tally {
    ok: Vec<u64>,
    indefinite: u64,
    definite: u64,
}

#[test]
fn counter_increments_apply_at_most_once_under_every_fault_kind() {
    const PER_CLIENT: u64 = 150;
    for (i, kind) in FaultKind::DEFAULT.into_iter().enumerate() {
        let seed = 0xa70 + i as u64;
        let ((tally, last), summary) = sim(seed, kind, 1.0).run(|ctx| async move {
            let zk = ctx.zk.clone();
            // Managed clients: after a lost session the same atom carries on, on the next.
            let workers = sim_clients(&ctx).into_iter().map(|client| async move {
                let mut tally = Tally::default();
                let atom = open_counter(&client).await;
                for _ in 0..PER_CLIENT {
                    match atom.swap(|n| n + 1).await {
                        Ok(v) => tally.ok.push(v),
                        Err(e) if e.is_definite() => tally.definite += 1,
                        Err(_) => tally.indefinite += 1,
                    }
                }
                tally
            });
            let tallies = futures::future::join_all(workers).await;
            let mut all = Tally::default();
            for t in tallies {
                all.ok.extend(t.ok);
                all.indefinite += t.indefinite;
                all.definite += t.definite;
            }
            let reader = Client::connect(zk)
                .await
                .expect("a simulated session opens");
            let atom = open_counter(&reader).await;
            let last = loop {
                match atom.deref().await {
                    Ok(v) => break v,
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            };
            (all, last)
        });
        let mut ok = tally.ok.clone();
        ok.sort_unstable();
        let distinct = ok.windows(2).all(|w| w[0] < w[1]);
        let acknowledged = ok.len() as u64;
        eprintln!(
            "{:>14}: seed {seed}, {} faults, {acknowledged} ok, {} indefinite, {} definite, counter {last}, {} requests",
            kind.name(),
            summary.fault_count(kind),
            tally.indefinite,
            tally.definite,
            summary.requests,
        );
        assert!(summary.fault_count(kind) > 0, "{kind:?} was injected");
        assert!(distinct, "{kind:?}: two increments saw the same value");
        assert!(
            acknowledged <= last && last <= acknowledged + tally.indefinite,
            "{kind:?} seed {seed}: counter {last} outside [{acknowledged}, {acknowledged} + {}]",
            tally.indefinite
        );
        assert!(ok.last().is_none_or(|&max| max <= last));
        assert_eq!(tally.definite, 0, "{kind:?}: no definite failures expected");
    }
}

/// One lin-kv operation of a history.
#[derive(Clone, Debug)]
enum Op {
    Read(Option<Value>),
    Write(Value),
    Cas(Value, Value),
}

/// An operation with its invocation and completion order; `done: None` for an indefinite
/// outcome (it may have taken effect at any point after its invocation).
#[derive(Clone, Debug)]
struct Event {
    op: Op,
    invoked: u64,
    done: Option<u64>,
    /// For a completed cas or read: whether it succeeded (`Read(None)` is key-does-not-exist).
    ok: bool,
}

/// Whether one key's history is linearizable for a register that starts absent: a depth-first
/// search over which operation takes effect next, memoised on (done set, value).
fn linearizable(events: &[Event]) -> bool {
    fn step(
        events: &[Event],
        done: u128,
        value: &Option<Value>,
        seen: &mut std::collections::HashSet<(u128, String)>,
    ) -> bool {
        let all_definite_done = events
            .iter()
            .enumerate()
            .all(|(i, e)| done & (1 << i) != 0 || e.done.is_none());
        if all_definite_done {
            return true;
        }
        if !seen.insert((done, format!("{value:?}"))) {
            return false;
        }
        // The earliest completion among pending operations bounds who may go next.
        let horizon = events
            .iter()
            .enumerate()
            .filter(|(i, _)| done & (1 << i) == 0)
            .filter_map(|(_, e)| e.done)
            .min()
            .unwrap_or(u64::MAX);
        for (i, e) in events.iter().enumerate() {
            if done & (1 << i) != 0 || e.invoked > horizon {
                continue;
            }
            let next = match (&e.op, e.ok) {
                (Op::Read(seen_value), _) if e.done.is_some() => {
                    if seen_value != value {
                        continue;
                    }
                    value.clone()
                }
                // An indefinite read constrains nothing.
                (Op::Read(_), _) => value.clone(),
                (Op::Write(v), _) => Some(v.clone()),
                (Op::Cas(from, to), true) => {
                    if value.as_ref() != Some(from) {
                        continue;
                    }
                    Some(to.clone())
                }
                (Op::Cas(from, _), false) => {
                    // A failed cas saw a different value (or none).
                    if value.as_ref() == Some(from) {
                        continue;
                    }
                    value.clone()
                }
            };
            if step(events, done | (1 << i), &next, seen) {
                return true;
            }
        }
        false
    }
    assert!(events.len() <= 128, "history too long for the search");
    step(events, 0, &None, &mut Default::default())
}

#[test]
fn lin_kv_histories_are_linearizable_under_every_fault_kind() {
    const PER_CLIENT: u64 = 40;
    for (i, kind) in FaultKind::DEFAULT.into_iter().enumerate() {
        let seed = 0x11c + i as u64;
        let (history, summary) = sim(seed, kind, 4.0).run(|ctx| async move {
            let clock = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let tick = {
                let clock = clock.clone();
                move || clock.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            };
            let workers = sim_clients(&ctx)
                .into_iter()
                .enumerate()
                .map(|(p, client)| {
                    let tick = tick.clone();
                    async move {
                        let mut events: Vec<(String, Event)> = Vec::new();
                        let kv = open_kv(&client).await;
                        for j in 0..PER_CLIENT {
                            let key = if j % 2 == 0 { "a" } else { "b" };
                            let unique = json!(p as u64 * 1000 + j);
                            let invoked = tick();
                            let (op, result) = match j % 3 {
                                0 => (
                                    Op::Write(unique.clone()),
                                    kv.write(key, unique).await.map(|_| None),
                                ),
                                1 => match kv.read(key).await {
                                    Ok(v) => (Op::Read(Some(v.clone())), Ok(Some(v))),
                                    Err(e) => (Op::Read(None), Err(e)),
                                },
                                _ => {
                                    let from = json!((p as u64 * 1000 + j).saturating_sub(2));
                                    (
                                        Op::Cas(from.clone(), unique.clone()),
                                        kv.cas(key, &from, unique, j % 4 == 0).await.map(|_| None),
                                    )
                                }
                            };
                            let done = tick();
                            let event = match result {
                                Ok(_) => Event {
                                    op,
                                    invoked,
                                    done: Some(done),
                                    ok: true,
                                },
                                Err(e) if e.is_definite() => {
                                    let ok = matches!(
                                        (&op, &e),
                                        (Op::Read(None), KvError::KeyDoesNotExist { .. })
                                    );
                                    assert!(
                                        matches!(
                                            e,
                                            KvError::KeyDoesNotExist { .. }
                                                | KvError::PreconditionFailed { .. }
                                        ),
                                        "unexpected definite error {e}"
                                    );
                                    Event {
                                        op,
                                        invoked,
                                        done: Some(done),
                                        ok,
                                    }
                                }
                                // Indefinite; after a lost session the next call runs on the next.
                                Err(_) => Event {
                                    op,
                                    invoked,
                                    done: None,
                                    ok: false,
                                },
                            };
                            events.push((key.to_owned(), event));
                        }
                        events
                    }
                });
            futures::future::join_all(workers).await
        });
        let mut per_key: BTreeMap<String, Vec<Event>> = BTreeMap::new();
        for (key, event) in history.into_iter().flatten() {
            // A failed read (key-does-not-exist) is a read of "absent".
            per_key.entry(key).or_default().push(event);
        }
        let indefinite = per_key
            .values()
            .flatten()
            .filter(|e| e.done.is_none())
            .count();
        eprintln!(
            "{:>14}: seed {seed}, {} faults, {indefinite} indefinite of {} ops, {} requests",
            kind.name(),
            summary.fault_count(kind),
            per_key.values().map(Vec::len).sum::<usize>(),
            summary.requests
        );
        assert!(summary.fault_count(kind) > 0, "{kind:?} was injected");
        for (key, events) in &per_key {
            assert!(
                linearizable(events),
                "{kind:?} seed {seed}: key {key} is not linearizable: {events:#?}"
            );
        }
    }
}

#[test]
fn the_checker_rejects_a_stale_read() {
    let e = |op, invoked, done| Event {
        op,
        invoked,
        done: Some(done),
        ok: true,
    };
    let history = [
        e(Op::Write(json!(1)), 0, 1),
        e(Op::Write(json!(2)), 2, 3),
        e(Op::Read(Some(json!(1))), 4, 5),
    ];
    assert!(!linearizable(&history));
    let history = [
        e(Op::Write(json!(1)), 0, 1),
        e(Op::Write(json!(2)), 2, 5),
        e(Op::Read(Some(json!(1))), 3, 4),
    ];
    assert!(linearizable(&history));
    let lost = Event {
        op: Op::Write(json!(3)),
        invoked: 0,
        done: None,
        ok: false,
    };
    assert!(linearizable(&[
        lost.clone(),
        e(Op::Read(Some(json!(3))), 1, 2)
    ]));
    assert!(!linearizable(&[lost, e(Op::Read(Some(json!(4))), 1, 2)]));
}
