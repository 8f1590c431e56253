//! `avout bench sim`: simulated ZooKeeper operations per wall-clock second.
//!
//! Runs [`avout_sim_zk::bench`]'s workload (`--clients` sessions doing random creates, sets,
//! deletes and reads, every fault kind on at rates scaled from `--fault-rate`) for `--runs`
//! seeds in a row on this thread, and reports the requests the simulated service processed
//! per second of wall time, the ratio of virtual to wall time, and the faults that fired. The
//! simulator is single-threaded, so the figure is one core's. Where Linux reports it, the
//! thread's CPU time is given too, which a loaded machine does not inflate.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use avout_sim_zk::FaultKind;
use avout_sim_zk::bench::{BenchParams, run_once};
use clap::Args;

/// Options of `avout bench sim`.
#[derive(Debug, Args)]
pub(crate) struct SimArgs {
    /// Concurrent simulated clients.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    clients: u32,
    /// Operations per client per run.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    ops: u64,
    /// The first run's seed; run i uses seed + i.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// How many runs (seeds).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Per-request probability of a lost request and of a lost reply; disconnects and stale
    /// reads at a fifth of it, expiries, pauses and outages at a fiftieth.
    #[arg(long, default_value_t = 0.01)]
    fault_rate: f64,
    /// A three-server ensemble, with the ensemble's five fault kinds drawn too.
    #[arg(long)]
    ensemble: bool,
    /// Measure each fault kind alone (and none), one row each, with its cost: CPU time per
    /// simulated operation against the run without faults.
    #[arg(long)]
    per_kind: bool,
    /// Print one JSON line (per row with --per-kind) instead of text.
    #[arg(long)]
    json: bool,
}

/// What a benchmark measured.
#[derive(Debug)]
struct Measured {
    requests: u64,
    calls: u64,
    errors: u64,
    wall: Duration,
    cpu: Option<Duration>,
    virtual_time: Duration,
    faults: BTreeMap<FaultKind, u64>,
    /// The runs' event-log hashes folded together: two builds that print the same one
    /// simulated the same schedules, so their speeds compare like for like.
    schedule: u64,
}

/// Runs the benchmark and prints its figure.
pub(crate) fn run(args: &SimArgs) -> Result<(), super::BenchError> {
    if !(0.0..=1.0).contains(&args.fault_rate) {
        return Err(super::BenchError::Violation(format!(
            "--fault-rate must be between 0 and 1, not {}",
            args.fault_rate
        )));
    }
    let params = BenchParams {
        clients: args.clients as usize,
        ops_per_client: args.ops as usize,
        fault_rate: args.fault_rate,
        ensemble: args.ensemble,
        only: None,
    };
    if args.per_kind {
        per_kind(args, &params);
        return Ok(());
    }
    let m = measure(&params, args.seed, args.runs);
    let ops_per_sec = m.requests as f64 / m.wall.as_secs_f64();
    let ratio = m.virtual_time.as_secs_f64() / m.wall.as_secs_f64();
    let cpu_rate = m.cpu.map(|c| m.requests as f64 / c.as_secs_f64());
    if args.json {
        let faults: BTreeMap<&str, u64> = m.faults.iter().map(|(k, n)| (k.name(), *n)).collect();
        let line = serde_json::json!({
            "peer": "avout-sim",
            "workload": "sim",
            "clients": args.clients,
            "servers": if args.ensemble { 3 } else { 1 },
            "runs": args.runs,
            "ops": m.requests,
            "calls": m.calls,
            "errors": m.errors,
            "secs": m.wall.as_secs_f64(),
            "ops_per_sec": ops_per_sec,
            "ops_per_cpu_sec": cpu_rate,
            "virtual_secs": m.virtual_time.as_secs_f64(),
            "virtual_per_wall": ratio,
            "faults": faults,
            "schedule_hash": format!("{:016x}", m.schedule),
        });
        println!("{line}");
    } else {
        println!(
            "{} simulated operations ({} client calls, {} errors) in {:.3} s wall: {ops_per_sec:.0} ops/s{}",
            m.requests,
            m.calls,
            m.errors,
            m.wall.as_secs_f64(),
            if args.ensemble { ", 3 servers" } else { "" }
        );
        if let Some(rate) = cpu_rate {
            println!("per CPU-second of the simulating thread: {rate:.0} ops/s");
        }
        println!(
            "virtual time {:.1} s: {ratio:.0}x wall time",
            m.virtual_time.as_secs_f64()
        );
        let faults: Vec<String> = m
            .faults
            .iter()
            .map(|(k, n)| format!("{} {n}", k.name()))
            .collect();
        println!("faults: {}", faults.join(", "));
        println!("schedule hash {:016x}", m.schedule);
    }
    Ok(())
}

/// One row per fault kind alone (after a row without faults): how many fired, the rate, and
/// the cost, CPU (or wall) time per simulated operation relative to the row without faults.
fn per_kind(args: &SimArgs, params: &BenchParams) {
    let seconds = |m: &Measured| m.cpu.unwrap_or(m.wall).as_secs_f64();
    let none = BenchParams {
        fault_rate: 0.0,
        ..params.clone()
    };
    let base = measure(&none, args.seed, args.runs);
    let base_per_op = seconds(&base) / base.requests as f64;
    let kinds: Vec<FaultKind> = if args.ensemble {
        FaultKind::ALL.to_vec()
    } else {
        FaultKind::DEFAULT.to_vec()
    };
    if !args.json {
        println!(
            "{:<16} {:>8} {:>10} {:>12} {:>6}",
            "faults", "fired", "ops", "ops/CPU-s", "cost"
        );
    }
    let rows = std::iter::once((None, base)).chain(kinds.into_iter().map(|k| {
        let p = BenchParams {
            only: Some(k),
            ..params.clone()
        };
        (Some(k), measure(&p, args.seed, args.runs))
    }));
    for (kind, m) in rows {
        let name = kind.map_or("none", FaultKind::name);
        let fired: u64 = m.faults.values().sum();
        let rate = m.requests as f64 / seconds(&m);
        let cost = seconds(&m) / m.requests as f64 / base_per_op;
        if args.json {
            println!(
                "{}",
                serde_json::json!({
                    "peer": "avout-sim",
                    "workload": "sim-per-kind",
                    "faults": name,
                    "servers": if args.ensemble || kind.is_some_and(|k| FaultKind::ENSEMBLE.contains(&k)) { 3 } else { 1 },
                    "fired": fired,
                    "ops": m.requests,
                    "ops_per_cpu_sec": rate,
                    "cost": cost,
                })
            );
        } else {
            println!(
                "{name:<16} {fired:>8} {:>10} {rate:>12.0} {cost:>5.2}x",
                m.requests
            );
        }
    }
}

fn measure(params: &BenchParams, first_seed: u64, runs: u64) -> Measured {
    let mut m = Measured {
        requests: 0,
        calls: 0,
        errors: 0,
        wall: Duration::ZERO,
        cpu: None,
        virtual_time: Duration::ZERO,
        faults: BTreeMap::new(),
        schedule: 0,
    };
    let cpu_start = thread_cpu();
    let start = Instant::now();
    for seed in first_seed..first_seed + runs {
        let (outcome, summary) = run_once(seed, params);
        m.requests += summary.requests;
        m.calls += outcome.calls;
        m.errors += outcome.errors;
        m.virtual_time += summary.virtual_time;
        m.schedule = m.schedule.rotate_left(5) ^ summary.hash;
        for (k, n) in summary.faults {
            *m.faults.entry(k).or_default() += n;
        }
    }
    m.wall = start.elapsed();
    m.cpu = cpu_start
        .zip(thread_cpu())
        .map(|(a, b)| b.saturating_sub(a));
    m
}

/// CPU time of this thread so far, from Linux's `/proc/thread-self/schedstat` (its first field
/// is nanoseconds on the CPU); `None` elsewhere.
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_run_counts_requests_calls_and_faults() {
        let params = BenchParams {
            clients: 4,
            ops_per_client: 300,
            fault_rate: 0.05,
            ..BenchParams::default()
        };
        let m = measure(&params, 0, 2);
        assert_eq!(m.calls, 2 * 4 * 300);
        // Lost requests are not processed; everything else is, plus session opens and closes.
        assert!(m.requests > m.calls / 2, "{m:?}");
        assert!(m.faults.values().sum::<u64>() > 0, "{m:?}");
        assert!(m.virtual_time > Duration::ZERO);
        let again = measure(&params, 0, 2);
        assert_eq!(
            m.schedule, again.schedule,
            "the same seeds simulate the same schedules"
        );
        assert_ne!(m.schedule, measure(&params, 1, 2).schedule);
    }

    #[test]
    fn one_kind_alone_fires_only_that_kind() {
        for kind in [
            FaultKind::Partition,
            FaultKind::SessionMoved,
            FaultKind::SlowDisk,
        ] {
            let params = BenchParams {
                clients: 4,
                ops_per_client: 400,
                fault_rate: 0.05,
                ensemble: true,
                only: Some(kind),
            };
            let m = measure(&params, 1, 2);
            assert!(
                m.faults.get(&kind).copied().unwrap_or(0) > 0,
                "{kind:?}: {m:?}"
            );
            assert_eq!(m.faults.len(), 1, "{kind:?}: {m:?}");
        }
    }
}
