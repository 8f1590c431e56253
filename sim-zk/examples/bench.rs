//! Simulated ZooKeeper operations per wall-clock second, without the `avout` binary: the
//! workload of [`avout_sim_zk::bench`] (what `avout bench sim` runs).
//! `cargo run --release -p avout-sim-zk --example bench -- [ops per client] [runs]`.

use std::time::{Duration, Instant};

use avout_sim_zk::bench::{BenchParams, run_once};

fn main() {
    let mut args = std::env::args().skip(1);
    let ops: usize = args
        .next()
        .map_or(2_000, |s| s.parse().expect("ops per client"));
    let runs: u64 = args.next().map_or(5, |s| s.parse().expect("runs"));
    let params = BenchParams {
        ops_per_client: ops,
        ..BenchParams::default()
    };
    let mut requests = 0;
    let mut virtual_time = Duration::ZERO;
    let start = Instant::now();
    for seed in 0..runs {
        let (_, summary) = run_once(seed, &params);
        requests += summary.requests;
        virtual_time += summary.virtual_time;
    }
    let wall = start.elapsed();
    println!(
        "{requests} simulated operations in {wall:?}: {:.0} ops/s; virtual/wall time {:.1}",
        requests as f64 / wall.as_secs_f64(),
        virtual_time.as_secs_f64() / wall.as_secs_f64()
    );
}
