//! What the tests share: the two backends a body runs on (a fresh real server, failing
//! loudly when it cannot start, and the simulator), starting servers, and running groups of
//! conformance cases.

use std::sync::Arc;
use std::time::Duration;

use avout::Client;
use avout::zk::{ZkClient, ZkConfig};
use avout_sim_zk::{FaultKind, FaultRates, RunSummary, Sim, SimClient, SimCtx, SimZk};
use avout_testkit::backend::{Backend, SimBackend, ZkBackend};
use avout_testkit::conformance;
use avout_testkit::server::{ZkEnsemble, ZkServer};

/// A backend on a fresh standalone server (stopped with it), or a failed test: a missing
/// server is a failure, not a skip.
pub(crate) fn zookeeper() -> ZkBackend {
    tokio::task::block_in_place(ZkBackend::standalone)
        .unwrap_or_else(|e| panic!("cannot start a ZooKeeper server (tests never skip): {e}"))
}

/// Runs `body` on `sim`, its service as the backend.
pub(crate) fn simulate<T>(sim: &Sim, body: impl AsyncFnOnce(&dyn Backend) -> T) -> (T, RunSummary) {
    sim.run(|ctx| async move { body(&SimBackend::new(ctx.zk.clone())).await })
}

/// A simulation for a body written for both backends: seeded from the environment or
/// `seed`, no sessions opened before the body (it opens its own), an hour of virtual time.
pub(crate) fn plain_sim(seed: u64) -> Sim {
    Sim::builder()
        .seed_from_env(seed)
        .clients(0)
        .time_limit(Duration::from_secs(3600))
        .build()
}

/// One test body on both backends: a module named for it, holding `on_zookeeper` (a fresh
/// standalone server) and `on_the_simulator` (the given simulation), each running the body
/// with `$b: &dyn Backend`.
macro_rules! on_both {
    ($(#[$doc:meta])* $name:ident, $sim:expr, |$b:ident| $body:expr $(,)?) => {
        $(#[$doc])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_zookeeper() {
                let backend = $crate::support::zookeeper();
                let $b: &dyn avout_testkit::backend::Backend = &backend;
                $body.await;
            }

            #[test]
            fn on_the_simulator() {
                $crate::support::simulate(&$sim, async |$b| $body.await);
            }
        }
    };
}
pub(crate) use on_both;

/// `n` managed clients of `backend`, or a failed test.
pub(crate) async fn clients_of(backend: &dyn Backend, n: usize) -> Vec<Client> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(client_of(backend).await);
    }
    out
}

/// A managed client of `backend`, or a failed test.
/// Waits until the client's latest connection event is `state`.
pub(crate) async fn until_state(client: &Client, state: avout::client::ConnectionState) {
    let mut events = client.connection_events();
    while events.current().state != state {
        events.next().await.expect("the client lives");
    }
}

pub(crate) async fn client_of(backend: &dyn Backend) -> Client {
    backend
        .client()
        .await
        .unwrap_or_else(|e| panic!("cannot open a client: {e}"))
}

/// The node at `path` as the service holds it now (its data and stat), `None` if there is
/// none: the kernel's own on the simulator (no request, so the run is unchanged), a read
/// through a fresh session on real ZooKeeper (after the body's sessions have settled).
pub(crate) async fn node_of(backend: &dyn Backend, path: &str) -> Option<(Vec<u8>, avout::Stat)> {
    if let Some(zk) = backend.simulator() {
        return zk.with_kernel(|k| k.tree().node(path).map(|n| (n.data.to_vec(), n.stat)));
    }
    let session = session_of(backend).await;
    avout::CoordinationExt::get_data_opt(&*session, path)
        .await
        .unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// Whether the service holds `node` (see [`node_of`]).
pub(crate) async fn alive(backend: &dyn Backend, node: &str) -> bool {
    node_of(backend, node).await.is_some()
}

/// A plain session of `backend` (not managed: when it ends, it stays ended), or a failed
/// test.
pub(crate) async fn session_of(backend: &dyn Backend) -> Arc<dyn avout::Coordination> {
    backend
        .session()
        .await
        .unwrap_or_else(|e| panic!("cannot open a session: {e}"))
}

/// Has `backend`'s service expire `client`'s current session, or fails the test.
pub(crate) async fn expire(backend: &dyn Backend, client: &Client) {
    let id = avout::Coordination::session(client).id;
    backend
        .expire(id)
        .await
        .unwrap_or_else(|e| panic!("cannot expire session {id}: {e}"));
}

/// Starts a standalone server, or fails the test: a missing server is a failure, not a skip.
pub(crate) fn standalone() -> ZkServer {
    tokio::task::block_in_place(ZkServer::start)
        .unwrap_or_else(|e| panic!("cannot start a ZooKeeper server (tests never skip): {e}"))
}

/// Starts a three-server ensemble, or fails the test.
pub(crate) fn ensemble() -> ZkEnsemble {
    tokio::task::block_in_place(|| ZkEnsemble::start(3))
        .unwrap_or_else(|e| panic!("cannot start a ZooKeeper ensemble (tests never skip): {e}"))
}

/// Opens `n` sessions, or fails the test.
pub(crate) async fn sessions(config: &ZkConfig, n: usize) -> Vec<Arc<ZkClient>> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(Arc::new(connect(config).await));
    }
    out
}

/// Opens a session, or fails the test.
pub(crate) async fn connect(config: &ZkConfig) -> ZkClient {
    ZkClient::connect(config)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", config.connect))
}

/// Opens a managed client, or fails the test.
pub(crate) async fn client(config: &ZkConfig) -> Client {
    Client::connect(config.clone())
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", config.connect))
}

/// Opens `n` managed clients (a session each), or fails the test.
pub(crate) async fn clients(config: &ZkConfig, n: usize) -> Vec<Client> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(client(config).await);
    }
    out
}

/// A managed client whose first session is `session` (which the test keeps, to expire or
/// close it) and whose later sessions are opened with `config`.
pub(crate) fn adopt(config: &ZkConfig, session: &Arc<ZkClient>) -> Client {
    Client::builder(config.clone()).adopt(session.clone())
}

/// A managed client on the simulator whose first session is `session`; after it ends, the
/// client opens the next one on `zk` (a new simulated client index).
pub(crate) fn sim_client(zk: &SimZk, session: &SimClient) -> Client {
    Client::builder(zk.clone()).adopt(Arc::new(session.clone()))
}

/// A managed client per simulated session of the run, in index order.
pub(crate) fn sim_clients(ctx: &SimCtx) -> Vec<Client> {
    ctx.clients.iter().map(|c| sim_client(&ctx.zk, c)).collect()
}

/// A client of exactly `session`, which never opens another: for tests that schedule faults
/// on a simulated client's index or that judge that one session's behaviour.
pub(crate) fn single(session: &SimClient) -> Client {
    Client::single(Arc::new(session.clone()))
}

/// Runs `cases` concurrently, each under `{base}/{case}`, to the end, and returns the names of
/// those that failed (each failure's message is printed when it happens).
pub(crate) async fn run_cases<'a, B: Backend + ?Sized>(
    backend: &B,
    base: &str,
    cases: &[&'a str],
) -> Vec<&'a str> {
    let runs = cases.iter().map(|name| {
        let root = format!("{base}/{name}");
        async move {
            let run = std::panic::AssertUnwindSafe(conformance::run_case(backend, name, &root));
            futures::FutureExt::catch_unwind(run)
                .await
                .err()
                .map(|_| *name)
        }
    });
    futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// Fails the test if any case failed.
#[track_caller]
pub(crate) fn assert_passed(where_: &str, failed: &[&str]) {
    assert!(
        failed.is_empty(),
        "{} conformance case(s) failed on {where_}: {failed:?} (their messages are above)",
        failed.len()
    );
}

/// Polls `f` until it returns `Some`, every 50 ms, for at most `limit`.
pub(crate) async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether a standalone server's `cons` listing shows session `sid`.
pub(crate) fn session_listed(server: &avout_testkit::server::ZkServer, sid: i64) -> bool {
    let cons = tokio::task::block_in_place(|| server.four_letter_word("cons"))
        .unwrap_or_else(|e| panic!("cons: {e}"));
    cons.contains(&format!("sid=0x{:x}", sid as u64))
}

/// The fault rates of a sweep over the fault kinds: only `kind` happens, at its entry of
/// `per_kind` (given in [`FaultKind::DEFAULT`]'s order: the one-server kinds).
pub(crate) fn one_kind(kind: FaultKind, per_kind: [f64; 7]) -> FaultRates {
    let i = FaultKind::DEFAULT
        .iter()
        .position(|k| *k == kind)
        .expect("every kind is in DEFAULT");
    let rate = per_kind[i];
    let mut r = FaultRates::default();
    *r.rate_mut(kind) = rate;
    r
}

/// A simulation for a fault sweep: seeded from the environment or `seed`, `clients`
/// sessions of timeout `session` under `rates`, an hour of virtual time, no event log kept.
pub(crate) fn sweep_sim(seed: u64, clients: usize, session: Duration, rates: FaultRates) -> Sim {
    Sim::builder()
        .seed_from_env(seed)
        .clients(clients)
        .session_timeout(session)
        .rates(rates)
        .time_limit(Duration::from_secs(3600))
        .keep_log(false)
        .build()
}

/// Starts a PostgreSQL server, or fails the test: a missing server is a failure, not a skip.
#[cfg(feature = "postgres")]
pub(crate) fn postgres() -> avout_testkit::postgres::PgServer {
    tokio::task::block_in_place(avout_testkit::postgres::PgServer::start)
        .unwrap_or_else(|e| panic!("cannot start a PostgreSQL server (tests never skip): {e}"))
}

/// Seeds per case of a sweep: the environment variable `var`, else `default`, at most `max`.
pub(crate) fn seeds_from_env(var: &str, default: u64, max: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
        .min(max)
}

/// Only `kind`, at a rate that fires it several times in a recipe's run of a few hundred
/// requests (any of the thirteen kinds).
pub(crate) fn recipe_rates(kind: FaultKind) -> FaultRates {
    let mut rates = FaultRates::default();
    *rates.rate_mut(kind) = match kind {
        FaultKind::RequestLost | FaultKind::ReplyLost | FaultKind::SlowDisk => 0.03,
        FaultKind::StaleReads => 0.05,
        _ => 0.01,
    };
    rates
}

/// A recipe's run under `kind` alone (at [`recipe_rates`]): clients connected by the
/// workload, an hour of virtual time, no event log kept.
pub(crate) fn recipe_sim(seed: u64, kind: FaultKind) -> Sim {
    Sim::builder()
        .seed(seed)
        .clients(0)
        .rates(recipe_rates(kind))
        .keep_log(false)
        .time_limit(Duration::from_secs(3600))
        .build()
}

/// Each of the thirteen fault kinds alone, on `seeds_from_env(var, default, 1_000)` seeds each:
/// seed `base + 1,000 × the kind's index + n`. `one(seed, kind)` runs one seed and says what
/// was wrong with it, if anything; the first wrong run panics, naming its kind and seed.
pub(crate) fn every_kind_alone(
    var: &str,
    default: u64,
    base: u64,
    mut one: impl FnMut(u64, FaultKind) -> Option<String>,
) {
    for (k, kind) in FaultKind::ALL.into_iter().enumerate() {
        for n in 0..seeds_from_env(var, default, 1_000) {
            let seed = base + k as u64 * 1_000 + n;
            if let Some(wrong) = one(seed, kind) {
                panic!("{kind:?}, seed {seed}: {wrong}");
            }
        }
    }
}
