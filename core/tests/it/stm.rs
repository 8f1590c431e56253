//! The STM, each body on a real standalone ZooKeeper and on the simulator: the generic cases
//! of `stm_cases` (semantics, history and revert, the retry limit, session loss; bank
//! transfers, write skew and commutes), for every protocol of `stm_cases::protocols`. On the
//! simulator also: ensure and read validation with the retries they cost, commutes under
//! contention, session loss on a managed and on a single-session client, bank transfers under
//! every fault kind, and the request counts per transaction kind. Replayable from the seed
//! (printed on failure; `AVOUT_SIM_SEED` overrides the default).

use std::time::Duration;

use avout::Client;
use avout::stm::{Abort, Protocol, Ref, Stm, StmConfig};
use avout_sim_zk::{FaultKind, FaultRates, Sim};
use avout_testkit::backend::Backend;

use crate::stm_cases::{self, protocols};
use crate::support::{
    clients_of, on_both, one_kind, plain_sim, sim_client, sim_clients, single, sweep_sim,
};

/// Semantics, history and revert, the retry limit, and session loss, per protocol.
async fn semantics_history_limit_and_loss(backend: &dyn Backend) {
    for p in protocols() {
        let zks = clients_of(backend, 3).await;
        let root = format!("/stm-{}", p.name());
        stm_cases::semantics(&zks[0], &format!("{root}/semantics"), p).await;
        stm_cases::history_and_revert(&zks[1], &format!("{root}/history"), p).await;
        stm_cases::retry_limit(&zks[0], &zks[1], &format!("{root}/limit"), p).await;
        // Closes zks[2]'s current session (its client opens the next).
        stm_cases::session_loss(
            &zks[2],
            &zks[0],
            &format!("{root}/loss"),
            StmConfig::with_protocol(p),
        )
        .await;
    }
}

/// Bank transfers, write skew with and without ensure, and commutes, per protocol.
async fn bank_write_skew_and_commutes(backend: &dyn Backend) {
    const ACCOUNTS: usize = 4;
    const INITIAL: i64 = 100;
    for p in protocols() {
        let zks = clients_of(backend, 4).await;
        let root = format!("/stm-{}", p.name());

        let mut bank = Vec::new();
        for zk in &zks {
            bank.push(stm_cases::open(zk, &format!("{root}/bank"), p).await);
        }
        let out = stm_cases::bank(&bank, ACCOUNTS, INITIAL, 50, 7).await;
        let (balances, count) = stm_cases::audit_with_count(&bank[0], ACCOUNTS).await;
        eprintln!(
            "{p:?}: {} committed, {} overdrawn, {} retries, balances {balances:?}",
            out.committed, out.overdrawn, out.retries
        );
        assert!(out.failed.is_empty(), "{:?}", out.failed);
        assert_eq!(out.committed + out.overdrawn, 200);
        assert_eq!(balances.iter().sum::<i64>(), ACCOUNTS as i64 * INITIAL);
        assert!(balances.iter().all(|b| *b >= 0));
        stm_cases::check_count(&out, count);

        let (a, b) = (
            stm_cases::open(&zks[0], &format!("{root}/skew"), p).await,
            stm_cases::open(&zks[1], &format!("{root}/skew"), p).await,
        );
        assert_eq!(stm_cases::on_call([&a, &b], "ensured", true).await, 1);
        let plain = stm_cases::on_call([&a, &b], "plain", false).await;
        assert_eq!(plain, if stm_cases::validates_reads(p) { 1 } else { 0 });

        let mut counters = Vec::new();
        for zk in &zks {
            counters.push(stm_cases::open(zk, &format!("{root}/commute"), p).await);
        }
        let redos = stm_cases::commutes_never_retry(&counters, 30).await;
        eprintln!("{p:?}: {redos} commit phases redone, no body retried");
    }
}

on_both!(
    /// Semantics, history, the retry limit and session loss.
    semantics_history_retry_limit_and_session_loss,
    plain_sim(0x5e1),
    |b| semantics_history_limit_and_loss(b),
);

on_both!(
    /// Bank transfers, write skew and commutes.
    bank_write_skew_and_commutes,
    plain_sim(0x5e2),
    |b| bank_write_skew_and_commutes(b),
);

/// A simulator for the STM tests: `clients` sessions of 2 s, `rates` of faults, no event log.
pub(crate) fn sim(seed: u64, clients: usize, rates: FaultRates) -> Sim {
    sweep_sim(seed, clients, Duration::from_secs(2), rates)
}

/// A managed client on each of the simulator's sessions.
pub(crate) fn clients(ctx: &avout_sim_zk::SimCtx) -> Vec<Client> {
    sim_clients(ctx)
}

/// Runs [`stm_cases::session_loss`] with `config` on client 0 (observed from client 1) twice:
/// on a managed client (the handle carries on) and on a client of that one session (the
/// handle is dead).
pub(crate) fn session_loss_both_ways(seed: u64, config: StmConfig) {
    for managed in [true, false] {
        let config = config.clone();
        sim(seed, 2, FaultRates::default()).run(|ctx| async move {
            let zk = if managed {
                sim_client(&ctx.zk, &ctx.clients[0])
            } else {
                single(&ctx.clients[0])
            };
            let observer = sim_client(&ctx.zk, &ctx.clients[1]);
            stm_cases::session_loss(&zk, &observer, "/stm", config).await;
        });
    }
}

#[test]
fn ensure_prevents_write_skew_and_reads_are_validated() {
    for p in protocols() {
        sim(0x5e2, 2, FaultRates::default()).run(|ctx| async move {
            let zks = clients(&ctx);
            let a = stm_cases::open(&zks[0], "/stm", p).await;
            let b = stm_cases::open(&zks[1], "/stm", p).await;
            assert_eq!(stm_cases::on_call([&a, &b], "ensured", true).await, 1);
            let plain = stm_cases::on_call([&a, &b], "plain", false).await;
            if stm_cases::validates_reads(p) {
                assert_eq!(plain, 1, "{p:?} validates reads: no write skew");
            } else {
                assert_eq!(
                    plain, 0,
                    "{p:?} has snapshot reads: write skew without ensure"
                );
            }
            assert!(
                a.stats().retries + b.stats().retries >= 2,
                "each run made one retry"
            );
            assert!(
                a.stats().conflicts + b.stats().conflicts >= 2,
                "each retry was a conflict"
            );
        });
    }
}

#[test]
fn commutes_never_make_a_body_run_again() {
    for p in protocols() {
        sim(0x5e3, 4, FaultRates::default()).run(|ctx| async move {
            let zks = clients(&ctx);
            let mut stms = Vec::new();
            for zk in &zks {
                stms.push(stm_cases::open(zk, "/stm", p).await);
            }
            let redos = stm_cases::commutes_never_retry(&stms, 25).await;
            assert!(
                redos > 0,
                "{p:?}: the clients did contend ({redos} commit redos)"
            );
        });
    }
}

#[test]
fn session_loss_aborts_cleanly() {
    for p in protocols() {
        session_loss_both_ways(0x5e5, StmConfig::with_protocol(p));
    }
}

/// Rates that make `kind` happen several times in a bank run.
fn rates(kind: FaultKind) -> FaultRates {
    one_kind(kind, [0.03, 0.03, 0.01, 0.003, 0.003, 0.05, 0.002])
}

#[test]
fn bank_transfers_conserve_money_under_every_fault_kind() {
    const ACCOUNTS: usize = 5;
    const INITIAL: i64 = 100;
    for p in protocols() {
        for (i, kind) in FaultKind::DEFAULT.into_iter().enumerate() {
            let seed = 0xba4c + i as u64;
            let (out, summary) = sim(seed, 4, rates(kind)).run(|ctx| async move {
                let zks = clients(&ctx);
                // Setup on a clean service; faults hit the transfers.
                let mut stms = Vec::new();
                for c in &zks {
                    stms.push(open_retrying(c, p).await);
                }
                let out = stm_cases::bank(&stms, ACCOUNTS, INITIAL, 40, seed).await;
                let fresh = Client::connect(ctx.zk.clone()).await.expect("connect");
                let auditor = open_retrying(&fresh, p).await;
                let (balances, count) = stm_cases::audit_with_count(&auditor, ACCOUNTS).await;
                (out, balances, count)
            });
            let (out, balances, count) = out;
            eprintln!(
                "{p:?} {:>14}: seed {seed}, {} faults, {out}, balances {balances:?}",
                kind.name(),
                summary.fault_count(kind),
            );
            assert!(summary.fault_count(kind) > 0, "{kind:?} was injected");
            let what = format!("{p:?} {kind:?} seed {seed}");
            stm_cases::check_bank_under_faults(&out, &balances, ACCOUNTS as i64 * INITIAL, &what);
            assert!(
                balances.iter().all(|b| *b >= 0),
                "{p:?} {kind:?}: no negative balance"
            );
            stm_cases::check_count(&out, count);
            if kind == FaultKind::ReplyLost {
                assert!(
                    out.recoveries > 0,
                    "{p:?}: a lost reply was settled by reading"
                );
            }
        }
    }
}

/// Opens an Stm on `client`, retrying failures (after a lost session the client opens the
/// next one).
async fn open_retrying(client: &Client, p: Protocol) -> Stm {
    loop {
        match Stm::open(client, "/bank", StmConfig::with_protocol(p)).await {
            Ok(stm) => return stm,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Requests and round trips of one committed transaction of each kind, uncontended; the
/// table in the `avout::stm` docs.
#[test]
fn round_trips_per_kind() {
    for p in protocols() {
        sim(0x5e6, 1, FaultRates::default()).run(|ctx| async move {
            let zk = clients(&ctx).remove(0);
            let stm = stm_cases::open(&zk, "/rt", p).await;
            let a = stm.make_ref("a", 0i64).await.unwrap();
            let b = stm.make_ref("b", 0i64).await.unwrap();
            let mut rows = Vec::new();
            let mut measure = async |label: &str, cold: bool, kind: Kind| {
                if cold {
                    // A handle with an empty cache.
                    let fresh = stm_cases::open(&zk, "/rt", p).await;
                    let (fa, fb): (Ref<i64>, Ref<i64>) =
                        (fresh.get_ref("a").unwrap(), fresh.get_ref("b").unwrap());
                    let before = fresh.stats();
                    run_kind(&fresh, &fa, &fb, kind).await;
                    let after = fresh.stats();
                    rows.push((
                        label.to_owned(),
                        after.requests - before.requests,
                        after.round_trips - before.round_trips,
                    ));
                } else {
                    run_kind(&stm, &a, &b, kind).await;
                    let before = stm.stats();
                    run_kind(&stm, &a, &b, kind).await;
                    let after = stm.stats();
                    rows.push((
                        label.to_owned(),
                        after.requests - before.requests,
                        after.round_trips - before.round_trips,
                    ));
                }
            };
            measure("read-only, one ref, cold", true, Kind::ReadOne).await;
            measure("read-only, one ref, warm", false, Kind::ReadOne).await;
            measure("read-only, two refs, warm", false, Kind::ReadTwo).await;
            measure("alter one ref, cold", true, Kind::AlterOne).await;
            measure("alter one ref, warm", false, Kind::AlterOne).await;
            measure("alter two refs, warm", false, Kind::AlterTwo).await;
            measure("commute one ref, warm", false, Kind::CommuteOne).await;
            for (label, requests, trips) in &rows {
                eprintln!("{p:?} | {label} | {requests} requests | {trips} round trips");
            }
            if p == Protocol::Optimistic {
                let got: Vec<(u64, u64)> = rows.iter().map(|r| (r.1, r.2)).collect();
                assert_eq!(
                    got,
                    vec![(2, 1), (1, 1), (1, 1), (3, 2), (1, 1), (1, 1), (1, 1)],
                    "the table in the avout::stm docs"
                );
            }
        });
    }
}

/// A transaction shape whose requests and round trips are counted (here and in `stm_mvcc`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    ReadOne,
    ReadTwo,
    AlterOne,
    AlterTwo,
    CommuteOne,
}

pub(crate) async fn run_kind(stm: &Stm, a: &Ref<i64>, b: &Ref<i64>, kind: Kind) {
    stm.dosync(async |tx| {
        match kind {
            Kind::ReadOne => {
                tx.deref(a).await?;
            }
            Kind::ReadTwo => {
                tx.deref(a).await?;
                tx.deref(b).await?;
            }
            Kind::AlterOne => {
                tx.alter(a, |v| v + 1).await?;
            }
            Kind::AlterTwo => {
                tx.alter(a, |v| v + 1).await?;
                tx.alter(b, |v| v - 1).await?;
            }
            Kind::CommuteOne => {
                tx.commute(a, |v| v + 1).await?;
            }
        }
        Ok::<_, Abort>(())
    })
    .await
    .unwrap();
}

/// A value over the protocol's limit is refused before anything is sent, naming the limit,
/// and changes nothing; a value exactly at the limit commits (the limit leaves room for each
/// protocol's own bytes in the node). The same for a ref's initial value. Both protocols.
#[test]
fn a_value_at_the_limit_commits_and_one_over_it_is_refused() {
    async fn set(stm: &Stm, r: &Ref<String>, v: String) -> Result<(), avout::stm::StmError> {
        stm.dosync(async |tx| {
            tx.ref_set(r, v.clone()).await?;
            Ok(())
        })
        .await
    }
    /// The `(len, limit)` of a `TooLarge` refusal.
    fn refused<T: std::fmt::Debug>(
        p: Protocol,
        r: Result<T, avout::stm::StmError>,
    ) -> (usize, usize) {
        match r {
            Err(avout::stm::StmError::TooLarge { len, limit, .. }) => (len, limit),
            other => panic!("{p:?}: expected TooLarge, got {other:?}"),
        }
    }
    for p in protocols() {
        sim(0x1e7, 1, FaultRates::default()).run(|ctx| async move {
            let zks = clients(&ctx);
            let stm = stm_cases::open(&zks[0], "/stm", p).await;
            let r = stm.make_ref("big", String::new()).await.unwrap();
            let (len, limit) = refused(p, set(&stm, &r, "x".repeat(2 << 20)).await);
            assert!(len > limit && limit < avout::MAX_DATA_LEN, "{p:?}");
            assert_eq!(r.deref().await.unwrap(), "", "{p:?}: nothing changed");
            // A ref's initial value obeys the same limit.
            let at = stm
                .make_ref("at-limit", "z".repeat(limit - 2))
                .await
                .unwrap_or_else(|e| panic!("{p:?}: an initial value at the limit: {e}"));
            assert_eq!(at.deref().await.unwrap().len(), limit - 2, "{p:?}");
            let over = stm.make_ref("over-limit", "z".repeat(limit - 1)).await;
            assert_eq!(refused(p, over).0, limit + 1, "{p:?}");
            // JSON: a string of n plain characters is n + 2 bytes.
            set(&stm, &r, "x".repeat(limit - 2))
                .await
                .unwrap_or_else(|e| panic!("{p:?}: a value at the limit ({limit}): {e}"));
            assert_eq!(r.deref().await.unwrap().len(), limit - 2, "{p:?}");
            let over = set(&stm, &r, "y".repeat(limit - 1)).await;
            assert_eq!(refused(p, over).0, limit + 1, "{p:?}");
            assert_eq!(
                r.deref().await.unwrap().len(),
                limit - 2,
                "{p:?}: unchanged"
            );
        });
    }
}
