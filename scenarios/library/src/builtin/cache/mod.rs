//! `cache`: writers change a subtree under faults while every client follows it with the
//! [cache recipe](avout::recipes::cache), recording each event it sees; once the writes stop,
//! each cache is given time to converge and its view is recorded beside the tree.
//!
//! Each client starts a cache on `/cache` (scope by client index: subtree, children, node,
//! then again), then does `ops` writes at random on the root (rarely) and six nodes under it:
//! `create` and `set` with data unique to the write (`c<client>-<n>`), and `delete`. When
//! every writer is done, a coordinator reads the tree (after a `sync`) once a second until
//! every cache has matched it or 90 s have passed, then reads it a last time.
//!
//! History: `create`, `set`, `delete` (value `{path, data}`; `ok`, `fail`, or `info` when in
//! doubt); `event` (one per cache event: `{cache, kind, path, data, czxid, mzxid}`);
//! `cache-stopped` (a cache that ended on an error, restarted as a new instance); `view`
//! (each cache's final view: `{cache, client, scope, nodes}`); `tree` (the last read of the
//! tree: `{nodes}`), where `nodes` maps a path to `[data, czxid, mzxid]`.
//!
//! The checker (avout-check's `cache`, [`avout_check::recipes::cache`]): every event is for a real change (a write of that path with
//! that data, not failed, invoked before the event; one write, one `mzxid`); no change to a
//! path is reported twice by a cache (its events replay: no `Created` of a cached path, no
//! `Changed` without a later `mzxid`, no `Deleted` of an uncached one); and each client's last
//! cache converged: its events replay into its view, and its view is the tree's part in its
//! scope.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use avout::recipes::cache::{Cache, CacheEvent, CacheScope};
use avout::task::watch;
use avout::{Client, Coordination, CreateOptions, Error};
use rand::Rng;
use serde_json::{Value, json};

use avout_check::Options;
use avout_check::recipes::cache::{ROOT, Tree};

use crate::scenario::Checks;
use crate::scenario::Described;
use avout_sim_zk::rng::ClientStream;

use crate::scenario::env::{Cluster, Process, Recorder, all_clients, open_client};
use crate::scenario::worker::{Caller, Ended, Ends, Invoke};
use crate::scenario::{BoxError, WorkloadError};
use crate::scenario::{OP_DEADLINE, Workload};
use avout_check::history::EventType;

/// The nodes the writers change, relative to [`ROOT`] (`""`: the root itself).
const NAMES: [&str; 7] = ["", "a", "b", "a/x", "a/y", "b/x", "a/x/z"];

/// How long the caches get to converge once the writes stop.
const CONVERGE: Duration = Duration::from_secs(90);

/// Where the followers' process numbers start (apart from the writers').
const FOLLOWER_BASE: u64 = 1 << 20;

/// The scope of client `index`'s cache.
fn scope_of(index: usize) -> CacheScope {
    [CacheScope::Subtree, CacheScope::Children, CacheScope::Node][index % 3]
}

fn scope_name(scope: CacheScope) -> &'static str {
    match scope {
        CacheScope::Node => "node",
        CacheScope::Children => "children",
        CacheScope::Subtree => "subtree",
    }
}

fn tree_json(tree: &Tree) -> Value {
    tree.iter()
        .map(|(p, (d, c, m))| (p.clone(), json!([d, c, m])))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

fn snapshot(cache: &Cache) -> Tree {
    cache
        .snapshot()
        .into_iter()
        .map(|(p, e)| (p, (text(&e.data), e.stat.czxid, e.stat.mzxid)))
        .collect()
}

fn in_scope(tree: &Tree, scope: CacheScope) -> Tree {
    tree.iter()
        .filter(|(p, _)| scope.covers(ROOT, p))
        .map(|(p, n)| (p.clone(), n.clone()))
        .collect()
}

/// What the writers and the followers share: how many writers are still writing, how many
/// followers still wait to converge, and the tree last read once the writes stopped.
struct Phase {
    writing: AtomicUsize,
    following: AtomicUsize,
    tree: watch::Sender<Option<Tree>>,
}

/// A write's error. Only a rejection is definite: a write in flight when its session was
/// lost may have been applied (the simulator answers `SessionExpired` for a create whose reply
/// was lost before the expiry, and the create stands), so it ends `info`.
struct Write(Error);

impl Ends for Write {
    fn end(&self) -> EventType {
        if self.0.is_rejected() {
            EventType::Fail
        } else {
            EventType::Info
        }
    }
}

/// Reads everything under [`ROOT`] after a `sync`, retrying from the start after an error.
async fn read_tree(client: &Client) -> Result<Tree, WorkloadError> {
    let mut last: Option<Error> = None;
    for _ in 0..100 {
        match try_read_tree(client).await {
            Ok(tree) => return Ok(tree),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(WorkloadError::gave_up("reading the tree (100 tries)", last))
}

async fn try_read_tree(client: &Client) -> Result<Tree, Error> {
    client.sync(ROOT).await?;
    let mut tree = Tree::new();
    let mut todo = vec![ROOT.to_owned()];
    while let Some(path) = todo.pop() {
        let (data, stat) = match client.get_data(&path).await {
            Ok(found) => found,
            Err(Error::NoNode { .. }) => continue,
            Err(e) => return Err(e),
        };
        tree.insert(path.clone(), (text(&data), stat.czxid, stat.mzxid));
        match client.get_children(&path).await {
            Ok((children, _)) => {
                todo.extend(children.iter().map(|c| avout::path::join(&path, c)));
            }
            Err(Error::NoNode { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(tree)
}

/// Creates [`ROOT`] with data `setup`, recorded, until it exists.
async fn setup(client: &Client, rec: &Recorder, process: Process) -> Result<(), WorkloadError> {
    let mut caller = Caller::new(rec, process);
    for _ in 0..100 {
        let input = json!({"path": ROOT, "data": "setup"});
        let call = || async {
            client
                .create(ROOT, b"setup", &CreateOptions::default())
                .await
                .map_err(Write)
        };
        match caller
            .call(Invoke::new("create", input), call, |_| json!({}))
            .await
        {
            Ended::Ok(_) | Ended::Err(Write(Error::NodeExists { .. })) => return Ok(()),
            Ended::Stuck => break,
            Ended::Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    Err(WorkloadError::gave_up(
        "creating the root",
        None::<BoxError>,
    ))
}

/// Starts a cache, retrying while sessions are lost under it.
async fn start_cache(client: &Client, scope: CacheScope) -> Result<Cache, WorkloadError> {
    let zk: Arc<dyn Coordination> = Arc::new(client.clone());
    let mut last = None;
    for _ in 0..100 {
        match Cache::start(zk.clone(), ROOT, scope).await {
            Ok(cache) => return Ok(cache),
            Err(e) if e.is_session_lost() || e.is_indeterminate() => last = Some(e),
            Err(e) => return Err(WorkloadError::gave_up("starting the cache", Some(e))),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(WorkloadError::gave_up(
        "starting the cache (100 tries)",
        last,
    ))
}

fn record_event(rec: &Recorder, p: u64, instance: u64, event: &CacheEvent) {
    let (kind, path, data, stat) = match event {
        CacheEvent::Created { path, data, stat } => ("created", path, data, stat),
        CacheEvent::Changed { path, data, stat } => ("changed", path, data, stat),
        CacheEvent::Deleted { path, data, stat } => ("deleted", path, data, stat),
        CacheEvent::Initialized => return,
    };
    let value = json!({
        "cache": instance, "kind": kind, "path": path, "data": text(data),
        "czxid": stat.czxid, "mzxid": stat.mzxid,
    });
    rec.invoke(p, "event", value.clone(), None);
    rec.complete(EventType::Ok, p, "event", value, None);
}

/// Client `index`'s writes.
async fn write(
    client: &Client,
    w: &Workload,
    rec: &Recorder,
    index: usize,
) -> Result<(), WorkloadError> {
    let mut rng = ClientStream::CHOICES.rng(w.seed, index);
    let mut caller = Caller::new(rec, Process::new(index, w.clients));
    for n in 0..w.ops {
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..40))).await;
        // The root rarely: once it is gone, every other write fails until it is back.
        let name = if rng.random_bool(0.1) {
            NAMES[0]
        } else {
            NAMES[rng.random_range(1..NAMES.len())]
        };
        let path = if name.is_empty() {
            ROOT.to_owned()
        } else {
            format!("{ROOT}/{name}")
        };
        let data = format!("c{index}-{n}");
        let f = ["create", "create", "set", "set", "delete"][rng.random_range(0..5)];
        let input = json!({"path": path, "data": data});
        let call = || async {
            match f {
                "create" => client
                    .create(&path, data.as_bytes(), &CreateOptions::default())
                    .await
                    .map(drop),
                "set" => client
                    .set_data(&path, data.as_bytes(), None)
                    .await
                    .map(drop),
                _ => client.delete(&path, None).await,
            }
            .map_err(Write)
        };
        if let Ended::Stuck = caller
            .call(Invoke::new(f, input.clone()), call, |()| input.clone())
            .await
        {
            break;
        }
    }
    Ok(())
}

/// Client `index`'s cache: records its events until it has converged to the tree the
/// coordinator read after the writes (or [`CONVERGE`] passed), then records its view.
async fn follow(
    client: &Client,
    w: &Workload,
    rec: &Recorder,
    index: usize,
    phase: &Phase,
) -> Result<(), WorkloadError> {
    let scope = scope_of(index);
    let p = Process::new(index, w.clients).shifted(FOLLOWER_BASE).id();
    let mut trees = phase.tree.subscribe();
    let mut instance = index as u64 * 1000;
    let mut cache = start_cache(client, scope).await?;
    let mut deadline = None;
    loop {
        let event = tokio::select! {
            biased;
            event = cache.next_event() => Some(event),
            _ = tokio::time::sleep(Duration::from_millis(100)) => None,
        };
        match event {
            Some(Some(event)) => record_event(rec, p, instance, &event),
            Some(None) => {
                // It stopped on an error: a new instance, whose events are judged apart.
                let error = cache.error().map(|e| e.to_string()).unwrap_or_default();
                let value = json!({"cache": instance, "error": error});
                rec.invoke(p, "cache-stopped", value.clone(), None);
                rec.complete(EventType::Ok, p, "cache-stopped", value, None);
                instance += 1;
                cache = start_cache(client, scope).await?;
            }
            None => {}
        }
        let target = trees.borrow_and_update().clone();
        let Some(tree) = target else { continue };
        let deadline = *deadline.get_or_insert_with(|| tokio::time::Instant::now() + CONVERGE);
        while let Some(event) = cache.try_next_event() {
            record_event(rec, p, instance, &event);
        }
        let view = snapshot(&cache);
        if view == in_scope(&tree, scope) || tokio::time::Instant::now() >= deadline {
            let value = json!({
                "cache": instance, "client": index, "scope": scope_name(scope),
                "nodes": tree_json(&view),
            });
            rec.invoke(p, "view", value.clone(), None);
            rec.complete(EventType::Ok, p, "view", value, None);
            cache.close().await;
            return Ok(());
        }
    }
}

/// Once every writer is done: reads the tree for the followers until they all converged,
/// then reads and records it a last time.
async fn coordinate(client: &Client, rec: &Recorder, phase: &Phase) -> Result<(), WorkloadError> {
    while phase.writing.load(Ordering::SeqCst) > 0 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let started = tokio::time::Instant::now();
    while phase.following.load(Ordering::SeqCst) > 0 {
        if started.elapsed() > CONVERGE + OP_DEADLINE {
            return Err(WorkloadError::gave_up(
                "waiting for the caches to record their views",
                None::<BoxError>,
            ));
        }
        let tree = read_tree(client).await?;
        phase.tree.send_replace(Some(tree));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let tree = read_tree(client).await?;
    let value = json!({"nodes": tree_json(&tree)});
    let p = Process::new(0, 1).shifted(2 * FOLLOWER_BASE).id();
    rec.invoke(p, "tree", Value::Null, None);
    rec.complete(EventType::Ok, p, "tree", value, None);
    Ok(())
}

/// The workload: the root, then every client writing and following, and the coordinator.
pub(crate) async fn workload<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    let coordinator = open_client(cluster).await?;
    setup(
        &coordinator,
        rec,
        Process::new(0, 1).shifted(2 * FOLLOWER_BASE + 1),
    )
    .await?;
    let phase = Phase {
        writing: AtomicUsize::new(w.clients),
        following: AtomicUsize::new(w.clients),
        tree: watch::channel(None).0,
    };
    let phase = &phase;
    let clients = all_clients(w.clients, |index| async move {
        let client = open_client(cluster).await?;
        let writer = async {
            let written = write(&client, w, rec, index).await;
            phase.writing.fetch_sub(1, Ordering::SeqCst);
            written
        };
        let follower = async {
            let followed = follow(&client, w, rec, index, phase).await;
            phase.following.fetch_sub(1, Ordering::SeqCst);
            followed
        };
        let (written, followed) = futures::join!(writer, follower);
        written?;
        followed
    });
    let (clients, coordinated) = futures::join!(clients, coordinate(&coordinator, rec, phase));
    clients?;
    coordinated
}

/// The `cache` scenario: writers change a subtree, every client follows it with a cache.
pub const SCENARIO: Described = Described {
    name: "cache",
    about: "writers change a subtree, each client follows it with a cache; checker: every event \
        for a real change, none reported twice, each view converges to the tree",
    defaults: (4, 30),
    checkers: |_w| Checks::named("cache", &Options::default()),
    workload: |cluster, w, rec| Box::pin(async move { workload(&cluster, w, rec).await }),
};
