//! The client's metrics ([`avout::metrics`]) on the simulator, recorded by `metrics-util`'s
//! debugging recorder: each moves when its event happens (a session opened, suspended,
//! reconnected, expired, replaced, closed; watches armed and fired; retries by cause), and a
//! simulated run records no timed metric at all.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use avout::atom::Atom;
use avout::client::ConnectionState;
use avout::metrics as m;
use avout::recipes::barrier::Barrier;
use avout::stm::{Stm, StmConfig};
use avout::{AddWatchMode, Client, Coordination};
use avout_sim_zk::{Fault, FaultKind, Sim};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

use crate::client_sim::Flaky;
use crate::support::{self, until_state};

/// What a metric accumulated: the debugging recorder hands out each counter's and gauge's
/// change since the last snapshot (it swaps them to zero) and each histogram's new samples.
#[derive(Debug, Default)]
struct Totals {
    counters: BTreeMap<MetricId, u64>,
    gauges: BTreeMap<MetricId, f64>,
    samples: BTreeMap<MetricId, Vec<f64>>,
}

/// A metric's name and its labels, sorted.
type MetricId = (String, Vec<(String, String)>);

/// A recorder for this thread (the simulator runs every task on it) and what it recorded.
pub(crate) struct Recorded {
    snapshotter: Snapshotter,
    totals: RefCell<Totals>,
}

type Labels<'a> = &'a [(&'a str, &'a str)];

impl Recorded {
    /// Runs `f` with a fresh debugging recorder as this thread's.
    pub(crate) fn run<T>(f: impl FnOnce(&Recorded) -> T) -> T {
        let recorder = DebuggingRecorder::new();
        let recorded = Recorded {
            snapshotter: recorder.snapshotter(),
            totals: RefCell::default(),
        };
        metrics::with_local_recorder(&recorder, || f(&recorded))
    }

    /// Takes a snapshot into the totals, and returns them.
    fn totals(&self) -> std::cell::Ref<'_, Totals> {
        let mut totals = self.totals.borrow_mut();
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let key = key.key();
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            let id = (key.name().to_owned(), labels);
            match value {
                DebugValue::Counter(n) => *totals.counters.entry(id).or_default() += n,
                DebugValue::Gauge(g) => *totals.gauges.entry(id).or_default() += g.into_inner(),
                DebugValue::Histogram(xs) => totals
                    .samples
                    .entry(id)
                    .or_default()
                    .extend(xs.into_iter().map(|x| x.into_inner())),
            }
        }
        drop(totals);
        self.totals.borrow()
    }

    /// Sums `table`'s entries named `name` that carry every label of `labels`.
    fn sum<V: Clone, S>(
        table: &BTreeMap<MetricId, V>,
        name: &str,
        labels: Labels<'_>,
        fold: impl Fn(S, &V) -> S,
        zero: S,
    ) -> S {
        table
            .iter()
            .filter(|((n, have), _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| have.iter().any(|(hk, hv)| hk == k && hv == v))
            })
            .fold(zero, |acc, (_, v)| fold(acc, v))
    }

    /// A counter's total (0 if never recorded).
    pub(crate) fn counter(&self, name: &str, labels: Labels<'_>) -> u64 {
        Self::sum(&self.totals().counters, name, labels, |a, v| a + v, 0)
    }

    /// A gauge's value (0 if never recorded).
    pub(crate) fn gauge(&self, name: &str, labels: Labels<'_>) -> f64 {
        Self::sum(&self.totals().gauges, name, labels, |a, v| a + v, 0.0)
    }

    /// Every sample a histogram took.
    pub(crate) fn samples(&self, name: &str, labels: Labels<'_>) -> Vec<f64> {
        Self::sum(
            &self.totals().samples,
            name,
            labels,
            |mut a: Vec<f64>, v| {
                a.extend(v);
                a
            },
            Vec::new(),
        )
    }
}

/// Waits (in virtual time) until `client` has a session of a later generation than `before`.
async fn next_generation(client: &Client, before: u64) {
    while client.current_session().await.unwrap().generation() <= before {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn sessions_connection_states_reconnects_and_watches_move_with_their_events() {
    Recorded::run(|r| {
        Sim::builder()
            .seed(21)
            .clients(0)
            .build()
            .run(|ctx| async move {
                let client = Client::connect(ctx.zk.clone()).await.unwrap();
                assert_eq!(r.counter(m::SESSIONS_OPENED, &[]), 1);
                assert_eq!(r.gauge(m::SESSIONS_OPEN, &[]), 1.0);
                assert_eq!(
                    r.counter(m::CONNECTION_STATE_CHANGES, &[("state", "connected")]),
                    1
                );
                assert_eq!(r.gauge(m::CLIENTS, &[("state", "connected")]), 1.0);

                // An outage shorter than the session: suspended, then back on the same session.
                ctx.zk.inject(Fault::Outage {
                    duration: Duration::from_millis(500),
                });
                until_state(&client, ConnectionState::Suspended).await;
                assert_eq!(r.gauge(m::CLIENTS, &[("state", "suspended")]), 1.0);
                assert_eq!(r.gauge(m::CLIENTS, &[("state", "connected")]), 0.0);
                until_state(&client, ConnectionState::Reconnected).await;
                assert_eq!(r.counter(m::RECONNECTS, &[("session", "same")]), 1);
                assert_eq!(r.counter(m::SESSIONS_OPENED, &[]), 1, "the same session");

                // An expiry: lost, then a new session.
                ctx.zk.expire_session(client.session().id);
                next_generation(&client, 1).await;
                assert_eq!(r.counter(m::SESSIONS_ENDED, &[("reason", "expired")]), 1);
                assert_eq!(
                    r.counter(m::CONNECTION_STATE_CHANGES, &[("state", "lost")]),
                    1
                );
                assert_eq!(r.counter(m::RECONNECTS, &[("session", "new")]), 1);
                assert_eq!(r.counter(m::SESSIONS_OPENED, &[]), 2);
                assert_eq!(r.gauge(m::SESSIONS_OPEN, &[]), 1.0);

                // Watches: held while armed, released when fired or removed.
                client.create("/w", b"", &Default::default()).await.unwrap();
                let (_, _, watch) = client.get_and_watch_data("/w").await.unwrap();
                assert_eq!(r.gauge(m::WATCHES, &[("kind", "one_shot")]), 1.0);
                client.set_data("/w", b"x", None).await.unwrap();
                watch.await;
                assert_eq!(r.gauge(m::WATCHES, &[("kind", "one_shot")]), 0.0);
                let mut persistent = client
                    .add_watch("/w", AddWatchMode::Persistent)
                    .await
                    .unwrap();
                assert_eq!(r.gauge(m::WATCHES, &[("kind", "persistent")]), 1.0);
                persistent.remove().await.unwrap();
                assert_eq!(r.gauge(m::WATCHES, &[("kind", "persistent")]), 0.0);

                client.close().await.unwrap();
                assert_eq!(r.counter(m::SESSIONS_ENDED, &[("reason", "closed")]), 1);
                assert_eq!(r.gauge(m::SESSIONS_OPEN, &[]), 0.0);
                assert_eq!(r.gauge(m::CLIENTS, &[("state", "closed")]), 1.0);
                drop(client);
                assert_eq!(r.gauge(m::CLIENTS, &[("state", "closed")]), 0.0);
            });
        assert!(
            r.samples(m::REQUEST_DURATION, &[]).is_empty(),
            "a simulated run times nothing"
        );
    });
}

#[test]
fn failed_attempts_to_open_a_session_are_counted_by_error() {
    Recorded::run(|r| {
        Sim::builder()
            .seed(22)
            .clients(0)
            .build()
            .run(|ctx| async move {
                // Every attempt after the first is refused.
                let refusing = Flaky {
                    zk: ctx.zk.clone(),
                    refuse: u32::MAX,
                    attempts: Arc::new(AtomicU32::new(0)),
                };
                let client = Client::builder(refusing)
                    .retry(avout::client::RetryPolicy::default().with_max_attempts(3))
                    .connect()
                    .await
                    .unwrap();
                ctx.zk.expire_session(client.session().id);
                until_state(&client, ConnectionState::Closed).await;
                assert_eq!(
                    r.counter(m::SESSION_OPEN_FAILURES, &[("error", "unreachable")]),
                    3
                );
                assert_eq!(r.gauge(m::SESSIONS_OPEN, &[]), 0.0);
            });
    });
}

#[test]
fn retries_are_counted_by_cause() {
    Recorded::run(|r| {
        Sim::builder()
            .seed(23)
            .clients(0)
            .rates(support::recipe_rates(FaultKind::ReplyLost))
            .keep_log(false)
            .build()
            .run(|ctx| async move {
                let a = Client::connect(ctx.zk.clone()).await.unwrap();
                let b = Client::connect(ctx.zk.clone()).await.unwrap();
                // Two writers of one atom and of one ref: some of their tries lose to the
                // other; lost replies leave requests in doubt.
                let stm_a = Stm::open(&a, "/stm", StmConfig::default()).await.unwrap();
                let stm_b = Stm::open(&b, "/stm", StmConfig::default()).await.unwrap();
                let (ra, rb) = (
                    stm_a.make_ref("n", 0i64).await.unwrap(),
                    stm_b.make_ref("n", 0i64).await.unwrap(),
                );
                let work = |client: Client, stm: Stm, r: avout::stm::Ref<i64>| async move {
                    let atom: Atom<u64> = Atom::open(&client, "/atom", 0).await.unwrap();
                    for _ in 0..30 {
                        let _ = atom.swap(|n| n + 1).await;
                        let _ = stm
                            .dosync(async |tx| {
                                tx.alter(&r, |n| n + 1).await?;
                                Ok(())
                            })
                            .await;
                    }
                };
                futures::join!(work(a.clone(), stm_a, ra), work(b.clone(), stm_b, rb));
                assert!(r.counter(m::RETRIES, &[("cause", "conflict")]) > 0);
                assert!(r.counter(m::RETRIES, &[("cause", "connection_loss")]) > 0);

                // A barrier's wait starts over on the next session.
                let barrier = Barrier::new(&a, "/gate").unwrap();
                barrier.set().await.unwrap();
                let waiting = tokio::spawn({
                    let barrier = barrier.clone();
                    async move { barrier.wait().await }
                });
                tokio::time::sleep(Duration::from_millis(100)).await;
                ctx.zk.expire_session(a.session().id);
                next_generation(&a, 1).await;
                Barrier::new(&b, "/gate").unwrap().remove().await.unwrap();
                waiting.await.unwrap().unwrap();
                assert_eq!(r.counter(m::RETRIES, &[("cause", "session_lost")]), 1);
            });
    });
}

/// A lone client never conflicts: under lost requests its commits are interrupted and run
/// again, and each such retry is counted as `interrupted`, not as a `conflict` with a writer
/// that does not exist. Both protocols.
#[test]
fn a_lone_clients_interrupted_commits_are_not_conflicts() {
    for protocol in [avout::stm::Protocol::Mvcc, avout::stm::Protocol::Optimistic] {
        Recorded::run(|r| {
            Sim::builder()
                .seed(29)
                .clients(0)
                .rates(support::recipe_rates(FaultKind::RequestLost))
                .keep_log(false)
                .build()
                .run(|ctx| async move {
                    let a = Client::connect(ctx.zk.clone()).await.unwrap();
                    let config = StmConfig::with_protocol(protocol);
                    let stm = Stm::open(&a, "/stm", config).await.unwrap();
                    let n = stm.make_ref("n", 0i64).await.unwrap();
                    for _ in 0..300 {
                        let _ = stm
                            .dosync(async |tx| {
                                tx.alter(&n, |v| v + 1).await?;
                                Ok(())
                            })
                            .await;
                    }
                    let cause = |c| r.counter(m::RETRIES, &[("cause", c)]);
                    assert!(cause("interrupted") > 0, "{protocol:?}: {:?}", r.totals());
                    assert_eq!(cause("conflict"), 0, "{protocol:?}: {:?}", r.totals());
                    let stats = stm.stats();
                    assert!(stats.retries > 0, "{protocol:?}: {stats:?}");
                    assert_eq!(stats.conflicts, 0, "{protocol:?}: {stats:?}");
                });
        });
    }
}
