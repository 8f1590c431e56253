//! The events and the view, read on one thread while the cache's task changes them on
//! another, as on a multi-threaded runtime (the simulator runs every task on one thread, so
//! it never reads between a change of the view and the queueing of its events).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use futures::channel::mpsc;

use super::{Cache, CacheEvent, Entry, Shared, follow};
use crate::Stat;

/// How many relists the task publishes, and how many nodes each changes at once.
const ROUNDS: i64 = 20_000;
const NODES: usize = 16;

/// What the `round`th relist finds: every node changed to data `round`.
fn fresh(round: i64) -> BTreeMap<String, Entry> {
    let stat = Stat {
        czxid: 1,
        mzxid: round,
        pzxid: 1,
        ..Stat::default()
    };
    (0..NODES)
        .map(|i| {
            let data = round.to_string().into_bytes();
            (format!("/r/{i:02}"), Entry { data, stat })
        })
        .collect()
}

/// Each node's `mzxid`: what a failure prints.
fn mzxids(nodes: &BTreeMap<String, Entry>) -> BTreeMap<&str, i64> {
    nodes
        .iter()
        .map(|(p, e)| (p.as_str(), e.stat.mzxid))
        .collect()
}

fn replay(into: &mut BTreeMap<String, Entry>, events: impl IntoIterator<Item = CacheEvent>) {
    for event in events {
        match event {
            CacheEvent::Created { path, data, stat } | CacheEvent::Changed { path, data, stat } => {
                into.insert(path, Entry { data, stat });
            }
            CacheEvent::Deleted { path, .. } => {
                into.remove(&path);
            }
            CacheEvent::Initialized => {}
        }
    }
}

/// The view read after the events never shows a change whose event was not queued, and
/// `take_events_and_view` returns the view the events taken replay into. Both failed when a
/// relist queued its events after releasing the view's lock: a chaos run's cache (issue 39,
/// `reports/findings/cache-events-vs-view/`) recorded the first event of a relist, found no
/// more queued, and recorded a view with the relist's other changes.
#[test]
fn the_events_taken_on_another_thread_replay_into_the_view() {
    let shared = Arc::new(Mutex::new(Shared::default()));
    let (tx, events) = mpsc::unbounded();
    let mut cache = Cache {
        shared: shared.clone(),
        events,
        stop: None,
        task: None,
    };
    // The task keeps at most a round ahead of the reader: reads fall between its rounds, not
    // after a backlog of thousands.
    let taken = Arc::new(AtomicI64::new(0));
    let reader = taken.clone();
    let task = std::thread::spawn(move || {
        for round in 1..=ROUNDS {
            while reader.load(Ordering::Acquire) < round - 2 {
                if Arc::strong_count(&reader) == 1 {
                    return; // The reader failed.
                }
                std::thread::yield_now();
            }
            follow::publish(&shared, &tx, |view| view.replace(fresh(round)));
        }
    });
    let mut replayed = BTreeMap::new();
    for read in 0.. {
        let done = task.is_finished();
        let (events, view) = cache.take_events_and_view();
        replay(&mut replayed, events);
        let newest = view.values().map(|e| e.stat.mzxid).max().unwrap_or(0);
        taken.store(newest, Ordering::Release);
        assert_eq!(
            mzxids(&replayed),
            mzxids(&view),
            "read {read}: the events taken replay into the view"
        );
        assert_eq!(replayed, view, "read {read}: data and stats too");

        let view = cache.snapshot();
        replay(&mut replayed, std::iter::from_fn(|| cache.try_next_event()));
        for (path, entry) in &view {
            let mzxid = replayed.get(path).map(|e| e.stat.mzxid);
            assert!(
                mzxid >= Some(entry.stat.mzxid),
                "read {read}: {path} at mzxid {} in the view, {mzxid:?} in its events",
                entry.stat.mzxid
            );
        }
        if done {
            break;
        }
    }
    task.join().expect("the task thread");
    assert_eq!(replayed, fresh(ROUNDS), "every relist's events were taken");
}
