//! Record history, each body on a real standalone ZooKeeper and on the simulator: revisions
//! and times, `get_at`, `revert`, trimming, a record written before history existed, and
//! concurrent writers from three sessions whose revisions are each kept once, in a gap-free
//! time order. And (on the simulator under every fault kind) three clients `set`,
//! `add`, read `history`, `get_at` and `revert` one key of two records (one keeping every
//! revision, one trimmed to a few), and the final history is checked against the operations.
//!
//! What is checked, on the record that keeps everything: every revision is explained by
//! exactly one operation (a `set` or `add` of its unique value, or a `revert` whose values
//! are those the key had at its target time), every acknowledged write has its revision,
//! times follow real time (a write acknowledged before another began has the earlier time),
//! every `get_at` answer and every `history` snapshot agrees with the final history. On the
//! trimmed record: what overlaps the final history agrees with it, and a `HistoryTrimmed`
//! answer names an oldest time past the one asked for and no later than the final oldest.
//! Seeds are printed; `AVOUT_SIM_SEED` replays one; `AVOUT_RECORD_ROUNDS` (default 4) sets
//! how many seeds each fault kind runs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use avout::atom::record::{History, RecordError, Records, Revision, Value};
use avout::{Client, Coordination, CreateOptions};
use avout_sim_zk::{FaultKind, FaultRates, Sim};
use avout_testkit::backend::Backend;

use crate::support::{client_of, clients_of, on_both, one_kind, plain_sim, simulate};

fn ints(vs: &[i64]) -> BTreeSet<Value> {
    vs.iter().map(|v| Value::Int(*v)).collect()
}

/// Revisions and times, `get_at`, `revert`, trimming, concurrent writers.
async fn get_at_and_revert(backend: &dyn Backend) {
    let clients = clients_of(backend, 3).await;
    let records = Records::new(&clients[0], "/history");

    records.set("k", Value::Int(1), 1).await.unwrap(); // time 1
    records.add("k", Value::Int(2), 1).await.unwrap(); // time 2
    records.set("other", Value::from("x"), 1).await.unwrap(); // time 3
    records.set("k", Value::Int(1), 1).await.unwrap(); // time 4: {1, 2} -> {1}
    records.set("k", Value::Int(1), 1).await.unwrap(); // already so: nothing written
    assert!(records.clear("k", 1).await.unwrap()); // time 5
    let h = records.history("k", 1).await.unwrap();
    assert_eq!(h.now, 5);
    assert!(!h.trimmed);
    let times: Vec<u64> = h.revisions.iter().map(|r| r.time).collect();
    assert_eq!(times, [1, 2, 4, 5]);
    assert_eq!(records.get_at("k", 0, 1).await.unwrap(), ints(&[]));
    assert_eq!(records.get_at("k", 3, 1).await.unwrap(), ints(&[1, 2]));
    assert_eq!(records.get_at("k", 5, 1).await.unwrap(), ints(&[]));
    assert!(matches!(
        records.get_at("k", 6, 1).await,
        Err(RecordError::NotYet {
            now: 5,
            time: 6,
            ..
        })
    ));

    // Revert adds a revision with the old values; reverting to them again writes nothing.
    let other = Records::new(&clients[1], "/history");
    assert_eq!(other.revert("k", 2, 1).await.unwrap(), Some(6));
    assert_eq!(records.fetch("k", 1).await.unwrap(), ints(&[1, 2]));
    assert_eq!(other.revert("k", 3, 1).await.unwrap(), None);
    assert_eq!(records.history("k", 1).await.unwrap().now, 6);
    assert_eq!(records.fetch("other", 1).await.unwrap().len(), 1);

    // A handle keeping three revisions trims what it writes; older times are refused.
    let short = Records::new(&clients[2], "/history").history_limit(3);
    for v in 10..15 {
        short.set("k", Value::Int(v), 1).await.unwrap(); // times 7..=11
    }
    let h = records.history("k", 1).await.unwrap();
    assert!(h.trimmed);
    assert_eq!(h.revisions.len(), 3);
    assert_eq!(h.revisions[0].time, 9);
    assert_eq!(records.get_at("k", 9, 1).await.unwrap(), ints(&[12]));
    assert!(matches!(
        records.get_at("k", 8, 1).await,
        Err(RecordError::HistoryTrimmed {
            oldest: 9,
            time: 8,
            ..
        })
    ));
    assert!(matches!(
        records.revert("k", 2, 1).await,
        Err(RecordError::HistoryTrimmed { oldest: 9, .. })
    ));
    assert_eq!(records.fetch("k", 1).await.unwrap(), ints(&[14]));

    // A record node written before history existed (a bare map) reads as time 0 and gains
    // history on its next write.
    clients[0]
        .create("/history", b"", &CreateOptions::default())
        .await
        .ok();
    clients[0]
        .create(
            "/history/r2",
            br#"{"tags":[{"Str":"a"}]}"#,
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(records.history("tags", 2).await.unwrap().now, 0);
    records.add("tags", Value::from("b"), 2).await.unwrap();
    assert_eq!(records.get_at("tags", 0, 2).await.unwrap().len(), 1);
    assert_eq!(records.get_at("tags", 1, 2).await.unwrap().len(), 2);
    let (data, _) = clients[0].get_data("/history/r2").await.unwrap();
    assert!(
        String::from_utf8_lossy(&data).contains(r#""v":2"#),
        "rewritten in the versioned form"
    );

    // Concurrent writers: every write is one revision, times gap-free in commit order.
    let handles: Vec<Records> = clients
        .iter()
        .map(|c| Records::new(c, "/history").history_limit(1000))
        .collect();
    futures::future::join_all(handles.iter().enumerate().map(|(p, r)| async move {
        for j in 0..20 {
            r.add("many", Value::Int(p as i64 * 100 + j), 3)
                .await
                .unwrap();
        }
    }))
    .await;
    let h = records.history("many", 3).await.unwrap();
    let times: Vec<u64> = h.revisions.iter().map(|r| r.time).collect();
    assert_eq!(times, (1..=60).collect::<Vec<_>>());
    for pair in h.revisions.windows(2) {
        assert_eq!(pair[1].values.len(), pair[0].values.len() + 1);
        assert!(pair[0].values.is_subset(&pair[1].values));
    }
    assert_eq!(h.revisions[59].values.len(), 60);
}

const KEY: &str = "k";
/// The record that keeps every revision, and the one trimmed to [`TRIM`].
const FULL: u64 = 1;
const TRIMMED: u64 = 2;
const TRIM: usize = 6;

fn rates(kind: FaultKind) -> FaultRates {
    one_kind(kind, [0.1, 0.1, 0.04, 0.03, 0.02, 0.04, 0.04])
}

/// One call of the workload.
#[derive(Clone, Debug, PartialEq)]
enum Call {
    Set(i64),
    Add(i64),
    History,
    GetAt(u64),
    Revert(u64),
}

/// What it returned; `Indefinite` for a failure that may have been applied, `Refused` for
/// one that certainly was not.
#[derive(Clone, Debug, PartialEq)]
enum Reply {
    Written,
    Added(bool),
    History(History),
    Values(BTreeSet<Value>),
    /// The revert's revision, `None` if it wrote nothing.
    Reverted(Option<u64>),
    Trimmed {
        oldest: u64,
    },
    NotYet {
        now: u64,
    },
    Refused,
    Indefinite,
}

#[derive(Clone, Debug)]
struct Event {
    record: u64,
    call: Call,
    reply: Reply,
    invoked: u64,
    done: u64,
}

impl Event {
    fn writes(&self) -> bool {
        matches!(self.call, Call::Set(_) | Call::Add(_) | Call::Revert(_))
    }
}

/// The values of the last revision at or before `time`; `None` if the kept revisions start
/// after it and the history was trimmed.
fn at(h: &History, time: u64) -> Option<BTreeSet<Value>> {
    match h.revisions.iter().rev().find(|r| r.time <= time) {
        Some(r) => Some(r.values.clone()),
        None if h.trimmed => None,
        None => Some(BTreeSet::new()),
    }
}

fn reply<T>(r: Result<T, RecordError>, ok: impl FnOnce(T) -> Reply) -> Reply {
    match r {
        Ok(v) => ok(v),
        Err(RecordError::HistoryTrimmed { oldest, .. }) => Reply::Trimmed { oldest },
        Err(RecordError::NotYet { now, .. }) => Reply::NotYet { now },
        Err(e) if e.is_definite() => Reply::Refused,
        Err(_) => Reply::Indefinite,
    }
}

/// Checks the record that keeps every revision against its final history.
fn check_full(events: &[&Event], last: &History) -> Result<(), String> {
    if last.trimmed {
        return Err("the full record was trimmed".into());
    }
    let revs = &last.revisions;
    if revs.windows(2).any(|w| w[0].time >= w[1].time) || revs.iter().any(|r| r.time > last.now) {
        return Err(format!("revision times out of order: {revs:?}"));
    }
    // Which event made each revision.
    let mut made: BTreeMap<u64, usize> = BTreeMap::new();
    let mut used = vec![false; events.len()];
    let mut prev = BTreeSet::new();
    for (n, r) in revs.iter().enumerate() {
        let before = History {
            now: r.time,
            trimmed: false,
            revisions: revs[..n].to_vec(),
        };
        let explains = |e: &Event| match (&e.call, &e.reply) {
            (Call::Set(v), Reply::Written | Reply::Indefinite) => {
                r.values == BTreeSet::from([Value::Int(*v)])
            }
            (Call::Add(v), Reply::Added(_) | Reply::Indefinite) => {
                let mut with = prev.clone();
                with.insert(Value::Int(*v)) && r.values == with
            }
            (Call::Revert(t), Reply::Reverted(Some(since))) => {
                *since == r.time && at(&before, *t).as_ref() == Some(&r.values)
            }
            (Call::Revert(t), Reply::Indefinite) => {
                *t < r.time && at(&before, *t).as_ref() == Some(&r.values)
            }
            _ => false,
        };
        // Unique values first, then reverts that name this time, then indefinite reverts.
        let rank = |e: &Event| match (&e.call, &e.reply) {
            (Call::Set(_) | Call::Add(_), _) => 0,
            (_, Reply::Indefinite) => 2,
            _ => 1,
        };
        let maker = (0..3)
            .flat_map(|k| (0..events.len()).filter(move |&i| rank(events[i]) == k))
            .find(|&i| !used[i] && events[i].writes() && explains(events[i]))
            .ok_or_else(|| format!("no operation explains revision {r:?} after {prev:?}"))?;
        used[maker] = true;
        made.insert(r.time, maker);
        prev = r.values.clone();
    }
    let time_of: BTreeMap<usize, u64> = made.iter().map(|(&t, &i)| (i, t)).collect();
    for (i, e) in events.iter().enumerate() {
        let applied = time_of.get(&i).copied();
        match (&e.call, &e.reply) {
            (Call::Set(_), Reply::Written)
            | (Call::Add(_), Reply::Added(true))
            | (Call::Revert(_), Reply::Reverted(Some(_)))
                if applied.is_none() =>
            {
                return Err(format!("acknowledged {e:?} has no revision"));
            }
            (Call::Add(_), Reply::Added(false)) => {
                return Err(format!("{e:?}: a unique value was already there"));
            }
            (Call::GetAt(t), Reply::Values(vs)) if at(last, *t).as_ref() != Some(vs) => {
                return Err(format!("{e:?}: the history says {:?}", at(last, *t)));
            }
            (Call::History, Reply::History(h)) => {
                let then: Vec<Revision> =
                    revs.iter().filter(|r| r.time <= h.now).cloned().collect();
                if h.revisions != then || h.trimmed {
                    return Err(format!("{e:?}: the final history up to then is {then:?}"));
                }
            }
            (_, Reply::Trimmed { .. } | Reply::NotYet { .. }) => {
                return Err(format!(
                    "{e:?}: times asked were observed and nothing is trimmed"
                ));
            }
            _ => {}
        }
    }
    // Real time: what was acknowledged before another began is ordered before it.
    let stamp = |i: usize| -> Option<u64> {
        match (&events[i].call, &events[i].reply) {
            (_, Reply::History(h)) => Some(h.now),
            _ => time_of.get(&i).copied(),
        }
    };
    for a in 0..events.len() {
        let acknowledged = !matches!(events[a].reply, Reply::Indefinite | Reply::Refused);
        let Some(ta) = stamp(a).filter(|_| acknowledged) else {
            continue;
        };
        for b in 0..events.len() {
            let Some(tb) = stamp(b) else { continue };
            let b_reads = matches!(events[b].call, Call::History);
            let ordered = if b_reads { ta <= tb } else { ta < tb };
            if events[a].done < events[b].invoked && !ordered {
                return Err(format!(
                    "{:?} (time {ta}) was done before {:?} (time {tb}) began",
                    events[a], events[b]
                ));
            }
        }
    }
    Ok(())
}

/// Checks the trimmed record: what the final history still holds must agree with every
/// answer, and trimmed answers must be consistent with trimming moving forward.
fn check_trimmed(events: &[&Event], last: &History, limit: usize) -> Result<(), String> {
    let revs = &last.revisions;
    if revs.len() > limit || revs.windows(2).any(|w| w[0].time >= w[1].time) {
        return Err(format!(
            "{} revisions kept, limit {limit}: {revs:?}",
            revs.len()
        ));
    }
    let oldest = revs.first().map_or(last.now, |r| r.time);
    let answerable = |t: u64| !last.trimmed || t >= oldest;
    for e in events {
        let asked = match e.call {
            Call::GetAt(t) | Call::Revert(t) => Some(t),
            _ => None,
        };
        match (&e.reply, asked) {
            (Reply::Values(vs), Some(t)) if answerable(t) && at(last, t).as_ref() != Some(vs) => {
                return Err(format!("{e:?}: the history says {:?}", at(last, t)));
            }
            (Reply::Reverted(Some(since)), Some(t))
                if answerable(t) && answerable(*since) && at(last, *since) != at(last, t) =>
            {
                return Err(format!("{e:?}: values at {since} differ from those at {t}"));
            }
            // Trimming only moves forward: the oldest kept then is past the time asked for
            // and no later than the oldest kept in the end.
            (Reply::Trimmed { oldest: then }, Some(t))
                if *then <= t || !last.trimmed || *then > oldest =>
            {
                return Err(format!("{e:?}: final oldest kept is {oldest}"));
            }
            (Reply::History(h), _) => {
                if h.revisions.len() > limit {
                    return Err(format!("{e:?}: more than {limit} revisions"));
                }
                for r in &h.revisions {
                    let kept = revs.iter().find(|f| f.time == r.time);
                    if r.time >= oldest && kept != Some(r) {
                        return Err(format!("{e:?}: revision {r:?} is {kept:?} in the end"));
                    }
                }
            }
            (Reply::NotYet { .. }, _) | (Reply::Added(false), _) => {
                return Err(format!("{e:?} is impossible here"));
            }
            _ => {}
        }
    }
    Ok(())
}

async fn open(client: &Client, record: u64, limit: usize) -> Records {
    let records = Records::new(client, "/records").history_limit(limit);
    // Create the record's node, retrying as a client after a lost session does.
    while records.atom(record).await.is_err() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    records
}

const PER_CLIENT: u64 = 36;

/// Three clients call [`PER_CLIENT`] operations each on the two records; returns the calls
/// and each record's final history.
async fn operations(backend: &dyn Backend) -> (Vec<Event>, BTreeMap<u64, History>) {
    let clock = Arc::new(AtomicU64::new(0));
    let workers = clients_of(backend, 3)
        .await
        .into_iter()
        .enumerate()
        .map(|(p, client)| {
            let clock = clock.clone();
            async move {
                let tick = || clock.fetch_add(1, Ordering::SeqCst);
                let full = open(&client, FULL, 100_000).await;
                let trimmed = open(&client, TRIMMED, TRIM).await;
                let mut seen_now = BTreeMap::from([(FULL, 0u64), (TRIMMED, 0u64)]);
                let mut events = Vec::new();
                for j in 0..PER_CLIENT {
                    let record = if j % 2 == 0 { FULL } else { TRIMMED };
                    let records = if record == FULL { &full } else { &trimmed };
                    let unique = (p as i64) * 1000 + j as i64;
                    // A time this client has seen the record reach: 0, half-way or then.
                    let t = seen_now[&record] * (j % 3) / 2;
                    let call = match (j / 2 + p as u64) % 6 {
                        0 | 5 => Call::Set(unique),
                        1 => Call::Add(unique),
                        2 => Call::History,
                        3 => Call::GetAt(t),
                        _ => Call::Revert(t),
                    };
                    let invoked = tick();
                    let reply = match &call {
                        Call::Set(v) => {
                            reply(records.set(KEY, Value::Int(*v), record).await, |()| {
                                Reply::Written
                            })
                        }
                        Call::Add(v) => {
                            reply(records.add(KEY, Value::Int(*v), record).await, Reply::Added)
                        }
                        Call::History => reply(records.history(KEY, record).await, Reply::History),
                        Call::GetAt(t) => {
                            reply(records.get_at(KEY, *t, record).await, Reply::Values)
                        }
                        Call::Revert(t) => {
                            reply(records.revert(KEY, *t, record).await, Reply::Reverted)
                        }
                    };
                    if let Reply::History(h) = &reply {
                        seen_now.insert(record, h.now);
                    }
                    let done = tick();
                    events.push(Event {
                        record,
                        call,
                        reply,
                        invoked,
                        done,
                    });
                }
                events
            }
        });
    let events: Vec<Event> = futures::future::join_all(workers)
        .await
        .into_iter()
        .flatten()
        .collect();
    let reader = client_of(backend).await;
    let records = Records::new(&reader, "/records");
    let mut finals = BTreeMap::new();
    for record in [FULL, TRIMMED] {
        let h = loop {
            match records.history(KEY, record).await {
                Ok(h) => break h,
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        };
        finals.insert(record, h);
    }
    (events, finals)
}

/// How many calls got a reply `f` accepts.
fn count(events: &[Event], f: impl Fn(&Reply) -> bool) -> usize {
    events.iter().filter(|e| f(&e.reply)).count()
}

/// Judges a run of [`operations`]; panics naming `what`.
fn judge(what: &str, events: &[Event], finals: &BTreeMap<u64, History>) {
    let of = |record| -> Vec<&Event> { events.iter().filter(|e| e.record == record).collect() };
    check_full(&of(FULL), &finals[&FULL]).unwrap_or_else(|e| panic!("{what}: {e}"));
    check_trimmed(&of(TRIMMED), &finals[&TRIMMED], TRIM).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        finals[&TRIMMED].trimmed,
        "{what}: the small history was trimmed"
    );
}

on_both!(
    /// Revisions, `get_at`, `revert`, trimming and concurrent writers.
    record_history_get_at_and_revert,
    plain_sim(0x4ec0),
    |b| get_at_and_revert(b),
);

on_both!(
    /// Three clients' operations, no fault.
    record_history_matches_the_operations,
    plain_sim(0x4ec1),
    |b| async {
        let (events, finals) = operations(b).await;
        judge("no faults", &events, &finals);
    },
);

#[test]
fn record_history_matches_the_operations_under_every_fault_kind() {
    let rounds: u64 = std::env::var("AVOUT_RECORD_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4);
    let kinds = FaultKind::DEFAULT.into_iter().enumerate();
    for ((i, kind), round) in kinds.flat_map(|k| (0..rounds).map(move |r| (k, r))) {
        let seed = 9_720_000_100 + i as u64 * 1000 + round;
        let sim = Sim::builder()
            .seed_from_env(seed)
            .clients(0)
            .session_timeout(Duration::from_secs(2))
            .rates(rates(kind))
            .keep_log(false)
            .build();
        let ((events, finals), summary) = simulate(&sim, async |b| operations(b).await);
        eprintln!(
            "{:>14}: seed {seed}, {} faults, {} ops ({} indefinite, {} refused, {} trimmed), \
             times {} and {}, {} requests",
            kind.name(),
            summary.fault_count(kind),
            events.len(),
            count(&events, |r| *r == Reply::Indefinite),
            count(&events, |r| *r == Reply::Refused),
            count(&events, |r| matches!(r, Reply::Trimmed { .. })),
            finals[&FULL].now,
            finals[&TRIMMED].now,
            summary.requests,
        );
        assert!(summary.fault_count(kind) > 0, "{kind:?} was injected");
        judge(
            &format!("{kind:?} replay: AVOUT_SIM_SEED={seed}"),
            &events,
            &finals,
        );
    }
}

fn ev(call: Call, reply: Reply, invoked: u64, done: u64) -> Event {
    Event {
        record: FULL,
        call,
        reply,
        invoked,
        done,
    }
}

fn hist(now: u64, trimmed: bool, revs: &[(u64, &[i64])]) -> History {
    History {
        now,
        trimmed,
        revisions: revs
            .iter()
            .map(|(time, vs)| Revision {
                time: *time,
                values: vs.iter().map(|v| Value::Int(*v)).collect(),
            })
            .collect(),
    }
}

#[test]
fn the_full_checker_rejects_what_a_broken_history_would_show() {
    let set1 = ev(Call::Set(1), Reply::Written, 0, 1);
    let add2 = ev(Call::Add(2), Reply::Added(true), 2, 3);
    let last = hist(2, false, &[(1, &[1]), (2, &[1, 2])]);
    assert_eq!(check_full(&[&set1, &add2], &last), Ok(()));
    // A lost acknowledged write.
    let set3 = ev(Call::Set(3), Reply::Written, 4, 5);
    assert!(check_full(&[&set1, &add2, &set3], &last).is_err());
    // A revision nobody wrote, or written twice.
    let twice = hist(3, false, &[(1, &[1]), (2, &[1, 2]), (3, &[1])]);
    assert!(check_full(&[&set1, &add2], &twice).is_err());
    // Times against real time: set 1 finished before add 2 began, yet came later.
    let swapped = hist(2, false, &[(1, &[2]), (2, &[1])]);
    let add2_alone = ev(Call::Add(2), Reply::Added(true), 2, 3);
    assert!(check_full(&[&set1, &add2_alone], &swapped).is_err());
    // A get_at answer from the wrong revision, a stale snapshot, an unfounded trim.
    let wrong = ev(Call::GetAt(1), Reply::Values([Value::Int(2)].into()), 4, 5);
    assert!(check_full(&[&set1, &add2, &wrong], &last).is_err());
    let stale = ev(
        Call::History,
        Reply::History(hist(2, false, &[(1, &[1])])),
        4,
        5,
    );
    assert!(check_full(&[&set1, &add2, &stale], &last).is_err());
    let trim = ev(Call::GetAt(1), Reply::Trimmed { oldest: 2 }, 4, 5);
    assert!(check_full(&[&set1, &add2, &trim], &last).is_err());
    // A revert must bring back the values of its target time.
    let revert = ev(Call::Revert(1), Reply::Reverted(Some(3)), 4, 5);
    let good = hist(3, false, &[(1, &[1]), (2, &[1, 2]), (3, &[1])]);
    assert_eq!(check_full(&[&set1, &add2, &revert], &good), Ok(()));
    let bad = hist(3, false, &[(1, &[1]), (2, &[1, 2]), (3, &[])]);
    assert!(check_full(&[&set1, &add2, &revert], &bad).is_err());
}

#[test]
fn the_trimmed_checker_rejects_what_a_broken_history_would_show() {
    let last = hist(9, true, &[(8, &[7]), (9, &[8])]);
    let ok = ev(Call::GetAt(8), Reply::Values([Value::Int(7)].into()), 0, 1);
    let trim = ev(Call::GetAt(3), Reply::Trimmed { oldest: 5 }, 0, 1);
    assert_eq!(check_trimmed(&[&ok, &trim], &last, 2), Ok(()));
    let wrong = ev(Call::GetAt(9), Reply::Values([Value::Int(7)].into()), 0, 1);
    assert!(check_trimmed(&[&wrong], &last, 2).is_err());
    // Trimmed although the time asked for is kept, or past the final oldest.
    let early = ev(Call::GetAt(6), Reply::Trimmed { oldest: 5 }, 0, 1);
    assert!(check_trimmed(&[&early], &last, 2).is_err());
    let ahead = ev(Call::GetAt(3), Reply::Trimmed { oldest: 9 }, 0, 1);
    assert!(check_trimmed(&[&ahead], &last, 2).is_err());
    assert!(
        check_trimmed(&[], &last, 1).is_err(),
        "more revisions than the limit"
    );
    let other = ev(
        Call::History,
        Reply::History(hist(9, true, &[(9, &[1])])),
        0,
        1,
    );
    assert!(check_trimmed(&[&other], &last, 2).is_err());
}
