//! `avout model NAME [--clients N] [--depth D] [--faults F] [--explorer 127.0.0.1:PORT]`:
//! checks one of the stateright models of `avout-models` exhaustively and prints the state
//! counts, the time and each property's verdict, with a step-by-step trace for every
//! counterexample. With `--explorer`, serves stateright's explorer (a web UI to walk the
//! model's states) instead.

use avout::planted::Bug;
use avout_models::{Config, ModelError, Named, Search, check_named, serve_named};

/// Options of `avout model`.
#[derive(Debug, clap::Args)]
pub(crate) struct ModelArgs {
    /// The model: mutex, rwlock, election or atom.
    #[arg(value_parser = parse_named)]
    name: Named,
    /// Clients (1 to 4; the state space grows exponentially).
    #[arg(long, default_value_t = 2)]
    clients: u8,
    /// Stop exploring at this depth (steps from the initial state).
    #[arg(long)]
    depth: Option<usize>,
    /// Faults per run (request lost, reply lost, session expiry), at most.
    #[arg(long, default_value_t = 1)]
    faults: u8,
    /// Acquire-hold-release cycles per lock client (1 to 3).
    #[arg(long, default_value_t = 1)]
    cycles: u8,
    /// Depth-first search (breadth-first, the default, finds the shortest traces).
    #[arg(long)]
    dfs: bool,
    /// Checker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Switch on a planted bug (needs the `planted-bugs` feature), to watch it be found.
    #[arg(long)]
    planted: Option<Bug>,
    /// Serve stateright's explorer on this address instead of checking.
    #[arg(long, value_name = "ADDR")]
    explorer: Option<String>,
}

fn parse_named(s: &str) -> Result<Named, ModelError> {
    s.parse()
}

/// Checks (or serves) the model. A failed property exits with status 1 once the report is
/// printed; a bad configuration is an error (status 2).
pub(crate) fn run(args: &ModelArgs) -> Result<(), ModelError> {
    if !check(args)? {
        std::process::exit(1);
    }
    Ok(())
}

fn check(args: &ModelArgs) -> Result<bool, ModelError> {
    let config = Config {
        clients: args.clients,
        cycles: args.cycles,
        faults: args.faults,
        bug: args.planted,
        search: Search {
            dfs: args.dfs,
            max_depth: args.depth,
            threads: args.threads,
        },
    };
    config.validate()?;
    let name = args.name.name();
    if let Some(address) = &args.explorer {
        println!("serving the {name} model's explorer on http://{address}/ (Ctrl-C stops)");
        serve_named(name, &config, address)?;
        return Ok(true);
    }
    println!(
        "model {name}: {} clients, {} faults at most{}{}",
        args.clients,
        args.faults,
        args.depth.map_or(String::new(), |d| format!(", depth {d}")),
        args.planted
            .map_or(String::new(), |b| format!(", planted bug {b}"))
    );
    let report = check_named(name, &config)?;
    print!("{report}");
    Ok(report.ok())
}
