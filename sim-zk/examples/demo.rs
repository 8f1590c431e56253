//! Runs the simulator demo: `cargo run -p avout-sim-zk --example demo -- [seed]`.

fn main() {
    let seed = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("the seed is a number"))
        .unwrap_or(1);
    let start = std::time::Instant::now();
    let report = avout_sim_zk::demo::run(seed);
    println!("{report}");
    println!("(two runs in {:?} of wall time)", start.elapsed());
    if !report.replayed_identically() {
        std::process::exit(1);
    }
}
