//! `avout demo`: a seeded run on the embedded simulated ZooKeeper under faults, run twice to
//! show that it replays to the same event-log hash.

/// Options of `avout demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// The run's seed: the same seed gives the same run, bit for bit.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Print the report as one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Why `avout demo` failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DemoError {
    #[error(
        "seed {seed} did not replay to the same event-log hash ({hash:#018x} then {replay:#018x}); rerun with `avout demo --seed {seed}`"
    )]
    NotReplayed { seed: u64, hash: u64, replay: u64 },
    #[error("cannot encode the report: {0}")]
    Json(#[from] serde_json::Error),
}

/// Runs the demo and prints its report; an error if the replay's hash differs.
pub(crate) fn run(args: &DemoArgs) -> Result<(), DemoError> {
    let report = avout_sim_zk::demo::run(args.seed);
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("{report}");
    }
    if !report.replayed_identically() {
        return Err(DemoError::NotReplayed {
            seed: report.seed,
            hash: report.hash,
            replay: report.replay_hash,
        });
    }
    Ok(())
}
