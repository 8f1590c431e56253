//! `avout bench cache-lag`: how far a [`Cache`] trails a writer, beside Curator's
//! `CuratorCache` on the same workload (`scenarios/peers/CacheLag.java`).
//!
//! The run, which the peer repeats step for step:
//!
//! 1. `--nodes` children are created under a fresh `/bench/avout/cache-lag` (pipelined; the
//!    previous run's tree is deleted first).
//! 2. A cache of the root's subtree starts on its own session; the initial load is timed
//!    from the start call to its return (Curator: to the listener's `initialized`). Subtree
//!    scope because `CuratorCache.build(client, path)` caches the whole subtree, and here
//!    both caches then arm one persistent recursive watch and read every node.
//! 3. The writer, on another session, sets random children (a seeded `ChaCha8`) at
//!    `--rate` per second for `--duration`, open loop: write `i` is sent at `start + i/rate`
//!    whether or not earlier ones were acknowledged. Each acknowledgement is timestamped and
//!    keeps the version it produced.
//! 4. A task takes the cache's events as they come and timestamps them. Once every write
//!    was acknowledged it waits until the cache caught up with each (an event for its node at
//!    its version or later), or `--settle` passed.
//! 5. The lag of a write is its event's arrival minus its acknowledgement ([`lag`]). The
//!    cache's view is then compared with the tree read back from the server, data and `Stat`.
//!
//! The line has the peers' keys (`ops` is the acknowledged writes, `secs` from the first
//! scheduled send to the last acknowledgement, `ops_per_sec` the writer's achieved rate) and
//! the lag figures. A write never caught up with, or a view that differs from the tree, is
//! a failed check (`FAIL: …`, exit status 1) after the line is printed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::cmd::zk_auth::ZkAuth;
use avout::recipes::cache::{Cache, CacheEvent, CacheScope, Entry};
use avout::{Client, Coordination, CoordinationExt, CreateOptions};
use clap::Args;
use futures::stream::{self, FuturesUnordered};
use futures::{StreamExt, TryStreamExt};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::lag::{self, Ack, Judged, Seen};
use super::{BenchError, connect};

const WORKLOAD: &str = "cache-lag";
const ROOT: &str = "/bench/avout/cache-lag";
/// Requests in flight while creating, deleting and reading the tree back (not while timing).
const SETUP_DEPTH: usize = 256;

/// Options of `avout bench cache-lag`.
#[derive(Clone, Debug, Args)]
pub(crate) struct CacheLagArgs {
    /// ZooKeeper connect string, e.g. 127.0.0.1:2181 (see `avout zk start`).
    #[arg(long, value_name = "CONNECT")]
    pub(crate) zk: String,
    #[command(flatten)]
    pub(crate) zk_auth: Box<ZkAuth>,
    /// Children of the cached root.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) nodes: u32,
    /// Writes per second.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) rate: u32,
    /// How long the writer writes, e.g. 20s or 500ms.
    #[arg(long, default_value = "20s", value_parser = crate::cli::cmd::parse_duration)]
    pub(crate) duration: Duration,
    /// How long to wait, after the last acknowledgement, for the cache to catch up.
    #[arg(long, default_value = "10s", value_parser = crate::cli::cmd::parse_duration)]
    pub(crate) settle: Duration,
    /// Seed of the writer's choice of nodes.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Print one JSON line (the peers' format) instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What one run measured.
#[derive(Clone, Debug)]
pub(crate) struct Figure {
    pub(crate) nodes: u32,
    pub(crate) rate: u32,
    /// The initial load.
    pub(crate) load: Duration,
    /// Nodes in the view once loaded (the root and its children).
    pub(crate) loaded: usize,
    pub(crate) sent: u64,
    pub(crate) acked: u64,
    /// From the first scheduled send to the last acknowledgement.
    pub(crate) writing: Duration,
    /// Change events taken from the cache after its initial load.
    pub(crate) events: u64,
    pub(crate) judged: Judged,
    /// Whether the view equals the tree read back from the server.
    pub(crate) converged: bool,
}

impl Figure {
    /// The keys and values of the line, in order; the peer prints the same keys.
    fn fields(&self) -> Vec<(&'static str, String)> {
        let secs = self.writing.as_secs_f64();
        let j = &self.judged;
        vec![
            ("peer", "\"avout\"".into()),
            ("workload", format!("\"{WORKLOAD}\"")),
            ("clients", "1".into()),
            ("ops", self.acked.to_string()),
            ("secs", format!("{secs:.3}")),
            ("ops_per_sec", format!("{:.1}", self.acked as f64 / secs)),
            ("nodes", self.nodes.to_string()),
            ("rate", self.rate.to_string()),
            ("load_secs", format!("{:.3}", self.load.as_secs_f64())),
            ("loaded", self.loaded.to_string()),
            ("sent", self.sent.to_string()),
            ("acked", self.acked.to_string()),
            ("events", self.events.to_string()),
            ("lag_p50_us", j.lag_quantile_us(0.5).to_string()),
            ("lag_p99_us", j.lag_quantile_us(0.99).to_string()),
            ("lag_p999_us", j.lag_quantile_us(0.999).to_string()),
            ("lag_max_us", j.lag_quantile_us(1.0).to_string()),
            ("early", j.early().to_string()),
            ("coalesced", j.coalesced.to_string()),
            ("unseen", j.unseen.to_string()),
            ("duplicates", j.duplicates.to_string()),
            ("regressions", j.regressions.to_string()),
            ("converged", self.converged.to_string()),
        ]
    }

    /// The peers' JSON line: fixed key order, no spaces.
    pub(crate) fn json(&self) -> String {
        let body: Vec<String> = self
            .fields()
            .into_iter()
            .map(|(k, v)| format!("\"{k}\":{v}"))
            .collect();
        format!("{{{}}}", body.join(","))
    }

    /// One `key: value` line per field.
    fn table(&self) -> String {
        self.fields()
            .into_iter()
            .map(|(k, v)| format!("{k:>12}: {}\n", v.trim_matches('"')))
            .collect()
    }

    /// What a correct cache cannot produce, if anything.
    pub(crate) fn violation(&self) -> Option<String> {
        let j = &self.judged;
        if j.unseen > 0 || j.regressions > 0 || !self.converged {
            Some(format!(
                "cache-lag: {} writes never seen, {} regressions, view {} the tree",
                j.unseen,
                j.regressions,
                if self.converged {
                    "equals"
                } else {
                    "differs from"
                }
            ))
        } else {
            None
        }
    }
}

fn op_error(e: impl std::fmt::Display) -> BenchError {
    BenchError::op("avout", WORKLOAD, e)
}

fn child(i: u32) -> String {
    format!("{ROOT}/n-{i:05}")
}

/// Runs the workload and prints its line; then fails on a violation.
pub(crate) async fn run(args: CacheLagArgs) -> Result<(), BenchError> {
    let figure = measure(&args).await?;
    if args.json {
        println!("{}", figure.json());
    } else {
        print!("{}", figure.table());
    }
    match figure.violation() {
        Some(what) => Err(BenchError::Violation(what)),
        None => Ok(()),
    }
}

/// Runs the workload and returns its figure (the tests call this directly).
pub(crate) async fn measure(args: &CacheLagArgs) -> Result<Figure, BenchError> {
    let writer = connect(&args.zk, &args.zk_auth).await?;
    clear(&writer).await.map_err(op_error)?;
    writer.ensure_path(ROOT).await.map_err(op_error)?;
    let create = CreateOptions::default();
    stream::iter((0..args.nodes).map(|i| writer.create(&child(i), b"0", &create)))
        .buffer_unordered(SETUP_DEPTH)
        .try_collect::<Vec<_>>()
        .await
        .map_err(op_error)?;

    let follower = connect(&args.zk, &args.zk_auth).await?;
    let started = Instant::now();
    let mut cache = Cache::start(Arc::new(follower.clone()), ROOT, CacheScope::Subtree)
        .await
        .map_err(op_error)?;
    let load = started.elapsed();
    let loaded = cache.snapshot().len();
    // The initial `Created`s were sent before `start` returned; they are not changes.
    while let Some(event) = cache.try_next_event() {
        if event == CacheEvent::Initialized {
            break;
        }
    }

    let epoch = Instant::now();
    let (want_tx, want_rx) = tokio::sync::oneshot::channel();
    let listener = tokio::spawn(listen(cache, epoch, want_rx, args.settle));
    let written = write(&writer, args, epoch).await;
    let acks = match written {
        Ok(acks) => acks,
        Err(e) => {
            // Ends the listener (a dropped sender stops it) before the error is returned.
            drop(want_tx);
            let _ = listener.await;
            return Err(e);
        }
    };
    let writing = acks.last().map_or(Duration::ZERO, |a| a.at);
    let mut want: BTreeMap<String, i32> = BTreeMap::new();
    for ack in &acks {
        let top = want.entry(ack.path.clone()).or_insert(ack.version);
        *top = (*top).max(ack.version);
    }
    let _ = want_tx.send(want);
    let (cache, seen) = match listener.await {
        Ok(outcome) => outcome?,
        Err(e) => crate::cli::cmd::rethrow(e),
    };
    let converged = read_tree(&writer).await.map_err(op_error)? == cache.snapshot();
    cache.close().await;
    // The next run starts from an empty server: deleting 10,000 nodes one by one there would
    // be timed as part of nothing, but would slow whatever runs next.
    clear(&writer).await.map_err(op_error)?;
    let _ = writer.close().await;
    let _ = follower.close().await;
    let sent = (args.rate as f64 * args.duration.as_secs_f64()).round() as u64;
    Ok(Figure {
        nodes: args.nodes,
        rate: args.rate,
        load,
        loaded,
        sent,
        acked: acks.len() as u64,
        writing,
        events: seen.len() as u64,
        judged: lag::judge(&acks, &seen),
        converged,
    })
}

/// The writer: `rate * duration` writes on a fixed schedule from `epoch`, each to a random
/// child; returns their acknowledgements in arrival order. The first failed write ends it:
/// a set is not retried blindly.
async fn write(zk: &Client, args: &CacheLagArgs, epoch: Instant) -> Result<Vec<Ack>, BenchError> {
    let total = (args.rate as f64 * args.duration.as_secs_f64()).round() as u64;
    let interval = Duration::from_secs_f64(1.0 / args.rate as f64);
    let due = |i: u64| epoch + interval.mul_f64(i as f64);
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let mut pending = FuturesUnordered::new();
    let mut acks = Vec::with_capacity(total as usize);
    let mut next = 0;
    while next < total || !pending.is_empty() {
        tokio::select! {
            biased;
            () = tokio::time::sleep_until(due(next).into()), if next < total => {
                // Everything due is sent now, so a late wake-up does not lower the rate.
                let now = Instant::now();
                while next < total && due(next) <= now {
                    let path = child(rng.random_range(0..args.nodes));
                    // The request is sent by this call, not when the future is first polled.
                    let reply = zk.set_data(&path, b"1", None);
                    pending.push(async move { (path, reply.await) });
                    next += 1;
                }
            }
            Some((path, reply)) = pending.next(), if !pending.is_empty() => {
                let at = epoch.elapsed();
                let stat = reply.map_err(op_error)?;
                acks.push(Ack { path, version: stat.version, at });
            }
        }
    }
    Ok(acks)
}

/// Takes the cache's events as they come, until it caught up with `want` (each node at
/// that version or later; sent once the writer is done) or `settle` passed after that.
/// A dropped `want` stops it at once.
async fn listen(
    mut cache: Cache,
    epoch: Instant,
    mut want_rx: tokio::sync::oneshot::Receiver<BTreeMap<String, i32>>,
    settle: Duration,
) -> Result<(Cache, Vec<Seen>), BenchError> {
    let mut seen = Vec::new();
    let mut latest: BTreeMap<String, i32> = BTreeMap::new();
    let mut want: Option<(BTreeMap<String, i32>, tokio::time::Instant)> = None;
    loop {
        if let Some((want, _)) = &want
            && want
                .iter()
                .all(|(p, v)| latest.get(p).is_some_and(|l| l >= v))
        {
            return Ok((cache, seen));
        }
        let deadline = want.as_ref().map(|(_, d)| *d);
        tokio::select! {
            biased;
            event = cache.next_event() => match event {
                Some(CacheEvent::Changed { path, stat, .. } | CacheEvent::Created { path, stat, .. }) => {
                    let at = epoch.elapsed();
                    let top = latest.entry(path.clone()).or_insert(stat.version);
                    *top = (*top).max(stat.version);
                    seen.push(Seen { path, version: stat.version, at });
                }
                Some(CacheEvent::Deleted { path, .. }) => {
                    return Err(op_error(format!("the cache reported {path} deleted; nothing deletes")));
                }
                Some(CacheEvent::Initialized) => {}
                None => {
                    let why = cache.error().map_or("closed".to_owned(), |e| e.to_string());
                    return Err(op_error(format!("the cache stopped: {why}")));
                }
            },
            got = &mut want_rx, if want.is_none() => match got {
                Ok(got) => want = Some((got, tokio::time::Instant::now() + settle)),
                Err(_) => return Ok((cache, seen)),
            },
            () = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)), if deadline.is_some() => {
                return Ok((cache, seen));
            }
        }
    }
}

/// Every node under (and at) the root as the server has it now, read after a `sync`.
async fn read_tree(zk: &Client) -> avout::Result<BTreeMap<String, Entry>> {
    zk.sync(ROOT).await?;
    let (children, _) = zk.get_children(ROOT).await?;
    let mut paths: Vec<String> = children.iter().map(|c| format!("{ROOT}/{c}")).collect();
    paths.push(ROOT.to_owned());
    let entries: Vec<(String, Entry)> = stream::iter(paths.into_iter().map(|path| {
        let zk = zk.clone();
        async move {
            let (data, stat) = zk.get_data(&path).await?;
            Ok::<_, avout::Error>((path, Entry { data, stat }))
        }
    }))
    .buffer_unordered(SETUP_DEPTH)
    .try_collect()
    .await?;
    Ok(entries.into_iter().collect())
}

/// Deletes the root and its children, the children pipelined (they are leaves; anything
/// deeper, left by hand, goes through the slower recursive delete).
async fn clear(zk: &Client) -> avout::Result<()> {
    let children = match zk.get_children(ROOT).await {
        Ok((children, _)) => children,
        Err(avout::Error::NoNode { .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    let paths: Vec<String> = children.iter().map(|c| format!("{ROOT}/{c}")).collect();
    // Each future owns a clone of the client: a borrowed one trips rustc's higher-ranked
    // `Send` check once the stream is inside a spawned task.
    stream::iter(paths.into_iter().map(|path| {
        let zk = zk.clone();
        async move {
            match zk.delete(&path, None).await {
                Ok(()) | Err(avout::Error::NoNode { .. }) => Ok(()),
                Err(avout::Error::NotEmpty { .. }) => zk.delete_recursive(&path).await,
                Err(e) => Err(e),
            }
        }
    }))
    .buffer_unordered(SETUP_DEPTH)
    .try_collect::<Vec<()>>()
    .await?;
    zk.delete_recursive(ROOT).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use avout_testkit::server::ZkServer;

    /// A small run on a real server: every acknowledged write is caught up with, no event is
    /// reported twice or backwards, and the view equals the tree. No timing is asserted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cache_follows_a_paced_writer_on_a_real_server() {
        let server = tokio::task::block_in_place(ZkServer::start)
            .expect("a real ZooKeeper server (Debian's zookeeper package)");
        let args = CacheLagArgs {
            zk: server.connect_string(),
            zk_auth: Box::default(),
            nodes: 300,
            rate: 200,
            duration: Duration::from_secs(2),
            settle: Duration::from_secs(20),
            seed: 7,
            json: true,
        };
        let figure = measure(&args).await.expect("the workload runs");
        assert_eq!(figure.loaded, 301, "the root and its 300 children");
        assert_eq!((figure.sent, figure.acked), (400, 400));
        assert_eq!(figure.judged.unseen, 0, "{}", figure.json());
        assert_eq!(figure.judged.lags_us.len(), 400);
        assert_eq!(figure.judged.duplicates, 0, "{}", figure.json());
        assert_eq!(figure.judged.regressions, 0, "{}", figure.json());
        assert!(figure.converged, "{}", figure.json());
        assert!(
            figure.events >= 1 && figure.events <= 400,
            "{}",
            figure.json()
        );
        assert_eq!(figure.violation(), None);
        let line = figure.json();
        assert!(line.starts_with(
            "{\"peer\":\"avout\",\"workload\":\"cache-lag\",\"clients\":1,\"ops\":400,"
        ));
        assert!(line.ends_with(",\"converged\":true}"), "{line}");
    }
}
