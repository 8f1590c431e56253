//! Simulated ZooKeeper operations per wall-clock second: 16 clients, a random workload of
//! reads, writes, creates and deletes, faults on. `cargo run --release -p avout-sim-zk
//! --example bench -- [ops per client] [runs]`.

use std::time::{Duration, Instant};

use avout::{Coordination, CreateMode};
use avout_sim_zk::{FaultRates, Sim, SimCtx};

async fn workload(ctx: SimCtx, ops: usize) {
    let mut tasks = Vec::new();
    let mut rng = ctx.rng;
    for c in ctx.clients {
        let mut rng =
            avout_sim_zk::rng::Rng::new(rng.next_u64(), avout_sim_zk::rng::Stream::Workload);
        tasks.push(tokio::spawn(async move {
            let mut client = c;
            let zk_paths = ["/a", "/b", "/c", "/d"];
            for i in 0..ops {
                let p = zk_paths[rng.below(4) as usize];
                let r = match rng.below(5) {
                    0 => client
                        .create(p, b"x", &CreateMode::Persistent.into())
                        .await
                        .map(|_| ()),
                    1 => client.set_data(p, &i.to_le_bytes(), None).await.map(|_| ()),
                    2 => client.delete(p, None).await,
                    3 => client.get_data(p).await.map(|_| ()),
                    _ => client.exists(p).await.map(|_| ()),
                };
                if let Err(e) = r
                    && e.is_session_lost()
                {
                    return client;
                }
            }
            client = client.clone();
            client
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let ops: usize = args
        .next()
        .map_or(2_000, |s| s.parse().expect("ops per client"));
    let runs: u64 = args.next().map_or(5, |s| s.parse().expect("runs"));
    let mut requests = 0;
    let mut virtual_time = Duration::ZERO;
    let start = Instant::now();
    for seed in 0..runs {
        let rates = FaultRates {
            expire: 0.0,
            pause: 0.0,
            ..FaultRates::chaos()
        };
        let (_, summary) = Sim::builder()
            .seed(seed)
            .clients(16)
            .rates(rates)
            .keep_log(false)
            .build()
            .run(|ctx| workload(ctx, ops));
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
